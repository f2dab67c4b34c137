//! `toolgate mcp -- COMMAND ARGS...`: a local client (Claude Desktop,
//! Cursor, an IDE) starts toolgate in place of a stdio MCP server; toolgate
//! starts the server and stands between them. Messages are JSON-RPC, one
//! a line, both ways (each line at most `input_limits.max_payload_bytes`);
//! the server's stderr passes through; toolgate exits with the server's
//! exit status (128 + the signal when a signal ended it).

use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, Command};
use tokio::sync::Mutex;
use toolgate::Caller;

use super::message::{self, Body, Message};
use super::{call, open_pins, Asked, McpGate, Step, Who};
use crate::Gateway;

/// The scope of the one client of a stdio wrapper.
const SCOPE: &str = "stdio";
/// How long the gateway waits for its own `tools/list`.
const LIST_WAIT: Duration = Duration::from_secs(30);
/// Most pages of its own `tools/list` the gateway reads.
const MAX_PAGES: usize = 100;
/// How long the server may take to exit once its stdin is closed.
const EXIT_WAIT: Duration = Duration::from_secs(10);

/// One line read within a bound.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    Text(Vec<u8>),
    /// Longer than the bound; its bytes were skipped to its end.
    TooLong,
    End,
}

/// The next line of `reader`, without its line end; a line longer than
/// `max` is skipped whole, never buffered.
pub(crate) async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    max: usize,
) -> std::io::Result<Line> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(if too_long {
                Line::TooLong
            } else if line.is_empty() {
                Line::End
            } else {
                Line::Text(line)
            });
        }
        let (part, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(at) => (&chunk[..at], Some(at + 1)),
            None => (chunk, None),
        };
        if !too_long {
            if line.len() + part.len() > max {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(part);
            }
        }
        let used = done.unwrap_or(chunk.len());
        reader.consume(used);
        if done.is_some() {
            if too_long {
                return Ok(Line::TooLong);
            }
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Line::Text(line));
        }
    }
}

/// What the next non-blank line holds.
enum Next {
    Body(Body),
    /// A line refused: the JSON-RPC error code that says why, and why.
    Refused(i64, String),
    End,
}

/// The next non-blank line, read as JSON-RPC within `max` bytes.
async fn next_body<R: AsyncBufRead + Unpin>(reader: &mut R, max: usize) -> Next {
    loop {
        let text = match read_line(reader, max).await {
            Ok(Line::Text(text)) => text,
            Ok(Line::TooLong) => {
                let why = format!("a message longer than {max} bytes was refused");
                return Next::Refused(message::INVALID_REQUEST, why);
            }
            Ok(Line::End) | Err(_) => return Next::End,
        };
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        return match Body::read(&text) {
            Ok(body) => Next::Body(body),
            Err(why) => Next::Refused(message::PARSE_ERROR, why),
        };
    }
}

/// Write one message as a line.
async fn send<W: AsyncWrite + Unpin>(writer: &Mutex<W>, text: &str) -> std::io::Result<()> {
    let mut writer = writer.lock().await;
    let mut line = Vec::with_capacity(text.len() + 1);
    line.extend_from_slice(text.as_bytes());
    line.push(b'\n');
    writer.write_all(&line).await?;
    writer.flush().await
}

/// Run `command` behind the checks of `gw`'s policy, as server `name`;
/// the exit status to exit with.
pub async fn run(
    gw: Arc<Gateway>,
    name: &str,
    caller: Option<Caller>,
    command: &str,
    args: &[String],
) -> Result<i32, String> {
    let pins = open_pins(&gw.policy).map_err(|err| err.0)?;
    let gate = Arc::new(McpGate::new(name, None, pins));
    let max = gw.policy.limits().max_payload_bytes;
    let mut child = Command::new(command)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| format!("cannot start `{command}`: {err}"))?;
    let (Some(child_in), Some(child_out)) = (child.stdin.take(), child.stdout.take()) else {
        return Err("the server's stdin and stdout could not be opened".to_owned());
    };
    let to_server = Arc::new(Mutex::new(child_in));
    let to_client = Arc::new(Mutex::new(tokio::io::stdout()));

    let server_side = {
        let (gw, gate, to_client) = (Arc::clone(&gw), Arc::clone(&gate), Arc::clone(&to_client));
        tokio::spawn(async move {
            let mut reader = BufReader::new(child_out);
            loop {
                let body = match next_body(&mut reader, max).await {
                    Next::Body(body) => body,
                    Next::Refused(_, why) => {
                        tracing::error!(%why, "refused a line of the server's");
                        continue;
                    }
                    Next::End => return,
                };
                let mut out = Vec::with_capacity(body.messages.len());
                for message in &body.messages {
                    if let Some(text) = gate.on_server(&gw, message, SCOPE).await {
                        out.push(text);
                    }
                }
                if !out.is_empty()
                    && send(&to_client, &Body::write(body.batch, &out))
                        .await
                        .is_err()
                {
                    return;
                }
            }
        })
    };

    let client_side = client(&gw, &gate, caller, &to_server, &to_client, max);
    let status = tokio::select! {
        () = client_side => {
            // The client is gone: close the server's stdin, let it exit.
            drop(to_server);
            if let Ok(status) = tokio::time::timeout(EXIT_WAIT, child.wait()).await {
                status
            } else {
                let _ = child.start_kill();
                child.wait().await
            }
        }
        status = child.wait() => status,
    }
    .map_err(|err| format!("cannot wait for the server: {err}"))?;
    // What the server wrote before it exited still reaches the client.
    let _ = tokio::time::timeout(Duration::from_secs(5), server_side).await;
    let _ = to_client.lock().await.flush().await;
    Ok(exit_code(status))
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    if let Some(code) = status.code() {
        return code;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return 128 + signal;
        }
    }
    1
}

