//! Declared tools by name: what each declaration says about its tool's
//! arguments. A call finds the declaration spelled as it is; failing that,
//! every declaration of the same tool once folded (see
//! [`ToolIndex`]): a look-alike is checked against the schemas of every
//! tool it looks like, never against none.

use crate::policy::names::ToolIndex;
use crate::policy::schema::ArgumentSchema;
use crate::policy::tools::DeclaredKind;

/// What one declaration says about its tool.
#[derive(Debug)]
pub(crate) struct ToolSpec {
    pub(crate) kind: DeclaredKind,
    /// Declared with no parameters: any argument is unexpected.
    pub(crate) takes_no_arguments: bool,
    /// The declared `parameters`, compiled (function tools only).
    pub(crate) schema: Option<ArgumentSchema>,
    /// The declared `parameters` as written, when compiled: the policy's own
    /// tools only (a request's tools are compared with them).
    pub(crate) parameters: Option<serde_json::Value>,
}

impl ToolSpec {
    /// A declaration of `kind` with nothing more to say: no parameters
    /// read yet (the entry of a hosted tool's other names stays so).
    pub(crate) fn new(kind: DeclaredKind) -> Self {
        ToolSpec {
            kind,
            takes_no_arguments: false,
            schema: None,
            parameters: None,
        }
    }

    /// Whether the declaration says the arguments are JSON it describes
    /// (a function tool), rather than freeform text or a provider's own.
    pub(crate) fn is_function(&self) -> bool {
        self.kind == DeclaredKind::Function
    }
}

/// Declarations by tool name, in order of declaration.
#[derive(Debug, Default)]
pub(crate) struct ToolTable {
    specs: Vec<(String, ToolSpec)>,
    index: ToolIndex,
}

impl ToolTable {
    /// Add `spec` for `name`, unless `name` is already declared.
    pub(crate) fn insert(&mut self, name: &str, spec: ToolSpec) -> bool {
        if self.index.position(name).is_some() {
            return false;
        }
        self.index.insert(name);
        self.specs.push((name.to_owned(), spec));
        true
    }

    /// The declaration of `name` exactly, or else every declaration of the
    /// same tool once folded.
    pub(crate) fn find(&self, name: &str) -> smallvec::SmallVec<[&ToolSpec; 2]> {
        self.find_at(name).iter().map(|&at| self.spec(at)).collect()
    }

    /// [`find`](Self::find), as places in the table.
    pub(crate) fn find_at(&self, name: &str) -> smallvec::SmallVec<[usize; 2]> {
        if let Some(at) = self.index.position(name) {
            return smallvec::smallvec![at];
        }
        self.index.find(name).iter().copied().collect()
    }

    /// The declaration at place `at` (from [`find_at`](Self::find_at)).
    pub(crate) fn spec(&self, at: usize) -> &ToolSpec {
        &self.specs[at].1
    }

    /// The names declared, in order.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.specs.iter().map(|(name, _)| name.as_str())
    }

    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (&str, &mut ToolSpec)> + '_ {
        self.specs
            .iter_mut()
            .map(|(name, spec)| (name.as_str(), spec))
    }
}
