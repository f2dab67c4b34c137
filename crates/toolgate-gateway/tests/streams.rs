//! Streams: captured SSE streams replayed with pauses; text passes at once,
//! calls are held until checked, blocked calls never leak a fragment.

use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{json, Value};
use toolgate::{Arguments, Detection, Policy};

use crate::support::{
    client, fixture, fixtures_root, gateway, key_of_canonical as key, read_stream, sse_events,
    Gate, Reply, Route, Running, Step, Upstream, KEYS, REQUEST_ID,
};

/// Between two replayed events.
const PAUSE: Duration = Duration::from_millis(5);
/// Between two events where arrival times are compared.
const SLOW: Duration = Duration::from_millis(30);
/// Longer than any test: an upstream that pauses this long has not ended.
const FOREVER: Duration = Duration::from_secs(60);
/// The comment that carries the released calls' idempotency keys.
const KEYS_COMMENT: &[u8] = b": x-toolgate-idempotency-keys: ";

/// What the client received.
struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    chunks: Vec<(Instant, Bytes)>,
    body: Vec<u8>,
    asked: Instant,
}

impl Answer {
    fn ended(&self) -> Instant {
        self.chunks.last().map_or(self.asked, |(at, _)| *at)
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }
}

/// POST `request` on `route` with `request_id`, without reading the
/// answer.
async fn send_with(
    gw: &Running,
    route: Route,
    request_id: &str,
    request: String,
) -> reqwest::Response {
    client()
        .post(gw.url(route.path()))
        .header("content-type", "application/json")
        .header(REQUEST_ID, request_id)
        .body(request)
        .send()
        .await
        .unwrap()
}

/// [`send_with`] the route's streamed request.
async fn send(gw: &Running, route: Route, request_id: &str) -> reqwest::Response {
    send_with(gw, route, request_id, route.stream_request()).await
}

/// POST `request` and read the whole answer, chunk by chunk.
async fn ask_with(gw: &Running, route: Route, request_id: &str, request: String) -> Answer {
    let asked = Instant::now();
    let response = send_with(gw, route, request_id, request).await;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let chunks = read_stream(response).await;
    let body = chunks.iter().flat_map(|(_, c)| c.iter().copied()).collect();
    Answer {
        status,
        headers,
        chunks,
        body,
        asked,
    }
}

async fn ask(gw: &Running, route: Route, request_id: &str) -> Answer {
    ask_with(gw, route, request_id, route.stream_request()).await
}

/// RFC 8785 canonical JSON of a call's arguments.
fn canonical(arguments: &Arguments) -> Vec<u8> {
    match arguments {
        Arguments::Object(map) => serde_json_canonicalizer::to_vec(map).unwrap(),
        Arguments::Text(text) => {
            serde_json_canonicalizer::to_vec(&Value::String(text.clone())).unwrap()
        }
        Arguments::Invalid(why) => panic!("no key for invalid arguments: {why:?}"),
    }
}

/// The keys of every call the library finds, in order.
fn keys_of(request_id: &str, found: &Detection) -> Vec<String> {
    found
        .calls
        .iter()
        .map(|call| key(request_id, &call.name, &canonical(&call.arguments)))
        .collect()
}

/// A policy allowing exactly the tools the library finds in `body`.
fn allowing(body: &[u8]) -> String {
    let mut names: Vec<String> = toolgate::detect(body)
        .calls
        .into_iter()
        .map(|call| call.name.to_string())
        .collect();
    names.dedup();
    format!(
        "allowed_functions: {}",
        serde_json::to_string(&names).unwrap()
    )
}

fn has_data(event: &[u8]) -> bool {
    event
        .split(|&b| b == b'\n' || b == b'\r')
        .any(|line| line.trim_ascii_start().starts_with(b"data"))
}

/// Where the last event with data starts.
fn last_data_event_start(body: &[u8]) -> usize {
    let mut at = 0;
    let mut last = None;
    for event in sse_events(body) {
        if has_data(&event) {
            last = Some(at);
        }
        at += event.len();
    }
    last.expect("an event with data")
}

/// The events before the first one that concerns a call.
fn before_first_call(route: Route, body: &[u8]) -> Vec<u8> {
    sse_events(body)
        .into_iter()
        .take_while(|event| !route.concerns_a_call(event))
        .flatten()
        .collect()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    find(haystack, needle.as_bytes()).is_some()
}

/// A released stream: exactly `sent` with one keys comment line at the
/// start of its last event with data. Returns the keys.
fn assert_released(received: &[u8], sent: &[u8], what: &str) -> Vec<String> {
    let at = find(received, KEYS_COMMENT)
        .unwrap_or_else(|| panic!("{what}: no idempotency keys comment"));
    let end = at
        + received[at..]
            .iter()
            .position(|&b| b == b'\n')
            .expect("the comment ends its line")
        + 1;
    let mut without = received[..at].to_vec();
    without.extend_from_slice(&received[end..]);
    assert!(
        find(&without, KEYS_COMMENT).is_none(),
        "{what}: one keys comment only"
    );
    assert!(
        without == sent,
        "{what}: released byte for byte\n--- got ---\n{}\n--- sent ---\n{}",
        String::from_utf8_lossy(&without),
        String::from_utf8_lossy(sent)
    );
    assert_eq!(
        at,
        last_data_event_start(sent),
        "{what}: the comment opens the last event with data"
    );
    let keys = std::str::from_utf8(&received[at + KEYS_COMMENT.len()..end - 1]).unwrap();
    keys.split(',').map(str::to_owned).collect()
}

