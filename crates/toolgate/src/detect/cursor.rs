//! A place in JSON text and the grammar the fast readers share
//! ([`fast`](super::fast) for envelopes, [`args`](super::args) for
//! arguments): whitespace, literals, numbers. Each reader derefs to its
//! cursor.

/// `Deref` and `DerefMut` from a reader (a struct with a `cursor` field)
/// to its cursor.
macro_rules! reads_with_cursor {
    ($reader:ident) => {
        impl<'a> std::ops::Deref for $reader<'a> {
            type Target = $crate::detect::cursor::Cursor<'a>;
            fn deref(&self) -> &Self::Target {
                &self.cursor
            }
        }

        impl std::ops::DerefMut for $reader<'_> {
            fn deref_mut(&mut self) -> &mut Self::Target {
                &mut self.cursor
            }
        }
    };
}
pub(crate) use reads_with_cursor;

/// Where a reader is in `text`.
pub(crate) struct Cursor<'a> {
    pub(crate) text: &'a str,
    pub(crate) bytes: &'a [u8],
    pub(crate) at: usize,
}

/// A number as written: where it is and which parts it has.
pub(crate) struct Number {
    pub(crate) start: usize,
    /// The digits before any `.` or exponent.
    pub(crate) integral: std::ops::Range<usize>,
    pub(crate) fraction: bool,
    pub(crate) exponent: bool,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(text: &'a str) -> Cursor<'a> {
        Cursor {
            text,
            bytes: text.as_bytes(),
            at: 0,
        }
    }

    pub(crate) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// Skip whitespace. Compact text has none between tokens: one test.
    #[inline]
    pub(crate) fn space(&mut self) {
        if self.peek().is_some_and(|byte| byte <= b' ') {
            self.whitespace();
        }
    }

    /// Indented text (as the Gemini and OpenAI APIs serve their answers)
    /// puts one space after each key's colon, and a line end and a run of
    /// spaces before each member: those two are tested first, with no
    /// table of jumps (which a `match` on the byte compiles to, and whose
    /// target changes from one run of white space to the next); the run
    /// after a line end is skipped eight bytes at a time. Any other white
    /// space (tabs, carriage returns, blank lines) is read byte by byte.
    #[inline(never)]
    fn whitespace(&mut self) {
        let at = self.at;
        match self.bytes.get(at..at + 2) {
            Some([b' ', next]) if *next > b' ' => {
                self.at = at + 1;
                return;
            }
            Some([b'\n', _]) => {
                self.at = at + 1;
                self.indentation();
                if self.peek().is_none_or(|byte| byte > b' ') {
                    return;
                }
            }
            _ => {}
        }
        self.any_whitespace();
    }

    /// White space of any kind, a byte at a time.
    fn any_whitespace(&mut self) {
        while let Some(byte) = self.peek() {
            if byte == b'\n' {
                self.at += 1;
                self.indentation();
            } else if byte == b' ' || byte == b'\t' || byte == b'\r' {
                self.at += 1;
            } else {
                return;
            }
        }
    }

    /// The spaces at the cursor, eight at a time; the last word's leading
    /// spaces counted from its first byte that is not one.
    fn indentation(&mut self) {
        const SPACES: u64 = u64::from_le_bytes([b' '; 8]);
        while let Some(word) = self.bytes.get(self.at..self.at + 8) {
            let mut eight = [0; 8];
            eight.copy_from_slice(word);
            let other = u64::from_le_bytes(eight) ^ SPACES;
            if other != 0 {
                self.at += other.trailing_zeros() as usize / 8;
                return;
            }
            self.at += 8;
        }
    }

    /// Whether only whitespace is left.
    pub(crate) fn at_end(&mut self) -> bool {
        self.space();
        self.at == self.bytes.len()
    }

    /// `word` (`null`, `true`, `false`) at the cursor.
    pub(crate) fn literal(&mut self, word: &str) -> Option<()> {
        let end = self.at + word.len();
        (self.bytes.get(self.at..end)? == word.as_bytes()).then(|| self.at = end)
    }

    /// A number in JSON's grammar at the cursor.
    pub(crate) fn number(&mut self) -> Option<Number> {
        let start = self.at;
        let scanned = Scanned::read(self.bytes, start)?;
        self.at = scanned.end;
        let integral = start + usize::from(scanned.negative);
        Some(Number {
            start,
            integral: integral..integral + scanned.integral,
            fraction: scanned.fraction,
            exponent: scanned.exponent,
        })
    }
}

/// A number in JSON's grammar, its digits scanned once: what its value
/// is made from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scanned {
    pub(crate) negative: bool,
    /// How many digits its integral part has (`0`: one).
    pub(crate) integral: usize,
    /// The value of its digits (integral and fraction, as one integer)
    /// while they are at most 19 significant ones; past that, nothing to
    /// read.
    pub(crate) significand: u64,
    /// How many significant digits (past leading zeros) it has.
    pub(crate) digits: usize,
    /// The power of ten the significand is scaled by: minus the fraction's
    /// digits, plus the written exponent (saturating, far past any float's).
    pub(crate) scale: i32,
    pub(crate) fraction: bool,
    pub(crate) exponent: bool,
    /// Where the number ends in the text.
    pub(crate) end: usize,
}

