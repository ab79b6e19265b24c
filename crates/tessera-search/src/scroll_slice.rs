//! Sliced scroll (`"slice": {"id", "max"}` with a scroll or a point in time): which documents
//! one slice reads, so that `max` independent scrolls read disjoint parts that together cover
//! the index — clients read them in parallel.
//!
//! As OpenSearch divides them: with fewer slices than shards, a slice takes whole shards
//! (those whose place in the request is `id` modulo `max`); with at least as many, slice `id`
//! falls on shard `id % shards`, and the slices that share a shard split its documents by a
//! hash of `_id` (murmur3 with OpenSearch's seed), which is the same in every snapshot, so
//! slices opened at different moments still partition the documents.

use serde_json::Value;
use tantivy::query::{
    BitSetDocSet, ConstScorer, EnableScoring, Explanation, Query, Scorer, Weight,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED};
use tessera_common::{Error, Result};

/// The body's `slice`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SliceSpec {
    pub id: u32,
    pub max: u32,
}

/// The seed OpenSearch hashes `_id` terms with for slicing.
const ID_SEED: u32 = 7919;

fn failed_field(field: &str, why: &str) -> Error {
    Error::x_content_parse(format!("[slice] failed to parse field [{field}]"))
        .caused_by(Error::illegal_argument(why))
}

/// Parses `slice`; its errors are OpenSearch's.
pub fn parse_slice(value: &Value) -> Result<SliceSpec> {
    let Value::Object(map) = value else {
        return Err(Error::x_content_parse("[slice] expected an object"));
    };
    let (mut id, mut max) = (None, None);
    for (key, value) in map {
        let number = |field: &str| {
            value
                .as_i64()
                .ok_or_else(|| failed_field(field, &format!("[{field}] must be an integer")))
        };
        match key.as_str() {
            "id" => {
                let n = number("id")?;
                if n < 0 {
                    return Err(failed_field("id", "id must be greater than or equal to 0"));
                }
                id = Some(n);
            }
            "max" => {
                let n = number("max")?;
                if n <= 1 {
                    return Err(failed_field("max", "max must be greater than 1"));
                }
                max = Some(n);
            }
            "field" => {
                if value.as_str() != Some("_id") {
                    return Err(Error::illegal_argument(
                        "[slice] can divide documents by [_id] only: a [field] is not supported",
                    ));
                }
            }
            other => {
                return Err(Error::x_content_parse(format!(
                    "[slice] unknown field [{other}]"
                )))
            }
        }
    }
    let (Some(id), Some(max)) = (id, max) else {
        return Err(Error::x_content_parse(
            "[slice] requires both [id] and [max]",
        ));
    };
    if id >= max {
        return Err(failed_field("max", "max must be greater than id"));
    }
    Ok(SliceSpec {
        id: id.min(u32::MAX as i64) as u32,
        max: max.min(u32::MAX as i64) as u32,
    })
}

/// What one shard of a sliced request reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardSlice {
    All,
    Nothing,
    /// The documents whose `_id` hashes to `part` of `parts`.
    Ids {
        part: u32,
        parts: u32,
    },
}

/// The part of shard `shard` (its place among `shards`) that slice `spec` reads.
pub fn shard_slice(spec: SliceSpec, shard: u32, shards: u32) -> ShardSlice {
    let shards = shards.max(1);
    if spec.max < shards {
        return if shard % spec.max == spec.id {
            ShardSlice::All
        } else {
            ShardSlice::Nothing
        };
    }
    if spec.id % shards != shard {
        return ShardSlice::Nothing;
    }
    let parts = spec.max / shards + u32::from(shard < spec.max % shards);
    match parts {
        0 | 1 => ShardSlice::All,
        parts => ShardSlice::Ids {
            part: spec.id / shards,
            parts,
        },
    }
}

/// The documents of a segment whose `_id` falls in one part (see [`ShardSlice::Ids`]).
#[derive(Clone, Debug)]
pub struct IdSliceQuery {
    pub id_field: Field,
    pub part: u32,
    pub parts: u32,
}

