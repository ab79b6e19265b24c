//! `cardinality`: the number of distinct values, counted with HyperLogLog++ exactly as
//! OpenSearch does it, so that both engines give the same number on the same data.
//!
//! Values are hashed to 64 bits the way OpenSearch hashes them: integers, dates and booleans
//! with the murmur3 finaliser of `BitMixer.mix64` on the long, doubles with it on the double's
//! bits, keywords and ips with MurmurHash3 x64-128 (seed 0, first half) of their UTF-8 bytes or
//! 16-byte address. Keyword ordinals are hashed once per segment, not once per document.
//!
//! `precision_threshold` (default 3000, at most 40000) picks a precision `p` (4..=18). Below
//! `(2^p / 4) × 0.75` distinct hashes the state is a set of 32-bit encoded hashes (linear
//! counting over 2^25 buckets: exact up to a few thousand values); above, 2^p registers hold
//! maximum run lengths and the estimate is HLL++ with the empirical bias correction of the paper
//! (the same data OpenSearch uses, in [`super::hll_tables`]).
//!
//! Merging is a set union (switching to registers when the union outgrows the threshold) or a
//! register-wise maximum, and the encoding is designed so that a set replayed into registers
//! equals registers fed directly. The final state is therefore a function of the set of hashes
//! only: any split into slices and shards gives the same count.

use std::collections::HashSet;
use std::hash::BuildHasherDefault;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tantivy::DocId;
use tessera_common::{Error, Result};

use crate::collector::{Collector, SegmentContext, SubCollectors};
use crate::internal::InternalAgg;
use crate::metric::hll_tables::{BIAS_DATA, RAW_ESTIMATE_DATA, THRESHOLDS};
use crate::metric::numeric_missing;
use crate::ords::{slot, IntHasher};
use crate::prepare::{AggContext, Factory};
use crate::request::{unknown_field, value_text, AggKind, AggRequest, ValuesSourceParams};
use crate::script_values::ScriptValues;
use crate::values::{Accepts, IpValues, KeywordValues, NumericKind, NumericValues, ValueSource};

const AGG: &str = "cardinality";

/// The default precision (a threshold of 3000).
pub const DEFAULT_PRECISION: u8 = 14;
const MIN_PRECISION: u8 = 4;
const MAX_PRECISION: u8 = 18;
/// Bits of a hash kept by the linear-counting encoding.
const P2: u32 = 25;

#[derive(Clone, Debug, PartialEq)]
pub struct CardinalityRequest {
    pub source: ValuesSourceParams,
    pub precision_threshold: Option<i64>,
    pub execution_hint: Option<String>,
}

/// A long parameter parsed the way OpenSearch's `declareLong` does (numbers, numeric strings;
/// fractions truncated).
fn long_param(key: &str, value: &Value) -> Result<i64> {
    let failed = |cause: Error| {
        Error::x_content_parse(format!("[{AGG}] failed to parse field [{key}]")).caused_by(cause)
    };
    match value {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .ok_or_else(|| {
                failed(Error::illegal_argument(format!(
                    "For input string: \"{n}\""
                )))
            }),
        Value::String(s) => s
            .trim()
            .parse::<i64>()
            .or_else(|_| s.trim().parse::<f64>().map(|f| f as i64))
            .map_err(|_| {
                failed(Error::illegal_argument(format!(
                    "For input string: \"{s}\""
                )))
            }),
        other => Err(Error::x_content_parse(format!(
            "[{AGG}] {key} doesn't support values of type: {}",
            crate::bucket::token(other)
        ))),
    }
}

