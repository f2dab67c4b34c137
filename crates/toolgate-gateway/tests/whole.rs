//! Whole bodies: every route, every kind of bad call, the request side,
//! retry, audit, limits and the side routes.

use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use toolgate_gateway::{AuditRecord, AuditStore};

use crate::support::{
    client, fixture, gateway, gateway_with_store, key, Reply, Route, Running, Seen, Upstream, KEYS,
    REQUEST_ID,
};

// ---------------------------------------------------------------------
// Requests and answers
// ---------------------------------------------------------------------

async fn post(gw: &Running, route: Route, body: impl Into<reqwest::Body>) -> reqwest::Response {
    post_with(gw, route, &[], body).await
}

async fn post_with(
    gw: &Running,
    route: Route,
    headers: &[(&str, &str)],
    body: impl Into<reqwest::Body>,
) -> reqwest::Response {
    let mut request = client()
        .post(gw.url(route.path()))
        .header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.body(body).send().await.unwrap()
}

/// Queue `answer` on the upstream, then POST the route's first request.
async fn turn(
    gw: &Running,
    upstream: &Upstream,
    route: Route,
    answer: Vec<u8>,
) -> reqwest::Response {
    turn_with(gw, upstream, route, &[], answer).await
}

/// [`turn`] with `headers`.
async fn turn_with(
    gw: &Running,
    upstream: &Upstream,
    route: Route,
    headers: &[(&str, &str)],
    answer: Vec<u8>,
) -> reqwest::Response {
    upstream.reply(Reply::json(answer));
    post_with(gw, route, headers, route.request()).await
}

/// What a turn must come to.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// Released: 200.
    Released,
    /// Blocked with exactly these violation codes, in order.
    Blocked(&'static [&'static str]),
}

/// One turn of a table: the route's first request with a credential
/// header, answered upstream with one call, and what it must come to.
struct Turn {
    case: &'static str,
    route: Route,
    auth: (&'static str, &'static str),
    call: (&'static str, &'static str),
    expect: Expect,
}

/// Take `turns` in order against one gateway, naming each case.
async fn take_turns(gw: &Running, upstream: &Upstream, turns: &[Turn]) {
    for step in turns {
        let answer = step.route.calls(&[step.call]);
        let response = turn_with(gw, upstream, step.route, &[step.auth], answer).await;
        match step.expect {
            Expect::Released => assert_eq!(response.status(), 200, "{}", step.case),
            Expect::Blocked(expected) => {
                assert_eq!(response.status(), 400, "{}", step.case);
                let verdict = blocked(step.route, response).await;
                assert_eq!(codes(&verdict), expected, "{}: {verdict}", step.case);
            }
        }
    }
}

fn header(response: &reqwest::Response, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_owned())
}

fn keys_of(response: &reqwest::Response) -> Vec<String> {
    header(response, KEYS)
        .expect("released calls carry idempotency keys")
        .split(',')
        .map(str::to_owned)
        .collect()
}

/// The error object of a failed answer, after checking the route's shape:
/// OpenAI routes `{"error": {"type", "code", "message", ...}}`, Anthropic
/// `{"type": "error", "error": {"type", "message", ...}}`. Nothing is
/// released with it.
async fn error_of(route: Route, response: reqwest::Response, status: u16) -> Value {
    assert_eq!(response.status(), status, "status");
    assert!(header(&response, KEYS).is_none(), "no key with an error");
    assert!(
        header(&response, REQUEST_ID).is_some_and(|id| !id.is_empty()),
        "the request id is on every answer"
    );
    assert_eq!(
        header(&response, "content-type").as_deref(),
        Some("application/json")
    );
    let body: Value = response.json().await.unwrap();
    let error = if route.is_openai() {
        assert_eq!(body.as_object().unwrap().len(), 1, "only `error`: {body}");
        assert!(body["error"]["code"].is_string(), "{body}");
        body["error"].clone()
    } else {
        assert_eq!(body["type"], "error", "{body}");
        assert_eq!(body.as_object().unwrap().len(), 2, "{body}");
        assert!(body["error"].get("code").is_none(), "{body}");
        body["error"].clone()
    };
    assert!(error["type"].is_string(), "{body}");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("toolgate")),
        "{body}"
    );
    error
}

/// A blocked answer: HTTP 400, `guardrails_violation`, and the verdict.
/// On OpenAI routes the error's `code` is the first violation's code.
async fn blocked(route: Route, response: reqwest::Response) -> Value {
    let error = error_of(route, response, 400).await;
    assert_eq!(error["type"], "guardrails_violation", "{error}");
    let verdict = error["verdict"].clone();
    assert_eq!(verdict["passed"], false, "{error}");
    assert_eq!(verdict["label"], "fail", "{error}");
    let first = verdict["violations"][0]["code"].clone();
    assert!(first.is_string(), "{error}");
    if route.is_openai() {
        assert_eq!(error["code"], first, "{error}");
    }
    verdict
}

/// The keys docs/gateway.md gives the calls of `body`, a response of
/// `route`, under `request_id`, in order.
fn expected_keys(route: Route, body: &[u8], request_id: &str) -> Vec<String> {
    route
        .calls_in(body)
        .iter()
        .map(|(_, tool, args)| key(request_id, tool, args))
        .collect()
}

