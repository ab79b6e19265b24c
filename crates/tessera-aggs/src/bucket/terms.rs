//! `terms`: one bucket per distinct value, the most frequent first.
//!
//! Keyword fields are counted by segment ordinal: a segment's ordinals are mapped to slice-wide
//! term ids the first time each one is seen, so a segment with a million matching docs and ten
//! terms does ten dictionary lookups. Slices keep every bucket (no trimming, so any slice count
//! gives the same answer); the shard trims to `shard_size` and records OpenSearch's
//! `doc_count_error_upper_bound`; the coordinator trims to `size`.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tantivy::{DocId, SegmentReader};
use tessera_common::murmur3::murmur3_x86_32;
use tessera_common::{Error, Result};

use crate::bucket::order::BucketOrder;
use crate::collector::{Collector, SegmentContext, SubCollectors};
use crate::format::ValueFormat;
use crate::internal::{render_subs, InternalAgg, InternalAggregations, RenderContext, ShardFinish};
use crate::ords::{slot, BucketOrds};
use crate::prepare::{AggContext, Factory};
use crate::request::{
    bool_param, count_param, int_param, string_param, unknown_field, value_text, AggKind,
    AggRequest, ValuesSourceParams,
};
use crate::values::{
    ip_to_string, Accepts, IpValues, KeywordValues, NumericKind, NumericValues, ValueSource,
};

/// Which terms to keep (`include` / `exclude`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TermFilterSpec {
    pub include_regex: Option<String>,
    pub exclude_regex: Option<String>,
    pub include_values: Option<Vec<Value>>,
    pub exclude_values: Option<Vec<Value>>,
    /// `(partition, num_partitions)`.
    pub partition: Option<(u32, u32)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TermsRequest {
    pub source: ValuesSourceParams,
    pub size: usize,
    pub shard_size: Option<usize>,
    pub min_doc_count: u64,
    pub shard_min_doc_count: u64,
    pub order: BucketOrder,
    pub filter: TermFilterSpec,
    pub show_term_doc_count_error: bool,
}

impl TermsRequest {
    pub fn parse(name: &str, body: &Map<String, Value>) -> Result<TermsRequest> {
        const AGG: &str = "terms";
        let mut request = TermsRequest {
            source: ValuesSourceParams::default(),
            size: 10,
            shard_size: None,
            min_doc_count: 1,
            shard_min_doc_count: 0,
            order: BucketOrder::count_desc(),
            filter: TermFilterSpec::default(),
            show_term_doc_count_error: false,
        };
        let positive = |key: &str, value: &Value| -> Result<usize> {
            let n = int_param(AGG, key, value)?;
            if n <= 0 {
                return Err(Error::x_content_parse(format!(
                    "[{AGG}] failed to parse field [{key}]"
                ))
                .caused_by(Error::illegal_argument(format!(
                    "[{key}] must be greater than 0. Found [{n}] in [{name}]"
                ))));
            }
            Ok(n as usize)
        };
        for (key, value) in body {
            if request.source.accept(AGG, key, value)? {
                continue;
            }
            match key.as_str() {
                "size" => request.size = positive(key, value)?,
                "shard_size" => {
                    let n = int_param(AGG, key, value)?;
                    // -1 (or 0) means "computed from size", as in OpenSearch
                    request.shard_size = (n > 0).then_some(n as usize);
                }
                "min_doc_count" => request.min_doc_count = count_param(AGG, key, value)?,
                "shard_min_doc_count" => {
                    request.shard_min_doc_count = count_param(AGG, key, value)?
                }
                "order" => request.order = BucketOrder::parse(AGG, value)?,
                "include" => parse_include(AGG, &mut request.filter, value, true)?,
                "exclude" => parse_include(AGG, &mut request.filter, value, false)?,
                "show_term_doc_count_error" => {
                    request.show_term_doc_count_error = bool_param(AGG, key, value)?
                }
                "execution_hint" | "collect_mode" => {
                    string_param(AGG, key, value)?;
                }
                _ => return Err(unknown_field(AGG, key)),
            }
        }
        request.source.require_field_at_parse()?;
        Ok(request)
    }
}

/// Parses `include` (`include == true`) or `exclude` of aggregation `agg`.
pub(crate) fn parse_include(
    agg: &str,
    spec: &mut TermFilterSpec,
    value: &Value,
    include: bool,
) -> Result<()> {
    let field = if include { "include" } else { "exclude" };
    let failed = |reason: &str| {
        Error::x_content_parse(format!("[{agg}] failed to parse field [{field}]"))
            .caused_by(Error::illegal_argument(reason.to_string()))
    };
    let has_regex = spec.include_regex.is_some() || spec.exclude_regex.is_some();
    let has_set =
        spec.include_values.is_some() || spec.exclude_values.is_some() || spec.partition.is_some();
    match value {
        Value::String(pattern) => {
            if has_set {
                return Err(failed(
                    "Cannot mix a regex-based include with a set-based method",
                ));
            }
            Regex::new(&format!("^(?:{pattern})$"))
                .map_err(|e| failed(&format!("invalid regular expression [{pattern}]: {e}")))?;
            if include {
                spec.include_regex = Some(pattern.clone());
            } else {
                spec.exclude_regex = Some(pattern.clone());
            }
        }
        Value::Array(values) => {
            if has_regex {
                return Err(failed(
                    "Cannot mix a regex-based include with a set-based method",
                ));
            }
            if include {
                spec.include_values = Some(values.clone());
            } else {
                spec.exclude_values = Some(values.clone());
            }
        }
        Value::Object(object) if include => {
            let mut partition = None;
            let mut num_partitions = None;
            for (key, v) in object {
                match key.as_str() {
                    "partition" => partition = Some(int_param(agg, key, v)?),
                    "num_partitions" => num_partitions = Some(int_param(agg, key, v)?),
                    _ => {
                        return Err(failed(&format!(
                            "Unknown parameter in Include/Exclude clause: {key}"
                        )))
                    }
                }
            }
            match (partition, num_partitions) {
                (Some(p), Some(n)) if n > 0 && (0..n).contains(&p) => {
                    spec.partition = Some((p as u32, n as u32))
                }
                (Some(_), Some(_)) => return Err(failed("Invalid partition")),
                _ => return Err(failed(
                    "Missing [partition] or [num_partitions] parameter for partition-based include",
                )),
            }
        }
        _ => {
            return Err(failed(&format!(
                "Unrecognized token for an {field} [{value}]"
            )))
        }
    }
    Ok(())
}

/// The compiled include/exclude rules.
#[derive(Clone)]
pub(crate) struct TermFilter {
    include_regex: Option<Regex>,
    exclude_regex: Option<Regex>,
    include_set: Option<Vec<String>>,
    exclude_set: Option<Vec<String>>,
    partition: Option<(u32, u32)>,
}

/// OpenSearch's seed for partitioned terms.
const PARTITION_SEED: u32 = 31;