impl IdSliceQuery {
    fn takes(&self, id: &[u8]) -> bool {
        let hash = tessera_common::murmur3::murmur3_x86_32(id, ID_SEED) as i32;
        hash.rem_euclid(self.parts as i32) as u32 == self.part
    }
}

impl Query for IdSliceQuery {
    fn weight(&self, _: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl Weight for IdSliceQuery {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let mut docs = tantivy::BitSet::with_max_value(reader.max_doc());
        let index = reader.inverted_index(self.id_field)?;
        let mut terms = index.terms().stream()?;
        while terms.advance() {
            if !self.takes(terms.key()) {
                continue;
            }
            let mut postings =
                index.read_postings_from_terminfo(terms.value(), IndexRecordOption::Basic)?;
            let mut doc = postings.doc();
            while doc != TERMINATED {
                docs.insert(doc);
                doc = postings.advance();
            }
        }
        Ok(Box::new(ConstScorer::new(BitSetDocSet::from(docs), boost)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut scorer = self.scorer(reader, 1.0)?;
        if scorer.seek(doc) != doc {
            return Err(tantivy::TantivyError::InvalidArgument(format!(
                "document #({doc}) is not in this slice"
            )));
        }
        Ok(Explanation::new("slice", 0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn slices_parse_with_opensearch_errors() {
        assert_eq!(
            parse_slice(&json!({"id": 1, "max": 3})).unwrap(),
            SliceSpec { id: 1, max: 3 }
        );
        for (body, cause) in [
            (json!({"id": 2, "max": 2}), "max must be greater than id"),
            (json!({"id": 0, "max": 1}), "max must be greater than 1"),
            (
                json!({"id": -1, "max": 2}),
                "id must be greater than or equal to 0",
            ),
        ] {
            let e = parse_slice(&body).unwrap_err();
            assert_eq!(e.status(), 400);
            assert_eq!(e.to_json()["caused_by"]["reason"], cause, "{body}");
        }
        assert!(parse_slice(&json!({"id": 0, "max": 2, "x": 1})).is_err());
        assert!(parse_slice(&json!({"id": 0, "max": 2, "field": "n"})).is_err());
        assert!(parse_slice(&json!({"id": 0, "max": 2, "field": "_id"})).is_ok());
    }

    /// Every (shard, part) is read by exactly one slice, whatever the counts.
    #[test]
    fn the_slices_of_a_request_partition_its_shards() {
        for shards in 1..6u32 {
            for max in 2..12u32 {
                let mut readers = std::collections::BTreeMap::new();
                for id in 0..max {
                    for shard in 0..shards {
                        match shard_slice(SliceSpec { id, max }, shard, shards) {
                            ShardSlice::Nothing => {}
                            ShardSlice::All => {
                                *readers.entry((shard, 0, 1)).or_insert(0) += 1;
                            }
                            ShardSlice::Ids { part, parts } => {
                                assert!(part < parts);
                                *readers.entry((shard, part, parts)).or_insert(0) += 1;
                            }
                        }
                    }
                }
                for shard in 0..shards {
                    let parts: Vec<_> = readers.keys().filter(|k| k.0 == shard).collect();
                    let count = parts[0].2;
                    assert_eq!(parts.len() as u32, count, "{shards} shards, {max} slices");
                    assert!(readers.values().all(|&n| n == 1));
                }
            }
        }
    }

    #[test]
    fn ids_fall_in_exactly_one_part() {
        let queries: Vec<IdSliceQuery> = (0..3)
            .map(|part| IdSliceQuery {
                id_field: Field::from_field_id(0),
                part,
                parts: 3,
            })
            .collect();
        let mut sizes = [0; 3];
        for i in 0..300 {
            let id = format!("doc-{i}");
            let taken: Vec<usize> = (0..3)
                .filter(|&p| queries[p].takes(id.as_bytes()))
                .collect();
            assert_eq!(taken.len(), 1);
            sizes[taken[0]] += 1;
        }
        assert!(sizes.iter().all(|&n| n > 60), "{sizes:?}");
    }
}
