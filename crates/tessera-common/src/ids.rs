//! Identifiers: auto-generated document ids, index uuids and node ids.
//!
//! Document ids follow OpenSearch's shape (20 URL-safe base64 characters, time-based so that ids
//! generated close together share a prefix, which keeps the `_id` terms dictionary compact).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn encode_base64_url(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 4 / 3 + 2);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = ((b[0] as u32) << 16) | ((b[1] as u32) << 8) | b[2] as u32;
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(URL_SAFE[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// The longest `_id` OpenSearch accepts, in UTF-8 bytes.
pub const MAX_ID_BYTES: usize = 512;

/// The problems OpenSearch's index request validation reports for a client-supplied `_id`
/// (empty, or longer than [`MAX_ID_BYTES`]); empty when the id is acceptable.
pub fn index_id_problems(id: &str) -> Vec<String> {
    if id.is_empty() {
        return vec!["if _id is specified it must not be empty".into()];
    }
    if id.len() > MAX_ID_BYTES {
        return vec![format!(
            "id [{id}] is too long, must be no longer than {MAX_ID_BYTES} bytes but was: {}",
            id.len()
        )];
    }
    Vec::new()
}

/// A 64-bit random number from the standard library's per-process random hasher keys.
pub fn random_u64() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    hasher.finish()
}

/// A random 22-character id, as OpenSearch uses for index and node uuids.
pub fn random_uuid() -> String {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&random_u64().to_le_bytes());
    bytes[8..].copy_from_slice(&random_u64().to_le_bytes());
    encode_base64_url(&bytes)
}

/// A time-based 20-character document id, unique within this process and very likely across.
pub fn time_based_id() -> String {
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    static NODE: OnceLock<[u8; 6]> = OnceLock::new();
    let node = NODE.get_or_init(|| {
        let r = random_u64().to_le_bytes();
        [r[0], r[1], r[2], r[3], r[4], r[5]]
    });
    let sequence = SEQUENCE.fetch_add(1, Ordering::Relaxed) & 0xff_ffff;
    let millis = crate::time::now_millis() as u64;
    // Same layout idea as OpenSearch's TimeBasedUUIDGenerator: the low bits of the sequence
    // first (so ids spread across the terms dictionary's blocks), then the timestamp, then node.
    let mut bytes = [0u8; 15];
    bytes[0] = sequence as u8;
    bytes[1] = (sequence >> 16) as u8;
    bytes[2] = (millis >> 16) as u8;
    bytes[3] = (millis >> 24) as u8;
    bytes[4] = (millis >> 32) as u8;
    bytes[5] = (millis >> 40) as u8;
    bytes[6..12].copy_from_slice(node);
    bytes[12] = (millis >> 8) as u8;
    bytes[13] = (sequence >> 8) as u8;
    bytes[14] = millis as u8;
    encode_base64_url(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn document_ids_are_20_url_safe_chars_and_unique() {
        let ids: HashSet<String> = (0..10_000).map(|_| time_based_id()).collect();
        assert_eq!(ids.len(), 10_000);
        for id in ids.iter().take(10) {
            assert_eq!(id.len(), 20);
            assert!(id.bytes().all(|b| URL_SAFE.contains(&b)));
        }
    }

    #[test]
    fn uuids_are_22_chars() {
        let a = random_uuid();
        assert_eq!(a.len(), 22);
        assert_ne!(a, random_uuid());
    }

    #[test]
    fn base64_url_encoding() {
        assert_eq!(encode_base64_url(b"Man"), "TWFu");
        assert_eq!(encode_base64_url(b"Ma"), "TWE");
        assert_eq!(encode_base64_url(&[0xfb, 0xff]), "-_8");
    }

    #[test]
    fn id_problems_follow_opensearch() {
        assert!(index_id_problems("abc").is_empty());
        assert_eq!(
            index_id_problems(""),
            vec!["if _id is specified it must not be empty".to_string()]
        );
        assert!(index_id_problems(&"é".repeat(256)).is_empty());
        let long = "é".repeat(257);
        assert!(index_id_problems(&long)[0].ends_with("but was: 514"));
    }
}
