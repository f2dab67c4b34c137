//! Are the arguments what the tool takes? Readable (from detection), clean
//! (`normalize`), no arguments for a tool declared without parameters, every
//! `required_params` entry present, and valid against every JSON Schema the
//! policy holds for the tool: its declaration's, the request's, and the
//! user's own `schema`.
//!
//! The user's own checks (`schema`, `required_params`) apply to every call
//! of the tool, found by its name once folded, whatever the tool's
//! declaration says: a hosted tool (`bash_20250124`, `web_search`) has no
//! schema of the provider's to check, but the user's still holds.

use serde_json::{Map, Value};
use smallvec::SmallVec;

use crate::check::normalize;
use crate::detect::tape::Tape;
use crate::model::{Arguments, ObjectArguments};
use crate::policy::schema::{ArgumentSchema, SchemaFailure};
use crate::policy::{Named, Policy, ToolSpec, ToolTable};
use crate::verdict::{Violation, ViolationCode};

/// Whether the arguments of call `call` to tool `name` could be read;
/// when not, the violation is added to `out`.
pub(crate) fn readable(
    call: usize,
    name: &str,
    arguments: &Arguments,
    out: &mut Vec<Violation>,
) -> bool {
    let Arguments::Invalid(err) = arguments else {
        return true;
    };
    out.push(Violation::call(
        err.code,
        call,
        name,
        format!("arguments for tool '{name}' are not valid: {}", err.message),
    ));
    false
}

/// Check (and clean) the readable arguments of call `call` to tool
/// `name`, adding violations to `out`. `checks` holds what the policy and
/// the request declare of the tool ([`Checks::of`]).
pub(crate) fn check(
    policy: &Policy,
    checks: &Checks<'_>,
    call: usize,
    name: &str,
    arguments: &mut Arguments,
    normalize: bool,
    out: &mut Vec<Violation>,
) {
    match arguments {
        Arguments::Invalid(_) => {}
        Arguments::Text(_) => {
            if checks.want_json() {
                out.push(Violation::call(
                    ViolationCode::MalformedArguments,
                    call,
                    name,
                    format!("tool '{name}' takes JSON arguments, but the call sent freeform text"),
                ));
            }
        }
        Arguments::Object(object) => {
            let clean = normalize && policy.normalize.is_active();
            if let Some(tape) = object.tape() {
                // Cleaned on the tape: a new one only when something is
                // dropped.
                if let Some(cleaned) = clean
                    .then(|| normalize::clean_tape(tape, &policy.normalize))
                    .flatten()
                {
                    *object = ObjectArguments::from_tape(cleaned);
                }
                let Some(tape) = object.tape() else {
                    return;
                };
                let Some(passed) = checks.judge_tape(tape) else {
                    // Nothing to say: the object is built only if someone
                    // reads it.
                    return;
                };
                // What fails is said from the tape too: the object is still
                // built only if someone reads it.
                checks.check_object(call, name, &mut OnTape(tape), Some(passed), out);
                return;
            }
            let map = &mut **object;
            if clean {
                normalize::clean(map, &policy.normalize);
            }
            checks.check_object(call, name, map, None, out);
        }
    }
}

/// Everything the policy and the request say about one tool's arguments:
/// read from the policy's entry for the name where it stands, so that a
/// call makes no list of its own unless the request declares the tool.
pub(crate) struct Checks<'a> {
    policy: &'a Policy,
    /// What the policy says of the name.
    named: &'a Named,
    /// The request's declarations of the tool.
    requested: SmallVec<[&'a ToolSpec; 2]>,
}

impl<'a> Checks<'a> {
    /// What `policy` (through `named`, what it says of `name`:
    /// [`Policy::named`], else [`Named::of`]) and `request` say of the
    /// tool `name`.
    pub(crate) fn of(
        policy: &'a Policy,
        request: Option<&'a ToolTable>,
        name: &str,
        named: &'a Named,
    ) -> Self {
        let mut requested = SmallVec::new();
        if let Some(request) = request {
            requested.extend(request.find(name));
        }
        Checks {
            policy,
            named,
            requested,
        }
    }

