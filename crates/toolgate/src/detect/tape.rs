//! Arguments read into a tape: one flat list of slots and one buffer of
//! their text, at most two allocations a call however many keys and
//! strings the arguments hold (one when their text fits in place; a third
//! for long strings holding escapes, kept as written until a keyword reads
//! their text, `Slot::Escaped`). The
//! schemas are checked on the tape itself (it is a JSON
//! representation of the `jsonschema` crate's, [`TapeJson`]); the
//! `serde_json` object a caller reads is built from it only when asked
//! ([`ObjectArguments`](crate::model::ObjectArguments)).
//!
//! The reader takes what real calls send and gives up on the rest (an error
//! of any kind, a key given twice or twice to a reader that ignores case, a
//! float past 2^63 or out of range, an integer past 64 bits, an exponent,
//! `-0`, nesting near the bound), which the strict reader then reads and
//! says exactly what is wrong with: what the tape holds is exactly the
//! object the strict reader builds.

use std::borrow::Cow;

use compact_str::CompactString;
use jsonschema::json::{cmp, Array, Json, Node, NodeIdentity, Object};
use jsonschema::types::JsonType;
use serde_json::{Map, Number, Value};

use crate::detect::cursor::{items_spaced, reads_with_cursor, Cursor, Scanned};
use crate::detect::fast::special;
use crate::detect::node::{
    chars, decode, decode_with, decoded, escape, scan, text_escape, utf8, Special, SIMPLE,
};

mod writer;

pub use self::writer::{Open, TapeWriter};

/// Arguments read: slot 0 is the object.
#[derive(Debug, Clone, Default)]
pub struct Tape {
    /// (Boxed, as `escaped`: a tape is read once and kept, inside the
    /// structs a document's objects are read into, which stay within a
    /// kibibyte.)
    slots: Box<[Slot]>,
    /// The keys and strings (but those kept as written), decoded, one
    /// after the other: in place when short (up to 24 bytes, as tiny
    /// arguments' are), so that such a tape is one allocation.
    text: CompactString,
    /// The strings kept as written ([`Slot::Escaped`]), one after the
    /// other: copied from the text read, which was UTF-8 already (the
    /// decoded text is checked again as it becomes a string).
    escaped: Box<str>,
}

/// Two tapes are equal when they hold the same value written the same
/// way: the same slots, their strings' texts alike (whether kept as
/// written or decoded).
impl PartialEq for Tape {
    fn eq(&self, other: &Tape) -> bool {
        self.slots.len() == other.slots.len()
            && (0_u32..)
                .zip(self.slots.iter().zip(&other.slots))
                .all(|(at, pair)| match pair {
                    (Slot::Text(..) | Slot::Escaped(..), Slot::Text(..) | Slot::Escaped(..)) => {
                        self.text(at) == other.text(at)
                    }
                    (a, b) => a == b,
                })
    }
}

/// A value as cleaning judges it ([`Normalize::drops`](crate::policy::Normalize::drops)):
/// what [`Tape::without`] shows its judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leaf<'a> {
    Null,
    /// `{}` or `[]`.
    Empty,
    Text(&'a str),
    /// A number, a boolean, or an object or array with something in it.
    Other,
}

#[derive(Debug, Clone, PartialEq)]
enum Slot {
    Null,
    Bool(bool),
    Number(Number),
    /// A string or, in an object, a member's key: where its text is.
    Text(u32, u32),
    /// A string holding escapes, kept as written (checked, not decoded:
    /// most long strings, code and diffs dense with escapes, are only
    /// measured): where it is among the tape's `escaped`, closing quote
    /// included, and how many characters its text holds. Decoded when a
    /// keyword reads it.
    Escaped(u32, u32, u32),
    /// An object: how many members, and the slot past its last. Each
    /// member is its key's slot, then its value's.
    Object(u32, u32),
    /// An array: how many items, and the slot past its last.
    Array(u32, u32),
}

/// The most slots a thread keeps room for between calls.
const MAX_SCRATCH: usize = 4096;

/// The most text a thread keeps room for between calls.
const MAX_SCRATCH_TEXT: usize = 1 << 20;

thread_local! {
    /// Each thread's buffers while arguments are read, kept between calls:
    /// a tape takes its own slots and text at their size.
    static SCRATCH: std::cell::RefCell<Scratch> = const {
        std::cell::RefCell::new(Scratch {
            slots: Vec::new(),
            text: Vec::new(),
            escaped: String::new(),
            keys: Vec::new(),
        })
    };
}

#[derive(Default)]
struct Scratch {
    slots: Vec<Slot>,
    text: Vec<u8>,
    escaped: String,
    /// The keys of the objects still open: where each is in the text.
    keys: Vec<(u32, u32)>,
}

impl Scratch {
    /// The tape of the first `written` bytes of the text, when `ok`; the
    /// buffers go back to the thread unless they grew past the bounds.
    fn finish(mut self, ok: bool, written: usize) -> Option<Tape> {
        let tape = ok
            .then(|| utf8(&self.text[..written]))
            .flatten()
            .map(CompactString::from)
            .map(|text| Tape {
                slots: self.slots.as_slice().into(),
                text,
                escaped: self.escaped.as_str().into(),
            });
        if self.slots.capacity() <= MAX_SCRATCH
            && self.keys.capacity() <= MAX_SCRATCH
            && self.text.len() <= MAX_SCRATCH_TEXT
            && self.escaped.capacity() <= MAX_SCRATCH_TEXT
        {
            self.slots.clear();
            self.keys.clear();
            self.escaped.clear();
            // The text is kept at its length: it is written over, never
            // filled again.
            SCRATCH.with_borrow_mut(|scratch| *scratch = self);
        }
        tape
    }

    /// Write `bytes` into the text at `from` (growing it as needed): the
    /// slot of the string there.
    fn put_text(&mut self, from: usize, bytes: &[u8]) -> Option<Slot> {
        let end = from + bytes.len();
        if self.text.len() < end {
            self.text.resize(end.max(2 * self.text.len()), 0);
        }
        self.text[from..end].copy_from_slice(bytes);
        Some(Slot::Text(
            u32::try_from(from).ok()?,
            u32::try_from(bytes.len()).ok()?,
        ))
    }
}

/// Why [`Tape::read_or_refused`] gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// An object holds a key twice, or two keys a reader that ignores case
    /// reads as one: the strict reader refuses the text too.
    Twin,
    /// Anything else: the strict reader says what the text is.
    Other,
}

impl Tape {
    /// Read arguments `text` (an object); `None` when the strict reader
    /// must.
    pub(crate) fn read(text: &str, max_depth: usize) -> Option<Tape> {
        Tape::read_or_refused(text, max_depth).ok()
    }

    /// [`read`](Self::read), saying why it gave up: [`Refused::Twin`] when
    /// an object holds a key twice (to a reader that ignores case too),
    /// which the strict reader refuses as well.
    pub(crate) fn read_or_refused(text: &str, max_depth: usize) -> Result<Tape, Refused> {
        let mut read = Read::new(text, max_depth).ok_or(Refused::Other)?;
        read.space();
        let ok = read.peek() == Some(b'{') && read.value::<false>().is_some() && read.at_end();
        read.finish_or_refused(ok)
    }

    /// Arguments given as a JSON object inside a document (an Anthropic
    /// `input`), read onto a tape as the document is read: `text` starts
    /// at its opening brace, and `room` is how many levels of nesting the
    /// document has left. The tape and the bytes the object takes; why
    /// not when [`read`](Self::read) gives up on the object's text or the
    /// document's nesting bound would be passed.
    #[inline(never)] // (a stage of its own in bench/callgrind_split.py)
    pub(crate) fn read_object(
        text: &str,
        max_depth: usize,
        room: usize,
    ) -> Result<(Tape, usize), Refused> {
        let mut read = Read::new(text, max_depth).ok_or(Refused::Other)?;
        read.depth_left = read.depth_left.min(room);
        let ok = read.peek() == Some(b'{') && read.value::<false>().is_some();
        let used = read.at;
        read.finish_or_refused(ok).map(|tape| (tape, used))
    }

