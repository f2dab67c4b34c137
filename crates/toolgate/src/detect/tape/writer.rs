//! Arguments written onto a tape value by value, by a reader of another
//! representation of them (the Python bindings read a dict): no
//! `serde_json` object and no JSON text in between.
//!
//! [`TapeWriter`] takes what [`Tape::read`] takes and gives up on the
//! rest, exactly: the tape it finishes is the one `Tape::read` gives for
//! the JSON text of the same object, and it finishes none when `Tape::read`
//! would give none for that text (a key given twice or twice to a reader
//! that ignores case, NaN or infinity, nesting
//! near the bound). It gives up too when it is used out of order (a value
//! where a key belongs, a container closed that is not the innermost): its
//! tapes always hold whole objects.

use serde_json::Number;

use super::{past, unique_keys, Scratch, Slot, Tape, SCRATCH};

/// A tape being written. Each method says `None` when the tape cannot be
/// written (the writer is then spent: [`finish`](Self::finish) gives
/// none), and the caller reads the object another way.
pub struct TapeWriter {
    /// The slots, the text (its first `written` bytes) and the keys of the
    /// objects still open, as [`Tape::read`] keeps them.
    buffers: Scratch,
    written: usize,
    /// Containers that may still be opened, as `Tape::read` counts them.
    depth_left: usize,
    /// Containers open.
    open: u32,
    /// What may come next.
    next: Next,
    /// Whether the buffers went back to the thread.
    returned: bool,
}

/// What a writer takes next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// The object: nothing written yet.
    Root,
    /// A key, or the end of the object.
    Key,
    /// The value of the key just written.
    Value,
    /// An item, or the end of the array.
    Item,
    /// Nothing: the object is closed, or a step failed.
    Nothing,
}

/// An object or array opened on a tape, to be closed with
/// [`TapeWriter::end_object`] or [`TapeWriter::end_array`].
#[derive(Debug)]
#[must_use = "a container opened must be closed"]
pub struct Open {
    /// Its slot.
    at: u32,
    /// Its first key among the keys of the open objects.
    base: usize,
    /// Containers open around it, itself included.
    level: u32,
    /// What the writer takes once it is closed.
    after: Next,
}

impl TapeWriter {
    /// A writer of one arguments object, with `Tape::read`'s bound on
    /// nesting (`max_depth`).
    #[must_use]
    pub fn new(max_depth: usize) -> TapeWriter {
        let (depth_left, next) = match max_depth.checked_sub(2) {
            Some(left) => (left, Next::Root),
            None => (0, Next::Nothing),
        };
        TapeWriter {
            buffers: SCRATCH.with_borrow_mut(std::mem::take),
            written: 0,
            depth_left,
            open: 0,
            next,
            returned: false,
        }
    }

    /// The tape, when the object was written whole.
    #[must_use]
    pub fn finish(mut self) -> Option<Tape> {
        let done = self.next == Next::Nothing && self.open == 0 && !self.buffers.slots.is_empty();
        self.returned = true;
        std::mem::take(&mut self.buffers).finish(done, self.written)
    }

    /// Open an object: the arguments first, then any object value.
    pub fn begin_object(&mut self) -> Option<Open> {
        self.begin(true)
    }

    /// Open an array value.
    pub fn begin_array(&mut self) -> Option<Open> {
        self.begin(false)
    }

    /// Close the innermost object.
    pub fn end_object(&mut self, open: Open) -> Option<()> {
        if self.next != Next::Key {
            return self.fail();
        }
        let len = self.buffers.keys.len().checked_sub(open.base);
        let len = len.and_then(|len| u32::try_from(len).ok());
        let unique = unique_keys(
            self.buffers.keys.get(open.base..).unwrap_or_default(),
            &self.buffers.text,
        );
        match (len, unique) {
            (Some(len), Some(())) => {
                let base = open.base;
                self.close(open, |end| Slot::Object(len, end))?;
                self.buffers.keys.truncate(base);
                Some(())
            }
            _ => self.fail(),
        }
    }

