//! The `email` format, decided in one pass over the bytes for the
//! addresses tool calls send (`name@example.com`), with the very answer
//! the `jsonschema` crate's own check gives; every other string is handed
//! to that check.
//!
//! The crate's check parses the address with `email_address` (which looks
//! for a display name, copies the address into a `String` and walks it
//! by `char` more than once) and then checks the domain as a hostname: a
//! fifth of a payload's time when its calls carry email arguments. For a
//! string of ASCII letters, digits, `.`, one `@` and the other characters
//! RFC 5322 allows in an unquoted local part, both steps come down to a
//! few rules on its local part and its domain's labels, checked here:
//!
//! - the local part: 1 to 64 bytes, no empty part between dots
//!   (`email_address`'s dot-atom; every byte left is `atext`);
//! - the domain: 1 to 253 bytes of letters, digits, `-` and `.` (the
//!   crate's hostname check, stricter than `email_address`'s 254 and
//!   `atext`), labels of 1 to 63 bytes that neither begin nor end with
//!   `-` (both checks).
//!
//! A domain with a label holding `--` in its third and fourth bytes (an
//! IDNA A-label, checked by decoding it) is handed to the crate's
//! `hostname` check, which is what its `email` check does with a domain;
//! any string with another byte goes to its `email` check whole: quoted
//! local parts, display names, address literals, non-ASCII text. `tests`
//! holds the two to the same answers.

use std::sync::OnceLock;

use jsonschema::Validator;
use serde_json::Value;

/// Bytes of an address this module decides: ASCII letters and digits,
/// `.`, `@`, and the rest of RFC 5322's `atext`.
const DECIDED: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte: u8 = 0;
    while byte < 128 {
        table[byte as usize] = matches!(byte,
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'@'
            | b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+' | b'-' | b'/'
            | b'=' | b'?' | b'^' | b'_' | b'`' | b'{' | b'|' | b'}' | b'~');
        byte += 1;
    }
    table
};

/// Whether `text` is an `email` as the `jsonschema` crate checks it.
pub(crate) fn is_email(text: &str) -> bool {
    match decide(text.as_bytes()) {
        Answer::Is(answer) => answer,
        Answer::IfHostname(domain) => crate_check(Format::Hostname, domain_of(text, domain)),
        Answer::Undecided => crate_check(Format::Email, text),
    }
}

/// What [`decide`] makes of an address.
#[derive(Debug, PartialEq)]
enum Answer {
    /// The crate's answer.
    Is(bool),
    /// Valid if its domain, which starts at this byte and holds an
    /// A-label, is a hostname to the crate.
    IfHostname(usize),
    /// Not a string of [`DECIDED`] bytes: the crate decides.
    Undecided,
}

fn domain_of(text: &str, start: usize) -> &str {
    text.get(start..).unwrap_or_default()
}

/// The answer for a string of [`DECIDED`] bytes.
fn decide(bytes: &[u8]) -> Answer {
    let mut at = None;
    let mut ats = 0;
    for (i, &byte) in bytes.iter().enumerate() {
        if !DECIDED[usize::from(byte)] {
            return Answer::Undecided;
        }
        if byte == b'@' {
            at = Some(i);
            ats += 1;
        }
    }
    // No `@`, or one in the local part (split at the last): not `atext`.
    let Some(at) = at.filter(|_| ats == 1) else {
        return Answer::Is(false);
    };
    let (local, domain) = (&bytes[..at], &bytes[at + 1..]);
    if local.is_empty()
        || local.len() > 64
        || local.split(|&b| b == b'.').any(<[u8]>::is_empty)
        || domain.is_empty()
        || domain.len() > 253
    {
        return Answer::Is(false);
    }
    let mut a_label = false;
    for label in domain.split(|&b| b == b'.') {
        if label.is_empty()
            || label.len() > 63
            || label[0] == b'-'
            || label[label.len() - 1] == b'-'
            || !label
                .iter()
                .all(|&b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return Answer::Is(false);
        }
        a_label |= label.len() >= 4 && label[2] == b'-' && label[3] == b'-';
    }
    if a_label {
        Answer::IfHostname(at + 1)
    } else {
        Answer::Is(true)
    }
}

/// A format the crate checks for [`is_email`].
#[derive(Clone, Copy)]
enum Format {
    Email,
    Hostname,
}

