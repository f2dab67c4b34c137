//! LangChain tool calls read straight from their Python objects into the
//! calls the engine checks, without writing them as JSON text and reading
//! that text back.
//!
//! [`read_calls`] takes the plain shape LangChain's `AIMessage` holds
//! (`tool_calls`: dicts of `name`, `args`, `id` and `type: "tool_call"`;
//! `invalid_tool_calls` as the middleware passes them) and builds the very
//! [`Detection`] the engine reads from those calls' JSON text: the same
//! calls, arguments, formats and counts, with the bounds the argument
//! reader applies (depth, size, keys a case-folding reader would merge)
//! and the values it refuses (NaN, infinity, integers past 64 bits, keys
//! that are not strings). It declines (`None`) whatever it does not take
//! on exactly (another key, a value of another type, a bound it comes near,
//! a key a case-folding reader would merge): the caller then checks the
//! calls' JSON text, which says exactly what is wrong. What it builds is
//! compared with the JSON reading by `Policy._direct_agrees` in the tests.
//!
//! The one difference: each call's `raw_arguments` is left empty (the
//! checks never read it) unless `with_raw` asks for it, as the tests do.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString};
use serde_json::{Map, Number, Value};
use toolgate::detect::args::case_twin;
use toolgate::detect::limits::HARD_MAX_DEPTH;
use toolgate::{
    ArgumentError, ArgumentErrorReason, Arguments, CallKind, Detection, Format, Framing, Limits,
    ToolCall, ToolDeclarations, ViolationCode,
};

/// Levels the calls' JSON text adds above a call's arguments (the object,
/// `tool_calls`, the call), and two more to stay clear of the readers'
/// own bounds.
const ENVELOPE_LEVELS: usize = 5;

/// Bytes of the calls' JSON text around one call's values, at most: its
/// keys, quotes, separators and the `type`.
const ENVELOPE_BYTES: usize = 96;

/// LangChain's calls, read.
pub(crate) struct Direct {
    pub(crate) detection: Detection,
    /// Values in each `tool_calls` entry's arguments, containers included
    /// (see [`nodes`]).
    pub(crate) nodes: Vec<usize>,
    /// The length of the calls' JSON text, at most.
    pub(crate) bytes: usize,
}

/// The calls of `tool_calls` (and `invalid_tool_calls`, each refused as
/// one the provider could not parse), as the engine reads their JSON text;
/// `None` when they are not of the plain shape read here.
pub(crate) fn read_calls(
    tool_calls: &Bound<'_, PyList>,
    invalid_tool_calls: Option<&Bound<'_, PyList>>,
    limits: &Limits,
    with_raw: bool,
) -> Option<Direct> {
    let invalid_count = invalid_tool_calls.map_or(0, PyListMethods::len);
    let count = tool_calls.len() + invalid_count;
    if count == 0 || count > limits.max_calls {
        return None;
    }
    let max_depth = limits
        .max_depth
        .min(HARD_MAX_DEPTH)
        .checked_sub(ENVELOPE_LEVELS)?;
    let mut reader = Reader {
        max_depth,
        bytes: 0,
        nodes: 0,
    };
    let mut calls = Vec::with_capacity(count);
    let mut nodes = Vec::with_capacity(tool_calls.len());
    for call in tool_calls.iter() {
        let mut fields = Fields::read(&call, "tool_call", false)?;
        let args = fields.args.take()?;
        let args = args.cast::<PyDict>().ok()?;
        let before = reader.bytes;
        reader.nodes = 0;
        let map = reader.object(args, 1)?;
        if reader.bytes - before > limits.max_argument_bytes {
            return None;
        }
        nodes.push(reader.nodes);
        let raw = if with_raw {
            serde_json::to_string(&map).ok()?
        } else {
            String::new()
        };
        calls.push(fields.call(calls.len(), Arguments::Object(map.into()), raw));
    }
    if let Some(invalid) = invalid_tool_calls {
        for call in invalid.iter() {
            let fields = Fields::read(&call, "invalid_tool_call", true)?;
            let raw = match &fields.args {
                None => String::new(),
                Some(text) => {
                    let text = text.cast::<PyString>().ok()?.to_str().ok()?;
                    reader.bytes += 6 * text.len();
                    text.to_owned()
                }
            };
            let arguments = Arguments::Invalid(ArgumentError {
                code: ViolationCode::MalformedArguments,
                reason: ArgumentErrorReason::NotJson,
                message: "the provider could not parse this tool call (invalid_tool_calls)"
                    .to_owned(),
            });
            let raw = if with_raw { raw } else { String::new() };
            calls.push(fields.call(calls.len(), arguments, raw));
        }
    }
    let envelope: usize = calls
        .iter()
        .map(|c| ENVELOPE_BYTES + 6 * (c.name.len() + c.id.as_ref().map_or(0, String::len)))
        .sum();
    let bytes = reader.bytes + envelope + ENVELOPE_BYTES;
    if bytes > limits.max_payload_bytes {
        return None;
    }
    let detection = Detection {
        format: Some(Format::Generic),
        framing: Framing::Json,
        calls,
        results: Vec::new(),
        tools: ToolDeclarations::default(),
        violations: Vec::new(),
        pending: Some(0),
        continues: false,
        calls_seen: count,
    };
    Some(Direct {
        detection,
        nodes,
        bytes,
    })
}