    /// Close the innermost array.
    pub fn end_array(&mut self, open: Open) -> Option<()> {
        if self.next != Next::Item {
            return self.fail();
        }
        let end = u32::try_from(self.buffers.slots.len()).ok()?;
        let mut len = 0_u32;
        let mut item = open.at + 1;
        while item < end {
            len += 1;
            item = past(&self.buffers.slots, item);
        }
        self.close(open, |end| Slot::Array(len, end))
    }

    /// The key of the next member of the innermost object.
    pub fn key(&mut self, key: &str) -> Option<()> {
        if self.next != Next::Key {
            return self.fail();
        }
        let Some(slot) = self.buffers.put_text(self.written, key.as_bytes()) else {
            return self.fail();
        };
        let Slot::Text(start, len) = slot else {
            return self.fail();
        };
        self.written += key.len();
        self.buffers.keys.push((start, len));
        self.buffers.slots.push(slot);
        self.next = Next::Value;
        Some(())
    }

    /// A string value.
    pub fn string(&mut self, text: &str) -> Option<()> {
        self.scalar()?;
        let Some(slot) = self.buffers.put_text(self.written, text.as_bytes()) else {
            return self.fail();
        };
        self.written += text.len();
        self.buffers.slots.push(slot);
        Some(())
    }

    /// `null`.
    pub fn null(&mut self) -> Option<()> {
        self.scalar()?;
        self.buffers.slots.push(Slot::Null);
        Some(())
    }

    /// `true` or `false`.
    pub fn bool(&mut self, value: bool) -> Option<()> {
        self.scalar()?;
        self.buffers.slots.push(Slot::Bool(value));
        Some(())
    }

    /// An integer.
    pub fn i64(&mut self, value: i64) -> Option<()> {
        self.number(Number::from(value))
    }

    /// A whole number.
    pub fn u64(&mut self, value: u64) -> Option<()> {
        self.number(Number::from(value))
    }

    /// A float, as `Tape::read` reads the text `serde_json` writes of it
    /// (with a point or an exponent, so a float to the strict reader
    /// however large): no NaN or infinity; read back by `serde_json`,
    /// which may round it.
    pub fn f64(&mut self, value: f64) -> Option<()> {
        let mut buffer = [0_u8; 32];
        let mut out = &mut buffer[..];
        if !value.is_finite() || serde_json::to_writer(&mut out, &value).is_err() {
            return self.fail();
        }
        let left = out.len();
        let literal = &buffer[..buffer.len() - left];
        let read = serde_json::from_slice::<f64>(literal).ok();
        match read.and_then(Number::from_f64) {
            Some(number) => self.number(number),
            None => self.fail(),
        }
    }

    fn number(&mut self, number: Number) -> Option<()> {
        self.scalar()?;
        self.buffers.slots.push(Slot::Number(number));
        Some(())
    }

    /// Whether a value may come next (the next step set).
    fn scalar(&mut self) -> Option<()> {
        self.next = match self.next {
            Next::Value => Next::Key,
            Next::Item => Next::Item,
            Next::Root | Next::Key | Next::Nothing => return self.fail(),
        };
        Some(())
    }

    fn begin(&mut self, object: bool) -> Option<Open> {
        let after = match self.next {
            Next::Root if object => Next::Nothing,
            Next::Value => Next::Key,
            Next::Item => Next::Item,
            Next::Root | Next::Key | Next::Nothing => return self.fail_with(),
        };
        let (Some(left), Ok(at)) = (
            self.depth_left.checked_sub(1),
            u32::try_from(self.buffers.slots.len()),
        ) else {
            return self.fail_with();
        };
        self.depth_left = left;
        self.open += 1;
        self.buffers.slots.push(Slot::Null);
        self.next = if object { Next::Key } else { Next::Item };
        Some(Open {
            at,
            base: self.buffers.keys.len(),
            level: self.open,
            after,
        })
    }

