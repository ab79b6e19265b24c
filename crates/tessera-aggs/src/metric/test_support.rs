//! Test support: a small deterministic PRNG and an in-memory shard (several segments, the
//! metadata fields a real shard has) on which aggregations run split into random slices.
//!
//! [`TestShard::check_slices`] is the property the metrics promise: the response is identical
//! for one slice and for any split of the segments (and of doc ranges inside a segment) into
//! up to eight slices, each fed in blocks of random size.

use std::ops::Range;

use serde_json::{Map, Value};
use tantivy::indexer::NoMergePolicy;
use tantivy::{Index, IndexWriter, Searcher, TantivyDocument};
use tessera_mapping::{parse_document, FieldTable, Mapping, ParseOutcome};

use crate::internal::{InternalAggregations, RenderContext};
use crate::prepare::{AggContext, PreparedAggs};
use crate::request::parse_aggregations;

/// SplitMix64: small, fast and good enough for shuffles and test data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

/// One shard in memory: each batch of documents is one segment.
pub struct TestShard {
    pub name: String,
    pub table: FieldTable,
    pub searcher: Searcher,
    /// Segment ordinals in index order (by first sequence number, as shards order them).
    pub order: Vec<u32>,
    pub shard_index: u32,
}

impl TestShard {
    pub fn build(mapping: &Value, batches: &[Vec<Value>]) -> TestShard {
        Self::build_numbered(mapping, batches, 0, 0)
    }

    /// A shard whose documents are numbered (ids and sequence numbers) from `first_id`.
    pub fn build_numbered(
        mapping: &Value,
        batches: &[Vec<Value>],
        first_id: u64,
        shard_index: u32,
    ) -> TestShard {
        let mapping = Mapping::parse(mapping).expect("mapping");
        let (table, _) = FieldTable::build(&mapping, None).expect("field table");
        let index = Index::create_in_ram(table.schema().clone());
        tessera_mapping::analysis::register_analyzers(&index);
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        writer.set_merge_policy(Box::new(NoMergePolicy));
        let mut id = first_id;
        for batch in batches {
            for source in batch {
                let doc = match parse_document(&mapping, &table, &id.to_string(), source) {
                    Ok(ParseOutcome::Document(doc)) => doc,
                    Ok(ParseOutcome::MappingUpdate(_)) => panic!("unmapped field in {source}"),
                    Ok(ParseOutcome::Block { .. }) => panic!("nested objects in {source}"),
                    Err(e) => panic!("bad test document {source}: {e:?}"),
                };
                let mut doc: TantivyDocument = doc;
                let meta = &table.meta;
                doc.add_text(meta.id, id.to_string());
                doc.add_bytes(meta.source, source.to_string().as_bytes());
                doc.add_u64(meta.seq_no, id);
                doc.add_u64(meta.version, 1);
                doc.add_u64(meta.primary_term, 1);
                writer.add_document(doc).unwrap();
                id += 1;
            }
            writer.commit().unwrap();
        }
        let searcher = index.reader().unwrap().searcher();
        let first_seq_no: Vec<u64> = searcher
            .segment_readers()
            .iter()
            .map(|segment| {
                segment
                    .fast_fields()
                    .column_opt::<u64>(tessera_mapping::field_table::SEQ_NO_FIELD)
                    .ok()
                    .flatten()
                    .map(|c| c.min_value())
                    .unwrap_or(u64::MAX)
            })
            .collect();
        let mut order: Vec<u32> = (0..first_seq_no.len() as u32).collect();
        order.sort_by_key(|&ord| (first_seq_no[ord as usize], ord));
        TestShard {
            name: "idx".into(),
            table,
            searcher,
            order,
            shard_index,
        }
    }

    fn prepare(&self, aggs: &Value, scored: bool) -> tessera_common::Result<PreparedAggs> {
        let requests = parse_aggregations(aggs)?;
        PreparedAggs::prepare(
            &requests,
            &AggContext {
                table: &self.table,
                index: &self.name,
                default_fields: &["*".to_string()],
                now_millis: 1_700_000_000_000,
                max_terms_count: 65_536,
                searcher: &self.searcher,
                shard_index: self.shard_index,
                max_inner_result_window: 100,
                constant_score: (!scored).then_some(1.0),
                script_failures: Default::default(),
            },
        )
    }