    /// Arguments given as a JSON string whose text is a JSON object (an
    /// OpenAI `arguments` string), read onto a tape straight from the
    /// string as written, its escapes decoded on the way rather than
    /// before: `text` starts at the string's opening quote. The tape and
    /// the bytes the string takes, quotes included. The tape is exactly
    /// the one [`read`](Self::read) makes of the string's text; why not when
    /// that one gives up, when the string is not valid JSON, or when it
    /// escapes what it need not: the text's structure written with
    /// escapes other than `\"` and white space, a `\uXXXX` of the string
    /// standing for a quote, a backslash or a control character of the
    /// text (the string is then decoded and its text read, which says
    /// exactly what is wrong).
    #[inline(never)] // (a stage of its own in bench/callgrind_split.py)
    pub(crate) fn read_quoted(text: &str, max_depth: usize) -> Result<(Tape, usize), Refused> {
        if !text.starts_with('"') {
            return Err(Refused::Other);
        }
        let mut read = Read::new(text, max_depth).ok_or(Refused::Other)?;
        read.at = 1;
        read.quoted_space();
        let ok = read.peek() == Some(b'{') && read.value::<true>().is_some() && {
            read.quoted_space();
            read.peek() == Some(b'"')
        };
        let used = read.at + 1;
        read.finish_or_refused(ok).map(|tape| (tape, used))
    }

    /// Whether its containers nest within `max_depth` as a tape read with
    /// that bound does (its [`depth`](Self::depth) two less at most); a
    /// tape of so few slots that they could not nest deeper is not walked.
    pub(crate) fn within_depth(&self, max_depth: usize) -> bool {
        self.slots.len() + 2 <= max_depth || self.depth() + 2 <= max_depth
    }

    /// How deep its containers nest (the object alone: 1). A tape read
    /// within a bound holds no more than that bound less two.
    pub(crate) fn depth(&self) -> usize {
        let mut open: Vec<u32> = Vec::new();
        let mut deepest = 0;
        for (at, slot) in (0_u32..).zip(&self.slots) {
            while open.last().is_some_and(|end| *end <= at) {
                open.pop();
            }
            if let Slot::Object(_, end) | Slot::Array(_, end) = slot {
                open.push(*end);
                deepest = deepest.max(open.len());
            }
        }
        deepest
    }

    /// The object.
    pub(crate) fn root(&self) -> TapeNode<'_> {
        TapeNode::new(self, 0)
    }

    /// The `serde_json` object the tape holds.
    pub(crate) fn to_map(&self) -> Map<String, Value> {
        match self.value(0) {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    fn value(&self, at: u32) -> Value {
        match &self.slots[at as usize] {
            Slot::Null => Value::Null,
            Slot::Bool(b) => Value::Bool(*b),
            Slot::Number(n) => Value::Number(n.clone()),
            Slot::Text(..) | Slot::Escaped(..) => Value::String(self.text(at).into_owned()),
            Slot::Object(n, _) => {
                let mut map = Map::with_capacity(*n as usize);
                for (key, value) in self.members(at) {
                    map.insert(self.key(key).to_owned(), self.value(value));
                }
                Value::Object(map)
            }
            Slot::Array(n, _) => {
                let mut list = Vec::with_capacity(*n as usize);
                list.extend(self.elements(at).map(|item| self.value(item)));
                Value::Array(list)
            }
        }
    }

    /// The text of the string at `at`, decoded when it was kept as
    /// written.
    fn text(&self, at: u32) -> Cow<'_, str> {
        match self.slots[at as usize] {
            Slot::Escaped(start, len, _) => {
                let written = &self.escaped.as_bytes()[start as usize..(start + len) as usize];
                // (Checked when read, and `scan` refuses what the decoder
                // refuses: never `None`.)
                Cow::Owned(decoded(written).map(|(_, text)| text).unwrap_or_default())
            }
            _ => Cow::Borrowed(self.key(at)),
        }
    }

    /// The text of the key (or string without escapes) at `at`.
    fn key(&self, at: u32) -> &str {
        match self.slots[at as usize] {
            Slot::Text(start, len) => &self.text[start as usize..(start + len) as usize],
            _ => "",
        }
    }

    /// How many characters the string at `at` holds.
    fn chars(&self, at: u32) -> usize {
        match self.slots[at as usize] {
            Slot::Escaped(_, _, chars) => chars as usize,
            _ => chars(self.key(at)),
        }
    }

    /// Whether the values at `a` and `b` are one value as JSON Schema
    /// compares them (`cmp::equal`): numbers by what they are worth, an
    /// object's members in any order. Objects whose keys come in the same
    /// order are compared member by member; others are built and compared
    /// by the crate, whose maps find each key at once (a walk of one
    /// object's members for each of the other's would be quadratic).
    fn equal(&self, a: u32, b: u32) -> bool {
        match (&self.slots[a as usize], &self.slots[b as usize]) {
            (Slot::Null, Slot::Null) => true,
            (Slot::Bool(x), Slot::Bool(y)) => x == y,
            (Slot::Number(x), Slot::Number(y)) => cmp::equal_numbers(x, y),
            (Slot::Text(..) | Slot::Escaped(..), Slot::Text(..) | Slot::Escaped(..)) => {
                self.text(a) == self.text(b)
            }
            (Slot::Array(x, _), Slot::Array(y, _)) => {
                x == y
                    && self
                        .elements(a)
                        .zip(self.elements(b))
                        .all(|(x, y)| self.equal(x, y))
            }
            (Slot::Object(x, _), Slot::Object(y, _)) => {
                if x != y {
                    return false;
                }
                // One pass: a key out of order hands both objects to the
                // crate; a value that differs under the same key (each key
                // is once in an object) settles it.
                for ((k, v), (l, w)) in self.members(a).zip(self.members(b)) {
                    if self.key(k) != self.key(l) {
                        return cmp::equal(&self.value(a), &self.value(b));
                    }
                    if !self.equal(v, w) {
                        return false;
                    }
                }
                true
            }
            _ => false,
        }
    }

    /// The key and value slots of the object at `at`.
    fn members(&self, at: u32) -> Members<'_> {
        let (len, end) = self.container(at);
        Members {
            tape: self,
            next: at + 1,
            left: len,
            flat: u64::from(end) == u64::from(at) + 1 + 2 * u64::from(len),
        }
    }

    /// The item slots of the array at `at`.
    fn elements(&self, at: u32) -> Elements<'_> {
        let (len, end) = self.container(at);
        Elements {
            tape: self,
            next: at + 1,
            left: len,
            flat: u64::from(end) == u64::from(at) + 1 + u64::from(len),
        }
    }

    fn container(&self, at: u32) -> (u32, u32) {
        match self.slots[at as usize] {
            Slot::Object(len, end) | Slot::Array(len, end) => (len, end),
            _ => (0, at + 1),
        }
    }

    /// The value of member `key` of the object at `at`.
    fn get(&self, at: u32, key: &str) -> Option<u32> {
        self.members(at)
            .find(|(k, _)| self.key(*k) == key)
            .map(|(_, value)| value)
    }

    /// How many members the object has.
    pub(crate) fn len(&self) -> usize {
        self.container(0).0 as usize
    }

    /// The object's keys, in order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &str> {
        self.members(0).map(|(key, _)| self.key(key))
    }

    /// Whether the object has member `key`.
    pub(crate) fn contains_key(&self, key: &str) -> bool {
        self.get(0, key).is_some()
    }

    /// Values in the object, containers included, keys not.
    pub(crate) fn values(&self) -> usize {
        let keys: usize = self
            .slots
            .iter()
            .map(|slot| match slot {
                Slot::Object(len, _) => *len as usize,
                _ => 0,
            })
            .sum();
        self.slots.len() - 1 - keys
    }

    /// The tape without the members and items `drops` says to drop (it
    /// judges each as written, and what is kept is judged in turn); `None`
    /// when it drops none.
    pub(crate) fn without(&self, drops: &impl Fn(Leaf<'_>) -> bool) -> Option<Tape> {
        if !self.drops_within(0, drops) {
            return None;
        }
        let mut slots = Vec::with_capacity(self.slots.len());
        self.copy_without(0, drops, &mut slots);
        Some(Tape {
            slots: slots.into(),
            text: self.text.clone(),
            escaped: self.escaped.clone(),
        })
    }

    /// Whether `drops` drops the value at `at`.
    fn dropped(&self, at: u32, drops: &impl Fn(Leaf<'_>) -> bool) -> bool {
        match self.slots[at as usize] {
            Slot::Null => drops(Leaf::Null),
            Slot::Object(0, _) | Slot::Array(0, _) => drops(Leaf::Empty),
            Slot::Text(..) | Slot::Escaped(..) => drops(Leaf::Text(&self.text(at))),
            _ => drops(Leaf::Other),
        }
    }

    /// Whether `drops` drops anything inside the container at `at`.
    fn drops_within(&self, at: u32, drops: &impl Fn(Leaf<'_>) -> bool) -> bool {
        let within = |value: u32| {
            self.dropped(value, drops)
                || (matches!(
                    self.slots[value as usize],
                    Slot::Object(..) | Slot::Array(..)
                ) && self.drops_within(value, drops))
        };
        match self.slots[at as usize] {
            Slot::Object(..) => self.members(at).any(|(_, value)| within(value)),
            Slot::Array(..) => self.elements(at).any(within),
            _ => false,
        }
    }

    /// The value at `at` onto `out`, without what `drops` drops.
    fn copy_without(&self, at: u32, drops: &impl Fn(Leaf<'_>) -> bool, out: &mut Vec<Slot>) {
        let start = out.len();
        let slot = &self.slots[at as usize];
        out.push(slot.clone());
        let len = match slot {
            Slot::Object(..) => {
                let mut len = 0;
                for (key, value) in self.members(at) {
                    if !self.dropped(value, drops) {
                        out.push(self.slots[key as usize].clone());
                        self.copy_without(value, drops, out);
                        len += 1;
                    }
                }
                len
            }
            Slot::Array(..) => {
                let mut len = 0;
                for item in self.elements(at) {
                    if !self.dropped(item, drops) {
                        self.copy_without(item, drops, out);
                        len += 1;
                    }
                }
                len
            }
            _ => return,
        };
        // Never past u32: the tape it is copied from has more slots.
        let end = u32::try_from(out.len()).unwrap_or(u32::MAX);
        out[start] = match slot {
            Slot::Object(..) => Slot::Object(len, end),
            _ => Slot::Array(len, end),
        };
    }
}

/// The tape written as the JSON object it holds, as its `serde_json`
/// object would be written: the same members in the same order.
impl serde::Serialize for Tape {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        At(self, 0).serialize(serializer)
    }
}

/// The value at a slot of a tape, to be written.
struct At<'t>(&'t Tape, u32);

impl serde::Serialize for At<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        let At(tape, at) = *self;
        match &tape.slots[at as usize] {
            Slot::Null => serializer.serialize_unit(),
            Slot::Bool(b) => serializer.serialize_bool(*b),
            Slot::Number(n) => n.serialize(serializer),
            Slot::Text(..) | Slot::Escaped(..) => serializer.serialize_str(&tape.text(at)),
            Slot::Object(len, _) => {
                let mut map = serializer.serialize_map(Some(*len as usize))?;
                for (key, value) in tape.members(at) {
                    map.serialize_entry(tape.key(key), &At(tape, value))?;
                }
                map.end()
            }
            Slot::Array(len, _) => {
                let mut list = serializer.serialize_seq(Some(*len as usize))?;
                for item in tape.elements(at) {
                    list.serialize_element(&At(tape, item))?;
                }
                list.end()
            }
        }
    }
}

