//! Declared tool lists read before, found again by their text.
//!
//! An agent sends its whole tool list with every request (8 KB and more
//! of JSON Schemas), and the Responses API echoes it in every answer; the
//! reader takes such a list as raw text, read for its syntax and nesting
//! only ([`Scan::skip`](super::Scan)), and the policy then finds the list
//! it compiled by that text. Reading the same list's syntax for every
//! payload was most of the envelope's time on a request.
//!
//! Each thread keeps the last few long lists it read whole: text the
//! reader found to be one JSON array or object, and how deep it nests.
//! When the bytes at a `tools` value begin with one of them, they are that
//! value: an array or object ends at its own closing bracket, so the
//! reader, reading them again, would read exactly those bytes, find them
//! JSON, and stop where they end. It would also open the same containers,
//! so the list is taken as read only when its nesting fits what is left of
//! this reading's bound. Nothing else of a reading depends on the text
//! skipped. Anything else (another list, a list that nests too deep here,
//! a short one) is read as before.

use std::cell::RefCell;

/// How many lists a thread keeps.
const KEPT: usize = 4;

/// Lists shorter than this are read each time: their reading costs about
/// what looking through the kept ones does.
const FROM: usize = 256;

/// Lists longer than this are read each time, so that a thread keeps a
/// megabyte of them at most.
const UP_TO: usize = 256 * 1024;

struct Known {
    text: Box<str>,
    /// How deep its containers nest (the list alone: 1).
    nesting: usize,
}

thread_local! {
    /// The lists this thread read last, the most recent first.
    static KNOWN: RefCell<Vec<Known>> = const { RefCell::new(Vec::new()) };
}

/// The length of the list kept on this thread that `text` begins with,
/// when it nests within `room` more levels; it moves to the front.
pub(super) fn find(text: &[u8], room: usize) -> Option<usize> {
    if text.len() < FROM || !matches!(text.first(), Some(b'[' | b'{')) {
        return None;
    }
    KNOWN.with_borrow_mut(|known| {
        let at = known
            .iter()
            .position(|list| list.nesting <= room && text.starts_with(list.text.as_bytes()))?;
        let len = known[at].text.len();
        known[..=at].rotate_right(1);
        Some(len)
    })
}

/// Keep `text`, a list the reader just found to be one JSON array or
/// object, when it is long enough to be worth it and not too long.
pub(super) fn keep(text: &str) {
    if !(FROM..=UP_TO).contains(&text.len()) || !text.starts_with(['[', '{']) {
        return;
    }
    let Some(nesting) = crate::detect::limits::nesting(text.as_bytes()) else {
        return;
    };
    KNOWN.with_borrow_mut(|known| {
        if known.iter().any(|list| &*list.text == text) {
            return;
        }
        if known.len() == KEPT {
            known.pop();
        }
        known.insert(
            0,
            Known {
                text: text.into(),
                nesting,
            },
        );
    });
}

#[cfg(test)]
mod tests {
    use super::{find, keep, FROM, KEPT};

    fn list(tag: usize) -> String {
        let tools: Vec<String> = (0..8)
            .map(|k| {
                format!(
                    r#"{{"type":"function","function":{{"name":"tool_{tag}_{k}","parameters":{{"type":"object","properties":{{"a":{{"type":"string"}}}}}}}}}}"#
                )
            })
            .collect();
        format!("[{}]", tools.join(","))
    }

    #[test]
    fn a_kept_list_is_found_at_the_start_of_a_text_that_nests_within_the_room() {
        let text = list(1);
        assert!(text.len() >= FROM);
        assert_eq!(find(text.as_bytes(), 64), None, "nothing kept yet");
        keep(&text);
        let body = format!("{text},\"model\":\"m\"}}");
        assert_eq!(find(body.as_bytes(), 64), Some(text.len()));
        // `[ { { { { {`: six levels, no fewer.
        assert_eq!(find(body.as_bytes(), 6), Some(text.len()));
        assert_eq!(find(body.as_bytes(), 5), None);
        // Cut short, or another list: not the kept one.
        assert_eq!(find(&text.as_bytes()[..text.len() - 1], 64), None);
        assert_eq!(find(list(2).as_bytes(), 64), None);
    }

    /// What a fresh thread, which has kept no list, detects in `body`.
    fn fresh(body: &str, limits: &crate::Limits) -> crate::Detection {
        let (body, limits) = (body.to_owned(), *limits);
        std::thread::spawn(move || crate::detect::detect_with(body.as_bytes(), &limits))
            .join()
            .expect("the reading")
    }

    /// A request read with its list kept is detected as a thread that
    /// kept none detects it: the same request, the list at a nesting past
    /// the bound, the list followed by what is not JSON.
    #[test]
    fn a_list_found_again_is_read_as_a_fresh_reader_reads_it() {
        let tools = list(20);
        let request = |tools: &str, tail: &str| {
            format!(
                r#"{{"model":"m","tools":{tools},"messages":[{{"role":"assistant","tool_calls":[{{"id":"c1","type":"function","function":{{"name":"tool_20_1","arguments":"{{\"a\":\"x\"}}"}}}}]}}]{tail}"#
            )
        };
        let limits = crate::Limits::default();
        let tight = crate::Limits {
            max_depth: 7,
            ..crate::Limits::default()
        };
        let bodies = [
            (request(&tools, "}"), &limits),
            // The list one level deeper than the bound lets it go.
            (format!(r#"{{"wrap":{}}}"#, request(&tools, "}")), &tight),
            (request(&tools, "}"), &tight),
            (request(&tools, ",}"), &limits),
            (request(&tools, r#","tools":[1]}"#), &limits),
            (
                format!(r#"{},"x":"\u00zz"}}"#, request(&tools, "")),
                &limits,
            ),
        ];
        keep(&tools);
        for (body, limits) in bodies {
            let found = crate::detect::detect_with(body.as_bytes(), limits);
            assert_eq!(found, fresh(&body, limits), "{body}");
        }
        // (The list was found again, not read: it is still kept.)
        assert_eq!(find(tools.as_bytes(), 64), Some(tools.len()));
        let found = crate::detect::detect_with(request(&tools, "}").as_bytes(), &limits);
        assert_eq!(found.calls.len(), 1);
        assert_eq!(found.tools.as_str().trim_end(), tools);
    }

    #[test]
    fn a_thread_keeps_its_last_few_long_lists() {
        let lists: Vec<String> = (10..=10 + KEPT).map(list).collect();
        for text in &lists {
            keep(text);
        }
        assert_eq!(find(lists[0].as_bytes(), 64), None, "the oldest went");
        for text in &lists[1..] {
            assert_eq!(find(text.as_bytes(), 64), Some(text.len()));
        }
        let short = r#"[{"name":"f"}]"#;
        keep(short);
        assert_eq!(find(short.as_bytes(), 64), None, "too short to keep");
    }
}
