//! OpenAI Responses API: `output[]` of a response, `input[]` of a request.
//! `function_call` and `custom_tool_call` items are calls, hosted tool items
//! (`web_search_call`, `computer_call`, `mcp_call`, ...) are hosted calls,
//! `*_output` items are results.

use serde_json::value::RawValue;

use crate::detect::collect::{ArgSource, Collector};
use crate::detect::document::{self, id_text, parse, Obj, Objects, Result};
use crate::model::{CallKind, Format};

/// Hosted tools: the item type and the tool name it stands for.
const HOSTED: [(&str, &str); 10] = [
    ("web_search_call", "web_search"),
    ("file_search_call", "file_search"),
    ("code_interpreter_call", "code_interpreter"),
    ("image_generation_call", "image_generation"),
    ("computer_call", "computer"),
    ("local_shell_call", "local_shell"),
    ("shell_call", "shell"),
    ("apply_patch_call", "apply_patch"),
    ("tool_search_call", "tool_search"),
    ("mcp_call", "mcp"),
];

/// Whether `kind` is the type of a Responses call or result item.
pub(crate) fn is_item_type(kind: &str) -> bool {
    matches!(kind, "function_call" | "custom_tool_call")
        || kind.ends_with("_call_output")
        || HOSTED.iter().any(|(t, _)| *t == kind)
}

#[derive(PartialEq, Clone, Copy)]
enum Category {
    Call,
    Output,
    Other,
}

/// An `output[]` or `input[]` list. Consecutive calls form one turn, the
/// results after them the next.
pub(crate) fn items(raw: &RawValue, out: &mut Collector<'_>, format: Format) -> Result<()> {
    out.saw(format);
    let mut previous = None;
    let list: Objects<'_> = parse(raw)?;
    for o in list.iter() {
        let category = match o.kind.as_deref() {
            Some(kind) if kind.ends_with("_output") => Category::Output,
            Some(kind) if is_item_type(kind) => Category::Call,
            _ => Category::Other,
        };
        if previous.is_some_and(|p| p != category) && category != Category::Other {
            out.next_turn(Some(match category {
                Category::Call => "assistant",
                Category::Output | Category::Other => "tool",
            }));
        }
        previous = Some(category);
        if category == Category::Other {
            if o.role.is_some() {
                document::message(o, out)?;
            }
            continue;
        }
        item(o, out, format)?;
    }
    Ok(())
}

/// One call or result item.
pub(crate) fn item(o: &Obj<'_>, out: &mut Collector<'_>, format: Format) -> Result<()> {
    let kind = o.kind.as_deref().unwrap_or_default();
    let item_id = id_text(o.id);
    // `call_id` links results to calls; `id` is the item's own id.
    let id = o.call_id.as_deref().or(item_id.as_deref());
    if kind.ends_with("_output") {
        out.result(format, o.call_id.as_deref(), None, o.output, false);
        return Ok(());
    }
    match kind {
        "function_call" => out.call(
            format,
            CallKind::Function,
            id,
            o.name.as_deref().unwrap_or_default(),
            o.arguments.map_or(ArgSource::Absent, ArgSource::Inline),
        ),
        "custom_tool_call" => {
            let input = match o.input {
                Some(raw) if raw.get().starts_with('"') => {
                    ArgSource::Freeform(serde_json::from_str(raw.get())?)
                }
                Some(raw) => ArgSource::Inline(raw),
                None => ArgSource::Absent,
            };
            out.call(
                format,
                CallKind::Custom,
                id,
                o.name.as_deref().unwrap_or_default(),
                input,
            );
        }
        "mcp_call" => out.call(
            format,
            CallKind::Hosted,
            id,
            o.name.as_deref().unwrap_or("mcp"),
            o.arguments.map_or(ArgSource::Absent, ArgSource::Inline),
        ),
        _ => {
            let name = HOSTED
                .iter()
                .find(|(t, _)| *t == kind)
                .map_or(kind, |(_, name)| name);
            out.call(
                format,
                CallKind::Hosted,
                id,
                name,
                o.action.map_or(ArgSource::Absent, ArgSource::Inline),
            );
        }
    }
    Ok(())
}