    /// The shard result of `aggs` collected in `slices` (each a list of segment parts in
    /// index order), with blocks of documents of random sizes.
    pub fn shard_result(
        &self,
        aggs: &Value,
        slices: &[Vec<(u32, Range<u32>)>],
        rng: &mut Rng,
        shards_in_request: usize,
    ) -> tessera_common::Result<InternalAggregations> {
        self.scored_result(aggs, slices, rng, shards_in_request, None)
    }

    /// [`TestShard::shard_result`] under a scored query: `score(segment_ord, doc)` is each
    /// match's score, handed over with its block.
    pub fn scored_result(
        &self,
        aggs: &Value,
        slices: &[Vec<(u32, Range<u32>)>],
        rng: &mut Rng,
        shards_in_request: usize,
        score: Option<&dyn Fn(u32, u32) -> f32>,
    ) -> tessera_common::Result<InternalAggregations> {
        let prepared = self.prepare(aggs, score.is_some())?;
        let mut results = Vec::new();
        for slice in slices {
            let mut aggregator = prepared.slice_aggregator()?;
            for (segment_ord, docs) in slice {
                let reader = self.searcher.segment_reader(*segment_ord);
                aggregator.set_segment(reader, *segment_ord, docs.clone())?;
                let all: Vec<u32> = docs.clone().collect();
                let mut start = 0;
                while start < all.len() {
                    let len = 1 + rng.below(40) as usize;
                    let end = (start + len).min(all.len());
                    let block = &all[start..end];
                    match score {
                        Some(score) => {
                            let scores: Vec<f32> =
                                block.iter().map(|&doc| score(*segment_ord, doc)).collect();
                            aggregator.collect_scored(block, &scores);
                        }
                        None => aggregator.collect(block),
                    }
                    start = end;
                }
                aggregator.finish_segment()?;
            }
            results.push(aggregator.build()?);
        }
        let result = prepared.shard_result(results, shards_in_request)?;
        // what crosses the network
        let bytes = result.encode()?;
        InternalAggregations::decode(&bytes)
    }

    /// The whole shard as one slice.
    pub fn one_slice(&self) -> Vec<Vec<(u32, Range<u32>)>> {
        vec![self
            .order
            .iter()
            .map(|&ord| (ord, 0..self.searcher.segment_reader(ord).max_doc()))
            .collect()]
    }

    /// A random split: segments cut into doc ranges, ranges dealt to up to eight slices (each
    /// slice keeps its parts in index order).
    pub fn random_slices(&self, rng: &mut Rng) -> Vec<Vec<(u32, Range<u32>)>> {
        let count = 1 + rng.below(8) as usize;
        let mut slices = vec![Vec::new(); count];
        for &ord in &self.order {
            let max_doc = self.searcher.segment_reader(ord).max_doc();
            let mut start = 0;
            while start < max_doc {
                let end = if rng.below(3) == 0 {
                    max_doc
                } else {
                    (start + 1 + rng.below(max_doc as u64) as u32).min(max_doc)
                };
                slices[rng.below(count as u64) as usize].push((ord, start..end));
                start = end;
            }
        }
        slices.retain(|s: &Vec<(u32, Range<u32>)>| !s.is_empty());
        if slices.is_empty() {
            slices.push(Vec::new());
        }
        slices
    }

    /// Renders `aggs` over this shard alone.
    pub fn render(&self, aggs: &Value) -> tessera_common::Result<Map<String, Value>> {
        let mut rng = Rng::new(1);
        let result = self.shard_result(aggs, &self.one_slice(), &mut rng, 1)?;
        render(aggs, vec![result])
    }