impl CardinalityRequest {
    pub fn parse(name: &str, body: &Map<String, Value>) -> Result<CardinalityRequest> {
        let mut request = CardinalityRequest {
            source: ValuesSourceParams::default(),
            precision_threshold: None,
            execution_hint: None,
        };
        for (key, value) in body {
            match key.as_str() {
                // cardinality takes no `format`
                "format" => return Err(unknown_field(AGG, key)),
                "precision_threshold" => {
                    let n = long_param(key, value)?;
                    if n < 0 {
                        return Err(Error::x_content_parse(format!(
                            "[{AGG}] failed to parse field [{key}]"
                        ))
                        .caused_by(Error::illegal_argument(format!(
                            "[precisionThreshold] must be greater than or equal to 0. Found [{n}] in [{name}]"
                        ))));
                    }
                    request.precision_threshold = Some(n);
                }
                // deprecated and ignored, as in OpenSearch
                "rehash" => {
                    long_param(key, value)?;
                }
                "execution_hint" => match value {
                    Value::String(s) => request.execution_hint = Some(s.clone()),
                    other => {
                        return Err(Error::x_content_parse(format!(
                            "[{AGG}] execution_hint doesn't support values of type: {}",
                            crate::bucket::token(other)
                        )))
                    }
                },
                _ => {
                    if !request.source.accept(AGG, key, value)? {
                        return Err(unknown_field(AGG, key));
                    }
                }
            }
        }
        request.source.require_field_at_parse()?;
        Ok(request)
    }

    /// The HLL++ precision for this request (OpenSearch's `precisionFromThreshold`).
    pub fn precision(&self) -> u8 {
        match self.precision_threshold {
            None => DEFAULT_PRECISION,
            Some(threshold) => precision_from_threshold(threshold),
        }
    }
}

/// The precision whose linear-counting table holds `count` hashes.
pub fn precision_from_threshold(count: i64) -> u8 {
    // OpenSearch divides by the float 0.75f
    let entries = (count as f32 / 0.75f32).ceil() as i64;
    let bytes = entries.saturating_mul(4).max(0) as u64;
    let bits = (64 - bytes.leading_zeros()).max(1) as u8;
    bits.clamp(MIN_PRECISION, MAX_PRECISION)
}

// ---- hashing ----

/// The murmur3 64-bit finaliser variant of OpenSearch's `BitMixer.mix64`.
pub fn mix64(value: u64) -> u64 {
    let mut z = value;
    z = (z ^ (z >> 32)).wrapping_mul(0x4cd6_944c_5cc2_0b6d);
    z = (z ^ (z >> 29)).wrapping_mul(0xfc12_c5b1_9d32_59e9);
    z ^ (z >> 32)
}

fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

/// MurmurHash3 x64 128-bit of `data` with `seed`, as `(h1, h2)`.
pub fn murmur3_x64_128(data: &[u8], seed: u64) -> (u64, u64) {
    const C1: u64 = 0x87c3_7b91_1142_53d5;
    const C2: u64 = 0x4cf5_ad43_2745_937f;
    let mut h1 = seed;
    let mut h2 = seed;
    let blocks = data.chunks_exact(16);
    let tail = blocks.remainder();
    let le = |bytes: &[u8]| {
        let mut word = [0u8; 8];
        word[..bytes.len()].copy_from_slice(bytes);
        u64::from_le_bytes(word)
    };
    for block in blocks {
        let k1 = le(&block[..8])
            .wrapping_mul(C1)
            .rotate_left(31)
            .wrapping_mul(C2);
        h1 ^= k1;
        h1 = h1
            .rotate_left(27)
            .wrapping_add(h2)
            .wrapping_mul(5)
            .wrapping_add(0x52dc_e729);
        let k2 = le(&block[8..])
            .wrapping_mul(C2)
            .rotate_left(33)
            .wrapping_mul(C1);
        h2 ^= k2;
        h2 = h2
            .rotate_left(31)
            .wrapping_add(h1)
            .wrapping_mul(5)
            .wrapping_add(0x3849_5ab5);
    }
    if tail.len() > 8 {
        let k2 = le(&tail[8..])
            .wrapping_mul(C2)
            .rotate_left(33)
            .wrapping_mul(C1);
        h2 ^= k2;
    }
    if !tail.is_empty() {
        let k1 = le(&tail[..tail.len().min(8)])
            .wrapping_mul(C1)
            .rotate_left(31)
            .wrapping_mul(C2);
        h1 ^= k1;
    }
    let len = data.len() as u64;
    h1 ^= len;
    h2 ^= len;
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    h1 = fmix64(h1);
    h2 = fmix64(h2);
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    (h1, h2)
}

/// The hash OpenSearch counts for a term or an address.
fn bytes_hash(bytes: &[u8]) -> u64 {
    murmur3_x64_128(bytes, 0).0
}

// ---- HyperLogLog++ ----