impl TermFilter {
    pub(crate) fn compile(spec: &TermFilterSpec) -> Result<Option<TermFilter>> {
        if *spec == TermFilterSpec::default() {
            return Ok(None);
        }
        let regex = |p: &Option<String>| -> Result<Option<Regex>> {
            p.as_ref()
                .map(|p| {
                    Regex::new(&format!("^(?:{p})$")).map_err(|e| {
                        Error::illegal_argument(format!("invalid regular expression [{p}]: {e}"))
                    })
                })
                .transpose()
        };
        let set = |v: &Option<Vec<Value>>| {
            v.as_ref()
                .map(|values| values.iter().map(value_text).collect::<Vec<_>>())
        };
        Ok(Some(TermFilter {
            include_regex: regex(&spec.include_regex)?,
            exclude_regex: regex(&spec.exclude_regex)?,
            include_set: set(&spec.include_values),
            exclude_set: set(&spec.exclude_values),
            partition: spec.partition,
        }))
    }

    /// Whether a term (in its string form) is kept.
    pub(crate) fn accepts(&self, term: &str) -> bool {
        if let Some(r) = &self.include_regex {
            if !r.is_match(term) {
                return false;
            }
        }
        if let Some(r) = &self.exclude_regex {
            if r.is_match(term) {
                return false;
            }
        }
        if let Some(set) = &self.include_set {
            if !set.iter().any(|s| s == term) {
                return false;
            }
        }
        if let Some(set) = &self.exclude_set {
            if set.iter().any(|s| s == term) {
                return false;
            }
        }
        if let Some((partition, count)) = self.partition {
            let hash = murmur3_x86_32(term.as_bytes(), PARTITION_SEED) as i32;
            if hash.rem_euclid(count as i32) as u32 != partition {
                return false;
            }
        }
        true
    }

    /// Numeric sets compare numerically (`include: [1, 2]` on a long field).
    pub(crate) fn accepts_number(&self, value: f64, as_text: &str) -> bool {
        let in_set = |set: &Vec<String>| {
            set.iter()
                .any(|s| s.parse::<f64>().is_ok_and(|n| n == value) || s == as_text)
        };
        if let Some(set) = &self.include_set {
            if !in_set(set) {
                return false;
            }
        }
        if let Some(set) = &self.exclude_set {
            if in_set(set) {
                return false;
            }
        }
        let regex_or_partition = TermFilter {
            include_regex: self.include_regex.clone(),
            exclude_regex: self.exclude_regex.clone(),
            include_set: None,
            exclude_set: None,
            partition: self.partition,
        };
        regex_or_partition.accepts(as_text)
    }
}

// ---- intermediate result ----

/// A bucket key: numbers for numeric fields (dates are epoch millis), text otherwise; a
/// `multi_terms` key is the list of its fields' values.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum TermKey {
    Long(i64),
    Double(f64),
    Str(String),
    /// An ip (IPv6 bits; IPv4 mapped), ordered by address as OpenSearch orders ip terms.
    Ip(u128),
    Multi(Vec<TermKey>),
}

impl TermKey {
    pub(crate) fn as_f64(&self) -> Option<f64> {
        match self {
            TermKey::Long(n) => Some(*n as f64),
            TermKey::Double(f) => Some(*f),
            TermKey::Str(_) | TermKey::Ip(_) | TermKey::Multi(_) => None,
        }
    }

    pub(crate) fn to_json(&self) -> Value {
        match self {
            TermKey::Long(n) => json!(n),
            TermKey::Double(f) => json!(f),
            TermKey::Str(s) => json!(s),
            TermKey::Ip(bits) => json!(ip_to_string(std::net::Ipv6Addr::from(*bits))),
            TermKey::Multi(values) => Value::Array(values.iter().map(TermKey::to_json).collect()),
        }
    }
}

impl Ord for TermKey {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (TermKey::Long(a), TermKey::Long(b)) => a.cmp(b),
            (TermKey::Multi(a), TermKey::Multi(b)) => a.cmp(b),
            (TermKey::Multi(_), _) => Ordering::Greater,
            (_, TermKey::Multi(_)) => Ordering::Less,
            (TermKey::Ip(a), TermKey::Ip(b)) => a.cmp(b),
            (TermKey::Ip(_), TermKey::Str(_)) => Ordering::Less,
            (TermKey::Str(_), TermKey::Ip(_)) => Ordering::Greater,
            (TermKey::Ip(_), _) => Ordering::Greater,
            (_, TermKey::Ip(_)) => Ordering::Less,
            (TermKey::Str(a), TermKey::Str(b)) => a.cmp(b),
            (TermKey::Str(_), _) => Ordering::Greater,
            (_, TermKey::Str(_)) => Ordering::Less,
            (a, b) => a
                .as_f64()
                .unwrap_or_default()
                .total_cmp(&b.as_f64().unwrap_or_default()),
        }
    }
}

impl PartialOrd for TermKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for TermKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for TermKey {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TermsBucket {
    pub key: TermKey,
    pub doc_count: u64,
    /// Upper bound of this term's count missing from partial results that did not return it
    /// (-1 when unknown).
    pub doc_count_error: i64,
    pub subs: InternalAggregations,
    /// The smallest `_seq_no` of the slice's documents in this bucket (`u64::MAX` when not
    /// tracked): the order OpenSearch first meets terms in. Only read on the slice.
    #[serde(skip)]
    pub first_seen: u64,
}

/// What a `terms` aggregation's keys are, as OpenSearch names its result types (`typed_keys`:
/// `sterms`, `lterms`, `dterms`): known even when there are no buckets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum TermsValueType {
    /// Keywords, ips, and a field unmapped on the shard.
    #[default]
    String,
    /// Longs, dates and booleans.
    Long,
    Double,
}