/// The keys of one call, read from its dict.
struct Fields<'py> {
    name: String,
    id: Option<String>,
    args: Option<Bound<'py, PyAny>>,
}

impl<'py> Fields<'py> {
    /// A call's dict of `name`, `args`, `id` and `type` (`tag`, when
    /// present), and `error` for an invalid call; no other key.
    fn read(call: &Bound<'py, PyAny>, tag: &str, invalid: bool) -> Option<Fields<'py>> {
        let py = call.py();
        let dict = call.cast::<PyDict>().ok()?;
        // Looked up by interned keys, whose hashes are kept: cheaper than
        // reading every key's text.
        let get = |key: &Bound<'py, PyString>| dict.get_item(key).ok();
        let name = get(intern!(py, "name"))?;
        let args = get(intern!(py, "args"))?;
        let id = get(intern!(py, "id"))?;
        let kind = get(intern!(py, "type"))?;
        let error = if invalid {
            get(intern!(py, "error"))?
        } else {
            None
        };
        let found = [&name, &args, &id, &kind, &error]
            .iter()
            .filter(|v| v.is_some())
            .count();
        if found != dict.len() {
            return None;
        }
        if let Some(kind) = &kind {
            if text(kind)? != tag {
                return None;
            }
        }
        if let Some(error) = error.filter(|e| !e.is_none()) {
            text(&error)?;
        }
        let name = name?;
        let name = text(&name)?;
        let id = match id.filter(|id| !id.is_none()) {
            None => None,
            Some(id) => Some(text(&id)?.to_owned()),
        };
        if name.is_empty() || id.as_deref() == Some("") {
            return None;
        }
        let args = args.filter(|a| !(invalid && a.is_none()));
        Some(Fields {
            name: name.to_owned(),
            id,
            args,
        })
    }

    fn call(self, index: usize, arguments: Arguments, raw_arguments: String) -> ToolCall {
        ToolCall {
            index,
            id: self.id,
            name: self.name,
            kind: CallKind::Function,
            arguments,
            raw_arguments,
            format: Format::Generic,
            turn: 0,
        }
    }
}

/// A `str` (or subclass) as UTF-8 text.
fn text<'a>(value: &'a Bound<'_, PyAny>) -> Option<&'a str> {
    value.cast::<PyString>().ok()?.to_str().ok()
}

/// Arguments as JSON values, with a bound on the JSON text they make.
struct Reader {
    /// The deepest level an argument may sit at (the arguments object is
    /// level 1).
    max_depth: usize,
    /// Bytes of the arguments' JSON text so far, at most.
    bytes: usize,
    /// Values read in the current arguments, containers included.
    nodes: usize,
}

impl Reader {
    fn object(&mut self, dict: &Bound<'_, PyDict>, depth: usize) -> Option<Map<String, Value>> {
        if depth > self.max_depth {
            return None;
        }
        self.bytes += 2;
        let mut map = Map::with_capacity(dict.len());
        for (key, item) in dict.iter() {
            let key = text(&key)?;
            // Quotes, escapes, the colon and the comma.
            self.bytes += 6 * key.len() + 4;
            let value = self.value(&item, depth)?;
            map.insert(key.to_owned(), value);
        }
        if case_twin(&map).is_some() {
            return None;
        }
        Some(map)
    }

