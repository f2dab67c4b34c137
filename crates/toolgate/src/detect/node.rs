//! A JSON document read once into a borrowed view: every object into
//! [`Obj`], the keys any format reads; nested containers parsed in the same
//! pass into [`Node`]s, and values that may be arguments or result content
//! kept as raw text until a reader asks for them.
//!
//! Keys are read by serde derive, which refuses a duplicated field: an
//! object that says two things is malformed, never read one way here and
//! another way by an executor.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};

use serde::de::value::MapAccessDeserializer;
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::detect::fast::{is_special, special, special_mask, special_mask16};
use crate::detect::limits::{MAX_ENVELOPE_DEPTH, MAX_ENVELOPE_OBJECTS, TOO_MANY_OBJECTS};
use crate::detect::tape::Tape;

thread_local! {
    /// How many envelope objects and arrays the parser is inside, on this
    /// thread.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
    /// How many views ([`Held`]) are alive on this thread: a document's,
    /// and those of the values read from it since. Views are made, read
    /// and dropped within one detection, on its thread.
    static VIEWS: Cell<usize> = const { Cell::new(0) };
}

/// One level of envelope nesting, left when dropped.
struct Level;

impl Level {
    fn enter<E: serde::de::Error>() -> Result<Level, E> {
        DEPTH.with(|depth| {
            if depth.get() >= MAX_ENVELOPE_DEPTH {
                // The wording of serde_json's own bound, so that it is
                // reported as `input_limit_exceeded`.
                return Err(E::custom(format_args!(
                    "recursion limit exceeded: the envelope nests deeper than {MAX_ENVELOPE_DEPTH} levels"
                )));
            }
            depth.set(depth.get() + 1);
            Ok(Level)
        })
    }
}

impl Drop for Level {
    fn drop(&mut self) {
        DEPTH.with(|depth| depth.set(depth.get().saturating_sub(1)));
    }
}

/// Arguments read in passing (an `arguments` string, an `input` object),
/// taken once by the first reading of their call, which names their key.
/// Views compare equal whether or not they were: it is what the raw value
/// says.
#[derive(Default)]
pub(crate) struct ReadInPassing(Cell<Option<ReadArguments>>);

/// What the fast reader read of arguments in passing.
pub(crate) enum ReadArguments {
    /// The arguments of a key (its row of
    /// [`ARGUMENT_KEYS`](crate::detect::positions::ARGUMENT_KEYS)), read
    /// onto a tape.
    Tape(u8, Tape),
    /// An `arguments` string's text, escapes decoded (the tape's reader
    /// gave up).
    Text(Box<str>),
    /// The arguments of a key (its row), which the tape's reader refused
    /// for a key given twice (the strict reader refuses them too): the
    /// text of a string, when its escapes were decoded.
    Twin(u8, Option<Box<str>>),
}

impl ReadArguments {
    /// The arguments of `key` read onto `tape`.
    pub(crate) fn tape(key: &str, tape: Tape) -> Option<ReadArguments> {
        Some(ReadArguments::Tape(Self::row(key)?, tape))
    }

    /// The arguments of `key`, refused by the tape's reader for a key
    /// given twice; `text`, a string's when decoded.
    pub(crate) fn twin(key: &str, text: Option<Box<str>>) -> Option<ReadArguments> {
        Some(ReadArguments::Twin(Self::row(key)?, text))
    }

    /// The row of argument key `key`.
    fn row(key: &str) -> Option<u8> {
        let row = crate::detect::positions::ARGUMENT_KEYS
            .iter()
            .position(|known| *known == key)?;
        u8::try_from(row).ok()
    }

    fn key(&self) -> Option<&'static str> {
        match self {
            ReadArguments::Tape(row, _) | ReadArguments::Twin(row, _) => {
                crate::detect::positions::ARGUMENT_KEYS
                    .get(usize::from(*row))
                    .copied()
            }
            ReadArguments::Text(_) => Some("arguments"),
        }
    }
}

impl ReadInPassing {
    pub(crate) fn new(read: Option<ReadArguments>) -> ReadInPassing {
        ReadInPassing(Cell::new(read))
    }

    /// What was read of the arguments under `key`, if anything.
    pub(crate) fn take(&self, key: &str) -> Option<ReadArguments> {
        let read = self.0.take()?;
        if read.key() == Some(key) {
            return Some(read);
        }
        self.0.set(Some(read));
        None
    }
}

impl std::fmt::Debug for ReadInPassing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReadInPassing")
    }
}

/// A container of an object kept raw (an Anthropic message's `content`, a
/// Responses `output`) that the fast reader read ahead into its node, as
/// [`parse_node`] reads the raw value: its readers read that node rather
/// than parse the value again. Views compare equal whether or not one
/// was: it is what the raw value says.
#[derive(Default)]
pub(crate) struct ReadAhead<'a>(Option<Box<(usize, usize, Node<'a>)>>);

impl<'a> ReadAhead<'a> {
    /// `node`, read from the raw value `raw`.
    pub(crate) fn new(raw: Raw<'a>, node: Node<'a>) -> ReadAhead<'a> {
        ReadAhead(Some(Box::new((where_is(raw), raw.get().len(), node))))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// The node of the raw value `raw`, if it is the one read ahead.
    pub(crate) fn node(&self, raw: Raw<'a>) -> Option<&Node<'a>> {
        self.0
            .as_deref()
            .filter(|(at, len, _)| *at == where_is(raw) && *len == raw.get().len())
            .map(|(_, _, node)| node)
    }
}

/// Where a raw value's text starts: two raw values of one document that
/// start at the same place and are as long are the same value.
fn where_is(raw: Raw<'_>) -> usize {
    raw.get().as_ptr() as usize
}

impl std::fmt::Debug for ReadAhead<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReadAhead")
    }
}

/// Any JSON value, read in one pass: objects as [`Obj`], arrays element by
/// element, and the kind of anything else (which holds no call).
#[derive(Debug)]
pub(crate) enum Node<'a> {
    Object(ObjBox<'a>),
    List(Vec<Node<'a>>),
    Text,
    Null,
    /// A number or a boolean.
    Scalar,
}

impl Node<'_> {
    /// What the value is, for messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Node::Object(_) => "an object",
            Node::List(_) => "an array",
            Node::Text => "a string",
            Node::Null => "null",
            Node::Scalar => "a number or boolean",
        }
    }
}

/// The rare keys of an object: each a [`positions::RARE`] row and its
/// value.
///
/// [`positions::RARE`]: crate::detect::positions::RARE
pub(crate) type RareKeys<'a> = Vec<(u8, Raw<'a>)>;

/// Add a rare key to `rare`; false when the object already holds that key
/// (it says two things).
pub(crate) fn add_rare<'a>(rare: &mut RareKeys<'a>, row: u8, raw: Raw<'a>) -> bool {
    if rare.iter().any(|(r, _)| *r == row) {
        return false;
    }
    rare.push((row, raw));
    true
}

