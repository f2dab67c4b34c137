//! A payload against a compiled [`Policy`]: one [`Verdict`].
//!
//! Each check lives in its own file and has a fast path: `name` (allowed,
//! forbidden, look-alikes), `arguments` (normalize, no-argument tools,
//! `required_params`, JSON Schema), `results` (tool results linked to
//! calls), `expectations` (what the agent was expected to do) and `score`.

mod access;
mod arguments;
mod declared;
mod expectations;
pub(crate) mod lists;
mod name;
pub(crate) mod normalize;
mod results;
mod score;

use rustc_hash::FxHashMap;

use self::declared::RequestTools;
pub use self::expectations::json_eq;
pub(crate) use self::name::safe_names;
use self::score::Ratio;
use crate::detect::{detect_to_judge, Detection, ToolDeclarations};
use crate::model::{Caller, ToolCall};
use crate::policy::access::RateLimit;
use crate::policy::{Expectations, Named, Policy};
use crate::verdict::{CallVerdict, Category, Label, Phase, Verdict, Violation, ViolationCode};

/// How to check, beyond what the policy says.
#[derive(Debug, Clone, Copy, Default)]
pub struct CheckOptions<'a> {
    /// Also check the tool results in the payload (`check --results`), in
    /// the trajectory phase. The request phase always links results; the
    /// response phase never does.
    pub results: bool,
    /// No tool call at all fails, whatever the policy says
    /// (`check --require-calls`).
    pub require_calls: bool,
    /// Who is calling, for roles, rules and per-caller limits
    /// (`check --caller C.json`).
    pub caller: Option<&'a Caller>,
    /// Where rate limits count: across requests for a gateway. Without
    /// one, limits count within this payload only (`check`, `eval`).
    pub counter: Option<&'a dyn RateCounter>,
    /// Check the arguments exactly as written, without `normalize`: for a
    /// gateway, which forwards them unchanged, so that what is validated
    /// is what executes.
    pub as_written: bool,
    /// The request's tools, compiled by [`Policy::declare_sent`] (or
    /// [`Policy::declare`]): used instead of compiling the payload's own
    /// `tools` again.
    pub declared: Option<&'a DeclaredTools>,
    /// What to judge: the calls the model just made, what an application
    /// sends back, or everything (the default).
    pub phase: Phase,
    /// How much of a passing verdict to build (a failing one is whole).
    pub passing: Passing,
}

/// How much of a passing verdict a check builds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Passing {
    /// All of it.
    #[default]
    Whole,
    /// Only what a tally reads: its `reasoning`, `actual_tools` and
    /// `expected_tools` are left empty. For callers that count verdicts
    /// and show no passing one (`eval` without `--out` or `--junit`, a
    /// middleware that drops a passing verdict).
    Tallied,
}

/// Counts calls against the policy's rate limits across checks (the
/// gateway's shared counters). Implementations must be cheap and must not
/// block for long: they run inside a check.
pub trait RateCounter: std::fmt::Debug + Sync {
    /// Record one call under limit number `limit` (its place in `limits`)
    /// and `key` (the caller id, the argument value, or empty for a global
    /// limit); return how many calls the current window of `rule.per`
    /// holds, this one included. An error counts as past the limit.
    fn hit(&self, limit: usize, rule: &RateLimit, key: &str) -> Result<u64, String>;
}

/// The tools a request declares (its `tools` array), compiled once by
/// [`Policy::declare`]. A gateway compiles an agent's tool list once and
/// reuses it for every request that sends the same list
/// ([`CheckOptions::declared`]), and refuses a streamed call by its name
/// as soon as the name is known ([`Policy::name_violation`]).
#[derive(Debug)]
pub struct DeclaredTools {
    tools: RequestTools,
    /// `invalid_tool_schema` for each declaration that is not valid.
    violations: Vec<Violation>,
}

impl DeclaredTools {
    /// The problems of the declarations (`invalid_tool_schema`): a payload
    /// checked with these tools fails with them.
    #[must_use]
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }
}

impl Policy {
    /// Compile the tools a request declares, merged with the policy's.
    #[must_use]
    pub fn declare(&self, request_tools: &[serde_json::Value]) -> DeclaredTools {
        let mut violations = Vec::new();
        let tools = RequestTools::compile(self, request_tools, &mut violations);
        DeclaredTools { tools, violations }
    }