/// A stream ended by the gateway: exactly `before` (everything the
/// upstream sent before the first call), then one error event in the
/// route's shape whose type is `kind`, and nothing else. Returns the
/// `error` object.
fn assert_ended_by_error(
    route: Route,
    received: &[u8],
    before: &[u8],
    kind: &str,
    what: &str,
) -> Value {
    let text = String::from_utf8_lossy(received);
    assert!(
        received.starts_with(before),
        "{what}: the events before the first call come through as sent\n--- got ---\n{text}"
    );
    let events = sse_events(&received[before.len()..]);
    assert_eq!(
        events.len(),
        1,
        "{what}: one error event after them, nothing else\n--- got ---\n{text}"
    );
    for event in sse_events(before) {
        assert!(
            !route.concerns_a_call(&event),
            "{what}: an event about a call reached the client: {}",
            String::from_utf8_lossy(&event)
        );
    }
    assert!(find(received, KEYS_COMMENT).is_none(), "{what}: no keys");
    let event = std::str::from_utf8(&events[0]).unwrap();
    let data = match route {
        Route::Chat => event.strip_prefix("data: "),
        Route::Responses | Route::Messages => event.strip_prefix("event: error\ndata: "),
    }
    .unwrap_or_else(|| panic!("{what}: not an error event of {route:?}: {event}"));
    assert!(event.ends_with("\n\n"), "{what}: the event is terminated");
    let value: Value = serde_json::from_str(data.trim_end()).unwrap();
    let error = value["error"].clone();
    let keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    match route {
        Route::Chat => assert_eq!(keys, ["error"], "{what}: {value}"),
        Route::Responses => {
            assert_eq!(value["type"], "error", "{what}: {value}");
            assert_eq!(value["code"], error["code"], "{what}: {value}");
            assert_eq!(value["message"], error["message"], "{what}: {value}");
        }
        Route::Messages => {
            assert_eq!(value["type"], "error", "{what}: {value}");
            assert_eq!(keys.len(), 2, "{what}: {value}");
        }
    }
    assert_eq!(error["type"], kind, "{what}: {value}");
    assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()));
    if kind == "guardrails_violation" {
        assert_eq!(error["verdict"]["passed"], false, "{what}: {value}");
    }
    error
}

/// The code a blocked stream's error names: `code` on OpenAI routes, the
/// verdict's first violation on Anthropic's.
fn code(route: Route, error: &Value) -> String {
    let code = match route {
        Route::Chat | Route::Responses => &error["code"],
        Route::Messages => &error["verdict"]["violations"][0]["code"],
    };
    code.as_str().unwrap().to_owned()
}

/// The one audit record of a gateway that served one request.
fn record(gw: &Running) -> Value {
    let mut records = gw.audit_records();
    assert_eq!(records.len(), 1, "one audit record per stream: {records:?}");
    records.remove(0)
}

fn record_keys(record: &Value) -> Vec<Value> {
    record["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| call["idempotency_key"].clone())
        .collect()
}

/// A blocked stream's audit record: blocked, nothing keyed, the code.
fn assert_blocked_record(gw: &Running, request_id: &str, code: &str) {
    let record = record(gw);
    assert_eq!(record["request_id"], request_id);
    assert_eq!(record["outcome"], "blocked", "{record}");
    assert_eq!(record["stream"], true, "{record}");
    assert!(
        record_keys(&record).iter().all(Value::is_null),
        "no key for a blocked call: {record}"
    );
    assert!(
        record["violations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["code"] == code),
        "{record}"
    );
}

/// The captured streams of a route.
fn stream_fixtures(route: Route) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures_root().join(route.dir()))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| std::path::Path::new(name).extension() == Some("sse".as_ref()))
        .collect();
    names.sort();
    names
}

/// Replay one captured stream through a gateway that allows its tools:
/// released byte for byte with its keys when the library passes it,
/// blocked before its first call when the library does not.
async fn replay(route: Route, name: String) {
    let path = format!("{}/{name}", route.dir());
    let body = fixture(&path);
    let policy = allowing(&body);
    let found = toolgate::detect(&body);
    assert!(!found.calls.is_empty(), "{path}: the capture holds calls");
    let verdict = Policy::from_text(&policy, None).unwrap().check(&body);
    let upstream = Upstream::start().await;
    upstream.reply(Reply::sse(&body, PAUSE));
    let gw = gateway(&policy, &upstream).await;
    let request_id = format!("replay-{name}");
    let answer = ask(&gw, route, &request_id).await;
    assert_eq!(answer.status, 200, "{path}");
    assert_eq!(answer.header(REQUEST_ID), Some(request_id.as_str()));
    assert!(answer
        .header("content-type")
        .is_some_and(|t| t.starts_with("text/event-stream")));
    let seen = upstream.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, route.path());
    assert_eq!(seen[0].json()["stream"], true);
    let record = record(&gw);
    assert_eq!(record["stream"], true, "{path}");
    assert_eq!(record["request_id"], request_id.as_str());
    if verdict.passed {
        let keys = assert_released(&answer.body, &body, &path);
        assert_eq!(keys, keys_of(&request_id, &found), "{path}");
        assert_eq!(record["outcome"], "released", "{path}: {record}");
        let audited: Vec<Value> = keys.iter().map(|k| json!(k)).collect();
        assert_eq!(record_keys(&record), audited, "{path}");
        let tools: Vec<&Value> = record["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| &c["tool"])
            .collect();
        let names: Vec<&str> = found.calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(tools, names, "{path}");
    } else {
        let error = assert_ended_by_error(
            route,
            &answer.body,
            &before_first_call(route, &body),
            "guardrails_violation",
            &path,
        );
        let expected = verdict.violations[0].code.as_str();
        assert_eq!(code(route, &error), expected, "{path}");
        assert_blocked_record(&gw, &request_id, expected);
    }
}

async fn replay_every_capture(route: Route) {
    let names = stream_fixtures(route);
    assert!(!names.is_empty(), "{route:?}: captured streams");
    futures_util::future::join_all(names.into_iter().map(|name| replay(route, name))).await;
}

#[tokio::test]
async fn every_captured_chat_stream_replays_through_the_gateway() {
    replay_every_capture(Route::Chat).await;
}

#[tokio::test]
async fn every_captured_responses_stream_replays_through_the_gateway() {
    replay_every_capture(Route::Responses).await;
}

#[tokio::test]
async fn every_captured_messages_stream_replays_through_the_gateway() {
    replay_every_capture(Route::Messages).await;
}

#[test]
fn the_captures_cover_passing_and_failing_streams() {
    // The replays above take both paths: both must exist.
    let failing: Vec<String> = Route::ALL
        .into_iter()
        .flat_map(|route| {
            stream_fixtures(route)
                .into_iter()
                .map(move |name| format!("{}/{name}", route.dir()))
        })
        .filter(|path| {
            let body = fixture(path);
            !Policy::from_text(&allowing(&body), None)
                .unwrap()
                .check(&body)
                .passed
        })
        .collect();
    assert_eq!(
        failing,
        [
            "anthropic/stream-spliced-message-start.sse",
            "anthropic/stream-truncated-max-tokens.sse"
        ]
    );
}