    /// Close `open`, the innermost container, as `slot(end)`.
    // Taken, not borrowed: a container is closed once.
    #[allow(clippy::needless_pass_by_value)]
    fn close(&mut self, open: Open, slot: impl FnOnce(u32) -> Slot) -> Option<()> {
        let Open {
            at, level, after, ..
        } = open;
        let Ok(end) = u32::try_from(self.buffers.slots.len()) else {
            return self.fail();
        };
        if level != self.open || at >= end {
            return self.fail();
        }
        self.buffers.slots[at as usize] = slot(end);
        self.open -= 1;
        self.depth_left += 1;
        self.next = after;
        Some(())
    }

    fn fail(&mut self) -> Option<()> {
        self.next = Next::Nothing;
        // Never finished: no tape, whatever comes next.
        self.open = u32::MAX;
        None
    }

    fn fail_with<T>(&mut self) -> Option<T> {
        self.fail()?;
        None
    }
}

impl Drop for TapeWriter {
    /// The buffers of a writer never finished go back to the thread.
    fn drop(&mut self) {
        if !self.returned {
            std::mem::take(&mut self.buffers).finish(false, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{Tape, TapeWriter};

    /// A JSON value as a writer meets it: an object's members in order,
    /// the same key possibly twice.
    #[derive(Debug, Clone)]
    enum J {
        Null,
        Bool(bool),
        I(i64),
        U(u64),
        F(f64),
        S(String),
        A(Vec<J>),
        O(Vec<(String, J)>),
    }

    impl J {
        /// Its JSON text, as `serde_json` writes each scalar.
        fn text(&self, out: &mut String) {
            match self {
                J::Null => out.push_str("null"),
                J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
                J::I(n) => out.push_str(&n.to_string()),
                J::U(n) => out.push_str(&n.to_string()),
                J::F(v) => out.push_str(&serde_json::to_string(v).unwrap()),
                J::S(s) => out.push_str(&serde_json::to_string(s).unwrap()),
                J::A(items) => {
                    out.push('[');
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        item.text(out);
                    }
                    out.push(']');
                }
                J::O(members) => {
                    out.push('{');
                    for (i, (key, value)) in members.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        out.push_str(&serde_json::to_string(key).unwrap());
                        out.push(':');
                        value.text(out);
                    }
                    out.push('}');
                }
            }
        }

        fn write(&self, writer: &mut TapeWriter) -> Option<()> {
            match self {
                J::Null => writer.null(),
                J::Bool(b) => writer.bool(*b),
                J::I(n) => writer.i64(*n),
                J::U(n) => writer.u64(*n),
                J::F(v) => writer.f64(*v),
                J::S(s) => writer.string(s),
                J::A(items) => {
                    let open = writer.begin_array()?;
                    for item in items {
                        item.write(writer)?;
                    }
                    writer.end_array(open)
                }
                J::O(members) => {
                    let open = writer.begin_object()?;
                    for (key, value) in members {
                        writer.key(key)?;
                        value.write(writer)?;
                    }
                    writer.end_object(open)
                }
            }
        }
    }

    fn written(value: &J, max_depth: usize) -> Option<Tape> {
        let mut writer = TapeWriter::new(max_depth);
        value.write(&mut writer)?;
        writer.finish()
    }

    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-c]{1,2}",
            "[a-cA-C]{1,2}",
            Just("é".to_owned()),
            Just("É".to_owned()),
            Just("\u{17f}".to_owned()),
            Just("s".to_owned()),
            Just("a\u{0}".to_owned()),
            Just("q\"\\\n".to_owned()),
            "[a-z]{3,8}",
        ]
    }

    fn float() -> impl Strategy<Value = f64> {
        prop_oneof![
            -1e6f64..1e6,
            any::<f64>().prop_filter("finite", |v| v.is_finite()),
            Just(-0.0),
            Just(0.1),
            Just(1e16),
            Just(1e-7),
            Just(9.3e18),
            Just(-9.223_372_036_854_776e18),
            Just(123_456_789_012.0),
        ]
    }

    fn value() -> impl Strategy<Value = J> {
        let leaf = prop_oneof![
            Just(J::Null),
            any::<bool>().prop_map(J::Bool),
            any::<i64>().prop_map(J::I),
            any::<u64>().prop_map(J::U),
            float().prop_map(J::F),
            "[a-z é\"\\\\\n\u{0}-\u{1f}😀]{0,6}".prop_map(J::S),
        ];
        leaf.prop_recursive(6, 48, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(J::A),
                proptest::collection::vec((key(), inner), 0..6).prop_map(J::O),
            ]
        })
    }

    fn object() -> impl Strategy<Value = J> {
        proptest::collection::vec((key(), value()), 0..7).prop_map(J::O)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        /// A tape written value by value is the tape read from the JSON
        /// text of the same object, and there is none exactly when the
        /// reader gives none.
        #[test]
        fn a_written_tape_is_the_tape_read_from_its_text(
            object in object(),
            max_depth in prop_oneof![Just(128_usize), 0_usize..8],
        ) {
            let mut text = String::new();
            object.text(&mut text);
            prop_assert_eq!(written(&object, max_depth), Tape::read(&text, max_depth), "{}", text);
        }

        /// Only an object is written whole; what is not a value in JSON
        /// (NaN, infinity) is never written.
        #[test]
        fn only_objects_of_json_values_are_written(value in value(), bad in prop_oneof![
            Just(f64::NAN), Just(f64::INFINITY), Just(f64::NEG_INFINITY)
        ]) {
            let is_object = matches!(value, J::O(_));
            if !is_object {
                prop_assert!(written(&value, 128).is_none());
            }
            let mut writer = TapeWriter::new(128);
            let open = writer.begin_object().unwrap();
            writer.key("a").unwrap();
            prop_assert!(writer.f64(bad).is_none());
            prop_assert!(writer.end_object(open).is_none());
            prop_assert!(writer.finish().is_none());
        }
    }

    /// Steps out of order spend the writer.
    #[test]
    fn steps_out_of_order_write_nothing() {
        let mut writer = TapeWriter::new(128);
        let outer = writer.begin_object().unwrap();
        writer.key("a").unwrap();
        let inner = writer.begin_array().unwrap();
        // The outer object closed before the array in it.
        assert!(writer.end_object(outer).is_none());
        assert!(writer.end_array(inner).is_none());
        assert!(writer.finish().is_none());

        let mut writer = TapeWriter::new(128);
        let open = writer.begin_object().unwrap();
        // A value where a key belongs.
        assert!(writer.string("a").is_none());
        assert!(writer.end_object(open).is_none());
        assert!(writer.finish().is_none());

        let mut writer = TapeWriter::new(128);
        let open = writer.begin_object().unwrap();
        writer.key("a").unwrap();
        // A key without its value.
        assert!(writer.end_object(open).is_none());
        assert!(writer.finish().is_none());

        // Nothing written, and an object left open.
        assert!(TapeWriter::new(128).finish().is_none());
        let mut writer = TapeWriter::new(128);
        let _open = writer.begin_object().unwrap();
        assert!(writer.finish().is_none());

        // Two objects at the root.
        let mut writer = TapeWriter::new(128);
        let open = writer.begin_object().unwrap();
        writer.end_object(open).unwrap();
        assert!(writer.begin_object().is_none());
        assert!(writer.finish().is_none());
    }

    /// A writer left unfinished gives its buffers back: the next tape is
    /// read whole.
    #[test]
    fn an_unfinished_writer_leaves_the_next_tape_whole() {
        let mut writer = TapeWriter::new(128);
        let _open = writer.begin_object().unwrap();
        writer.key("left").unwrap();
        writer.string("behind").unwrap();
        drop(writer);
        let mut writer = TapeWriter::new(128);
        let open = writer.begin_object().unwrap();
        writer.key("b").unwrap();
        writer.i64(-3).unwrap();
        writer.end_object(open).unwrap();
        assert_eq!(writer.finish(), Tape::read(r#"{"b":-3}"#, 128));
    }
}