    /// The policy's declarations of the tool.
    fn own(&self) -> impl Iterator<Item = &'a ToolSpec> + '_ {
        let policy = self.policy;
        self.named
            .tools
            .iter()
            .map(move |&at| policy.tools.spec(at))
    }

    /// The policy's declarations of the tool, then the request's.
    fn declared(&self) -> impl Iterator<Item = &'a ToolSpec> + '_ {
        self.own().chain(self.requested.iter().copied())
    }

    /// The user's `required_params` for the tool, each once.
    fn required(&self) -> impl Iterator<Item = &'a str> + '_ {
        let policy = self.policy;
        let entries = &self.named.required;
        entries.iter().enumerate().flat_map(move |(entry, &at)| {
            let params = policy.required.value(at);
            params.iter().enumerate().filter_map(move |(place, param)| {
                // Said once: not by an earlier entry, nor earlier in this one.
                let said = entries[..entry]
                    .iter()
                    .any(|&earlier| policy.required.value(earlier).contains(param))
                    || params[..place].contains(param);
                (!said).then_some(param.as_str())
            })
        })
    }

    /// Whether the arguments must be JSON: a function declaration says so,
    /// and so does any check of the user's.
    fn want_json(&self) -> bool {
        // A parameter, not an entry: `required_params: {tool: []}` asks
        // for nothing.
        self.required().next().is_some()
            || !self.named.schemas.is_empty()
            || self.declared().any(ToolSpec::is_function)
    }

    /// The schemas to validate against, in order: the policy's declaration,
    /// the user's `schema`, the request's declaration. A declaration
    /// without parameters has none that matters: any argument is already
    /// unexpected.
    fn all_schemas(&self) -> impl Iterator<Item = &'a ArgumentSchema> + '_ {
        fn declared<'a>(
            specs: impl Iterator<Item = &'a ToolSpec>,
        ) -> impl Iterator<Item = &'a ArgumentSchema> {
            specs
                .filter(|spec| spec.is_function() && !spec.takes_no_arguments)
                .filter_map(|spec| spec.schema.as_ref())
        }
        let policy = self.policy;
        let user = self
            .named
            .schemas
            .iter()
            .map(move |&at| policy.schemas.value(at));
        declared(self.own())
            .chain(user)
            .chain(declared(self.requested.iter().copied()))
    }

    /// Whether a declaration of the tool says it takes no arguments.
    fn takes_no_arguments(&self) -> bool {
        self.declared()
            .any(|spec| spec.is_function() && spec.takes_no_arguments)
    }

    /// `None` when arguments on a tape pass every check, with nothing to
    /// say; else which of [`all_schemas`](Self::all_schemas) they pass, so
    /// that [`check_object`](Self::check_object), which says what fails,
    /// validates the others only (a tape passes a schema exactly when its
    /// object does).
    fn judge_tape(&self, tape: &Tape) -> Option<Passed> {
        let others = (!self.takes_no_arguments() || tape.len() == 0)
            && self.required().all(|param| tape.contains_key(param));
        // Every schema is judged, past a failure too: each verdict spares
        // the detailed path a validation.
        let mut passed = Passed::default();
        let mut all = true;
        for schema in self.all_schemas() {
            let pass = schema.passes_tape(tape);
            all &= pass;
            passed.push(pass);
        }
        (!(others && all)).then_some(passed)
    }

    /// What fails; `passed` says which schemas the arguments already
    /// passed (on their tape) and which failed, when known.
    fn check_object(
        &self,
        call: usize,
        name: &str,
        map: &mut impl Object,
        passed: Option<Passed>,
        out: &mut Vec<Violation>,
    ) {
        if self.takes_no_arguments() && map.len() > 0 {
            let keys: Vec<String> = map.keys().take(5).map(|k| format!("'{k}'")).collect();
            let more = if map.len() > keys.len() { ", ..." } else { "" };
            out.push(
                Violation::call(
                    ViolationCode::UnexpectedArguments,
                    call,
                    name,
                    format!(
                        "tool '{name}' takes no arguments, but the call has {}{more}",
                        keys.join(", ")
                    ),
                )
                .at(pointer(map.keys().next().unwrap_or(""))),
            );
        }
        let mut missing: Vec<String> = Vec::new();
        for param in self.required() {
            if !map.contains_key(param) {
                let path = pointer(param);
                out.push(
                    Violation::call(
                        ViolationCode::MissingRequiredParam,
                        call,
                        name,
                        format!("tool call '{name}' is missing required parameter '{param}'"),
                    )
                    .at(path.clone()),
                );
                missing.push(path);
            }
        }
        let lead = SchemaLead(name);
        for (index, schema) in self.all_schemas().enumerate() {
            let failures = match passed.and_then(|passed| passed.get(index)) {
                Some(true) => continue,
                Some(false) => map.failures(schema, true, &lead),
                None => map.failures(schema, false, &lead),
            };
            for failure in failures {
                // `required_params` already reported this one.
                if missing.contains(&failure.path)
                    && failure.message.ends_with("is a required property")
                {
                    continue;
                }
                out.push(
                    Violation::call(ViolationCode::SchemaViolation, call, name, failure.message)
                        .at(failure.path),
                );
            }
        }
    }
}