/// Text arrives while the upstream is still streaming: the first text
/// delta reaches the client several pauses before the upstream sends its
/// last event, and the held call only after it.
async fn text_first(route: Route, path: &str, first_text: &str) {
    let body = fixture(path);
    let upstream = Upstream::start().await;
    upstream.reply(Reply::sse(&body, SLOW));
    let gw = gateway(&allowing(&body), &upstream).await;
    let answer = ask(&gw, route, "text-first").await;
    let sent = upstream.sent();
    assert_eq!(sent.len(), sse_events(&body).len(), "{path}");
    let last_sent = *sent.last().unwrap();
    let (text_at, text_chunk) = answer
        .chunks
        .iter()
        .find(|(_, chunk)| contains(chunk, first_text))
        .unwrap_or_else(|| panic!("{path}: the text reached the client"));
    assert!(
        !route.concerns_a_call(text_chunk),
        "{path}: text came alone"
    );
    let margin = SLOW * 4;
    assert!(
        *text_at + margin <= last_sent,
        "{path}: the first text arrived {:?} before the upstream's last event, not {margin:?}",
        last_sent.saturating_duration_since(*text_at)
    );
    let (call_at, _) = answer
        .chunks
        .iter()
        .find(|(_, chunk)| route.concerns_a_call(chunk))
        .unwrap();
    assert!(
        *call_at >= last_sent,
        "{path}: the call was held until the upstream ended"
    );
    assert!(answer.ended() >= last_sent);
    assert_released(&answer.body, &body, path);
}

#[tokio::test]
async fn text_reaches_the_client_before_the_upstream_ends() {
    tokio::join!(
        text_first(
            Route::Messages,
            "anthropic/stream-text-then-tool-use.sse",
            r#""text_delta","text":"I""#
        ),
        text_first(
            Route::Chat,
            "openai-chat/stream-glm-text-then-tool-repeated-id.sse",
            r#""content":"I""#
        ),
        text_first(
            Route::Responses,
            "openai-responses/stream-reasoning-text-then-call.sse",
            "response.output_text.delta"
        ),
    );
}

#[tokio::test]
async fn text_passes_while_the_upstream_holds_back_the_rest_of_a_call() {
    // The upstream sends the text and the start of the call, then waits for
    // the test: the client has the text already, and nothing of the call.
    let body = fixture("anthropic/stream-text-then-tool-use.sse");
    let events = sse_events(&body);
    let first_call = events
        .iter()
        .position(|e| Route::Messages.concerns_a_call(e))
        .unwrap();
    let gate = Gate::shut();
    let mut steps = Step::events(&body, PAUSE);
    steps.insert(first_call + 2, Step::Wait(gate.clone()));
    let upstream = Upstream::start().await;
    upstream.reply(Reply::Steps(steps));
    let gw = gateway("allowed_functions: [get_weather]", &upstream).await;
    let mut response = send(&gw, Route::Messages, "gated").await;
    assert_eq!(response.status(), 200);
    let text = before_first_call(Route::Messages, &body);
    let mut got = Vec::new();
    while got.len() < text.len() {
        let chunk = tokio::time::timeout(Duration::from_secs(5), response.chunk())
            .await
            .expect("the text arrives while the upstream waits")
            .unwrap()
            .expect("the stream is still open");
        got.extend_from_slice(&chunk);
    }
    assert_eq!(got, text, "the text, and nothing of the call");
    assert!(contains(
        &got,
        "'ll check the current weather in Paris for you."
    ));
    let more = tokio::time::timeout(Duration::from_millis(150), response.chunk()).await;
    assert!(more.is_err(), "the call is held: {more:?}");
    assert_eq!(
        upstream.sent().len(),
        first_call + 2,
        "the upstream sent the call's start and waits"
    );
    gate.open();
    got.extend(
        read_stream(response)
            .await
            .into_iter()
            .flat_map(|(_, c)| c.to_vec()),
    );
    assert_released(&got, &body, "gated");
}

#[tokio::test]
async fn events_split_anywhere_and_crlf_lines_are_released_byte_for_byte() {
    let crlf = |body: Vec<u8>| -> Vec<u8> {
        String::from_utf8(body)
            .unwrap()
            .replace('\n', "\r\n")
            .into_bytes()
    };
    let cases = [
        (
            Route::Chat,
            crlf(fixture("openai-chat/stream-parallel-weather-stock.sse")),
            0,
        ),
        (
            Route::Messages,
            crlf(fixture("anthropic/stream-text-then-tool-use.sse")),
            0,
        ),
        (
            Route::Chat,
            fixture("openai-chat/stream-parallel-weather-stock.sse"),
            61,
        ),
        (
            Route::Messages,
            fixture("anthropic/stream-text-then-tool-use.sse"),
            7,
        ),
        (
            Route::Responses,
            fixture("openai-responses/stream-parallel-two-calls.sse"),
            29,
        ),
    ];
    let runs = cases.into_iter().map(|(route, body, size)| async move {
        // Split into `size` bytes whatever the events, or one event a chunk.
        let chunks: Vec<Vec<u8>> = if size == 0 {
            sse_events(&body)
        } else {
            body.chunks(size).map(<[u8]>::to_vec).collect()
        };
        let upstream = Upstream::start().await;
        upstream.reply(Reply::Stream {
            chunks,
            pause: Duration::ZERO,
        });
        let gw = gateway(&allowing(&body), &upstream).await;
        let request_id = format!("split-{size}");
        let answer = ask(&gw, route, &request_id).await;
        let what = format!("{route:?} in chunks of {size}");
        let keys = assert_released(&answer.body, &body, &what);
        assert_eq!(
            keys,
            keys_of(&request_id, &toolgate::detect(&body)),
            "{what}"
        );
    });
    futures_util::future::join_all(runs).await;
}

#[tokio::test]
async fn a_client_that_goes_away_stops_the_upstream_read() {
    let body = fixture("anthropic/stream-text-then-tool-use.sse");
    let events = sse_events(&body).len();
    let upstream = Upstream::start().await;
    upstream.reply(Reply::sse(&body, Duration::from_millis(40)));
    let gw = gateway("allowed_functions: [get_weather]", &upstream).await;
    let mut response = send(&gw, Route::Messages, "gone").await;
    let mut got = Vec::new();
    while !contains(&got, "text_delta") {
        got.extend_from_slice(&response.chunk().await.unwrap().unwrap());
    }
    drop(response);
    tokio::time::sleep(Duration::from_millis(400)).await;
    let sent = upstream.sent().len();
    assert!(
        sent < events - 2,
        "the gateway went on reading after the client left: {sent} of {events} events"
    );
    assert!(gw.audit_records().is_empty(), "nothing was judged");
}

