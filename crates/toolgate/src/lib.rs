//! toolgate's core: read tool calls and tool results from any wire format,
//! then check them against a policy. Synchronous, no I/O.
//!
//! ```
//! use toolgate::{detect, Format};
//!
//! let body = br#"{"choices":[{"message":{"role":"assistant","tool_calls":[
//!     {"id":"call_1","type":"function",
//!      "function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}}]}"#;
//! let found = detect(body);
//! assert_eq!(found.format, Some(Format::OpenAiChat));
//! assert_eq!(found.calls[0].name, "get_weather");
//! assert_eq!(found.calls[0].arguments.as_object().unwrap()["city"], "Paris");
//! ```

pub mod check;
pub mod detect;
pub mod model;
pub mod policy;
pub mod verdict;

pub use check::CheckOptions;
pub use detect::{detect, detect_with, Assembler, Detection, Limits, StreamEvent};
pub use model::{
    ArgumentError, ArgumentErrorReason, Arguments, CallKind, Caller, Format, Framing, ToolCall,
    ToolResult,
};
pub use policy::{Policy, PolicyError, Problem};
pub use verdict::{CallVerdict, Label, Verdict, Violation, ViolationCode};