/// An object's view: boxed when it holds a key some reader looks at, and
/// otherwise the one empty view of its thread, so that a payload of many
/// objects no reader looks at (`[{}, {}, ...]`) costs no memory per object.
pub(crate) struct ObjBox<'a>(Option<Held<'a>>);

/// Where a view is kept: on the heap, or in the arena of the document
/// being read ([`crate::detect::views`]), whose memory is used again by
/// the next document rather than allocated and freed view by view.
pub(crate) enum Held<'a> {
    Heap(Box<Obj<'a>>),
    Arena(bumpalo::boxed::Box<'a, Obj<'a>>),
}

impl<'a> Held<'a> {
    /// A view with no key yet, in `arena` when there is one; `None` when
    /// the thread holds [`MAX_ENVELOPE_OBJECTS`] views already.
    pub(crate) fn new(arena: Option<&'a bumpalo::Bump>) -> Option<Held<'a>> {
        Held::count()?;
        Some(match arena {
            Some(arena) => Held::Arena(bumpalo::boxed::Box::new_in(Obj::default(), arena)),
            None => Held::Heap(Box::default()),
        })
    }

    /// `obj` on the heap, or the reader's error past
    /// [`MAX_ENVELOPE_OBJECTS`] views.
    fn heap<E: serde::de::Error>(obj: Obj<'a>) -> Result<Held<'a>, E> {
        match Held::count() {
            Some(()) => Ok(Held::Heap(Box::new(obj))),
            None => Err(E::custom(format_args!(
                "{TOO_MANY_OBJECTS} {MAX_ENVELOPE_OBJECTS} objects"
            ))),
        }
    }

    /// How many views are alive on this thread.
    pub(crate) fn alive() -> usize {
        VIEWS.with(Cell::get)
    }

    /// Count one more view alive on the thread, if it may hold one more.
    fn count() -> Option<()> {
        VIEWS.with(|views| {
            let alive = views.get();
            (alive < MAX_ENVELOPE_OBJECTS).then(|| views.set(alive + 1))
        })
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        VIEWS.with(|views| views.set(views.get().saturating_sub(1)));
    }
}

impl<'a> std::ops::Deref for Held<'a> {
    type Target = Obj<'a>;

    fn deref(&self) -> &Obj<'a> {
        match self {
            Held::Heap(obj) => obj,
            Held::Arena(obj) => obj,
        }
    }
}

impl std::ops::DerefMut for Held<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        match self {
            Held::Heap(obj) => obj,
            Held::Arena(obj) => obj,
        }
    }
}

thread_local! {
    /// The view of an object with no key any reader looks at.
    static EMPTY: &'static Obj<'static> = Box::leak(Box::default());
}

impl<'a> Obj<'a> {
    /// The value of a rare key ([`positions::RARE`]) the object holds.
    ///
    /// [`positions::RARE`]: crate::detect::positions::RARE
    pub(crate) fn rare(&self, key: &str) -> Option<Raw<'a>> {
        let row = crate::detect::positions::rare_row(key)?;
        self.rare_keys
            .iter()
            .find_map(|(r, raw)| (*r == row).then_some(*raw))
    }
}

impl<'a> ObjBox<'a> {
    pub(crate) fn new(obj: Option<Held<'a>>) -> ObjBox<'a> {
        ObjBox(obj)
    }

    /// Whether the object holds a key of the table.
    pub(crate) fn has_keys(&self) -> bool {
        self.0.is_some()
    }
}

impl<'a> std::ops::Deref for ObjBox<'a> {
    type Target = Obj<'a>;

    fn deref(&self) -> &Obj<'a> {
        match &self.0 {
            Some(obj) => obj,
            None => EMPTY.with(|empty| *empty),
        }
    }
}

impl std::fmt::Debug for ObjBox<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

/// The key of [`Obj`]'s table that `key` is another spelling of, to a
/// reader that ignores case (Go's `encoding/json` matches keys that way,
/// and some of its users drop NUL characters): `Name`, `TOOL_CALLS`,
/// `toolcalls`, `name\u0000`, `paramſ`. An executor may read such a key
/// where toolgate reads the table's: the object is refused.
pub(crate) fn variant_of(key: &str) -> Option<&'static str> {
    const LONGEST: usize = 24;
    let mut folded = [0_u8; LONGEST];
    let mut len = 0;
    for c in key.chars() {
        let c = match c {
            '\0' => continue,
            '\u{17f}' => 's',
            '\u{212a}' => 'k',
            c if c.is_ascii() => c.to_ascii_lowercase(),
            _ => return None,
        };
        *folded.get_mut(len)? = c as u8;
        len += 1;
    }
    spelled(&folded[..len]).filter(|known| *known != key)
}

/// The key toolgate reads (of the table, rare, or a stream decoder's) that
/// `key` spells in any case: looked for among the few keys of its
/// [`signature`] only.
pub(crate) fn spelled(key: &[u8]) -> Option<&'static str> {
    if key.is_empty() {
        return None;
    }
    BY_SIGNATURE[signature(key)]
        .iter()
        .find(|known| known.as_bytes().eq_ignore_ascii_case(key))
        .copied()
}

/// Every key toolgate reads, by [`signature`]: a key and each of its
/// spellings in another case share one.
static BY_SIGNATURE: std::sync::LazyLock<Vec<Vec<&'static str>>> = std::sync::LazyLock::new(|| {
    let mut table = vec![Vec::new(); SIGNATURES];
    let keys = crate::detect::fast::KEYS
        .iter()
        .chain(crate::detect::positions::RARE)
        .chain(crate::detect::positions::STREAM_KEYS);
    for key in keys {
        let bucket: &mut Vec<&'static str> = &mut table[signature(key.as_bytes())];
        if !bucket.contains(key) {
            bucket.push(key);
        }
    }
    table
});

/// How many [`signature`]s there are.
const SIGNATURES: usize = 1024;

/// A non-empty key's signature: its first letter in lower case and its
/// length, each within 32. Spellings of a key in another case share it.
const fn signature(key: &[u8]) -> usize {
    ((key[0] | 0x20) as usize & 31) * 32 + (key.len() & 31)
}