/// Run `route`'s stream `path` through a gateway with `policy`; it must end
/// blocked with `expected_code` after the events before the first call,
/// with none of `fragments` before the error event.
async fn blocked(route: Route, path: &str, policy: &str, expected_code: &str, fragments: &[&str]) {
    let body = fixture(path);
    let upstream = Upstream::start().await;
    upstream.reply(Reply::sse(&body, PAUSE));
    let gw = gateway(policy, &upstream).await;
    let request_id = format!("blocked-{path}");
    let answer = ask(&gw, route, &request_id).await;
    assert_eq!(answer.status, 200, "{path}: the stream had started");
    let before = before_first_call(route, &body);
    let error = assert_ended_by_error(route, &answer.body, &before, "guardrails_violation", path);
    assert_eq!(code(route, &error), expected_code, "{path}: {error}");
    for fragment in fragments {
        assert!(
            !contains(&answer.body[..before.len()], fragment),
            "{path}: `{fragment}` reached the client"
        );
        assert!(
            contains(&body, fragment),
            "{path}: `{fragment}` is in the capture"
        );
    }
    assert_blocked_record(&gw, &request_id, expected_code);
}

#[tokio::test]
async fn a_schema_violation_blocks_the_stream_after_its_text() {
    tokio::join!(
        blocked(
            Route::Messages,
            "anthropic/stream-text-then-tool-use.sse",
            "schema: {get_weather: {type: object, properties: {location: {enum: [London]}}}}",
            "schema_violation",
            &["get_weather", "locati", "is\\\"}"],
        ),
        blocked(
            Route::Responses,
            "openai-responses/stream-reasoning-text-then-call.sse",
            "schema: {get_capital: {type: object, properties: {country: {maxLength: 5}}}}",
            "schema_violation",
            &[
                "call_LabG58Uhrq9kZvR52BYKjToD",
                "response.function_call_arguments.delta",
                "\"delta\":\"country\"",
            ],
        ),
        blocked(
            Route::Chat,
            "openai-chat/stream-glm-text-then-tool-repeated-id.sse",
            "schema: {get_weather: {type: object, required: [city]}}",
            "schema_violation",
            &["get_weather", "location", "chatcmpl-tool-"],
        ),
    );
}

#[tokio::test]
async fn one_bad_call_among_parallel_calls_blocks_them_all() {
    tokio::join!(
        // Both names pass; the second call's arguments do not.
        blocked(
            Route::Chat,
            "openai-chat/stream-parallel-weather-stock.sse",
            "allowed_functions: [GetWeatherArgs, get_stock_price]\n\
             schema: {get_stock_price: {type: object, properties: {exchange: {enum: [NYSE]}}}}",
            "schema_violation",
            &["GetWeatherArgs", "Edinb", "get_stock_price", "AAP", "SDAQ"],
        ),
        // The first call is allowed and complete when the second, refused,
        // is named: the first is not released either.
        blocked(
            Route::Chat,
            "openai-chat/stream-parallel-weather-stock.sse",
            "allowed_functions: [GetWeatherArgs]",
            "not_allowed",
            &["GetWeatherArgs", "Edinb", "urgh"],
        ),
        // Two calls of one tool; the limit lets one through.
        blocked(
            Route::Messages,
            "anthropic/stream-parallel-no-arg-tools.sse",
            "allowed_functions: [pelican_name_generator]\n\
             limits: [{tool: pelican_name_generator, max: 1, per: 1m, by: global}]",
            "rate_limited",
            &["pelican_name_generator", "toolu_011ouQLPrqhKSuFJtuJrpaUX"],
        ),
        blocked(
            Route::Responses,
            "openai-responses/stream-parallel-two-calls.sse",
            "schema: {get_weather: {type: object, properties: {location: {pattern: '^San '}}}}",
            "schema_violation",
            &[
                "call_0xi8hXSApey3her10vjUIx0j",
                "\\\"location\\\":\\\"San Francisco",
                "\\\"location\\\":\\\"New York",
            ],
        ),
    );
}

#[tokio::test]
async fn a_parallel_block_keeps_the_text_before_the_calls() {
    let body = fixture("anthropic/stream-parallel-no-arg-tools.sse");
    let upstream = Upstream::start().await;
    upstream.reply(Reply::sse(&body, PAUSE));
    let gw = gateway("forbidden: [pelican_name_generator]", &upstream).await;
    let answer = ask(&gw, Route::Messages, "parallel-text").await;
    let before = before_first_call(Route::Messages, &body);
    for text in [" pet pelican by", " generator tool."] {
        assert!(contains(&before, text));
    }
    let error = assert_ended_by_error(
        Route::Messages,
        &answer.body,
        &before,
        "guardrails_violation",
        "parallel",
    );
    assert_eq!(code(Route::Messages, &error), "forbidden");
}

/// A stream whose upstream names a refused tool, then pauses far longer
/// than the test: the error must come without waiting for it.
async fn refused_by_name(
    route: Route,
    path: &str,
    policy: &str,
    request: String,
    expected_code: &str,
) {
    let body = fixture(path);
    let events = sse_events(&body);
    let named = events
        .iter()
        .position(|e| route.concerns_a_call(e))
        .unwrap();
    let steps = events
        .iter()
        .enumerate()
        .map(|(at, event)| Step::Send {
            pause: if at == named + 1 { FOREVER } else { PAUSE },
            bytes: event.clone(),
        })
        .collect();
    let upstream = Upstream::start().await;
    upstream.reply(Reply::Steps(steps));
    let gw = gateway(policy, &upstream).await;
    let request_id = format!("refused-{path}");
    let answer = tokio::time::timeout(
        Duration::from_secs(10),
        ask_with(&gw, route, &request_id, request),
    )
    .await
    .unwrap_or_else(|_| panic!("{path}: the gateway waited for the upstream"));
    assert_eq!(
        upstream.sent().len(),
        named + 1,
        "{path}: the upstream had sent the name and nothing after it"
    );
    let error = assert_ended_by_error(
        route,
        &answer.body,
        &before_first_call(route, &body),
        "guardrails_violation",
        path,
    );
    assert_eq!(code(route, &error), expected_code, "{path}");
    assert!(
        answer.ended().duration_since(answer.asked) < Duration::from_secs(5),
        "{path}"
    );
    assert_blocked_record(&gw, &request_id, expected_code);
}

