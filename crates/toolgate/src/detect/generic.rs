//! The seed shapes: `{name, arguments | params | parameters | args | input}`,
//! `toolName`, `{function: {...}}`, legacy `function_call`, and `tool_calls`
//! arrays of OpenAI calls or of those.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::detect::collect::{ArgSource, Collector};
use crate::detect::document::{id_text, is_object, items, parse, Obj, Result};
use crate::model::{CallKind, Format};

/// The argument keys of the generic shape, in the order they are looked up.
fn arguments<'a>(o: &Obj<'a>) -> Option<&'a RawValue> {
    o.arguments.or(o.params).or(o.parameters).or(o.args).or(o.input)
}

/// A `tool_calls` array: OpenAI calls (`{id, type, function}`, `{type:
/// custom, custom}`) or generic ones. `format` labels the OpenAI-shaped
/// calls: they came from an assistant message or a bare seed array.
pub(crate) fn tool_calls(raw: &RawValue, out: &mut Collector<'_>, format: Format) -> Result<()> {
    out.saw(format);
    for item in items(Some(raw))? {
        if !is_object(item) {
            continue;
        }
        let o: Obj<'_> = parse(item)?;
        if let Some(function) = o.function.filter(|f| is_object(f)) {
            self::function(o.id, function, out)?;
        } else if let Some(custom) = o.custom.filter(|c| is_object(c)) {
            let c: Custom<'_> = parse(custom)?;
            let id = id_text(o.id);
            out.call(
                Format::OpenAiChat,
                CallKind::Custom,
                id.as_deref(),
                c.name.as_deref().unwrap_or_default(),
                c.input.map_or(ArgSource::Absent, ArgSource::Freeform),
            );
        } else {
            call(&o, out)?;
        }
    }
    Ok(())
}

#[derive(Deserialize)]
struct Custom<'a> {
    #[serde(borrow)]
    name: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    input: Option<std::borrow::Cow<'a, str>>,
}

/// An OpenAI `function` object (`{name, arguments}`), from a tool call, a
/// bare `{function: ...}` or a legacy `function_call`.
pub(crate) fn function(id: Option<&RawValue>, raw: &RawValue, out: &mut Collector<'_>) -> Result<()> {
    let f: Obj<'_> = parse(raw)?;
    let id = id_text(id).or_else(|| id_text(f.id));
    out.call(
        Format::OpenAiChat,
        CallKind::Function,
        id.as_deref(),
        f.name.as_deref().unwrap_or_default(),
        arguments(&f).map_or(ArgSource::Absent, ArgSource::Inline),
    );
    Ok(())
}

/// A generic call: a name (`name` or `toolName`) and an arguments key.
/// An object with neither is not a call.
pub(crate) fn call(o: &Obj<'_>, out: &mut Collector<'_>) -> Result<()> {
    let args = arguments(o);
    let (name, format) = match (&o.name, &o.toolName) {
        (_, Some(name)) if o.toolCallId.is_some() => (name, Format::VercelAi),
        (_, Some(name)) => (name, Format::Generic),
        (Some(name), None) if args.is_some() => (name, Format::Generic),
        _ => return Ok(()),
    };
    let id = id_text(o.id);
    let id = o
        .toolCallId
        .as_deref()
        .or(o.call_id.as_deref())
        .or(id.as_deref());
    out.call(
        format,
        CallKind::Function,
        id,
        name,
        args.map_or(ArgSource::Absent, ArgSource::Inline),
    );
    Ok(())
}