/// The 32-bit form of a hash kept by linear counting: the top 25 bits, plus the run length
/// when the bits below the register index are all zero (so registers can be rebuilt).
fn encode_hash(hash: u64, p: u8) -> u32 {
    let e = hash >> (64 - P2);
    let low_mask = (1u64 << (P2 - p as u32)) - 1;
    if e & low_mask == 0 {
        let run_len = 1 + (hash << P2).leading_zeros().min(64 - P2) as u64;
        ((e << 7) | (run_len << 1) | 1) as u32
    } else {
        (e << 1) as u32
    }
}

fn decode_run_len(encoded: u32, p: u8) -> u8 {
    if encoded & 1 == 1 {
        (((encoded >> 1) & 0x3F) + (P2 - p as u32)) as u8
    } else {
        let bits = encoded << (31 + p as u32 - P2);
        1 + bits.leading_zeros() as u8
    }
}

fn decode_index(encoded: u32, p: u8) -> usize {
    let index = if encoded & 1 == 1 {
        encoded >> 7
    } else {
        encoded >> 1
    };
    (index >> (P2 - p as u32)) as usize
}

fn linear_counting(m: f64, v: f64) -> u64 {
    (m * (m / v).ln()).round() as u64
}

type EncodedSet = HashSet<u32, BuildHasherDefault<IntHasher>>;

/// One bucket's counter.
#[derive(Clone, Debug)]
enum Counter {
    Linear(EncodedSet),
    Registers(Vec<u8>),
}

impl Default for Counter {
    fn default() -> Self {
        Counter::Linear(EncodedSet::default())
    }
}

/// How many encoded hashes linear counting holds at precision `p` before switching.
fn linear_threshold(p: u8) -> usize {
    let capacity = (1usize << p) / 4;
    (capacity as f32 * 0.75f32) as usize
}

impl Counter {
    #[inline]
    fn collect(&mut self, hash: u64, p: u8) {
        match self {
            Counter::Linear(set) => {
                if set.insert(encode_hash(hash, p)) && set.len() > linear_threshold(p) {
                    self.upgrade(p);
                }
            }
            Counter::Registers(registers) => {
                let index = (hash >> (64 - p as u32)) as usize;
                let run_len = 1 + (hash << p).leading_zeros().min(64 - p as u32) as u8;
                let register = &mut registers[index];
                *register = (*register).max(run_len);
            }
        }
    }

    fn add_encoded(&mut self, encoded: u32, p: u8) {
        match self {
            Counter::Linear(set) => {
                if set.insert(encoded) && set.len() > linear_threshold(p) {
                    self.upgrade(p);
                }
            }
            Counter::Registers(registers) => {
                // valid encodings always index a register; ignore anything else
                if let Some(register) = registers.get_mut(decode_index(encoded, p)) {
                    *register = (*register).max(decode_run_len(encoded, p));
                }
            }
        }
    }

    /// Replays the set into registers.
    fn upgrade(&mut self, p: u8) {
        if let Counter::Linear(set) = self {
            let mut registers = vec![0u8; 1 << p];
            for &encoded in set.iter() {
                if let Some(register) = registers.get_mut(decode_index(encoded, p)) {
                    *register = (*register).max(decode_run_len(encoded, p));
                }
            }
            *self = Counter::Registers(registers);
        }
    }

    fn merge(&mut self, other: &HllSketch, p: u8) {
        match other {
            HllSketch::Linear(encoded) => {
                for &e in encoded {
                    self.add_encoded(e, p);
                }
            }
            HllSketch::Registers(theirs) => {
                self.upgrade(p);
                if let Counter::Registers(mine) = self {
                    for (m, t) in mine.iter_mut().zip(theirs) {
                        *m = (*m).max(*t);
                    }
                }
            }
        }
    }

    fn sketch(&self) -> HllSketch {
        match self {
            Counter::Linear(set) => {
                let mut encoded: Vec<u32> = set.iter().copied().collect();
                encoded.sort_unstable();
                HllSketch::Linear(encoded)
            }
            Counter::Registers(registers) => HllSketch::Registers(registers.clone()),
        }
    }
}