impl TermsValueType {
    /// The `typed_keys` prefix.
    pub fn typed_name(self) -> &'static str {
        match self {
            TermsValueType::String => "sterms",
            TermsValueType::Long => "lterms",
            TermsValueType::Double => "dterms",
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InternalTerms {
    pub buckets: Vec<TermsBucket>,
    /// The keys' type; a reduce keeps the widest (an unmapped shard's string terms give way
    /// to numbers, longs to doubles), as OpenSearch's reduce does.
    pub value_type: TermsValueType,
    pub format: ValueFormat,
    /// The format of each value of a `multi_terms` key (empty for `terms`).
    pub formats: Vec<ValueFormat>,
    /// Upper bound of the count of a term missing from `buckets` (-1 when unknown).
    pub doc_count_error_upper_bound: i64,
    pub sum_other_doc_count: u64,
}

fn terms_request(request: &AggRequest) -> Result<&TermsRequest> {
    match &request.kind {
        AggKind::Terms(t) => Ok(t),
        AggKind::MultiTerms(m) => Ok(&m.terms),
        AggKind::RareTerms(r) => Ok(&r.terms),
        _ => Err(Error::illegal_state("terms result for a non-terms request")),
    }
}

impl InternalTerms {
    pub fn reduce(parts: Vec<InternalTerms>, request: &AggRequest) -> Result<InternalTerms> {
        let format = ValueFormat::merge(parts.iter().map(|p| &p.format));
        let value_type = parts.iter().map(|p| p.value_type).max().unwrap_or_default();
        let width = parts.iter().map(|p| p.formats.len()).max().unwrap_or(0);
        let formats = (0..width)
            .map(|i| ValueFormat::merge(parts.iter().filter_map(|p| p.formats.get(i))))
            .collect();
        let mixed_types = {
            let mut has_str = false;
            let mut has_num = false;
            for b in parts.iter().flat_map(|p| &p.buckets) {
                match b.key {
                    TermKey::Str(_) => has_str = true,
                    _ => has_num = true,
                }
            }
            has_str && has_num
        };
        if mixed_types {
            return Err(Error::illegal_argument(format!(
                "Merging/Reducing the aggregations failed when computing the aggregation [{}] because the field you gave in the aggregation query existed as two different types in two different indices",
                request.name
            )));
        }
        let unknown_error = parts.iter().any(|p| p.doc_count_error_upper_bound < 0);
        let total_error: i64 = parts
            .iter()
            .map(|p| p.doc_count_error_upper_bound.max(0))
            .sum();
        let sum_other_doc_count = parts.iter().map(|p| p.sum_other_doc_count).sum();
        struct Merged {
            doc_count: u64,
            own_error: i64,
            errors_of_parts_having: i64,
            unknown: bool,
            subs: Vec<InternalAggregations>,
        }
        let mut merged: BTreeMap<TermKey, Merged> = BTreeMap::new();
        let mixed_numbers = parts
            .iter()
            .flat_map(|p| &p.buckets)
            .any(|b| matches!(b.key, TermKey::Double(_)));
        for part in parts {
            for bucket in part.buckets {
                let key = match bucket.key {
                    TermKey::Long(n) if mixed_numbers => TermKey::Double(n as f64),
                    key => key,
                };
                let entry = merged.entry(key).or_insert_with(|| Merged {
                    doc_count: 0,
                    own_error: 0,
                    errors_of_parts_having: 0,
                    unknown: false,
                    subs: Vec::new(),
                });
                entry.doc_count += bucket.doc_count;
                entry.unknown |= bucket.doc_count_error < 0;
                entry.own_error += bucket.doc_count_error.max(0);
                entry.errors_of_parts_having += part.doc_count_error_upper_bound.max(0);
                entry.subs.push(bucket.subs);
            }
        }
        let mut buckets = Vec::with_capacity(merged.len());
        for (key, m) in merged {
            let doc_count_error = if unknown_error || m.unknown {
                -1
            } else {
                total_error - m.errors_of_parts_having + m.own_error
            };
            buckets.push(TermsBucket {
                key,
                doc_count: m.doc_count,
                doc_count_error,
                subs: InternalAggregations::reduce(m.subs, &request.subs)?,
                first_seen: u64::MAX,
            });
        }
        Ok(InternalTerms {
            buckets,
            value_type,
            format,
            formats,
            doc_count_error_upper_bound: if unknown_error { -1 } else { total_error },
            sum_other_doc_count,
        })
    }

    fn sort(&mut self, terms: &TermsRequest, subs: &[AggRequest]) {
        terms.order.sort(
            &mut self.buckets,
            subs,
            |b| &b.key,
            |b| b.doc_count,
            |b| &b.subs,
        );
    }

    /// Cuts the shard's buckets to `shard_size` and sets the shard's doc count error the way
    /// OpenSearch reports it.
    pub fn finish_shard(&mut self, request: &AggRequest, ctx: &ShardFinish) -> Result<()> {
        let terms = terms_request(request)?;
        let shard_size = shard_size(terms);
        let min = terms.shard_min_doc_count;
        // like OpenSearch's shard, terms under shard_min_doc_count still count as "other"
        let below: u64 = self
            .buckets
            .iter()
            .filter(|b| b.doc_count < min)
            .map(|b| b.doc_count)
            .sum();
        self.sum_other_doc_count += below;
        self.buckets.retain(|b| b.doc_count >= min);
        self.sort(terms, &request.subs);
        if self.buckets.len() > shard_size {
            let removed: u64 = self.buckets[shard_size..].iter().map(|b| b.doc_count).sum();
            self.sum_other_doc_count += removed;
            self.buckets.truncate(shard_size);
        }
        let len = self.buckets.len();
        self.doc_count_error_upper_bound =
            if len == 0 || len < shard_size || terms.order.is_key_order() {
                0
            } else if terms.order.is_count_desc() {
                if ctx.shards_in_request == 1 {
                    0
                } else {
                    self.buckets.iter().map(|b| b.doc_count).min().unwrap_or(0) as i64
                }
            } else {
                -1
            };
        for bucket in &mut self.buckets {
            bucket.doc_count_error = 0;
            bucket.subs.finish_shard(&request.subs, ctx)?;
        }
        Ok(())
    }

    pub fn render(
        mut self,
        request: &AggRequest,
        ctx: &mut RenderContext,
    ) -> Result<Map<String, Value>> {
        let terms = terms_request(request)?;
        self.sort(terms, &request.subs);
        let min = terms.min_doc_count;
        self.buckets.retain(|b| b.doc_count >= min);
        if self.buckets.len() > terms.size {
            let removed: u64 = self.buckets[terms.size..].iter().map(|b| b.doc_count).sum();
            self.sum_other_doc_count += removed;
            self.buckets.truncate(terms.size);
        }
        ctx.add_buckets(self.buckets.len())?;
        let formatter = self.format.formatter();
        let formatters: Vec<_> = self.formats.iter().map(ValueFormat::formatter).collect();
        let mut buckets = Vec::with_capacity(self.buckets.len());
        for bucket in self.buckets {
            let mut out = Map::new();
            if let TermKey::Multi(values) = &bucket.key {
                let (key, text) = crate::bucket::multi_terms::render_key(values, &formatters);
                out.insert("key".into(), key);
                out.insert("key_as_string".into(), json!(text));
            } else {
                out.insert("key".into(), bucket.key.to_json());
            }
            if let Some(number) = bucket.key.as_f64() {
                if let Some(text) = formatter.as_string(number) {
                    out.insert("key_as_string".into(), json!(text));
                }
            }
            out.insert("doc_count".into(), json!(bucket.doc_count));
            if terms.show_term_doc_count_error {
                out.insert(
                    "doc_count_error_upper_bound".into(),
                    json!(bucket.doc_count_error),
                );
            }
            render_subs(&mut out, bucket.subs, &request.subs, ctx)?;
            buckets.push(Value::Object(out));
        }
        let mut out = Map::new();
        out.insert(
            "doc_count_error_upper_bound".into(),
            json!(self.doc_count_error_upper_bound),
        );
        out.insert(
            "sum_other_doc_count".into(),
            json!(self.sum_other_doc_count),
        );
        out.insert("buckets".into(), Value::Array(buckets));
        Ok(out)
    }
}

/// OpenSearch's shard size: the request's, or `size × 1.5 + 10` — however many shards the
/// request has — unless buckets are ordered by key, where each shard's first `size` keys are
/// exact. It shows with one shard too: buckets the shard keeps but the final reduce drops under
/// `min_doc_count` are not counted in `sum_other_doc_count`, those the shard cut off are.
pub fn shard_size(terms: &TermsRequest) -> usize {
    let computed = if terms.order.is_key_order() {
        terms.size
    } else {
        terms.size.saturating_mul(3) / 2 + 10
    };
    terms.shard_size.unwrap_or(computed).max(terms.size)
}

// ---- collection ----

struct TermsFactory {
    /// The shard's searcher, when zero-count buckets need every term of the shard.
    shard: Option<tantivy::Searcher>,
    source: ValueSource,
    format: ValueFormat,
    filter: Option<Arc<TermFilter>>,
    missing: Option<Value>,
    min_doc_count_zero: bool,
    track_first_seen: bool,
}

pub fn factory(
    request: &AggRequest,
    terms: &TermsRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    make_factory(request, terms, ctx, false)
}

/// A terms collector factory whose buckets also record where each term was first met
/// ([`TermsBucket::first_seen`]), for aggregations that order terms like OpenSearch's
/// first-seen bucket ordinals.
pub(crate) fn factory_tracking_first_seen(
    request: &AggRequest,
    terms: &TermsRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    make_factory(request, terms, ctx, true)
}

fn make_factory(
    request: &AggRequest,
    terms: &TermsRequest,
    ctx: &AggContext,
    track_first_seen: bool,
) -> Result<Box<dyn Factory>> {
    if terms.size == 0 {
        return Err(Error::illegal_argument(format!(
            "[size] must be greater than 0. Found [0] in [{}]",
            request.name
        )));
    }
    terms.order.validate(&request.subs)?;
    let source = ValueSource::resolve_params(ctx, &terms.source, "terms", Accepts::Any)?;
    if let ValueSource::Script(_) = source {
        keyed_by_text(ctx, &terms.source)?;
    }
    let format = ValueFormat::for_source(&source, terms.source.format.as_deref(), None)?;
    Ok(Box::new(TermsFactory {
        shard: (terms.min_doc_count == 0 && !matches!(source, ValueSource::Script(_)))
            .then(|| ctx.searcher.clone()),
        source,
        format,
        filter: TermFilter::compile(&terms.filter)?.map(Arc::new),
        missing: terms.source.missing.clone(),
        min_doc_count_zero: terms.min_doc_count == 0,
        track_first_seen,
    }))
}

impl Factory for TermsFactory {
    fn collector(&self, subs: SubCollectors, single_parent: bool) -> Result<Box<dyn Collector>> {
        let subs_empty = subs.is_empty();
        let common = Common {
            ords: BucketOrds::new(single_parent),
            counts: Vec::new(),
            subs,
            filter: self.filter.clone(),
            format: self.format.clone(),
            min_doc_count_zero: self.min_doc_count_zero,
            first_seen: self.track_first_seen.then(FirstSeen::default),
        };
        Ok(match &self.source {
            ValueSource::Script(script) => Box::new(super::script_terms::ScriptTerms::new(
                common,
                script.clone(),
                self.missing.as_ref().map(value_text),
            )),
            ValueSource::Numeric { kind, .. } => {
                let missing = match &self.missing {
                    None => None,
                    Some(v) => Some(numeric_missing(kind, v)?),
                };
                Box::new(NumericTerms {
                    common,
                    source: self.source.clone(),
                    exact: matches!(
                        kind,
                        NumericKind::Long | NumericKind::Date(_) | NumericKind::Boolean
                    ),
                    values: None,
                    missing,
                    pairs: Vec::new(),
                    seen_keys: Vec::new(),
                    all_keys: Vec::new(),
                    shard: self.shard.clone(),
                })
            }
            // range fields are refused by `ValueSource::resolve` for terms
            ValueSource::Keyword { .. }
            | ValueSource::Ip { .. }
            | ValueSource::Unmapped
            | ValueSource::Range(_) => Box::new(DictionaryTerms {
                common,
                source: self.source.clone(),
                keyword: None,
                ip: None,
                missing: self.missing.as_ref().map(value_text),
                terms: SliceTerms::default(),
                segment_map: Vec::new(),
                pairs: Vec::new(),
                fresh_ords: Vec::new(),
                doc_terms: Vec::new(),
                text: String::new(),
                shard: self.shard.clone(),
                dense: (single_parent
                    && subs_empty
                    && self.missing.is_none()
                    && !self.track_first_seen)
                    .then(Vec::new),
                dense_segment: false,
            }),
        })
    }
}

/// Script values are keyed by their text, as OpenSearch keys them without a `value_type`; a
/// script OpenSearch would key by number (a numeric `value_type`, or a value script on a
/// numeric field) is refused rather than answered with other keys.
fn keyed_by_text(ctx: &AggContext, params: &crate::request::ValuesSourceParams) -> Result<()> {
    let numeric_field = params
        .field
        .as_deref()
        .and_then(|field| ValueSource::field_type_of(ctx.table, field))
        .is_some_and(|t| !matches!(t.name(), "keyword" | "ip" | "constant_keyword" | "wildcard"));
    let numeric_type = params
        .value_type
        .as_deref()
        .is_some_and(|t| !matches!(t, "string" | "keyword" | "text" | "bytes"));
    if numeric_field || numeric_type {
        return Err(Error::not_supported(
            "numeric keys for the values of a script in the [terms] aggregation",
        ));
    }
    Ok(())
}

/// The `missing` value of a numeric terms aggregation, as a bucket key.
fn numeric_missing(kind: &NumericKind, value: &Value) -> Result<f64> {
    let bad = || Error::illegal_argument(format!("failed to parse [missing] value [{value}]"));
    match (kind, value) {
        (_, Value::Number(n)) => n.as_f64().ok_or_else(bad),
        (NumericKind::Boolean, Value::Bool(b)) => Ok(*b as i64 as f64),
        (NumericKind::Date(format), Value::String(s)) => format
            .parse_millis(s, None, false)
            .map(|m| m as f64)
            .or_else(|_| s.parse::<f64>())
            .map_err(|_| bad()),
        (_, Value::String(s)) => s.parse::<f64>().map_err(|_| bad()),
        _ => Err(bad()),
    }
}

/// Where each bucket's term was first met: the smallest `_seq_no` of its documents.
#[derive(Default)]
struct FirstSeen {
    /// The segment's `_seq_no` column.
    column: Option<tantivy::columnar::Column<u64>>,
    /// Per ordinal, `u64::MAX - smallest _seq_no` (0 = not met).
    earliest: Vec<u64>,
}

/// State shared by the keyword, numeric and script collectors.
pub(crate) struct Common {
    ords: BucketOrds,
    counts: Vec<u64>,
    pub(crate) subs: SubCollectors,
    pub(crate) filter: Option<Arc<TermFilter>>,
    format: ValueFormat,
    pub(crate) min_doc_count_zero: bool,
    first_seen: Option<FirstSeen>,
}

impl Common {
    #[inline]
    pub(crate) fn add(&mut self, doc: DocId, parent: u32, key: u64) {
        let ord = self.ords.ord(parent, key);
        *slot(&mut self.counts, ord) += 1;
        if !self.subs.is_empty() {
            self.subs.push(doc, ord);
        }
        if let Some(first) = &mut self.first_seen {
            let seq = first
                .column
                .as_ref()
                .and_then(|c| c.first(doc))
                .unwrap_or(u64::MAX);
            let earliest = slot(&mut first.earliest, ord);
            *earliest = (*earliest).max(u64::MAX - seq);
        }
    }

    /// Adds `count` documents to the bucket of `key` at once (documents no sub-aggregation and
    /// no first-seen order needs to see).
    fn add_count(&mut self, parent: u32, key: u64, count: u64) {
        let ord = self.ords.ord(parent, key);
        *slot(&mut self.counts, ord) += count;
    }

    pub(crate) fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        if let Some(first) = &mut self.first_seen {
            first.column = segment
                .reader
                .fast_fields()
                .column_opt::<u64>(tessera_mapping::field_table::SEQ_NO_FIELD)
                .map_err(|e| Error::internal("open the _seq_no column", e))?;
        }
        self.subs.set_segment(segment)
    }

    fn first_seen(&self, ord: u32) -> u64 {
        self.first_seen
            .as_ref()
            .and_then(|f| f.earliest.get(ord as usize))
            .map_or(u64::MAX, |e| u64::MAX - e)
    }

    /// Builds `parent`'s buckets; `all_keys` adds zero-count buckets (`min_doc_count: 0`).
    pub(crate) fn build(
        &mut self,
        parent: u32,
        key_of: impl Fn(u64) -> TermKey,
        all_keys: &[u64],
    ) -> Result<InternalAgg> {
        let pairs: Vec<(u64, u32)> = self.ords.buckets_of(parent).to_vec();
        let mut buckets = Vec::with_capacity(pairs.len());
        for (key, ord) in &pairs {
            buckets.push(TermsBucket {
                key: key_of(*key),
                doc_count: self.counts.get(*ord as usize).copied().unwrap_or(0),
                doc_count_error: 0,
                subs: self.subs.build(*ord)?,
                first_seen: self.first_seen(*ord),
            });
        }
        if self.min_doc_count_zero {
            let present: std::collections::HashSet<u64> = pairs.iter().map(|(k, _)| *k).collect();
            for key in all_keys.iter().filter(|k| !present.contains(k)) {
                buckets.push(TermsBucket {
                    key: key_of(*key),
                    doc_count: 0,
                    doc_count_error: 0,
                    subs: self.subs.build(u32::MAX)?,
                    first_seen: u64::MAX,
                });
            }
        }
        Ok(InternalAgg::Terms(InternalTerms {
            buckets,
            value_type: TermsValueType::String,
            format: self.format.clone(),
            formats: Vec::new(),
            doc_count_error_upper_bound: 0,
            sum_other_doc_count: 0,
        }))
    }
}

const UNRESOLVED: u32 = u32::MAX;
pub(crate) const EXCLUDED: u32 = u32::MAX - 1;

/// A slice's terms by id (keyword and ip fields, a script's values): each id's text, and the id
/// of each text seen so far.
#[derive(Default)]
pub(crate) struct SliceTerms {
    texts: Vec<String>,
    ids: HashMap<String, u32>,
}

impl SliceTerms {
    /// The id of `term`, a new one on first sight, or [`EXCLUDED`] when the aggregation's
    /// include/exclude refuses it.
    pub(crate) fn id(&mut self, term: &str, common: &Common) -> u32 {
        if let Some(id) = self.ids.get(term) {
            return *id;
        }
        if common.filter.as_ref().is_some_and(|f| !f.accepts(term)) {
            return EXCLUDED;
        }
        let id = self.texts.len() as u32;
        self.texts.push(term.to_string());
        self.ids.insert(term.to_string(), id);
        id
    }

