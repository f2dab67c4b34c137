//! Model Context Protocol: JSON-RPC `tools/call` requests and their results
//! (one message or a batch, read element by element), and the messages of
//! sampling requests and results.

use std::borrow::Cow;

use serde::Deserialize;

use crate::detect::collect::{ArgSource, Collector};
use crate::detect::document::{object, Slot};
use crate::detect::node::{id_text, is, parse, parse_node, Node, Obj, Raw, Result};
use crate::model::{CallKind, Format};
use crate::verdict::ViolationCode;

#[derive(Deserialize)]
struct CallParams<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    arguments: Option<Raw<'a>>,
}

/// One JSON-RPC message.
pub(crate) fn message(o: &Obj<'_>, out: &mut Collector<'_>) -> Result<()> {
    out.saw(Format::Mcp);
    let id = id_text(o.id);
    if is(o.method, "tools/call") {
        let params: Option<CallParams<'_>> = match o.params {
            Some(raw) if raw.get().starts_with('{') => Some(parse(raw)?),
            _ => None,
        };
        match params {
            Some(CallParams {
                name: Some(name),
                arguments,
            }) => out.call(
                Format::Mcp,
                CallKind::Function,
                id.as_deref(),
                &name,
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