/// The HLL++ bias of a raw estimate: OpenSearch's inverse-distance weighting over the window
/// of six raw estimates around `e`.
fn estimate_bias(e: f64, p: u8) -> f64 {
    const K: usize = 6;
    let raw = RAW_ESTIMATE_DATA[(p - MIN_PRECISION) as usize];
    let bias = BIAS_DATA[(p - MIN_PRECISION) as usize];
    let mut weights = [0.0f64; K];
    let mut index = bias.len() - K;
    for (i, r) in raw.iter().enumerate() {
        let w = 1.0 / (r - e).abs();
        let j = i % K;
        if w.is_infinite() {
            return bias[i];
        } else if weights[j] >= w {
            index = i - K;
            break;
        }
        weights[j] = w;
    }
    let mut weight_sum = 0.0;
    let mut bias_sum = 0.0;
    for (i, w) in weights.iter().enumerate() {
        bias_sum += w * bias[index + i];
        weight_sum += w;
    }
    bias_sum / weight_sum
}

fn registers_cardinality(registers: &[u8], p: u8) -> u64 {
    let m = (1u64 << p) as f64;
    let alpha = match p {
        4 => 0.673,
        5 => 0.697,
        _ => 0.7213 / (1.0 + 1.079 / m),
    };
    let alpha_mm = alpha * m * m;
    let mut inverse_sum = 0.0;
    let mut zeros = 0u64;
    for &run_len in registers {
        // 2^-run_len, exact (and safe for any byte a remote shard might send)
        inverse_sum += 2f64.powi(-(run_len as i32));
        if run_len == 0 {
            zeros += 1;
        }
    }
    let e1 = alpha_mm / inverse_sum;
    let e2 = if e1 <= 5.0 * m {
        e1 - estimate_bias(e1, p)
    } else {
        e1
    };
    let h = if zeros != 0 {
        linear_counting(m, zeros as f64)
    } else {
        e2.round() as u64
    };
    if h <= THRESHOLDS[(p - MIN_PRECISION) as usize] {
        h
    } else {
        e2.round() as u64
    }
}

/// The serialised counter: sorted encoded hashes, or the registers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum HllSketch {
    Linear(Vec<u32>),
    Registers(Vec<u8>),
}

impl HllSketch {
    fn cardinality(&self) -> u64 {
        match self {
            HllSketch::Linear(encoded) => {
                let m = (1u64 << P2) as f64;
                linear_counting(m, m - encoded.len() as f64)
            }
            HllSketch::Registers(registers) => match registers.len().trailing_zeros() {
                p @ 4..=18 => registers_cardinality(registers, p as u8),
                _ => 0,
            },
        }
    }
}

// ---- collection ----

/// A missing value, as the hash it stands for.
fn missing_hash(missing: Option<&Value>, source: &ValueSource) -> Result<Option<u64>> {
    let Some(value) = missing else {
        return Ok(None);
    };
    Ok(Some(match source {
        // a script's values are told apart by their text
        ValueSource::Script(_) => bytes_hash(value_text(value).as_bytes()),
        ValueSource::Numeric { kind, .. } => {
            let number = numeric_missing(AGG, Some(value), source)?.unwrap_or(0.0);
            match kind {
                NumericKind::Double | NumericKind::Scaled(_) => mix64(number.to_bits()),
                _ => mix64(number as i64 as u64),
            }
        }
        ValueSource::Ip { .. } => {
            let text = value_text(value);
            let ip: IpAddr = text.parse().map_err(|_| {
                Error::illegal_argument(format!("'{text}' is not an IP string literal."))
            })?;
            let v6 = match ip {
                IpAddr::V4(v4) => v4.to_ipv6_mapped(),
                IpAddr::V6(v6) => v6,
            };
            bytes_hash(&v6.octets())
        }
        // range fields are refused by the factory
        ValueSource::Keyword { .. } | ValueSource::Unmapped | ValueSource::Range(_) => {
            bytes_hash(value_text(value).as_bytes())
        }
    }))
}

struct CardinalityFactory {
    source: ValueSource,
    precision: u8,
    missing: Option<u64>,
}