impl Scanned {
    /// The number at `at` in `bytes`, `None` when none is there in JSON's
    /// grammar (a sign alone, a leading zero before digits, a point or an
    /// exponent without digits).
    pub(crate) fn read(bytes: &[u8], mut at: usize) -> Option<Scanned> {
        let digit = |at: usize| digit_at(bytes, at);
        let negative = bytes.get(at) == Some(&b'-');
        at += usize::from(negative);
        let (mut significand, mut digits, integral) = if digit(at)? == 0 {
            // A zero alone: no digit may follow it.
            at += 1;
            if digit(at).is_some() {
                return None;
            }
            (0, 0, 1)
        } else {
            let (significand, run) = digit_run(bytes, at, 0);
            at += run;
            (significand, run, run)
        };
        let mut scale = 0i32;
        let fraction = bytes.get(at) == Some(&b'.');
        if fraction {
            at += 1;
            let from = at;
            if significand == 0 {
                // Leading zeros count for nothing but the scale.
                while bytes.get(at) == Some(&b'0') {
                    at += 1;
                }
            }
            let (folded, run) = digit_run(bytes, at, significand);
            significand = folded;
            digits += run;
            at += run;
            if at == from {
                return None;
            }
            scale = -i32::try_from(at - from).ok()?;
        }
        let exponent = matches!(bytes.get(at), Some(b'e' | b'E'));
        if exponent {
            at += 1;
            let minus = bytes.get(at) == Some(&b'-');
            at += usize::from(matches!(bytes.get(at), Some(b'-' | b'+')));
            let from = at;
            let mut written = 0i32;
            while let Some(d) = digit(at) {
                written = written.saturating_mul(10).saturating_add(i32::from(d));
                at += 1;
            }
            if at == from {
                return None;
            }
            scale = scale.saturating_add(if minus { -written } else { written });
        }
        Some(Scanned {
            negative,
            integral,
            significand,
            digits,
            scale,
            fraction,
            exponent,
            end: at,
        })
    }

    /// Written as an integer: no fraction, no exponent.
    pub(crate) fn whole(&self) -> bool {
        !self.fraction && !self.exponent
    }

    /// The number as a float, when its digits make an integer of at most
    /// 2^53 and its decimal exponent is within 22: that integer and that
    /// power of ten are floats exactly, so one multiplication or division
    /// rounds the value once, correctly, and every correct reader (the
    /// strict reader's among them, with or without its `float_roundtrip`
    /// feature) gives that very float. `None` for any other number.
    pub(crate) fn exact_float(&self) -> Option<f64> {
        const POW10: [f64; 23] = [
            1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
            1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
        ];
        if self.digits > 19 || self.significand > 1 << 53 {
            return None;
        }
        let power = *POW10.get(usize::try_from(self.scale.unsigned_abs()).ok()?)?;
        // An integer of at most 2^53 is a float exactly.
        #[allow(clippy::cast_precision_loss)]
        let magnitude = self.significand as f64;
        let value = if self.scale >= 0 {
            magnitude * power
        } else {
            magnitude / power
        };
        Some(if self.negative { -value } else { value })
    }
}

/// The run of decimal digits at `at` in `bytes`, eight at a time, folded
/// onto `significand` as the digits of one integer (past 64 bits, modulo
/// 2^64, as a digit at a time would): the integer and the run's length.
pub(crate) fn digit_run(bytes: &[u8], mut at: usize, mut significand: u64) -> (u64, usize) {
    const POW10: [u64; 9] = [
        1,
        10,
        100,
        1_000,
        10_000,
        100_000,
        1_000_000,
        10_000_000,
        100_000_000,
    ];
    let from = at;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        // Each byte less '0': a digit is 0 to 9. A borrow or a carry
        // runs from a byte that is not a digit into the bytes after it
        // only, which are past the run.
        let values = word.wrapping_sub(0x3030_3030_3030_3030);
        let not_digits =
            (values.wrapping_add(0x7676_7676_7676_7676) | values) & 0x8080_8080_8080_8080;
        let run = (not_digits.trailing_zeros() / 8) as usize;
        if run == 0 {
            return (significand, at - from);
        }
        // The run's digits as the last bytes of a word whose first ones
        // are zeros: the same integer, eight digits long.
        let eight = eight_digits(values << (64 - 8 * run));
        significand = significand.wrapping_mul(POW10[run]).wrapping_add(eight);
        at += run;
        if run < 8 {
            return (significand, at - from);
        }
    }
    // Fewer than eight bytes left: a digit at a time.
    while let Some(d) = digit_at(bytes, at) {
        significand = significand.wrapping_mul(10).wrapping_add(u64::from(d));
        at += 1;
    }
    (significand, at - from)
}

