//! Tools a request declares (its `tools` array): merged with the policy's,
//! so that a call must name a tool the application offered and match that
//! tool's schema. A declaration that is not valid (no name, a schema that is
//! not JSON Schema, a name declared twice) is `invalid_tool_schema`, and the
//! whole payload fails: its calls cannot be checked against it.

use rustc_hash::FxHashSet;
use serde_json::Value;

use super::name;
use crate::detect::ToolDeclarations;
use crate::policy::names::NameSet;
use crate::policy::{declare, parse_tool, Policy, Problem, ToolTable};
use crate::verdict::{Violation, ViolationCode};

/// Most declarations read from one payload.
const MAX_DECLARED: usize = 512;

/// The request's tools, compiled for one check.
#[derive(Debug, Default)]
pub(crate) struct RequestTools {
    /// What the request says about each tool it declares.
    pub(crate) specs: ToolTable,
    /// The names the policy declares, and those the request declares.
    pub(crate) names: NameSet,
    /// The names of `names` that pass the name checks on sight (no
    /// violation of [`name::violation`] with these tools): computed once,
    /// so that a call of a declared tool is not compared with every
    /// forbidden name again.
    pub(crate) safe: FxHashSet<String>,
}

impl RequestTools {
    /// Read and compile the tools a payload declares, as sent; each
    /// invalid declaration is a violation, and so is a list that cannot
    /// be read (then nothing is declared, and the payload fails).
    pub(crate) fn compile_sent(
        policy: &Policy,
        sent: &ToolDeclarations,
        out: &mut Vec<Violation>,
    ) -> Self {
        if let Ok(tools) = sent.values() {
            return RequestTools::compile(policy, &tools, out);
        }
        out.push(Violation::payload(
            ViolationCode::InputLimitExceeded,
            "the request's tool declarations are nested too deeply to read",
        ));
        RequestTools::compile(policy, &[], out)
    }

    /// Compile `tools`; each invalid declaration is a violation.
    pub(crate) fn compile(policy: &Policy, tools: &[Value], out: &mut Vec<Violation>) -> Self {
        let mut problems: Vec<Problem> = Vec::new();
        if tools.len() > MAX_DECLARED {
            problems.push(Problem::new(
                "tools",
                format!(
                    "the request declares {} tools, more than {MAX_DECLARED}",
                    tools.len()
                ),
            ));
        }
        let mut decls = Vec::new();
        for (at, tool) in tools.iter().take(MAX_DECLARED).enumerate() {
            parse_tool(tool, &format!("tools[{at}]"), &mut problems, &mut decls);
        }
        // A Gemini entry declares several tools: the bound is on tools.
        if decls.len() > MAX_DECLARED && tools.len() <= MAX_DECLARED {
            problems.push(Problem::new(
                "tools",
                format!(
                    "the request declares {} tools, more than {MAX_DECLARED}",
                    decls.len()
                ),
            ));
        }
        decls.truncate(MAX_DECLARED);
        let mut own = NameSet::default();
        let mut specs = ToolTable::default();
        declare(
            &mut specs,
            &mut own,
            Some(&policy.tools),
            decls,
            policy.validate_formats,
            &mut problems,
        );
        out.extend(
            problems
                .into_iter()
                .filter(Problem::is_error)
                .map(|problem| Violation {
                    code: ViolationCode::InvalidToolSchema,
                    call: None,
                    tool: problem.tool.clone(),
                    path: None,
                    message: format!("the request declares an invalid tool: {problem}"),
                }),
        );
        let mut names = NameSet::new(policy.declared.names().iter().map(String::as_str));
        for name in own.names() {
            names.insert(name);
        }
        let safe = names
            .names()
            .iter()
            .filter(|name| {
                name::violation(policy, Some(&names), 0, name, policy.named(name)).is_none()
            })
            .cloned()
            .collect();
        RequestTools { specs, names, safe }
    }
}