struct Members<'t> {
    tape: &'t Tape,
    next: u32,
    left: u32,
    /// No value is an object or an array: each member is two slots.
    flat: bool,
}

impl Iterator for Members<'_> {
    type Item = (u32, u32);

    fn next(&mut self) -> Option<(u32, u32)> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let key = self.next;
        self.next = if self.flat {
            key + 2
        } else {
            past(&self.tape.slots, key + 1)
        };
        Some((key, key + 1))
    }
}

struct Elements<'t> {
    tape: &'t Tape,
    next: u32,
    left: u32,
    /// No item is an object or an array: each is one slot.
    flat: bool,
}

impl Iterator for Elements<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let item = self.next;
        self.next = if self.flat {
            item + 1
        } else {
            past(&self.tape.slots, item)
        };
        Some(item)
    }
}

struct Read<'a> {
    cursor: Cursor<'a>,
    depth_left: usize,
    /// Set when an object was found to hold a key twice.
    twin: bool,
    /// The slots read; the strings read, decoded, in the first `written`
    /// bytes of the text (UTF-8), a buffer past them; the keys of the
    /// objects still open.
    buffers: Scratch,
    written: usize,
}

reads_with_cursor!(Read);

impl Read<'_> {
    /// A value of JSON text: as it is written (`QUOTED` false), or as a
    /// JSON string holding that text writes it (`\"` quoting the text's
    /// strings, its white space escaped).
    fn value<const QUOTED: bool>(&mut self) -> Option<()> {
        self.white::<QUOTED>();
        match self.peek()? {
            b'{' => {
                let (at, base) = self.open()?;
                items_spaced(self, b'}', Read::white::<QUOTED>, |read| {
                    read.text::<QUOTED>()?;
                    read.key_read();
                    read.white::<QUOTED>();
                    read.literal(":")?;
                    read.value::<QUOTED>()
                })?;
                self.close_object(at, base)
            }
            b'[' => {
                let (at, _) = self.open()?;
                let mut len = 0_u32;
                items_spaced(self, b']', Read::white::<QUOTED>, |read| {
                    read.value::<QUOTED>()?;
                    len += 1;
                    // Numbers each right after a comma, as compact text
                    // writes an array of them: read in a loop of their
                    // own, as the items' loop would read them.
                    while read.bytes.get(read.at) == Some(&b',')
                        && matches!(read.bytes.get(read.at + 1), Some(b'-' | b'0'..=b'9'))
                    {
                        read.at += 1;
                        let number = read.number_value()?;
                        read.buffers.slots.push(Slot::Number(number));
                        len += 1;
                    }
                    Some(())
                })?;
                self.close_array(at, len)
            }
            b'"' | b'\\' if QUOTED => self.quoted_string(),
            b'"' => self.string_value(),
            _ => self.scalar(),
        }
    }

    /// The text's white space, as [`value`](Self::value) reads it.
    fn white<const QUOTED: bool>(&mut self) {
        if QUOTED {
            self.quoted_space();
        } else {
            self.space();
        }
    }

    /// A string of the text, as [`value`](Self::value) reads it.
    fn text<const QUOTED: bool>(&mut self) -> Option<()> {
        if QUOTED {
            self.quoted_string()
        } else {
            self.string()
        }
    }

    fn new(text: &str, max_depth: usize) -> Option<Read<'_>> {
        Some(Read {
            cursor: Cursor::new(text),
            // The strict reader's bound, with a level to spare.
            depth_left: max_depth.checked_sub(2)?,
            twin: false,
            buffers: SCRATCH.with_borrow_mut(std::mem::take),
            written: 0,
        })
    }

    /// The tape read, when `ok`, else why not; the buffers go back to the
    /// thread.
    fn finish_or_refused(self, ok: bool) -> Result<Tape, Refused> {
        let twin = self.twin;
        self.finish(ok)
            .ok_or(if twin { Refused::Twin } else { Refused::Other })
    }

    /// The tape read, when `ok`; the buffers go back to the thread.
    fn finish(self, ok: bool) -> Option<Tape> {
        let Read {
            buffers, written, ..
        } = self;
        buffers.finish(ok, written)
    }

    /// An object or array opened (its bracket read): its slot, and where
    /// its keys start.
    fn open(&mut self) -> Option<(usize, usize)> {
        self.depth_left = self.depth_left.checked_sub(1)?;
        self.at += 1;
        let at = self.buffers.slots.len();
        self.buffers.slots.push(Slot::Null);
        Some((at, self.buffers.keys.len()))
    }

    /// The string just read is an object's key.
    fn key_read(&mut self) {
        if let Some(&Slot::Text(start, len)) = self.buffers.slots.last() {
            self.buffers.keys.push((start, len));
        }
    }

    fn close_object(&mut self, at: usize, base: usize) -> Option<()> {
        self.depth_left += 1;
        let end = u32::try_from(self.buffers.slots.len()).ok()?;
        let len = u32::try_from(self.buffers.keys.len() - base).ok()?;
        self.buffers.slots[at] = Slot::Object(len, end);
        if self.unique_keys(base).is_none() {
            self.twin = true;
            return None;
        }
        self.buffers.keys.truncate(base);
        Some(())
    }

    fn close_array(&mut self, at: usize, len: u32) -> Option<()> {
        self.depth_left += 1;
        let end = u32::try_from(self.buffers.slots.len()).ok()?;
        self.buffers.slots[at] = Slot::Array(len, end);
        Some(())
    }

    /// A literal or a number, written alike in a string and out of one.
    fn scalar(&mut self) -> Option<()> {
        let slot = match self.peek()? {
            b'n' => self.literal("null").map(|()| Slot::Null)?,
            b't' => self.literal("true").map(|()| Slot::Bool(true))?,
            b'f' => self.literal("false").map(|()| Slot::Bool(false))?,
            _ => Slot::Number(self.number_value()?),
        };
        self.buffers.slots.push(slot);
        Some(())
    }

    /// Room for `len` more bytes of text.
    fn room(&mut self, len: usize) {
        let end = self.written + len;
        if self.buffers.text.len() < end {
            self.buffers
                .text
                .resize(end.max(2 * self.buffers.text.len()), 0);
        }
    }

    /// The text's bytes from `start` to the cursor, copied as they are.
    /// A short run (most keys and values) is copied as a whole chunk of
    /// [`SHORT`] bytes when the text has them, a copy of fixed length
    /// rather than a call to copy `len` bytes: the bytes past `len` are
    /// written over by what comes next, never read.
    fn copy(&mut self, start: usize) {
        const SHORT: usize = 16;
        let len = self.at - start;
        if len <= SHORT {
            if let Some(chunk) = self.cursor.bytes.get(start..start + SHORT) {
                self.room(SHORT);
                self.buffers.text[self.written..self.written + SHORT].copy_from_slice(chunk);
                self.written += len;
                return;
            }
        }
        self.room(len);
        self.buffers.text[self.written..self.written + len]
            .copy_from_slice(&self.cursor.bytes[start..self.cursor.at]);
        self.written += len;
    }

    /// The string whose text starts at `from` in the text, ended.
    fn text_read(&mut self, from: usize) -> Option<()> {
        self.buffers.slots.push(Slot::Text(
            u32::try_from(from).ok()?,
            u32::try_from(self.written - from).ok()?,
        ));
        Some(())
    }

    // The text of a JSON string read from the string as written: `\"`
    // quotes the text's strings, `\\` starts the text's own escapes.

    /// White space of the text: spaces, and its line feeds, tabs and
    /// carriage returns as the string escapes them.
    fn quoted_space(&mut self) {
        loop {
            match self.peek() {
                Some(b' ') => self.at += 1,
                Some(b'\\') if matches!(self.bytes.get(self.at + 1), Some(b'n' | b't' | b'r')) => {
                    self.at += 2;
                }
                _ => return,
            }
        }
    }

    /// A string of the text, opened by `\"`.
    fn quoted_string(&mut self) -> Option<()> {
        if self.bytes.get(self.at..self.at + 2)? != b"\\\"" {
            return None;
        }
        let start = self.at + 2;
        let from = self.written;
        let (end, len) = decode_with(
            &self.cursor.bytes[start..],
            &mut self.buffers.text,
            from,
            quoted_special,
        )?;
        self.at = start + end + 2;
        self.written += len;
        self.text_read(from)
    }

    /// A string value: as [`string`](Self::string) reads it, but for one
    /// that holds escapes and is long (source code, a diff), which is
    /// checked ([`scan`]) and kept as written, to be decoded only when a
    /// keyword reads its text: most such strings are only measured.
    fn string_value(&mut self) -> Option<()> {
        // Shorter strings are decoded at once: a keyword that reads one
        // (a pattern, an enum) would otherwise decode it on each reading.
        const KEPT_FROM: usize = 64;
        let start = self.at + 1;
        let body = self.bytes.get(start..)?;
        let first = special(body)?;
        if body[first] != b'\\' {
            return self.string_at(start, first);
        }
        let (end, chars) = scan(body)?;
        if end < KEPT_FROM {
            return self.string_at(start, first);
        }
        let escaped = &mut self.buffers.escaped;
        let from = escaped.len();
        // Closing quote included: the text decodes as it stands.
        self.cursor.at = start + end + 1;
        escaped.push_str(self.cursor.text.get(start..self.cursor.at)?);
        self.buffers.slots.push(Slot::Escaped(
            u32::try_from(from).ok()?,
            u32::try_from(end + 1).ok()?,
            u32::try_from(chars).ok()?,
        ));
        Some(())
    }

    /// A string, unescaped as it is scanned, into the text.
    fn string(&mut self) -> Option<()> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.at + 1;
        let first = special(self.bytes.get(start..)?)?;
        self.string_at(start, first)
    }

    /// The string whose text starts at `start`, its first quote, backslash
    /// or control character `first` bytes on, into the text.
    fn string_at(&mut self, start: usize, first: usize) -> Option<()> {
        let body = self.bytes.get(start..)?;
        let from = self.written;
        if body[first] == b'"' {
            self.at = start + first;
            self.copy(start);
            self.at += 1;
        } else {
            let (end, len) = decode(body, &mut self.buffers.text, from)?;
            self.at = start + end + 1;
            self.written += len;
        }
        self.text_read(from)
    }

    /// The number at the cursor, as the strict reader (`serde_json`)
    /// reads it, its digits scanned once: `None` leaves it to that reader.
    fn number_value(&mut self) -> Option<Number> {
        let start = self.at;
        let scanned = Scanned::read(self.cursor.bytes, start)?;
        self.at = scanned.end;
        let literal = || self.cursor.text.get(start..scanned.end);
        if scanned.whole() {
            if scanned.negative && scanned.significand == 0 {
                // The strict reader reads `-0` as the float -0.0.
                return Number::from_f64(-0.0);
            }
            // Nineteen digits never overflow 64 bits.
            if scanned.digits <= 19 {
                let n = scanned.significand;
                return if !scanned.negative {
                    Some(n.into())
                } else if n <= 1 << 63 {
                    // -(2^63) included: i64::MIN.
                    Some((0i64.wrapping_sub_unsigned(n)).into())
                } else {
                    // Past 64 bits: the strict reader's to judge.
                    None
                };
            }
            let literal = literal()?;
            if let Ok(n) = literal.parse::<u64>() {
                return Some(n.into());
            }
            return literal.parse::<i64>().ok().map(Number::from);
        }
        // The float exactly as the strict reader rounds it. (A float
        // written with a point or an exponent is one to the strict reader
        // however large: only an integer past 64 bits is refused there,
        // and it is left to that reader above.)
        let v = match scanned.exact_float() {
            Some(v) => v,
            None => serde_json::from_str::<f64>(literal()?).ok()?,
        };
        Number::from_f64(v)
    }

    /// Whether the keys of the object read last (from `base` on) are
    /// such that no two are one key, even to a reader that ignores case
    /// ([`case_twin`](super::args::case_twin)): `None` leaves it to the
    /// strict reader to say which.
    fn unique_keys(&self, base: usize) -> Option<()> {
        unique_keys(&self.buffers.keys[base..], &self.buffers.text)
    }
}