    /// `parent`'s buckets, each keyed by `key` of its term's text (with `min_doc_count: 0`,
    /// every term seen gets one).
    pub(crate) fn build(
        &self,
        common: &mut Common,
        parent: u32,
        key: impl Fn(&str) -> TermKey,
    ) -> Result<InternalAgg> {
        let all: Vec<u64> = if common.min_doc_count_zero {
            (0..self.texts.len() as u64).collect()
        } else {
            Vec::new()
        };
        common.build(parent, |id| key(&self.texts[id as usize]), &all)
    }
}

/// Terms of keyword and ip fields, counted by slice-wide term id.
struct DictionaryTerms {
    common: Common,
    source: ValueSource,
    keyword: Option<KeywordValues>,
    ip: Option<IpValues>,
    missing: Option<String>,
    /// Slice-wide terms by id.
    terms: SliceTerms,
    /// Segment ordinal → term id (keyword fields).
    segment_map: Vec<u32>,
    pairs: Vec<(u32, u32)>,
    /// A block's ordinals not resolved yet (reused between blocks).
    fresh_ords: Vec<u64>,
    doc_terms: Vec<u32>,
    text: String,
    /// The shard, whose every term gets a zero-count bucket (`min_doc_count: 0`); taken
    /// once registered.
    shard: Option<tantivy::Searcher>,
    /// Counts by segment ordinal, when documents only need counting (one parent, no
    /// sub-aggregations, no `missing`, no first-seen order): a single-valued segment's
    /// documents then cost one ordinal read each, and terms are resolved once per segment.
    dense: Option<Vec<u64>>,
    /// Whether `dense` counts the current segment (its documents have one term at most).
    dense_segment: bool,
}

impl DictionaryTerms {
    /// Moves the current segment's dense counts into the buckets.
    fn flush_dense(&mut self) -> Result<()> {
        let Some(mut counts) = self.dense.take() else {
            return Ok(());
        };
        let counted: Vec<u64> = (0..counts.len() as u64)
            .filter(|&ord| counts[ord as usize] > 0)
            .collect();
        self.resolve_segment_terms(&counted)?;
        for (ord, count) in counts.iter_mut().enumerate() {
            if *count > 0 {
                let id = self.segment_term_id(ord as u64);
                if id != EXCLUDED {
                    self.common.add_count(0, id as u64, *count);
                }
                *count = 0;
            }
        }
        self.dense = Some(counts);
        Ok(())
    }

