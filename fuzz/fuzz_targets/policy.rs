//! Policy loading never panics, whatever the text: YAML or JSON, any keys,
//! any schemas, any CEL. A policy that loads checks a payload without
//! panicking either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolgate::Policy;

const PAYLOAD: &[u8] = br#"[{"name":"get_weather","arguments":{"city":"Paris","n":3}},
  {"name":"search","arguments":{"query":"x","tags":[],"none":null}}]"#;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(policy) = Policy::from_text(text, None) {
        let verdict = policy.check(PAYLOAD);
        assert_eq!(verdict.passed, verdict.violations.is_empty());
    }
});