/// Whether no two of `keys` (where each is in `text`) are one key, even to
/// a reader that ignores case.
fn unique_keys(keys: &[(u32, u32)], texts: &[u8]) -> Option<()> {
    if keys.len() < 2 {
        return Some(());
    }
    let text = |(start, len): (u32, u32)| &texts[start as usize..(start + len) as usize];
    // ASCII keys without NUL: a reader that ignores case reads two as
    // one exactly when they are equal but for the case of letters.
    if keys.len() <= 16 && keys.iter().all(|&key| plain_ascii_in(texts, key)) {
        for (i, &key) in keys.iter().enumerate() {
            let twin = keys[i + 1..]
                .iter()
                .any(|&other| other.1 == key.1 && text(other).eq_ignore_ascii_case(text(key)));
            if twin {
                return None;
            }
        }
        return Some(());
    }
    let stable = keys.iter().all(|&key| super::args::case_stable(text(key)));
    let mut seen = std::collections::HashSet::with_capacity(keys.len());
    for &key in keys {
        let key = text(key);
        let folded = if stable {
            Cow::Borrowed(key)
        } else {
            Cow::Owned(super::args::fold_key(std::str::from_utf8(key).ok()?).into_bytes())
        };
        if !seen.insert(folded) {
            return None;
        }
    }
    Some(())
}

