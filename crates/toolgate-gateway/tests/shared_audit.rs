//! The audit store replicas share: a real PostgreSQL (`audit.postgres`).

use crate::support::{client, gateway, pg_query, PostgresServer, Reply, Route, Upstream, KEYS};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gateways_audit_into_one_postgres_and_fail_without_it() {
    let Some(mut pg) = PostgresServer::start() else {
        return;
    };
    let upstream = Upstream::start().await;
    let policy = format!(
        "forbidden: [delete_user]\naudit: {{postgres: '{}', redact: [password]}}\n",
        pg.url
    );
    let first = gateway(&policy, &upstream).await;
    let second = gateway(&policy, &upstream).await;

    let mut keys = Vec::new();
    for gw in [&first, &second] {
        upstream.reply(Reply::json(
            Route::Chat.calls(&[("login", r#"{"user":"u-1","password":"hunter2"}"#)]),
        ));
        let response = client()
            .post(gw.url(Route::Chat.path()))
            .body(Route::Chat.request())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        keys.push(response.headers()[KEYS].to_str().unwrap().to_owned());
    }
    upstream.reply(Reply::json(
        Route::Chat.calls(&[("delete_user", r#"{"user":"u-1"}"#)]),
    ));
    let response = client()
        .post(first.url(Route::Chat.path()))
        .body(Route::Chat.request())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);

    let rows = pg_query(
        &pg.url,
        "SELECT outcome, stage FROM audit_requests ORDER BY time_ms, outcome",
    )
    .unwrap();
    let outcomes: Vec<&str> = rows.iter().map(|r| r[0].as_deref().unwrap()).collect();
    assert_eq!(outcomes.iter().filter(|o| **o == "released").count(), 2);
    assert_eq!(outcomes.iter().filter(|o| **o == "blocked").count(), 1);
    for key in &keys {
        let rows = pg_query(
            &pg.url,
            &format!(
                "SELECT tool, arguments->>'password', arguments->>'user' FROM audit_calls WHERE idempotency_key = '{key}'"
            ),
        )
        .unwrap();
        assert_eq!(rows.len(), 1, "key {key}");
        assert_eq!(rows[0][0].as_deref(), Some("login"));
        assert_eq!(rows[0][1].as_deref(), Some("[REDACTED]"));
        assert_eq!(rows[0][2].as_deref(), Some("u-1"));
    }

    // The store gone: nothing is released.
    pg.stop();
    upstream.reply(Reply::json(
        Route::Chat.calls(&[("login", r#"{"user":"u-2"}"#)]),
    ));
    let response = client()
        .post(second.url(Route::Chat.path()))
        .body(Route::Chat.request())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    let error: serde_json::Value = response.json().await.unwrap();
    assert_eq!(error["error"]["type"], "audit_unavailable");
}
