//! The stable violation codes (docs/verdict.md), generated from one
//! table: each code's spelling and category live on one line, so the list
//! of all codes cannot drift from the enum.

use serde::Serialize;

/// What a violation is about; a [`Phase`] says which categories it judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// The payload as a whole: unreadable, past a limit, a declared tool
    /// that is not valid.
    Payload,
    /// One tool call: its name, its arguments, who may make it.
    Call,
    /// What the agent was expected to do, over all its calls.
    Expectation,
    /// A tool result sent back to the model.
    Result,
}

/// Which part of a payload the library judges, chosen by the front.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// The calls the model just made (a gateway checking an answer): the
    /// payload and every call. Expectations score whole trajectories, and
    /// results are not linked.
    Response,
    /// What an application sends back (a gateway checking a request): the
    /// payload and the results' linkage. Calls of past turns were released
    /// or refused when they were made and are not judged again.
    Request,
    /// Everything: the payload, the calls of every turn, the expectations,
    /// and the results when asked (`check --results`). What `check` and
    /// `eval` do.
    #[default]
    Trajectory,
}

impl Phase {
    /// The spelling of `--phase`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Response => "response",
            Phase::Request => "request",
            Phase::Trajectory => "trajectory",
        }
    }

    /// Whether this phase judges violations of `category` (results in the
    /// trajectory phase only when asked).
    #[must_use]
    pub fn judges(self, category: Category, results: bool) -> bool {
        match (self, category) {
            (_, Category::Payload)
            | (Phase::Request, Category::Result)
            | (Phase::Response, Category::Call)
            | (Phase::Trajectory, Category::Call | Category::Expectation) => true,
            (Phase::Trajectory, Category::Result) => results,
            (Phase::Request, Category::Call | Category::Expectation)
            | (Phase::Response, Category::Expectation | Category::Result) => false,
        }
    }
}

impl std::str::FromStr for Phase {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "response" => Ok(Phase::Response),
            "request" => Ok(Phase::Request),
            "trajectory" => Ok(Phase::Trajectory),
            other => Err(format!(
                "unknown phase `{other}`: expected response, request or trajectory"
            )),
        }
    }
}

macro_rules! codes {
    ($($variant:ident => $spelling:literal, $category:ident;)*) => {
        /// The stable violation codes (docs/verdict.md). Tests and
        /// users key on these spellings, never on messages.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        pub enum ViolationCode {
            $(#[serde(rename = $spelling)] $variant,)*
        }

        impl ViolationCode {
            /// Every code, in documented order.
            pub const ALL: &'static [ViolationCode] = &[$(ViolationCode::$variant,)*];

            /// The documented spelling.
            #[must_use]
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ViolationCode::$variant => $spelling,)*
                }
            }

            /// What the violation is about.
            #[must_use]
            pub fn category(self) -> Category {
                match self {
                    $(ViolationCode::$variant => Category::$category,)*
                }
            }
        }
    };
}

codes! {
    MalformedPayload => "malformed_payload", Payload;
    InputLimitExceeded => "input_limit_exceeded", Payload;
    MalformedArguments => "malformed_arguments", Call;
    DuplicateArgumentKey => "duplicate_argument_key", Call;
    NotAllowed => "not_allowed", Call;
    Forbidden => "forbidden", Call;
    MissingRequiredParam => "missing_required_param", Call;
    SchemaViolation => "schema_violation", Call;
    UnexpectedArguments => "unexpected_arguments", Call;
    InvalidToolSchema => "invalid_tool_schema", Payload;
    DuplicateCallId => "duplicate_call_id", Call;
    UnauthorizedRole => "unauthorized_role", Call;
    UnauthorizedArgument => "unauthorized_argument", Call;
    RateLimited => "rate_limited", Call;
    MissingExpectedTools => "missing_expected_tools", Expectation;
    UsedForbiddenTools => "used_forbidden_tools", Expectation;
    TooFewTools => "too_few_tools", Expectation;
    TooManyTools => "too_many_tools", Expectation;
    OrderMismatch => "order_mismatch", Expectation;
    ArgMismatch => "arg_mismatch", Expectation;
    NoToolCalls => "no_tool_calls", Expectation;
    ResultMissingCallId => "result_missing_call_id", Result;
    ResultUnknownCallId => "result_unknown_call_id", Result;
    ResultDuplicateCallId => "result_duplicate_call_id", Result;
    ResultNameMismatch => "result_name_mismatch", Result;
    ResultMissingName => "result_missing_name", Result;
    ResultBadContent => "result_bad_content", Result;
    ResultMissing => "result_missing", Result;
    ToolDefinitionChanged => "tool_definition_changed", Call;
    ResultSchemaViolation => "result_schema_violation", Result;
}

impl std::fmt::Display for ViolationCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::{Category, Phase, ViolationCode};

    #[test]
    fn spellings_are_unique_and_snake_case() {
        let mut seen = std::collections::HashSet::new();
        for code in ViolationCode::ALL {
            assert!(seen.insert(code.as_str()), "{code}");
            assert!(code
                .as_str()
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'_'));
            let json = serde_json::to_string(code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
        }
    }

    #[test]
    fn phases_judge_their_categories() {
        assert!(Phase::Request.judges(Category::Result, false));
        assert!(!Phase::Request.judges(Category::Call, true));
        assert!(!Phase::Response.judges(Category::Result, true));
        assert!(!Phase::Response.judges(Category::Expectation, true));
        assert!(Phase::Response.judges(Category::Call, false));
        assert!(Phase::Trajectory.judges(Category::Result, true));
        assert!(!Phase::Trajectory.judges(Category::Result, false));
        for phase in [Phase::Request, Phase::Response, Phase::Trajectory] {
            assert!(phase.judges(Category::Payload, false));
            assert_eq!(phase.as_str().parse::<Phase>(), Ok(phase));
        }
    }
}