const ONES: u64 = 0x0101_0101_0101_0101;

/// Eight bytes' high bits where a byte is past ASCII, or (borrowed
/// through) a NUL.
fn odd(word: u64) -> u64 {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    (word | (word.wrapping_sub(ONES) & !word)) & HIGH
}

fn word(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes.try_into().unwrap_or([0; 8]))
}

/// [`plain_ascii`] of the key `(start, len)` of `texts`: a key shorter
/// than eight bytes is read as the eight bytes from its start when
/// `texts` has them, those past it taken as plain, rather than byte by
/// byte.
fn plain_ascii_in(texts: &[u8], (start, len): (u32, u32)) -> bool {
    let (start, len) = (start as usize, len as usize);
    if len < 8 {
        if let Some(bytes) = texts.get(start..start + 8) {
            let mine = (1_u64 << (8 * len)) - 1;
            return odd((word(bytes) & mine) | (ONES & !mine)) == 0;
        }
    }
    plain_ascii(&texts[start..start + len])
}

/// Whether `key` is ASCII without NUL, eight bytes at a time.
fn plain_ascii(key: &[u8]) -> bool {
    if key.len() < 8 {
        return key.iter().all(|&b| b != 0 && b < 0x80);
    }
    let mut chunks = key.chunks_exact(8);
    let mut found = (&mut chunks).fold(0, |found, chunk| found | odd(word(chunk)));
    if !chunks.remainder().is_empty() {
        // The last eight bytes, over some already seen.
        found |= odd(word(&key[key.len() - 8..]));
    }
    found == 0
}

/// What a JSON string holding JSON text says where a run of the text's
/// string stops: `\"` ends the text's string, `\\` starts the text's
/// escape ([`text_escape`]). A quote (the holding string ends inside the
/// text's string), a control character, a line feed or other control
/// character the string escapes (the text's string would hold it as it
/// is), and a `\uXXXX` of the string standing for a quote, a backslash
/// or a control character are not taken.
fn quoted_special(at: &[u8]) -> Option<Special> {
    if at[0] != b'\\' {
        return None;
    }
    match *at.get(1)? {
        b'"' => Some(Special::End),
        b'\\' => {
            let after = at.get(2..)?;
            if let byte @ (b'/' | b'b' | b'f' | b'n' | b'r' | b't') = *after.first()? {
                return Some(Special::Byte(SIMPLE[usize::from(byte)], 3));
            }
            let (decoded, used) = text_escape(after)?;
            Some(Special::Char(decoded, 2 + used))
        }
        b'/' => Some(Special::Byte(b'/', 2)),
        b'u' => {
            let (decoded, used) = escape(&at[1..])?;
            if matches!(decoded, '"' | '\\') || decoded < ' ' {
                return None;
            }
            Some(Special::Char(decoded, 1 + used))
        }
        _ => None,
    }
}

/// The slot past the value at `at` of `slots`.
fn past(slots: &[Slot], at: u32) -> u32 {
    match slots[at as usize] {
        Slot::Object(_, end) | Slot::Array(_, end) => end,
        _ => at + 1,
    }
}

/// A scalar as the `jsonschema` crate compares two (`enum`, `const`,
/// `uniqueItems`): one exactly when the crate finds them equal. Numbers
/// are by their value, whatever their type: a whole number (`1`, `1.0`,
/// `-0.0`, `1e2`) by the integer it is, any other by its float's bits.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Scalar<'a> {
    Null,
    Bool(bool),
    Whole(i128),
    Fraction(u64),
    Text(Cow<'a, str>),
}

impl Scalar<'_> {
    fn number(n: &Number) -> Scalar<'static> {
        // 2^64: every float below it that is whole is an `i128` exactly.
        const PAST_U64: f64 = 18_446_744_073_709_551_616.0;
        if let Some(n) = n.as_u64() {
            Scalar::Whole(n.into())
        } else if let Some(n) = n.as_i64() {
            Scalar::Whole(n.into())
        } else {
            let float = n.as_f64().unwrap_or(f64::NAN);
            if float.fract() == 0.0 && float.abs() < PAST_U64 {
                #[allow(clippy::cast_possible_truncation)]
                Scalar::Whole(float as i128)
            } else {
                Scalar::Fraction(float.to_bits())
            }
        }
    }
}

impl Tape {
    /// The slot at `at` as [`Scalar`], `None` for an object or an array.
    fn scalar(&self, at: u32) -> Option<Scalar<'_>> {
        Some(match &self.slots[at as usize] {
            Slot::Null => Scalar::Null,
            Slot::Bool(b) => Scalar::Bool(*b),
            Slot::Number(n) => Scalar::number(n),
            Slot::Text(..) | Slot::Escaped(..) => Scalar::Text(self.text(at)),
            Slot::Object(..) | Slot::Array(..) => return None,
        })
    }
}

/// Whether no two of `items` are equal: sorted, no two neighbours are.
fn apart_when_sorted<T: Ord>(items: &mut [T]) -> bool {
    items.sort_unstable();
    items.windows(2).all(|pair| pair[0] != pair[1])
}

