//! The upstream: what a checked request takes there, and its answer,
//! decoded, as the gateway reads it.
//!
//! The gateway asks for `Accept-Encoding: identity`, and still decodes
//! every content coding an upstream may use anyway (gzip, deflate, br,
//! zstd, in any chain): what it checks is what the client gets, and the
//! client gets it decoded. An answer in a coding it cannot decode is
//! [`Read::Unreadable`]: the caller blocks it, never forwards it.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_compression::tokio::bufread::{BrotliDecoder, GzipDecoder, ZlibDecoder, ZstdDecoder};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use bytes::{Bytes, BytesMut};
use futures_util::{Stream, StreamExt, TryStreamExt};
use tokio_util::io::{ReaderStream, StreamReader};

use crate::error::Failure;
use crate::exchange::Exchange;
use crate::providers::Provider;
use crate::request::REQUEST_ID;
use crate::Gateway;

/// Decoded bytes of an answer, chunk by chunk.
type Chunks = Pin<Box<dyn Stream<Item = io::Result<Bytes>> + Send>>;

/// Bytes asked of a decoder at a time.
const DECODED_CHUNK: usize = 64 * 1024;

/// Why an answer could not be read to its end.
#[derive(Debug)]
pub(crate) enum Read {
    /// The upstream failed, stalled or sent too much.
    Failed(Failure),
    /// The bytes came but cannot be read: an unknown content coding, or
    /// data its coding cannot decode. Blocked, never forwarded.
    Unreadable(String),
}

/// An upstream answer: its status, the headers a client may see, and its
/// body decoded.
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    body: Chunks,
    /// Set when the content coding is one the gateway cannot decode.
    unreadable: Option<String>,
    /// Bytes received on the wire so far, before decoding.
    wire: Arc<AtomicUsize>,
}

impl Answer {
    /// Whether the answer says it is a `text/event-stream`.
    pub(crate) fn is_event_stream(&self) -> bool {
        self.headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.trim_start()
                    .get(..17)
                    .is_some_and(|t| t.eq_ignore_ascii_case("text/event-stream"))
            })
    }

    /// The answer's content type as a person may read it: printable
    /// ASCII, at most 80 characters, `none` when it has none.
    pub(crate) fn content_type(&self) -> String {
        let Some(value) = self.headers.get(header::CONTENT_TYPE) else {
            return "none".to_owned();
        };
        value
            .as_bytes()
            .iter()
            .take(80)
            .map(|&b| {
                if b.is_ascii_graphic() || b == b' ' {
                    char::from(b)
                } else {
                    '?'
                }
            })
            .collect()
    }

    /// Bytes received on the wire so far (before decoding).
    pub(crate) fn wire_bytes(&self) -> usize {
        self.wire.load(Ordering::Relaxed)
    }

    /// Read what is left on the wire without decoding it, within `max`
    /// bytes and `wait`, so that [`Answer::wire_bytes`] is the body's size.
    pub(crate) async fn drain(&mut self, max: usize, wait: Duration) {
        let drained = async {
            while self.wire_bytes() <= max {
                match self.body.next().await {
                    Some(Ok(_)) => {}
                    None | Some(Err(_)) => break,
                }
            }
        };
        let _ = tokio::time::timeout(wait, drained).await;
    }

    /// The next decoded chunk, within `wait`; `None` at the end.
    pub(crate) async fn chunk(&mut self, wait: Duration) -> Result<Option<Bytes>, Read> {
        if let Some(why) = self.unreadable.take() {
            return Err(Read::Unreadable(why));
        }
        match tokio::time::timeout(wait, self.body.next()).await {
            Err(_) => Err(Read::Failed(Failure::UpstreamTimeout)),
            Ok(None) => Ok(None),
            Ok(Some(Ok(chunk))) => Ok(Some(chunk)),
            Ok(Some(Err(err))) => Err(classify(&err)),
        }
    }

    /// The whole decoded body, within `max` bytes and the deadline.
    pub(crate) async fn whole(
        &mut self,
        max: usize,
        deadline: tokio::time::Instant,
    ) -> Result<Bytes, Read> {
        // A body that came in one chunk is that chunk, not a copy of it.
        let mut first = Bytes::new();
        let mut joined = BytesMut::new();
        loop {
            let wait = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.chunk(wait).await? {
                None if joined.is_empty() => return Ok(first),
                None => return Ok(joined.freeze()),
                Some(chunk) => {
                    if first.len() + joined.len() + chunk.len() > max {
                        return Err(Read::Failed(Failure::UpstreamTooLarge { max }));
                    }
                    if first.is_empty() && joined.is_empty() {
                        first = chunk;
                    } else {
                        if joined.is_empty() {
                            joined.extend_from_slice(&std::mem::take(&mut first));
                        }
                        joined.extend_from_slice(&chunk);
                    }
                }
            }
        }
    }
}