pub fn factory(
    _request: &AggRequest,
    cardinality: &CardinalityRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    let field = cardinality.source.field.as_deref().unwrap_or_default();
    if ValueSource::field_type_of(ctx.table, field).is_some_and(|t| t.is_range()) {
        // OpenSearch counts distinct encodings of a document's set of ranges; Tessera does
        // not reproduce that encoding
        return Err(Error::illegal_argument(format!(
            "the [{AGG}] aggregation on the range field [{field}] is not supported by Tessera"
        )));
    }
    let source = ValueSource::resolve_params(ctx, &cardinality.source, AGG, Accepts::Any)?;
    if let Some(hint) = &cardinality.execution_hint {
        if !matches!(hint.as_str(), "direct" | "ordinals") {
            return Err(Error::illegal_argument(format!(
                "Unknown execution_hint: [{hint}], expected any of [direct, ordinals]"
            )));
        }
    }
    let missing = missing_hash(cardinality.source.missing.as_ref(), &source)?;
    Ok(Box::new(CardinalityFactory {
        source,
        precision: cardinality.precision(),
        missing,
    }))
}

impl Factory for CardinalityFactory {
    fn collector(&self, _subs: SubCollectors, _single_parent: bool) -> Result<Box<dyn Collector>> {
        Ok(Box::new(CardinalityCollector {
            source: self.source.clone(),
            precision: self.precision,
            missing: self.missing,
            values: SegmentValues::None,
            ord_hashes: Vec::new(),
            counters: Vec::new(),
            hashes: Vec::new(),
            seen: Vec::new(),
        }))
    }
}

enum SegmentValues {
    None,
    /// Long-like values (long, date, boolean) hashed as longs.
    Long(NumericValues),
    /// Doubles hashed by their bits.
    Double(NumericValues),
    Keyword(KeywordValues),
    Ip(IpValues),
    /// A script's values, hashed by their text.
    Script(Box<ScriptValues>),
}

struct CardinalityCollector {
    source: ValueSource,
    precision: u8,
    missing: Option<u64>,
    values: SegmentValues,
    /// The hash of each term ordinal of the current segment (0 = not computed yet; a real
    /// hash of 0 is only recomputed).
    ord_hashes: Vec<u64>,
    counters: Vec<Counter>,
    /// `(position, hash)` of the current block.
    hashes: Vec<(u32, u64)>,
    seen: Vec<bool>,
}

impl Collector for CardinalityCollector {
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        self.values = match &self.source {
            ValueSource::Numeric { kind, .. } => {
                let values = NumericValues::open(&self.source, segment.reader)?;
                match kind {
                    NumericKind::Double | NumericKind::Scaled(_) => SegmentValues::Double(values),
                    _ => SegmentValues::Long(values),
                }
            }
            ValueSource::Keyword { .. } => {
                let values = KeywordValues::open(&self.source, segment.reader)?;
                self.ord_hashes.clear();
                self.ord_hashes.resize(values.num_terms(), 0);
                // when the part may touch a good share of the terms, hash them all in one
                // sequential pass over the dictionary; else look terms up as they come
                let docs = segment.docs.len();
                if values.num_terms() <= docs.saturating_mul(4) {
                    let hashes = &mut self.ord_hashes;
                    values.for_each_term(|ord, bytes| {
                        if let Some(slot) = hashes.get_mut(ord as usize) {
                            *slot = bytes_hash(bytes);
                        }
                    })?;
                }
                SegmentValues::Keyword(values)
            }
            ValueSource::Ip { .. } => {
                SegmentValues::Ip(IpValues::open(&self.source, segment.reader)?)
            }
            ValueSource::Script(script) => {
                SegmentValues::Script(Box::new(script.open(segment.reader)?))
            }
            ValueSource::Unmapped | ValueSource::Range(_) => SegmentValues::None,
        };
        Ok(())
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        let hashes = &mut self.hashes;
        hashes.clear();
        match &mut self.values {
            SegmentValues::None => {}
            SegmentValues::Long(values) => {
                values.for_each_i64(docs, |p, v| hashes.push((p as u32, mix64(v as u64))))
            }
            SegmentValues::Double(values) => {
                values.for_each_f64(docs, |p, v| hashes.push((p as u32, mix64(v.to_bits()))))
            }
            SegmentValues::Keyword(values) => {
                let mut ords = Vec::new();
                values.for_each_ord(docs, |p, ord| ords.push((p as u32, ord)));
                let mut text = String::new();
                for (p, ord) in ords {
                    let Some(cached) = self.ord_hashes.get_mut(ord as usize) else {
                        continue;
                    };
                    if *cached == 0 {
                        if values.term(ord, &mut text).is_err() {
                            continue;
                        }
                        *cached = bytes_hash(text.as_bytes());
                    }
                    hashes.push((p, *cached));
                }
            }
            SegmentValues::Ip(values) => values.for_each(docs, |p, ip| {
                hashes.push((p as u32, bytes_hash(&ip.octets())))
            }),
            SegmentValues::Script(values) => {
                let mut text = String::new();
                values.for_each(docs, |p, value| {
                    text.clear();
                    value.write_java(&mut text);
                    hashes.push((p as u32, bytes_hash(text.as_bytes())))
                })
            }
        }
        let p = self.precision;
        for &(position, hash) in hashes.iter() {
            slot(&mut self.counters, parents[position as usize]).collect(hash, p);
        }
        if let Some(missing) = self.missing {
            self.seen.clear();
            self.seen.resize(docs.len(), false);
            for &(position, _) in hashes.iter() {
                self.seen[position as usize] = true;
            }
            for (position, seen) in self.seen.iter().enumerate() {
                if !seen {
                    slot(&mut self.counters, parents[position]).collect(missing, p);
                }
            }
        }
    }

    fn build(&mut self, parent: u32) -> Result<InternalAgg> {
        let sketch = match self.counters.get(parent as usize) {
            Some(counter) => counter.sketch(),
            None => HllSketch::Linear(Vec::new()),
        };
        Ok(InternalAgg::Cardinality(InternalCardinality {
            precision: self.precision,
            sketch,
        }))
    }
}