/// Whether no two of `items` are equal, when every one is a whole number
/// an `i64` holds (`1`, `1.0`, `1e2` and `-0.0` alike, as
/// [`Scalar::Whole`]); `None` when one is not. Numbers within a span of
/// [`WHOLES_IN_BITS`] are marked in a set of bits, one pass; others are
/// sorted.
fn wholes_apart(tape: &Tape, items: impl Iterator<Item = u32>) -> Option<bool> {
    let mut wholes: smallvec::SmallVec<[i64; 64]> = smallvec::SmallVec::new();
    let (mut least, mut most) = (i64::MAX, i64::MIN);
    for item in items {
        let Some(Scalar::Whole(n)) = tape.scalar(item) else {
            return None;
        };
        let n = i64::try_from(n).ok()?;
        least = least.min(n);
        most = most.max(n);
        wholes.push(n);
    }
    if most.abs_diff(least) >= WHOLES_IN_BITS {
        return Some(apart_when_sorted(&mut wholes));
    }
    let mut seen = [0u64; (WHOLES_IN_BITS / 64) as usize];
    Some(wholes.iter().all(|&n| {
        let offset = n.abs_diff(least);
        let (word, bit) = ((offset / 64) as usize, 1u64 << (offset % 64));
        let fresh = seen[word] & bit == 0;
        seen[word] |= bit;
        fresh
    }))
}

/// The widest span of whole numbers [`wholes_apart`] marks in bits
/// (1 KiB of them) rather than sorts.
const WHOLES_IN_BITS: u64 = 8192;

/// Arguments on a tape, as the `jsonschema` crate reads a JSON
/// representation.
pub(crate) struct TapeJson;

/// A value on a tape, and its slot (found once: a schema's keywords
/// each look at it).
#[derive(Clone, Copy)]
pub(crate) struct TapeNode<'a> {
    tape: &'a Tape,
    at: u32,
    slot: &'a Slot,
}

/// An object or an array on a tape.
#[derive(Clone, Copy)]
pub(crate) struct TapeContainer<'a>(TapeNode<'a>);

impl Json for TapeJson {
    type Node<'a> = TapeNode<'a>;
    type PreparedKey = Box<str>;
    type StringBuffer = Tape;

    // A lookup is a walk over the members: a members pass is never dearer.
    const KEYS_PER_LOOKUP: usize = 1 << 16;

    fn prepare_key(key: &str) -> Box<str> {
        key.into()
    }

    fn with_string_node<T>(
        buffer: &mut Tape,
        string: &str,
        f: impl FnOnce(TapeNode<'_>) -> T,
    ) -> T {
        buffer.text.clear();
        buffer.text.push_str(string);
        let slot = Slot::Text(0, u32::try_from(string.len()).unwrap_or(u32::MAX));
        // One slot, written over each time.
        match &mut *buffer.slots {
            [only] => *only = slot,
            _ => buffer.slots = Box::new([slot]),
        }
        f(TapeNode::new(buffer, 0))
    }
}

impl<'a> TapeNode<'a> {
    fn new(tape: &'a Tape, at: u32) -> TapeNode<'a> {
        TapeNode {
            tape,
            at,
            slot: tape.slots.get(at as usize).unwrap_or(&Slot::Null),
        }
    }

    fn slot(&self) -> &'a Slot {
        self.slot
    }
}

impl<'a> Node<'a, TapeJson> for TapeNode<'a> {
    type Object = TapeContainer<'a>;
    type Array = TapeContainer<'a>;
    type Number = &'a Number;

    fn as_object(&self) -> Option<TapeContainer<'a>> {
        matches!(self.slot(), Slot::Object(..)).then_some(TapeContainer(*self))
    }

    fn as_array(&self) -> Option<TapeContainer<'a>> {
        matches!(self.slot(), Slot::Array(..)).then_some(TapeContainer(*self))
    }

    fn as_string(&self) -> Option<Cow<'a, str>> {
        matches!(self.slot(), Slot::Text(..) | Slot::Escaped(..)).then(|| self.tape.text(self.at))
    }

    fn string_length(&self) -> Option<u64> {
        // (A count past u64, which no text reaches, as the longest: never
        // `None`, which the crate reads as no string at all.)
        matches!(self.slot(), Slot::Text(..) | Slot::Escaped(..))
            .then(|| u64::try_from(self.tape.chars(self.at)).unwrap_or(u64::MAX))
    }

    fn as_number(&self) -> Option<&'a Number> {
        match self.slot() {
            Slot::Number(n) => Some(n),
            _ => None,
        }
    }

    fn as_boolean(&self) -> Option<bool> {
        match self.slot() {
            Slot::Bool(b) => Some(*b),
            _ => None,
        }
    }

    fn is_null(&self) -> bool {
        matches!(self.slot(), Slot::Null)
    }

    fn json_type(&self) -> JsonType {
        match self.slot() {
            Slot::Null => JsonType::Null,
            Slot::Bool(_) => JsonType::Boolean,
            Slot::Number(_) => JsonType::Number,
            Slot::Text(..) | Slot::Escaped(..) => JsonType::String,
            Slot::Object(..) => JsonType::Object,
            Slot::Array(..) => JsonType::Array,
        }
    }

    fn equals_value(&self, expected: &Value) -> bool {
        match (self.slot(), expected) {
            (Slot::Null, Value::Null) => true,
            (Slot::Bool(b), Value::Bool(e)) => b == e,
            (Slot::Text(..) | Slot::Escaped(..), Value::String(e)) => {
                self.tape.text(self.at) == e.as_str()
            }
            (Slot::Number(n), Value::Number(e)) => cmp::equal_numbers(n, e),
            (Slot::Object(..), Value::Object(_)) | (Slot::Array(..), Value::Array(_)) => {
                cmp::equal(&self.tape.value(self.at), expected)
            }
            _ => false,
        }
    }

    fn to_value(&self) -> Cow<'a, Value> {
        Cow::Owned(self.tape.value(self.at))
    }

    fn identity(&self) -> Option<NodeIdentity> {
        Some(NodeIdentity::tagged(
            std::ptr::from_ref(self.tape) as usize,
            self.at,
        ))
    }
}

/// The members of an object on a tape.
pub(crate) struct TapeMembers<'a> {
    tape: &'a Tape,
    members: Members<'a>,
}

impl<'a> Iterator for TapeMembers<'a> {
    type Item = (&'a str, TapeNode<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let (key, value) = self.members.next()?;
        Some((self.tape.key(key), TapeNode::new(self.tape, value)))
    }
}

/// The items of an array on a tape.
pub(crate) struct TapeItems<'a> {
    tape: &'a Tape,
    items: Elements<'a>,
}

impl<'a> Iterator for TapeItems<'a> {
    type Item = TapeNode<'a>;

    fn next(&mut self) -> Option<TapeNode<'a>> {
        let at = self.items.next()?;
        Some(TapeNode::new(self.tape, at))
    }
}

impl<'a> Object<'a, TapeJson> for TapeContainer<'a> {
    type Node = TapeNode<'a>;
    type MemberName = &'a str;
    type MembersIter = TapeMembers<'a>;

    fn len(&self) -> usize {
        self.0.tape.container(self.0.at).0 as usize
    }

    fn get(&self, key: &Box<str>) -> Option<TapeNode<'a>> {
        let tape = self.0.tape;
        tape.get(self.0.at, key).map(|at| TapeNode::new(tape, at))
    }

    fn members(&self) -> TapeMembers<'a> {
        TapeMembers {
            tape: self.0.tape,
            members: self.0.tape.members(self.0.at),
        }
    }
}

