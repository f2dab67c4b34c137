//! MCP: the gateway in front of Model Context Protocol servers, over
//! Streamable HTTP ([`http`], `POST/GET/DELETE /mcp/<name>`) and stdio
//! ([`stdio`], `toolgate mcp -- COMMAND`).
//!
//! Both transports hand every JSON-RPC message to one [`McpGate`] per
//! server, which decides what passes:
//!
//! - a client's `tools/call` is checked before the server sees it
//!   ([`call`]): the tool must be one the caller's `tools/list` shows, its
//!   definition unchanged since it was pinned, its arguments (`{}` when
//!   absent) valid against the server's `inputSchema` and the policy's
//!   schema, rules and limits. A refused name answers JSON-RPC `-32602`;
//!   refused arguments answer a result with `isError: true` naming each
//!   violation. A passing call is audited (committed before it is
//!   forwarded, so before its result can return) and carries its
//!   idempotency key in `params._meta["toolgate/idempotency-key"]`;
//! - a server's `tools/list` answer is filtered for the caller who asked
//!   ([`call::list`]): tools the policy refuses them, tools whose schemas
//!   are not JSON Schema, and (with `pin_tools`) tools whose definition
//!   differs from its pin are withheld. Its definitions feed the
//!   [`catalog`] that calls are checked against;
//! - a `tools/call` result is checked against the tool's `outputSchema`;
//! - anything that is not a JSON-RPC message is refused, never forwarded.
//!
//! Modules point one way: `http`, `stdio` → this gate → `call` →
//! `catalog`, `pins`, `message` → the gateway's `audit`, `limits`,
//! `metrics`, `idempotency`.

pub(crate) mod call;
pub mod catalog;
pub(crate) mod http;
pub(crate) mod message;
pub mod pins;
pub mod stdio;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use toolgate::Caller;

use self::catalog::{Catalog, Tool};
use self::message::{Kind, Message};
use self::pins::PinStore;
use crate::Gateway;

/// The `_meta` key a forwarded call carries its idempotency key under.
pub const IDEMPOTENCY_META: &str = "toolgate/idempotency-key";

/// Requests waiting for their answer, across all scopes, past which the
/// oldest is forgotten (its answer is then refused).
const MAX_WAITING: usize = 16_384;

/// Who sent the messages being checked.
#[derive(Debug, Clone, Default)]
pub(crate) struct Who {
    pub(crate) caller: Option<Caller>,
    /// The idempotency keys' request id (`X-Request-Id`, or generated).
    pub(crate) request_id: String,
}

/// What the gateway asked of the server, by request id.
#[derive(Debug)]
pub(crate) enum Asked {
    /// `tools/list`, for this caller.
    List(Option<Caller>),
    /// A checked, released `tools/call`.
    Call(Arc<Released>),
    /// Any other request: its answer passes as sent.
    Other,
    /// The gateway's own `tools/list` (stdio): the answer goes to it.
    Own(tokio::sync::oneshot::Sender<String>),
}

/// A released call, waiting for its result.
#[derive(Debug)]
pub(crate) struct Released {
    pub(crate) tool: Arc<Tool>,
    pub(crate) who: Who,
    pub(crate) key: String,
    /// The call spoke 2026-07-28: a result written in its place carries
    /// `resultType`.
    pub(crate) modern: bool,
}

/// What to do with a client's message.
#[derive(Debug)]
pub(crate) enum Step {
    /// Send this to the server; a released call's idempotency key.
    Forward(String, Option<String>),
    /// Answer the client with this instead; the server never sees it.
    Answer(String),
    /// The tool is not in the catalog: list the server's tools, then ask
    /// again.
    List,
}

/// The gate of one MCP server.
#[derive(Debug)]
pub struct McpGate {
    pub(crate) name: String,
    /// `mcp/<name>`: the audit route and the metrics label.
    pub(crate) route: &'static str,
    /// The server's endpoint (Streamable HTTP), or none (stdio).
    pub(crate) url: Option<String>,
    pub(crate) catalog: Catalog,
    pub(crate) pins: Option<Arc<PinStore>>,
    waiting: Mutex<Waiting>,
}

#[derive(Debug, Default)]
struct Waiting {
    asked: HashMap<(String, String), Asked>,
    order: VecDeque<(String, String)>,
}

impl McpGate {
    pub(crate) fn new(name: &str, url: Option<String>, pins: Option<Arc<PinStore>>) -> McpGate {
        // One per configured server, for the life of the process.
        let route: &'static str = Box::leak(format!("mcp/{name}").into_boxed_str());
        McpGate {
            name: name.to_owned(),
            route,
            url,
            catalog: Catalog::default(),
            pins,
            waiting: Mutex::new(Waiting::default()),
        }
    }

    /// Remember that request `id` of `scope` asked `asked`.
    pub(crate) fn wait(&self, scope: &str, id: &str, asked: Asked) {
        let Ok(mut waiting) = self.waiting.lock() else {
            return;
        };
        let key = (scope.to_owned(), id.to_owned());
        if waiting.asked.insert(key.clone(), asked).is_none() {
            waiting.order.push_back(key);
        }
        while waiting.asked.len() > MAX_WAITING {
            let Some(oldest) = waiting.order.pop_front() else {
                break;
            };
            waiting.asked.remove(&oldest);
        }
        if waiting.order.len() > 2 * MAX_WAITING {
            let Waiting { asked, order } = &mut *waiting;
            order.retain(|key| asked.contains_key(key));
        }
    }

