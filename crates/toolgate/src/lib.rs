//! toolgate's core: read tool calls and tool results from any wire format,
//! then check them against a policy. Synchronous, no I/O.
//!
//! [`detect()`] turns bytes into a [`Detection`] (calls, results,
//! violations); a [`Policy`], compiled once, turns a detection into a
//! [`Verdict`]; [`Policy::check`] does both.
//!
//! ```
//! use toolgate::Policy;
//!
//! let policy = Policy::from_text(r#"
//! tools:
//!   - type: function
//!     function:
//!       name: get_weather
//!       parameters: {type: object, properties: {city: {type: string}}, required: [city]}
//! expected: [get_weather]
//! "#, None).unwrap();
//! let verdict = policy.check(br#"[{"name": "get_weather", "arguments": {"town": "Paris"}}]"#);
//! assert!(!verdict.passed);
//! assert_eq!(verdict.violations[0].code.as_str(), "schema_violation");
//! assert_eq!(verdict.violations[0].path.as_deref(), Some("/city"));
//! assert_eq!(verdict.failures, [
//!     "arguments for tool 'get_weather' do not match its schema: 'city' is a required property",
//! ]);
//! ```
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
mod code;
pub mod detect;
pub mod model;
pub mod policy;
pub mod verdict;

pub use check::lists::Declared;
pub use check::{CheckOptions, DeclaredTools, Passing, RateCounter};
pub use detect::{
    detect, detect_to_judge, detect_with, Assembler, Detection, Limits, StreamEvent,
    ToolDeclarations, MAX_ENVELOPE_OBJECTS,
};
pub use model::{
    Answers, ArgumentError, ArgumentErrorReason, Arguments, CallKind, Caller, ContentShape, Format,
    Framing, Link, ObjectArguments, ToolCall, ToolResult,
};
pub use policy::{Policy, PolicyError, Problem, Severity};
pub use verdict::{CallVerdict, Category, Label, Phase, Verdict, Violation, ViolationCode};