/// The `jsonschema` crate's own check of `format` (draft 2020-12, the
/// `hostname` its `email` check applies to a domain).
fn crate_check(format: Format, text: &str) -> bool {
    static CHECKS: OnceLock<[Option<Validator>; 2]> = OnceLock::new();
    let checks = CHECKS.get_or_init(|| {
        ["email", "hostname"].map(|name| {
            jsonschema::draft202012::options()
                .should_validate_formats(true)
                .build(&serde_json::json!({"format": name}))
                .ok()
        })
    });
    checks[format as usize]
        .as_ref()
        .is_some_and(|check| check.is_valid(&Value::String(text.to_owned())))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn agree(text: &str) {
        assert_eq!(is_email(text), crate_check(Format::Email, text), "{text:?}");
    }

    #[test]
    fn decided_addresses_get_the_crate_answer() {
        for text in [
            "a@b",
            "name@example.com",
            "first.last+tag@sub.example.co.uk",
            "x@example-.com",
            "x@-example.com",
            "x@exa_mple.com",
            "x@example..com",
            "x@example.com.",
            ".x@example.com",
            "x.@example.com",
            "x..y@example.com",
            "@example.com",
            "x@",
            "x@@example.com",
            "a@b@example.com",
            "x@xn--nxasmq6b.com",
            "x@xn--bcher-kva.de",
            "x@xn--bcher-kva-.de",
            "x@xn--a.com",
            "x@xn---.com",
            "x@XN--BCHER-KVA.de",
            "x@ab--cd.com",
            "x@ab-cd.com",
            "!#$%&'*+-/=?^_`{|}~@example.com",
            "\"\"@example.com",
            "\"quoted name\"@example.com",
            "Name <x@example.com>",
            "x@[127.0.0.1]",
            "x@[IPv6:::1]",
            "jöhn@example.com",
            "x@exämple.com",
            "x y@example.com",
            "",
            "@",
            ".",
        ] {
            agree(text);
        }
        let long_label = "a".repeat(63);
        agree(&format!("x@{long_label}.com"));
        agree(&format!("x@{long_label}b.com"));
        agree(&format!("{}@example.com", "a".repeat(64)));
        agree(&format!("{}@example.com", "a".repeat(65)));
        let domain = ["abcdefghi"; 25].join(".");
        for extra in ["", "a", "ab", "abc", "abcd", "abcdefgh"] {
            agree(&format!("x@{domain}.{extra}"));
        }
    }

    #[test]
    fn plain_addresses_are_decided_here_and_the_rest_handed_over() {
        assert_eq!(decide(b"name@example.com"), Answer::Is(true));
        assert_eq!(
            decide(b"first.last+tag@sub.example.co.uk"),
            Answer::Is(true)
        );
        assert_eq!(decide(b"x@example-.com"), Answer::Is(false));
        assert_eq!(decide(b"x@exa_mple.com"), Answer::Is(false));
        assert_eq!(decide(b"x..y@example.com"), Answer::Is(false));
        assert_eq!(decide(b"a@b@example.com"), Answer::Is(false));
        assert_eq!(decide(b"example.com"), Answer::Is(false));
        assert_eq!(decide(b"x@xn--nxasmq6b.com"), Answer::IfHostname(2));
        assert_eq!(decide(b"x@ab--cd.com"), Answer::IfHostname(2));
        assert_eq!(decide(b"\"q\"@example.com"), Answer::Undecided);
        assert_eq!(
            decide("j\u{f6}hn@example.com".as_bytes()),
            Answer::Undecided
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        #[test]
        fn any_string_gets_the_crate_answer(
            text in "[a-cxn0-9.@_+!~{}\\-\"<> \\[\\]:éA-C]{0,24}",
        ) {
            prop_assert_eq!(is_email(&text), crate_check(Format::Email, &text), "{:?}", text);
        }

        #[test]
        fn addresses_near_the_rules_get_the_crate_answer(
            local in "[a-z.+\\-_]{0,6}",
            labels in proptest::collection::vec("(xn--)?[a-z0-9\\-]{0,6}", 0..4),
        ) {
            let text = format!("{local}@{}", labels.join("."));
            prop_assert_eq!(is_email(&text), crate_check(Format::Email, &text), "{:?}", text);
        }

        /// Near the bounds: local parts of 62 to 66 bytes, labels of 61 to
        /// 65, domains around 253 bytes, either case.
        #[test]
        fn addresses_near_the_bounds_get_the_crate_answer(
            local in 62_usize..67,
            label in 61_usize..66,
            labels in 1_usize..6,
            tail in 0_usize..8,
            upper in any::<bool>(),
        ) {
            let letter = if upper { "A" } else { "a" };
            let domain = vec![letter.repeat(label); labels].join(".");
            for text in [
                format!("{}@{domain}", letter.repeat(local)),
                format!("x@{domain}.{}", "b".repeat(tail)),
            ] {
                prop_assert_eq!(is_email(&text), crate_check(Format::Email, &text), "{:?}", text);
            }
        }
    }
}
