//! Model Context Protocol: JSON-RPC `tools/call` requests and their results
//! (one message or a batch, read element by element).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::detect::collect::{ArgSource, Collector};
use crate::detect::document::{self, id_text, is_object, parse, Obj, Result};
use crate::model::{CallKind, Format};
use crate::verdict::ViolationCode;

#[derive(Deserialize)]
struct CallParams<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
}

/// One JSON-RPC message.
pub(crate) fn message(o: &Obj<'_>, out: &mut Collector<'_>) -> Result<()> {
    out.saw(Format::Mcp);
    let id = id_text(o.id);
    if o.method.as_deref() == Some("tools/call") {
        let params: Option<CallParams<'_>> = match o.params {
            Some(raw) if is_object(raw) => Some(parse(raw)?),
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
    let Some(result) = o.result.filter(|r| is_object(r)) else {
        return Ok(());
    };
    let r: Obj<'_> = parse(result)?;
    if r.role.is_some() {
        // sampling/createMessage: the model's message, with its tool_use.
        return document::message(&r, out);
    }
    if r.content.is_some() || r.isError.is_some() {
        out.result(
            Format::Mcp,
            id.as_deref(),
            None,
            r.content,
            r.isError.unwrap_or(false),
        );
    }
    Ok(())
}
