//! Who is calling (CONTRACT section 6): with `callers` configured, a
//! request must name a known caller, by its key's SHA-256 or by the
//! trusted `caller_header`; else it is refused before the upstream sees it.

use axum::http::{header, HeaderMap};
use sha2::{Digest, Sha256};
use toolgate::{Caller, Policy};

use crate::error::Failure;

/// Whether the request's caller was found by its key (`Authorization:
/// Bearer` or `x-api-key`): that key is the caller's toolgate key, and it
/// is never sent upstream.
pub(crate) fn by_key(policy: &Policy) -> bool {
    let access = policy.access();
    !access.callers.is_empty() && access.caller_header.is_none()
}

/// The request's caller; `None` when the policy lists no callers.
pub(crate) fn identify(policy: &Policy, headers: &HeaderMap) -> Result<Option<Caller>, Failure> {
    let access = policy.access();
    if access.callers.is_empty() {
        return Ok(None);
    }
    let entry = if let Some(id) = access
        .caller_header
        .as_deref()
        .and_then(|name| headers.get(name))
        .and_then(|value| value.to_str().ok())
    {
        access.callers.iter().find(|c| c.id == id)
    } else {
        let key = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()))
            .map(str::trim)
            .filter(|key| !key.is_empty());
        key.and_then(|key| {
            let digest = hex::encode(Sha256::digest(key.as_bytes()));
            access.callers.iter().find(|c| {
                c.key_sha256
                    .as_deref()
                    .is_some_and(|known| known.eq_ignore_ascii_case(&digest))
            })
        })
    };
    let entry = entry.ok_or(Failure::Unauthorized)?;
    Ok(Some(Caller {
        id: entry.id.clone(),
        roles: entry.roles.clone(),
        attributes: entry.attributes.clone(),
    }))
}