    /// Resolves the term ids of the current segment's ordinals `ords` (ascending) in one pass
    /// over the dictionary.
    fn resolve_segment_terms(&mut self, ords: &[u64]) -> Result<()> {
        let Some(keyword) = self.keyword.take() else {
            return Ok(());
        };
        let (terms, common, map) = (&mut self.terms, &self.common, &mut self.segment_map);
        let mut bad_term = false;
        let resolved = keyword.for_each_term_of(ords, |ord, term| {
            match (std::str::from_utf8(term), map.get_mut(ord as usize)) {
                (Ok(text), Some(slot)) if *slot == UNRESOLVED => *slot = terms.id(text, common),
                (Ok(_), _) => {}
                (Err(_), _) => bad_term = true,
            }
        });
        self.keyword = Some(keyword);
        resolved?;
        if bad_term {
            return Err(Error::internal(
                "read the terms of an aggregation column",
                "a term that is not UTF-8",
            ));
        }
        Ok(())
    }

    /// Resolves the ordinals of `pairs` not seen before in this segment, together: one pass
    /// over the dictionary blocks they fall in, where resolving each on its own would rescan
    /// its block from the start (the block's terms are delta-encoded). A lookup that fails
    /// leaves its ordinals to [`Self::segment_term_id`].
    fn resolve_new_ords(&mut self, pairs: &[(u32, u32)]) {
        let mut fresh = std::mem::take(&mut self.fresh_ords);
        fresh.clear();
        fresh.extend(
            pairs
                .iter()
                .map(|&(_, ord)| u64::from(ord))
                .filter(|&ord| self.segment_map.get(ord as usize) == Some(&UNRESOLVED)),
        );
        if fresh.len() > 1 {
            fresh.sort_unstable();
            fresh.dedup();
            let _ = self.resolve_segment_terms(&fresh);
        }
        self.fresh_ords = fresh;
    }