/// An error while reading: the upstream's (a broken or stalled
/// connection), or the decoder's (bytes that are not what their coding
/// says).
fn classify(err: &io::Error) -> Read {
    match err
        .get_ref()
        .and_then(|e| e.downcast_ref::<reqwest::Error>())
    {
        Some(err) if err.is_timeout() => Read::Failed(Failure::UpstreamTimeout),
        Some(err) => Read::Failed(Failure::UpstreamUnavailable(reason(err))),
        None => Read::Unreadable(
            "the upstream's answer does not decode as its content coding says".to_owned(),
        ),
    }
}

/// Each route's upstream URL, parsed once: a request with no query string
/// to pass on takes a copy rather than parsing its URL again.
#[derive(Debug, Default)]
pub(crate) struct Urls(Vec<(Provider, reqwest::Url)>);

impl Urls {
    /// The URLs of `upstream` (a gateway with no model upstream has none).
    pub(crate) fn new(upstream: &str) -> Urls {
        Urls(
            Provider::ALL
                .into_iter()
                .filter_map(|provider| {
                    let url = reqwest::Url::parse(&format!("{upstream}{}", provider.path()));
                    url.ok().map(|url| (provider, url))
                })
                .collect(),
        )
    }

    fn get(&self, provider: Provider) -> Option<&reqwest::Url> {
        self.0
            .iter()
            .find_map(|(p, url)| (*p == provider).then_some(url))
    }
}

/// Send `body` upstream; its answer's headers within the timeout.
pub(crate) async fn send(
    gw: &Gateway,
    exchange: &Exchange,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Answer, Failure> {
    let query = exchange
        .query
        .as_deref()
        .filter(|q| !q.is_empty())
        .map(|q| query_without_keys(gw, q))
        .filter(|q| !q.is_empty());
    let request = match (query, gw.urls.get(exchange.provider)) {
        (None, Some(url)) => gw.client.post(url.clone()),
        (query, _) => {
            let mut url = format!("{}{}", gw.config.upstream, exchange.provider.path());
            if let Some(query) = query {
                url.push('?');
                url.push_str(&query);
            }
            gw.client.post(url)
        }
    };
    let sent = match request.body(body).build() {
        Ok(mut request) => {
            replace_headers(request.headers_mut(), headers);
            gw.client.execute(request)
        }
        Err(err) => return Err(Failure::UpstreamUnavailable(reason(&err))),
    };
    let response = match tokio::time::timeout(gw.config.upstream_timeout, sent).await {
        Err(_) => return Err(Failure::UpstreamTimeout),
        Ok(Err(err)) if err.is_timeout() => return Err(Failure::UpstreamTimeout),
        Ok(Err(err)) => return Err(Failure::UpstreamUnavailable(reason(&err))),
        Ok(Ok(response)) => response,
    };
    Ok(Answer::read(response))
}

/// `src` in place of the headers of the same names in `dst`, as
/// `RequestBuilder::headers` puts them; moved whole into an empty map (a
/// request's, unless its URL holds credentials).
fn replace_headers(dst: &mut HeaderMap, src: HeaderMap) {
    if dst.is_empty() {
        *dst = src;
        return;
    }
    let mut last: Option<HeaderName> = None;
    for (name, value) in src {
        match name {
            Some(name) => {
                dst.insert(name.clone(), value);
                last = Some(name);
            }
            None => {
                if let Some(name) = &last {
                    dst.append(name.clone(), value);
                }
            }
        }
    }
}

impl Answer {
    /// A response, its headers as a client may see them and its body
    /// decoded as it is read.
    pub(crate) fn read(response: reqwest::Response) -> Answer {
        let status = response.status();
        let codings = codings(response.headers());
        let headers = client_headers(response.headers());
        let wire = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&wire);
        let raw: Chunks = Box::pin(
            response
                .bytes_stream()
                .inspect_ok(move |chunk| {
                    counted.fetch_add(chunk.len(), Ordering::Relaxed);
                })
                .map_err(io::Error::other),
        );
        let (body, unreadable) = match codings {
            Ok(codings) => (decoded(raw, &codings), None),
            Err(coding) => (
                raw,
                Some(format!(
                "the upstream's answer is in a content coding toolgate cannot decode (`{coding}`)"
            )),
            ),
        };
        Answer {
            status,
            headers,
            body,
            unreadable,
            wire,
        }
    }
}

