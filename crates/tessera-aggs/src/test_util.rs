//! Test support: real (in-memory) shards built through the mapping, collected with random
//! slicings, so tests can check that results do not depend on how documents were split into
//! segments, doc-id ranges, slices and shards.

use std::ops::Range;

use serde_json::Value;
use tantivy::indexer::NoMergePolicy;
use tantivy::{DocId, Index, IndexWriter, Searcher};
use tessera_common::Result;
use tessera_mapping::{parse_document, FieldTable, Mapping, ParseOutcome};

use crate::internal::{InternalAggregations, RenderContext, DEFAULT_MAX_BUCKETS};
use crate::prepare::{AggContext, PreparedAggs};
use crate::request::{parse_aggregations, AggRequest};

/// "now" of every test search: 2015-01-01T00:00:00Z.
pub const NOW: i64 = 1_420_070_400_000;

/// A small deterministic PRNG (splitmix64).
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

/// One shard: an in-memory index whose documents were added in `segments` commits.
pub struct TestShard {
    table: FieldTable,
    searcher: Searcher,
    docs: Vec<Value>,
}

impl TestShard {
    pub fn new(mapping: Value, docs: &[Value], segments: usize) -> TestShard {
        let mapping = Mapping::parse(&mapping).expect("test mapping");
        let (table, _) = FieldTable::build(&mapping, None).expect("field table");
        let index = Index::create_in_ram(table.schema().clone());
        tessera_mapping::analysis::register_analyzers(&index);
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 20_000_000).unwrap();
        writer.set_merge_policy(Box::new(NoMergePolicy));
        let per_segment = docs.len().div_ceil(segments.max(1)).max(1);
        for (i, source) in docs.iter().enumerate() {
            let id = i.to_string();
            let ParseOutcome::Document(mut doc) =
                parse_document(&mapping, &table, &id, source).expect("test document")
            else {
                panic!("test documents must not need mapping updates")
            };
            doc.add_text(table.meta.id, &id);
            writer.add_document(doc).unwrap();
            if (i + 1) % per_segment == 0 {
                writer.commit().unwrap();
            }
        }
        writer.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        TestShard {
            table,
            searcher,
            docs: docs.to_vec(),
        }
    }

    pub fn docs(&self) -> &[Value] {
        &self.docs
    }

    pub fn searcher(&self) -> &Searcher {
        &self.searcher
    }

    /// The shard's result (slices reduced and finished for a request on `shards` shards),
    /// collected with `slices` slices laid out by `seed`.
    pub fn shard_result(
        &self,
        requests: &[AggRequest],
        slices: usize,
        seed: u64,
        shards: usize,
    ) -> Result<InternalAggregations> {
        let default_fields = vec!["*".to_string()];
        let prepared = PreparedAggs::prepare(
            requests,
            &AggContext {
                table: &self.table,
                index: "test",
                default_fields: &default_fields,
                now_millis: NOW,
                max_terms_count: 65_536,
                searcher: &self.searcher,
                shard_index: 0,
                max_inner_result_window: 100,
                constant_score: None,
                script_failures: Default::default(),
            },
        )?;
        let mut rng = Rng::new(seed);
        // every segment cut into 1..=3 doc-id ranges, the parts dealt to slices at random
        let mut parts: Vec<(u32, Range<DocId>)> = Vec::new();
        for (ord, reader) in self.searcher.segment_readers().iter().enumerate() {
            let max = reader.max_doc();
            let mut cuts: Vec<DocId> = (0..rng.below(3))
                .map(|_| rng.below(max as u64 + 1) as DocId)
                .collect();
            cuts.extend([0, max]);
            cuts.sort_unstable();
            cuts.dedup();
            for w in cuts.windows(2) {
                parts.push((ord as u32, w[0]..w[1]));
            }
        }
        rng.shuffle(&mut parts);
        let slices = slices.max(1);
        let mut assigned: Vec<Vec<(u32, Range<DocId>)>> = vec![Vec::new(); slices];
        for (i, part) in parts.into_iter().enumerate() {
            let slot = if i < slices {
                i
            } else {
                rng.below(slices as u64) as usize
            };
            assigned[slot].push(part);
        }
        let mut results = Vec::new();
        for slice in assigned {
            let mut aggregator = prepared.slice_aggregator()?;
            for (ord, docs) in slice {
                let reader = &self.searcher.segment_readers()[ord as usize];
                aggregator.set_segment(reader, ord, docs.clone())?;
                let alive: Vec<DocId> = docs
                    .filter(|d| reader.alive_bitset().is_none_or(|a| a.is_alive(*d)))
                    .collect();
                let mut start = 0;
                while start < alive.len() {
                    let len = 1 + rng.below(700) as usize;
                    let end = (start + len).min(alive.len());
                    aggregator.collect(&alive[start..end]);
                    start = end;
                }
                aggregator.finish_segment()?;
            }
            let built = aggregator.build()?;
            // what crosses the network is postcard
            results.push(InternalAggregations::decode(&built.encode()?)?);
        }
        rng.shuffle(&mut results);
        let result = prepared.shard_result(results, shards)?;
        InternalAggregations::decode(&result.encode()?)
    }

    /// Parses `aggs`, collects with the given slicing and returns the shard's result.
    pub fn try_run(&self, aggs: &Value, slices: usize, seed: u64) -> Result<InternalAggregations> {
        let requests = parse_aggregations(aggs)?;
        self.shard_result(&requests, slices, seed, 1)
    }

    /// The final JSON of `aggs` on this shard alone.
    pub fn render(&self, aggs: &Value, slices: usize, seed: u64) -> Value {
        render_shards(&[self], aggs, slices, seed).expect("aggregation runs")
    }
}