// ---- intermediate result ----

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InternalCardinality {
    pub precision: u8,
    pub sketch: HllSketch,
}

impl InternalCardinality {
    pub fn empty(request: &AggRequest) -> InternalCardinality {
        let precision = match &request.kind {
            AggKind::Cardinality(c) => c.precision(),
            _ => DEFAULT_PRECISION,
        };
        InternalCardinality {
            precision,
            sketch: HllSketch::Linear(Vec::new()),
        }
    }

    pub fn reduce(parts: Vec<InternalCardinality>) -> Result<InternalCardinality> {
        // an empty part carries no hashes: its precision does not matter
        let is_empty =
            |p: &InternalCardinality| matches!(&p.sketch, HllSketch::Linear(e) if e.is_empty());
        let Some(precision) = parts
            .iter()
            .find(|p| !is_empty(p))
            .or(parts.first())
            .map(|p| p.precision)
        else {
            return Ok(InternalCardinality {
                precision: DEFAULT_PRECISION,
                sketch: HllSketch::Linear(Vec::new()),
            });
        };
        if !(MIN_PRECISION..=MAX_PRECISION).contains(&precision)
            || parts
                .iter()
                .any(|p| p.precision != precision && !is_empty(p))
        {
            return Err(Error::illegal_state(
                "cardinality results with different precisions",
            ));
        }
        let mut counter = Counter::default();
        for part in &parts {
            if let HllSketch::Registers(r) = &part.sketch {
                if r.len() != 1 << precision {
                    return Err(Error::illegal_state("cardinality registers out of shape"));
                }
            }
            counter.merge(&part.sketch, precision);
        }
        Ok(InternalCardinality {
            precision,
            sketch: counter.sketch(),
        })
    }

    pub fn value(&self) -> u64 {
        self.sketch.cardinality()
    }

    pub fn render(self) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("value".into(), json!(self.value()));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::test_support::{mapping, random_docs, Rng, TestShard};
    use crate::request::parse_aggregations;

    fn parse_err(body: Value) -> Error {
        parse_aggregations(&json!({"c": {"cardinality": body}})).unwrap_err()
    }

    fn counter_of(hashes: impl Iterator<Item = u64>, p: u8) -> InternalCardinality {
        let mut counter = Counter::default();
        hashes.for_each(|h| counter.collect(h, p));
        InternalCardinality {
            precision: p,
            sketch: counter.sketch(),
        }
    }

