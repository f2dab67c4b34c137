//! The shortest path through the gateway, both ways.

use std::time::Duration;

use crate::support::{client, fixture, gateway, Reply, Upstream};

#[tokio::test]
async fn a_valid_call_passes_and_a_bad_one_is_blocked() {
    let upstream = Upstream::start().await;
    let body = fixture("openai-chat/nonstream-parallel-weather-stock.json");
    upstream.reply(Reply::json(body.clone()));
    upstream.reply(Reply::json(body.clone()));
    let gw = gateway(
        "allowed_functions: [GetWeatherArgs, get_stock_price]",
        &upstream,
    )
    .await;
    let request = r#"{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}"#;
    let response = client()
        .post(gw.url("/v1/chat/completions"))
        .body(request)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let keys = response.headers()["x-toolgate-idempotency-keys"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(keys.split(',').count(), 2);
    assert_eq!(
        response.bytes().await.unwrap(),
        body,
        "released exactly as sent"
    );

    let blocked = gateway("allowed_functions: [get_stock_price]", &upstream).await;
    let response = client()
        .post(blocked.url("/v1/chat/completions"))
        .body(request)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let error: serde_json::Value = response.json().await.unwrap();
    assert_eq!(error["error"]["type"], "guardrails_violation");
    assert_eq!(error["error"]["code"], "not_allowed");
    assert_eq!(blocked.audit_records()[0]["outcome"], "blocked");
    let _ = Duration::ZERO;
}
