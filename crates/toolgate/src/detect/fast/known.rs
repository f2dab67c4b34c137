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
//! reader found to be one JSON array or object within the levels of
//! nesting it had left (its room). When the bytes at a `tools` value
//! begin with one of them, they are that value: an array or object ends
//! at its own closing bracket, so the reader, reading them again, would
//! read exactly those bytes, find them JSON, and stop where they end. It
//! would also open the same containers, so the list is taken as read only
//! where the reading has at least the room it was read within (the
//! least room any reading of it had, once read again with less). Nothing
//! else of a reading depends on the text skipped. Anything else (another
//! list, a list where there is less room, a short one) is read as before.

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
    /// The levels of nesting it was read within: it nests no deeper.
    room: usize,
}

thread_local! {
    /// The lists this thread read last, the most recent first.
    static KNOWN: RefCell<Vec<Known>> = const { RefCell::new(Vec::new()) };
}

/// The length of the list kept on this thread that `text` begins with,
/// when it was read within no more than `room` levels; it moves to the
/// front.
pub(super) fn find(text: &[u8], room: usize) -> Option<usize> {
    if text.len() < FROM || !matches!(text.first(), Some(b'[' | b'{')) {
        return None;
    }
    KNOWN.with_borrow_mut(|known| {
        let at = known
            .iter()
            .position(|list| list.room <= room && text.starts_with(list.text.as_bytes()))?;
        let len = known[at].text.len();
        known[..=at].rotate_right(1);
        Some(len)
    })
}

/// Keep `text`, a list the reader just found to be one JSON array or
/// object within `room` levels of nesting, when it is long enough to be
/// worth it and not too long; a list kept already is kept with the least
/// room it was read within.
pub(super) fn keep(text: &str, room: usize) {
    if !(FROM..=UP_TO).contains(&text.len()) || !text.starts_with(['[', '{']) {
        return;
    }
    KNOWN.with_borrow_mut(|known| {
        // (Read again only where there was less room than it was kept
        // with: `find` takes it everywhere else.)
        if let Some(at) = known.iter().position(|list| &*list.text == text) {
            known[at].room = known[at].room.min(room);
            known[..=at].rotate_right(1);
            return;
        }
        if known.len() == KEPT {
            known.pop();
        }
        known.insert(
            0,
            Known {
                text: text.into(),
                room,
            },
        );
    });
}

#[cfg(test)]
mod tests {
    use super::{find, keep, FROM, KEPT};
    use crate::detect::fast::SKIPPED;

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
        // Read within 8 levels (it nests 6: `[ { { { { {`).
        keep(&text, 8);
        let body = format!("{text},\"model\":\"m\"}}");
        assert_eq!(find(body.as_bytes(), 64), Some(text.len()));
        assert_eq!(find(body.as_bytes(), 8), Some(text.len()));
        assert_eq!(
            find(body.as_bytes(), 7),
            None,
            "less room than it was read in"
        );
        // Read again within 6: taken within 6 from then on.
        keep(&text, 6);
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
        keep(&tools, 64);
        for (body, limits) in bodies {
            let found = crate::detect::detect_with(body.as_bytes(), limits);
            assert_eq!(found, fresh(&body, limits), "{body}");
        }
        // Found again, not read: no value of the list is skipped, where a
        // fresh thread skips each of them.
        let body = request(&tools, "}");
        let skipped = || SKIPPED.with(std::cell::Cell::get);
        let before = skipped();
        let found = crate::detect::detect_with(body.as_bytes(), &limits);
        let kept = skipped() - before;
        let (fresh_found, read) = std::thread::spawn(move || {
            let found = crate::detect::detect_with(body.as_bytes(), &crate::Limits::default());
            (found, SKIPPED.with(std::cell::Cell::get))
        })
        .join()
        .expect("the reading");
        assert_eq!(found, fresh_found);
        assert!(
            read >= kept + 8 * 9,
            "{read} values skipped fresh, {kept} kept"
        );
        assert_eq!(found.calls.len(), 1);
        assert_eq!(found.tools.as_str().trim_end(), tools);
    }

    #[test]
    fn a_thread_keeps_its_last_few_long_lists() {
        let lists: Vec<String> = (10..=10 + KEPT).map(list).collect();
        for text in &lists {
            keep(text, 64);
        }
        assert_eq!(find(lists[0].as_bytes(), 64), None, "the oldest went");
        for text in &lists[1..] {
            assert_eq!(find(text.as_bytes(), 64), Some(text.len()));
        }
        let short = r#"[{"name":"f"}]"#;
        keep(short, 64);
        assert_eq!(find(short.as_bytes(), 64), None, "too short to keep");
    }
}