    /// Reference values computed with OpenSearch 2.19.6's own classes (`BitMixer.mix64`,
    /// `MurmurHash3.hash128`).
    #[test]
    fn hashes_match_opensearch() {
        assert_eq!(mix64(0), 0);
        assert_eq!(mix64(1) as i64, -2508561340476696217);
        assert_eq!(mix64(-1i64 as u64) as i64, 8912229458432966433);
        assert_eq!(mix64(42) as i64, -335292003828100895);
        assert_eq!(mix64(1.5f64.to_bits()) as i64, 2074684470874416807);
        assert_eq!(bytes_hash(b"hello") as i64, -3758069500696749310);
        assert_eq!(murmur3_x64_128(b"hello", 0).1 as i64, 6565844092913065241);
        assert_eq!(bytes_hash(b"alpha") as i64, -7531858254489963);
        assert_eq!(bytes_hash(b""), 0);
    }

    /// `HyperLogLogPlusPlus` of OpenSearch 2.19.6 fed `mix64(seed × 1000003 + i)` for
    /// `i < n`: (precision, n, seed, cardinality).
    #[test]
    fn estimates_match_opensearch() {
        let cases: &[(u8, u64, u64, u64)] = &[
            (14, 100, 1, 100),
            (14, 5000, 1, 5042),
            (14, 3072, 2, 3072),
            (14, 3073, 2, 3090),
            (14, 20_000, 3, 19859),
            (14, 100_000, 4, 99171),
            (4, 10, 5, 9),
            (4, 1000, 5, 900),
            (10, 2000, 6, 1997),
            (18, 30_000, 7, 30001),
            (18, 60_000, 7, 60116),
            (16, 200_000, 8, 198704),
            (6, 400, 9, 302),
        ];
        for &(p, n, seed, expected) in cases {
            let got = counter_of((0..n).map(|i| mix64(seed * 1_000_003 + i)), p).value();
            assert_eq!(got, expected, "precision {p}, {n} values, seed {seed}");
        }
    }

    #[test]
    fn malformed_remote_sketches_do_not_panic() {
        let bad = InternalCardinality {
            precision: 4,
            sketch: HllSketch::Registers(vec![255; 16]),
        };
        let _ = bad.value();
        let odd = InternalCardinality {
            precision: 4,
            sketch: HllSketch::Linear(vec![u32::MAX, 2, 0, 1]),
        };
        let merged = InternalCardinality::reduce(vec![odd, bad.clone()]).unwrap();
        let _ = merged.value();
        assert!(InternalCardinality::reduce(vec![InternalCardinality {
            precision: 4,
            sketch: HllSketch::Registers(vec![1; 3]),
        }])
        .is_err());
        assert!(InternalCardinality::reduce(vec![InternalCardinality {
            precision: 99,
            sketch: HllSketch::Linear(vec![1]),
        }])
        .is_err());
    }

    #[test]
    fn precision_follows_the_threshold() {
        assert_eq!(precision_from_threshold(3000), 14);
        assert_eq!(precision_from_threshold(0), 4);
        assert_eq!(precision_from_threshold(1), 4);
        assert_eq!(precision_from_threshold(100), 10);
        assert_eq!(precision_from_threshold(10), 6);
        assert_eq!(precision_from_threshold(40_000), 18);
        assert_eq!(precision_from_threshold(1_000_000), 18);
        assert_eq!(linear_threshold(14), 3072);
    }

    #[test]
    fn parse_errors_match_opensearch() {
        let e = parse_err(json!({"field": "n", "precision_threshold": -5}));
        assert_eq!(
            e.reason(),
            "[cardinality] failed to parse field [precision_threshold]"
        );
        assert_eq!(
            e.cause().unwrap().reason(),
            "[precisionThreshold] must be greater than or equal to 0. Found [-5] in [c]"
        );
        let e = parse_err(json!({"field": "n", "precision_threshold": "abc"}));
        assert_eq!(e.cause().unwrap().kind(), "illegal_argument_exception");
        assert_eq!(e.cause().unwrap().reason(), "For input string: \"abc\"");
        assert_eq!(
            parse_err(json!({"field": "n", "format": "0.0"})).reason(),
            "[cardinality] unknown field [format]"
        );
        assert_eq!(
            parse_err(json!({"field": "n", "rehash": true})).reason(),
            "[cardinality] rehash doesn't support values of type: VALUE_BOOLEAN"
        );
        assert_eq!(
            parse_err(json!({"field": "n", "execution_hint": 5})).reason(),
            "[cardinality] execution_hint doesn't support values of type: VALUE_NUMBER"
        );
        let ok = parse_aggregations(&json!({"c": {"cardinality": {
            "field": "n", "precision_threshold": "10", "rehash": 1, "execution_hint": "direct"}}}))
        .unwrap();
        assert!(matches!(&ok[0].kind, AggKind::Cardinality(c) if c.precision() == 6));
    }