#[tokio::test]
async fn a_refused_name_ends_the_stream_before_the_upstream_does() {
    let declared = json!({"model": "gpt-4o", "stream": true,
        "input": [{"role": "user", "content": "What is the capital of France?"}],
        "tools": [{"type": "function", "name": "get_weather",
                   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]});
    tokio::join!(
        // Not on the allowlist.
        refused_by_name(
            Route::Chat,
            "openai-chat/stream-parallel-weather-stock.sse",
            "allowed_functions: [get_stock_price]",
            Route::Chat.stream_request(),
            "not_allowed",
        ),
        // Forbidden, after text.
        refused_by_name(
            Route::Messages,
            "anthropic/stream-text-then-tool-use.sse",
            "forbidden: [get_weather]",
            Route::Messages.stream_request(),
            "forbidden",
        ),
        // Not among the tools the request declares.
        refused_by_name(
            Route::Responses,
            "openai-responses/stream-single-get-capital.sse",
            "",
            declared.to_string(),
            "not_allowed",
        ),
    );
}

#[tokio::test]
async fn a_legacy_function_call_stream_is_held_and_checked() {
    // `functions` / `function_call` streaming, which OpenAI-compatible
    // servers still send: text first, then the call.
    let chunk = |delta: Value, finish: Value| {
        let chunk = json!({"id": "chatcmpl-legacy", "object": "chat.completion.chunk",
            "created": 1_700_000_000, "model": "gpt-4o",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {chunk}\n\n")
    };
    let body = [
        chunk(
            json!({"role": "assistant", "content": "Deleting "}),
            Value::Null,
        ),
        chunk(json!({"content": "that user now."}), Value::Null),
        chunk(
            json!({"function_call": {"name": "delete_user", "arguments": ""}}),
            Value::Null,
        ),
        chunk(
            json!({"function_call": {"arguments": "{\"user_id\":"}}),
            Value::Null,
        ),
        chunk(json!({"function_call": {"arguments": " 42}"}}), Value::Null),
        chunk(json!({}), json!("function_call")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat()
    .into_bytes();
    let upstream = Upstream::start().await;
    upstream.reply(Reply::sse(&body, PAUSE));
    upstream.reply(Reply::sse(&body, PAUSE));
    let gw = gateway("forbidden: [delete_user]", &upstream).await;
    let answer = ask(&gw, Route::Chat, "legacy-blocked").await;
    let before = before_first_call(Route::Chat, &body);
    assert!(contains(&before, "that user now."));
    let error = assert_ended_by_error(
        Route::Chat,
        &answer.body,
        &before,
        "guardrails_violation",
        "legacy",
    );
    assert_eq!(code(Route::Chat, &error), "forbidden");
    assert!(!contains(&answer.body[..before.len()], "delete_user"));

    let allowed = gateway("allowed_functions: [delete_user]", &upstream).await;
    let answer = ask(&allowed, Route::Chat, "legacy-released").await;
    let keys = assert_released(&answer.body, &body, "legacy");
    assert_eq!(
        keys,
        [key("legacy-released", "delete_user", br#"{"user_id":42}"#)]
    );
}

#[tokio::test]
async fn arguments_split_across_many_deltas_are_assembled_then_checked() {
    let path = "openai-chat/stream-single-multiply-fragmented.sse";
    let body = fixture(path);
    let fragments = sse_events(&body)
        .iter()
        .filter(|e| contains(e, "\"arguments\":\""))
        .count();
    assert!(fragments >= 10, "{fragments} argument deltas");
    // Only the whole number breaks the schema: "123" alone would pass.
    blocked(
        Route::Chat,
        path,
        "schema: {multiply: {type: object, properties: {a: {type: integer, maximum: 1230}}}}",
        "schema_violation",
        &["multiply", "123"],
    )
    .await;

    let upstream = Upstream::start().await;
    upstream.reply(Reply::sse(&body, PAUSE));
    let gw = gateway(
        "schema: {multiply: {type: object, required: [a, b], additionalProperties: false,\n\
         \x20 properties: {a: {const: 1231}, b: {const: 2331}}}}",
        &upstream,
    )
    .await;
    let answer = ask(&gw, Route::Chat, "fragmented").await;
    let keys = assert_released(&answer.body, &body, path);
    assert_eq!(
        keys,
        [key("fragmented", "multiply", br#"{"a":1231,"b":2331}"#)]
    );
    let record = record(&gw);
    assert_eq!(record["outcome"], "released");
    assert_eq!(
        record["calls"][0]["arguments"],
        json!({"a": 1231, "b": 2331})
    );
    assert_eq!(record["calls"][0]["idempotency_key"], keys[0].as_str());
    assert_eq!(record["calls"][0]["id"], "call_1EYWDzueHEp8OsB8jJSEp7WB");
}

#[tokio::test]
async fn released_keys_are_the_audited_keys_of_parallel_calls() {
    let path = "openai-chat/stream-parallel-weather-stock.sse";
    let body = fixture(path);
    let upstream = Upstream::start().await;
    upstream.reply(Reply::sse(&body, PAUSE));
    upstream.reply(Reply::sse(&body, PAUSE));
    let gw = gateway(
        "allowed_functions: [GetWeatherArgs, get_stock_price]\naudit: {sqlite: '{dir}/audit.db', redact: [ticker]}",
        &upstream,
    )
    .await;
    let answer = ask(&gw, Route::Chat, "parallel-keys").await;
    let keys = assert_released(&answer.body, &body, path);
    assert_eq!(
        keys,
        [
            key(
                "parallel-keys",
                "GetWeatherArgs",
                br#"{"city":"Edinburgh","country":"GB","units":"c"}"#
            ),
            key(
                "parallel-keys",
                "get_stock_price",
                br#"{"exchange":"NASDAQ","ticker":"AAPL"}"#
            ),
        ],
        "computed from the arguments as executed, before redaction"
    );
    let record = record(&gw);
    assert_eq!(record["outcome"], "released");
    assert_eq!(record["stage"], "response");
    assert_eq!(record["route"], "chat_completions");
    assert_eq!(record["model"], "gpt-4o");
    assert_eq!(record_keys(&record), [json!(keys[0]), json!(keys[1])]);
    assert_eq!(record["calls"][1]["arguments"]["ticker"], "[REDACTED]");
    assert_eq!(record["calls"][1]["arguments"]["exchange"], "NASDAQ");

    // Another request id, other keys for the same calls.
    let again = ask(&gw, Route::Chat, "parallel-keys-2").await;
    let other = assert_released(&again.body, &body, path);
    assert_eq!(other.len(), 2);
    assert!(other.iter().all(|k| !keys.contains(k)));
    assert_eq!(gw.audit_records().len(), 2);
}

#[tokio::test]
async fn an_upstream_that_breaks_mid_stream_releases_nothing_held() {
    let chat = fixture("openai-chat/stream-parallel-weather-stock.sse");
    let messages = fixture("anthropic/stream-text-then-tool-use.sse");
    let run = |route: Route, body: Vec<u8>, keep: usize, policy: &'static str| async move {
        let mut steps = Step::events(&body, PAUSE);
        steps.truncate(keep);
        steps.push(Step::Break);
        let upstream = Upstream::start().await;
        upstream.reply(Reply::Steps(steps));
        let gw = gateway(policy, &upstream).await;
        let answer = ask(&gw, route, "broken").await;
        assert_eq!(answer.status, 200);
        assert_eq!(upstream.sent().len(), keep);
        let error = assert_ended_by_error(
            route,
            &answer.body,
            &before_first_call(route, &body),
            "upstream_unavailable",
            "broken",
        );
        assert!(error.get("verdict").is_none(), "{error}");
        assert!(
            gw.audit_records()
                .iter()
                .all(|record| record["outcome"] != "released"),
            "nothing released"
        );
    };
    tokio::join!(
        // Broken in the middle of the first call's arguments.
        run(
            Route::Chat,
            chat.clone(),
            8,
            "allowed_functions: [GetWeatherArgs, get_stock_price]"
        ),
        // Broken after both calls are complete, before the stream's end.
        run(
            Route::Chat,
            chat,
            24,
            "allowed_functions: [GetWeatherArgs, get_stock_price]"
        ),
        // Broken after the text and the call's first fragments.
        run(
            Route::Messages,
            messages,
            9,
            "allowed_functions: [get_weather]"
        ),
    );
}

#[tokio::test]
async fn a_stalled_upstream_times_out_and_releases_nothing_held() {
    let body = fixture("anthropic/stream-text-then-tool-use.sse");
    let gate = Gate::shut();
    let mut steps = Step::events(&body, PAUSE);
    steps.truncate(9);
    steps.push(Step::Wait(gate.clone()));
    let upstream = Upstream::start().await;
    upstream.reply(Reply::Steps(steps));
    let gw = gateway(
        "allowed_functions: [get_weather]\ngateway: {upstream_timeout: 0.3}",
        &upstream,
    )
    .await;
    let answer = tokio::time::timeout(
        Duration::from_secs(10),
        ask(&gw, Route::Messages, "stalled"),
    )
    .await
    .expect("the gateway gives up on a stalled upstream");
    assert_ended_by_error(
        Route::Messages,
        &answer.body,
        &before_first_call(Route::Messages, &body),
        "upstream_timeout",
        "stalled",
    );
    gate.open();
}

/// Replay the first `keep` events of `path` on `route`, then end the body
/// cleanly, through a gateway allowing the capture's tools.
async fn cut(route: Route, path: &str, keep: usize) -> (Answer, Running, Vec<u8>) {
    let body = fixture(path);
    let chunks = sse_events(&body)[..keep].to_vec();
    let cut: Vec<u8> = chunks.concat();
    let upstream = Upstream::start().await;
    upstream.reply(Reply::Stream {
        chunks,
        pause: Duration::from_millis(2),
    });
    let gw = gateway(&allowing(&body), &upstream).await;
    let answer = ask(&gw, route, &format!("cut-{keep}")).await;
    (answer, gw, cut)
}

#[tokio::test]
async fn a_stream_cut_inside_a_call_is_blocked() {
    // The upstream ends its body cleanly after each number of events in
    // turn. Wherever the library finds a call unfinished, the gateway
    // blocks before the first call.
    let cases = [
        (
            Route::Chat,
            "openai-chat/stream-single-multiply-fragmented.sse",
        ),
        (Route::Messages, "anthropic/stream-text-then-tool-use.sse"),
        (
            Route::Responses,
            "openai-responses/stream-single-get-capital.sse",
        ),
    ];
    let mut runs = Vec::new();
    for (route, path) in cases {
        let body = fixture(path);
        let policy = Policy::from_text(&allowing(&body), None).unwrap();
        let events = sse_events(&body);
        for keep in 1..events.len() {
            let verdict = policy.check(&events[..keep].concat());
            if !verdict.passed {
                runs.push(async move {
                    let (answer, gw, cut) = cut(route, path, keep).await;
                    let what = format!("{path} cut after {keep} events");
                    let error = assert_ended_by_error(
                        route,
                        &answer.body,
                        &before_first_call(route, &cut),
                        "guardrails_violation",
                        &what,
                    );
                    assert_eq!(code(route, &error), verdict.violations[0].code.as_str());
                    assert_eq!(record(&gw)["outcome"], "blocked", "{what}");
                });
            }
        }
    }
    assert!(runs.len() > 20, "{} cuts inside calls", runs.len());
    futures_util::future::join_all(runs).await;
}

#[tokio::test]
async fn a_stream_cut_before_its_end_releases_nothing() {
    for (route, path, keep) in [
        // Only the call's name and an empty first fragment came.
        (
            Route::Chat,
            "openai-chat/stream-single-multiply-fragmented.sse",
            1,
        ),
        // The first of two parallel calls is done; the second never came.
        (
            Route::Messages,
            "anthropic/stream-parallel-no-arg-tools.sse",
            18,
        ),
    ] {
        let (answer, _gw, cut) = cut(route, path, keep).await;
        let what = format!("{path} cut after {keep} events");
        assert!(
            !contains(&answer.body, &String::from_utf8_lossy(KEYS_COMMENT)),
            "{what}: a call of an unfinished stream was released:\n{}",
            String::from_utf8_lossy(&answer.body)
        );
        assert_ended_by_error(
            route,
            &answer.body,
            &before_first_call(route, &cut),
            "guardrails_violation",
            &what,
        );
    }
}

#[tokio::test]
async fn a_whole_body_answering_a_stream_request_is_checked_whole() {
    let body = fixture("openai-chat/nonstream-parallel-weather-stock.json");
    let upstream = Upstream::start().await;
    upstream.reply(Reply::json(body.clone()));
    upstream.reply(Reply::json(body.clone()));
    let gw = gateway(
        "allowed_functions: [GetWeatherArgs, get_stock_price]",
        &upstream,
    )
    .await;
    let answer = ask(&gw, Route::Chat, "whole-released").await;
    assert_eq!(answer.status, 200);
    assert!(answer
        .header("content-type")
        .is_some_and(|t| t.starts_with("application/json")));
    assert_eq!(answer.body, body, "released exactly as sent");
    let keys = keys_of("whole-released", &toolgate::detect(&body));
    assert_eq!(keys.len(), 2);
    assert_eq!(answer.header(KEYS), Some(keys.join(",").as_str()));
    let record = record(&gw);
    assert_eq!(record["outcome"], "released");
    assert_eq!(record["stream"], true);
    assert_eq!(record_keys(&record), [json!(keys[0]), json!(keys[1])]);

    let blocked = gateway("allowed_functions: [get_stock_price]", &upstream).await;
    let answer = ask(&blocked, Route::Chat, "whole-blocked").await;
    assert_eq!(answer.status, 400);
    let error: Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(error["error"]["type"], "guardrails_violation");
    assert_eq!(error["error"]["code"], "not_allowed");
    assert!(answer.header(KEYS).is_none());
    assert!(!contains(&answer.body, "\"tool_calls\""));
    assert_blocked_record(&blocked, "whole-blocked", "not_allowed");
}

#[tokio::test]
async fn an_anthropic_whole_body_answering_a_stream_request_is_checked_whole() {
    let body = fixture("anthropic/nonstream-text-and-4-parallel-tool-use.json");
    let found = toolgate::detect(&body);
    assert_eq!(found.calls.len(), 4);
    let upstream = Upstream::start().await;
    upstream.reply(Reply::json(body.clone()));
    let gw = gateway(&allowing(&body), &upstream).await;
    let answer = ask(&gw, Route::Messages, "whole-messages").await;
    assert_eq!(
        answer.status,
        200,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    assert_eq!(answer.body, body);
    assert_eq!(
        answer.header(KEYS),
        Some(keys_of("whole-messages", &found).join(",").as_str())
    );
    assert_eq!(record(&gw)["outcome"], "released");
}

#[tokio::test]
async fn a_stream_without_calls_passes_as_it_comes_with_no_keys() {
    let captured = fixture("anthropic/stream-text-then-tool-use.sse");
    let mut body = before_first_call(Route::Messages, &captured);
    body.extend_from_slice(
        b"event: message_delta\n\
          data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":12}}\n\n\
          event: message_stop\n\
          data: {\"type\":\"message_stop\"}\n\n",
    );
    let upstream = Upstream::start().await;
    upstream.reply(Reply::sse(&body, PAUSE));
    let gw = gateway("allowed_functions: [get_weather]", &upstream).await;
    let answer = ask(&gw, Route::Messages, "text-only").await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body, body, "as sent, with no keys comment");
    let record = record(&gw);
    assert_eq!(record["outcome"], "released");
    assert_eq!(record["calls"], json!([]));
}

#[tokio::test]
async fn an_empty_stream_ends_with_an_error() {
    let upstream = Upstream::start().await;
    upstream.reply(Reply::Stream {
        chunks: Vec::new(),
        pause: PAUSE,
    });
    let gw = gateway("allowed_functions: [get_weather]", &upstream).await;
    let answer = ask(&gw, Route::Chat, "empty").await;
    let error = assert_ended_by_error(
        Route::Chat,
        &answer.body,
        b"",
        "guardrails_violation",
        "empty",
    );
    assert_eq!(code(Route::Chat, &error), "malformed_payload");
    assert_blocked_record(&gw, "empty", "malformed_payload");
}

#[tokio::test]
async fn an_upstream_error_answering_a_stream_request_passes_as_sent() {
    let error = br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let upstream = Upstream::start().await;
    upstream.reply(Reply::Body {
        status: 529,
        content_type: "application/json",
        body: error.to_vec(),
    });
    let gw = gateway("allowed_functions: [get_weather]", &upstream).await;
    let answer = ask(&gw, Route::Messages, "overloaded").await;
    assert_eq!(answer.status, 529);
    assert_eq!(answer.body, error);
    assert_eq!(answer.header(REQUEST_ID), Some("overloaded"));
}

#[tokio::test]
async fn an_answer_is_bounded_by_max_response_bytes_whole_or_streamed() {
    let chat = fixture("openai-chat/stream-parallel-weather-stock.sse");
    let messages = fixture("anthropic/stream-text-then-tool-use.sse");
    let run = |route: Route, body: Vec<u8>, limit: usize| async move {
        assert!(before_first_call(route, &body).len() < limit && limit < body.len());
        // Past `max_payload_bytes`, which `max_response_bytes` defaults
        // to: the documented 502 type, as for the same answer whole.
        let small = format!(
            "{}\ninput_limits: {{max_payload_bytes: {limit}}}",
            allowing(&body)
        );
        let upstream = Upstream::start().await;
        upstream.reply(Reply::sse(&body, PAUSE));
        let gw = gateway(&small, &upstream).await;
        let answer = ask(&gw, route, "too-large").await;
        assert_ended_by_error(
            route,
            &answer.body,
            &before_first_call(route, &body),
            "upstream_response_too_large",
            "too large",
        );
        let whole = route.calls(&[(
            "get_weather",
            &format!(r#"{{"city":"{}"}}"#, "x".repeat(limit)),
        )]);
        upstream.reply(Reply::json(whole));
        let answer = ask_with(&gw, route, "too-large-whole", route.request()).await;
        assert_eq!(
            answer.status,
            502,
            "{}",
            String::from_utf8_lossy(&answer.body)
        );
        assert!(String::from_utf8_lossy(&answer.body).contains("upstream_response_too_large"));
        // Within a larger `max_response_bytes`, the same stream passes
        // whole, however small `max_payload_bytes` is.
        let large = format!(
            "{small}\ngateway: {{max_response_bytes: {}}}",
            4 * body.len()
        );
        upstream.reply(Reply::sse(&body, PAUSE));
        let gw = gateway(&large, &upstream).await;
        let answer = ask(&gw, route, "within").await;
        let keys = assert_released(&answer.body, &body, "within max_response_bytes");
        assert_eq!(keys.len(), toolgate::detect(&body).calls.len(), "{route:?}");
    };
    tokio::join!(
        run(Route::Chat, chat, 4000),
        run(Route::Messages, messages, 1500),
    );
}

#[tokio::test]
async fn a_stream_past_max_response_bytes_ends_with_an_error() {
    let body = fixture("openai-chat/stream-parallel-weather-stock.sse");
    let upstream = Upstream::start().await;
    upstream.reply(Reply::sse(&body, PAUSE));
    let gw = gateway(
        "allowed_functions: [GetWeatherArgs, get_stock_price]\ngateway: {max_response_bytes: 4000}",
        &upstream,
    )
    .await;
    let answer = ask(&gw, Route::Chat, "too-long").await;
    assert_ended_by_error(
        Route::Chat,
        &answer.body,
        &before_first_call(Route::Chat, &body),
        "upstream_response_too_large",
        "max_response_bytes",
    );
}

#[tokio::test]
async fn a_stream_in_another_shape_is_read_whole_and_held_until_its_verdict() {
    // Not a stream format toolgate decodes: each event is read as a whole
    // document. The first carries a call in a `tool_calls` array (read, and
    // refused by name); the second is in no known shape (malformed). Nothing
    // of it may reach the client before the error event.
    let body = concat!(
        "data: {\"event_type\":\"tool-calls-generation\",\"tool_calls\":[{\"name\":\"delete_user\",\"parameters\":{\"user_id\":42}}]}\n\n",
        "data: {\"event_type\":\"stream-end\",\"finish_reason\":\"COMPLETE\"}\n\n",
    )
    .as_bytes();
    let verdict = Policy::from_text("allowed_functions: [get_weather]", None)
        .unwrap()
        .check(body);
    let codes: Vec<&str> = verdict.violations.iter().map(|v| v.code.as_str()).collect();
    assert_eq!(codes, ["malformed_payload", "not_allowed"]);
    let upstream = Upstream::start().await;
    upstream.reply(Reply::sse(body, PAUSE));
    let gw = gateway("allowed_functions: [get_weather]", &upstream).await;
    let answer = ask(&gw, Route::Chat, "unrecognised").await;
    assert!(
        !contains(&answer.body, "delete_user\",\"parameters"),
        "the call reached the client: {}",
        String::from_utf8_lossy(&answer.body)
    );
    let error = assert_ended_by_error(
        Route::Chat,
        &answer.body,
        b"",
        "guardrails_violation",
        "delete_user",
    );
    assert!(
        ["malformed_payload", "not_allowed"].contains(&code(Route::Chat, &error).as_str()),
        "{error}"
    );
}

#[tokio::test]
async fn a_responses_request_with_a_string_input_is_streamed() {
    // A first turn: nothing to link, so nothing to refuse.
    let body = fixture("openai-responses/stream-single-get-capital.sse");
    let upstream = Upstream::start().await;
    upstream.reply(Reply::sse(&body, PAUSE));
    let gw = gateway("allowed_functions: [get_capital]", &upstream).await;
    let request = json!({"model": "gpt-4o", "stream": true,
        "input": "What is the capital of France?"});
    let answer = ask_with(&gw, Route::Responses, "string-input", request.to_string()).await;
    assert_eq!(
        answer.status,
        200,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    assert_eq!(upstream.seen().len(), 1);
    assert_released(&answer.body, &body, "string input");
}

/// The Responses tool loop over a stream: the answer's id comes in its
/// first event, and the follow-up naming it sends only the results, which
/// link to the calls the stream released. A follow-up naming a response
/// this gateway never released stays refused before the upstream.
#[tokio::test]
async fn a_streamed_responses_answer_can_be_followed_up_by_its_id() {
    let capture = fixture("openai-responses/stream-parallel-two-calls.sse");
    let found = toolgate::detect(&capture);
    assert_eq!(found.calls.len(), 2);
    let upstream = Upstream::start().await;
    upstream.reply(Reply::sse(&capture, PAUSE));
    let gw = gateway(&allowing(&capture), &upstream).await;
    let answer = ask(&gw, Route::Responses, "loop-1").await;
    assert_eq!(answer.status, 200);
    assert!(contains(
        &answer.body,
        &String::from_utf8_lossy(KEYS_COMMENT)
    ));
    let response_id = sse_events(&capture)
        .iter()
        .find_map(|event| {
            let text = String::from_utf8_lossy(event);
            let data = text
                .lines()
                .find_map(|l| l.strip_prefix("data: "))?
                .to_owned();
            let value: Value = serde_json::from_str(&data).ok()?;
            value["response"]["id"].as_str().map(str::to_owned)
        })
        .expect("the capture names its response");
    let outputs: Vec<Value> = found
        .calls
        .iter()
        .map(|call| json!({"type": "function_call_output", "call_id": call.id, "output": "done"}))
        .collect();
    let follow_up = |id: &str| {
        json!({"model": "gpt-4o", "stream": true, "previous_response_id": id, "input": outputs})
            .to_string()
    };
    upstream.reply(Reply::sse(
        &fixture("openai-responses/stream-single-get-capital.sse"),
        PAUSE,
    ));
    let answer = ask_with(&gw, Route::Responses, "loop-2", follow_up(&response_id)).await;
    assert_eq!(
        answer.status,
        200,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    assert_eq!(upstream.seen().len(), 2);

    let answer = ask_with(&gw, Route::Responses, "loop-3", follow_up("resp_unknown")).await;
    assert_eq!(answer.status, 400);
    let error: Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(error["error"]["code"], "result_unknown_call_id");
    assert_eq!(upstream.seen().len(), 2, "refused before the upstream");
}

#[tokio::test]
async fn a_stream_whose_record_cannot_be_written_never_sends_its_last_event() {
    let upstream = Upstream::start().await;
    let gw = gateway("audit: {jsonl: /dev/full}", &upstream).await;
    for route in Route::ALL {
        // A text answer, and one ended by the upstream's own error event.
        let text = route.events("Hello.", &[]);
        let error = match route {
            Route::Chat => {
                b"data: {\"error\":{\"message\":\"Overloaded\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n".to_vec()
            }
            Route::Messages => b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n".to_vec(),
            Route::Responses => b"event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"Overloaded\",\"param\":null,\"sequence_number\":3}\n\n".to_vec(),
        };
        let errored = vec![text[0].clone(), error];
        for (name, events) in [("text", text), ("upstream error", errored)] {
            upstream.reply(Reply::Stream {
                chunks: events,
                pause: PAUSE,
            });
            let answer = ask(&gw, route, "audit-down").await;
            let body = String::from_utf8(answer.body.clone()).unwrap();
            let finals: &[&str] = match route {
                Route::Chat => &["[DONE]"],
                Route::Messages => &["message_stop"],
                Route::Responses => &["response.completed"],
            };
            for last in finals {
                assert!(!body.contains(last), "{route:?} {name}: {body}");
            }
            assert!(!body.contains("Overloaded"), "{route:?} {name}: {body}");
            let events = sse_events(&answer.body);
            let data = toolgate::detect::sse::event_data(events.last().unwrap()).unwrap();
            let event: Value = serde_json::from_slice(&data).unwrap();
            assert_eq!(
                event["error"]["type"], "audit_unavailable",
                "{route:?} {name}: {body}"
            );
        }
    }
}
