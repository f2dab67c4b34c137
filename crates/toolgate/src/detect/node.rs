//! A JSON document read once into a borrowed view: every object into
//! [`Obj`], the keys any format reads; nested containers parsed in the same
//! pass into [`Node`]s, and values that may be arguments or result content
//! kept as raw text until a reader asks for them.
//!
//! Keys are read by serde derive, which refuses a duplicated field: an
//! object that says two things is malformed, never read one way here and
//! another way by an executor.

use std::borrow::Cow;
use std::cell::Cell;

use serde::de::value::MapAccessDeserializer;
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::detect::limits::MAX_ENVELOPE_DEPTH;

thread_local! {
    /// How many envelope objects and arrays the parser is inside, on this
    /// thread.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
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

/// Any JSON value, read in one pass: objects as [`Obj`], arrays element by
/// element, and the kind of anything else (which holds no call).
#[derive(Debug)]
pub(crate) enum Node<'a> {
    Object(Box<Obj<'a>>),
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

/// The keys of an object that any reader looks at.
#[derive(Debug, Default, Deserialize)]
#[allow(non_snake_case)] // the wire's own spellings
pub(crate) struct Obj<'a> {
    #[serde(borrow, rename = "type")]
    pub(crate) kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) id: Option<&'a RawValue>,
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
    pub(crate) delta: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) parts: Option<Node<'a>>,
    #[serde(borrow)]
    pub(crate) steps: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) kwargs: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) additional_kwargs: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) tool_calls: Option<Node<'a>>,
    #[serde(borrow)]
    pub(crate) invalid_tool_calls: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) tool_call_chunks: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) toolCalls: Option<Node<'a>>,
    #[serde(borrow)]
    pub(crate) toolInvocations: Option<&'a RawValue>,

    // One call or one result each.
    #[serde(borrow)]
    pub(crate) function: Option<Node<'a>>,
    #[serde(borrow)]
    pub(crate) function_call: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) functionCall: Option<Node<'a>>,
    #[serde(borrow)]
    pub(crate) toolUse: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) custom: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) toolInvocation: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) functionResponse: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) function_response: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) toolResult: Option<&'a RawValue>,

    // Raw until read: containers that may also be arguments or result
    // content, arguments, and result content.
    #[serde(borrow)]
    pub(crate) content: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) output: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) input: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) response: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) result: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) data: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) arguments: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) params: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) parameters: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) args: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) action: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) error: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) errorText: Option<&'a RawValue>,

    // Ids and status.
    #[serde(borrow)]
    pub(crate) call_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) tool_call_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) tool_use_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) toolCallId: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub(crate) toolUseId: Option<Cow<'a, str>>,
    /// The `id` of the `mcp_approval_request` an `mcp_approval_response`
    /// answers (raw: an `Obj` stays under a kibibyte).
    #[serde(borrow)]
    pub(crate) approval_request_id: Option<&'a RawValue>,
    /// An `mcp_approval_response`'s decision.
    pub(crate) approve: Option<Flag>,
    pub(crate) is_error: Option<bool>,
    pub(crate) isError: Option<bool>,
    #[serde(borrow)]
    pub(crate) status: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) state: Option<&'a RawValue>,
    pub(crate) partialArgs: Option<Seen>,
    pub(crate) willContinue: Option<bool>,

    // Requests and JSON-RPC.
    pub(crate) jsonrpc: Option<Seen>,
    #[serde(borrow)]
    pub(crate) method: Option<&'a RawValue>,
    #[serde(borrow)]
    pub(crate) tools: Option<&'a RawValue>,
    pub(crate) model: Option<Seen>,
    pub(crate) system: Option<Seen>,
    pub(crate) inputSchema: Option<Seen>,
    pub(crate) input_schema: Option<Seen>,
    pub(crate) previous_response_id: Option<Seen>,
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
        Obj::deserialize(MapAccessDeserializer::new(map)).map(|o| Node::Object(Box::new(o)))
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
pub(crate) fn parse<'a, T: Deserialize<'a>>(raw: &'a RawValue) -> Result<T> {
    serde_json::from_str(raw.get())
}

/// A string-valued raw id (`"call_1"`) or a number (`7`, JSON-RPC), as text.
pub(crate) fn id_text(raw: Option<&RawValue>) -> Option<Cow<'_, str>> {
    let raw = raw?;
    let text = raw.get();
    match text.as_bytes().first()? {
        b'"' => serde_json::from_str::<Cow<'_, str>>(text).ok(),
        b'-' | b'0'..=b'9' => Some(Cow::Borrowed(text)),
        _ => None,
    }
}

/// A raw value that is a JSON string, as its text.
pub(crate) fn text(raw: Option<&RawValue>) -> Option<Cow<'_, str>> {
    raw.filter(|r| r.get().starts_with('"'))
        .and_then(|r| serde_json::from_str(r.get()).ok())
}

/// Whether a raw value is the JSON string `want` (escapes decoded).
pub(crate) fn is(raw: Option<&RawValue>, want: &str) -> bool {
    text(raw).is_some_and(|t| t == want)
}

#[cfg(test)]
mod tests {
    /// An `Obj` is allocated per object of a payload: small enough for the
    /// allocators' fast size classes (glibc serves chunks under 1 KiB from
    /// its small bins).
    #[test]
    fn an_obj_stays_under_a_kibibyte() {
        assert!(std::mem::size_of::<super::Obj<'_>>() <= 1000);
    }
}
