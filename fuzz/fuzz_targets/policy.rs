//! Policy loading never panics, whatever the text: YAML or JSON, any keys,
//! any schemas, any CEL (comprehension macros included). A policy that
//! loads checks a payload without panicking either. The payload holds lists
//! for the macros to range over, and namespaced and look-alike names for
//! the per-tool lookups.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolgate::Policy;

const PAYLOAD: &[u8] = br#"[{"name":"get_weather","arguments":{"city":"Paris","n":3}},
  {"name":"search","arguments":{"query":"x","tags":[],"none":null}},
  {"name":"send_email","arguments":{"to":["a@example.com","b@x.io"],"cc":[null,{},"none"]}},
  {"name":"functions.Send-Email","arguments":{"to":[],"stops":[{"city":"Paris","nights":2}]}},
  {"name":"mcp__db__delete_user","arguments":{"id":7}}]"#;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(policy) = Policy::from_text(text, None) {
        let verdict = policy.check(PAYLOAD);
        assert_eq!(verdict.passed, verdict.violations.is_empty());
    }
});
