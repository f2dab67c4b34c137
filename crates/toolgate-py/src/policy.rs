//! `Policy`: a compiled policy, immutable and shared between threads, that
//! checks payloads with the GIL released. `DeclaredTools`: an agent's tool
//! list compiled once against a policy.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use serde_json::{Map, Value};
use toolgate::{Caller, CheckOptions, Passing, Phase};

use crate::convert::{self, payload_bytes, to_json, write_json};
use crate::direct;
use crate::verdict::Verdict;

pyo3::create_exception!(
    toolgate,
    PolicyError,
    pyo3::exceptions::PyValueError,
    "A policy that does not load. `problems` lists every problem, each a dict with `path`, `message`, `tool` and `severity`."
);

/// The `PolicyError` for `err`, with every problem in `problems`.
fn policy_error(py: Python<'_>, err: &toolgate::PolicyError) -> PyErr {
    let problems = PyList::empty(py);
    for problem in err.problems() {
        let dict = PyDict::new(py);
        let fill = || -> PyResult<()> {
            dict.set_item("path", &problem.path)?;
            dict.set_item("message", &problem.message)?;
            dict.set_item("tool", problem.tool.as_deref())?;
            dict.set_item(
                "severity",
                if problem.is_error() {
                    "error"
                } else {
                    "warning"
                },
            )?;
            problems.append(&dict)
        };
        if let Err(err) = fill() {
            return err;
        }
    }
    let error = PolicyError::new_err(err.to_string());
    if let Err(err) = error.value(py).setattr("problems", problems) {
        return err;
    }
    error
}

/// What a policy was compiled from: kept to pickle it and to compile it
/// again with other `normalize` settings.
#[derive(Clone)]
struct Source {
    value: Value,
    base_dir: Option<PathBuf>,
}

/// A compiled policy. Immutable: share one between threads, pickle it to
/// send it to other processes.
#[pyclass(frozen, module = "toolgate", name = "Policy")]
pub(crate) struct Policy {
    inner: Arc<toolgate::Policy>,
    /// `None` for the default policy, which allows every call.
    source: Option<Source>,
}

impl Policy {
    fn compile(py: Python<'_>, value: Value, base_dir: Option<PathBuf>) -> PyResult<Policy> {
        let compiled = py
            .detach(|| toolgate::Policy::from_value(&value, base_dir.as_deref()))
            .map_err(|err| policy_error(py, &err))?;
        Ok(Policy {
            inner: Arc::new(compiled),
            source: Some(Source { value, base_dir }),
        })
    }

    fn from_source_text(py: Python<'_>, text: &str, base_dir: Option<PathBuf>) -> PyResult<Policy> {
        let value = toolgate::policy::parse_text(text).map_err(|err| policy_error(py, &err))?;
        Policy::compile(py, value, base_dir)
    }
}

/// The options every check takes, read once from Python.
struct Options {
    results: bool,
    require_calls: bool,
    phase: Phase,
    caller: Option<Caller>,
    tools: Option<Py<DeclaredTools>>,
}