/// The final JSON of `aggs` over several shards (each collected with `slices` slices), the
/// shard results reduced in an order chosen by `seed`.
pub fn render_shards(
    shards: &[&TestShard],
    aggs: &Value,
    slices: usize,
    seed: u64,
) -> Result<Value> {
    let requests = parse_aggregations(aggs)?;
    let mut results = Vec::new();
    for (i, shard) in shards.iter().enumerate() {
        results.push(shard.shard_result(
            &requests,
            slices,
            seed.wrapping_add(i as u64 * 7919),
            shards.len(),
        )?);
    }
    Rng::new(seed ^ 0x5555).shuffle(&mut results);
    let reduced = InternalAggregations::reduce(results, &requests)?;
    let mut ctx = RenderContext::new(DEFAULT_MAX_BUCKETS);
    Ok(Value::Object(reduced.render(&requests, &mut ctx)?))
}

/// Splits documents among `n` shards by a seeded hash (as routing would).
pub fn split_docs(docs: &[Value], n: usize, seed: u64) -> Vec<Vec<Value>> {
    let mut rng = Rng::new(seed);
    let mut out = vec![Vec::new(); n];
    for doc in docs {
        out[rng.below(n as u64) as usize].push(doc.clone());
    }
    out
}

/// Compares two JSON values, numbers to `rel` relative precision; returns the first difference.
pub fn json_diff(a: &Value, b: &Value, rel: f64, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for key in x.keys().chain(y.keys()) {
                let p = format!("{path}.{key}");
                match (x.get(key), y.get(key)) {
                    (Some(u), Some(v)) => {
                        if let Some(d) = json_diff(u, v, rel, &p) {
                            return Some(d);
                        }
                    }
                    _ => return Some(format!("{p}: present on one side only")),
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                return Some(format!("{path}: {} vs {} elements", x.len(), y.len()));
            }
            x.iter()
                .zip(y)
                .enumerate()
                .find_map(|(i, (u, v))| json_diff(u, v, rel, &format!("{path}[{i}]")))
        }
        (Value::Number(x), Value::Number(y)) => {
            let (u, v) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            let close = u == v || (u - v).abs() <= rel * u.abs().max(v.abs());
            (!close).then(|| format!("{path}: {x} vs {y}"))
        }
        _ => (a != b).then(|| format!("{path}: {a} vs {b}")),
    }
}
