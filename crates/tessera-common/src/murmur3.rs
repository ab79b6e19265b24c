//! MurmurHash3 (x86, 32-bit), the hash OpenSearch uses to route a document to a shard.
//!
//! OpenSearch hashes the routing value (the `_id` unless `routing` is given) as UTF-16 code units
//! in little-endian byte order; the same function here keeps Tessera's shard for an id equal to
//! OpenSearch's, which makes side-by-side comparisons on multi-shard indexes meaningful.

/// The 32-bit MurmurHash3 of `data` with `seed`.
pub fn murmur3_x86_32(data: &[u8], seed: u32) -> u32 {
    const C1: u32 = 0xcc9e_2d51;
    const C2: u32 = 0x1b87_3593;
    let mut h = seed;
    let chunks = data.chunks_exact(4);
    let tail = chunks.remainder();
    for chunk in chunks {
        let mut k = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        k = k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
        h ^= k;
        h = h.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    let mut k = 0u32;
    for (i, byte) in tail.iter().enumerate() {
        k ^= (*byte as u32) << (8 * i);
    }
    if !tail.is_empty() {
        k = k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
        h ^= k;
    }
    h ^= data.len() as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h
}

/// OpenSearch's `Murmur3HashFunction.hash(String)`: the UTF-16LE bytes hashed with seed 0.
pub fn routing_hash(routing: &str) -> i32 {
    let bytes: Vec<u8> = routing
        .encode_utf16()
        .flat_map(|unit| unit.to_le_bytes())
        .collect();
    murmur3_x86_32(&bytes, 0) as i32
}

/// The shard a routing value goes to, for an index with `num_shards` shards (and as many routing
/// shards, which is what an index created with a fixed shard count uses).
pub fn shard_for_routing(routing: &str, num_shards: u32) -> u32 {
    routing_hash(routing).rem_euclid(num_shards as i32) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_reference_vectors() {
        // Reference values of MurmurHash3_x86_32.
        assert_eq!(murmur3_x86_32(b"", 0), 0);
        assert_eq!(murmur3_x86_32(b"", 1), 0x514E_28B7);
        assert_eq!(murmur3_x86_32(b"hello", 0), 0x248B_FA47);
        assert_eq!(
            murmur3_x86_32(b"The quick brown fox jumps over the lazy dog", 0),
            0x2E4F_F723
        );
    }

    #[test]
    fn routing_spreads_ids_over_all_shards() {
        let mut seen = [0usize; 5];
        for i in 0..1000 {
            seen[shard_for_routing(&i.to_string(), 5) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| n > 150), "{seen:?}");
    }
}