impl Options {
    fn read(
        policy: &Policy,
        results: bool,
        phase: &str,
        caller: Option<&Bound<'_, PyAny>>,
        require_calls: bool,
        tools: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Options> {
        let phase = phase.parse::<Phase>().map_err(PyValueError::new_err)?;
        let caller = match caller {
            None => None,
            Some(caller) if caller.is_none() => None,
            Some(caller) => Some(serde_json::from_value::<Caller>(to_json(caller)?).map_err(
                |err| {
                    PyValueError::new_err(format!(
                    "a caller is {{\"id\": ..., \"roles\": [...], \"attributes\": {{...}}}}: {err}"
                ))
                },
            )?),
        };
        let tools = match tools {
            None => None,
            Some(tools) if tools.is_none() => None,
            Some(tools) => Some(match tools.cast::<DeclaredTools>() {
                Ok(declared) => {
                    if !Arc::ptr_eq(&declared.get().policy, &policy.inner) {
                        return Err(PyValueError::new_err(
                            "these tools were declared with another policy: use this policy's declare()",
                        ));
                    }
                    declared.clone().unbind()
                }
                Err(_) => Py::new(tools.py(), policy.declare_value(tools)?)?,
            }),
        };
        Ok(Options {
            results,
            require_calls,
            phase,
            caller,
            tools,
        })
    }

    /// `policy`'s verdict on `bytes`, the GIL released.
    fn check(&self, py: Python<'_>, policy: &toolgate::Policy, bytes: &[u8]) -> toolgate::Verdict {
        let declared = self.tools.as_ref().map(Py::get);
        py.detach(|| policy.check_with(bytes, self.check_options(declared, false)))
    }

    /// LangChain's calls checked: read straight from their dicts when they
    /// are of the plain shape, else from their JSON text. The verdict tells
    /// which calls `normalize` cleaned; a passing one is built only as far
    /// as a tally reads it when `lean` ([`Passing::Tallied`]).
    fn check_calls(
        &self,
        py: Python<'_>,
        policy: &toolgate::Policy,
        calls: &Bound<'_, PyList>,
        invalid_tool_calls: Option<&Bound<'_, PyAny>>,
        lean: bool,
    ) -> PyResult<Verdict> {
        let declared = self.tools.as_ref().map(Py::get);
        let options = self.check_options(declared, lean);
        let invalid = invalid_list(invalid_tool_calls);
        let cleaning = policy.normalize().is_active();
        if let Some(read) = direct::read_calls(calls, invalid.as_ref(), policy.limits(), false) {
            // Releasing the GIL and taking it back costs 0.03 to 0.1 µs,
            // a few percent of checking a small answer: only a large one,
            // whose check takes tens of µs, lets other threads run.
            let detection = read.detection;
            let inner = if read.bytes >= DETACH_BYTES {
                py.detach(|| policy.judge(detection, options))
            } else {
                policy.judge(detection, options)
            };
            let mut cleaned = Vec::new();
            if cleaning {
                for (checked, &sent) in inner.calls.iter().zip(&read.nodes) {
                    if let toolgate::Arguments::Object(clean) = &checked.arguments {
                        if clean.values() != sent {
                            cleaned.push(checked.index);
                        }
                    }
                }
            }
            return Ok(Verdict { inner, cleaned });
        }
        let bytes = langchain_json(calls, invalid_tool_calls)?;
        let sent = calls.len()
            + invalid_tool_calls
                .filter(|v| !v.is_none())
                .map_or(0, |v| v.len().unwrap_or(0));
        let inner = py.detach(|| policy.check_with(&bytes, options));
        let mut cleaned = Vec::new();
        // Cleaned arguments are told by position: only when the engine read
        // exactly the calls LangChain holds, in order.
        if cleaning && inner.calls.len() == sent {
            for (sent, checked) in calls.iter().zip(&inner.calls) {
                let toolgate::Arguments::Object(clean) = &checked.arguments else {
                    continue;
                };
                if let Ok(args) = sent.get_item("args") {
                    if convert::object_cleaned(&args, clean) {
                        cleaned.push(checked.index);
                    }
                }
            }
        }
        Ok(Verdict { inner, cleaned })
    }

    fn check_options<'a>(
        &'a self,
        declared: Option<&'a DeclaredTools>,
        lean: bool,
    ) -> CheckOptions<'a> {
        CheckOptions {
            results: self.results,
            require_calls: self.require_calls,
            caller: self.caller.as_ref(),
            counter: None,
            as_written: false,
            declared: declared.map(|d| &d.tools),
            phase: self.phase,
            passing: if lean {
                Passing::Tallied
            } else {
                Passing::Whole
            },
        }
    }
}

/// The size of LangChain's calls (as JSON text, at most) from which their
/// check releases the GIL.
const DETACH_BYTES: usize = 16 * 1024;

/// `tool_calls` as a list.
fn calls_list<'py>(tool_calls: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
    tool_calls
        .cast::<PyList>()
        .cloned()
        .map_err(|_| PyValueError::new_err("tool_calls is a list of ToolCall dicts"))
}

/// `invalid_tool_calls`, when it is a list (`None`: absent, or another
/// iterable, which only the JSON text reads).
fn invalid_list<'py>(invalid: Option<&Bound<'py, PyAny>>) -> Option<Bound<'py, PyList>> {
    invalid
        .filter(|v| !v.is_none())
        .and_then(|v| v.cast::<PyList>().ok().cloned())
}