    /// One value at `depth` (its container's level).
    fn value(&mut self, value: &Bound<'_, PyAny>, depth: usize) -> Option<Value> {
        self.nodes += 1;
        match Kind::of(value)? {
            Kind::Str => {
                let text = value.cast::<PyString>().ok()?.to_str().ok()?;
                self.bytes += 6 * text.len() + 2;
                Some(Value::String(text.to_owned()))
            }
            Kind::Dict => self
                .object(value.cast::<PyDict>().ok()?, depth + 1)
                .map(Value::Object),
            Kind::List => {
                let list = value.cast::<PyList>().ok()?;
                if depth + 1 > self.max_depth {
                    return None;
                }
                self.bytes += 2;
                let mut items = Vec::with_capacity(list.len());
                for item in list.iter() {
                    self.bytes += 1;
                    items.push(self.value(&item, depth + 1)?);
                }
                Some(Value::Array(items))
            }
            Kind::None => {
                self.bytes += 4;
                Some(Value::Null)
            }
            Kind::Bool => {
                self.bytes += 5;
                Some(Value::Bool(value.cast::<PyBool>().ok()?.is_true()))
            }
            Kind::Int => {
                self.bytes += 20;
                if let Ok(n) = value.extract::<i64>() {
                    Some(Value::from(n))
                } else {
                    value.extract::<u64>().ok().map(Value::from)
                }
            }
            Kind::Float => {
                self.bytes += 24;
                float_as_read(value.cast::<PyFloat>().ok()?.value()).map(Value::Number)
            }
        }
    }
}

/// The JSON kind of a Python value, as `write_json` tells it.
enum Kind {
    Str,
    Dict,
    List,
    None,
    Bool,
    Int,
    Float,
}

impl Kind {
    /// The exact types first (a pointer comparison each); then, for their
    /// subclasses, `write_json`'s order of checks (`bool` before `int`,
    /// its base class). `None` for any other type.
    fn of(value: &Bound<'_, PyAny>) -> Option<Kind> {
        if value.is_exact_instance_of::<PyString>() {
            Some(Kind::Str)
        } else if value.is_exact_instance_of::<PyDict>() {
            Some(Kind::Dict)
        } else if value.is_exact_instance_of::<PyList>() {
            Some(Kind::List)
        } else if value.is_none() {
            Some(Kind::None)
        } else if value.is_exact_instance_of::<PyBool>() {
            Some(Kind::Bool)
        } else if value.is_exact_instance_of::<PyInt>() {
            Some(Kind::Int)
        } else if value.is_exact_instance_of::<PyFloat>() {
            Some(Kind::Float)
        } else if value.is_instance_of::<PyString>() {
            Some(Kind::Str)
        } else if value.is_instance_of::<PyDict>() {
            Some(Kind::Dict)
        } else if value.is_instance_of::<PyList>() {
            Some(Kind::List)
        } else if value.is_instance_of::<PyBool>() {
            Some(Kind::Bool)
        } else if value.is_instance_of::<PyInt>() {
            Some(Kind::Int)
        } else if value.is_instance_of::<PyFloat>() {
            Some(Kind::Float)
        } else {
            None
        }
    }
}

/// A float as the argument reader reads the JSON text `write_json` makes
/// of it: the shortest text that reads back as it, read back by
/// `serde_json`. `None` for NaN and infinity.
fn float_as_read(value: f64) -> Option<Number> {
    let written = Number::from_f64(value)?;
    let text = written.to_string();
    let read: f64 = serde_json::from_str(&text).ok()?;
    Number::from_f64(read)
}

/// Values in a cleaned arguments object, containers included: `normalize`
/// only drops values, so fewer than were sent means it cleaned them.
pub(crate) fn nodes(map: &Map<String, Value>) -> usize {
    map.values().map(|v| 1 + value_nodes(v)).sum()
}

fn value_nodes(value: &Value) -> usize {
    match value {
        Value::Object(map) => nodes(map),
        Value::Array(items) => items.iter().map(|v| 1 + value_nodes(v)).sum(),
        _ => 0,
    }
}

/// The dict of `clean` (what `normalize` kept of `sent`, an arguments
/// dict): equal to [`object_to_python`](crate::convert::object_to_python)
/// of it, made of `sent`'s own keys and values wherever they are of the
/// exact type and value `clean` holds, so that little is allocated again.
pub(crate) fn cleaned_dict<'py>(
    sent: &Bound<'py, PyDict>,
    clean: &Map<String, Value>,
) -> PyResult<Bound<'py, PyDict>> {
    let py = sent.py();
    let out = PyDict::new(py);
    let mut kept = clean.iter().peekable();
    for (key, value) in sent.iter() {
        let Some((name, item)) = kept.peek() else {
            break;
        };
        // `clean`'s keys are `sent`'s, in order, some left out.
        if !key.is_exact_instance_of::<PyString>() || key.cast::<PyString>()?.to_str()? != *name {
            continue;
        }
        out.set_item(key, reuse(&value, item)?)?;
        kept.next();
    }
    // Every key of `clean` is one of `sent`'s; should one not be found,
    // the dict is built from `clean` alone.
    if kept.peek().is_some() {
        return crate::convert::object_to_python(py, clean);
    }
    Ok(out)
}