/// The keys of an object that any reader looks at.
#[derive(Debug, Default, Deserialize)]
#[allow(non_snake_case)] // the wire's own spellings
pub(crate) struct Obj<'a> {
    #[serde(borrow, rename = "type")]
    pub(crate) kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) id: Option<Raw<'a>>,
    #[serde(borrow)]
    pub(crate) name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) toolName: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) role: Option<Cow<'a, str>>,
    /// `"object": "list"` (an OpenAI list of items).
    #[serde(default)]
    pub(crate) object: IsList,

    // Containers: each holds messages, items, blocks or calls.
    #[serde(borrow)]
    pub(crate) messages: Option<Node<'a>>,
    #[serde(borrow)]
    pub(crate) contents: Option<Node<'a>>,
    #[serde(borrow)]
    pub(crate) choices: Option<Node<'a>>,
    #[serde(borrow)]
    pub(crate) candidates: Option<Node<'a>>,
    #[serde(borrow)]
    pub(crate) message: Option<Node<'a>>,
    #[serde(borrow)]
    pub(crate) delta: Option<Raw<'a>>,
    #[serde(borrow)]
    pub(crate) parts: Option<Node<'a>>,
    #[serde(borrow)]
    pub(crate) steps: Option<Raw<'a>>,
    #[serde(borrow)]
    pub(crate) kwargs: Option<Raw<'a>>,
    #[serde(borrow)]
    pub(crate) additional_kwargs: Option<Raw<'a>>,
    #[serde(borrow)]
    pub(crate) tool_calls: Option<Node<'a>>,
    #[serde(borrow)]
    pub(crate) invalid_tool_calls: Option<Raw<'a>>,
    #[serde(borrow)]
    pub(crate) toolCalls: Option<Node<'a>>,
    #[serde(borrow)]
    pub(crate) toolInvocations: Option<Raw<'a>>,

    // One call or one result each.
    #[serde(borrow)]
    pub(crate) function: Option<Node<'a>>,
    #[serde(borrow)]
    pub(crate) function_call: Option<Raw<'a>>,
    #[serde(borrow)]
    pub(crate) functionCall: Option<Node<'a>>,
    #[serde(borrow)]
    pub(crate) toolUse: Option<Raw<'a>>,
    #[serde(borrow)]
    pub(crate) custom: Option<Raw<'a>>,
    #[serde(borrow)]
    pub(crate) toolInvocation: Option<Raw<'a>>,
    #[serde(borrow)]
    pub(crate) functionResponse: Option<Raw<'a>>,
    #[serde(borrow)]
    pub(crate) function_response: Option<Raw<'a>>,
    #[serde(borrow)]
    pub(crate) toolResult: Option<Raw<'a>>,

    // Raw until read: containers that may also be arguments or result
    // content, arguments, and result content.
    #[serde(borrow)]
    pub(crate) content: Option<Raw<'a>>,
    #[serde(borrow)]
    pub(crate) output: Option<Raw<'a>>,
    #[serde(borrow)]
    pub(crate) input: Option<Raw<'a>>,
    #[serde(borrow)]
    pub(crate) response: Option<Raw<'a>>,
    #[serde(borrow)]
    pub(crate) result: Option<Raw<'a>>,
    #[serde(borrow)]
    pub(crate) data: Option<Raw<'a>>,
    #[serde(borrow)]
    pub(crate) arguments: Option<Raw<'a>>,
    /// Arguments the fast reader read in passing (of `arguments`, or of
    /// `input` or `args` when an object); the first reading of them takes
    /// them.
    #[serde(skip)]
    pub(crate) arguments_read: ReadInPassing,
    /// A container kept raw that the fast reader read ahead.
    #[serde(skip)]
    pub(crate) read_ahead: ReadAhead<'a>,
    #[serde(borrow)]
    pub(crate) params: Option<Raw<'a>>,
    #[serde(borrow)]
    pub(crate) parameters: Option<Raw<'a>>,
    #[serde(borrow)]
    pub(crate) args: Option<Raw<'a>>,
    #[serde(borrow)]
    pub(crate) action: Option<Raw<'a>>,
    #[serde(borrow)]
    pub(crate) error: Option<Raw<'a>>,

    // Ids and status.
    #[serde(borrow)]
    pub(crate) call_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) tool_call_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) tool_use_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) toolCallId: Option<Cow<'a, str>>,
    /// An `mcp_approval_response`'s decision.
    pub(crate) approve: Option<Flag>,
    pub(crate) is_error: Option<bool>,
    pub(crate) isError: Option<bool>,
    #[serde(borrow)]
    pub(crate) status: Option<Raw<'a>>,
    #[serde(borrow)]
    pub(crate) state: Option<Raw<'a>>,
    pub(crate) partialArgs: Option<Seen>,
    pub(crate) willContinue: Option<bool>,

    // Requests and JSON-RPC.
    pub(crate) jsonrpc: Option<Seen>,
    #[serde(borrow)]
    pub(crate) method: Option<Raw<'a>>,
    #[serde(borrow)]
    pub(crate) tools: Option<Raw<'a>>,
    pub(crate) model: Option<Seen>,
    pub(crate) system: Option<Seen>,
    pub(crate) inputSchema: Option<Seen>,
    pub(crate) input_schema: Option<Seen>,
    pub(crate) previous_response_id: Option<Seen>,
    /// The rare keys it holds ([`positions::RARE`] rows, with their
    /// values), in the order they come: containers few shapes use, and a
    /// hosted call's own arguments.
    ///
    /// [`positions::RARE`]: crate::detect::positions::RARE
    #[serde(skip)]
    pub(crate) rare_keys: RareKeys<'a>,
    pub(crate) conversation: Option<Seen>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Node<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        de.deserialize_any(NodeVisitor(std::marker::PhantomData))
    }
}

struct NodeVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for NodeVisitor<'a> {
    type Value = Node<'a>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Node<'a>, A::Error> {
        let _level = Level::enter()?;
        let mut known = false;
        let mut rare = RareKeys::new();
        let keys = Keys {
            map,
            known: &mut known,
            rare: &mut rare,
        };
        let mut obj = Obj::deserialize(MapAccessDeserializer::new(keys))?;
        if !rare.is_empty() {
            obj.rare_keys = rare;
            known = true;
        }
        let held = if known { Some(Held::heap(obj)?) } else { None };
        Ok(Node::Object(ObjBox(held)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node<'a>, A::Error> {
        let _level = Level::enter()?;
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(16));
        while let Some(item) = seq.next_element::<Node<'a>>()? {
            items.push(item);
        }
        Ok(Node::List(items))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Node<'a>, E> {
        Ok(Node::Scalar)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Node<'a>, E> {
        Ok(Node::Scalar)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Node<'a>, E> {
        Ok(Node::Scalar)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Node<'a>, E> {
        Ok(Node::Scalar)
    }
    fn visit_str<E>(self, _: &str) -> Result<Node<'a>, E> {
        Ok(Node::Text)
    }
    fn visit_borrowed_str<E>(self, _: &'de str) -> Result<Node<'a>, E> {
        Ok(Node::Text)
    }
    fn visit_string<E>(self, _: String) -> Result<Node<'a>, E> {
        Ok(Node::Text)
    }
    fn visit_unit<E>(self) -> Result<Node<'a>, E> {
        Ok(Node::Null)
    }
    fn visit_none<E>(self) -> Result<Node<'a>, E> {
        Ok(Node::Null)
    }
}

/// An object's entries, each key checked before [`Obj`]'s own reading
/// takes it: a spelling of a table key that is not the key itself is
/// refused ([`variant_of`]), and whether any key of the table was there is
/// noted.
struct Keys<'k, 'a, A> {
    map: A,
    known: &'k mut bool,
    /// The rare keys, taken here: [`Obj`]'s own reading never sees them.
    rare: &'k mut RareKeys<'a>,
}

