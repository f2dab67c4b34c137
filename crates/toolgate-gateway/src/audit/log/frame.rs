//! One record of the audit log on disk: a 16-byte header, then the record
//! as JSON.
//!
//! ```text
//! 0..4    payload length, u32 little-endian (1 to MAX_PAYLOAD)
//! 4..8    CRC-32 of bytes 0..4, 8..16 and the payload, u32 little-endian
//! 8..16   the record's own position in the log, u64 little-endian
//! 16..    the payload
//! ```
//!
//! A record is read only if its length is sane, its checksum matches and
//! it names the position it is read at. So the zeros of a fresh segment,
//! the old records of a reused one and the torn tail of a write the
//! machine did not finish all read as the end of the log, never as a
//! record.

/// Bytes before the payload.
pub(crate) const HEADER: usize = 16;
/// The largest payload a record may have: more than any request the
/// gateway reads, far less than a length read from garbage tends to be.
pub(crate) const MAX_PAYLOAD: usize = 1 << 30;

/// Append the frame of `payload`, at log position `position`, to `out`.
pub(crate) fn encode(out: &mut Vec<u8>, position: u64, payload: &[u8]) -> Result<(), String> {
    let len = u32::try_from(payload.len())
        .ok()
        .filter(|&len| len > 0 && len as usize <= MAX_PAYLOAD)
        .ok_or_else(|| {
            format!(
                "an audit record of {} bytes is larger than the log takes",
                payload.len()
            )
        })?;
    let len = len.to_le_bytes();
    let position = position.to_le_bytes();
    out.extend_from_slice(&len);
    out.extend_from_slice(&checksum(len, position, payload).to_le_bytes());
    out.extend_from_slice(&position);
    out.extend_from_slice(payload);
    Ok(())
}

/// The payload length a header announces, if the header can start a
/// record at `position` (the checksum is checked once the payload is
/// read, by [`payload`]).
pub(crate) fn announced(header: &[u8; HEADER], position: u64) -> Option<usize> {
    let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
    let at = u64::from_le_bytes(header[8..16].try_into().ok()?);
    (len > 0 && len <= MAX_PAYLOAD && at == position).then_some(len)
}

/// Whether `payload` is the one `header` was written with.
pub(crate) fn payload(header: &[u8; HEADER], payload: &[u8]) -> bool {
    let len: [u8; 4] = [header[0], header[1], header[2], header[3]];
    let crc = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
    let mut position = [0u8; 8];
    position.copy_from_slice(&header[8..16]);
    payload.len() == u32::from_le_bytes(len) as usize && checksum(len, position, payload) == crc
}

fn checksum(len: [u8; 4], position: [u8; 8], payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&len);
    hasher.update(&position);
    hasher.update(payload);
    hasher.finalize()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(frame: &[u8]) -> [u8; HEADER] {
        frame[..HEADER].try_into().unwrap()
    }

    #[test]
    fn a_record_reads_back_only_at_its_own_position_and_whole() {
        let mut frame = Vec::new();
        encode(&mut frame, 4096, br#"{"request_id":"r-1"}"#).unwrap();
        let head = header(&frame);
        assert_eq!(announced(&head, 4096), Some(20));
        assert!(payload(&head, &frame[HEADER..]));
        // Anywhere else, it is not a record: a reused segment's old frames.
        assert_eq!(announced(&head, 0), None);
        // A payload cut short or changed fails its checksum.
        assert!(!payload(&head, &frame[HEADER..frame.len() - 1]));
        let mut changed = frame.clone();
        changed[HEADER + 3] ^= 1;
        assert!(!payload(&head, &changed[HEADER..]));
        // Zeros, as a fresh segment holds, are the end of the log.
        assert_eq!(announced(&[0; HEADER], 0), None);
    }

    #[test]
    fn an_empty_record_is_refused() {
        assert!(encode(&mut Vec::new(), 0, b"").is_err());
    }
}