    /// The compiled form of the tools a payload declares, as [`detect`]
    /// found them ([`Detection::tools`]): compiled by
    /// [`Policy::declare_sent`] the first time, then kept by the policy
    /// and found again by the list's exact text for every payload that
    /// sends the same bytes (a bounded number of lists). `None` when the
    /// payload declares none. [`Policy::judge`] uses it when its options
    /// name no [`CheckOptions::declared`].
    ///
    /// [`detect`]: crate::detect()
    #[must_use]
    pub fn declared(&self, tools: &ToolDeclarations) -> Option<lists::Declared> {
        self.lists.get(self, tools)
    }

    /// Read and compile the tools a payload declares, as [`detect`]
    /// found them ([`Detection::tools`]), merged with the policy's. A list
    /// that cannot be read is `input_limit_exceeded` among the
    /// [`violations`](DeclaredTools::violations).
    ///
    /// [`detect`]: crate::detect()
    #[must_use]
    pub fn declare_sent(&self, request_tools: &ToolDeclarations) -> DeclaredTools {
        let mut violations = Vec::new();
        let tools = RequestTools::compile_sent(self, request_tools, &mut violations);
        DeclaredTools { tools, violations }
    }

    /// The violation of a call named `name` on its name alone (`forbidden`,
    /// `not_allowed`), if any, given the tools the request declared: what a
    /// complete check would also find.
    #[must_use]
    pub fn name_violation(
        &self,
        declared: Option<&DeclaredTools>,
        name: &str,
    ) -> Option<Violation> {
        name::request_violation(self, declared.map(|d| &d.tools), 0, name, self.named(name))
    }

    /// Whether `caller` may call a tool named `name` at all, given the tools
    /// declared (`forbidden`, the allowlist, look-alikes, roles): the
    /// violation that would refuse any call of it. An MCP gateway lists a
    /// server's tool only when this is `None`.
    #[must_use]
    pub fn tool_refusal(
        &self,
        declared: Option<&DeclaredTools>,
        caller: Option<&Caller>,
        name: &str,
    ) -> Option<Violation> {
        self.name_violation(declared, name)
            .or_else(|| access::role(&self.access, caller, 0, name))
    }

    /// Read `bytes` (any wire format) and check every call.
    #[must_use]
    pub fn check(&self, bytes: &[u8]) -> Verdict {
        self.check_with(bytes, CheckOptions::default())
    }

    /// Read `bytes` and check them with `options`.
    #[must_use]
    #[inline(never)] // (a stage of its own in bench/callgrind_split.py)
    pub fn check_with(&self, bytes: &[u8], options: CheckOptions<'_>) -> Verdict {
        self.judge(detect_to_judge(bytes, &self.limits), options)
    }

    /// Check what [`detect`](crate::detect()) found.
    #[must_use]
    pub fn judge(&self, detection: Detection, options: CheckOptions<'_>) -> Verdict {
        self.judge_expecting(detection, options, &self.expect)
    }

