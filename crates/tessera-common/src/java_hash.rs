//! Java's hash functions where OpenSearch's answers depend on them: `String.hashCode` (the
//! order of a `HashMap`'s keys, `random_score`'s salt and string seeds), `Long.hashCode` and
//! HPPC's `BitMixer` (the murmur3 finaliser `random_score` mixes its seeds with).

/// Java's `String.hashCode`, over UTF-16 code units.
pub fn string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, unit| h.wrapping_mul(31).wrapping_add(unit as i32))
}

/// Java's `Long.hashCode`: the two halves xored.
pub fn long_hash(value: i64) -> i32 {
    (value ^ ((value as u64) >> 32) as i64) as i32
}

/// HPPC's `BitMixer.mix32`: murmur3's 32-bit finaliser.
pub fn mix32(k: i32) -> i32 {
    let mut k = k as u32;
    k = (k ^ (k >> 16)).wrapping_mul(0x85eb_ca6b);
    k = (k ^ (k >> 13)).wrapping_mul(0xc2b2_ae35);
    (k ^ (k >> 16)) as i32
}

/// HPPC's `BitMixer.mix(key, seed)`.
pub fn mix(key: i32, seed: i32) -> i32 {
    mix32(key ^ seed)
}

/// The order a `java.util.HashMap` iterates `keys` (distinct, put in slice order) in, as
/// indices into `keys`: the table doubles from 16 slots while it holds more than three quarters
/// of them, slots iterate in index order (the spread hash's low bits) and a slot's keys in
/// insertion order.
pub fn hash_map_order<K: AsRef<str>>(keys: &[K]) -> Vec<usize> {
    let mut capacity = 16usize;
    while keys.len() > capacity / 4 * 3 {
        capacity *= 2;
    }
    let mut order: Vec<(usize, usize)> = keys
        .iter()
        .enumerate()
        .map(|(i, key)| {
            let h = string_hash(key.as_ref()) as u32;
            (((h ^ (h >> 16)) as usize) & (capacity - 1), i)
        })
        .collect();
    order.sort_unstable();
    order.into_iter().map(|(_, i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_hash_is_javas() {
        assert_eq!(string_hash(""), 0);
        assert_eq!(string_hash("rs"), 3649);
        assert_eq!(string_hash("hello world"), 1_794_106_052);
        // UTF-16 code units: a character outside the BMP counts as its two surrogates
        assert_eq!(string_hash("é"), 233);
        assert_eq!(string_hash("😀"), 55357 * 31 + 56832);
    }

    #[test]
    fn hash_map_order_is_javas() {
        // OpenSearch 2.19.6 lists the names of a hit's five matched queries, kept in a
        // HashMap, as zeta, pf, alpha, mid, beta
        assert_eq!(
            hash_map_order(&["zeta", "alpha", "mid", "beta", "pf"]),
            [0, 4, 1, 2, 3]
        );
    }

    #[test]
    fn long_hash_folds_the_halves() {
        assert_eq!(long_hash(0), 0);
        assert_eq!(long_hash(7), 7);
        assert_eq!(long_hash(-1), 0);
        assert_eq!(long_hash(1 << 32), 1);
        assert_eq!(
            long_hash(1_700_000_000_000),
            1_700_000_000_000i64 as i32 ^ 395
        );
    }

    #[test]
    fn mix_is_hppcs_bit_mixer() {
        // OpenSearch 2.19.6 scores a document without a value of random_score's field
        // `(saltedSeed & 0xFFFFFF) / 2^24`, salted seed `mix(seed 1, "rs".hashCode() << 10)`:
        // 0.37996066 for index `rs`, shard 0
        let salted = mix(1, string_hash("rs") << 10);
        let score = (salted & 0x00FF_FFFF) as f32 / (1 << 24) as f32;
        assert_eq!(score, 0.379_960_66);
        assert_eq!(mix32(0), 0);
    }
}
