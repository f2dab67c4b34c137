//! Violations: what is wrong with a payload, a call or a result, with the
//! stable codes docs/verdict.md lists.

use compact_str::CompactString;
use serde::Serialize;

pub use crate::code::{Category, Phase, ViolationCode};
use crate::model::{Arguments, Format};

/// One violation. `call` is the index of the call it concerns, `tool` the
/// tool's name, `path` a JSON Pointer into the arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    pub code: ViolationCode,
    pub call: Option<usize>,
    pub tool: Option<String>,
    pub path: Option<String>,
    pub message: String,
}

impl Violation {
    /// A violation of the payload as a whole.
    #[must_use]
    pub fn payload(code: ViolationCode, message: impl Into<String>) -> Self {
        Violation {
            code,
            call: None,
            tool: None,
            path: None,
            message: message.into(),
        }
    }
}

impl Violation {
    /// A violation of one call.
    #[must_use]
    pub fn call(code: ViolationCode, call: usize, tool: &str, message: impl Into<String>) -> Self {
        Violation {
            code,
            call: Some(call),
            tool: Some(tool.to_owned()),
            path: None,
            message: message.into(),
        }
    }

    /// The same violation at a JSON Pointer into the arguments.
    #[must_use]
    pub fn at(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }
}

/// The JSON Pointer to `key` inside the value at `parent` (`""` for the
/// arguments themselves): `~` and `/` in the key are escaped (RFC 6901).
#[must_use]
pub fn pointer(parent: &str, key: &str) -> String {
    let mut out = String::with_capacity(parent.len() + 1 + key.len());
    out.push_str(parent);
    out.push('/');
    let mut rest = key;
    while let Some(at) = rest.find(['~', '/']) {
        out.push_str(&rest[..at]);
        out.push_str(if rest.as_bytes()[at] == b'~' {
            "~0"
        } else {
            "~1"
        });
        rest = &rest[at + 1..];
    }
    out.push_str(rest);
    out
}

/// `pass` or `fail`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    Pass,
    Fail,
}

/// One call as it would execute, with its own violations.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallVerdict {
    pub index: usize,
    pub id: Option<String>,
    pub name: CompactString,
    /// The arguments that would execute: after `normalize`, exactly these
    /// were checked.
    pub arguments: Arguments,
    pub format: Format,
    pub valid: bool,
    pub violations: Vec<Violation>,
}

/// The outcome of checking one payload against a policy (its JSON is
/// documented in docs/verdict.md).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// True only with no violation at all.
    pub passed: bool,
    pub label: Label,
    /// (valid calls / all calls) x (expectation score), rounded half up to
    /// two decimals.
    pub score: f64,
    /// The failures joined by `; `, or why the payload passed.
    pub reasoning: String,
    pub calls: Vec<CallVerdict>,
    /// Every violation: the payload's, each call's, each result's, then the
    /// expectations'.
    pub violations: Vec<Violation>,
    /// One line per failure, in the wording users know.
    pub failures: Vec<String>,
    /// The names of the calls, in order.
    pub actual_tools: Vec<CompactString>,
    /// The policy's `expected`, in order.
    pub expected_tools: Vec<String>,
}