    /// Checks that random slicings give exactly the single-slice response; returns it.
    pub fn check_slices(&self, aggs: &Value, rounds: u64) -> Map<String, Value> {
        let expected = self.render(aggs).expect("single slice");
        for round in 0..rounds {
            let mut rng = Rng::new(round * 7919 + 13);
            let slices = self.random_slices(&mut rng);
            let result = self
                .shard_result(aggs, &slices, &mut rng, 1)
                .expect("sliced");
            let got = render(aggs, vec![result]).expect("render");
            assert_eq!(
                Value::Object(got),
                Value::Object(expected.clone()),
                "round {round} with {} slices differs",
                slices.len()
            );
        }
        expected
    }
}

/// Reduces shard results (in the order given) and renders them, as the coordinator does.
pub fn render(
    aggs: &Value,
    shard_results: Vec<InternalAggregations>,
) -> tessera_common::Result<Map<String, Value>> {
    let requests = parse_aggregations(aggs)?;
    let merged = InternalAggregations::reduce(shard_results, &requests)?;
    merged.render(&requests, &mut RenderContext::new(65_535))
}

/// The mapping most metric tests use.
pub fn mapping() -> Value {
    serde_json::json!({"properties": {
        "n": {"type": "long"}, "f": {"type": "double"}, "fl": {"type": "float"},
        "s": {"type": "scaled_float", "scaling_factor": 100},
        "d": {"type": "date"}, "k": {"type": "keyword"}, "b": {"type": "boolean"},
        "ip": {"type": "ip"}, "w": {"type": "double"}, "t": {"type": "text"},
        "g": {"type": "keyword"}
    }})
}

/// Random documents with multi-valued and missing fields, in `batches` segments.
pub fn random_docs(seed: u64, batches: usize, per_batch: usize) -> Vec<Vec<Value>> {
    use serde_json::json;
    let mut rng = Rng::new(seed);
    let words = ["alpha", "beta", "gamma", "delta", "épsilon", "zzzzz"];
    (0..batches)
        .map(|_| {
            let n = 1 + rng.below(per_batch as u64) as usize;
            (0..n)
                .map(|_| {
                    let mut doc = Map::new();
                    doc.insert("g".into(), json!(["a", "b", "c"][rng.below(3) as usize]));
                    match rng.below(10) {
                        0 => {}
                        1 | 2 => {
                            let values: Vec<i64> = (0..1 + rng.below(3))
                                .map(|_| rng.below(551) as i64 - 50)
                                .collect();
                            doc.insert("n".into(), json!(values));
                        }
                        _ => {
                            doc.insert("n".into(), json!(rng.below(551) as i64 - 50));
                        }
                    }
                    if rng.below(10) != 0 {
                        let v = ((rng.unit() * 300.0 - 50.0) * 1000.0).round() / 1000.0;
                        doc.insert("f".into(), json!(v));
                    }
                    if rng.below(10) != 0 {
                        doc.insert("fl".into(), json!(rng.unit() * 10.0 - 5.0));
                    }
                    if rng.below(5) != 0 {
                        doc.insert("s".into(), json!((rng.unit() * 10_000.0).round() / 100.0));
                    }
                    if rng.below(7) != 0 {
                        doc.insert(
                            "d".into(),
                            json!(1_420_070_400_000i64 + rng.below(86_400_000 * 400) as i64),
                        );
                    }
                    if rng.below(10) != 0 {
                        if rng.below(10) < 7 {
                            doc.insert("k".into(), json!(words[rng.below(6) as usize]));
                        } else {
                            doc.insert(
                                "k".into(),
                                json!([
                                    format!("k{}", rng.below(300)),
                                    format!("k{}", rng.below(300))
                                ]),
                            );
                        }
                    }
                    if rng.below(5) != 0 {
                        doc.insert("b".into(), json!(rng.below(10) < 3));
                    }
                    if rng.below(5) != 0 {
                        doc.insert(
                            "ip".into(),
                            json!(format!("10.0.{}.{}", rng.below(4), rng.below(256))),
                        );
                    }
                    if rng.below(7) != 0 {
                        doc.insert(
                            "w".into(),
                            json!([1.0, 2.0, 3.0, 0.5][rng.below(4) as usize]),
                        );
                    }
                    Value::Object(doc)
                })
                .collect()
        })
        .collect()
}