impl<'de: 'a, 'a, A: MapAccess<'de>> MapAccess<'de> for Keys<'_, 'a, A> {
    type Error = A::Error;

    fn next_key_seed<K: serde::de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        let key = loop {
            let Some(key) = self.map.next_key_seed(KeyText)? else {
                return Ok(None);
            };
            let Some(row) = crate::detect::positions::rare_row(&key) else {
                break key;
            };
            let raw: Raw<'de> = self.map.next_value()?;
            if !add_rare(self.rare, row, raw) {
                return Err(serde::de::Error::custom(format_args!(
                    "duplicate field `{key}`"
                )));
            }
        };
        if let Some(known) = variant_of(&key) {
            return Err(serde::de::Error::custom(format_args!(
                "the key `{}` is another spelling of `{known}`, which a reader that ignores case may take for it",
                crate::detect::args::clip(&key).escape_debug()
            )));
        }
        *self.known |= crate::detect::fast::is_key(&key);
        seed.deserialize(serde::de::value::CowStrDeserializer::new(key))
            .map(Some)
    }

    fn next_value_seed<V: serde::de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// A key's text, borrowed where it has no escape.
pub(crate) struct KeyText;

impl<'de> serde::de::DeserializeSeed<'de> for KeyText {
    type Value = Cow<'de, str>;

    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<Cow<'de, str>, D::Error> {
        de.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyText {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a key")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v))
    }
}

/// A JSON value kept as its text: valid JSON, read when a reader asks.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Raw<'a>(&'a str);

impl<'a> Raw<'a> {
    /// The value's JSON text.
    pub(crate) fn get(self) -> &'a str {
        self.0
    }

    /// Text the fast reader checked to be one JSON value.
    pub(crate) fn checked(text: &'a str) -> Raw<'a> {
        Raw(text)
    }
}

impl<'a> From<&'a RawValue> for Raw<'a> {
    fn from(raw: &'a RawValue) -> Raw<'a> {
        Raw(raw.get())
    }
}

impl std::fmt::Debug for Raw<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Raw<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        <&'de RawValue>::deserialize(de).map(Raw::from)
    }
}

/// A key whose value is never read: only that it is there, and not null.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seen;

impl<'de> Deserialize<'de> for Seen {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(de).map(|_| Seen)
    }
}

/// A value read as a flag: `true`, `false`, or anything else (never
/// refused here: a reader that needs a boolean says so).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flag {
    True,
    False,
    Other,
}

impl Flag {
    /// The boolean, if the value is one.
    pub(crate) fn as_bool(self) -> Option<bool> {
        match self {
            Flag::True => Some(true),
            Flag::False => Some(false),
            Flag::Other => None,
        }
    }
}

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Flag;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any value")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Flag, E> {
                Ok(if v { Flag::True } else { Flag::False })
            }
            fn visit_str<E>(self, _: &str) -> Result<Flag, E> {
                Ok(Flag::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Flag, E> {
                Ok(Flag::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Flag, E> {
                Ok(Flag::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Flag, E> {
                Ok(Flag::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Flag, A::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Flag::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Flag, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Flag::Other)
            }
        }
        de.deserialize_any(V)
    }
}

/// Whether a value is the string `"list"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct IsList(pub(crate) bool);

impl<'de> Deserialize<'de> for IsList {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = IsList;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any value")
            }
            fn visit_str<E>(self, v: &str) -> Result<IsList, E> {
                Ok(IsList(v == "list"))
            }
            fn visit_bool<E>(self, _: bool) -> Result<IsList, E> {
                Ok(IsList(false))
            }
            fn visit_i64<E>(self, _: i64) -> Result<IsList, E> {
                Ok(IsList(false))
            }
            fn visit_u64<E>(self, _: u64) -> Result<IsList, E> {
                Ok(IsList(false))
            }
            fn visit_f64<E>(self, _: f64) -> Result<IsList, E> {
                Ok(IsList(false))
            }
            fn visit_unit<E>(self) -> Result<IsList, E> {
                Ok(IsList(false))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<IsList, A::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(IsList(false))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<IsList, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(IsList(false))
            }
        }
        de.deserialize_any(V)
    }
}

pub(crate) type Result<T, E = serde_json::Error> = std::result::Result<T, E>;

/// Parse a raw value into a typed, borrowed view.
pub(crate) fn parse<'a, T: Deserialize<'a>>(raw: Raw<'a>) -> Result<T> {
    serde_json::from_str(raw.get())
}

/// Parse a raw value into a node: the fast path, else the reference.
pub(crate) fn parse_node(raw: Raw<'_>) -> Result<Node<'_>> {
    match crate::detect::fast::document(raw.get(), None, crate::detect::limits::HARD_MAX_DEPTH) {
        Some(node) => Ok(node),
        None => parse(raw),
    }
}

/// The text of a JSON string literal (`"..."`, valid JSON), escapes
/// decoded; `None` when it is not one, or holds a surrogate escape that
/// pairs with none (which serde's reader refuses for text).
pub(crate) fn unquote(literal: &str) -> Option<Cow<'_, str>> {
    let body = literal.as_bytes().strip_prefix(b"\"")?;
    let first = special(body)?;
    if body[first] == b'"' {
        return (first + 1 == body.len()).then(|| Cow::Borrowed(&literal[1..=first]));
    }
    let (end, text) = decoded(body)?;
    (end + 1 == body.len()).then_some(Cow::Owned(text))
}

thread_local! {
    /// Where strings are decoded before they are copied out at their own
    /// length: one buffer per thread, kept between documents.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The most a thread keeps in [`SCRATCH`] between strings.
const MAX_SCRATCH: usize = 1 << 20;

/// A JSON string's text, escapes decoded, `body` starting past its opening
/// quote: where its closing quote is, and the text; `None` as [`decode`].
pub(crate) fn decoded(body: &[u8]) -> Option<(usize, String)> {
    with_decoded(body, |end, text| (end, text.to_owned()))
}

/// The text of a JSON string literal (`literal`, its quotes included)
/// that holds escapes, decoded into this thread's scratch buffer and given
/// to `f` there, rather than copied out; `None` when it is no literal.
pub(crate) fn with_unquoted<T>(literal: &str, f: impl FnOnce(&str) -> T) -> Option<T> {
    let body = literal.as_bytes().strip_prefix(b"\"")?;
    with_decoded(body, |end, text| (end + 1 == body.len()).then(|| f(text)))?
}

/// The string whose body (after its opening quote) starts `body`, decoded
/// into this thread's scratch buffer: `f` is given where its closing quote
/// is in `body` and its text.
fn with_decoded<T>(body: &[u8], f: impl FnOnce(usize, &str) -> T) -> Option<T> {
    let run = |scratch: &mut Vec<u8>| {
        let (end, written) = decode(body, scratch, 0)?;
        let value = f(end, utf8(&scratch[..written])?);
        if scratch.len() > MAX_SCRATCH {
            *scratch = Vec::new();
        }
        Some(value)
    };
    SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut scratch) => run(&mut scratch),
        // Already in use on this thread (never, today): a buffer of its own.
        Err(_) => run(&mut Vec::new()),
    })
}