/// Eight digits (0 to 9, a byte each, the first the most significant, in
/// a little-endian word) as the integer they write: pairs, then fours,
/// then all eight, a multiplication each.
fn eight_digits(values: u64) -> u64 {
    let pairs = values.wrapping_mul(10 * 256 + 1) >> 8;
    let fours = (pairs & 0x00FF_00FF_00FF_00FF).wrapping_mul(100 * 65_536 + 1) >> 16;
    (fours & 0x0000_FFFF_0000_FFFF).wrapping_mul(10_000 * (1 << 32) + 1) >> 32
}

/// The value of the decimal digit at `at` in `bytes`, if one is there.
fn digit_at(bytes: &[u8], at: usize) -> Option<u8> {
    bytes
        .get(at)
        .map(|b| b.wrapping_sub(b'0'))
        .filter(|&d| d < 10)
}

/// The items of an array or the entries of an object, its opening bracket
/// read: `item` reads one (after any whitespace), separated by commas,
/// until `close`, which is read too.
pub(crate) fn items<'a, R>(
    reader: &mut R,
    close: u8,
    item: impl FnMut(&mut R) -> Option<()>,
) -> Option<()>
where
    R: std::ops::DerefMut<Target = Cursor<'a>>,
{
    items_spaced(reader, close, |reader| reader.space(), item)
}

/// [`items`], with `space` skipping what the text counts as whitespace.
pub(crate) fn items_spaced<'a, R>(
    reader: &mut R,
    close: u8,
    space: impl Fn(&mut R),
    mut item: impl FnMut(&mut R) -> Option<()>,
) -> Option<()>
where
    R: std::ops::DerefMut<Target = Cursor<'a>>,
{
    space(reader);
    if reader.peek()? == close {
        reader.at += 1;
        return Some(());
    }
    loop {
        space(reader);
        item(reader)?;
        space(reader);
        match reader.peek()? {
            b',' => reader.at += 1,
            byte if byte == close => {
                reader.at += 1;
                return Some(());
            }
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::Cursor;

    /// Where whitespace from `at` ends, a byte at a time.
    fn after_space(text: &str, at: usize) -> usize {
        at + text.as_bytes()[at..]
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\n' | b'\t' | b'\r'))
            .count()
    }

    #[test]
    fn indentation_is_skipped_to_the_first_byte_after_it() {
        for text in [
            "",
            " ",
            "\n",
            "\n{",
            "\n        ",
            "\n        x",
            "\n         x",
            "\n                \"a\"",
            "\n       \t x",
            "\n  \n    \r\n      ]",
            " \n        \n                 1",
        ] {
            let mut cursor = Cursor::new(text);
            cursor.space();
            assert_eq!(cursor.at, after_space(text, 0), "{text:?}");
        }
        // Every indentation up to past four 8-byte words, after a line end
        // or not, with what follows it or at the text's end.
        for spaces in 0..40 {
            for lead in ["", "\n", " ", "\r\n", "\t"] {
                for after in ["", "x", "\"key\": 1", "\n", "\t}", &"y".repeat(40)] {
                    let text = format!("{lead}{}{after}", " ".repeat(spaces));
                    let mut cursor = Cursor::new(&text);
                    cursor.space();
                    assert_eq!(cursor.at, after_space(&text, 0), "{text:?}");
                }
            }
        }
    }

    proptest! {
        #[test]
        fn space_stops_where_whitespace_ends(
            runs in prop::collection::vec(
                (prop::sample::select(vec![' ', '\n', '\t', '\r', 'x', '"']), 1usize..20),
                0..8,
            ),
            at in 0usize..80,
        ) {
            let text: String = runs.iter().flat_map(|&(c, n)| std::iter::repeat_n(c, n)).collect();
            let at = at.min(text.len());
            let mut cursor = Cursor::new(&text);
            cursor.at = at;
            cursor.space();
            prop_assert_eq!(cursor.at, after_space(&text, at));
        }
    }
}
