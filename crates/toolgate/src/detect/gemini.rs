//! Google Gemini: `candidates[].content.parts[]` of a response,
//! `contents[].parts[]` of a request; `functionCall` / `functionResponse`
//! parts, in camelCase or in the snake case of the protobuf names.

use crate::detect::collect::{ArgSource, Collector};
use crate::detect::document::{self, get, id_text, is_object, parse, Obj, Objects, Result};
use crate::model::{CallKind, Format};
use crate::verdict::ViolationCode;

/// `candidates[]` of a response: each candidate's content is a turn.
pub(crate) fn candidates(candidates: &Objects<'_>, out: &mut Collector<'_>) -> Result<()> {
    out.saw(Format::Gemini);
    for candidate in candidates.iter() {
        if let Some(content) = candidate.content.filter(|c| is_object(c)) {
            document::message(&parse(content)?, out)?;
        }
    }
    Ok(())
}

/// `contents[]` of a request: each is a turn.
pub(crate) fn contents(contents: &Objects<'_>, out: &mut Collector<'_>) -> Result<()> {
    out.saw(Format::Gemini);
    for content in contents.iter() {
        document::message(content, out)?;
    }
    Ok(())
}

/// `parts[]` of one content.
pub(crate) fn parts(parts: &Objects<'_>, out: &mut Collector<'_>) {
    out.saw(Format::Gemini);
    for p in parts.iter() {
        part(p, out);
    }
}

/// One part: a call, a response, or something else (text, thought).
pub(crate) fn part(p: &Obj<'_>, out: &mut Collector<'_>) {
    out.saw(Format::Gemini);
    if let Some(f) = get(&p.functionCall).or_else(|| get(&p.function_call)) {
        if f.partialArgs.is_some() || f.willContinue.is_some() || f.name.is_none() {
            // Arguments streamed by JSON path belong to a stream; read here
            // they would be a call with partial arguments.
            out.violation(
                ViolationCode::MalformedPayload,
                "a Gemini functionCall with streamed partialArgs outside a stream",
            );
            return;
        }
        let id = id_text(f.id);
        out.call(
            Format::Gemini,
            CallKind::Function,
            id.as_deref(),
            f.name.as_deref().unwrap_or_default(),
            f.args.map_or(ArgSource::Absent, ArgSource::Inline),
        );
    }
    if let Some(f) = get(&p.functionResponse).or_else(|| get(&p.function_response)) {
        let id = id_text(f.id);
        out.result(
            Format::Gemini,
            id.as_deref(),
            f.name.as_deref(),
            f.response,
            false,
        );
    }
}