fn codes(verdict: &Value) -> Vec<String> {
    verdict["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["code"].as_str().unwrap().to_owned())
        .collect()
}

fn sha256(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// One row of `audit_calls`.
#[derive(Debug)]
struct AuditedCall {
    request_id: String,
    tool: String,
    arguments: Value,
    valid: bool,
    codes: String,
    key: Option<String>,
}

fn audited_calls(gw: &Running) -> Vec<AuditedCall> {
    let conn = gw.audit_index();
    let mut statement = conn
        .prepare(
            "SELECT request_id, tool, arguments, valid, codes, idempotency_key
             FROM audit_calls ORDER BY rowid",
        )
        .unwrap();
    statement
        .query_map([], |row| {
            Ok(AuditedCall {
                request_id: row.get(0)?,
                tool: row.get(1)?,
                arguments: serde_json::from_str(&row.get::<_, String>(2)?).unwrap(),
                valid: row.get(3)?,
                codes: row.get(4)?,
                key: row.get(5)?,
            })
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn audit_request_rows(gw: &Running) -> usize {
    let conn = gw.audit_index();
    conn.query_row("SELECT count(*) FROM audit_requests", [], |row| {
        row.get::<_, i64>(0)
    })
    .map(|n| usize::try_from(n).unwrap())
    .unwrap()
}

/// A conversation fixture as JSON, to edit.
fn conversation(path: &str) -> Value {
    serde_json::from_slice(&fixture(path)).unwrap()
}

// ---------------------------------------------------------------------
// 1. Valid responses pass as sent, with keys and a request id
// ---------------------------------------------------------------------

#[tokio::test]
async fn every_route_releases_a_valid_response_byte_for_byte_with_one_key_per_call() {
    // Captures under each route's fixtures.
    let cases = [
        (Route::Chat, "nonstream-parallel-weather-stock.json"),
        (Route::Responses, "nonstream-parallel-get-location.json"),
        (
            Route::Messages,
            "nonstream-text-and-4-parallel-tool-use.json",
        ),
    ];
    let upstream = Upstream::start().await;
    let gw = gateway("forbidden: [delete_user]", &upstream).await;
    for (at, (route, name)) in cases.into_iter().enumerate() {
        let path = format!("{}/{name}", route.dir());
        let body = fixture(&path);
        let request = route.request();
        let response = turn(&gw, &upstream, route, body.clone()).await;
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(
            header(&response, "content-type").as_deref(),
            Some("application/json")
        );
        let request_id = header(&response, REQUEST_ID).expect("a generated request id");
        assert!(uuid::Uuid::parse_str(&request_id).is_ok(), "{request_id}");
        let calls = route.calls_in(&body);
        assert_eq!(
            keys_of(&response),
            expected_keys(route, &body, &request_id),
            "{path}: one key per call, in order"
        );
        assert_eq!(
            response.bytes().await.unwrap(),
            body,
            "{path}: released exactly as sent"
        );

        let seen = &upstream.seen()[at];
        assert_eq!(seen.path, route.path());
        assert_eq!(seen.body, request.as_bytes(), "the request went up as sent");
        assert_eq!(seen.headers[REQUEST_ID], request_id.as_str());

        let record = &gw.audit_records()[at];
        assert_eq!(record["request_id"], request_id.as_str());
        assert_eq!(record["route"], route.label());
        assert_eq!(record["outcome"], "released");
        assert_eq!(record["stage"], "response");
        assert_eq!(record["attempts"], 1);
        assert_eq!(record["calls"].as_array().unwrap().len(), calls.len());
    }
    let audited = audited_calls(&gw);
    assert_eq!(audited.len(), 2 + 2 + 4);
    assert!(audited.iter().all(|c| c.valid && c.key.is_some()));
}

#[tokio::test]
async fn a_request_id_sent_by_the_client_is_used_for_keys_and_echoed() {
    let upstream = Upstream::start().await;
    let gw = gateway("allowed_functions: [retrieve_entity_info]", &upstream).await;
    let body = fixture("anthropic/nonstream-text-and-4-parallel-tool-use.json");
    let sent = [(REQUEST_ID, "client-req-7")];
    let response = turn_with(&gw, &upstream, Route::Messages, &sent, body.clone()).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        header(&response, REQUEST_ID).as_deref(),
        Some("client-req-7")
    );
    let expected = expected_keys(Route::Messages, &body, "client-req-7");
    assert_eq!(keys_of(&response), expected);
    assert_eq!(upstream.seen()[0].headers[REQUEST_ID], "client-req-7");
    assert_eq!(gw.audit_records()[0]["request_id"], "client-req-7");
    let audited = audited_calls(&gw);
    assert!(audited.iter().all(|c| c.request_id == "client-req-7"));
    let audited_keys: Vec<String> = audited.iter().map(|c| c.key.clone().unwrap()).collect();
    assert_eq!(audited_keys, expected);

    // A blocked answer carries the client's id too.
    let sent = [(REQUEST_ID, "client-req-8")];
    let answer = Route::Chat.calls(&[("delete_user", "{}")]);
    let response = turn_with(&gw, &upstream, Route::Chat, &sent, answer).await;
    assert_eq!(
        header(&response, REQUEST_ID).as_deref(),
        Some("client-req-8")
    );
    blocked(Route::Chat, response).await;

    // An id that is not a sane token is replaced, not echoed.
    let sent = [(REQUEST_ID, "two words")];
    let answer = Route::Chat.text("ok");
    let response = turn_with(&gw, &upstream, Route::Chat, &sent, answer).await;
    assert_eq!(response.status(), 200);
    let id = header(&response, REQUEST_ID).unwrap();
    assert!(uuid::Uuid::parse_str(&id).is_ok(), "{id}");
    assert_eq!(upstream.seen()[2].headers[REQUEST_ID], id.as_str());
}

// ---------------------------------------------------------------------
// 2. The gateway judges calls, not trajectories
// ---------------------------------------------------------------------

#[tokio::test]
async fn text_only_and_partial_answers_pass_though_the_policy_expects_calls() {
    let upstream = Upstream::start().await;
    let gw = gateway(
        "allowed_functions: [search, send_email]\nexpected: [search, send_email]\norder: [search, send_email]\nmin_tools: 2\nrequire_calls: true\nvalidate_args: {search: {query: cats}}",
        &upstream,
    )
    .await;
    for route in Route::ALL {
        let body = route.text("Nothing to call.");
        let response = turn(&gw, &upstream, route, body.clone()).await;
        assert_eq!(response.status(), 200, "{route:?}");
        assert!(header(&response, KEYS).is_none(), "no call, no key");
        assert_eq!(response.bytes().await.unwrap(), body, "{route:?}");

        // One call of the two expected, with another argument: still a
        // valid call.
        let body = route.calls(&[("search", r#"{"query":"dogs"}"#)]);
        let response = turn(&gw, &upstream, route, body.clone()).await;
        assert_eq!(response.status(), 200, "{route:?}");
        assert_eq!(keys_of(&response).len(), 1);
        assert_eq!(response.bytes().await.unwrap(), body, "{route:?}");
    }
    let records = gw.audit_records();
    assert_eq!(records.len(), 6);
    assert!(records.iter().all(|r| r["outcome"] == "released"));
    assert!(records.iter().all(|r| r["violations"] == json!([])));
}

// ---------------------------------------------------------------------
// 3. Each kind of bad call is blocked in the route's shape
// ---------------------------------------------------------------------

struct BadCall {
    code: &'static str,
    policy: &'static str,
    tool: &'static str,
    args: &'static str,
    /// The violation's JSON Pointer into the arguments, when it has one.
    path: Option<&'static str>,
    /// An argument value no message may quote.
    secret: Option<&'static str>,
}

const BAD_CALLS: [BadCall; 8] = [
    BadCall {
        code: "not_allowed",
        policy: "allowed_functions: [get_weather]",
        tool: "delete_everything",
        args: "{}",
        path: None,
        secret: None,
    },
    BadCall {
        code: "forbidden",
        policy: "forbidden: [delete_user]",
        tool: "delete_user",
        args: r#"{"user_id": "u-secret-417"}"#,
        path: None,
        secret: Some("u-secret-417"),
    },
    BadCall {
        code: "schema_violation",
        policy: "schema: {get_weather: {type: object, properties: {city: {type: string}, days: {type: integer, maximum: 7}}, required: [city]}}",
        tool: "get_weather",
        args: r#"{"city": "Paris", "days": 31337}"#,
        path: Some("/days"),
        secret: Some("31337"),
    },
    BadCall {
        code: "missing_required_param",
        policy: "required_params: {search: [query]}",
        tool: "search",
        args: r#"{"limit": 3}"#,
        path: None,
        secret: None,
    },
    BadCall {
        code: "malformed_arguments",
        policy: "allowed_functions: [get_weather]",
        tool: "get_weather",
        args: r#"{"city": "Par"#,
        path: None,
        secret: None,
    },
    BadCall {
        code: "malformed_arguments",
        policy: "allowed_functions: [get_weather]",
        tool: "get_weather",
        args: r#"["Paris", 3]"#,
        path: None,
        secret: None,
    },
    BadCall {
        code: "duplicate_argument_key",
        policy: "allowed_functions: [transfer]",
        tool: "transfer",
        args: r#"{"to": "alice", "amount": 5, "to": "mallory-secret"}"#,
        path: None,
        secret: Some("mallory-secret"),
    },
    BadCall {
        code: "unexpected_arguments",
        policy: "tools: [{type: function, function: {name: ping}}]",
        tool: "ping",
        args: r#"{"host": "example.com"}"#,
        path: None,
        secret: None,
    },
];

#[tokio::test]
async fn each_kind_of_bad_call_is_blocked_with_400_in_the_route_shape() {
    for bad in &BAD_CALLS {
        let upstream = Upstream::start().await;
        let gw = gateway(bad.policy, &upstream).await;
        for route in Route::ALL {
            let answer = route.calls(&[(bad.tool, bad.args)]);
            let response = turn(&gw, &upstream, route, answer).await;
            let verdict = blocked(route, response).await;
            let what = format!("{} on {route:?}: {verdict}", bad.code);
            assert_eq!(codes(&verdict)[0], bad.code, "{what}");
            let violation = &verdict["violations"][0];
            assert_eq!(violation["call"], 0, "{what}");
            assert_eq!(violation["tool"], bad.tool, "{what}");
            assert_eq!(verdict["calls"][0]["valid"], false, "{what}");
            if let Some(path) = bad.path {
                assert_eq!(violation["path"], path, "{what}");
            }
            if let Some(secret) = bad.secret {
                assert!(
                    !violation["message"].as_str().unwrap().contains(secret),
                    "a message quotes an argument value: {what}"
                );
            }
        }
        assert_eq!(upstream.seen().len(), 3);
        let records = gw.audit_records();
        assert_eq!(records.len(), 3, "{}", bad.code);
        for (record, route) in records.iter().zip(Route::ALL) {
            assert_eq!(record["outcome"], "blocked");
            assert_eq!(record["route"], route.label());
            assert_eq!(record["violations"][0]["code"], bad.code);
        }
        let audited = audited_calls(&gw);
        assert_eq!(audited.len(), 3);
        for call in &audited {
            assert!(!call.valid);
            assert!(call.codes.split(',').any(|c| c == bad.code), "{call:?}");
            assert_eq!(call.key, None, "a blocked call has no key");
        }
    }
}

/// `support-bot`'s key as OpenAI clients send it.
const SUPPORT_BEARER: (&str, &str) = ("authorization", "Bearer key-support");
/// `support-bot`'s key as Anthropic clients send it.
const SUPPORT_API_KEY: (&str, &str) = ("x-api-key", "key-support");
/// `ops-bot`'s key, both ways.
const OPS_BEARER: (&str, &str) = ("authorization", "Bearer key-ops");
const OPS_API_KEY: (&str, &str) = ("x-api-key", "key-ops");

/// A policy with two callers: `support-bot` (role `support`, customers
/// c-1 and c-2, key `key-support`) and `ops-bot` (role `ops`, key
/// `key-ops`), and `extra` appended.
fn callers_policy(extra: &str) -> String {
    format!(
        "callers:\n  - {{id: support-bot, key_sha256: '{}', roles: [support], attributes: {{customer_ids: [c-1, c-2]}}}}\n  - {{id: ops-bot, key_sha256: '{}', roles: [ops]}}\n{extra}",
        sha256("key-support"),
        sha256("key-ops"),
    )
}

#[tokio::test]
async fn roles_allow_and_forbid_tools_per_caller() {
    let upstream = Upstream::start().await;
    let policy = callers_policy(
        "roles:\n  support: {allow: [search_orders, refund], forbid: [refund]}\n  ops: {allow: ['*']}\n",
    );
    let gw = gateway(&policy, &upstream).await;
    let email = ("send_email", r#"{"to":"a@example.com"}"#);
    take_turns(
        &gw,
        &upstream,
        &[
            Turn {
                case: "allowed by the role",
                route: Route::Chat,
                auth: SUPPORT_BEARER,
                call: ("search_orders", r#"{"q":"late"}"#),
                expect: Expect::Released,
            },
            Turn {
                case: "allowed and forbidden by the same role: forbid wins",
                route: Route::Responses,
                auth: SUPPORT_BEARER,
                call: ("refund", r#"{"order_id":"o-1"}"#),
                expect: Expect::Blocked(&["unauthorized_role"]),
            },
            // Anthropic clients send `x-api-key`.
            Turn {
                case: "not allowed by any role of the caller",
                route: Route::Messages,
                auth: SUPPORT_API_KEY,
                call: email,
                expect: Expect::Blocked(&["unauthorized_role"]),
            },
            Turn {
                case: "another caller's role allows it",
                route: Route::Messages,
                auth: OPS_API_KEY,
                call: email,
                expect: Expect::Released,
            },
        ],
    )
    .await;

    let records = gw.audit_records();
    let callers: Vec<&str> = records
        .iter()
        .map(|r| r["caller"].as_str().unwrap())
        .collect();
    assert_eq!(
        callers,
        ["support-bot", "support-bot", "support-bot", "ops-bot"]
    );
    let outcomes: Vec<&str> = records
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["released", "blocked", "blocked", "released"]);
}

#[tokio::test]
async fn a_cel_rule_on_the_arguments_blocks_calls_outside_the_caller_scope() {
    let upstream = Upstream::start().await;
    let policy = callers_policy(
        "rules:\n  - {tool: get_customer, when: 'args.customer_id in caller.customer_ids', message: customer_id is outside your scope}\n",
    );
    let gw = gateway(&policy, &upstream).await;
    let auth = [SUPPORT_BEARER];
    let in_scope = ("get_customer", r#"{"customer_id":"c-1"}"#);
    for route in [Route::Chat, Route::Messages] {
        let answer = route.calls(&[in_scope]);
        let response = turn_with(&gw, &upstream, route, &auth, answer).await;
        assert_eq!(response.status(), 200, "{route:?}");

        let outside = route.calls(&[("get_customer", r#"{"customer_id":"c-999"}"#)]);
        let response = turn_with(&gw, &upstream, route, &auth, outside).await;
        let verdict = blocked(route, response).await;
        assert_eq!(codes(&verdict), ["unauthorized_argument"], "{verdict}");
        let violation = &verdict["violations"][0];
        assert_eq!(violation["path"], "/customer_id");
        let message = violation["message"].as_str().unwrap();
        assert!(
            message.contains("customer_id is outside your scope"),
            "{message}"
        );
        assert!(!message.contains("c-999"), "{message}");

        // A rule that cannot be evaluated (no such argument) denies.
        let unknown = route.calls(&[("get_customer", "{}")]);
        let response = turn_with(&gw, &upstream, route, &auth, unknown).await;
        let verdict = blocked(route, response).await;
        assert_eq!(codes(&verdict), ["unauthorized_argument"], "{verdict}");
    }
    // Another caller without the attribute: the rule errors, and denies.
    let answer = Route::Chat.calls(&[in_scope]);
    let response = turn_with(&gw, &upstream, Route::Chat, &[OPS_BEARER], answer).await;
    let verdict = blocked(Route::Chat, response).await;
    assert_eq!(codes(&verdict), ["unauthorized_argument"]);
}

#[tokio::test]
async fn a_rate_limit_by_caller_counts_across_requests_and_routes() {
    let upstream = Upstream::start().await;
    let policy = callers_policy("limits:\n  - {tool: send_email, max: 1, per: 1m, by: caller}\n");
    let gw = gateway(&policy, &upstream).await;
    let email = ("send_email", r#"{"to":"a@example.com"}"#);
    take_turns(
        &gw,
        &upstream,
        &[
            Turn {
                case: "the caller's first email",
                route: Route::Chat,
                auth: SUPPORT_BEARER,
                call: email,
                expect: Expect::Released,
            },
            Turn {
                case: "the same caller again, on another route: past the limit",
                route: Route::Messages,
                auth: SUPPORT_API_KEY,
                call: email,
                expect: Expect::Blocked(&["rate_limited"]),
            },
            Turn {
                case: "the same caller again, on the first route",
                route: Route::Chat,
                auth: SUPPORT_BEARER,
                call: email,
                expect: Expect::Blocked(&["rate_limited"]),
            },
            Turn {
                case: "another caller has its own count",
                route: Route::Chat,
                auth: OPS_BEARER,
                call: email,
                expect: Expect::Released,
            },
            Turn {
                case: "another tool is not limited",
                route: Route::Chat,
                auth: SUPPORT_BEARER,
                call: ("search", "{}"),
                expect: Expect::Released,
            },
        ],
    )
    .await;
}

// ---------------------------------------------------------------------
// 4. One bad call among parallel calls blocks them all
// ---------------------------------------------------------------------

#[tokio::test]
async fn one_bad_parallel_call_blocks_the_whole_turn() {
    let upstream = Upstream::start().await;

    // OpenAI chat: the weather call is fine, the stock call is not allowed.
    let gw = gateway("allowed_functions: [GetWeatherArgs]", &upstream).await;
    let answer = fixture("openai-chat/nonstream-parallel-weather-stock.json");
    let response = turn(&gw, &upstream, Route::Chat, answer).await;
    let (text, verdict) = blocked_whole(Route::Chat, response).await;
    assert_eq!(codes(&verdict), ["not_allowed"]);
    assert_eq!(verdict["calls"][0]["valid"], true);
    assert_eq!(verdict["calls"][1]["valid"], false);
    assert!(!text.contains("chatcmpl-ABfvyvfNWKcl7Ohqos4UFrmMs1v4C"));
    assert!(!text.contains("tool_calls"), "{text}");

    // Anthropic: three of four calls are fine, the last is not.
    let gw2 = gateway(
        "schema: {retrieve_entity_info: {type: object, properties: {name: {enum: [Alice, Bob, Charlie]}}}}",
        &upstream,
    )
    .await;
    let answer = fixture("anthropic/nonstream-text-and-4-parallel-tool-use.json");
    let response = turn(&gw2, &upstream, Route::Messages, answer).await;
    let (text, verdict) = blocked_whole(Route::Messages, response).await;
    assert_eq!(codes(&verdict), ["schema_violation"]);
    assert_eq!(verdict["violations"][0]["call"], 3);
    assert_eq!(verdict["violations"][0]["path"], "/name");
    let valid: Vec<bool> = verdict["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["valid"].as_bool().unwrap())
        .collect();
    assert_eq!(valid, [true, true, true, false]);
    assert!(!text.contains("msg_011S3wxtqL5CVescWqS3zeg2"));
    assert!(
        !text.contains("I'll help you find out"),
        "no text of the turn"
    );
    assert!(!text.contains("tool_use\""), "{text}");

    for gw in [&gw, &gw2] {
        let audited = audited_calls(gw);
        assert!(!audited.is_empty());
        assert!(audited.iter().all(|c| c.key.is_none()), "{audited:?}");
        assert_eq!(gw.audit_records()[0]["outcome"], "blocked");
    }
}

/// The body of a blocked answer and its verdict, after checking its
/// status, shape and that it carries no key.
async fn blocked_whole(route: Route, response: reqwest::Response) -> (String, Value) {
    assert_eq!(response.status(), 400);
    assert!(header(&response, KEYS).is_none());
    let text = response.text().await.unwrap();
    let body: Value = serde_json::from_str(&text).unwrap();
    if route.is_openai() {
        assert_eq!(body["error"]["type"], "guardrails_violation");
        assert!(body.get("choices").is_none());
    } else {
        assert_eq!(body["type"], "error");
        assert_eq!(body["error"]["type"], "guardrails_violation");
        assert!(body.get("content").is_none());
    }
    let verdict = body["error"]["verdict"].clone();
    (text, verdict)
}

// ---------------------------------------------------------------------
// 5. The request side
// ---------------------------------------------------------------------

#[tokio::test]
async fn tool_results_that_do_not_link_block_the_request_before_the_upstream() {
    // (route, edited conversation, expected first code)
    let mut cases: Vec<(Route, Value, &str)> = Vec::new();

    let mut unknown = conversation("conversations/openai-chat-parallel-tool-results.json");
    unknown["messages"][3]["tool_call_id"] = json!("call_nowhere");
    cases.push((Route::Chat, unknown, "result_unknown_call_id"));

    let mut unknown = conversation("conversations/anthropic-4-parallel-tool-results.json");
    unknown["messages"][2]["content"][1]["tool_use_id"] = json!("toolu_nowhere");
    cases.push((Route::Messages, unknown, "result_unknown_call_id"));

    let mut unknown = conversation("conversations/openai-responses-function-call-output.json");
    unknown["input"][4]["call_id"] = json!("call_nowhere");
    cases.push((Route::Responses, unknown, "result_unknown_call_id"));

    let mut twice = conversation("conversations/openai-chat-parallel-tool-results.json");
    twice["messages"][3]["tool_call_id"] = json!("call_sf");
    cases.push((Route::Chat, twice, "result_duplicate_call_id"));

    let mut twice = conversation("conversations/openai-responses-function-call-output.json");
    twice["input"][5]["call_id"] = twice["input"][4]["call_id"].clone();
    cases.push((Route::Responses, twice, "result_duplicate_call_id"));

    let mut twice = conversation("conversations/anthropic-4-parallel-tool-results.json");
    twice["messages"][2]["content"][3]["tool_use_id"] = json!("toolu_0167cfEnoQaPviGdVXA95zcu");
    cases.push((Route::Messages, twice, "result_duplicate_call_id"));

    // The first call's result is replaced by a user turn, and the
    // conversation moved on to another call.
    let mut missing = conversation("conversations/openai-chat-two-sequential-tool-calls.json");
    missing["messages"][2] = json!({"role": "user", "content": "skip that"});
    cases.push((Route::Chat, missing, "result_missing"));

    for (route, request, code) in cases {
        let upstream = Upstream::start().await;
        upstream.reply(Reply::json(route.text("never sent")));
        let gw = gateway("forbidden: [delete_user]", &upstream).await;
        let response = post(&gw, route, serde_json::to_vec(&request).unwrap()).await;
        assert_eq!(response.status(), 400, "{route:?} {code}");
        let verdict = blocked(route, response).await;
        assert_eq!(codes(&verdict)[0], code, "{route:?}: {verdict}");
        assert!(upstream.seen().is_empty(), "{code}: the upstream saw it");
        let records = gw.audit_records();
        assert_eq!(records.len(), 1);
        assert_eq!(records[0]["outcome"], "blocked");
        assert_eq!(records[0]["stage"], "request");
        assert_eq!(records[0]["violations"][0]["code"], code);
    }
}

#[tokio::test]
async fn conversations_with_linked_results_reach_the_upstream_byte_for_byte() {
    // Captures under conversations/.
    let cases = [
        (Route::Chat, "openai-chat-parallel-tool-results.json"),
        (Route::Chat, "openai-chat-two-sequential-tool-calls.json"),
        (
            Route::Responses,
            "openai-responses-function-call-output.json",
        ),
        (Route::Messages, "anthropic-4-parallel-tool-results.json"),
        (Route::Messages, "anthropic-tool-result-is-error.json"),
    ];
    let upstream = Upstream::start().await;
    let gw = gateway("forbidden: [delete_user]", &upstream).await;
    for (at, (route, name)) in cases.into_iter().enumerate() {
        let path = format!("conversations/{name}");
        let request = fixture(&path);
        let answer = route.text("Done.");
        upstream.reply(Reply::json(answer.clone()));
        let response = post(&gw, route, request.clone()).await;
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(response.bytes().await.unwrap(), answer);
        let seen = &upstream.seen()[at];
        assert_eq!(seen.path, route.path(), "{path}");
        assert_eq!(seen.body, request, "{path}: forwarded byte for byte");
    }
}

#[tokio::test]
async fn a_request_declaring_a_tool_with_an_invalid_schema_is_blocked() {
    let upstream = Upstream::start().await;
    upstream.reply(Reply::json(Route::Chat.text("never sent")));
    let gw = gateway("forbidden: [delete_user]", &upstream).await;
    let request = json!({
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": "weather?"}],
        "tools": [{"type": "function", "function": {"name": "get_weather",
                   "parameters": {"type": "objekt", "properties": {"city": {"type": "string"}}}}}]
    });
    let response = post(&gw, Route::Chat, request.to_string()).await;
    let verdict = blocked(Route::Chat, response).await;
    assert_eq!(codes(&verdict), ["invalid_tool_schema"], "{verdict}");
    assert_eq!(verdict["violations"][0]["tool"], "get_weather");
    assert!(upstream.seen().is_empty());

    let request = json!({
        "model": "claude-haiku-4-5", "max_tokens": 64,
        "messages": [{"role": "user", "content": "weather?"}],
        "tools": [{"name": "get_weather", "input_schema": {"type": "object", "required": "city"}}]
    });
    let response = post(&gw, Route::Messages, request.to_string()).await;
    let verdict = blocked(Route::Messages, response).await;
    assert_eq!(codes(&verdict), ["invalid_tool_schema"], "{verdict}");
    assert!(upstream.seen().is_empty());
}

#[tokio::test]
async fn tools_declared_in_the_request_are_merged_with_the_policy() {
    let upstream = Upstream::start().await;
    // The policy declares nothing about get_weather; it declares lookup.
    let gw = gateway(
        "tools: [{name: lookup, parameters: {type: object, properties: {id: {type: integer}}, required: [id]}}]",
        &upstream,
    )
    .await;
    let declared = json!({"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"], "additionalProperties": false}}});
    let mut request: Value = serde_json::from_str(&Route::Chat.request()).unwrap();
    request["tools"] = json!([declared]);
    let request = request.to_string();

    // The request's schema applies to its tool.
    upstream.reply(Reply::json(
        Route::Chat.calls(&[("get_weather", r#"{"city": 75}"#)]),
    ));
    let verdict = blocked(Route::Chat, post(&gw, Route::Chat, request.clone()).await).await;
    assert_eq!(codes(&verdict), ["schema_violation"], "{verdict}");
    assert_eq!(verdict["violations"][0]["path"], "/city");

    // Valid for the request's tool and for the policy's: both pass.
    let good = Route::Chat.calls(&[
        ("get_weather", r#"{"city": "Oslo"}"#),
        ("lookup", r#"{"id": 3}"#),
    ]);
    upstream.reply(Reply::json(good.clone()));
    let response = post(&gw, Route::Chat, request.clone()).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.bytes().await.unwrap(), good);

    // The policy's schema still applies.
    upstream.reply(Reply::json(
        Route::Chat.calls(&[("lookup", r#"{"id": "x"}"#)]),
    ));
    let verdict = blocked(Route::Chat, post(&gw, Route::Chat, request.clone()).await).await;
    assert_eq!(codes(&verdict), ["schema_violation"], "{verdict}");

    // A tool neither declares is not allowed.
    upstream.reply(Reply::json(Route::Chat.calls(&[("rm_rf", "{}")])));
    let verdict = blocked(Route::Chat, post(&gw, Route::Chat, request).await).await;
    assert_eq!(codes(&verdict), ["not_allowed"], "{verdict}");

    // With a policy that declares nothing, the request's schema alone
    // decides (Anthropic `input_schema`).
    let upstream = Upstream::start().await;
    let gw = gateway("forbidden: [delete_user]", &upstream).await;
    let request = json!({
        "model": "claude-haiku-4-5", "max_tokens": 64,
        "messages": [{"role": "user", "content": "weather?"}],
        "tools": [{"name": "get_weather", "input_schema": {"type": "object",
                   "properties": {"units": {"enum": ["c", "f"]}}, "required": ["units"]}}]
    });
    upstream.reply(Reply::json(
        Route::Messages.calls(&[("get_weather", r#"{"units": "kelvin"}"#)]),
    ));
    let verdict = blocked(
        Route::Messages,
        post(&gw, Route::Messages, request.to_string()).await,
    )
    .await;
    assert_eq!(codes(&verdict), ["schema_violation"], "{verdict}");
    assert_eq!(verdict["violations"][0]["path"], "/units");
}

/// The tools of a chat request: `get_weather`, whose `city` is at most
/// `max` characters.
fn weather_tools(max: u64) -> String {
    json!([{"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": max}},
                       "required": ["city"]}}}])
    .to_string()
}

#[tokio::test]
#[allow(clippy::float_cmp)]
async fn requests_with_different_tool_lists_never_share_a_gate_and_a_repeated_list_is_reused() {
    let upstream = Upstream::start().await;
    let gw = gateway("forbidden: [delete_user]", &upstream).await;
    let chat = |tools: &str| {
        format!(
            r#"{{"model": "gpt-4o", "messages": [{{"role": "user", "content": "weather?"}}], "tools": {tools}}}"#
        )
    };
    // Two lists that differ in one schema detail; the second written again
    // with its keys in another order and with other white space (the same
    // tools, another text: compiled on its own, with the same verdicts).
    let short = chat(&weather_tools(4));
    let long = chat(&weather_tools(8));
    let reordered = chat(
        r#"[ {"function": {"parameters": {"required": ["city"], "properties": {"city": {"maxLength": 8, "type": "string"}}, "type": "object"}, "name": "get_weather"}, "type": "function"} ]"#,
    );
    // Anthropic lists that differ in one enum value.
    let messages = |units: &str| {
        format!(
            r#"{{"model": "claude-haiku-4-5", "max_tokens": 64, "messages": [{{"role": "user", "content": "weather?"}}], "tools": [{{"name": "get_weather", "input_schema": {{"type": "object", "properties": {{"units": {{"enum": ["c", "{units}"]}}}}, "required": ["units"]}}}}]}}"#
        )
    };
    let (fahrenheit, kelvin) = (messages("f"), messages("k"));
    // "Paris" is 5 characters: too long for the first list only; "k" is
    // one of the units of the last list only.
    let paris = Route::Chat.calls(&[("get_weather", r#"{"city": "Paris"}"#)]);
    let in_kelvin = Route::Messages.calls(&[("get_weather", r#"{"units": "k"}"#)]);
    let turns = [
        (Route::Chat, &short, &paris, false),
        (Route::Chat, &long, &paris, true),
        (Route::Chat, &short, &paris, false),
        (Route::Chat, &reordered, &paris, true),
        (Route::Chat, &long, &paris, true),
        (Route::Chat, &reordered, &paris, true),
        (Route::Chat, &short, &paris, false),
        (Route::Messages, &fahrenheit, &in_kelvin, false),
        (Route::Messages, &kelvin, &in_kelvin, true),
        (Route::Messages, &fahrenheit, &in_kelvin, false),
        (Route::Messages, &kelvin, &in_kelvin, true),
    ];
    for (at, (route, request, answer, passes)) in turns.into_iter().enumerate() {
        upstream.reply(Reply::json(answer.clone()));
        let response = post(&gw, route, request.clone()).await;
        if passes {
            assert_eq!(response.status(), 200, "turn {at}");
            assert_eq!(response.bytes().await.unwrap(), *answer, "turn {at}");
        } else {
            let verdict = blocked(route, response).await;
            assert_eq!(
                codes(&verdict),
                ["schema_violation"],
                "turn {at}: {verdict}"
            );
        }
    }
    // Five texts compiled once each; every other request found its own.
    let text = client()
        .get(gw.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let lists = |outcome: &str| {
        sample(
            &text,
            &format!("toolgate_tool_lists_total{{outcome=\"{outcome}\"}}"),
        )
    };
    assert_eq!((lists("compiled"), lists("reused")), (5.0, 6.0), "{text}");
}

#[tokio::test]
async fn a_first_responses_request_with_a_string_input_goes_upstream() {
    // The most common Responses request: nothing to link, nothing declared.
    let upstream = Upstream::start().await;
    let gw = gateway("forbidden: [delete_user]", &upstream).await;
    let answer = Route::Responses.text("Hello.");
    upstream.reply(Reply::json(answer.clone()));
    upstream.reply(Reply::json(answer.clone()));
    for request in [
        r#"{"model":"gpt-4o","input":"hi"}"#,
        r#"{"model":"gpt-4o","instructions":"Be brief.","input":"hi","store":false}"#,
    ] {
        let response = post(&gw, Route::Responses, request).await;
        assert_eq!(response.status(), 200, "{request}");
        assert_eq!(response.bytes().await.unwrap(), answer);
    }
    let seen = upstream.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[0].body,
        r#"{"model":"gpt-4o","input":"hi"}"#.as_bytes()
    );
}

#[tokio::test]
async fn a_responses_follow_up_with_previous_response_id_answers_released_calls() {
    let upstream = Upstream::start().await;
    let gw = gateway("forbidden: [delete_user]", &upstream).await;
    let answer = fixture("openai-responses/nonstream-parallel-get-location.json");
    let response = turn(&gw, &upstream, Route::Responses, answer.clone()).await;
    assert_eq!(response.status(), 200);
    let answer: Value = serde_json::from_slice(&answer).unwrap();
    // The documented tool loop: the results of the released calls, with
    // the conversation kept upstream by `previous_response_id`.
    let follow_up = json!({
        "model": "gpt-4o",
        "previous_response_id": answer["id"],
        "input": [
            {"type": "function_call_output", "call_id": answer["output"][0]["call_id"],
             "output": "Wrong location, I only know about \"London\"."},
            {"type": "function_call_output", "call_id": answer["output"][1]["call_id"],
             "output": "{\"lat\": 51, \"lng\": 0}"}
        ]
    })
    .to_string();
    upstream.reply(Reply::json(Route::Responses.text("London is at 51N.")));
    let response = post(&gw, Route::Responses, follow_up.clone()).await;
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    let seen = upstream.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1].body, follow_up.as_bytes());
}

#[tokio::test]
async fn a_request_with_a_duplicated_key_is_refused_before_the_upstream() {
    // The gateway must read the request the way the upstream will: with a
    // key twice, one reading may see linked results and the other forged
    // ones.
    let upstream = Upstream::start().await;
    let gw = gateway("forbidden: [delete_user]", &upstream).await;
    let requests = [
        r#"{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"call_forged","content":"ok"}]}"#,
        r#"{"model":"gpt-4o","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","tool_call_id":"call_forged","content":"ok"}]}"#,
    ];
    for request in requests {
        upstream.reply(Reply::json(Route::Chat.text("never sent")));
        let response = post(&gw, Route::Chat, request).await;
        assert_eq!(response.status(), 400, "{request}");
    }
    assert!(upstream.seen().is_empty(), "a duplicated key went upstream");
}

// ---------------------------------------------------------------------
// 6. Callers, keys and headers
// ---------------------------------------------------------------------

#[tokio::test]
async fn without_a_known_caller_the_request_is_refused_with_401() {
    let upstream = Upstream::start().await;
    let gw = gateway(&callers_policy(""), &upstream).await;
    for route in Route::ALL {
        for auth in [
            None,
            Some(("authorization", "Bearer key-unknown")),
            Some(("x-api-key", "key-unknown")),
            Some(("authorization", "Basic a2V5LXN1cHBvcnQ6")),
        ] {
            let headers: Vec<(&str, &str)> = auth.into_iter().collect();
            let response = post_with(&gw, route, &headers, route.request()).await;
            let error = error_of(route, response, 401).await;
            assert_eq!(error["type"], "authentication_error", "{route:?} {auth:?}");
        }
    }
    assert!(upstream.seen().is_empty());
    assert_eq!(audit_request_rows(&gw), 0);
}

#[tokio::test]
async fn the_caller_header_names_the_caller_and_stays_at_the_gateway() {
    let upstream = Upstream::start().await;
    let policy = "callers:\n  - {id: support-bot, roles: [support]}\ncaller_header: X-Toolgate-Caller\nroles:\n  support: {allow: [get_weather]}\n";
    let gw = gateway(policy, &upstream).await;
    let named = [("x-toolgate-caller", "support-bot")];
    let body = Route::Chat.calls(&[("get_weather", r#"{"city":"Oslo"}"#)]);
    let response = turn_with(&gw, &upstream, Route::Chat, &named, body.clone()).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.bytes().await.unwrap(), body);
    assert_eq!(gw.audit_records()[0]["caller"], "support-bot");
    let seen = upstream.seen();
    assert!(
        seen[0].headers.get("x-toolgate-caller").is_none(),
        "the trusted header is not forwarded"
    );

    // The role still applies to the caller the header names.
    let refund = Route::Chat.calls(&[("refund", "{}")]);
    let response = turn_with(&gw, &upstream, Route::Chat, &named, refund).await;
    let verdict = blocked(Route::Chat, response).await;
    assert_eq!(codes(&verdict), ["unauthorized_role"]);

    // A name that is no caller, or no header: 401.
    for headers in [vec![("x-toolgate-caller", "nobody")], vec![]] {
        let response = post_with(&gw, Route::Chat, &headers, Route::Chat.request()).await;
        let error = error_of(Route::Chat, response, 401).await;
        assert_eq!(error["type"], "authentication_error");
    }
    assert_eq!(upstream.seen().len(), 2);
}

#[tokio::test]
async fn the_upstream_key_replaces_the_client_key_in_the_route_header() {
    assert!(
        std::env::var(toolgate_gateway::UPSTREAM_KEY_ENV).is_err(),
        "these tests need {} unset",
        toolgate_gateway::UPSTREAM_KEY_ENV
    );
    let upstream = Upstream::start().await;
    let policy = callers_policy(
        "roles:\n  support: {allow: ['*']}\ngateway: {upstream_key: sk-upstream-1}\n",
    );
    let gw = gateway(&policy, &upstream).await;
    for route in Route::ALL {
        let key = match route {
            Route::Messages => SUPPORT_API_KEY,
            _ => SUPPORT_BEARER,
        };
        let response = turn_with(&gw, &upstream, route, &[key], route.text("ok")).await;
        assert_eq!(response.status(), 200);
    }
    let seen = upstream.seen();
    for (seen, route) in seen.iter().zip(Route::ALL) {
        let auth = seen
            .headers
            .get("authorization")
            .map(|v| v.to_str().unwrap());
        let api_key = seen.headers.get("x-api-key").map(|v| v.to_str().unwrap());
        if route.is_openai() {
            assert_eq!(auth, Some("Bearer sk-upstream-1"), "{route:?}");
            assert_eq!(api_key, None, "{route:?}");
        } else {
            assert_eq!(api_key, Some("sk-upstream-1"), "{route:?}");
            assert_eq!(auth, None, "{route:?}");
        }
        assert_eq!(
            seen.headers.get_all("authorization").iter().count(),
            usize::from(route.is_openai())
        );
    }

    // Without an upstream key, the client's key goes up as sent.
    let upstream = Upstream::start().await;
    let gw = gateway("forbidden: [delete_user]", &upstream).await;
    upstream.reply(Reply::json(Route::Chat.text("ok")));
    upstream.reply(Reply::json(Route::Messages.text("ok")));
    let response = post_with(
        &gw,
        Route::Chat,
        &[("authorization", "Bearer sk-client-9")],
        Route::Chat.request(),
    )
    .await;
    assert_eq!(response.status(), 200);
    let response = post_with(
        &gw,
        Route::Messages,
        &[
            ("x-api-key", "sk-ant-client-9"),
            ("anthropic-version", "2023-06-01"),
        ],
        Route::Messages.request(),
    )
    .await;
    assert_eq!(response.status(), 200);
    let seen = upstream.seen();
    assert_eq!(seen[0].headers["authorization"], "Bearer sk-client-9");
    assert_eq!(seen[1].headers["x-api-key"], "sk-ant-client-9");
    assert_eq!(seen[1].headers["anthropic-version"], "2023-06-01");
}

#[tokio::test]
async fn a_callers_toolgate_key_never_goes_upstream() {
    let upstream = Upstream::start().await;
    let policy = callers_policy("roles:\n  support: {allow: ['*']}\n");
    let gw = gateway(&policy, &upstream).await;
    for route in Route::ALL {
        let key = match route {
            Route::Messages => SUPPORT_API_KEY,
            _ => SUPPORT_BEARER,
        };
        let response = turn_with(&gw, &upstream, route, &[key], route.text("ok")).await;
        assert_eq!(response.status(), 200, "{route:?}");
    }
    for (seen, route) in upstream.seen().iter().zip(Route::ALL) {
        assert!(seen.headers.get("authorization").is_none(), "{route:?}");
        assert!(seen.headers.get("x-api-key").is_none(), "{route:?}");
        assert_eq!(
            seen.headers["content-type"], "application/json",
            "{route:?}"
        );
    }
}

// ---------------------------------------------------------------------
// 7. on_violation: retry
// ---------------------------------------------------------------------

/// The violation messages of `body` under `policy`, per call id, as the
/// library reports them.
fn messages_by_call(policy: &str, body: &[u8]) -> Vec<(String, Vec<String>)> {
    let policy = toolgate::Policy::from_text(policy, None).unwrap();
    let verdict = serde_json::to_value(policy.check(body)).unwrap();
    verdict["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let messages = c["violations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v["message"].as_str().unwrap().to_owned())
                .collect();
            (c["id"].as_str().unwrap().to_owned(), messages)
        })
        .collect()
}

/// A tool result written by the gateway: for a bad call it holds every
/// violation message; for a good call it says the call did not run.
fn assert_feedback(content: &str, messages: &[String]) {
    assert!(content.starts_with("toolgate"), "{content}");
    if messages.is_empty() {
        assert!(content.contains("did not run"), "{content}");
    } else {
        assert!(content.contains("blocked"), "{content}");
        for message in messages {
            assert!(
                content.contains(message.as_str()),
                "{content} lacks {message}"
            );
        }
    }
}

/// `body` with every `from` replaced by `to`, which must change it.
fn edited(body: &[u8], from: &str, to: &str) -> Vec<u8> {
    let edited = String::from_utf8(body.to_vec())
        .unwrap()
        .replace(from, to)
        .into_bytes();
    assert_ne!(edited, body, "`{from}` is in the body");
    edited
}

/// A turn on `route` that the gateway retried once.
struct Retried {
    gw: Running,
    request_id: String,
    /// The two requests the upstream saw.
    seen: Vec<Seen>,
    /// The second of them, as JSON.
    second: Value,
    /// The first answer, as JSON.
    first_answer: Value,
    /// The first answer's violation messages, per call id.
    feedback: Vec<(String, Vec<String>)>,
}

/// The route's first request through a gateway with `policy` whose
/// upstream answers `bad`, then `good`: the client gets `good` as sent,
/// with its keys, after two requests upstream.
async fn retried(policy: &str, route: Route, bad: &[u8], good: &[u8]) -> Retried {
    let upstream = Upstream::start().await;
    upstream.reply(Reply::json(bad.to_vec()));
    upstream.reply(Reply::json(good.to_vec()));
    let gw = gateway(policy, &upstream).await;
    let response = post(&gw, route, route.request()).await;
    assert_eq!(response.status(), 200, "{route:?}");
    let request_id = header(&response, REQUEST_ID).unwrap();
    assert_eq!(
        keys_of(&response),
        expected_keys(route, good, &request_id),
        "{route:?}: the second answer's keys"
    );
    assert_eq!(
        response.bytes().await.unwrap(),
        good,
        "{route:?}: the second answer, as sent"
    );
    let seen = upstream.seen();
    assert_eq!(seen.len(), 2, "{route:?}");
    Retried {
        gw,
        request_id,
        second: seen[1].json(),
        seen,
        first_answer: serde_json::from_slice(bad).unwrap(),
        feedback: messages_by_call(policy, bad),
    }
}

#[tokio::test]
async fn retry_on_chat_sends_the_violations_back_as_tool_messages() {
    let policy = "schema: {GetWeatherArgs: {type: object, properties: {units: {enum: [c, f]}}}}\ngateway: {on_violation: retry, max_retries: 2}";
    let good = fixture("openai-chat/nonstream-parallel-weather-stock.json");
    let bad = edited(&good, r#"\"units\": \"c\""#, r#"\"units\": \"kelvin\""#);
    let Retried {
        gw,
        request_id,
        seen,
        second,
        first_answer,
        feedback,
    } = retried(policy, Route::Chat, &bad, &good).await;

    let request = Route::Chat.request();
    assert_eq!(seen[0].body, request.as_bytes());
    let first: Value = serde_json::from_str(&request).unwrap();
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1 + 1 + 2, "{second}");
    assert_eq!(messages[0], first["messages"][0]);
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(
        messages[1]["tool_calls"],
        first_answer["choices"][0]["message"]["tool_calls"]
    );
    assert!(!feedback[0].1.is_empty() && feedback[1].1.is_empty());
    for (message, (id, reasons)) in messages[2..].iter().zip(&feedback) {
        assert_eq!(message["role"], "tool");
        assert_eq!(message["tool_call_id"], id.as_str());
        assert_feedback(message["content"].as_str().unwrap(), reasons);
    }
    assert_eq!(second["model"], "gpt-4o");
    assert_eq!(seen[1].headers[REQUEST_ID], request_id.as_str());

    let records = gw.audit_records();
    assert_eq!(records.len(), 1, "one record per request");
    assert_eq!(records[0]["outcome"], "released");
    assert_eq!(records[0]["attempts"], 2);
}

#[tokio::test]
async fn retry_on_messages_sends_tool_results_with_is_error() {
    let policy = "schema: {retrieve_entity_info: {type: object, properties: {name: {enum: [Alice, Bob, Charlie, Daisy]}}}}\ngateway: {on_violation: retry}";
    let good = fixture("anthropic/nonstream-text-and-4-parallel-tool-use.json");
    let bad = edited(&good, r#""name": "Bob""#, r#""name": "Robert""#);
    assert_eq!(Route::Messages.calls_in(&good).len(), 4);
    let Retried {
        gw,
        second,
        first_answer,
        feedback,
        ..
    } = retried(policy, Route::Messages, &bad, &good).await;

    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{second}");
    assert_eq!(messages[0]["content"], "hi");
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["content"], first_answer["content"]);
    assert_eq!(messages[2]["role"], "user");
    let results = messages[2]["content"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    assert!(feedback[1].1.len() == 1 && feedback[0].1.is_empty());
    for (result, (id, reasons)) in results.iter().zip(&feedback) {
        assert_eq!(result["type"], "tool_result");
        assert_eq!(result["tool_use_id"], id.as_str());
        assert_eq!(result["is_error"], true);
        assert_feedback(result["content"].as_str().unwrap(), reasons);
    }
    assert_eq!(second["max_tokens"], 256);
    assert_eq!(gw.audit_records()[0]["attempts"], 2);
}

#[tokio::test]
async fn retry_on_responses_sends_function_call_outputs() {
    let policy = "schema: {get_location: {type: object, properties: {loc_name: {enum: [London, Paris]}}}}\ngateway: {on_violation: retry, max_retries: 1}";
    // The captured answer asks for "Londos": not a known location.
    let bad = fixture("openai-responses/nonstream-parallel-get-location.json");
    let good = edited(&bad, "Londos", "Paris");
    assert_eq!(Route::Responses.calls_in(&good).len(), 2);
    let Retried {
        second,
        first_answer,
        feedback,
        ..
    } = retried(policy, Route::Responses, &bad, &good).await;

    let input = second["input"].as_array().unwrap();
    let output = first_answer["output"].as_array().unwrap();
    assert_eq!(input.len(), 1 + output.len() + 2, "{second}");
    assert_eq!(input[0]["role"], "user");
    assert_eq!(input[0]["content"], "hi");
    assert_eq!(&input[1..=output.len()], output.as_slice());
    assert!(!feedback[0].1.is_empty() && feedback[1].1.is_empty());
    for (item, (id, reasons)) in input[1 + output.len()..].iter().zip(&feedback) {
        assert_eq!(item["type"], "function_call_output");
        assert_eq!(item["call_id"], id.as_str());
        assert_feedback(item["output"].as_str().unwrap(), reasons);
    }
}

#[tokio::test]
async fn retry_gives_up_after_max_retries_and_blocks() {
    for max_retries in [0u32, 2] {
        let policy = format!(
            "forbidden: [delete_user]\ngateway: {{on_violation: retry, max_retries: {max_retries}}}"
        );
        let upstream = Upstream::start().await;
        for _ in 0..=max_retries + 1 {
            upstream.reply(Reply::json(Route::Chat.calls(&[("delete_user", "{}")])));
        }
        let gw = gateway(&policy, &upstream).await;
        let response = post(&gw, Route::Chat, Route::Chat.request()).await;
        let verdict = blocked(Route::Chat, response).await;
        assert_eq!(codes(&verdict)[0], "forbidden");
        let seen = upstream.seen();
        assert_eq!(
            u32::try_from(seen.len()).unwrap(),
            1 + max_retries,
            "max_retries {max_retries}"
        );
        // Each retry carries every earlier turn and its feedback.
        for (at, seen) in seen.iter().enumerate() {
            assert_eq!(
                seen.json()["messages"].as_array().unwrap().len(),
                1 + 2 * at
            );
        }
        let records = gw.audit_records();
        assert_eq!(records.len(), 1);
        assert_eq!(records[0]["outcome"], "blocked");
        assert_eq!(records[0]["attempts"], 1 + max_retries);
    }
}

// ---------------------------------------------------------------------
// 8. Audit
// ---------------------------------------------------------------------

#[tokio::test]
async fn sqlite_audit_has_a_row_per_request_and_keys_on_released_calls_only() {
    let upstream = Upstream::start().await;
    let gw = gateway(
        "allowed_functions: [GetWeatherArgs, get_stock_price]",
        &upstream,
    )
    .await;
    let good = fixture("openai-chat/nonstream-parallel-weather-stock.json");
    let released = turn(&gw, &upstream, Route::Chat, good).await;
    assert_eq!(released.status(), 200);
    let keys = keys_of(&released);
    let released_id = header(&released, REQUEST_ID).unwrap();
    let bad = Route::Chat.calls(&[
        ("get_stock_price", r#"{"ticker":"AAPL"}"#),
        ("wire_money", r#"{"amount":10}"#),
    ]);
    let blocked_response = turn(&gw, &upstream, Route::Chat, bad).await;
    let blocked_id = header(&blocked_response, REQUEST_ID).unwrap();
    blocked(Route::Chat, blocked_response).await;
    let text = turn(&gw, &upstream, Route::Chat, Route::Chat.text("just text")).await;
    assert_eq!(text.status(), 200);
    let text_id = header(&text, REQUEST_ID).unwrap();

    let records = gw.audit_records();
    assert_eq!(audit_request_rows(&gw), 3);
    let ids: Vec<&str> = records
        .iter()
        .map(|r| r["request_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [released_id.as_str(), blocked_id.as_str(), text_id.as_str()]
    );
    let expected_hash = sha256(&format!(
        "allowed_functions: [GetWeatherArgs, get_stock_price]\naudit: {{sqlite: '{}'}}\n",
        gw.audit_db().display()
    ));
    for record in &records {
        assert_eq!(record["policy_hash"], expected_hash.as_str());
        assert_eq!(record["model"], "gpt-4o");
        assert_eq!(record["stream"], false);
        assert!(record["time_ms"].as_u64().unwrap() > 1_600_000_000_000);
    }
    assert_eq!(records[1]["violations"][0]["code"], "not_allowed");
    assert_eq!(records[2]["calls"], json!([]));

    let calls = audited_calls(&gw);
    assert_eq!(calls.len(), 4);
    assert_eq!(calls[0].request_id, released_id);
    assert_eq!(calls[0].tool, "GetWeatherArgs");
    assert_eq!(
        calls[0].arguments,
        json!({"city": "Edinburgh", "country": "GB", "units": "c"})
    );
    assert_eq!(calls[0].key.as_deref(), Some(keys[0].as_str()));
    assert_eq!(calls[1].key.as_deref(), Some(keys[1].as_str()));
    assert_eq!(calls[2].request_id, blocked_id);
    assert!(calls[2].valid, "the valid call of a blocked turn");
    assert_eq!(calls[2].key, None, "...has no key: it was not released");
    assert!(!calls[3].valid);
    assert_eq!(calls[3].codes, "not_allowed");
    assert_eq!(calls[3].key, None);
}

#[tokio::test]
async fn redacted_argument_keys_are_hidden_in_the_audit_at_any_depth() {
    let upstream = Upstream::start().await;
    let gw = gateway(
        "audit: {sqlite: '{dir}/audit.db', redact: [password, api_key]}",
        &upstream,
    )
    .await;
    let args = r#"{"user":"ann","password":"hunter2-secret","profile":{"api_key":"sk-live-777","name":"Ann"},"history":[{"password":"old-secret"},{"note":"kept"}]}"#;
    let body = Route::Messages.calls(&[("login", args)]);
    let response = turn(&gw, &upstream, Route::Messages, body.clone()).await;
    assert_eq!(response.status(), 200);
    let request_id = header(&response, REQUEST_ID).unwrap();
    let keys = keys_of(&response);
    assert_eq!(
        response.bytes().await.unwrap(),
        body,
        "the client gets every value"
    );
    let real: Value = serde_json::from_str(args).unwrap();
    assert_eq!(
        keys,
        [key(&request_id, "login", &real)],
        "keys hash the real arguments"
    );

    let calls = audited_calls(&gw);
    assert_eq!(
        calls[0].arguments,
        json!({"user": "ann", "password": "[REDACTED]",
               "profile": {"api_key": "[REDACTED]", "name": "Ann"},
               "history": [{"password": "[REDACTED]"}, {"note": "kept"}]})
    );
    let conn = gw.audit_index();
    let everything: String = conn
        .query_row(
            "SELECT group_concat(record, '') FROM audit_requests",
            [],
            |row| row.get(0),
        )
        .unwrap();
    // The log the index is built from holds the records as redacted too.
    let mut log = Vec::new();
    for entry in std::fs::read_dir(gw.dir.path().join("audit.db-log")).unwrap() {
        log.extend(std::fs::read(entry.unwrap().path()).unwrap());
    }
    let log = String::from_utf8_lossy(&log);
    for secret in ["hunter2-secret", "sk-live-777", "old-secret"] {
        assert!(!everything.contains(secret), "{secret} in the audit");
        assert!(!log.contains(secret), "{secret} in the audit log");
    }
    assert!(everything.contains("[REDACTED]"));
    assert!(log.contains("[REDACTED]"));
}

#[tokio::test]
async fn jsonl_audit_writes_one_line_per_request() {
    let upstream = Upstream::start().await;
    let gw = gateway(
        "forbidden: [delete_user]\naudit: {jsonl: '{dir}/audit.jsonl', redact: [token]}",
        &upstream,
    )
    .await;
    let answer = Route::Chat.calls(&[("get_weather", r#"{"city":"Oslo","token":"t-1"}"#)]);
    let first = turn(&gw, &upstream, Route::Chat, answer).await;
    assert_eq!(first.status(), 200);
    let first_id = header(&first, REQUEST_ID).unwrap();
    let answer = Route::Responses.calls(&[("delete_user", "{}")]);
    let second = turn(&gw, &upstream, Route::Responses, answer).await;
    let second_id = header(&second, REQUEST_ID).unwrap();
    blocked(Route::Responses, second).await;

    let text = std::fs::read_to_string(gw.dir.path().join("audit.jsonl")).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(text.ends_with('\n'));
    assert_eq!(lines[0]["request_id"], first_id.as_str());
    assert_eq!(lines[0]["outcome"], "released");
    assert_eq!(lines[0]["route"], "chat_completions");
    assert_eq!(
        lines[0]["calls"][0]["arguments"],
        json!({"city": "Oslo", "token": "[REDACTED]"})
    );
    assert!(lines[0]["calls"][0]["idempotency_key"].is_string());
    assert_eq!(lines[1]["request_id"], second_id.as_str());
    assert_eq!(lines[1]["outcome"], "blocked");
    assert_eq!(lines[1]["calls"][0]["idempotency_key"], Value::Null);
    assert!(!gw.audit_db().exists(), "no SQLite file with jsonl");
}

/// An audit store that cannot write.
#[derive(Debug)]
struct BrokenStore;

impl AuditStore for BrokenStore {
    fn write(&mut self, _batch: &[AuditRecord]) -> Result<(), String> {
        Err("the disk is gone".to_owned())
    }
}

#[tokio::test]
async fn a_failing_audit_store_fails_the_request_with_503_and_releases_nothing() {
    let upstream = Upstream::start().await;
    let custom =
        gateway_with_store("forbidden: [delete_user]", &upstream, Box::new(BrokenStore)).await;
    let full = gateway(
        "forbidden: [delete_user]\naudit: {jsonl: /dev/full}",
        &upstream,
    )
    .await;
    for gw in [&custom, &full] {
        for route in Route::ALL {
            // A valid answer and a blocked one: neither is answered without
            // its record.
            let good = route.calls(&[("get_weather", r#"{"city":"Oslo"}"#)]);
            let response = turn(gw, &upstream, route, good).await;
            let text = response_text_of_failure(route, response, 503).await;
            assert!(!text.contains("Oslo"), "{text}");

            let bad = route.calls(&[("delete_user", "{}")]);
            let response = turn(gw, &upstream, route, bad).await;
            response_text_of_failure(route, response, 503).await;
        }
        let health = client().get(gw.url("/healthz")).send().await.unwrap();
        assert_eq!(health.status(), 200, "the writer still runs");
    }
    assert_eq!(upstream.seen().len(), 12);
}

async fn response_text_of_failure(
    route: Route,
    response: reqwest::Response,
    status: u16,
) -> String {
    let error = error_of(route, response, status).await;
    assert_eq!(error["type"], "audit_unavailable", "{error}");
    assert!(error.get("verdict").is_none(), "{error}");
    error.to_string()
}

// ---------------------------------------------------------------------
// 9. Hardening
// ---------------------------------------------------------------------

#[tokio::test]
async fn a_request_body_over_max_request_bytes_is_refused_with_413() {
    let upstream = Upstream::start().await;
    let gw = gateway("gateway: {max_request_bytes: 1024}", &upstream).await;
    for route in Route::ALL {
        let big = route
            .request()
            .replace("\"hi\"", &format!("\"{}\"", "x".repeat(4096)));
        let response = post(&gw, route, big).await;
        let error = error_of(route, response, 413).await;
        assert_eq!(error["type"], "request_too_large", "{error}");
    }
    assert!(upstream.seen().is_empty());
    // Under the bound it goes through.
    let response = turn(&gw, &upstream, Route::Chat, Route::Chat.text("ok")).await;
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn an_upstream_answer_over_max_response_bytes_is_a_502() {
    let upstream = Upstream::start().await;
    let gw = gateway("gateway: {max_response_bytes: 300}", &upstream).await;
    let body = fixture("openai-chat/nonstream-parallel-weather-stock.json");
    assert!(body.len() > 300);
    // With a Content-Length, and chunked without one.
    upstream.reply(Reply::json(body.clone()));
    upstream.reply(Reply::Stream {
        chunks: body.chunks(200).map(<[u8]>::to_vec).collect(),
        pause: Duration::from_millis(1),
    });
    for _ in 0..2 {
        let response = post(&gw, Route::Chat, Route::Chat.request()).await;
        let error = error_of(Route::Chat, response, 502).await;
        assert_eq!(error["type"], "upstream_response_too_large", "{error}");
    }
    assert_eq!(upstream.seen().len(), 2);
    assert_eq!(audit_request_rows(&gw), 0, "nothing was checked");
}

#[tokio::test]
async fn an_upstream_that_is_down_is_a_502_upstream_unavailable() {
    let upstream = Upstream::closed().await;
    let gw = gateway("forbidden: [delete_user]", &upstream).await;
    for route in Route::ALL {
        let response = post(&gw, route, route.request()).await;
        let error = error_of(route, response, 502).await;
        assert_eq!(error["type"], "upstream_unavailable", "{error}");
        if route.is_openai() {
            assert_eq!(error["code"], "upstream_unavailable");
        }
        assert!(!error["message"].as_str().unwrap().contains("127.0.0.1"));
    }
}

#[tokio::test]
async fn an_upstream_slower_than_upstream_timeout_is_a_504() {
    let upstream = Upstream::start().await;
    let gw = gateway("gateway: {upstream_timeout: 0.3}", &upstream).await;
    // No headers in time.
    upstream.reply(Reply::Slow {
        delay: Duration::from_secs(2),
        body: Route::Chat.text("late"),
    });
    let response = post(&gw, Route::Chat, Route::Chat.request()).await;
    let error = error_of(Route::Chat, response, 504).await;
    assert_eq!(error["type"], "upstream_timeout");
    // Headers at once, the body too late.
    let body = Route::Messages.text("late");
    upstream.reply(Reply::Stream {
        chunks: vec![body[..10].to_vec(), body[10..].to_vec()],
        pause: Duration::from_secs(1),
    });
    let response = post(&gw, Route::Messages, Route::Messages.request()).await;
    let error = error_of(Route::Messages, response, 504).await;
    assert_eq!(error["type"], "upstream_timeout");
}

#[tokio::test]
async fn a_request_body_that_is_not_a_json_object_is_a_400_and_never_forwarded() {
    let upstream = Upstream::start().await;
    let gw = gateway("forbidden: [delete_user]", &upstream).await;
    for route in Route::ALL {
        for body in [
            "not json at all",
            r#"{"model": "gpt-4o", "messages": ["#,
            r#"[{"role": "user"}]"#,
            r#"{"model":"gpt-4o","stream":"yes","messages":[]}"#,
            "",
        ] {
            let response = post(&gw, route, body).await;
            let error = error_of(route, response, 400).await;
            assert_eq!(error["type"], "invalid_request_error", "{route:?} {body:?}");
        }
    }
    assert!(upstream.seen().is_empty());
}

#[tokio::test]
async fn upstream_errors_pass_through_with_their_status() {
    let upstream = Upstream::start().await;
    let gw = gateway("forbidden: [delete_user]", &upstream).await;
    let cases = [
        (
            Route::Chat,
            429,
            r#"{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#,
        ),
        (
            Route::Responses,
            500,
            r#"{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}"#,
        ),
        (
            Route::Messages,
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ),
        (
            Route::Messages,
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: field required"}}"#,
        ),
    ];
    for (route, status, body) in cases {
        upstream.reply(Reply::Body {
            status,
            content_type: "application/json",
            body: body.as_bytes().to_vec(),
        });
        let response = post(&gw, route, route.request()).await;
        assert_eq!(response.status(), status);
        assert!(header(&response, REQUEST_ID).is_some());
        assert!(header(&response, KEYS).is_none());
        assert_eq!(response.bytes().await.unwrap(), body.as_bytes());
    }
}

#[tokio::test]
async fn an_upstream_200_that_is_not_json_is_blocked_not_released() {
    let upstream = Upstream::start().await;
    let gw = gateway("forbidden: [delete_user]", &upstream).await;
    upstream.reply(Reply::Body {
        status: 200,
        content_type: "text/html",
        body: b"<html>captive portal</html>".to_vec(),
    });
    let response = post(&gw, Route::Chat, Route::Chat.request()).await;
    let verdict = blocked(Route::Chat, response).await;
    assert_eq!(codes(&verdict), ["malformed_payload"]);
}

// ---------------------------------------------------------------------
// 10. Side routes
// ---------------------------------------------------------------------

#[tokio::test]
async fn validate_answers_200_with_the_verdict() {
    let upstream = Upstream::start().await;
    let gw = gateway(
        "allowed_functions: [GetWeatherArgs, get_weather]",
        &upstream,
    )
    .await;
    let validate = |query: &'static str, body: Vec<u8>| {
        let url = gw.url(&format!("/v1/validate{query}"));
        async move { client().post(url).body(body).send().await.unwrap() }
    };

    let response = validate(
        "",
        fixture("openai-chat/nonstream-parallel-weather-stock.json"),
    )
    .await;
    assert_eq!(response.status(), 200);
    let verdict: Value = response.json().await.unwrap();
    assert_eq!(verdict["passed"], false);
    assert_eq!(codes(&verdict), ["not_allowed"]);
    assert_eq!(verdict["violations"][0]["tool"], "get_stock_price");
    assert_eq!(
        verdict["actual_tools"],
        json!(["GetWeatherArgs", "get_stock_price"])
    );

    let response = validate(
        "",
        br#"{"name":"GetWeatherArgs","arguments":{"city":"Oslo"}}"#.to_vec(),
    )
    .await;
    assert_eq!(response.status(), 200);
    let verdict: Value = response.json().await.unwrap();
    assert_eq!(verdict["passed"], true, "{verdict}");
    assert_eq!(verdict["score"], 1.0);

    let response = validate("", b"not a payload".to_vec()).await;
    assert_eq!(response.status(), 200);
    let verdict: Value = response.json().await.unwrap();
    assert_eq!(codes(&verdict), ["malformed_payload"]);

    // Tool results are checked only when asked.
    let mut request = conversation("conversations/openai-chat-parallel-tool-results.json");
    request["messages"][3]["tool_call_id"] = json!("call_nowhere");
    let request = serde_json::to_vec(&request).unwrap();
    let verdict: Value = validate("", request.clone()).await.json().await.unwrap();
    assert_eq!(verdict["passed"], true, "{verdict}");
    let response = validate("?results=true", request).await;
    assert_eq!(response.status(), 200);
    let verdict: Value = response.json().await.unwrap();
    assert_eq!(verdict["passed"], false);
    // The fabricated id answers nothing, and the call it replaced is left
    // without a result once the conversation moves on.
    assert_eq!(
        codes(&verdict),
        ["result_unknown_call_id", "result_missing"]
    );
    let linked = fixture("conversations/openai-chat-parallel-tool-results.json");
    let verdict: Value = validate("?results=true", linked)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(verdict["passed"], true, "{verdict}");

    assert!(
        upstream.seen().is_empty(),
        "validate never calls the upstream"
    );
    assert_eq!(audit_request_rows(&gw), 0);
}

#[tokio::test]
async fn healthz_answers_200() {
    let upstream = Upstream::start().await;
    let gw = gateway("forbidden: [delete_user]", &upstream).await;
    let response = client().get(gw.url("/healthz")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap().trim(), "ok");
}

/// The value of the sample `series` (name and labels, exactly as
/// printed) in the `/metrics` text; 0 when absent.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map_or(0.0, |value| {
            value.split(' ').next().unwrap().parse().unwrap()
        })
}

/// Two released answers (2 calls on chat, 4 on messages), one blocked
/// answer (1 call on chat), one request blocked before the upstream, one
/// request that is not JSON.
async fn some_traffic(gw: &Running, upstream: &Upstream) {
    upstream.reply(Reply::json(fixture(
        "openai-chat/nonstream-parallel-weather-stock.json",
    )));
    upstream.reply(Reply::json(fixture(
        "anthropic/nonstream-text-and-4-parallel-tool-use.json",
    )));
    upstream.reply(Reply::json(Route::Chat.calls(&[("wire_money", "{}")])));
    let mut unknown = conversation("conversations/openai-chat-parallel-tool-results.json");
    unknown["messages"][3]["tool_call_id"] = json!("call_nowhere");
    let sent = [
        (Route::Chat, Route::Chat.request().into_bytes(), 200),
        (Route::Messages, Route::Messages.request().into_bytes(), 200),
        (Route::Chat, Route::Chat.request().into_bytes(), 400),
        (Route::Chat, serde_json::to_vec(&unknown).unwrap(), 400),
        (Route::Chat, b"nope".to_vec(), 400),
    ];
    for (route, body, status) in sent {
        assert_eq!(post(gw, route, body).await.status(), status);
    }
}

#[tokio::test]
#[allow(clippy::float_cmp)]
async fn metrics_count_requests_calls_blocks_and_latencies() {
    let upstream = Upstream::start().await;
    let gw = gateway(
        "allowed_functions: [GetWeatherArgs, get_stock_price, retrieve_entity_info]",
        &upstream,
    )
    .await;
    some_traffic(&gw, &upstream).await;

    let response = client().get(gw.url("/metrics")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    let chat = "{route=\"chat_completions\"}";
    let messages = "{route=\"messages\"}";
    let requests = |route: &str, outcome: &str| {
        format!("toolgate_requests_total{{route=\"{route}\",outcome=\"{outcome}\"}}")
    };
    let expected = [
        (requests("chat_completions", "released"), 1.0),
        (requests("chat_completions", "blocked"), 2.0),
        (requests("chat_completions", "failed"), 1.0),
        (requests("messages", "released"), 1.0),
        (requests("messages", "blocked"), 0.0),
        (format!("toolgate_calls_checked_total{chat}"), 3.0),
        (format!("toolgate_calls_checked_total{messages}"), 4.0),
        (
            "toolgate_blocks_total{code=\"not_allowed\"}".to_owned(),
            1.0,
        ),
        (
            "toolgate_blocks_total{code=\"result_unknown_call_id\"}".to_owned(),
            1.0,
        ),
        (
            "toolgate_failures_total{kind=\"invalid_request_error\"}".to_owned(),
            1.0,
        ),
        (
            format!("toolgate_request_duration_seconds_count{chat}"),
            4.0,
        ),
        (
            format!("toolgate_request_duration_seconds_count{messages}"),
            1.0,
        ),
        (format!("toolgate_check_duration_seconds_count{chat}"), 2.0),
        (
            format!("toolgate_upstream_duration_seconds_count{chat}"),
            2.0,
        ),
        (
            format!("toolgate_upstream_duration_seconds_count{messages}"),
            1.0,
        ),
    ];
    for (series, value) in expected {
        assert_eq!(sample(&text, &series), value, "{series} in {text}");
    }
    for histogram in ["request", "check", "upstream"] {
        let family = format!("toolgate_{histogram}_duration_seconds");
        assert!(
            text.contains(&format!("# TYPE {family} histogram")),
            "{text}"
        );
        assert!(text.contains(&format!("{family}_bucket{{")), "{text}");
    }
    assert!(
        sample(
            &text,
            &format!("toolgate_request_duration_seconds_sum{chat}")
        ) > 0.0
    );
}

// ---------------------------------------------------------------------
// Known gateway bugs
// ---------------------------------------------------------------------

#[tokio::test]
async fn with_normalize_the_gateway_checks_and_keys_the_arguments_it_releases() {
    let upstream = Upstream::start().await;
    let gw = gateway(
        "normalize: {strip_empty_values: true}\nschema: {search: {type: object, properties: {query: {type: string}, filter: {type: object, minProperties: 1}}}}",
        &upstream,
    )
    .await;
    // The gateway forwards the arguments as the model wrote them, so it
    // checks them as written: cleaning must not hide the empty filter.
    let answer = Route::Chat.calls(&[("search", r#"{"query":"cats","filter":{}}"#)]);
    let response = turn(&gw, &upstream, Route::Chat, answer).await;
    let verdict = blocked(Route::Chat, response).await;
    assert_eq!(codes(&verdict), ["schema_violation"], "{verdict}");
    assert_eq!(verdict["violations"][0]["path"], "/filter");

    // Released: the audit and the key hold exactly the released arguments.
    let body = Route::Chat.calls(&[("search", r#"{"query":"cats","page":null}"#)]);
    let response = turn(&gw, &upstream, Route::Chat, body.clone()).await;
    assert_eq!(response.status(), 200);
    let request_id = header(&response, REQUEST_ID).unwrap();
    let keys = keys_of(&response);
    assert_eq!(response.bytes().await.unwrap(), body);
    let (_, tool, arguments) = Route::Chat.calls_in(&body).remove(0);
    assert_eq!(arguments, json!({"query": "cats", "page": null}));
    let audited = audited_calls(&gw);
    assert_eq!(audited.last().unwrap().arguments, arguments);
    assert_eq!(keys, [key(&request_id, &tool, &arguments)]);
}

#[tokio::test]
async fn calls_of_a_blocked_turn_do_not_use_up_a_rate_limit() {
    let upstream = Upstream::start().await;
    let policy = callers_policy(
        "forbidden: [delete_user]\nlimits:\n  - {tool: send_email, max: 1, per: 1m, by: caller}\n",
    );
    let gw = gateway(&policy, &upstream).await;
    let auth = [SUPPORT_BEARER];
    let email = ("send_email", r#"{"to":"a@example.com"}"#);
    let answer = Route::Chat.calls(&[email, ("delete_user", "{}")]);
    let response = turn_with(&gw, &upstream, Route::Chat, &auth, answer).await;
    let verdict = blocked(Route::Chat, response).await;
    assert_eq!(codes(&verdict)[0], "forbidden");
    // Nothing ran: the caller's one email is still to send.
    let answer = Route::Chat.calls(&[email]);
    let response = turn_with(&gw, &upstream, Route::Chat, &auth, answer).await;
    assert_eq!(
        response.status(),
        200,
        "the blocked turn's call was counted"
    );
}