/// The client's query string less every parameter that holds a caller
/// key (as sent, or percent-decoded): a caller key never goes upstream.
fn query_without_keys(gw: &Gateway, query: &str) -> String {
    query
        .split('&')
        .filter(|pair| {
            let decoded = percent_decoded(pair.as_bytes());
            !gw.caller_keys.held_in(pair.as_bytes()) && !gw.caller_keys.held_in(&decoded)
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// `bytes` (one query parameter) with `%XX` escapes and `+` decoded.
fn percent_decoded(bytes: &[u8]) -> Vec<u8> {
    let hex = |b: u8| char::from(b).to_digit(16);
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'%' if at + 2 < bytes.len() => match (hex(bytes[at + 1]), hex(bytes[at + 2])) {
                (Some(high), Some(low)) => {
                    out.push(u8::try_from(high * 16 + low).unwrap_or(b'?'));
                    at += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        at += 1;
    }
    out
}

/// Why the upstream failed, without the URL's credentials or query.
pub(crate) fn reason(err: &reqwest::Error) -> String {
    if err.is_connect() {
        "cannot connect".to_owned()
    } else if err.is_body() || err.is_decode() {
        "the response broke off".to_owned()
    } else {
        "the request failed".to_owned()
    }
}

/// A content coding the gateway decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coding {
    Gzip,
    Deflate,
    Brotli,
    Zstd,
}

/// The codings applied to an answer, in the order they were applied
/// (every `Content-Encoding` value, comma-separated, any case; `identity`
/// is none); the first one the gateway cannot decode is the error.
fn codings(headers: &HeaderMap) -> Result<Vec<Coding>, String> {
    let mut out = Vec::new();
    for value in headers.get_all(header::CONTENT_ENCODING) {
        let Ok(value) = value.to_str() else {
            return Err("(not text)".to_owned());
        };
        for coding in value.split(',').map(str::trim).filter(|c| !c.is_empty()) {
            let known = match coding.to_ascii_lowercase().as_str() {
                "identity" => continue,
                "gzip" | "x-gzip" => Coding::Gzip,
                "deflate" => Coding::Deflate,
                "br" => Coding::Brotli,
                "zstd" => Coding::Zstd,
                _ => return Err(coding.chars().take(40).collect()),
            };
            out.push(known);
        }
    }
    Ok(out)
}

/// `body` with `codings` undone, the last applied first. Each coding is
/// read to the end of the body, member after member (gzip members, zstd
/// frames, zlib and brotli streams one after another): bytes after the
/// first member are decoded too, never dropped, and bytes that are not a
/// member are an error.
fn decoded(mut body: Chunks, codings: &[Coding]) -> Chunks {
    for coding in codings.iter().rev() {
        let reader = StreamReader::new(body);
        body = match coding {
            Coding::Gzip => {
                let mut decoder = GzipDecoder::new(reader);
                decoder.multiple_members(true);
                Box::pin(ReaderStream::with_capacity(decoder, DECODED_CHUNK))
            }
            Coding::Deflate => {
                let mut decoder = ZlibDecoder::new(reader);
                decoder.multiple_members(true);
                Box::pin(ReaderStream::with_capacity(decoder, DECODED_CHUNK))
            }
            Coding::Brotli => {
                let mut decoder = BrotliDecoder::new(reader);
                decoder.multiple_members(true);
                Box::pin(ReaderStream::with_capacity(decoder, DECODED_CHUNK))
            }
            Coding::Zstd => {
                let mut decoder = ZstdDecoder::new(reader);
                decoder.multiple_members(true);
                Box::pin(ReaderStream::with_capacity(decoder, DECODED_CHUNK))
            }
        };
    }
    body
}

/// Headers never forwarded either way: hop-by-hop ones, those the HTTP
/// library sets again, and the content coding (the gateway reads and
/// forwards bodies decoded).
pub(crate) fn hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "host"
            | "content-length"
            | "accept-encoding"
            | "content-encoding"
    )
}

/// Headers the gateway owns (`X-Toolgate-*`): never taken from the
/// upstream, never sent to it.
pub(crate) fn owned(name: &HeaderName) -> bool {
    name.as_str().starts_with("x-toolgate-")
}

/// The headers sent upstream: the client's, less hop-by-hop ones, the
/// gateway's own, the trusted caller header and any that holds a toolgate
/// caller key in any form (`Authorization`, `x-api-key`, `api-key` or
/// any other, alone or among other tokens); asking for an answer in no
/// content coding; the upstream key in place of the client's when one is
/// configured.
pub(crate) fn request_headers(
    gw: &Gateway,
    exchange: &Exchange,
    headers: &HeaderMap,
    key_is_ours: bool,
) -> HeaderMap {
    let caller_header = gw.policy.access().caller_header.as_deref();
    let mut out = HeaderMap::with_capacity(headers.len() + 3);
    for (name, value) in headers {
        if hop(name)
            || owned(name)
            || caller_header.is_some_and(|h| name.as_str().eq_ignore_ascii_case(h))
            || gw.caller_keys.held_in(value.as_bytes())
        {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    if gw.config.upstream_key.is_some() || key_is_ours {
        out.remove(header::AUTHORIZATION);
        out.remove("x-api-key");
    }
    if let Some((name, value)) = gw
        .config
        .upstream_key
        .as_deref()
        .and_then(|key| exchange.provider.key_header(key))
    {
        out.insert(name, value);
    }
    out.insert(
        header::ACCEPT_ENCODING,
        HeaderValue::from_static("identity"),
    );
    // The body is the JSON that was checked, whatever the client called it.
    out.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Ok(value) = HeaderValue::from_str(&exchange.request_id) {
        out.insert(REQUEST_ID, value);
    }
    out
}

/// SSE bytes without the comment lines that name a field the gateway
/// owns (`: x-toolgate-...`): the keys comment is the gateway's to write.
/// A comment is found in every spelling: after a byte order mark and any
/// whitespace (Unicode spaces, vertical tab, NUL and other controls,
/// zero-width characters), in any case, with any dash or underscore,
/// wherever in the comment the name is.
/// Every other byte stays as it came.
pub(crate) fn disowned(raw: Vec<u8>) -> Vec<u8> {
    if !raw
        .split(|&b| b == b'\n' || b == b'\r')
        .any(names_owned_field)
    {
        return raw;
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut rest = &raw[..];
    while !rest.is_empty() {
        let end = rest
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
            .map_or(rest.len(), |at| {
                if rest[at] == b'\r' && rest.get(at + 1) == Some(&b'\n') {
                    at + 2
                } else {
                    at + 1
                }
            });
        let (line, next) = rest.split_at(end);
        let text = line.strip_suffix(b"\n").unwrap_or(line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if !names_owned_field(text) {
            out.extend_from_slice(line);
        }
        rest = next;
    }
    out
}

/// The prefix of the field names the gateway owns, as compared.
const OWNED: &str = "x-toolgate-";

/// Whether an SSE line is a comment naming a field the gateway owns,
/// anywhere in it.
fn names_owned_field(line: &[u8]) -> bool {
    let text = String::from_utf8_lossy(line);
    let ignored = |c: char| {
        c.is_whitespace()
            || c.is_control()
            || matches!(
                c,
                '\u{feff}' | '\u{200b}'..='\u{200f}' | '\u{2060}'..='\u{2064}' | '\u{fffd}'
            )
    };
    let mut chars = text.chars().filter(|&c| !ignored(c));
    if chars.next() != Some(':') {
        return false;
    }
    let name: String = chars
        .map(|c| match c {
            '_' | '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{fe63}' | '\u{ff0d}' => '-',
            c => c.to_ascii_lowercase(),
        })
        .collect();
    name.contains(OWNED)
}

/// The answer's headers a client may see: the upstream's, less hop-by-hop
/// ones, the length and coding (the gateway frames the decoded body
/// itself) and the gateway's own.
fn client_headers(upstream: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::with_capacity(upstream.len() + 2);
    for (name, value) in upstream {
        if hop(name) || owned(name) {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(values: &[&'static str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(header::CONTENT_ENCODING, HeaderValue::from_static(value));
        }
        headers
    }

    #[test]
    fn codings_in_every_spelling_and_chain() {
        assert_eq!(codings(&encoded(&[])), Ok(vec![]));
        assert_eq!(codings(&encoded(&["identity"])), Ok(vec![]));
        assert_eq!(codings(&encoded(&["GZip"])), Ok(vec![Coding::Gzip]));
        assert_eq!(codings(&encoded(&["x-gzip"])), Ok(vec![Coding::Gzip]));
        assert_eq!(
            codings(&encoded(&["gzip, br", "zstd"])),
            Ok(vec![Coding::Gzip, Coding::Brotli, Coding::Zstd])
        );
        assert_eq!(codings(&encoded(&["deflate"])), Ok(vec![Coding::Deflate]));
        assert_eq!(
            codings(&encoded(&["gzip, compress"])),
            Err("compress".to_owned())
        );
    }

    #[test]
    fn comments_naming_the_gateways_fields_are_not_the_upstreams_to_send() {
        let raw = b": x-toolgate-idempotency-keys: forged\r\ndata: {}\n:  X-Toolgate-Other\n: keep-alive\n\n".to_vec();
        assert_eq!(disowned(raw), b"data: {}\n: keep-alive\n\n");
        let plain = b"data: {\"a\": \": x-toolgate-\"}\n\n".to_vec();
        assert_eq!(disowned(plain.clone()), plain);
        for forged in [
            "\u{feff}: x-toolgate-idempotency-keys: f",
            ":\u{b}x-toolgate-idempotency-keys: f",
            ":\u{a0}x-toolgate-idempotency-keys: f",
            ":\u{0}X-TOOLGATE-IDEMPOTENCY-KEYS: f",
            " \t:\u{2003}\u{200b}x_toolgate_keys: f",
            "\u{feff}\u{feff}:x\u{2011}toolgate-keys: f",
            ": note x-toolgate-idempotency-keys: f",
        ] {
            let raw = format!("{forged}\ndata: {{}}\n\n").into_bytes();
            assert_eq!(disowned(raw), b"data: {}\n\n", "{forged:?}");
        }
    }

    #[test]
    fn the_gateways_own_headers_never_come_from_the_upstream() {
        let mut upstream = HeaderMap::new();
        upstream.insert(
            "x-toolgate-idempotency-keys",
            HeaderValue::from_static("forged"),
        );
        upstream.insert("X-Toolgate-Anything", HeaderValue::from_static("forged"));
        upstream.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        upstream.insert("x-request-id", HeaderValue::from_static("r"));
        let out = client_headers(&upstream);
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(out.contains_key("x-request-id"));
    }
}