/// `bytes` as text, when they are UTF-8: checked with SIMD when there are
/// enough of them for it to pay.
pub(crate) fn utf8(bytes: &[u8]) -> Option<&str> {
    if bytes.len() < 256 {
        std::str::from_utf8(bytes).ok()
    } else {
        simdutf8::basic::from_utf8(bytes).ok()
    }
}

/// How many characters `text` holds, as `text.chars().count()` says: its
/// bytes less its UTF-8 continuation bytes, these counted thirty-two bytes
/// a step in two sixteen-lane counts (each lane adds up to 255 before the
/// lanes are summed; two counts, so that one step's sum does not wait on
/// the last's). What `maxLength` and `minLength` ask of a long string.
pub(crate) fn chars(text: &str) -> usize {
    use wide::u8x16;
    let continuing = |chunk: &[u8]| {
        let chunk = u8x16::new(chunk.try_into().unwrap_or_default());
        // Ones in a lane whose byte is 10xxxxxx.
        (chunk & u8x16::splat(0xC0)).simd_eq(u8x16::splat(0x80))
    };
    let bytes = text.as_bytes();
    let mut chunks = bytes.chunks_exact(32);
    let mut count = 0;
    while chunks.len() > 0 {
        let (mut low, mut high) = (u8x16::ZERO, u8x16::ZERO);
        for chunk in chunks.by_ref().take(255) {
            low -= continuing(&chunk[..16]);
            high -= continuing(&chunk[16..]);
        }
        count += (low.to_array().iter().chain(&high.to_array()))
            .map(|&n| usize::from(n))
            .sum::<usize>();
    }
    let rest = chunks.remainder();
    count += rest.iter().filter(|&&b| b & 0xC0 == 0x80).count();
    bytes.len() - count
}

/// A JSON string checked as [`decode`] checks it, but not decoded: `bytes`
/// start past its opening quote (and are UTF-8, as every text read is).
/// Where its closing quote is and how many characters its text holds, or
/// `None` where `decode` says `None`.
///
/// Sixty-four bytes a step, each kind of byte a bit a byte: no step waits
/// on where the last escape ended, as a decoder's does (the next run is
/// found from the end of the last), so text dense with escapes costs what
/// plain text does. A byte is escaped when the run of backslashes before
/// it is odd, found for the whole step at once by adding the runs that
/// start on odd bytes to the backslashes: the carry clears a run, leaving
/// its parity in where the sum's bits flip. What escapes do to the count:
/// each takes its backslash, a `\uXXXX` four digits more, a surrogate pair
/// one character more (looked at one by one: the only escapes that are).
pub(crate) fn scan(bytes: &[u8]) -> Option<(usize, usize)> {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    // Whether the step's first byte is escaped (a backslash the last
    // step ended on).
    let mut carried_escape = 0_u64;
    // Where the last step's `\u` escapes want hex digits in this one.
    let mut carried_digits = 0_u64;
    // Where a surrogate pair's second `u` is, its first half seen.
    let mut low_half = usize::MAX;
    let (mut base, mut count) = (0, 0_usize);
    let mut padded = [0; 64];
    loop {
        // Past the text's end, zeros: control characters, so that a
        // string that does not end before them is refused.
        let step: &[u8; 64] = if let Some(step) = bytes.get(base..base + 64) {
            step.try_into().ok()?
        } else {
            let rest = bytes.get(base..)?;
            padded[..rest.len()].copy_from_slice(rest);
            &padded
        };
        let block = Block::of(step);
        let backslash = block.backslash & !carried_escape;
        let follows = backslash << 1 | carried_escape;
        let odd_starts = backslash & !EVEN & !follows;
        let (even_runs, carry) = odd_starts.overflowing_add(backslash);
        let escaped = (EVEN ^ (even_runs << 1)) & follows;
        carried_escape = u64::from(carry);
        // The closing quote, if in this step: the bytes up to it (`within`)
        // and through it (`through`).
        let end = block.quote & !escaped;
        let (len, within, through) = if end == 0 {
            (64, u64::MAX, u64::MAX)
        } else {
            let at = end.trailing_zeros();
            (at, (1 << at) - 1, u64::MAX >> (63 - at))
        };
        let escaped = escaped & within;
        if (block.control | (escaped & !block.allowed)) & within != 0 {
            return None;
        }
        // An escape takes its backslash from the count, a continuation
        // byte takes itself (never an escaped byte: those are ASCII).
        let taken = (block.continuation & within) | escaped;
        // (Wrapping: what a step takes may be counted in the next.)
        count = count.wrapping_add((len - taken.count_ones()) as usize);
        let wide = escaped & block.u;
        let digits = carried_digits;
        carried_digits = 0;
        if wide != 0 || digits != 0 {
            let want = u128::from(wide);
            let want = want << 1 | want << 2 | want << 3 | want << 4 | u128::from(digits);
            #[allow(clippy::cast_possible_truncation)]
            let (digits, carried) = (want as u64, (want >> 64) as u64);
            carried_digits = carried;
            if digits & !hex(step) & through != 0 {
                return None;
            }
            // Four digits more to each.
            count = count.wrapping_sub(4 * wide.count_ones() as usize);
            // A `\u` whose first digit is `d` (the last byte's, whose
            // digit is the next step's, alike) may be half a surrogate
            // pair.
            let mut halves = wide & !(!d(step) >> 1);
            while halves != 0 {
                let at = base + halves.trailing_zeros() as usize;
                halves &= halves - 1;
                match hex_unit(bytes.get(at + 1..)?)? {
                    0xD800..=0xDBFF => {
                        let next = bytes.get(at + 5..)?;
                        let low = next.strip_prefix(b"\\u").and_then(hex_unit)?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return None;
                        }
                        low_half = at + 6;
                        // Two escapes, one character (the second is in
                        // the count when its step is).
                        count = count.wrapping_sub(1);
                    }
                    0xDC00..=0xDFFF if at != low_half => return None,
                    _ => {}
                }
            }
        }
        if end != 0 {
            return Some((base + len as usize, count));
        }
        base += 64;
    }
}

/// Sixty-four bytes of a string's text, a bit a byte for each kind
/// [`scan`] looks for at every step (the first byte's the lowest).
struct Block {
    quote: u64,
    backslash: u64,
    control: u64,
    continuation: u64,
    /// The characters an escape may stand on: `"\/bfnrtu`.
    allowed: u64,
    u: u64,
}

impl Block {
    #[inline]
    fn of(step: &[u8; 64]) -> Block {
        use wide::u8x16;
        let mut block = Block {
            quote: 0,
            backslash: 0,
            control: 0,
            continuation: 0,
            allowed: 0,
            u: 0,
        };
        for lane in 0..4 {
            let chunk = lane_of(step, lane);
            let is = |byte: u8| chunk.simd_eq(u8x16::splat(byte));
            let (quote, backslash, u) = (is(b'"'), is(b'\\'), is(b'u'));
            let control = chunk.min(u8x16::splat(0x1F)).simd_eq(chunk);
            let continuation = (chunk & u8x16::splat(0xC0)).simd_eq(u8x16::splat(0x80));
            let allowed = (quote | backslash | u | is(b'/'))
                | (is(b'b') | is(b'f'))
                | (is(b'n') | is(b'r') | is(b't'));
            let shift = 16 * lane;
            let bits = |mask: u8x16| u64::from(mask.to_bitmask()) << shift;
            block.quote |= bits(quote);
            block.backslash |= bits(backslash);
            block.control |= bits(control);
            block.continuation |= bits(continuation);
            block.allowed |= bits(allowed);
            block.u |= bits(u);
        }
        block
    }
}