impl<'a> Array<'a, TapeJson> for TapeContainer<'a> {
    type Node = TapeNode<'a>;
    type ElementsIter = TapeItems<'a>;

    fn len(&self) -> usize {
        self.0.tape.container(self.0.at).0 as usize
    }

    fn elements(&self) -> TapeItems<'a> {
        TapeItems {
            tape: self.0.tape,
            items: self.0.tape.elements(self.0.at),
        }
    }

    /// Whole numbers, however many, as integers ([`wholes_apart`]);
    /// other items compared on the tape, each with the ones after it, for
    /// as many items as the crate compares so itself; a longer array of
    /// scalars sorted by what each item is to the comparison, and any
    /// other built and hashed by the crate.
    fn is_unique(&self) -> bool {
        const PAIRWISE: usize = 15;
        let tape = self.0.tape;
        let items = || tape.elements(self.0.at);
        if Array::len(self) < 2 {
            return true;
        }
        if let Some(apart) = wholes_apart(tape, items()) {
            return apart;
        }
        if Array::len(self) <= PAIRWISE {
            let items: smallvec::SmallVec<[u32; PAIRWISE]> = items().collect();
            return items
                .iter()
                .enumerate()
                .all(|(i, &item)| items[i + 1..].iter().all(|&other| !tape.equal(item, other)));
        }
        let scalars: Option<smallvec::SmallVec<[Scalar<'_>; 64]>> =
            items().map(|item| tape.scalar(item)).collect();
        if let Some(mut scalars) = scalars {
            return apart_when_sorted(&mut scalars);
        }
        let values: Vec<Value> = items().map(|item| tape.value(item)).collect();
        jsonschema::json::unique::is_unique(&values)
    }
}

#[cfg(test)]
mod tests {
    use super::{plain_ascii, plain_ascii_in, unique_keys};
    use crate::detect::args::fast_path_agrees;
    use crate::detect::cursor::{digit_run, Scanned};
    use crate::Limits;

    /// A JSON number from its parts: sign, integral digits, fraction
    /// digits, exponent (its letter, sign and digits).
    fn literal(negative: bool, integral: &str, fraction: &str, exponent: &str) -> String {
        let integral = integral.trim_start_matches('0');
        let integral = if integral.is_empty() { "0" } else { integral };
        let sign = if negative { "-" } else { "" };
        let fraction = if fraction.is_empty() {
            String::new()
        } else {
            format!(".{fraction}")
        };
        format!("{sign}{integral}{fraction}{exponent}")
    }

    #[test]
    fn numbers_on_the_tape_are_the_strict_readers() {
        let literals = [
            "0",
            "-0",
            "-0.0",
            "0.0",
            "0e0",
            "-0e5",
            "1",
            "-1",
            "40.0",
            "4e1",
            "4E+1",
            "1.5e2",
            "2.5E-3",
            "9007199254740992.0",
            "9007199254740993.0",
            "9007199254740993",
            "1e22",
            "1e23",
            "1e-22",
            "1e-23",
            "123456789012345678.5",
            "0.1",
            "0.30000000000000004",
            "1.7976931348623157e308",
            "1e400",
            "-1e400",
            "1e-400",
            "5e-324",
            "0.000001e-10",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "-9223372036854775809",
            "18446744073709551615",
            "18446744073709551616",
            "9999999999999999999",
            "99999999999999999999",
            "1e0019",
            "12.5e+0007",
            "0.00000000000000000000000000001",
            "0.000000000000000000000000000015e+25",
            // Hard to round: halfway cases, the smallest normal float,
            // the largest and past it, subnormals, long digit strings.
            "2.2250738585072011e-308",
            "2.2250738585072012e-308",
            "4.9406564584124654e-324",
            "2.4703282292062328e-324",
            "1.7976931348623157e308",
            "1.7976931348623158e308",
            "1.7976931348623159e308",
            "9007199254740993.0000000000000000001",
            "7.2057594037927933e16",
            "1.00000000000000011102230246251565404236316680908203125",
            "1.602176634e-19",
            "6.02214076e+23",
            "123456789012345678901234567890e-40",
        ];
        // What the strict reader refuses (infinite, or an integer past 64
        // bits): the tape leaves it to that reader. Every other number is
        // read onto the tape, so arguments holding it are read once.
        let refused = [
            "1e400",
            "-1e400",
            "1.7976931348623159e308",
            "-9223372036854775809",
            "18446744073709551616",
            "99999999999999999999",
        ];
        for literal in literals {
            let text = format!("{{\"n\": [{literal}, {literal}], \"m\": {literal}}}");
            assert_eq!(
                fast_path_agrees(&text, &Limits::default()),
                Ok(!refused.contains(&literal)),
                "{text}"
            );
            let scanned = Scanned::read(literal.as_bytes(), 0).unwrap();
            assert_eq!(scanned.end, literal.len(), "{literal}");
            if let Some(float) = scanned.exact_float() {
                let strict: f64 = serde_json::from_str(literal).unwrap();
                assert_eq!(float.to_bits(), strict.to_bits(), "{literal}");
            }
        }
    }

    /// Items alike to `uniqueItems` written apart: numbers of one value in
    /// several spellings and types, and scalars of other types beside
    /// them. Tokens of the array `items` uses, by index.
    const ITEM_TOKENS: [&str; 36] = [
        "0",
        "-2.5",
        "0.0",
        "-0.0",
        "0e5",
        "1",
        "1.0",
        "1e0",
        "10e-1",
        "-1",
        "-1.0",
        "2.5",
        "25e-1",
        "0.25e1",
        "100",
        "1e2",
        "100.000",
        "9007199254740993",
        "9007199254740992",
        "9007199254740992.0",
        "18446744073709551615",
        "-9223372036854775808",
        "0.1",
        "0.10",
        "1e-7",
        "1E-7",
        "\"1\"",
        "\"\"",
        "\"a\"",
        "\"A\"",
        "true",
        "false",
        "null",
        "[]",
        "[1]",
        "{}",
    ];

    #[test]
    fn long_arrays_of_scalars_are_unique_as_the_crate_says() {
        // Sixteen items no two alike: 1, 2.5, 100, 2^53 + 1, 2^53,
        // u64::MAX, i64::MIN, 0.1, 1e-7, "1", "", "a", "A", true, false,
        // null.
        let distinct = [
            5, 11, 14, 17, 18, 20, 21, 22, 24, 26, 27, 28, 29, 30, 31, 32,
        ];
        let with = |more: &[usize]| [&distinct[..], more].concat();
        let cases = [
            (with(&[]), true),
            (with(&[0]), true),
            // 0 and -0.0; 100 and 1e2; 2^53 and 2^53 written as a float;
            // 0.1 and 0.10; 1e-7 and 1E-7; 1 and 10e-1.
            (with(&[0, 3]), false),
            (with(&[15]), false),
            (with(&[19]), false),
            (with(&[23]), false),
            (with(&[25]), false),
            (with(&[8]), false),
            (with(&[6, 10]), false),
            // Arrays and objects among them: the crate's own way.
            (with(&[33, 35, 34]), true),
            (with(&[34, 34]), false),
        ];
        for (tokens, unique) in cases {
            assert_eq!(unique_on_both(&tokens), (unique, unique), "{tokens:?}");
        }
        // Whole numbers only (sorted as integers), in their spellings.
        let wholes: Vec<String> = (1..=40).map(|n| n.to_string()).collect();
        let mut items: Vec<&str> = wholes.iter().map(String::as_str).collect();
        assert_eq!(unique_items_on_both(&items), (true, true));
        for twin in ["17.0", "1.7e1", "170e-1", "40.000"] {
            items.push(twin);
            assert_eq!(unique_items_on_both(&items), (false, false), "{twin}");
            items.pop();
        }
        for other in [
            "-17",
            "17.5",
            "0",
            "18446744073709551615",
            "-9223372036854775808",
        ] {
            items.push(other);
            assert_eq!(unique_items_on_both(&items), (true, true), "{other}");
            items.pop();
        }
    }

