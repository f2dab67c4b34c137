//! `Verdict`, `Call` and `Violation`: the engine's verdict with typed
//! attributes, built on access, and `to_dict()` giving the JSON that
//! `toolgate check` prints.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde::Serialize;
use toolgate::{Arguments, CallVerdict, Label};

use crate::convert::{object_to_python, to_python};

/// `value` as the Python form of its JSON.
fn json_dict<'py, T: Serialize>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyAny>> {
    let json = serde_json::to_value(value).map_err(|err| PyValueError::new_err(err.to_string()))?;
    to_python(py, &json)
}

/// The outcome of checking one payload.
#[pyclass(frozen, module = "toolgate", name = "Verdict")]
pub(crate) struct Verdict {
    pub(crate) inner: toolgate::Verdict,
    /// For `check_calls`: the calls whose arguments the policy's
    /// `normalize` changed, by index.
    pub(crate) cleaned: Vec<usize>,
}

impl Verdict {
    pub(crate) fn new(inner: toolgate::Verdict) -> Self {
        Verdict {
            inner,
            cleaned: Vec::new(),
        }
    }
}

/// Python violations for `list`.
fn violations(list: &[toolgate::Violation]) -> Vec<Violation> {
    list.iter().cloned().map(Violation::from).collect()
}

#[pymethods]
impl Verdict {
    /// True only with no violation at all.
    #[getter]
    fn passed(&self) -> bool {
        self.inner.passed
    }

    /// `"pass"` or `"fail"`.
    #[getter]
    fn label(&self) -> &'static str {
        match self.inner.label {
            Label::Pass => "pass",
            Label::Fail => "fail",
        }
    }

    #[getter]
    fn score(&self) -> f64 {
        self.inner.score
    }

    #[getter]
    fn reasoning(&self) -> &str {
        &self.inner.reasoning
    }

    /// Each call as it would execute, with its own violations.
    #[getter]
    fn calls(&self) -> Vec<Call> {
        self.inner
            .calls
            .iter()
            .map(|call| Call {
                inner: call.clone(),
            })
            .collect()
    }

    /// Every violation: the payload's, each call's, each result's, then the
    /// expectations'.
    #[getter]
    fn violations(&self) -> Vec<Violation> {
        violations(&self.inner.violations)
    }

    #[getter]
    fn failures(&self) -> Vec<String> {
        self.inner.failures.clone()
    }

    #[getter]
    fn actual_tools(&self) -> Vec<String> {
        self.inner
            .actual_tools
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[getter]
    fn expected_tools(&self) -> Vec<String> {
        self.inner.expected_tools.clone()
    }

    /// The verdict as the JSON `toolgate check` prints, in Python values.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json_dict(py, &self.inner)
    }

    /// `[(index, arguments)]` for each call whose arguments `normalize`
    /// cleaned: what must replace the arguments the model wrote.
    fn _cleaned_arguments<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Vec<(usize, Bound<'py, PyAny>)>> {
        let mut out = Vec::with_capacity(self.cleaned.len());
        for &index in &self.cleaned {
            if let Some(Arguments::Object(map)) = self.inner.calls.get(index).map(|c| &c.arguments)
            {
                out.push((index, object_to_python(py, map)?.into_any()));
            }
        }
        Ok(out)
    }

    fn __bool__(&self) -> bool {
        self.inner.passed
    }

    fn __repr__(&self) -> String {
        format!(
            "Verdict(passed={}, score={}, calls={}, violations={})",
            if self.inner.passed { "True" } else { "False" },
            self.inner.score,
            self.inner.calls.len(),
            self.inner.violations.len()
        )
    }
}

/// One call as it would execute.
#[pyclass(frozen, module = "toolgate", name = "Call")]
pub(crate) struct Call {
    inner: CallVerdict,
}

#[pymethods]
impl Call {
    /// Position among all calls of the payload, from 0.
    #[getter]
    fn index(&self) -> usize {
        self.inner.index
    }

    #[getter]
    fn id(&self) -> Option<&str> {
        self.inner.id.as_deref()
    }

    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }

    /// The arguments that would execute (after `normalize`): a dict, or
    /// `None` when they could not be read.
    #[getter]
    fn arguments<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json_dict(py, &self.inner.arguments)
    }

    /// The wire format the call was read from (`"openai_chat"`, ...).
    #[getter]
    fn format(&self) -> &'static str {
        self.inner.format.as_str()
    }

    #[getter]
    fn valid(&self) -> bool {
        self.inner.valid
    }

    #[getter]
    fn violations(&self) -> Vec<Violation> {
        violations(&self.inner.violations)
    }

    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json_dict(py, &self.inner)
    }

    fn __repr__(&self) -> String {
        format!(
            "Call(index={}, name={:?}, valid={})",
            self.inner.index,
            self.inner.name,
            if self.inner.valid { "True" } else { "False" }
        )
    }
}

/// One violation, with its stable code.
#[pyclass(frozen, module = "toolgate", name = "Violation")]
pub(crate) struct Violation {
    inner: toolgate::Violation,
}

impl From<toolgate::Violation> for Violation {
    fn from(inner: toolgate::Violation) -> Self {
        Violation { inner }
    }
}

#[pymethods]
impl Violation {
    /// The stable code (`"schema_violation"`, `"not_allowed"`, ...).
    #[getter]
    fn code(&self) -> &'static str {
        self.inner.code.as_str()
    }

    /// The index of the call it concerns, if any.
    #[getter]
    fn call(&self) -> Option<usize> {
        self.inner.call
    }

    #[getter]
    fn tool(&self) -> Option<&str> {
        self.inner.tool.as_deref()
    }

    /// A JSON Pointer into the call's arguments, if any.
    #[getter]
    fn path(&self) -> Option<&str> {
        self.inner.path.as_deref()
    }

    #[getter]
    fn message(&self) -> &str {
        &self.inner.message
    }

    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        dict.set_item("code", self.code())?;
        dict.set_item("call", self.inner.call)?;
        dict.set_item("tool", self.tool())?;
        dict.set_item("path", self.path())?;
        dict.set_item("message", self.message())?;
        Ok(dict)
    }

    fn __repr__(&self) -> String {
        format!(
            "Violation(code={:?}, call={:?}, tool={:?}, message={:?})",
            self.inner.code.as_str(),
            self.inner.call,
            self.inner.tool,
            self.inner.message
        )
    }
}
