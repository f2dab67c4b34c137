//! Google Gemini: `candidates[].content.parts[]` of a response,
//! `contents[].parts[]` of a request; `functionCall` / `functionResponse`
//! parts, in camelCase or the proto's snake_case.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::detect::collect::{ArgSource, Collector};
use crate::detect::document::{self, id_text, is_object, items, parse, Obj, Result};
use crate::model::{CallKind, Format};
use crate::verdict::ViolationCode;

#[derive(Deserialize)]
struct Candidate<'a> {
    #[serde(borrow)]
    content: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[allow(non_snake_case)] // the wire's own spellings
struct FunctionCall<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    args: Option<&'a RawValue>,
    #[serde(borrow)]
    response: Option<&'a RawValue>,
    #[serde(borrow)]
    partialArgs: Option<&'a RawValue>,
    willContinue: Option<bool>,
}

/// `candidates[]` of a response: each candidate's content is a turn.
pub(crate) fn candidates(raw: &RawValue, out: &mut Collector<'_>) -> Result<()> {
    out.saw(Format::Gemini);
    for item in items(Some(raw))? {
        if !is_object(item) {
            continue;
        }
        let c: Candidate<'_> = parse(item)?;
        if let Some(content) = c.content.filter(|c| is_object(c)) {
            document::message(&parse(content)?, out)?;
        }
    }
    Ok(())
}

/// `contents[]` of a request: each is a turn.
pub(crate) fn contents(raw: &RawValue, out: &mut Collector<'_>) -> Result<()> {
    out.saw(Format::Gemini);
    for item in items(Some(raw))? {
        if is_object(item) {
            document::message(&parse(item)?, out)?;
        }
    }
    Ok(())
}

/// `parts[]` of one content.
pub(crate) fn parts(raw: &RawValue, out: &mut Collector<'_>) -> Result<()> {
    out.saw(Format::Gemini);
    for item in items(Some(raw))? {
        if is_object(item) {
            part(&parse(item)?, out)?;
        }
    }
    Ok(())
}

/// One part: a call, a response, or something else (text, thought).
pub(crate) fn part(p: &Obj<'_>, out: &mut Collector<'_>) -> Result<()> {
    out.saw(Format::Gemini);
    if let Some(raw) = p.functionCall.or(p.function_call).filter(|r| is_object(r)) {
        let f: FunctionCall<'_> = parse(raw)?;
        if f.partialArgs.is_some() || f.willContinue.is_some() || f.name.is_none() {
            // Arguments streamed by JSON path belong to a stream; read here
            // they would be a call with partial arguments.
            out.violation(
                ViolationCode::MalformedPayload,
                "a Gemini functionCall with streamed partialArgs outside a stream",
            );
            return Ok(());
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
    if let Some(raw) = p
        .functionResponse
        .or(p.function_response)
        .filter(|r| is_object(r))
    {
        let f: FunctionCall<'_> = parse(raw)?;
        let id = id_text(f.id);
        out.result(Format::Gemini, id.as_deref(), f.name.as_deref(), f.response, false);
    }
    Ok(())
}