    /// Registers every term of every segment of the shard (not only the slice's), so that
    /// each parent bucket a slice builds gets the shard's full set of zero-count buckets, as
    /// OpenSearch's does, whatever the slicing.
    fn register_shard_terms(&mut self) -> Result<()> {
        let Some(shard) = self.shard.take() else {
            return Ok(());
        };
        if let ValueSource::Keyword { .. } = &self.source {
            for reader in shard.segment_readers() {
                let values = KeywordValues::open(&self.source, reader)?;
                // one pass over the dictionary: a lookup per ordinal rescans its block
                values.for_each_term(|_, term| {
                    self.terms.id(&String::from_utf8_lossy(term), &self.common);
                })?;
            }
        }
        if let Some(missing) = self.missing.clone() {
            self.term_id(&missing);
        }
        Ok(())
    }

    fn term_id(&mut self, term: &str) -> u32 {
        self.terms.id(term, &self.common)
    }

    fn segment_term_id(&mut self, ord: u64) -> u32 {
        let mapped = self.segment_map[ord as usize];
        if mapped != UNRESOLVED {
            return mapped;
        }
        let mut text = std::mem::take(&mut self.text);
        if let Some(k) = &self.keyword {
            let _ = k.term(ord, &mut text);
        }
        let id = self.term_id(&text);
        self.text = text;
        self.segment_map[ord as usize] = id;
        id
    }
}

impl Collector for DictionaryTerms {
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        match &self.source {
            ValueSource::Keyword { .. } => {
                let values = KeywordValues::open(&self.source, segment.reader)?;
                self.segment_map.clear();
                self.segment_map.resize(values.num_terms(), UNRESOLVED);
                self.dense_segment = self.dense.is_some() && !values.is_multivalued();
                if let (true, Some(counts)) = (self.dense_segment, self.dense.as_mut()) {
                    counts.clear();
                    counts.resize(values.num_terms(), 0);
                }
                self.keyword = Some(values);
            }
            ValueSource::Ip { .. } => self.ip = Some(IpValues::open(&self.source, segment.reader)?),
            _ => {}
        }
        self.register_shard_terms()?;
        self.common.set_segment(segment)
    }

    fn dictionary_field(&self) -> Option<&str> {
        match (&self.source, &self.dense) {
            (ValueSource::Keyword { path }, Some(_)) => Some(path),
            _ => None,
        }
    }

    fn collect_from_dictionary(&mut self, segment: &SegmentReader) -> Result<bool> {
        let (true, Some(values), Some(counts), ValueSource::Keyword { path }) = (
            self.dense_segment,
            &self.keyword,
            self.dense.as_mut(),
            &self.source,
        ) else {
            return Ok(false);
        };
        let schema = segment.schema();
        let Ok(field) = schema.get_field(path) else {
            return Ok(false);
        };
        if !schema.get_field_entry(field).is_indexed() {
            return Ok(false);
        }
        let what = "read the terms of an aggregation field";
        let postings = segment
            .inverted_index(field)
            .map_err(|e| Error::internal(what, e))?;
        let mut terms = postings
            .terms()
            .stream()
            .map_err(|e| Error::internal(what, e))?;
        // both dictionaries are sorted: walk them together, each column term's count being
        // its document frequency; a column term without postings leaves the documents to count
        let mut found = vec![0u64; counts.len()];
        let mut complete = true;
        let mut more = terms.advance();
        values.for_each_term(|ord, term| {
            while more && terms.key() < term {
                more = terms.advance();
            }
            match (more && terms.key() == term, found.get_mut(ord as usize)) {
                (true, Some(count)) => *count = terms.value().doc_freq as u64,
                _ => complete = false,
            }
        })?;
        if !complete {
            return Ok(false);
        }
        counts
            .iter_mut()
            .zip(found)
            .for_each(|(count, n)| *count += n);
        Ok(true)
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        if self.dense_segment {
            if let (Some(values), Some(counts)) = (&mut self.keyword, &mut self.dense) {
                values.for_each_ord(docs, |_, ord| counts[ord as usize] += 1);
                return;
            }
        }
        let mut pairs = std::mem::take(&mut self.pairs);
        pairs.clear();
        if let Some(values) = &mut self.keyword {
            values.for_each_ord(docs, |p, ord| pairs.push((p as u32, ord as u32)));
            self.resolve_new_ords(&pairs);
            for pair in pairs.iter_mut() {
                pair.1 = self.segment_term_id(pair.1 as u64);
            }
        } else if let Some(values) = &mut self.ip {
            let mut ips = Vec::new();
            values.for_each(docs, |p, ip| ips.push((p as u32, ip)));
            for (p, ip) in ips {
                let id = self.term_id(&ip_to_string(ip));
                pairs.push((p, id));
            }
        }
        let missing_id = self.missing.clone().map(|m| self.term_id(&m));
        let mut j = 0;
        for (position, &doc) in docs.iter().enumerate() {
            let parent = parents[position];
            self.doc_terms.clear();
            while j < pairs.len() && pairs[j].0 as usize == position {
                let id = pairs[j].1;
                j += 1;
                if id == EXCLUDED || self.doc_terms.contains(&id) {
                    continue;
                }
                self.doc_terms.push(id);
                self.common.add(doc, parent, id as u64);
            }
            if self.doc_terms.is_empty() && (j == 0 || pairs[j - 1].0 as usize != position) {
                if let Some(id) = missing_id.filter(|id| *id != EXCLUDED) {
                    self.common.add(doc, parent, id as u64);
                }
            }
        }
        self.pairs = pairs;
        self.common.subs.flush();
    }

    fn finish_segment(&mut self) -> Result<()> {
        if self.dense_segment {
            self.flush_dense()?;
        }
        self.common.subs.finish_segment()
    }

    fn build(&mut self, parent: u32) -> Result<InternalAgg> {
        if matches!(self.source, ValueSource::Ip { .. }) {
            // ip keys order by address, as OpenSearch orders them, not by their text
            return self.terms.build(&mut self.common, parent, ip_key);
        }
        self.terms.build(&mut self.common, parent, |text| {
            TermKey::Str(text.to_string())
        })
    }
}

