//! `detect` on arbitrary bytes: never panics, never overflows the stack,
//! its fast readers (envelope, arguments, arguments read from their JSON
//! string) agree with the reference
//! readers (and the short path for answers with the general readers:
//! `detect` asserts it itself in builds with debug assertions, as fuzz
//! builds are), and what it returns
//! is consistent (calls numbered in order, within the
//! limits, counted at least as often as kept; nothing read from a payload
//! in no known shape).
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolgate::{detect_with, Limits};

fuzz_target!(|data: &[u8]| {
    // The fast reader builds the reference reader's view, or gives up.
    if let Ok(text) = std::str::from_utf8(data) {
        for max_depth in [128, 4] {
            if let Err(why) = toolgate::detect::fast_path_agrees(text, max_depth) {
                panic!("{why}");
            }
            let limits = Limits {
                max_depth,
                ..Limits::default()
            };
            if let Err(why) = toolgate::detect::args::fast_path_agrees(text, &limits) {
                panic!("{why}");
            }
            // Arguments read straight from a JSON string are those of its
            // text: the input as a string, and the input's text quoted.
            let quoted = serde_json::to_string(text).expect("a string is written");
            for literal in [text, quoted.as_str()] {
                if let Err(why) = toolgate::detect::args::quoted_path_agrees(literal, &limits) {
                    panic!("{why}");
                }
            }
        }
    }
    for limits in [
        Limits::default(),
        Limits {
            max_payload_bytes: 4096,
            max_depth: 4,
            max_calls: 3,
            max_argument_bytes: 64,
        },
    ] {
        let found = detect_with(data, &limits);
        assert!(found.calls.len() <= limits.max_calls);
        for (i, call) in found.calls.iter().enumerate() {
            assert_eq!(call.index, i);
            if let Some(map) = call.arguments.as_object() {
                assert!(call.raw_arguments.len() <= limits.max_argument_bytes);
                let _ = map;
            }
        }
        for (i, result) in found.results.iter().enumerate() {
            assert_eq!(result.index, i);
        }
        assert!(found.calls_seen >= found.calls.len(), "calls kept but not counted");
        if found.format.is_none() {
            // JSON with no call position holds no call; anything else that
            // was not recognised is a violation.
            assert!(found.calls.is_empty() && found.results.is_empty(), "read in no shape");
        }
    }
});
