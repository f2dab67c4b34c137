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
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        let integral = self.at;
        match self.peek()? {
            b'0' => {
                self.at += 1;
                if self.peek().is_some_and(|b| b.is_ascii_digit()) {
                    return None;
                }
            }
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        let integral = integral..self.at;
        let fraction = self.peek() == Some(b'.');
        if fraction {
            self.at += 1;
            self.some_digits()?;
        }
        let exponent = matches!(self.peek(), Some(b'e' | b'E'));
        if exponent {
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            self.some_digits()?;
        }
        Some(Number {
            start,
            integral,
            fraction,
            exponent,
        })
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
    }

    fn some_digits(&mut self) -> Option<()> {
        let start = self.at;
        self.digits();
        (self.at > start).then_some(())
    }
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