/// What LangChain's `AIMessage` holds, as the JSON text the engine reads
/// as a LangChain message: `tool_calls`, then `invalid_tool_calls`.
fn langchain_json(
    calls: &Bound<'_, PyList>,
    invalid_tool_calls: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<u8>> {
    let mut bytes = Vec::with_capacity(256);
    bytes.extend_from_slice(b"{\"tool_calls\":");
    write_json(calls.as_any(), &mut bytes, 1)?;
    if let Some(invalid) = invalid_tool_calls.filter(|v| !v.is_none()) {
        bytes.extend_from_slice(b",\"invalid_tool_calls\":");
        write_json(invalid, &mut bytes, 1)?;
    }
    bytes.push(b'}');
    Ok(bytes)
}

/// `f` applied to every item, in order, on every core.
fn map_all_cores<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    if cores == 1 || items.len() < 2 {
        return items.iter().map(f).collect();
    }
    let chunk = items.len().div_ceil(cores);
    std::thread::scope(|scope| {
        let f = &f;
        let workers: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(f).collect::<Vec<R>>()))
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| match worker.join() {
                Ok(done) => done,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    })
}

#[pymethods]
impl Policy {
    /// The default policy: every call passes the name and argument checks;
    /// malformed input still fails.
    #[new]
    fn new() -> Self {
        Policy {
            inner: Arc::new(toolgate::Policy::default()),
            source: None,
        }
    }