/// The key of an ip term from its text (IPv4 mapped into IPv6); text that is no address (a
/// `missing` value) stays text.
fn ip_key(text: &str) -> TermKey {
    match text.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(v4)) => TermKey::Ip(u128::from(v4.to_ipv6_mapped())),
        Ok(std::net::IpAddr::V6(v6)) => TermKey::Ip(u128::from(v6)),
        Err(_) => TermKey::Str(text.to_string()),
    }
}

/// Terms of numeric, date and boolean fields, keyed by the value itself.
struct NumericTerms {
    common: Common,
    source: ValueSource,
    /// Long, date and boolean values are kept as exact `i64`s; others as `f64` bits.
    exact: bool,
    values: Option<NumericValues>,
    missing: Option<f64>,
    pairs: Vec<(u32, u64)>,
    seen_keys: Vec<u64>,
    /// Every key of the field in the shard (only for `min_doc_count: 0`).
    all_keys: Vec<u64>,
    /// The shard whose keys `all_keys` gathers (taken once gathered).
    shard: Option<tantivy::Searcher>,
}

impl NumericTerms {
    fn encode(&self, value: f64) -> u64 {
        if self.exact {
            value as i64 as u64
        } else {
            value.to_bits()
        }
    }

    fn key(&self, bits: u64) -> TermKey {
        if self.exact {
            TermKey::Long(bits as i64)
        } else {
            TermKey::Double(f64::from_bits(bits))
        }
    }

    fn accepted(&self, bits: u64) -> bool {
        match &self.common.filter {
            None => true,
            Some(filter) => {
                let value = if self.exact {
                    bits as i64 as f64
                } else {
                    f64::from_bits(bits)
                };
                let text = match self.key(bits) {
                    TermKey::Long(n) => n.to_string(),
                    TermKey::Double(f) => f.to_string(),
                    TermKey::Str(s) => s,
                    TermKey::Ip(_) | TermKey::Multi(_) => String::new(),
                };
                let text = self.common.format.as_string(value).unwrap_or(text);
                filter.accepts_number(value, &text)
            }
        }
    }
}