/// `sent` when it is `clean` exactly, else the Python value of `clean`
/// (its containers made of `sent`'s items where they can be).
fn reuse<'py>(sent: &Bound<'py, PyAny>, clean: &Value) -> PyResult<Bound<'py, PyAny>> {
    let same = match clean {
        Value::Object(map) => {
            if let Ok(dict) = sent.cast_exact::<PyDict>() {
                return Ok(cleaned_dict(dict, map)?.into_any());
            }
            false
        }
        Value::Array(items) => match sent.cast_exact::<PyList>() {
            Ok(list) if list.len() == items.len() => {
                let out = PyList::empty(sent.py());
                for (value, item) in list.iter().zip(items) {
                    out.append(reuse(&value, item)?)?;
                }
                return Ok(out.into_any());
            }
            _ => false,
        },
        Value::Null => sent.is_none(),
        Value::Bool(flag) => {
            sent.is_exact_instance_of::<PyBool>() && sent.cast::<PyBool>()?.is_true() == *flag
        }
        Value::String(text) => {
            sent.is_exact_instance_of::<PyString>() && sent.cast::<PyString>()?.to_str()? == text
        }
        Value::Number(number) => {
            if sent.is_exact_instance_of::<PyInt>() {
                number
                    .as_i64()
                    .is_some_and(|n| sent.extract::<i64>().ok() == Some(n))
                    || number
                        .as_u64()
                        .is_some_and(|n| sent.extract::<u64>().ok() == Some(n))
            } else if sent.is_exact_instance_of::<PyFloat>() {
                number.is_f64()
                    && number.as_f64().map(f64::to_bits)
                        == Some(sent.cast::<PyFloat>()?.value().to_bits())
            } else {
                false
            }
        }
    };
    if same {
        Ok(sent.clone())
    } else {
        crate::convert::to_python(sent.py(), clean)
    }
}