/// Which schemas, in the order [`Checks::all_schemas`] gives them, the
/// arguments passed: the first 64 are kept, and what is not kept is not
/// known (validated again when a failure is said).
#[derive(Debug, Clone, Copy, Default)]
struct Passed {
    passes: u64,
    len: u32,
}

impl Passed {
    fn push(&mut self, pass: bool) {
        if self.len < u64::BITS {
            self.passes |= u64::from(pass) << self.len;
            self.len += 1;
        }
    }

    /// Whether the schema at `index` passed, when known.
    fn get(self, index: usize) -> Option<bool> {
        (index < self.len as usize).then(|| (self.passes >> index) & 1 == 1)
    }
}

/// An arguments object as [`Checks::check_object`] reads it: built, or
/// still on its tape (the same keys, in the same order, and the same
/// failures: the schema's validator for tapes is compiled from the same
/// schema with the same options).
trait Object {
    fn len(&self) -> usize;
    fn keys(&self) -> impl Iterator<Item = &str>;
    fn contains_key(&self, key: &str) -> bool;
    /// What fails of `schema`, each message after `lead`; `failed` when
    /// the object is known to fail.
    fn failures(
        &mut self,
        schema: &ArgumentSchema,
        failed: bool,
        lead: &dyn std::fmt::Display,
    ) -> Vec<SchemaFailure>;
}

impl Object for Map<String, Value> {
    fn len(&self) -> usize {
        Map::len(self)
    }

    fn keys(&self) -> impl Iterator<Item = &str> {
        Map::keys(self).map(String::as_str)
    }

    fn contains_key(&self, key: &str) -> bool {
        Map::contains_key(self, key)
    }

    fn failures(
        &mut self,
        schema: &ArgumentSchema,
        failed: bool,
        lead: &dyn std::fmt::Display,
    ) -> Vec<SchemaFailure> {
        if failed {
            schema.failures_of_object(self, lead)
        } else {
            schema.check_object_after(self, lead)
        }
    }
}

/// Arguments on their tape.
struct OnTape<'t>(&'t Tape);

impl Object for OnTape<'_> {
    fn len(&self) -> usize {
        self.0.len()
    }

    fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.keys()
    }

    fn contains_key(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    fn failures(
        &mut self,
        schema: &ArgumentSchema,
        failed: bool,
        lead: &dyn std::fmt::Display,
    ) -> Vec<SchemaFailure> {
        if failed || !schema.passes_tape(self.0) {
            schema.failures_on_tape(self.0, lead)
        } else {
            Vec::new()
        }
    }
}

/// What a schema violation's message says first, of a call of the tool
/// named here.
struct SchemaLead<'n>(&'n str);

impl std::fmt::Display for SchemaLead<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "arguments for tool '{}' do not match its schema: ",
            self.0
        )
    }
}

/// A JSON Pointer to a top-level argument.
fn pointer(key: &str) -> String {
    crate::verdict::pointer("", key)
}