    /// Whether the array of `tokens` (indices in [`ITEM_TOKENS`]) is
    /// unique on the tape, and to the crate on `serde_json` values.
    fn unique_on_both(tokens: &[usize]) -> (bool, bool) {
        let items: Vec<&str> = tokens.iter().map(|&i| ITEM_TOKENS[i]).collect();
        unique_items_on_both(&items)
    }

    /// Whether the array of `items` is unique on the tape, and to the
    /// crate on `serde_json` values.
    fn unique_items_on_both(items: &[&str]) -> (bool, bool) {
        use jsonschema::json::{Array as _, Node as _};
        let text = format!("{{\"n\":[{}]}}", items.join(","));
        let tape = super::Tape::read(&text, 64).expect("on the tape");
        let root = tape.root();
        let object = root.as_object().expect("an object");
        let array = jsonschema::json::Object::get(&object, &"n".into())
            .and_then(|n| n.as_array())
            .expect("an array");
        let values: Vec<serde_json::Value> = items
            .iter()
            .map(|item| serde_json::from_str(item).expect("JSON"))
            .collect();
        (
            array.is_unique(),
            jsonschema::json::unique::is_unique(&values),
        )
    }

    proptest::proptest! {
        /// Past the items compared pairwise, an array is unique on the
        /// tape exactly when the crate finds it unique.
        #[test]
        fn arrays_are_unique_as_the_crate_says(
            tokens in proptest::prop_oneof![
                proptest::collection::vec(0..ITEM_TOKENS.len(), 0..40),
                // Each token once: as often unique as not.
                proptest::strategy::Strategy::prop_shuffle(proptest::sample::subsequence(
                    (0..ITEM_TOKENS.len()).collect::<Vec<_>>(),
                    14..30,
                )),
            ],
        ) {
            let (tape, crate_says) = unique_on_both(&tokens);
            proptest::prop_assert_eq!(tape, crate_says, "{:?}", tokens);
        }

        /// An array of whole numbers, in any spelling, is unique on the
        /// tape exactly when the crate finds it unique: short and long,
        /// close together (marked in bits) and far apart (sorted), at
        /// the ends of the integers.
        #[test]
        fn whole_numbers_are_unique_as_the_crate_says(
            base in proptest::prop_oneof![
                proptest::strategy::Just(0_i64),
                -10_000_i64..10_000,
                proptest::strategy::Just(i64::MIN),
                proptest::strategy::Just(i64::MAX - 20_000),
                proptest::strategy::Just((1_i64 << 53) - 10_000),
            ],
            items in proptest::collection::vec(
                (proptest::prop_oneof![0_i64..40, 0_i64..20_000], 0_u8..4),
                0..40,
            ),
        ) {
            let items: Vec<String> = items
                .iter()
                .map(|&(offset, spelling)| {
                    let n = i128::from(base) + i128::from(offset);
                    // (A float of 2^63 or more is left to the strict
                    // reader: the tape is not read.)
                    match spelling {
                        _ if n.abs() >= 1 << 62 => n.to_string(),
                        0 => n.to_string(),
                        1 => format!("{n}.0"),
                        2 => format!("{n}e0"),
                        _ => format!("{}e-1", n * 10),
                    }
                })
                .collect();
            let items: Vec<&str> = items.iter().map(String::as_str).collect();
            let (tape, crate_says) = unique_items_on_both(&items);
            proptest::prop_assert_eq!(tape, crate_says, "{:?}", items);
        }

        /// A run of digits read eight at a time is the run read a digit
        /// at a time, whatever follows it and wherever it starts.
        #[test]
        fn digit_runs_are_read_as_a_digit_at_a_time(
            before in "[0-9a-z.,\\-]{0,3}",
            digits in "[0-9]{0,30}",
            after in proptest::prop_oneof![
                proptest::strategy::Just(String::new()),
                "[^0-9][\\PC]{0,12}",
            ],
            significand in proptest::prop_oneof![proptest::strategy::Just(0_u64), proptest::num::u64::ANY],
        ) {
            let text = format!("{before}{digits}{after}");
            let expected = digits.bytes().fold(significand, |n, d| {
                n.wrapping_mul(10).wrapping_add(u64::from(d - b'0'))
            });
            proptest::prop_assert_eq!(
                digit_run(text.as_bytes(), before.len(), significand),
                (expected, digits.len()),
                "{:?}",
                text
            );
        }

        /// A float taken the short way is the very float the strict
        /// reader reads, bit for bit; and any number, in arguments, is
        /// read onto the tape as the strict reader reads it.
        #[test]
        fn floats_the_short_way_are_the_strict_readers(
            negative in proptest::bool::ANY,
            integral in "[0-9]{1,20}",
            fraction in "[0-9]{0,20}",
            exponent in proptest::prop_oneof![
                proptest::strategy::Just(String::new()),
                "[eE][+-]?[0-9]{1,6}",
            ],
        ) {
            let literal = literal(negative, &integral, &fraction, &exponent);
            let scanned = Scanned::read(literal.as_bytes(), 0).unwrap();
            proptest::prop_assert_eq!(scanned.end, literal.len());
            if let Some(float) = scanned.exact_float() {
                let strict: f64 = serde_json::from_str(&literal).unwrap();
                proptest::prop_assert_eq!(float.to_bits(), strict.to_bits(), "{}", literal);
            }
            let text = format!("{{\"n\": [{literal}]}}");
            let agrees = fast_path_agrees(&text, &Limits::default());
            proptest::prop_assert!(agrees.is_ok(), "{}: {:?}", text, agrees);
        }

        /// Keys are one key exactly when a reader that ignores case reads
        /// two as one, few keys or many (past sixteen, another way).
        #[test]
        fn keys_are_twins_exactly_when_equal_but_for_case(
            keys in proptest::collection::vec("[aAbB_@`]{0,4}", 0..18),
        ) {
            let mut texts = Vec::new();
            let mut at = Vec::new();
            for key in &keys {
                at.push((u32::try_from(texts.len()).unwrap(), u32::try_from(key.len()).unwrap()));
                texts.extend_from_slice(key.as_bytes());
            }
            let twins = keys.iter().enumerate().any(|(i, key)| {
                keys[i + 1..].iter().any(|other| other.eq_ignore_ascii_case(key))
            });
            proptest::prop_assert_eq!(unique_keys(&at, &texts).is_none(), twins);
        }

        /// A short key read in a word with the bytes around it is told
        /// as byte by byte, whatever those bytes are.
        #[test]
        fn short_keys_among_other_bytes_are_told_as_byte_by_byte(
            texts in proptest::collection::vec(proptest::prop_oneof![0_u8..3, 0x7e_u8..0x82, proptest::num::u8::ANY], 0..40),
            start in 0_usize..40,
            len in 0_usize..12,
        ) {
            let start = start.min(texts.len());
            let len = len.min(texts.len() - start);
            let key = &texts[start..start + len];
            let at = (u32::try_from(start).unwrap(), u32::try_from(len).unwrap());
            proptest::prop_assert_eq!(plain_ascii_in(&texts, at), key.iter().all(|&b| b != 0 && b < 0x80));
        }

        /// Eight bytes at a time, a key is plain ASCII exactly when each
        /// of its bytes is.
        #[test]
        fn plain_ascii_keys_are_told_as_byte_by_byte(key in proptest::collection::vec(proptest::prop_oneof![0_u8..3, 0x7e_u8..0x82, proptest::num::u8::ANY], 0..40)) {
            proptest::prop_assert_eq!(plain_ascii(&key), key.iter().all(|&b| b != 0 && b < 0x80));
        }
    }
}
