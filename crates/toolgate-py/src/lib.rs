//! toolgate from Python: the `toolgate._toolgate` extension module behind
//! the `toolgate` package.
//!
//! A [`policy::Policy`] compiles a policy once and checks payloads with the
//! GIL released, giving a [`verdict::Verdict`] whose `to_dict()` is the
//! JSON `toolgate check` prints. Every decision is the `toolgate`
//! library's; this crate converts values and releases the GIL.

use pyo3::prelude::*;

mod convert;
mod direct;
mod policy;
mod verdict;

#[pymodule]
fn _toolgate(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<policy::Policy>()?;
    m.add_class::<policy::DeclaredTools>()?;
    m.add_class::<policy::Gate>()?;
    m.add_class::<verdict::Verdict>()?;
    m.add_class::<verdict::Call>()?;
    m.add_class::<verdict::Violation>()?;
    m.add("PolicyError", m.py().get_type::<policy::PolicyError>())?;
    m.add_function(wrap_pyfunction!(policy::_restore_policy, m)?)?;
    m.add_function(wrap_pyfunction!(policy::_same_items, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
