//! Python values to JSON and back: payloads, callers and tool declarations
//! in, verdicts out.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// Deeper Python structures are refused before they reach the engine (whose
/// own `input_limits.max_depth` then applies to what is left).
const MAX_DEPTH: usize = 512;

/// A payload as the bytes the engine reads: `bytes` and `str` as they are,
/// a `dict` or `list` (or a Pydantic model, such as a LangChain message) as
/// its JSON text.
pub(crate) fn payload_bytes(payload: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(bytes) = payload.cast::<PyBytes>() {
        return Ok(bytes.as_bytes().to_vec());
    }
    if let Ok(text) = payload.cast::<PyString>() {
        return Ok(text.to_str()?.as_bytes().to_vec());
    }
    let mut out = Vec::with_capacity(256);
    write_json(payload, &mut out, 0)?;
    Ok(out)
}

/// Write a Python value as JSON text: the values [`to_json`] takes, with
/// no intermediate tree.
pub(crate) fn write_json(
    value: &Bound<'_, PyAny>,
    out: &mut Vec<u8>,
    depth: usize,
) -> PyResult<()> {
    if depth > MAX_DEPTH {
        return Err(too_deep());
    }
    // The most frequent types first; `bool` before `int`, its base class.
    if let Ok(text) = value.cast::<PyString>() {
        write_str(out, text.to_str()?);
    } else if let Ok(dict) = value.cast::<PyDict>() {
        out.push(b'{');
        for (i, (key, item)) in dict.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_str(out, dict_key(&key)?.to_str()?);
            out.push(b':');
            write_json(&item, out, depth + 1)?;
        }
        out.push(b'}');
    } else if let Ok(list) = value.cast::<PyList>() {
        write_items(list.iter(), out, depth)?;
    } else if value.is_none() {
        out.extend_from_slice(b"null");
    } else if let Ok(flag) = value.cast::<PyBool>() {
        out.extend_from_slice(if flag.is_true() { b"true" } else { b"false" });
    } else if let Ok(int) = value.cast::<PyInt>() {
        write_number(out, &int_json(int)?);
    } else if let Ok(float) = value.cast::<PyFloat>() {
        write_number(out, &Value::Number(float_json(float)?));
    } else if let Ok(tuple) = value.cast::<PyTuple>() {
        write_items(tuple.iter(), out, depth)?;
    } else if let Some(dumped) = model_dump(value)? {
        write_json(&dumped, out, depth + 1)?;
    } else {
        return Err(unsupported(value));
    }
    Ok(())
}

fn write_items<'py>(
    items: impl Iterator<Item = Bound<'py, PyAny>>,
    out: &mut Vec<u8>,
    depth: usize,
) -> PyResult<()> {
    out.push(b'[');
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_json(&item, out, depth + 1)?;
    }
    out.push(b']');
    Ok(())
}

fn write_number(out: &mut Vec<u8>, number: &Value) {
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, number);
}

fn write_str(out: &mut Vec<u8>, text: &str) {
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, text);
}

fn too_deep() -> PyErr {
    PyValueError::new_err(format!(
        "the value is nested deeper than {MAX_DEPTH} levels"
    ))
}

fn int_json(int: &Bound<'_, PyInt>) -> PyResult<Value> {
    if let Ok(n) = int.extract::<i64>() {
        return Ok(Value::from(n));
    }
    if let Ok(n) = int.extract::<u64>() {
        return Ok(Value::from(n));
    }
    Err(PyValueError::new_err(
        "an integer does not fit in 64 bits; JSON readers would round it",
    ))
}

fn float_json(float: &Bound<'_, PyFloat>) -> PyResult<Number> {
    Number::from_f64(float.value())
        .ok_or_else(|| PyValueError::new_err("NaN and infinity are not JSON numbers"))
}

fn dict_key<'a, 'py>(key: &'a Bound<'py, PyAny>) -> PyResult<&'a Bound<'py, PyString>> {
    key.cast::<PyString>().map_err(|_| {
        let name = key
            .get_type()
            .name()
            .map_or_else(|_| "another type".to_owned(), |n| n.to_string());
        PyTypeError::new_err(format!("JSON object keys are strings, not {name}"))
    })
}