    /// [`judge`](Self::judge) with other expectations than the policy's
    /// (a dataset scenario's, from [`Policy::override_expectations`]).
    #[must_use]
    pub fn judge_expecting(
        &self,
        detection: Detection,
        options: CheckOptions<'_>,
        expect: &Expectations,
    ) -> Verdict {
        let Detection {
            calls,
            results,
            tools,
            violations: mut payload,
            pending,
            continues,
            calls_seen,
            ..
        } = detection;
        let phase = options.phase;
        // Calls past `max_calls` were not read: nothing that depends on
        // them (result linkage, expectations, counts) can be claimed.
        let cut = calls_seen > calls.len();
        // The caller's compiled list, else the payload's own, compiled once
        // per policy for every payload that sends the same text.
        let kept;
        let declared = if options.declared.is_some() {
            options.declared
        } else {
            kept = self.lists.get(self, &tools);
            kept.as_ref().map(|k| &*k.tools)
        };
        let request = declared.map(|declared| {
            payload.extend(declared.violations.iter().cloned());
            &declared.tools
        });
        let result_violations = if phase.judges(Category::Result, options.results) {
            let link = results::Linkage {
                pending,
                continues,
                require_names: self.require_result_names,
                cut,
            };
            results::check(&calls, &results, link)
        } else {
            Vec::new()
        };
        let payload_failed = !payload.is_empty();
        let mut violations = payload;
        let mut verdicts = Vec::with_capacity(calls.len());
        let mut valid = 0;
        let judge_calls = phase.judges(Category::Call, options.results);
        let mut reused = Reused::new();
        if judge_calls {
            reused.find(&calls);
        }
        let mut limits = access::Counts::new(options.counter);
        for (at, call) in calls.into_iter().enumerate() {
            let verdict = if judge_calls {
                self.check_call(call, reused.get(at), request, options, &mut limits)
            } else {
                // A call of a past turn: released or refused when it was
                // made, not judged again.
                CallVerdict {
                    index: call.index,
                    id: call.id,
                    name: call.name,
                    arguments: call.arguments,
                    format: call.format,
                    valid: true,
                    violations: Vec::new(),
                }
            };
            valid += usize::from(verdict.valid);
            if !verdict.violations.is_empty() {
                violations.extend(verdict.violations.iter().cloned());
            }
            verdicts.push(verdict);
        }
        violations.extend(result_violations);

        let mut score = Ratio::new(valid, verdicts.len());
        let mut failures = Vec::new();
        let require_calls = options.require_calls || expect.require_calls;
        if !phase.judges(Category::Expectation, options.results) {
            // The calls the model just made, or what an application sends
            // back: expectations score whole trajectories.
        } else if cut {
            // Payload-failed: the limit's violation says how many calls
            // the payload holds; the score is 0.
        } else if verdicts.is_empty() && (require_calls || expectations::needs_calls(expect)) {
            score = Ratio::ZERO;
            violations.push(Violation::payload(
                ViolationCode::NoToolCalls,
                "no tool calls found",
            ));
        } else {
            let outcome = expectations::evaluate(self, expect, &verdicts);
            score = score.times(Ratio::mean(&outcome.kinds));
            violations.extend(outcome.violations);
            failures = outcome.failures;
        }
        finish(
            expect,
            verdicts,
            violations,
            failures,
            score,
            payload_failed,
            options.passing,
        )
    }

    fn check_call(
        &self,
        call: ToolCall,
        reuses: Option<usize>,
        request: Option<&RequestTools>,
        options: CheckOptions<'_>,
        limits: &mut access::Counts,
    ) -> CallVerdict {
        let caller = options.caller;
        let ToolCall {
            index,
            id,
            name,
            mut arguments,
            format,
            ..
        } = call;
        let mut found = Vec::new();
        // What the policy says of the name, looked up once for every check.
        let said = self.named(&name);
        let named = name::request_violation(self, request, index, &name, said);
        let forbidden = named
            .as_ref()
            .is_some_and(|v| v.code == ViolationCode::Forbidden);
        // A name refused as not allowed is no tool of the policy's: its
        // arguments are checked for readability only, not against the
        // schemas of the tool it looks like.
        let known = named.is_none();
        found.extend(named);
        found.extend(access::role(&self.access, caller, index, &name));
        if let (Some(first), Some(id)) = (reuses, id.as_deref()) {
            found.push(Violation::call(
                ViolationCode::DuplicateCallId,
                index,
                &name,
                format!("tool call '{name}' reuses the call id '{id}' of tool call #{first}"),
            ));
        }
        if !forbidden && arguments::readable(index, &name, &arguments, &mut found) && known {
            let looked_up;
            let named = if let Some(named) = said {
                named
            } else {
                looked_up = Named::of(self, &name, false);
                &looked_up
            };
            let checks = arguments::Checks::of(self, request.map(|r| &r.specs), &name, named);
            arguments::check(
                self,
                &checks,
                index,
                &name,
                &mut arguments,
                !options.as_written,
                &mut found,
            );
        }
        if arguments.error().is_none() {
            access::rules(&self.access, caller, index, &name, &arguments, &mut found);
        }
        if found.is_empty() {
            found.extend(limits.count(&self.access, caller, index, &name, &arguments));
        }
        CallVerdict {
            index,
            id,
            name,
            arguments,
            format,
            valid: found.is_empty(),
            violations: found,
        }
    }
}

