//! Rate limits shared by gateway replicas through a real Redis
//! (`limits_backend: redis://...`).

use std::sync::Arc;

use serde_json::Value;
use toolgate::Policy;
use toolgate_gateway::{Config, Gateway};

use crate::support::{client, gateway, RedisServer, Reply, Route, Running, Upstream};

fn policy(redis: &str) -> String {
    format!(
        "callers:\n  - {{id: support-bot}}\n  - {{id: ops-bot}}\n  - {{id: idle-bot}}\ncaller_header: X-Toolgate-Caller\n\
         limits:\n  - {{tool: send_email, max: 1, per: 1m, by: caller}}\nlimits_backend: '{redis}'\n"
    )
}

async fn send_email(gw: &Running, upstream: &Upstream, caller: &str) -> (u16, Value) {
    upstream.reply(Reply::json(
        Route::Chat.calls(&[("send_email", r#"{"to":"a@example.com"}"#)]),
    ));
    let response = client()
        .post(gw.url(Route::Chat.path()))
        .header("x-toolgate-caller", caller)
        .body(Route::Chat.request())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gateways_share_one_limit_through_redis() {
    let Some(mut redis) = RedisServer::start() else {
        return;
    };
    let upstream = Upstream::start().await;
    let policy = policy(&redis.url);
    let first = gateway(&policy, &upstream).await;
    let second = gateway(&policy, &upstream).await;

    let (status, _) = send_email(&first, &upstream, "support-bot").await;
    assert_eq!(status, 200);
    // The other replica sees the same count.
    let (status, error) = send_email(&second, &upstream, "support-bot").await;
    assert_eq!(status, 400, "{error}");
    assert_eq!(error["error"]["code"], "rate_limited");
    // Another caller has a count of its own.
    let (status, _) = send_email(&second, &upstream, "ops-bot").await;
    assert_eq!(status, 200);

    // A blocked turn gives its count back, in Redis too.
    upstream.reply(Reply::json(Route::Chat.calls(&[
        ("send_email", r#"{"to":"b@example.com"}"#),
        ("send_email", r#"{"to":"c@example.com"}"#),
    ])));
    let response = client()
        .post(first.url(Route::Chat.path()))
        .header("x-toolgate-caller", "ops-bot")
        .body(Route::Chat.request())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let (status, error) = send_email(&first, &upstream, "ops-bot").await;
    assert_eq!(status, 400, "still one call in the window: {error}");

    // Redis gone: a limited call cannot be counted, so it is refused, even
    // for a caller that has made none; and no gateway starts without it.
    redis.stop();
    let (status, error) = send_email(&second, &upstream, "idle-bot").await;
    assert_eq!(status, 400, "{error}");
    assert_eq!(error["error"]["code"], "rate_limited");
    assert!(gateway_after_stop(&policy).is_err());
}

/// Starting a gateway whose Redis is down fails with a clear reason.
fn gateway_after_stop(policy: &str) -> Result<Arc<Gateway>, String> {
    let text = format!("{policy}audit: {{jsonl: /dev/null}}\n");
    let compiled = Policy::from_text(&text, None).map_err(|e| e.to_string())?;
    let config = Config::from_policy(&compiled, Some("http://127.0.0.1:9")).unwrap();
    Gateway::start(Arc::new(compiled), text.as_bytes(), config).map_err(|err| {
        assert!(err.0.contains("limits_backend"), "{err}");
        err.0
    })
}
