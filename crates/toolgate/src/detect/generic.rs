//! The seed shapes: `{name, arguments | params | parameters | args | input}`,
//! `toolName`, `{function: {...}}`, legacy `function_call`, and `tool_calls`
//! arrays of OpenAI calls or of those.

use std::borrow::Cow;

use serde_json::value::RawValue;

use crate::detect::collect::{ArgSource, Collector};
use crate::detect::document::{get, id_text, Obj, Objects, Result};
use crate::model::{CallKind, Format};

/// The argument keys of the generic shape, in the order they are looked up.
fn arguments<'a>(o: &Obj<'a>) -> Option<&'a RawValue> {
    o.arguments
        .or(o.params)
        .or(o.parameters)
        .or(o.args)
        .or(o.input)
}

/// A `tool_calls` array: OpenAI calls (`{id, type, function}`, `{type:
/// custom, custom}`) or generic ones. `format` is what the list itself is
/// (an assistant message's, or a bare seed array).
pub(crate) fn tool_calls(
    calls: &Objects<'_>,
    out: &mut Collector<'_>,
    format: Format,
) -> Result<()> {
    out.saw(format);
    for o in calls.iter() {
        if let Some(function) = get(&o.function) {
            self::function(o.id, function, out);
        } else if let Some(custom) = get(&o.custom) {
            let id = id_text(o.id);
            let input = match custom.input {
                Some(raw) if raw.get().starts_with('"') => {
                    ArgSource::Freeform(serde_json::from_str::<Cow<'_, str>>(raw.get())?)
                }
                Some(raw) => ArgSource::Inline(raw),
                None => ArgSource::Absent,
            };
            out.call(
                Format::OpenAiChat,
                CallKind::Custom,
                id.as_deref(),
                custom.name.as_deref().unwrap_or_default(),
                input,
            );
        } else {
            call(o, out);
        }
    }
    Ok(())
}

/// An OpenAI `function` object (`{name, arguments}`), from a tool call, a
/// bare `{function: ...}` or a legacy `function_call`.
pub(crate) fn function(id: Option<&RawValue>, f: &Obj<'_>, out: &mut Collector<'_>) {
    let id = id_text(id).or_else(|| id_text(f.id));
    out.call(
        Format::OpenAiChat,
        CallKind::Function,
        id.as_deref(),
        f.name.as_deref().unwrap_or_default(),
        arguments(f).map_or(ArgSource::Absent, ArgSource::Inline),
    );
}

/// A generic call: a name (`name` or `toolName`) and an arguments key.
/// An object with neither is not a call.
pub(crate) fn call(o: &Obj<'_>, out: &mut Collector<'_>) {
    let args = arguments(o);
    let (name, format) = match (&o.name, &o.toolName) {
        (_, Some(name)) if o.toolCallId.is_some() => (name, Format::VercelAi),
        (_, Some(name)) => (name, Format::Generic),
        (Some(name), None) if args.is_some() => (name, Format::Generic),
        _ => return,
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
}
