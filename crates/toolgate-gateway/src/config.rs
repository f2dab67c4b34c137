//! The gateway's settings: the policy's `gateway` section, with the
//! command line and the environment on top.

use std::fmt;
use std::time::Duration;

use toolgate::Policy;

/// Environment variable naming the upstream when neither `--upstream` nor
/// `gateway.upstream` does.
pub const UPSTREAM_ENV: &str = "TOOLGATE_UPSTREAM";
/// Environment variable holding the upstream key when the policy sets none.
pub const UPSTREAM_KEY_ENV: &str = "TOOLGATE_UPSTREAM_KEY";

/// What `toolgate serve` runs with.
#[derive(Clone)]
pub struct Config {
    /// Base URL, without a trailing slash; the request path is appended.
    pub upstream: String,
    /// Sent upstream instead of the client's key, when set.
    pub upstream_key: Option<String>,
    pub max_request_bytes: usize,
    pub max_response_bytes: usize,
    pub connect_timeout: Duration,
    pub upstream_timeout: Duration,
    /// How long a client may take to send a request's headers (also how
    /// long an idle connection is kept).
    pub header_read_timeout: Duration,
    /// How long a client may take to send a request's body.
    pub body_read_timeout: Duration,
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("upstream", &self.upstream)
            .field(
                "upstream_key",
                &self.upstream_key.as_ref().map(|_| "[REDACTED]"),
            )
            .field("max_request_bytes", &self.max_request_bytes)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("connect_timeout", &self.connect_timeout)
            .field("upstream_timeout", &self.upstream_timeout)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("body_read_timeout", &self.body_read_timeout)
            .finish()
    }
}

/// A setting the gateway cannot start with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// The settings of `policy`, with `upstream` (from `--upstream`)
    /// winning over `gateway.upstream`, then `TOOLGATE_UPSTREAM`.
    pub fn from_policy(policy: &Policy, upstream: Option<&str>) -> Result<Config, ConfigError> {
        let settings = policy.gateway();
        let upstream = upstream
            .map(str::to_owned)
            .or_else(|| settings.upstream.clone())
            .or_else(|| std::env::var(UPSTREAM_ENV).ok())
            .ok_or_else(|| {
                ConfigError(format!(
                    "no upstream: pass --upstream URL, set gateway.upstream in the policy, or set {UPSTREAM_ENV}"
                ))
            })?;
        let upstream = upstream.trim().trim_end_matches('/').to_owned();
        let parsed = reqwest::Url::parse(&upstream)
            .map_err(|err| ConfigError(format!("upstream `{upstream}` is not a URL: {err}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ConfigError(format!(
                "upstream `{upstream}` must be an http:// or https:// URL"
            )));
        }
        let upstream_key = match settings.upstream_key.as_deref() {
            Some(text) => Some(interpolate(text)?),
            None => std::env::var(UPSTREAM_KEY_ENV)
                .ok()
                .filter(|k| !k.is_empty()),
        };
        Ok(Config {
            upstream,
            upstream_key,
            ..Config::without_upstream(policy)
        })
    }
}

impl Config {
    /// The settings of a gateway with no model upstream (`toolgate mcp`,
    /// whose server is a child process).
    #[must_use]
    pub fn without_upstream(policy: &Policy) -> Config {
        let settings = policy.gateway();
        let payload = policy.limits().max_payload_bytes;
        Config {
            upstream: String::new(),
            upstream_key: None,
            max_request_bytes: settings.max_request_bytes.unwrap_or(payload),
            max_response_bytes: settings.max_response_bytes.unwrap_or(payload),
            connect_timeout: Duration::from_secs_f64(settings.connect_timeout),
            upstream_timeout: Duration::from_secs_f64(settings.upstream_timeout),
            header_read_timeout: Duration::from_secs_f64(settings.header_read_timeout),
            body_read_timeout: Duration::from_secs_f64(settings.body_read_timeout),
        }
    }
}

/// `${env.NAME}` replaced by the variable's value; a missing variable is an
/// error (a key that silently became empty would send the client's).
fn interpolate(text: &str) -> Result<String, ConfigError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("${env.") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 6..];
        let end = after.find('}').ok_or_else(|| {
            ConfigError("gateway.upstream_key: `${env.` without its closing `}`".to_owned())
        })?;
        let name = &after[..end];
        let value = std::env::var(name).map_err(|_| {
            ConfigError(format!(
                "gateway.upstream_key: the environment variable {name} is not set"
            ))
        })?;
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_from_the_command_line_wins_and_loses_its_slash() {
        let policy = Policy::from_text("gateway: {upstream: 'http://a.example'}", None).unwrap();
        let config = Config::from_policy(&policy, Some("http://b.example/")).unwrap();
        assert_eq!(config.upstream, "http://b.example");
        let config = Config::from_policy(&policy, None).unwrap();
        assert_eq!(config.upstream, "http://a.example");
        let err = Config::from_policy(&policy, Some("ftp://c")).unwrap_err();
        assert!(err.0.contains("http://"), "{err}");
    }

    #[test]
    fn keys_come_from_the_environment_and_never_print() {
        std::env::set_var("TOOLGATE_TEST_KEY_1", "sk-secret");
        let policy = Policy::from_text(
            "gateway: {upstream: 'http://a', upstream_key: '${env.TOOLGATE_TEST_KEY_1}'}",
            None,
        )
        .unwrap();
        let config = Config::from_policy(&policy, None).unwrap();
        assert_eq!(config.upstream_key.as_deref(), Some("sk-secret"));
        assert!(!format!("{config:?}").contains("sk-secret"));
        let policy = Policy::from_text(
            "gateway: {upstream: 'http://a', upstream_key: '${env.TOOLGATE_TEST_UNSET_9}'}",
            None,
        )
        .unwrap();
        let err = Config::from_policy(&policy, None).unwrap_err();
        assert!(err.0.contains("TOOLGATE_TEST_UNSET_9"), "{err}");
    }
}
