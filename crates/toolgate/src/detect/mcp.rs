//! Model Context Protocol: JSON-RPC `tools/call` requests and their results
//! (one message or a batch, read element by element), and the messages of
//! sampling requests and results.

use crate::detect::collect::{ArgSource, Collector};
use crate::detect::document::{nested_call_key, object, Slot};
use crate::detect::node::{id_text, is, parse_node, Node, Obj, Result};
use crate::model::{CallKind, Format};
use crate::verdict::ViolationCode;

/// A key of a `tools/call` request's params that another format reads a
/// call's name or arguments from (`input`, `args`, `toolName`,
/// `function`, ...): the params say two things.
fn other_reading(p: &Obj<'_>) -> Option<&'static str> {
    [
        ("toolName", p.toolName.is_some()),
        ("input", p.input.is_some()),
        ("args", p.args.is_some()),
        ("params", p.params.is_some()),
        ("parameters", p.parameters.is_some()),
    ]
    .into_iter()
    .find_map(|(key, there)| there.then_some(key))
    .or_else(|| nested_call_key(p))
}

/// One JSON-RPC message.
pub(crate) fn message(o: &Obj<'_>, out: &mut Collector<'_>) -> Result<()> {
    out.saw(Format::Mcp);
    let id = id_text(o.id);
    if is(o.method, "tools/call") {
        let params = match o.params {
            Some(raw) if raw.get().starts_with('{') => Some(parse_node(raw)?),
            _ => None,
        };
        let params = match &params {
            Some(Node::Object(p)) => Some(&**p),
            _ => None,
        };
        match (params, params.and_then(other_reading)) {
            (Some(_), Some(other)) => out.violation(
                ViolationCode::MalformedPayload,
                format!(
                    "a tools/call request's params hold `{other}` beside `name` and `arguments`: a server may read either"
                ),
            ),
            (
                Some(Obj {
                    name: Some(name),
                    arguments,
                    ..
                }),
                None,
            ) => out.call(
                Format::Mcp,
                CallKind::Function,
                id.as_deref(),
                name,
                arguments.map_or(ArgSource::Absent, ArgSource::Inline),
            ),
            _ => out.violation(
                ViolationCode::MalformedPayload,
                "a tools/call request without params.name",
            ),
        }
        return Ok(());
    }
    if let Some(params) = o.params.filter(|p| p.get().starts_with('{')) {
        // Another request (a sampling request's messages): read as any
        // object.
        if let Node::Object(p) = parse_node(params)? {
            object(&p, Slot::Inner, out)?;
        }
    }
    let Some(result) = o.result.filter(|r| r.get().starts_with('{')) else {
        return Ok(());
    };
    let Node::Object(r) = parse_node(result)? else {
        return Ok(());
    };
    if r.role.is_none() && (r.content.is_some() || r.isError.is_some()) {
        out.result(
            Format::Mcp,
            id.as_deref(),
            None,
            r.content,
            r.isError.unwrap_or(false),
        );
        return Ok(());
    }
    // sampling/createMessage: the model's message, with its tool_use; a
    // tools/list result: declarations, no call.
    object(&r, Slot::Inner, out)
}
