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
//! that are not strings). Each call's arguments are written straight onto
//! the tape the engine reads arguments text into
//! ([`TapeWriter`](toolgate::detect::tape::TapeWriter)): no `serde_json`
//! object is built unless someone reads it. It declines (`None`) whatever
//! it does not take on exactly (another key, a value of another type, a
//! bound it comes near, a key a case-folding reader would merge, a float
//! whole past 2^63): the caller then checks the calls' JSON text, which
//! says exactly what is wrong. What it builds is compared with the JSON
//! reading by `Policy._direct_agrees` in the tests.
//!
//! The one difference: each call's `raw_arguments` is left empty (the
//! checks never read it) unless `with_raw` asks for it, as the tests do.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString};
use serde_json::{Map, Value};
use toolgate::detect::limits::HARD_MAX_DEPTH;
use toolgate::detect::tape::{Leaf, TapeWriter};
use toolgate::policy::Normalize;
use toolgate::{
    ArgumentError, ArgumentErrorReason, Arguments, CallKind, Detection, Format, Framing, Limits,
    ObjectArguments, ToolCall, ToolDeclarations, ViolationCode,
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
    /// (`normalize` only drops values: fewer in the cleaned arguments
    /// means it cleaned them).
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
    // The bound the engine reads arguments text with.
    let tape_depth = limits.max_depth.min(HARD_MAX_DEPTH);
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
        let mut tape = TapeWriter::new(tape_depth);
        reader.object(args, 1, &mut tape)?;
        if reader.bytes - before > limits.max_argument_bytes {
            return None;
        }
        let tape = tape.finish()?;
        nodes.push(reader.nodes);
        let raw = if with_raw {
            serde_json::to_string(&tape).ok()?
        } else {
            String::new()
        };
        let arguments = Arguments::Object(ObjectArguments::from_tape(tape));
        calls.push(fields.call(calls.len(), arguments, raw));
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
        let dict = call.cast::<PyDict>().ok()?;
        let [name, args, id, kind, error] = match Self::scan(dict, invalid) {
            Some(values) => values,
            None => Self::look_up(dict, invalid)?,
        };
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

    /// `name`, `args`, `id`, `type` and `error` (for an invalid call) of
    /// `dict`, in one pass over its keys when each is one of those very
    /// strings as Python interns them (LangChain writes them as literals);
    /// `None` at any other key, for [`look_up`](Self::look_up) to say.
    fn scan(dict: &Bound<'py, PyDict>, invalid: bool) -> Option<[Option<Bound<'py, PyAny>>; 5]> {
        let py = dict.py();
        let keys = [
            intern!(py, "name"),
            intern!(py, "args"),
            intern!(py, "id"),
            intern!(py, "type"),
            intern!(py, "error"),
        ];
        let known = if invalid { 5 } else { 4 };
        if dict.len() > known {
            return None;
        }
        let mut values: [Option<Bound<'py, PyAny>>; 5] = Default::default();
        for (key, value) in dict.iter() {
            let at = keys[..known].iter().position(|k| k.is(&key))?;
            values[at] = Some(value);
        }
        Some(values)
    }

    /// The same as [`scan`](Self::scan), each key looked up; `None` when
    /// the dict holds another key.
    fn look_up(dict: &Bound<'py, PyDict>, invalid: bool) -> Option<[Option<Bound<'py, PyAny>>; 5]> {
        let py = dict.py();
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
        let values = [name, args, id, kind, error];
        let found = values.iter().filter(|v| v.is_some()).count();
        (found == dict.len()).then_some(values)
    }

    fn call(self, index: usize, arguments: Arguments, raw_arguments: String) -> ToolCall {
        ToolCall {
            index,
            id: self.id,
            name: self.name.into(),
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

/// Arguments written onto a tape, with a bound on the JSON text they make.
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
    fn object(
        &mut self,
        dict: &Bound<'_, PyDict>,
        depth: usize,
        tape: &mut TapeWriter,
    ) -> Option<()> {
        if depth > self.max_depth {
            return None;
        }
        self.bytes += 2;
        let open = tape.begin_object()?;
        for (key, item) in dict.iter() {
            let key = text(&key)?;
            // Quotes, escapes, the colon and the comma.
            self.bytes += 6 * key.len() + 4;
            tape.key(key)?;
            self.value(&item, depth, tape)?;
        }
        // Declines a key twice, or twice to a reader that ignores case.
        tape.end_object(open)
    }

    /// One value at `depth` (its container's level).
    fn value(
        &mut self,
        value: &Bound<'_, PyAny>,
        depth: usize,
        tape: &mut TapeWriter,
    ) -> Option<()> {
        self.nodes += 1;
        match Kind::of(value)? {
            Kind::Str => {
                let text = value.cast::<PyString>().ok()?.to_str().ok()?;
                self.bytes += 6 * text.len() + 2;
                tape.string(text)
            }
            Kind::Dict => self.object(value.cast::<PyDict>().ok()?, depth + 1, tape),
            Kind::List => {
                let list = value.cast::<PyList>().ok()?;
                if depth + 1 > self.max_depth {
                    return None;
                }
                self.bytes += 2;
                let open = tape.begin_array()?;
                for item in list.iter() {
                    self.bytes += 1;
                    self.value(&item, depth + 1, tape)?;
                }
                tape.end_array(open)
            }
            Kind::None => {
                self.bytes += 4;
                tape.null()
            }
            Kind::Bool => {
                self.bytes += 5;
                tape.bool(value.cast::<PyBool>().ok()?.is_true())
            }
            Kind::Int => {
                self.bytes += 20;
                if let Ok(n) = value.extract::<i64>() {
                    tape.i64(n)
                } else {
                    tape.u64(value.extract::<u64>().ok()?)
                }
            }
            Kind::Float => {
                self.bytes += 24;
                // NaN, infinity and a float whole past 2^63 are declined.
                tape.f64(value.cast::<PyFloat>().ok()?.value())
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

/// `sent` (an arguments dict) cleaned as `rules` clean its tape, with how
/// many values the cleaned dict holds (containers included); `None` when
/// nothing is dropped, or when `sent` holds what [`read_calls`] does not
/// take (a key that is not a string, a value of another type). The dicts
/// and lists along the way to a dropped value are new; everything else is
/// `sent`'s own.
pub(crate) fn cleaned_args<'py>(
    sent: &Bound<'py, PyDict>,
    rules: &Normalize,
) -> PyResult<Option<(Bound<'py, PyDict>, usize)>> {
    let mut cleaner = Cleaner {
        rules,
        values: 0,
        foreign: false,
    };
    let dict = cleaner.dict(sent)?;
    Ok(dict
        .filter(|_| !cleaner.foreign)
        .map(|dict| (dict, cleaner.values)))
}

/// A walk that cleans a dict, counting the values it keeps.
struct Cleaner<'r> {
    rules: &'r Normalize,
    values: usize,
    /// Whether it met a key or value `read_calls` does not take.
    foreign: bool,
}

impl Cleaner<'_> {
    /// Whether `value`, as written, is dropped.
    fn drops(&mut self, value: &Bound<'_, PyAny>) -> PyResult<bool> {
        let leaf = match Kind::of(value) {
            Some(Kind::None) => Leaf::Null,
            Some(Kind::Dict) if value.cast::<PyDict>()?.is_empty() => Leaf::Empty,
            Some(Kind::List) if value.cast::<PyList>()?.is_empty() => Leaf::Empty,
            Some(Kind::Str) => Leaf::Text(value.cast::<PyString>()?.to_str()?),
            Some(Kind::Dict | Kind::List | Kind::Bool | Kind::Int | Kind::Float) => Leaf::Other,
            None => {
                self.foreign = true;
                Leaf::Other
            }
        };
        Ok(self.rules.drops(&leaf))
    }

    /// The value cleaned, when something in it is dropped.
    fn value<'py>(&mut self, value: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.values += 1;
        Ok(match Kind::of(value) {
            Some(Kind::Dict) => self.dict(value.cast::<PyDict>()?)?.map(Bound::into_any),
            Some(Kind::List) => self.list(value.cast::<PyList>()?)?.map(Bound::into_any),
            _ => None,
        })
    }

    fn dict<'py>(&mut self, sent: &Bound<'py, PyDict>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let mut out: Option<Bound<'py, PyDict>> = None;
        for (index, (key, value)) in sent.iter().enumerate() {
            self.foreign |= !key.is_instance_of::<PyString>();
            let kept = if self.drops(&value)? {
                None
            } else {
                Some(self.value(&value)?)
            };
            if out.is_none() && !matches!(kept, Some(None)) {
                // The first change: the members before it, as they are.
                let dict = PyDict::new(sent.py());
                for (key, value) in sent.iter().take(index) {
                    dict.set_item(key, value)?;
                }
                out = Some(dict);
            }
            if let (Some(dict), Some(kept)) = (&out, kept) {
                dict.set_item(key, kept.unwrap_or(value))?;
            }
        }
        Ok(out)
    }

    fn list<'py>(&mut self, sent: &Bound<'py, PyList>) -> PyResult<Option<Bound<'py, PyList>>> {
        let mut out: Option<Bound<'py, PyList>> = None;
        for (index, value) in sent.iter().enumerate() {
            let kept = if self.drops(&value)? {
                None
            } else {
                Some(self.value(&value)?)
            };
            if out.is_none() && !matches!(kept, Some(None)) {
                out = Some(PyList::new(sent.py(), sent.iter().take(index))?);
            }
            if let (Some(list), Some(kept)) = (&out, kept) {
                list.append(kept.unwrap_or(value))?;
            }
        }
        Ok(out)
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