    /// Read and compile a policy file (YAML or JSON); a `tools_file` is
    /// read relative to its directory.
    #[staticmethod]
    fn from_file(py: Python<'_>, path: PathBuf) -> PyResult<Policy> {
        let text = std::fs::read_to_string(&path).map_err(|err| {
            policy_error(
                py,
                &toolgate::PolicyError::Io {
                    path: path.clone(),
                    message: err.to_string(),
                },
            )
        })?;
        // Absolute, so that a pickled policy finds its `tools_file` from
        // another working directory too.
        let base_dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => std::path::absolute(dir).ok(),
            _ => std::env::current_dir().ok(),
        };
        Policy::from_source_text(py, &text, base_dir)
    }

    /// Compile a policy from its keys; `base_dir` resolves a relative
    /// `tools_file`.
    #[staticmethod]
    #[pyo3(signature = (keys, base_dir=None))]
    fn from_dict(
        py: Python<'_>,
        keys: &Bound<'_, PyDict>,
        base_dir: Option<PathBuf>,
    ) -> PyResult<Policy> {
        Policy::compile(py, to_json(keys.as_any())?, base_dir)
    }

    /// Compile a policy from YAML or JSON text; `base_dir` resolves a
    /// relative `tools_file`.
    #[staticmethod]
    #[pyo3(signature = (text, base_dir=None))]
    fn from_text(py: Python<'_>, text: &str, base_dir: Option<PathBuf>) -> PyResult<Policy> {
        Policy::from_source_text(py, text, base_dir)
    }

    /// Check the calls of one payload (bytes, str, dict or list, in any wire
    /// format) and return its verdict.
    #[pyo3(signature = (payload, *, results=false, phase="trajectory", caller=None, require_calls=false, tools=None))]
    fn check(
        &self,
        py: Python<'_>,
        payload: &Bound<'_, PyAny>,
        results: bool,
        phase: &str,
        caller: Option<&Bound<'_, PyAny>>,
        require_calls: bool,
        tools: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Verdict> {
        let options = Options::read(self, results, phase, caller, require_calls, tools)?;
        let bytes = payload_bytes(payload)?;
        Ok(Verdict::new(options.check(py, &self.inner, &bytes)))
    }

    /// Check LangChain `ToolCall` dicts (`{"name", "args", "id"}`), and the
    /// calls the provider could not parse (`invalid_tool_calls`), which
    /// always fail.
    #[pyo3(signature = (tool_calls, *, invalid_tool_calls=None, results=false, phase="trajectory", caller=None, require_calls=false, tools=None))]
    fn check_calls(
        &self,
        py: Python<'_>,
        tool_calls: &Bound<'_, PyAny>,
        invalid_tool_calls: Option<&Bound<'_, PyAny>>,
        results: bool,
        phase: &str,
        caller: Option<&Bound<'_, PyAny>>,
        require_calls: bool,
        tools: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Verdict> {
        let options = Options::read(self, results, phase, caller, require_calls, tools)?;
        let calls = calls_list(tool_calls)?;
        options.check_calls(py, &self.inner, &calls, invalid_tool_calls, false)
    }

    /// Whether LangChain's calls read straight from their dicts are the
    /// calls read from their JSON text (`None`: the direct reading
    /// declined them), for the tests.
    #[pyo3(signature = (tool_calls, invalid_tool_calls=None))]
    fn _direct_agrees(
        &self,
        tool_calls: &Bound<'_, PyAny>,
        invalid_tool_calls: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<bool>> {
        let calls = calls_list(tool_calls)?;
        let invalid = invalid_list(invalid_tool_calls);
        let limits = self.inner.limits();
        let Some(direct) = direct::read_calls(&calls, invalid.as_ref(), limits, true) else {
            return Ok(None);
        };
        let bytes = langchain_json(&calls, invalid_tool_calls)?;
        Ok(Some(
            direct.detection == toolgate::detect_with(&bytes, limits)
                && direct.bytes >= bytes.len(),
        ))
    }

    /// A gate for a LangChain middleware: `tool_calls` and
    /// `invalid_tool_calls` of one answer checked in the response phase, as
    /// `caller`, against `tools` (declared with this policy).
    #[pyo3(signature = (*, caller=None, tools=None))]
    fn _gate(
        &self,
        caller: Option<&Bound<'_, PyAny>>,
        tools: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Gate> {
        Ok(Gate {
            policy: Arc::clone(&self.inner),
            options: Options::read(self, false, "response", caller, false, tools)?,
        })
    }

    /// Check many payloads on every core; the verdicts come back in order.
    #[pyo3(signature = (payloads, *, results=false, phase="trajectory", caller=None, require_calls=false, tools=None))]
    fn check_many(
        &self,
        py: Python<'_>,
        payloads: &Bound<'_, PyAny>,
        results: bool,
        phase: &str,
        caller: Option<&Bound<'_, PyAny>>,
        require_calls: bool,
        tools: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Verdict>> {
        let options = Options::read(self, results, phase, caller, require_calls, tools)?;
        let bodies = payloads
            .try_iter()?
            .map(|payload| payload_bytes(&payload?))
            .collect::<PyResult<Vec<_>>>()?;
        let declared = options.tools.as_ref().map(Py::get);
        let check = options.check_options(declared, false);
        let verdicts =
            py.detach(|| map_all_cores(&bodies, |body| self.inner.check_with(body, check)));
        Ok(verdicts.into_iter().map(Verdict::new).collect())
    }

    /// Compile an agent's tool list (OpenAI `tools` entries, Anthropic
    /// `{name, input_schema}`, MCP `{name, inputSchema}` or
    /// `{name, parameters}`) once, merged with the policy's tools, for the
    /// `tools=` argument of the checks.
    fn declare(&self, tools: &Bound<'_, PyAny>) -> PyResult<DeclaredTools> {
        self.declare_value(tools)
    }

    /// A copy of this policy whose `normalize` section is `normalize` (a
    /// dict of its keys).
    fn with_normalize(&self, py: Python<'_>, normalize: &Bound<'_, PyDict>) -> PyResult<Policy> {
        let (mut value, base_dir) = match &self.source {
            Some(source) => (source.value.clone(), source.base_dir.clone()),
            None => (Value::Object(Map::new()), None),
        };
        let Value::Object(keys) = &mut value else {
            return Err(PyValueError::new_err(
                "the policy's source is not a mapping",
            ));
        };
        keys.insert("normalize".to_owned(), to_json(normalize.as_any())?);
        Policy::compile(py, value, base_dir)
    }

    /// What `toolgate policy lint` warns about in this policy, which loaded.
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.inner
            .warnings()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// The names of the declared tools, in order.
    #[getter]
    fn declared_tools(&self) -> Vec<String> {
        self.inner.declared_tools().to_vec()
    }

    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let restore = py
            .import("toolgate._toolgate")?
            .getattr("_restore_policy")?;
        let (text, base_dir) = match &self.source {
            Some(source) => (
                Some(source.value.to_string()),
                source
                    .base_dir
                    .as_ref()
                    .map(|dir| dir.to_string_lossy().into_owned()),
            ),
            None => (None, None),
        };
        let args = PyTuple::new(
            py,
            [
                text.into_pyobject(py)?.into_any(),
                base_dir.into_pyobject(py)?.into_any(),
            ],
        )?;
        Ok((restore, args))
    }

    fn __repr__(&self) -> String {
        format!("Policy(declared_tools={:?})", self.inner.declared_tools())
    }
}

impl Policy {
    fn declare_value(&self, tools: &Bound<'_, PyAny>) -> PyResult<DeclaredTools> {
        let Value::Array(list) = to_json(tools)? else {
            return Err(PyValueError::new_err(
                "tools is a list of tool declarations",
            ));
        };
        let declared = tools.py().detach(|| self.inner.declare(&list));
        Ok(DeclaredTools {
            policy: Arc::clone(&self.inner),
            tools: declared,
        })
    }
}

/// Whether `items` (a list or a tuple) holds the very objects of `last`,
/// in order: compared by identity, never by `==`. For the LangChain
/// middleware, which keeps the gate of the last tool list it saw.
#[pyfunction]
#[pyo3(signature = (items, last, /))]
pub(crate) fn _same_items(items: &Bound<'_, PyAny>, last: &Bound<'_, PyList>) -> bool {
    fn same<'py>(
        len: usize,
        items: impl Iterator<Item = Bound<'py, PyAny>>,
        last: &Bound<'py, PyList>,
    ) -> bool {
        len == last.len() && items.zip(last.iter()).all(|(a, b)| a.is(&b))
    }
    if let Ok(items) = items.cast::<PyList>() {
        same(items.len(), items.iter(), last)
    } else if let Ok(items) = items.cast::<PyTuple>() {
        same(items.len(), items.iter(), last)
    } else {
        false
    }
}

/// Unpickle a policy: compile it again from its source.
#[pyfunction]
#[pyo3(signature = (text, base_dir))]
pub(crate) fn _restore_policy(
    py: Python<'_>,
    text: Option<&str>,
    base_dir: Option<PathBuf>,
) -> PyResult<Policy> {
    match text {
        None => Ok(Policy::new()),
        Some(text) => Policy::from_source_text(py, text, base_dir),
    }
}

/// An agent's tools, compiled once with a policy: pass it as `tools=` to
/// that policy's checks.
#[pyclass(frozen, module = "toolgate", name = "DeclaredTools")]
pub(crate) struct DeclaredTools {
    policy: Arc<toolgate::Policy>,
    tools: toolgate::DeclaredTools,
}

#[pymethods]
impl DeclaredTools {
    /// The declarations that are not valid (`invalid_tool_schema`): every
    /// check with these tools fails with them.
    #[getter]
    fn problems(&self) -> Vec<String> {
        self.tools
            .violations()
            .iter()
            .map(|v| v.message.clone())
            .collect()
    }
}

/// A LangChain middleware's check of one answer, with its caller and tools
/// read once (`Policy._gate`).
#[pyclass(frozen, module = "toolgate", name = "_Gate")]
pub(crate) struct Gate {
    policy: Arc<toolgate::Policy>,
    options: Options,
}

#[pymethods]
impl Gate {
    /// Check an answer's calls. The arguments `normalize` cleaned replace
    /// the model's in each call's dict (`args`), whatever the verdict:
    /// what is checked is what executes. The verdict, or `None` when every
    /// call passed and `always` is false.
    ///
    /// A method rather than `__call__`: its arguments come as a vector
    /// (`METH_FASTCALL`), not as a tuple made for each call.
    #[pyo3(signature = (tool_calls, invalid_tool_calls=None, always=false))]
    fn check(
        &self,
        py: Python<'_>,
        tool_calls: &Bound<'_, PyList>,
        invalid_tool_calls: Option<&Bound<'_, PyAny>>,
        always: bool,
    ) -> PyResult<Option<Verdict>> {
        // A passing verdict is dropped unless `always`.
        let verdict =
            self.options
                .check_calls(py, &self.policy, tool_calls, invalid_tool_calls, !always)?;
        for &index in &verdict.cleaned {
            if let Some(toolgate::Arguments::Object(clean)) =
                verdict.inner.calls.get(index).map(|c| &c.arguments)
            {
                let call = tool_calls.get_item(index)?;
                let args = intern!(py, "args");
                let sent = call.get_item(args)?;
                let cleaned = match sent.cast::<PyDict>() {
                    // Cleaned in Python by the engine's rule, when it kept
                    // as many values as the engine did (it read `sent`
                    // itself): the engine's object is never built.
                    Ok(sent) => match direct::cleaned_args(sent, self.policy.normalize())? {
                        Some((dict, kept)) if kept == clean.values() => dict,
                        _ => direct::cleaned_dict(sent, clean)?,
                    },
                    Err(_) => convert::object_to_python(py, clean)?,
                };
                call.set_item(args, cleaned)?;
            }
        }
        Ok((always || !verdict.inner.passed).then_some(verdict))
    }
}