fn finish(
    expect: &Expectations,
    calls: Vec<CallVerdict>,
    violations: Vec<Violation>,
    expectation_failures: Vec<String>,
    score: Ratio,
    payload_failed: bool,
    passing: Passing,
) -> Verdict {
    // Failure lines: each violation's message, except the expectations',
    // which have their own (grouped) wording.
    let mut failures: Vec<String> = violations
        .iter()
        .filter(|v| !is_expectation(v.code))
        .map(|v| failure_line(v).to_owned())
        .collect();
    failures.extend(expectation_failures);
    let passed = violations.is_empty();
    let score = if payload_failed { 0.0 } else { score.rounded() };
    let whole = !(passed && passing == Passing::Tallied);
    let reasoning = if !whole {
        String::new()
    } else if passed {
        match calls.len() {
            0 => "no tool calls; none required".to_owned(),
            1 => "1 tool call, valid; every expectation met".to_owned(),
            n => {
                // Written out rather than formatted: every passing payload
                // says it.
                const REST: &str = " tool calls, all valid; every expectation met";
                let mut text = String::with_capacity(20 + REST.len());
                push_decimal(&mut text, n);
                text.push_str(REST);
                text
            }
        }
    } else {
        failures.join("; ")
    };
    Verdict {
        passed,
        label: if passed { Label::Pass } else { Label::Fail },
        score,
        reasoning,
        actual_tools: if whole {
            calls.iter().map(|c| c.name.clone()).collect()
        } else {
            Vec::new()
        },
        expected_tools: if whole {
            expect.expected.clone()
        } else {
            Vec::new()
        },
        calls,
        violations,
        failures,
    }
}

/// Write `n` in decimal.
fn push_decimal(text: &mut String, mut n: usize) {
    let mut digits = [b'0'; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b"0123456789"[n % 10];
        n /= 10;
        if n == 0 {
            break;
        }
    }
    text.extend(digits[at..].iter().map(|&digit| char::from(digit)));
}

/// For each call, the earlier call of the same turn whose (non-empty) id
/// it reuses, by that call's index: ids may repeat across turns (some
/// models send `call_0` every turn), never within one. Found in place,
/// without a list, for the few calls a payload mostly holds; through a
/// table past that.
struct Reused {
    /// For the first [`FEW`] calls (when they are all there are): the
    /// index, or [`NONE`].
    few: [u32; FEW],
    /// For every call, when there are more (or an index past `u32`).
    many: Vec<Option<usize>>,
}

/// How many calls [`Reused`] compares one with another.
const FEW: usize = 32;

/// No earlier call in [`Reused::few`].
const NONE: u32 = u32::MAX;

impl Reused {
    /// No call reuses an id.
    fn new() -> Reused {
        Reused {
            few: [NONE; FEW],
            many: Vec::new(),
        }
    }

    /// Find the ids `calls` reuse.
    fn find(&mut self, calls: &[ToolCall]) {
        let few = calls.len() <= FEW
            && calls
                .iter()
                .all(|call| u32::try_from(call.index).is_ok_and(|index| index != NONE));
        if few {
            self.scanned(calls);
        } else {
            self.tabled(calls);
        }
    }

    /// The index of the call whose id call `at` reuses.
    fn get(&self, at: usize) -> Option<usize> {
        if self.many.is_empty() {
            let index = *self.few.get(at)?;
            (index != NONE).then_some(index as usize)
        } else {
            self.many.get(at).copied().flatten()
        }
    }

    /// [`find`](Self::find) by comparing each call with the earlier ones:
    /// their last eight bytes and length first (ids of one payload,
    /// `call_` and a random tail, mostly differ there), whole when those
    /// match.
    fn scanned(&mut self, calls: &[ToolCall]) {
        fn tail(id: &str) -> u64 {
            let bytes = id.as_bytes();
            let mut last = [0_u8; 8];
            let from = bytes.len().saturating_sub(8);
            last[..bytes.len() - from].copy_from_slice(&bytes[from..]);
            u64::from_le_bytes(last) ^ ((bytes.len() as u64) << 56)
        }
        // Each call's id's tail, 0 for none: an earlier call's tail only
        // points at it, the ids themselves (and turns) are compared.
        let mut tails = [0_u64; FEW];
        for (at, call) in calls.iter().enumerate() {
            let Some((_, id)) = call_id(call) else {
                continue;
            };
            let mine = tail(id);
            tails[at] = mine;
            let earlier = tails[..at]
                .iter()
                .zip(calls)
                .find(|&(&theirs, other)| theirs == mine && call_id(other) == call_id(call));
            if let Some((_, first)) = earlier {
                // `find` took the few path: every index fits.
                self.few[at] = u32::try_from(first.index).unwrap_or(NONE);
            }
        }
    }