    /// What request `id` of `scope` asked, once: it is no longer waited
    /// for (a request not sent after all).
    pub(crate) fn answered(&self, scope: &str, id: &str) -> Option<Asked> {
        let mut waiting = self.waiting.lock().ok()?;
        waiting.asked.remove(&(scope.to_owned(), id.to_owned()))
    }

    /// What request `id` of `scope` asked, for an answer the server sends:
    /// kept (but for the gateway's own list, which one answer ends), so
    /// that the same answer replayed again on a resumed stream is checked
    /// and passed again. Entries leave with their session or the bound.
    fn replied(&self, scope: &str, id: &str) -> Option<Asked> {
        let mut waiting = self.waiting.lock().ok()?;
        let key = (scope.to_owned(), id.to_owned());
        match waiting.asked.get(&key)? {
            Asked::List(caller) => Some(Asked::List(caller.clone())),
            Asked::Call(released) => Some(Asked::Call(Arc::clone(released))),
            Asked::Other => Some(Asked::Other),
            Asked::Own(_) => waiting.asked.remove(&key),
        }
    }

    /// Forget what `scope` asked (a closed session).
    pub(crate) fn forget(&self, scope: &str) {
        if let Ok(mut waiting) = self.waiting.lock() {
            let Waiting { asked, order } = &mut *waiting;
            asked.retain(|(s, _), _| s != scope);
            order.retain(|(s, _)| s != scope);
        }
    }

    /// A client's message: what to send on, or what to answer instead.
    /// `listed`: the server's tools were just listed for this message.
    pub(crate) async fn on_client(
        &self,
        gw: &Gateway,
        message: &Message,
        who: &Who,
        scope: &str,
        listed: bool,
    ) -> Step {
        match message.kind {
            Kind::Request if message.is_method("tools/call") => {
                call::check(self, gw, message, who, scope, listed).await
            }
            Kind::Request => {
                let asked = if message.is_method("tools/list") {
                    Asked::List(who.caller.clone())
                } else {
                    Asked::Other
                };
                if let Some(id) = &message.id {
                    self.wait(scope, id, asked);
                }
                Step::Forward(message.raw.clone(), None)
            }
            // A request sent without an id (`tools/call` among them) would
            // reach the server unchecked and unanswered: refused. MCP's own
            // notifications are all `notifications/...`.
            Kind::Notification
                if !message
                    .method
                    .as_deref()
                    .is_some_and(|m| m.starts_with("notifications/")) =>
            {
                Step::Answer(message::error(
                    None,
                    message::INVALID_REQUEST,
                    &format!(
                        "toolgate: `{}` sent as a notification (no id) is refused; a request needs an id",
                        message
                            .method
                            .as_deref()
                            .unwrap_or_default()
                            .chars()
                            .take(64)
                            .collect::<String>()
                    ),
                    None,
                ))
            }
            Kind::Notification | Kind::Response => Step::Forward(message.raw.clone(), None),
        }
    }

    /// A server's message: what the client gets in its place (`None`: the
    /// gateway's own answer, kept).
    pub(crate) async fn on_server(
        &self,
        gw: &Gateway,
        message: &Message,
        scope: &str,
    ) -> Option<String> {
        match message.kind {
            Kind::Notification => {
                if message.is_method("notifications/tools/list_changed") {
                    self.catalog.changed();
                }
                Some(message.raw.clone())
            }
            Kind::Request => Some(message.raw.clone()),
            // The server's error for a message it could not read (a
            // session it has ended, say): no request to match, no result.
            Kind::Response if message.id.as_deref() == Some("null") && message.result.is_none() => {
                Some(message.raw.clone())
            }
            Kind::Response => {
                let id = message.id.as_deref().unwrap_or("null");
                match self.replied(scope, id) {
                    None => Some(message::error(
                        message.id.as_deref(),
                        message::INTERNAL_ERROR,
                        "toolgate: the server answered a request toolgate did not forward (or no longer waits for); the answer was not passed on",
                        None,
                    )),
                    Some(Asked::Other) => Some(message.raw.clone()),
                    Some(Asked::List(caller)) => Some(call::list(self, gw, message, caller.as_ref())),
                    Some(Asked::Call(released)) => {
                        Some(call::result(self, gw, message, &released).await)
                    }
                    Some(Asked::Own(waiter)) => {
                        let _ = waiter.send(message.raw.clone());
                        None
                    }
                }
            }
        }
    }
}

/// The MCP servers of a gateway, by name.
#[derive(Debug, Default)]
pub(crate) struct Servers {
    pub(crate) by_name: HashMap<String, Arc<McpGate>>,
}

impl Servers {
    /// The gates of the policy's `mcp.servers`, sharing one pin store.
    pub(crate) fn open(policy: &toolgate::Policy) -> Result<Servers, crate::ConfigError> {
        let settings = policy.mcp();
        if settings.servers.is_empty() {
            return Ok(Servers::default());
        }
        let pins = open_pins(policy)?;
        let by_name = settings
            .servers
            .iter()
            .map(|server| {
                let url = server.url.trim().to_owned();
                let gate = McpGate::new(&server.name, Some(url), pins.clone());
                (server.name.clone(), Arc::new(gate))
            })
            .collect();
        Ok(Servers { by_name })
    }
}

/// The pin store, when the policy pins tools. A pin file that cannot be
/// read stops the start: nothing is re-trusted.
pub(crate) fn open_pins(
    policy: &toolgate::Policy,
) -> Result<Option<Arc<PinStore>>, crate::ConfigError> {
    let settings = policy.mcp();
    if !settings.pin_tools {
        return Ok(None);
    }
    let path = settings.pins_path(policy.audit());
    PinStore::open(&path)
        .map(|store| Some(Arc::new(store)))
        .map_err(crate::ConfigError)
}