/// The sixteen bytes of `step` from `16 * lane` on.
#[inline]
fn lane_of(step: &[u8; 64], lane: usize) -> wide::u8x16 {
    let mut chunk = [0; 16];
    chunk.copy_from_slice(&step[16 * lane..16 * lane + 16]);
    wide::u8x16::new(chunk)
}

/// A bit for each byte of `step` that `mask` marks.
fn each(step: &[u8; 64], mask: impl Fn(wide::u8x16) -> wide::u8x16) -> u64 {
    (0..4).fold(0, |bits, lane| {
        bits | u64::from(mask(lane_of(step, lane)).to_bitmask()) << (16 * lane)
    })
}

/// The hex digits of `step`, either case.
fn hex(step: &[u8; 64]) -> u64 {
    use wide::u8x16;
    each(step, |chunk| {
        let digit = chunk - u8x16::splat(b'0');
        let letter = (chunk | u8x16::splat(0x20)) - u8x16::splat(b'a');
        digit.min(u8x16::splat(9)).simd_eq(digit) | letter.min(u8x16::splat(5)).simd_eq(letter)
    })
}

/// The `d`s and `D`s of `step`.
fn d(step: &[u8; 64]) -> u64 {
    each(step, |chunk| {
        (chunk | wide::u8x16::splat(0x20)).simd_eq(wide::u8x16::splat(b'd'))
    })
}

/// Decode a JSON string's text into `out` from `from` on, `bytes`
/// starting past its opening quote: where its closing quote is and how
/// much was written, or `None` at a control character, an escape JSON does
/// not have, a surrogate escape that pairs with none, or no closing quote.
/// What is written is valid UTF-8 when `bytes` is: only ASCII bytes stop a
/// run. `out` is used as a buffer, its whole length past `from` written
/// over; it grows past `from` to twice the text at most.
pub(crate) fn decode(bytes: &[u8], out: &mut Vec<u8>, from: usize) -> Option<(usize, usize)> {
    decode_with(bytes, out, from, |at| match at[0] {
        b'"' => Some(Special::End),
        b'\\' => {
            let simple = SIMPLE[usize::from(*at.get(1)?)];
            if simple == 0 {
                let (decoded, used) = escape(&at[1..])?;
                Some(Special::Char(decoded, 1 + used))
            } else {
                Some(Special::Byte(simple, 2))
            }
        }
        _ => None,
    })
}

/// What a string says where a run of plain text stops (at a quote, a
/// backslash or a control character): see [`decode_with`].
pub(crate) enum Special {
    /// The string's end.
    End,
    /// An ASCII character, and the bytes that write it.
    Byte(u8, usize),
    /// A character, and the bytes that write it.
    Char(char, usize),
}

/// [`decode`], `special` saying what the bytes at each stop say (`None`
/// when nothing this decodes).
///
/// Sixteen bytes at a time (eight near the end), each run copied whole
/// and the write position moved only to where it stops: in text dense
/// with escapes the runs are short, and a copy of their own length costs
/// more than the run.
pub(crate) fn decode_with(
    bytes: &[u8],
    out: &mut Vec<u8>,
    from: usize,
    special: impl Fn(&[u8]) -> Option<Special>,
) -> Option<(usize, usize)> {
    let (mut at, mut written) = (0, from);
    loop {
        // Room for a whole chunk, and past the run it holds (fifteen bytes
        // at most) for the four bytes of a surrogate pair: less, and a pair
        // that ends a chunk's run near the buffer's end was refused.
        if out.len() < written + 32 {
            // Twice what is written so far, at least 64 bytes more.
            out.resize(written + (written - from).max(64), 0);
        }
        if bytes.get(at) == Some(&b'\\') {
            // An escape right after the last (text dense with `\uXXXX`,
            // as Python's `json.dumps` writes every character past
            // ASCII): no run of plain text to look for.
        } else if let Some(chunk) = bytes.get(at..at + 16) {
            // (This step and the eight-byte one below are written out: one
            // helper giving the run and the width for both measured 12 to
            // 17% slower on `large` and `large-anthropic`, check_ab.sh.)
            let chunk: [u8; 16] = chunk.try_into().ok()?;
            out.get_mut(written..written + 16)?.copy_from_slice(&chunk);
            let found = special_mask16(chunk);
            if found == 0 {
                at += 16;
                written += 16;
                continue;
            }
            let run = found.trailing_zeros() as usize;
            at += run;
            written += run;
        } else if let Some(chunk) = bytes.get(at..at + 8) {
            let chunk: [u8; 8] = chunk.try_into().ok()?;
            out.get_mut(written..written + 8)?.copy_from_slice(&chunk);
            let found = special_mask(chunk);
            if found == 0 {
                at += 8;
                written += 8;
                continue;
            }
            let run = (found.trailing_zeros() / 8) as usize;
            at += run;
            written += run;
        } else {
            let rest = &bytes[at..];
            let run = rest.iter().position(|&b| is_special(b))?;
            out.get_mut(written..written + run)?
                .copy_from_slice(&rest[..run]);
            at += run;
            written += run;
        }
        let wide = match bytes.get(at + 1) {
            Some(b'u') => wide_escape(bytes.get(at..at + 6)),
            _ => None,
        };
        if let Some((encoded, len)) = wide {
            // All three bytes (the room is there), the third written over
            // next when the character takes two.
            out.get_mut(written..written + 3)?.copy_from_slice(&encoded);
            written += len;
            at += 6;
            continue;
        }
        match special(&bytes[at..])? {
            Special::End => return Some((at, written - from)),
            Special::Byte(byte, used) => {
                *out.get_mut(written)? = byte;
                written += 1;
                at += used;
            }
            Special::Char(decoded, used) => {
                let utf8 = decoded.len_utf8();
                decoded.encode_utf8(out.get_mut(written..written + utf8)?);
                written += utf8;
                at += used;
            }
        }
    }
}

/// A `\\uXXXX` escape (`escape`: its six bytes, when there are six) of a
/// character past ASCII that is no surrogate, as every string reader
/// decodes it (and as none refuses it): its UTF-8, and how many bytes of
/// it there are. Text dense with such escapes (as Python's `json.dumps`
/// writes every character past ASCII) has one a character; anything else
/// is left to the reader's own `special`.
#[inline]
fn wide_escape(escape: Option<&[u8]>) -> Option<([u8; 3], usize)> {
    let &[b'\\', b'u', ref digits @ ..] = escape? else {
        return None;
    };
    let unit = hex_unit(digits)?;
    // Two bytes of UTF-8, or three (a surrogate is no character).
    let low = 0x80 | (unit & 0x3F) as u8;
    match unit {
        0x80..=0x7FF => Some(([0xC0 | ((unit >> 6) & 0x1F) as u8, low, 0], 2)),
        0x800..=0xD7FF | 0xE000..=0xFFFF => Some((
            [
                0xE0 | ((unit >> 12) & 0x0F) as u8,
                0x80 | ((unit >> 6) & 0x3F) as u8,
                low,
            ],
            3,
        )),
        _ => None,
    }
}