    /// [`find`](Self::find) through a table of first calls by id.
    fn tabled(&mut self, calls: &[ToolCall]) {
        let mut first: FxHashMap<(usize, &str), usize> = FxHashMap::default();
        self.many = calls
            .iter()
            .map(|call| {
                let mine = call_id(call)?;
                match first.entry(mine) {
                    std::collections::hash_map::Entry::Occupied(seen) => Some(*seen.get()),
                    std::collections::hash_map::Entry::Vacant(slot) => {
                        slot.insert(call.index);
                        None
                    }
                }
            })
            .collect();
    }
}

/// A call's id and turn, when it has an id.
fn call_id(call: &ToolCall) -> Option<(usize, &str)> {
    call.id
        .as_deref()
        .filter(|id| !id.is_empty())
        .map(|id| (call.turn, id))
}

/// A violation's line in `failures`: its message, in the documented wording
/// (a `not_allowed` suggestion stays in the violation's message only).
fn failure_line(violation: &Violation) -> &str {
    match violation.code {
        ViolationCode::NotAllowed => match &violation.tool {
            Some(tool) => name::failure_line(&violation.message, tool),
            None => &violation.message,
        },
        _ => &violation.message,
    }
}

/// Whether a code belongs to the expectations (whose failure lines are
/// grouped per kind). `no_tool_calls` has a line of its own.
fn is_expectation(code: ViolationCode) -> bool {
    code.category() == Category::Expectation && code != ViolationCode::NoToolCalls
}

#[cfg(test)]
mod tests {
    use super::{push_decimal, Reused, FEW};
    use crate::detect;

    impl Reused {
        /// What each of `n` calls reuses.
        fn list(&self, n: usize) -> Vec<Option<usize>> {
            (0..n).map(|at| self.get(at)).collect()
        }
    }

    #[test]
    fn numbers_are_written_in_decimal() {
        for n in [0, 7, 10, 99, 123, 1_000_000, usize::MAX] {
            let mut text = String::from("x");
            push_decimal(&mut text, n);
            assert_eq!(text, format!("x{n}"));
        }
    }

    proptest::proptest! {
        /// Comparing ids' tails first finds the calls a table finds:
        /// ids of one to twenty bytes, many sharing a prefix or a tail,
        /// over two turns.
        #[test]
        fn reused_ids_scanned_are_those_a_table_finds(
            ids in proptest::collection::vec(("(call_)?[ab]{0,3}(xyzxyzxy)?[ab]{0,2}", 0..2_usize), 0..20),
        ) {
            let turns: Vec<String> = [0, 1]
                .iter()
                .map(|turn| {
                    let calls: Vec<String> = ids
                        .iter()
                        .filter(|(_, t)| t == turn)
                        .map(|(id, _)| format!(r#"{{"id":"{id}","type":"function","function":{{"name":"t","arguments":"{{}}"}}}}"#))
                        .collect();
                    format!(r#"{{"role":"assistant","tool_calls":[{}]}}"#, calls.join(","))
                })
                .collect();
            let found = detect(format!("[{}]", turns.join(",")).as_bytes());
            let n = found.calls.len();
            let (mut scanned, mut tabled) = (Reused::new(), Reused::new());
            scanned.scanned(&found.calls);
            tabled.tabled(&found.calls);
            proptest::prop_assert!(n == 0 || !tabled.many.is_empty());
            proptest::prop_assert_eq!(scanned.list(n), tabled.list(n));
        }
    }

    #[test]
    fn reused_ids_with_few_and_many_calls() {
        for n in [3, 40] {
            let calls: Vec<String> = (0..n)
                .map(|i| format!(r#"{{"id":"c{}","name":"t","arguments":{{}}}}"#, i % (n - 1)))
                .collect();
            let found = detect(format!("[{}]", calls.join(",")).as_bytes());
            let mut found_ids = Reused::new();
            found_ids.find(&found.calls);
            assert_eq!(found_ids.many.is_empty(), n <= FEW, "{n} calls");
            let reused = found_ids.list(n);
            assert_eq!(reused.len(), n);
            assert_eq!(reused[n - 1], Some(0), "{n} calls");
            assert!(reused[..n - 1].iter().all(Option::is_none), "{n} calls");
        }
    }
}