/// A Pydantic model's `model_dump()` (a LangChain message, an SDK's
/// response object), when `value` is one.
fn model_dump<'py>(value: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    if !value.hasattr("model_dump")? {
        return Ok(None);
    }
    let dumped = value.call_method0("model_dump")?;
    Ok(dumped.cast::<PyDict>().is_ok().then_some(dumped))
}

fn unsupported(value: &Bound<'_, PyAny>) -> PyErr {
    let name = value
        .get_type()
        .name()
        .map_or_else(|_| "another type".to_owned(), |n| n.to_string());
    PyTypeError::new_err(format!(
        "expected bytes, str, dict, list or a JSON value, not {name}"
    ))
}

/// Whether `clean` (what the engine checked) lost anything of `sent` (what
/// the model wrote): `normalize` only drops values, so a container whose
/// length differs, at any depth, is one it cleaned.
pub(crate) fn cleaned(sent: &Bound<'_, PyAny>, clean: &Value) -> bool {
    match clean {
        Value::Object(map) => object_cleaned(sent, map),
        Value::Array(items) => match sent.cast::<PyList>() {
            Ok(list) => {
                list.len() != items.len()
                    || items
                        .iter()
                        .zip(list.iter())
                        .any(|(item, value)| cleaned(&value, item))
            }
            Err(_) => false,
        },
        _ => false,
    }
}

/// [`cleaned`] for an object.
pub(crate) fn object_cleaned(sent: &Bound<'_, PyAny>, clean: &Map<String, Value>) -> bool {
    match sent.cast::<PyDict>() {
        Ok(dict) => {
            dict.len() != clean.len()
                || clean.iter().any(|(key, item)| match dict.get_item(key) {
                    Ok(Some(value)) => cleaned(&value, item),
                    _ => true,
                })
        }
        Err(_) => false,
    }
}

/// A Python value as JSON: `None`, `bool`, `int`, `float`, `str`, lists and
/// tuples, dicts with string keys, and Pydantic models (`model_dump`).
pub(crate) fn to_json(value: &Bound<'_, PyAny>) -> PyResult<Value> {
    to_json_at(value, 0)
}

fn to_json_at(value: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(too_deep());
    }
    if value.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(flag) = value.cast::<PyBool>() {
        return Ok(Value::Bool(flag.is_true()));
    }
    if let Ok(int) = value.cast::<PyInt>() {
        return int_json(int);
    }
    if let Ok(float) = value.cast::<PyFloat>() {
        return float_json(float).map(Value::Number);
    }
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(Value::String(text.to_str()?.to_owned()));
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        let mut map = Map::new();
        for (key, item) in dict.iter() {
            let key = dict_key(&key)?.to_str()?.to_owned();
            map.insert(key, to_json_at(&item, depth + 1)?);
        }
        return Ok(Value::Object(map));
    }
    if let Ok(list) = value.cast::<PyList>() {
        let items = list.iter().map(|item| to_json_at(&item, depth + 1));
        return items.collect::<PyResult<_>>().map(Value::Array);
    }
    if let Ok(tuple) = value.cast::<PyTuple>() {
        let items = tuple.iter().map(|item| to_json_at(&item, depth + 1));
        return items.collect::<PyResult<_>>().map(Value::Array);
    }
    if let Some(dumped) = model_dump(value)? {
        return to_json_at(&dumped, depth + 1);
    }
    Err(unsupported(value))
}

/// JSON as Python values: objects as dicts (in order), arrays as lists.
pub(crate) fn to_python<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(flag) => PyBool::new(py, *flag).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                PyFloat::new(py, n.as_f64().unwrap_or(f64::NAN)).into_any()
            }
        }
        Value::String(text) => PyString::new(py, text).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_python(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => object_to_python(py, map)?.into_any(),
    })
}

/// A JSON object as a dict.
pub(crate) fn object_to_python<'py>(
    py: Python<'py>,
    map: &Map<String, Value>,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (key, item) in map {
        dict.set_item(key, to_python(py, item)?)?;
    }
    Ok(dict)
}