/// What each one-character escape (`\\n`) stands for, by the character
/// after its backslash; 0 where there is none (`\\u` too).
pub(crate) const SIMPLE: [u8; 256] = {
    let mut table = [0; 256];
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table[b'/' as usize] = b'/';
    table[b'b' as usize] = 0x08;
    table[b'f' as usize] = 0x0c;
    table[b'n' as usize] = b'\n';
    table[b'r' as usize] = b'\r';
    table[b't' as usize] = b'\t';
    table
};

/// The character an escape stands for, given the text after its
/// backslash, and how many bytes of that text it takes; `None` for an
/// escape JSON does not have, or a surrogate that pairs with none.
pub(crate) fn escape(after: &[u8]) -> Option<(char, usize)> {
    let decoded = match *after.first()? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => return unicode(after, b"\\u"),
        _ => return None,
    };
    Some((decoded, 1))
}

/// One escape of a JSON text, as a JSON string holding that text writes
/// it: `after` starts past the string's `\\` (the text's backslash).
/// What the escape stands for, and how many of the string's bytes it
/// takes; `None` for an escape JSON does not have, a surrogate that pairs
/// with none, or an escape whose own characters the string escapes (other
/// than a quote or a backslash, as `\\\"`).
pub(crate) fn text_escape(after: &[u8]) -> Option<(char, usize)> {
    match *after.first()? {
        b'\\' => match *after.get(1)? {
            b'"' => Some(('"', 2)),
            b'\\' => Some(('\\', 2)),
            _ => None,
        },
        b'u' => unicode(after, b"\\\\u"),
        // A quote there ends the string: the text's escape is cut short.
        b'"' => None,
        byte => {
            let simple = SIMPLE[usize::from(byte)];
            (simple != 0).then_some((char::from(simple), 1))
        }
    }
}

/// A `uXXXX` escape at the start of `after`: its character and the bytes
/// it takes, a surrogate pair's second half (after `next`, the second
/// escape's backslashes and `u`) included; `None` for a surrogate that
/// pairs with none.
fn unicode(after: &[u8], next: &[u8]) -> Option<(char, usize)> {
    let unit = hex_unit(after.get(1..5)?)?;
    if !(0xD800..=0xDBFF).contains(&unit) {
        return Some((char::from_u32(unit)?, 5));
    }
    let low = after.get(5..)?.strip_prefix(next).and_then(hex_unit)?;
    if !(0xDC00..=0xDFFF).contains(&low) {
        return None;
    }
    let pair = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
    Some((char::from_u32(pair)?, 5 + next.len() + 4))
}

/// The four hex digits at the start of `text`, as a number: each digit
/// looked up in [`HEX`], the four checked at once (text dense with
/// `\uXXXX` escapes, as Python's `json.dumps` writes every character
/// past ASCII, has one for each such character).
fn hex_unit(text: &[u8]) -> Option<u32> {
    let &[a, b, c, d] = text.get(..4)? else {
        return None;
    };
    let [a, b, c, d] = [a, b, c, d].map(|digit| HEX[usize::from(digit)]);
    ((a | b | c | d) & 0xF0 == 0)
        .then(|| u32::from(a) << 12 | u32::from(b) << 8 | u32::from(c) << 4 | u32::from(d))
}

/// What each byte is worth as a hex digit (either case); `0xFF` where it
/// is none.
const HEX: [u8; 256] = {
    let mut table = [0xFF; 256];
    let mut digit: u8 = 0;
    while digit < 10 {
        table[(b'0' + digit) as usize] = digit;
        digit += 1;
    }
    let mut letter: u8 = 0;
    while letter < 6 {
        table[(b'a' + letter) as usize] = 10 + letter;
        table[(b'A' + letter) as usize] = 10 + letter;
        letter += 1;
    }
    table
};