    #[test]
    fn any_grouping_gives_the_same_sketch() {
        let mut rng = Rng::new(99);
        for round in 0..40 {
            let p = [4u8, 10, 14, 16][rng.below(4) as usize];
            // around the linear-counting threshold and well above it
            let n = rng.below(3 * linear_threshold(p) as u64 + 50);
            let distinct = 1 + rng.below(n + 1);
            let hashes: Vec<u64> = (0..n)
                .map(|i| mix64(round * 7_777_777 + i % distinct))
                .collect();
            let whole = counter_of(hashes.iter().copied(), p);
            let groups = 1 + rng.below(8) as usize;
            let mut parts: Vec<Vec<u64>> = vec![Vec::new(); groups];
            for h in &hashes {
                parts[rng.below(groups as u64) as usize].push(*h);
            }
            let mut partials: Vec<InternalCardinality> = parts
                .into_iter()
                .map(|part| counter_of(part.into_iter(), p))
                .collect();
            rng.shuffle(&mut partials);
            let cut = rng.below(partials.len() as u64 + 1) as usize;
            let right = partials.split_off(cut);
            let reduced = InternalCardinality::reduce(vec![
                InternalCardinality::reduce(partials).unwrap(),
                InternalCardinality::reduce(right).unwrap(),
            ])
            .unwrap();
            assert_eq!(reduced.sketch, whole.sketch, "round {round}");
            assert_eq!(reduced.value(), whole.value());
        }
    }

    #[test]
    fn slices_and_missing_values_on_a_shard() {
        let shard = TestShard::build(&mapping(), &random_docs(21, 6, 80));
        let out = shard.check_slices(
            &json!({
                "n": {"cardinality": {"field": "n"}},
                "f": {"cardinality": {"field": "f", "precision_threshold": 5}},
                "k": {"cardinality": {"field": "k"}},
                "ip": {"cardinality": {"field": "ip"}},
                "d": {"cardinality": {"field": "d"}},
                "b": {"cardinality": {"field": "b"}},
                "s": {"cardinality": {"field": "s"}},
                "km": {"cardinality": {"field": "k", "missing": "zzz"}},
                "um": {"cardinality": {"field": "nope", "missing": 5}},
                "by": {"terms": {"field": "g", "order": {"c": "desc"}},
                    "aggs": {"c": {"cardinality": {"field": "k", "precision_threshold": 10}}}}
            }),
            25,
        );
        assert_eq!(out["b"]["value"], json!(2));
        assert_eq!(out["um"]["value"], json!(1));
        let k = out["k"]["value"].as_u64().unwrap();
        assert_eq!(out["km"]["value"].as_u64().unwrap(), k + 1);
    }

    #[test]
    fn counts_are_exact_below_the_threshold() {
        let shard = TestShard::build(
            &mapping(),
            &[
                vec![
                    json!({"k": ["a", "b"], "n": 1}),
                    json!({"k": "c", "n": [1, 2]}),
                ],
                vec![json!({"k": "a", "n": 3}), json!({"ip": "10.0.0.1"})],
            ],
        );
        let out = shard.render(&json!({
            "k": {"cardinality": {"field": "k"}},
            "n": {"cardinality": {"field": "n"}},
            "ip": {"cardinality": {"field": "ip", "missing": "10.0.0.1"}},
            "e": {"cardinality": {"field": "k", "execution_hint": "bogus"}}
        }));
        let e = out.unwrap_err();
        assert_eq!(
            e.reason(),
            "Unknown execution_hint: [bogus], expected any of [direct, ordinals]"
        );
        let out = shard
            .render(&json!({
                "k": {"cardinality": {"field": "k"}},
                "n": {"cardinality": {"field": "n"}},
                "ip": {"cardinality": {"field": "ip", "missing": "10.0.0.1"}}
            }))
            .unwrap();
        assert_eq!(out["k"]["value"], json!(3));
        assert_eq!(out["n"]["value"], json!(3));
        assert_eq!(out["ip"]["value"], json!(1));
    }
}