impl Collector for NumericTerms {
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        // every key of every segment of the shard, once: each parent bucket a slice builds
        // gets the shard's full set of zero-count buckets, whatever the slicing
        if let Some(shard) = self.shard.take() {
            let mut keys = Vec::new();
            let exact = self.exact;
            for reader in shard.segment_readers() {
                let mut values = NumericValues::open(&self.source, reader)?;
                let docs: Vec<DocId> = (0..reader.max_doc()).collect();
                for chunk in docs.chunks(1024) {
                    if exact {
                        values.for_each_i64(chunk, |_, v| keys.push(v as u64));
                    } else {
                        values.for_each_f64(chunk, |_, v| keys.push(v.to_bits()));
                    }
                }
            }
            keys.retain(|k| self.accepted(*k));
            self.all_keys = keys;
            self.all_keys.sort_unstable();
            self.all_keys.dedup();
        }
        let values = NumericValues::open(&self.source, segment.reader)?;
        self.values = Some(values);
        self.common.set_segment(segment)
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        let Some(values) = &mut self.values else {
            return;
        };
        let mut pairs = std::mem::take(&mut self.pairs);
        pairs.clear();
        if self.exact {
            values.for_each_i64(docs, |p, v| pairs.push((p as u32, v as u64)));
        } else {
            values.for_each_f64(docs, |p, v| pairs.push((p as u32, v.to_bits())));
        }
        let missing = self.missing.map(|m| self.encode(m));
        let mut j = 0;
        for (position, &doc) in docs.iter().enumerate() {
            let parent = parents[position];
            self.seen_keys.clear();
            let mut had_value = false;
            while j < pairs.len() && pairs[j].0 as usize == position {
                let key = pairs[j].1;
                j += 1;
                had_value = true;
                if self.seen_keys.contains(&key) || !self.accepted(key) {
                    continue;
                }
                self.seen_keys.push(key);
                self.common.add(doc, parent, key);
            }
            if !had_value {
                if let Some(key) = missing.filter(|k| self.accepted(*k)) {
                    self.common.add(doc, parent, key);
                }
            }
        }
        self.pairs = pairs;
        self.common.subs.flush();
    }

    fn finish_segment(&mut self) -> Result<()> {
        self.common.subs.finish_segment()
    }

    fn build(&mut self, parent: u32) -> Result<InternalAgg> {
        let exact = self.exact;
        let all = std::mem::take(&mut self.all_keys);
        let result = self.common.build(
            parent,
            |bits| {
                if exact {
                    TermKey::Long(bits as i64)
                } else {
                    TermKey::Double(f64::from_bits(bits))
                }
            },
            &all,
        );
        self.all_keys = all;
        let mut result = result?;
        if let InternalAgg::Terms(terms) = &mut result {
            terms.value_type = if exact {
                TermsValueType::Long
            } else {
                TermsValueType::Double
            };
        }
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::parse_aggregations;
    use serde_json::json;

    fn request(body: Value) -> AggRequest {
        parse_aggregations(&json!({"t": body})).unwrap().remove(0)
    }

    fn bucket(key: &str, doc_count: u64) -> TermsBucket {
        TermsBucket {
            key: TermKey::Str(key.into()),
            doc_count,
            doc_count_error: 0,
            subs: InternalAggregations::default(),
            first_seen: u64::MAX,
        }
    }

    fn part(buckets: Vec<TermsBucket>) -> InternalTerms {
        InternalTerms {
            buckets,
            ..Default::default()
        }
    }

    #[test]
    fn many_terms_resolve_across_dictionary_blocks() {
        use crate::test_util::TestShard;
        // 3,000 distinct terms span several dictionary blocks; every third also comes twice more
        let mut docs = Vec::new();
        for i in 0..3000u32 {
            let times = if i.is_multiple_of(3) { 3 } else { 1 };
            for _ in 0..times {
                docs.push(json!({"k": format!("term-{i:05}")}));
            }
        }
        let shard = TestShard::new(json!({"properties": {"k": {"type": "keyword"}}}), &docs, 2);
        for (aggs, expected_first) in [
            (json!({"size": 3, "order": {"_key": "desc"}}), "term-02999"),
            (json!({"size": 3}), "term-00000"),
            (
                json!({"size": 3, "order": {"_key": "asc"}, "min_doc_count": 0}),
                "term-00000",
            ),
        ] {
            let mut terms = aggs.clone();
            terms["field"] = json!("k");
            let out = shard.render(&json!({"t": {"terms": terms}}), 2, 7);
            let buckets = out["t"]["buckets"].as_array().unwrap();
            assert_eq!(buckets.len(), 3, "{aggs}");
            assert_eq!(buckets[0]["key"], expected_first, "{aggs}");
            for bucket in buckets {
                let i: usize = bucket["key"].as_str().unwrap()[5..].parse().unwrap();
                let count = if i.is_multiple_of(3) { 3 } else { 1 };
                assert_eq!(bucket["doc_count"], count, "{bucket}");
            }
        }
    }

    #[test]
    fn parse_errors() {
        let e = TermsRequest::parse("t", json!({"field": "k", "bogus": 1}).as_object().unwrap())
            .unwrap_err();
        assert_eq!(e.reason(), "[terms] unknown field [bogus]");
        let e = TermsRequest::parse(
            "t",
            json!({"field": "k", "include": "t.*", "exclude": ["t1"]})
                .as_object()
                .unwrap(),
        )
        .unwrap_err();
        assert_eq!(
            e.cause().unwrap().reason(),
            "Cannot mix a regex-based include with a set-based method"
        );
        let e = TermsRequest::parse("t", json!({"field": "k", "size": 0}).as_object().unwrap())
            .unwrap_err();
        assert_eq!(e.reason(), "[terms] failed to parse field [size]");
    }

    #[test]
    fn shard_sizes_follow_opensearch() {
        let TermsRequest { .. } = terms_request(&request(json!({"terms": {"field": "k"}})))
            .unwrap()
            .clone();
        let r = request(json!({"terms": {"field": "k", "size": 10}}));
        let t = terms_request(&r).unwrap();
        assert_eq!(shard_size(t), 25);
        let r = request(json!({"terms": {"field": "k", "size": 10, "order": {"_key": "asc"}}}));
        assert_eq!(shard_size(terms_request(&r).unwrap()), 10);
        let r = request(json!({"terms": {"field": "k", "size": 10, "shard_size": 3}}));
        assert_eq!(shard_size(terms_request(&r).unwrap()), 10);
    }

    #[test]
    fn reduce_sums_counts_and_tracks_errors() {
        let r = request(json!({"terms": {"field": "k", "size": 1}}));
        let mut a = part(vec![bucket("x", 5), bucket("y", 3)]);
        a.doc_count_error_upper_bound = 3;
        let mut b = part(vec![bucket("x", 2), bucket("z", 4)]);
        b.doc_count_error_upper_bound = 2;
        let merged = InternalTerms::reduce(vec![a, b], &r).unwrap();
        assert_eq!(merged.doc_count_error_upper_bound, 5);
        let counts: Vec<(String, u64, i64)> = merged
            .buckets
            .iter()
            .map(|b| match &b.key {
                TermKey::Str(s) => (s.clone(), b.doc_count, b.doc_count_error),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(
            counts,
            vec![("x".into(), 7, 0), ("y".into(), 3, 2), ("z".into(), 4, 3)]
        );
        let mut ctx = RenderContext::new(100);
        let json = merged.render(&r, &mut ctx).unwrap();
        assert_eq!(json["sum_other_doc_count"], 7);
        assert_eq!(json["buckets"][0]["key"], "x");
    }

    #[test]
    fn any_grouping_reduces_the_same() {
        let r = request(json!({"terms": {"field": "k"}}));
        let parts = || {
            vec![
                part(vec![bucket("a", 1), bucket("b", 2)]),
                part(vec![bucket("b", 5)]),
                part(vec![bucket("c", 1), bucket("a", 4)]),
            ]
        };
        let all = InternalTerms::reduce(parts(), &r).unwrap();
        let mut p = parts();
        let last = p.pop().unwrap();
        let first_two = InternalTerms::reduce(p, &r).unwrap();
        let grouped = InternalTerms::reduce(vec![first_two, last], &r).unwrap();
        assert_eq!(all, grouped);
    }

    #[test]
    fn shard_trimming_sets_the_error() {
        let r = request(json!({"terms": {"field": "k", "size": 1, "shard_size": 2}}));
        let mut t = part(vec![bucket("a", 1), bucket("b", 5), bucket("c", 3)]);
        t.finish_shard(
            &r,
            &ShardFinish {
                shards_in_request: 2,
                searcher: None,
            },
        )
        .unwrap();
        assert_eq!(t.buckets.len(), 2);
        assert_eq!(t.sum_other_doc_count, 1);
        assert_eq!(t.doc_count_error_upper_bound, 3);
        let mut t = part(vec![bucket("a", 1), bucket("b", 5), bucket("c", 3)]);
        t.finish_shard(
            &r,
            &ShardFinish {
                shards_in_request: 1,
                searcher: None,
            },
        )
        .unwrap();
        assert_eq!(t.doc_count_error_upper_bound, 0);
    }

    #[test]
    fn buckets_under_min_doc_count_are_not_other_even_on_one_shard() {
        // OpenSearch 2.19 on one shard: {"size": 2, "min_doc_count": 2} over a:5 b:4 c:3
        // d:2 and four singletons gives a and b with sum_other_doc_count 5 (c and d): the
        // shard keeps 13 buckets, the final reduce drops the singletons without counting them
        let counts = [
            ("a", 5),
            ("b", 4),
            ("c", 3),
            ("d", 2),
            ("e", 1),
            ("f", 1),
            ("g", 1),
        ];
        let shard = || part(counts.iter().map(|(k, n)| bucket(k, *n)).collect());
        let render = |body: Value| {
            let r = request(body);
            let mut t = shard();
            let finish = ShardFinish {
                shards_in_request: 1,
                searcher: None,
            };
            t.finish_shard(&r, &finish).unwrap();
            let merged = InternalTerms::reduce(vec![t], &r).unwrap();
            merged.render(&r, &mut RenderContext::new(100)).unwrap()
        };
        let out = render(json!({"terms": {"field": "k", "size": 2, "min_doc_count": 2}}));
        assert_eq!(out["sum_other_doc_count"], 5);
        assert_eq!(out["buckets"].as_array().unwrap().len(), 2);
        // a shard_size the request sets cuts first: what it cuts is "other"
        let out = render(
            json!({"terms": {"field": "k", "size": 2, "min_doc_count": 2,
            "shard_size": 4}}),
        );
        assert_eq!(out["sum_other_doc_count"], 8);
        // by key, each shard sends its first `size` keys
        let out = render(
            json!({"terms": {"field": "k", "size": 2, "min_doc_count": 2,
            "order": {"_key": "asc"}}}),
        );
        assert_eq!(out["sum_other_doc_count"], 8);
    }

    #[test]
    fn terms_under_shard_min_doc_count_count_as_other() {
        let r = request(json!({"terms": {"field": "k", "size": 5, "shard_min_doc_count": 2}}));
        let mut t = part(vec![bucket("a", 1), bucket("b", 5), bucket("c", 3)]);
        t.finish_shard(
            &r,
            &ShardFinish {
                shards_in_request: 1,
                searcher: None,
            },
        )
        .unwrap();
        assert_eq!(t.buckets.len(), 2);
        assert_eq!(t.sum_other_doc_count, 1);
    }

    #[test]
    fn filters_match_whole_terms_and_partitions() {
        let spec = TermFilterSpec {
            include_regex: Some("t1.*".into()),
            exclude_values: None,
            ..Default::default()
        };
        let f = TermFilter::compile(&spec).unwrap().unwrap();
        assert!(f.accepts("t12"));
        assert!(!f.accepts("xt1"));
        let spec = TermFilterSpec {
            partition: Some((0, 2)),
            ..Default::default()
        };
        let f = TermFilter::compile(&spec).unwrap().unwrap();
        let kept = (0..100).filter(|i| f.accepts(&format!("t{i}"))).count();
        assert!(kept > 20 && kept < 80, "{kept}");
    }
}