/// A string-valued raw id (`"call_1"`) or a number (`7`, JSON-RPC), as text.
pub(crate) fn id_text(raw: Option<Raw<'_>>) -> Option<Cow<'_, str>> {
    let raw = raw?;
    let text = raw.get();
    match text.as_bytes().first()? {
        b'"' => unquote(text),
        b'-' | b'0'..=b'9' => Some(Cow::Borrowed(text)),
        _ => None,
    }
}

/// A raw value that is a JSON string, as its text.
pub(crate) fn text(raw: Option<Raw<'_>>) -> Option<Cow<'_, str>> {
    raw.filter(|r| r.get().starts_with('"'))
        .and_then(|r| unquote(r.get()))
}

/// Whether a raw value is the JSON string `want` (escapes decoded).
pub(crate) fn is(raw: Option<Raw<'_>>, want: &str) -> bool {
    text(raw).is_some_and(|t| t == want)
}

#[cfg(test)]
mod tests {
    /// Four hex digits are read as `u32::from_str_radix` reads them (no
    /// sign), whatever the bytes: every byte at every place, among digits
    /// of either case.
    #[test]
    fn hex_units_are_read_as_the_standard_library_reads_them() {
        let reference = |bytes: &[u8]| {
            let text = std::str::from_utf8(&bytes[..4]).ok()?;
            if text.starts_with(['+', '-']) {
                return None;
            }
            u32::from_str_radix(text, 16).ok()
        };
        for fill in [*b"0000", *b"fFaA", *b"9b3E"] {
            for at in 0..4 {
                for byte in 0..=u8::MAX {
                    let mut bytes = fill;
                    bytes[at] = byte;
                    assert_eq!(super::hex_unit(&bytes), reference(&bytes), "{bytes:?}");
                }
            }
        }
        assert_eq!(super::hex_unit(b"12"), None);
    }

    /// Every `\\uXXXX` of one unit that the short way decodes, it
    /// decodes to the character's UTF-8; it leaves ASCII and surrogates
    /// (and anything but such an escape) to the readers.
    #[test]
    fn wide_escapes_are_each_characters_utf8() {
        for unit in 0..=0xFFFF_u32 {
            let escape = format!("\\u{unit:04x}");
            let upper = escape.to_uppercase().replace("\\U", "\\u");
            let want = char::from_u32(unit)
                .filter(|_| unit >= 0x80)
                .map(|c| c.to_string().into_bytes());
            for text in [escape, upper] {
                let got = super::wide_escape(Some(text.as_bytes()))
                    .map(|(bytes, len)| bytes[..len].to_vec());
                assert_eq!(got, want, "{text}");
            }
        }
        for text in ["\\u00e", "\\x00e9", "/u00e9", "\\u00g9"] {
            assert_eq!(super::wide_escape(Some(text.as_bytes())), None, "{text}");
        }
        assert_eq!(super::wide_escape(None), None);
    }

    #[test]
    fn unquote_decodes_as_serde_does() {
        let literals = [
            r#""plain""#,
            r#""a\"b\\c\/d\b\f\n\r\t""#,
            r#""\u00e9\u4e2d\ud83d\ude00 end""#,
            r#""\ud83d""#,
            r#""\ude00""#,
            r#""\ud83d\u0041""#,
            r#""\ud83dx""#,
            r#""{\"a\":[1,\"\\u0041\"]}""#,
            r#""""#,
            "\"1, \\\u{feff}\"",
        ];
        for literal in literals {
            let serde = serde_json::from_str::<String>(literal).ok();
            assert_eq!(
                super::unquote(literal).map(std::borrow::Cow::into_owned),
                serde,
                "{literal}"
            );
        }
    }

    proptest::proptest! {
        /// Any text, written by serde (its escapes) or by hand (every
        /// escape JSON has, `\u` ones included), reads back as serde reads
        /// it: runs that end at every offset of the eight-byte chunks,
        /// characters of every width across their edges.
        #[test]
        fn decode_reads_what_serde_reads(
            pieces in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::string::string_regex("[a-z ]{0,11}").unwrap(),
                    proptest::string::string_regex("[\\x00-\\x1f\"\\\\/é中😀]{1,3}").unwrap(),
                    proptest::sample::select(vec![
                        r"\u00e9".to_owned(), r"\ud83d\ude00".to_owned(), r"\/".to_owned(),
                        r"\ud83d".to_owned(), r"\x".to_owned(), "\u{1}".to_owned(),
                    ]),
                ],
                0..24,
            ),
            by_serde in proptest::bool::ANY,
        ) {
            let text: String = pieces.concat();
            let literal = if by_serde {
                serde_json::to_string(&text).unwrap()
            } else {
                // Hand-written: the pieces' own backslashes are escapes,
                // and quotes are escaped so the literal ends where it should.
                format!("\"{}\"", text.replace('"', "\\\""))
            };
            let serde = serde_json::from_str::<String>(&literal).ok();
            proptest::prop_assert_eq!(
                super::unquote(&literal).map(std::borrow::Cow::into_owned),
                serde.clone(),
                "{}", literal
            );
            // A literal that ends early is one serde refuses (text after
            // it); a control character is serde's to refuse, and the
            // decoder's.
            let decoded = super::decoded(&literal.as_bytes()[1..])
                .filter(|(end, _)| end + 2 == literal.len())
                .map(|(_, text)| text);
            proptest::prop_assert_eq!(decoded, serde, "{}", literal);
        }

        /// A string is checked without decoding exactly as decoding checks
        /// it, and its characters counted as in its decoded text: runs of
        /// backslashes across the sixty-four-byte steps, `\u` escapes and
        /// their digits cut by a step's end, surrogate pairs, halves and
        /// the wrong second half, escapes JSON does not have, control
        /// characters, strings that end early or never.
        #[test]
        fn scan_checks_and_counts_what_decode_reads(
            shift in 0_usize..64,
            pieces in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::string::string_regex("[a-z ]{0,40}").unwrap(),
                    proptest::string::string_regex("[\\\\nu\"dD0-9]{1,6}").unwrap(),
                    proptest::sample::select(vec![
                        r"\n".to_owned(), r"\\".to_owned(), r#"\""#.to_owned(), r"\t".to_owned(),
                        r"\u00e9".to_owned(), r"\ud83d\ude00".to_owned(), r"\uD83D\uDE00".to_owned(),
                        r"\ud83d".to_owned(), r"\ude00".to_owned(), r"\ud83d\u0041".to_owned(),
                        r"\u12".to_owned(), r"\u12g4".to_owned(), r"\x".to_owned(), r"\/".to_owned(),
                        r"\\\\\".to_owned(), "\u{1}".to_owned(), "é中😀".to_owned(),
                    ]),
                ],
                0..80,
            ),
            end in proptest::prop_oneof![
                proptest::strategy::Just("\"".to_owned()),
                proptest::strategy::Just("\",\"more\": 1}".to_owned()),
                proptest::strategy::Just(String::new()),
            ],
        ) {
            let body = format!("{}{}{}", "x".repeat(shift), pieces.concat(), end);
            let mut out = Vec::new();
            let decoded = super::decode(body.as_bytes(), &mut out, 0).map(|(end, written)| {
                (end, std::str::from_utf8(&out[..written]).unwrap().chars().count())
            });
            proptest::prop_assert_eq!(super::scan(body.as_bytes()), decoded, "{}", body);
        }

        /// Characters are counted as the standard library counts them, in
        /// text of every length around the count's steps (thirty-two
        /// bytes, and 255 of them).
        #[test]
        fn characters_are_counted_as_chars_counts_them(
            text in "[a-zé中😀\\x00-\\x7f]{0,300}",
            repeat in 1_usize..60,
        ) {
            let text = text.repeat(repeat);
            proptest::prop_assert_eq!(super::chars(&text), text.chars().count());
        }
    }

    /// An escape read after a run of every length from every offset of
    /// the buffer: a surrogate pair (four bytes) or a three-byte
    /// character past a run that ends near the buffer's end once was
    /// refused. Checking without decoding says the same.
    #[test]
    fn escapes_decode_after_runs_of_every_length() {
        for escape in [r"\ud83d\ude00", r"\u4e2d", r"\u00e9", r"\n", r"\u0041"] {
            for run in 0..140 {
                let literal = format!("\"{}{escape}\"", "x".repeat(run));
                let serde: String = serde_json::from_str(&literal).unwrap();
                let body = &literal.as_bytes()[1..];
                // A buffer of its own: one grown by earlier strings has room.
                let mut out = Vec::new();
                let (end, written) = super::decode(body, &mut out, 0).expect(&literal);
                assert_eq!(
                    (end + 2, &out[..written]),
                    (literal.len(), serde.as_bytes())
                );
                assert_eq!(
                    super::scan(body),
                    Some((end, serde.chars().count())),
                    "{literal}"
                );
            }
        }
    }

    /// Long text and short text through the per-thread buffer, one after
    /// the other: each reads as serde reads it.
    #[test]
    fn long_and_short_texts_decode_in_turn() {
        let long = "l\"\\\n".repeat(3000);
        for text in [long.as_str(), "short \"one\"", long.as_str(), "é\t"] {
            let literal = serde_json::to_string(text).unwrap();
            let (end, decoded) = super::decoded(&literal.as_bytes()[1..]).unwrap();
            assert_eq!((end + 2, decoded.as_str()), (literal.len(), text));
        }
    }

    /// An `Obj` is allocated per object of a payload that holds a key of
    /// the table (others share one empty view): small enough for the
    /// allocators' fast size classes (glibc's per-thread cache takes
    /// requests up to 1032 bytes, mimalloc's small pages blocks up to
    /// 1 KiB). Keys few shapes use go to its short list of rare keys.
    #[test]
    fn an_obj_stays_within_a_kibibyte() {
        let size = std::mem::size_of::<super::Obj<'_>>();
        assert!(size <= 1024, "{size}");
    }
}