/// The client's side: each line checked, then sent to the server or
/// answered in its place.
async fn client(
    gw: &Gateway,
    gate: &McpGate,
    caller: Option<Caller>,
    to_server: &Mutex<ChildStdin>,
    to_client: &Mutex<tokio::io::Stdout>,
    max: usize,
) {
    let mut reader = BufReader::new(tokio::io::stdin());
    let lists = AtomicU64::new(0);
    loop {
        let body = match next_body(&mut reader, max).await {
            Next::Body(body) => body,
            Next::Refused(code, why) => {
                let answer = message::error(None, code, &format!("toolgate: {why}"), None);
                if send(to_client, &answer).await.is_err() {
                    return;
                }
                continue;
            }
            Next::End => return,
        };
        let who = Who {
            caller: caller.clone(),
            request_id: crate::request::new_request_id(),
        };
        let mut forward = Vec::with_capacity(body.messages.len());
        for message in &body.messages {
            let mut step = gate.on_client(gw, message, &who, SCOPE, false).await;
            if matches!(step, Step::List) {
                if let Err(why) = own_list(gw, gate, to_server, &lists).await {
                    tracing::warn!(%why, "the gateway's own tools/list failed");
                }
                step = gate.on_client(gw, message, &who, SCOPE, true).await;
            }
            match step {
                Step::Forward(text, _) => forward.push(text),
                Step::Answer(text) => {
                    if send(to_client, &text).await.is_err() {
                        return;
                    }
                }
                Step::List => {}
            }
        }
        if !forward.is_empty()
            && send(to_server, &Body::write(body.batch, &forward))
                .await
                .is_err()
        {
            return;
        }
    }
}

/// List the server's tools into the catalog, following `nextCursor`.
async fn own_list(
    gw: &Gateway,
    gate: &McpGate,
    to_server: &Mutex<ChildStdin>,
    lists: &AtomicU64,
) -> Result<(), String> {
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let n = lists.fetch_add(1, Ordering::Relaxed);
        let id = format!("\"toolgate-list-{n}\"");
        let params = match &cursor {
            Some(cursor) => serde_json::json!({"cursor": cursor}),
            None => serde_json::json!({}),
        };
        let request = serde_json::json!({
            "jsonrpc": "2.0", "id": format!("toolgate-list-{n}"),
            "method": "tools/list", "params": params,
        });
        let (waiter, answer) = tokio::sync::oneshot::channel();
        gate.wait(SCOPE, &id, Asked::Own(waiter));
        send(to_server, &request.to_string())
            .await
            .map_err(|err| format!("cannot write to the server: {err}"))?;
        let answer = tokio::time::timeout(LIST_WAIT, answer)
            .await
            .map_err(|_| "the server did not answer tools/list in time".to_owned())?
            .map_err(|_| "the server's tools/list answer was lost".to_owned())?;
        let answer = Message::read(&answer)?;
        cursor = call::learn(gate, gw, &answer)?;
        if cursor.is_none() {
            return Ok(());
        }
    }
    Err(format!(
        "the server's tools/list has more than {MAX_PAGES} pages"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_bounded_and_skipped_whole() {
        let input: &[u8] = b"short\r\nthis line is too long\nok\nlast";
        let mut reader = BufReader::with_capacity(4, input);
        assert_eq!(
            read_line(&mut reader, 8).await.unwrap(),
            Line::Text(b"short".to_vec())
        );
        assert_eq!(read_line(&mut reader, 8).await.unwrap(), Line::TooLong);
        assert_eq!(
            read_line(&mut reader, 8).await.unwrap(),
            Line::Text(b"ok".to_vec())
        );
        assert_eq!(
            read_line(&mut reader, 8).await.unwrap(),
            Line::Text(b"last".to_vec())
        );
        assert_eq!(read_line(&mut reader, 8).await.unwrap(), Line::End);
    }
}
