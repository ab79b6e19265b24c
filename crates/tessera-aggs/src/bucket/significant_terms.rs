//! `significant_terms`: the terms that are unusually frequent in the matching documents (the
//! subset, or one parent bucket's documents) compared with the whole shard (the superset).
//!
//! Collection is the `terms` collector (segment ordinals mapped to slice-wide term ids,
//! multi-valued documents counted once per term) plus a count of the documents each parent
//! bucket received: that count is the subset size. Slices keep every term. Background
//! statistics need the whole shard, so they are looked up once per shard in `finish_shard`
//! from the shard's searcher, as OpenSearch does: the superset size is the shard's `maxDoc`
//! (deleted documents included), a keyword term's superset frequency is its document
//! frequency in the inverted index (deleted documents included, like Lucene's `docFreq`),
//! and a number's, date's or ip's is the count of live documents holding that value (a point
//! query; these fields have no postings, so all the shard's lookups are answered together in
//! one pass over each segment's column). The shard scores its terms with the heuristic on its own statistics and keeps the
//! best `shard_size`; the coordinator sums subset and superset counts, rescores with the
//! global sizes, drops terms with a score ≤ 0 or fewer than `min_doc_count` documents and
//! keeps the best `size`.
//!
//! Ties in score are broken the way OpenSearch breaks them: the shard offers its terms to a
//! Lucene-style priority queue (an equal score does not displace) in OpenSearch's bucket
//! ordinal order, and the coordinator offers the merged terms to the same queue in the
//! iteration order of a Java `HashMap` keyed by the terms' string form (terms sharing a bin
//! in the order the shards listed them). Ordinal order is term order when OpenSearch uses
//! global ordinals directly (a keyword or ip at the top level, without sub-aggregations or
//! include/exclude), else the order documents first brought each term in, which Tessera
//! takes from the smallest `_seq_no` of the term's documents: exact when the shard's
//! segments are in indexing order, close otherwise.
//!
//! Heuristics: `jlh` (default), `mutual_information`, `chi_square`, `gnd`, `percentage`.
//! `script_heuristic` and `background_filter` are not supported (a 400 error).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv6Addr};
use std::ops::Bound;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tantivy::collector::Count;
use tantivy::query::RangeQuery;
use tantivy::schema::{FieldType as TantivyType, IndexRecordOption};
use tantivy::{DocId, DocSet, Searcher, Term, TERMINATED};
use tessera_common::lucene_queue::LuceneQueue;
use tessera_common::{Error, Result};
use tessera_date::{parse_date_math, DateFormat, TimeZone};

use crate::bucket::order::BucketOrder;
use crate::bucket::terms::{self, parse_include, TermFilterSpec, TermKey, TermsRequest};
use crate::collector::{Collector, SegmentContext, SubCollectors};
use crate::format::ValueFormat;
use crate::internal::{render_subs, InternalAgg, InternalAggregations, RenderContext, ShardFinish};
use crate::ords::slot;
use crate::prepare::{AggContext, Factory};
use crate::request::{
    int_param, string_param, unknown_field, AggKind, AggRequest, ValuesSourceParams,
};
use crate::values::{Accepts, NumericKind, ValueSource};

const AGG: &str = "significant_terms";

/// How a term's significance is scored.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Heuristic {
    Jlh,
    MutualInformation {
        include_negatives: bool,
        background_is_superset: bool,
    },
    ChiSquare {
        include_negatives: bool,
        background_is_superset: bool,
    },
    Gnd {
        background_is_superset: bool,
    },
    Percentage,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SignificantTermsRequest {
    pub source: ValuesSourceParams,
    pub size: usize,
    pub shard_size: Option<usize>,
    pub min_doc_count: u64,
    pub shard_min_doc_count: u64,
    pub filter: TermFilterSpec,
    pub execution_hint: Option<String>,
    pub heuristic: Heuristic,
    /// `significant_text`: its `source_fields` (empty: the field itself); `None` for
    /// `significant_terms`.
    pub text: Option<Vec<String>>,
}

fn failed(key: &str, cause: Error) -> Error {
    Error::x_content_parse(format!("[{AGG}] failed to parse field [{key}]")).caused_by(cause)
}

/// A heuristic's boolean parameter (`true`/`false`, or those strings).
fn heuristic_bool(heuristic: &str, key: &str, value: &Value) -> Result<bool> {
    match value {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s == "true" => Ok(true),
        Value::String(s) if s == "false" => Ok(false),
        other => {
            let text = match other {
                Value::String(s) => s.clone(),
                v => v.to_string(),
            };
            Err(
                Error::x_content_parse(format!("[{heuristic}] failed to parse field [{key}]"))
                    .caused_by(Error::illegal_argument(format!(
                        "Failed to parse value [{text}] as only [true] or [false] are allowed."
                    ))),
            )
        }
    }
}

impl Heuristic {
    /// Parses a heuristic object; `None` when `name` is not a heuristic.
    fn parse(name: &str, value: &Value) -> Option<Result<Heuristic>> {
        let known = matches!(
            name,
            "jlh" | "mutual_information" | "chi_square" | "gnd" | "percentage"
        );
        if name == "script_heuristic" {
            return Some(Err(Error::not_supported(
                "[script_heuristic] in the [significant_terms] aggregation",
            )));
        }
        if !known {
            return None;
        }
        Some((|| {
            let Value::Object(params) = value else {
                return Err(Error::x_content_parse(format!(
                    "[{name}] Expected START_OBJECT but was: END_OBJECT"
                )));
            };
            let mut include_negatives = false;
            let mut background_is_superset = true;
            for (key, v) in params {
                match (name, key.as_str()) {
                    ("mutual_information" | "chi_square", "include_negatives") => {
                        include_negatives = heuristic_bool(name, key, v)?
                    }
                    ("mutual_information" | "chi_square" | "gnd", "background_is_superset") => {
                        background_is_superset = heuristic_bool(name, key, v)?
                    }
                    _ => return Err(unknown_field(name, key)),
                }
            }
            Ok(match name {
                "jlh" => Heuristic::Jlh,
                "mutual_information" => Heuristic::MutualInformation {
                    include_negatives,
                    background_is_superset,
                },
                "chi_square" => Heuristic::ChiSquare {
                    include_negatives,
                    background_is_superset,
                },
                "gnd" => Heuristic::Gnd {
                    background_is_superset,
                },
                _ => Heuristic::Percentage,
            })
        })())
    }

    fn name(&self) -> &'static str {
        match self {
            Heuristic::Jlh => "JLHScore",
            Heuristic::MutualInformation { .. } => "MutualInformation",
            Heuristic::ChiSquare { .. } => "ChiSquare",
            Heuristic::Gnd { .. } => "GND",
            Heuristic::Percentage => "PercentageScore",
        }
    }

    /// The score of a term seen in `subset_freq` of `subset_size` subset documents and in
    /// `superset_freq` of `superset_size` background documents (OpenSearch's formulas and
    /// argument checks).
    pub fn score(
        &self,
        subset_freq: u64,
        subset_size: u64,
        superset_freq: u64,
        superset_size: u64,
    ) -> Result<f64> {
        let name = self.name();
        if subset_freq > subset_size {
            return Err(Error::illegal_argument(format!(
                "subsetFreq > subsetSize, in {name}"
            )));
        }
        if superset_freq > superset_size {
            return Err(Error::illegal_argument(format!(
                "supersetFreq > supersetSize, in {name}"
            )));
        }
        match *self {
            Heuristic::Jlh => {
                if subset_size == 0 || superset_size == 0 {
                    return Ok(0.0);
                }
                let superset_freq = superset_freq.max(1);
                let subset_probability = subset_freq as f64 / subset_size as f64;
                let superset_probability = superset_freq as f64 / superset_size as f64;
                let absolute_change = subset_probability - superset_probability;
                if absolute_change <= 0.0 {
                    return Ok(0.0);
                }
                Ok(absolute_change * (subset_probability / superset_probability))
            }
            Heuristic::Percentage => {
                if superset_freq == 0 {
                    return Ok(0.0);
                }
                Ok(subset_freq as f64 / superset_freq as f64)
            }
            Heuristic::MutualInformation {
                include_negatives,
                background_is_superset,
            } => {
                let f = Frequencies::new(
                    subset_freq,
                    subset_size,
                    superset_freq,
                    superset_size,
                    background_is_superset,
                )?;
                let term = |nxy: f64, nx_: f64, n_y: f64, n: f64| -> f64 {
                    let numerator = (n * nxy).abs();
                    let denominator = (nx_ * n_y).abs();
                    let factor = (nxy / n).abs();
                    if numerator < 1e-7 && factor < 1e-7 {
                        0.0
                    } else {
                        factor * (numerator / denominator).ln()
                    }
                };
                let mut score = (term(f.n00, f.n0_, f.n_0, f.n)
                    + term(f.n01, f.n0_, f.n_1, f.n)
                    + term(f.n10, f.n1_, f.n_0, f.n)
                    + term(f.n11, f.n1_, f.n_1, f.n))
                    / std::f64::consts::LN_2;
                if score.is_nan() {
                    score = f64::NEG_INFINITY;
                }
                if !include_negatives && f.n11 / f.n_1 < f.n10 / f.n_0 {
                    score = f64::NEG_INFINITY;
                }
                Ok(score)
            }
            Heuristic::ChiSquare {
                include_negatives,
                background_is_superset,
            } => {
                let f = Frequencies::new(
                    subset_freq,
                    subset_size,
                    superset_freq,
                    superset_size,
                    background_is_superset,
                )?;
                if !include_negatives && f.n11 / f.n_1 < f.n10 / f.n_0 {
                    return Ok(f64::NEG_INFINITY);
                }
                Ok(f.n * (f.n11 * f.n00 - f.n01 * f.n10).powi(2) / (f.n_1 * f.n1_ * f.n0_ * f.n_0))
            }
            Heuristic::Gnd {
                background_is_superset,
            } => {
                let f = Frequencies::new(
                    subset_freq,
                    subset_size,
                    superset_freq,
                    superset_size,
                    background_is_superset,
                )?;
                let (fx, fy, fxy, n) = (f.n1_, f.n_1, f.n11, f.n);
                if fxy == 0.0 {
                    return Ok(0.0);
                }
                if fx == fy && fx == fxy {
                    return Ok(1.0);
                }
                let score = (fx.ln().max(fy.ln()) - fxy.ln()) / (n.ln() - fx.ln().min(fy.ln()));
                Ok((-score).exp())
            }
        }
    }
}

/// The 2×2 contingency table of the NXY heuristics.
struct Frequencies {
    n00: f64,
    n01: f64,
    n10: f64,
    n11: f64,
    n0_: f64,
    n1_: f64,
    n_0: f64,
    n_1: f64,
    n: f64,
}

const SUPERSET_HINT: &str = ", does your background filter not include all documents in the bucket? If so and it is intentional, set \"background_is_superset\": false";

impl Frequencies {
    fn new(
        subset_freq: u64,
        subset_size: u64,
        superset_freq: u64,
        superset_size: u64,
        background_is_superset: bool,
    ) -> Result<Frequencies> {
        let (sf, ss, bf, bs) = (
            subset_freq as f64,
            subset_size as f64,
            superset_freq as f64,
            superset_size as f64,
        );
        if background_is_superset {
            if subset_freq > superset_freq {
                return Err(Error::illegal_argument(format!(
                    "subsetFreq > supersetFreq{SUPERSET_HINT}"
                )));
            }
            if subset_size > superset_size {
                return Err(Error::illegal_argument(format!(
                    "subsetSize > supersetSize{SUPERSET_HINT}"
                )));
            }
            if superset_freq - subset_freq > superset_size - subset_size {
                return Err(Error::illegal_argument(format!(
                    "supersetFreq - subsetFreq > supersetSize - subsetSize{SUPERSET_HINT}"
                )));
            }
            Ok(Frequencies {
                n00: bs - bf - (ss - sf),
                n01: ss - sf,
                n10: bf - sf,
                n11: sf,
                n0_: bs - bf,
                n1_: bf,
                n_0: bs - ss,
                n_1: ss,
                n: bs,
            })
        } else {
            Ok(Frequencies {
                n00: bs - bf,
                n01: ss - sf,
                n10: bf,
                n11: sf,
                n0_: bs - bf + ss - sf,
                n1_: bf + sf,
                n_0: bs,
                n_1: ss,
                n: bs + ss,
            })
        }
    }
}

impl SignificantTermsRequest {
    pub fn parse(name: &str, body: &Map<String, Value>) -> Result<SignificantTermsRequest> {
        let mut request = SignificantTermsRequest {
            source: ValuesSourceParams::default(),
            size: 10,
            shard_size: None,
            min_doc_count: 3,
            shard_min_doc_count: 0,
            filter: TermFilterSpec::default(),
            execution_hint: None,
            heuristic: Heuristic::Jlh,
            text: None,
        };
        for (key, value) in body {
            if request.source.accept(AGG, key, value)? {
                continue;
            }
            match key.as_str() {
                "size" => {
                    let n = int_param(AGG, key, value)?;
                    if n <= 0 {
                        return Err(failed(
                            key,
                            Error::illegal_argument(format!(
                                "[size] must be greater than 0. Found [{n}] in [{name}]"
                            )),
                        ));
                    }
                    request.size = n.min(i32::MAX as i64) as usize;
                }
                "shard_size" => {
                    let n = int_param(AGG, key, value)?;
                    if n <= 0 {
                        return Err(failed(
                            key,
                            Error::illegal_argument(format!(
                                "[shardSize] must be greater than  0. Found [{n}] in [{name}]"
                            )),
                        ));
                    }
                    request.shard_size = Some(n.min(i32::MAX as i64) as usize);
                }
                "min_doc_count" => {
                    let n = int_param(AGG, key, value)?;
                    if n < 0 {
                        return Err(failed(
                            key,
                            Error::illegal_argument(format!(
                                "[minDocCount] must be greater than or equal to 0. Found [{n}] in [{name}]"
                            )),
                        ));
                    }
                    request.min_doc_count = n as u64;
                }
                "shard_min_doc_count" => {
                    let n = int_param(AGG, key, value)?;
                    if n < 0 {
                        return Err(failed(
                            key,
                            Error::illegal_argument(format!(
                                "[shardMinDocCount] must be greater than or equal to 0. Found [{n}] in [{name}]"
                            )),
                        ));
                    }
                    request.shard_min_doc_count = n as u64;
                }
                "execution_hint" => request.execution_hint = Some(string_param(AGG, key, value)?),
                "include" => parse_include(AGG, &mut request.filter, value, true)?,
                "exclude" => parse_include(AGG, &mut request.filter, value, false)?,
                "background_filter" => {
                    return Err(Error::not_supported(
                        "[background_filter] in the [significant_terms] aggregation",
                    ))
                }
                other => match Heuristic::parse(other, value) {
                    Some(heuristic) => request.heuristic = heuristic?,
                    None => {
                        return Err(unknown_field(AGG, key).caused_by(Error::new(
                            "named_object_not_found_exception",
                            400,
                            format!("unknown field [{key}]"),
                        )))
                    }
                },
            }
        }
        request.source.require_field_at_parse()?;
        Ok(request)
    }

    /// The shard size: the request's (even below `size`, as OpenSearch allows here), else
    /// twice OpenSearch's suggestion for `size`.
    pub fn shard_size(&self) -> usize {
        let suggested = (self.size as f64 * 1.5 + 10.0) as usize;
        self.shard_size.unwrap_or(suggested.saturating_mul(2))
    }
}

// ---- collection ----

struct SignificantFactory {
    inner: Box<dyn Factory>,
    mapped: bool,
    /// Numbers and `execution_hint: map` always meet terms in first-seen order in
    /// OpenSearch; keywords and ips do when global ordinals are remapped.
    first_seen_always: bool,
    has_filter: bool,
}

pub fn factory(
    request: &AggRequest,
    significant: &SignificantTermsRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    if significant.text.is_some() {
        return crate::bucket::significant_text::factory(request, significant, ctx);
    }
    let field = significant.source.require_field(&request.name)?;
    let source = ValueSource::resolve(ctx.table, field, AGG, Accepts::Any)?;
    if let Some(leaf) = ctx.table.leaf(field) {
        let searchable = leaf.indexed || (leaf.fast && leaf.mapping.index());
        if !searchable {
            return Err(Error::illegal_argument(format!(
                "SignificantText aggregation requires fields to be searchable, but [{field}] is not"
            )));
        }
    }
    if let Some(hint) = &significant.execution_hint {
        if matches!(source, ValueSource::Keyword { .. } | ValueSource::Ip { .. })
            && !matches!(hint.as_str(), "map" | "global_ordinals")
        {
            return Err(Error::illegal_argument(format!(
                "Unknown `execution_hint`: [{hint}], expected any of [map, global_ordinals]"
            )));
        }
    }
    let regex =
        significant.filter.include_regex.is_some() || significant.filter.exclude_regex.is_some();
    match &source {
        ValueSource::Numeric { kind, .. } => {
            if regex {
                return Err(Error::illegal_argument(format!(
                    "Aggregation [{}] cannot support regular expression style include/exclude settings as they can only be applied to string fields. Use an array of numeric values for include/exclude clauses used to filter numeric fields",
                    request.name
                )));
            }
            if matches!(kind, NumericKind::Double | NumericKind::Scaled(_)) {
                return Err(Error::new(
                    "unsupported_operation_exception",
                    500,
                    "No support for examining floating point numerics",
                ));
            }
        }
        ValueSource::Ip { .. } if regex => {
            return Err(Error::illegal_argument(format!(
                "Aggregation [{}] cannot support regular expression style include/exclude settings as they can only be applied to string fields. Use an array of values for include/exclude clauses",
                request.name
            )));
        }
        _ => {}
    }
    // the terms collector counts the subset frequencies
    let terms = TermsRequest {
        source: significant.source.clone(),
        size: significant.size,
        shard_size: None,
        min_doc_count: 1,
        shard_min_doc_count: 0,
        order: BucketOrder::count_desc(),
        filter: significant.filter.clone(),
        show_term_doc_count_error: false,
    };
    let terms_request = AggRequest {
        name: request.name.clone(),
        kind: AggKind::Terms(terms.clone()),
        subs: request.subs.clone(),
        pipelines: Vec::new(),
        meta: None,
    };
    Ok(Box::new(SignificantFactory {
        inner: terms::factory_tracking_first_seen(&terms_request, &terms, ctx)?,
        mapped: !matches!(source, ValueSource::Unmapped),
        first_seen_always: matches!(source, ValueSource::Numeric { .. })
            || significant.execution_hint.as_deref() == Some("map"),
        has_filter: significant.filter != TermFilterSpec::default(),
    }))
}

impl Factory for SignificantFactory {
    fn collector(&self, subs: SubCollectors, single_parent: bool) -> Result<Box<dyn Collector>> {
        // OpenSearch keeps global ordinals (term order) only for a single-bucket parent with
        // no sub-aggregations and no include/exclude
        let remapped = !(single_parent && subs.is_empty() && !self.has_filter);
        Ok(Box::new(SignificantCollector {
            first_seen_order: self.first_seen_always || remapped,
            inner: self.inner.collector(subs, single_parent)?,
            subset_sizes: Vec::new(),
            mapped: self.mapped,
        }))
    }
}

struct SignificantCollector {
    inner: Box<dyn Collector>,
    /// Documents received per parent bucket.
    subset_sizes: Vec<u64>,
    mapped: bool,
    first_seen_order: bool,
}

impl Collector for SignificantCollector {
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        self.inner.set_segment(segment)
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        let mut run = 0u64;
        let mut current = None;
        for &parent in &parents[..docs.len()] {
            if current == Some(parent) {
                run += 1;
            } else {
                if let Some(p) = current {
                    *slot(&mut self.subset_sizes, p) += run;
                }
                current = Some(parent);
                run = 1;
            }
        }
        if let Some(p) = current {
            *slot(&mut self.subset_sizes, p) += run;
        }
        self.inner.collect(docs, parents);
    }

    fn finish_segment(&mut self) -> Result<()> {
        self.inner.finish_segment()
    }

    fn build(&mut self, parent: u32) -> Result<InternalAgg> {
        let InternalAgg::Terms(terms) = self.inner.build(parent)? else {
            return Err(Error::illegal_state(
                "significant_terms collector built a non-terms result",
            ));
        };
        let mut buckets: Vec<SignificantBucket> = terms
            .buckets
            .into_iter()
            .map(|b| SignificantBucket {
                key: b.key,
                subset_df: b.doc_count,
                superset_df: 0,
                score: 0.0,
                rank: u32::MAX,
                first_seen: b.first_seen,
                subs: b.subs,
            })
            .collect();
        buckets.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(InternalAgg::SignificantTerms(InternalSignificantTerms {
            buckets,
            subset_size: self.subset_sizes.get(parent as usize).copied().unwrap_or(0),
            superset_size: 0,
            format: terms.format,
            mapped: self.mapped,
            first_seen_order: self.first_seen_order,
        }))
    }
}

// ---- intermediate result ----

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SignificantBucket {
    pub key: TermKey,
    /// Documents of the subset holding the term.
    pub subset_df: u64,
    /// Documents of the background holding the term (0 until the shard looks it up).
    pub superset_df: u64,
    /// The shard's score (informational; the coordinator rescores).
    pub score: f64,
    /// Position in its shard's list (best first; once reduced, when the coordinator first met
    /// it, shard by shard): the order OpenSearch's coordinator meets terms in, which orders
    /// terms that share a `HashMap` bin. `u32::MAX` before `finish_shard`.
    pub rank: u32,
    /// The smallest `_seq_no` of the term's subset documents (before `finish_shard`).
    pub first_seen: u64,
    pub subs: InternalAggregations,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InternalSignificantTerms {
    /// Sorted by key.
    pub buckets: Vec<SignificantBucket>,
    pub subset_size: u64,
    /// The background size (0 until the shard looks it up).
    pub superset_size: u64,
    pub format: ValueFormat,
    /// False for a field unmapped everywhere (rendered as `{"buckets": []}`).
    pub mapped: bool,
    /// The shard offers terms to its queue in first-seen order rather than term order.
    pub first_seen_order: bool,
}

impl Default for InternalSignificantTerms {
    fn default() -> Self {
        InternalSignificantTerms {
            buckets: Vec::new(),
            subset_size: 0,
            superset_size: 0,
            format: ValueFormat::Raw,
            mapped: true,
            first_seen_order: false,
        }
    }
}

fn significant_request(request: &AggRequest) -> Result<&SignificantTermsRequest> {
    match &request.kind {
        AggKind::SignificantTerms(s) => Ok(s),
        _ => Err(Error::illegal_state(
            "significant_terms result for another request",
        )),
    }
}

/// A bucket with its score, as OpenSearch's significance queue orders them.
struct Scored {
    score: f64,
    bucket: SignificantBucket,
}

/// The significance queue's order (a Lucene `PriorityQueue` of the best buckets by score).
fn weaker(a: &Scored, b: &Scored) -> bool {
    a.score < b.score
}

impl InternalSignificantTerms {
    /// The `typed_keys` name: `siglterms` for numeric keys, else `sigsterms` (also for a
    /// result without buckets, which does not say what its field held).
    pub fn typed_name(&self) -> &'static str {
        let numeric = self
            .buckets
            .iter()
            .any(|b| matches!(b.key, TermKey::Long(_) | TermKey::Double(_)));
        if numeric {
            "siglterms"
        } else {
            "sigsterms"
        }
    }

    pub fn reduce(
        parts: Vec<InternalSignificantTerms>,
        request: &AggRequest,
    ) -> Result<InternalSignificantTerms> {
        let format = ValueFormat::merge(parts.iter().map(|p| &p.format));
        let mapped = parts.iter().any(|p| p.mapped);
        let first_seen_order = parts.iter().any(|p| p.first_seen_order);
        let subset_size = parts.iter().map(|p| p.subset_size).sum();
        let superset_size = parts.iter().map(|p| p.superset_size).sum();
        type Merged = (u64, u64, u32, u64, Vec<InternalAggregations>);
        let mut merged: BTreeMap<TermKey, Merged> = BTreeMap::new();
        // a shard's ranks say the order its list gives its terms; merged, a term's rank is
        // when the coordinator first meets it, shard by shard in request order (the
        // insertion order of OpenSearch's HashMap of buckets)
        let mut met = 0u32;
        for part in parts {
            let mut buckets = part.buckets;
            buckets.sort_by(|a, b| a.rank.cmp(&b.rank).then_with(|| a.key.cmp(&b.key)));
            for bucket in buckets {
                let ranked = bucket.rank != u32::MAX;
                let entry = merged.entry(bucket.key).or_insert_with(|| {
                    let rank = if ranked { met } else { u32::MAX };
                    met += u32::from(ranked);
                    (0, 0, rank, u64::MAX, Vec::new())
                });
                entry.0 += bucket.subset_df;
                entry.1 += bucket.superset_df;
                entry.3 = entry.3.min(bucket.first_seen);
                entry.4.push(bucket.subs);
            }
        }
        let buckets = merged
            .into_iter()
            .map(|(key, (subset_df, superset_df, rank, first_seen, subs))| {
                Ok(SignificantBucket {
                    key,
                    subset_df,
                    superset_df,
                    score: 0.0,
                    rank,
                    first_seen,
                    subs: InternalAggregations::reduce(subs, &request.subs)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(InternalSignificantTerms {
            buckets,
            subset_size,
            superset_size,
            format,
            mapped,
            first_seen_order,
        })
    }

    /// Looks up the shard's background statistics, scores the terms on them and keeps the
    /// best `shard_size`.
    pub fn finish_shard(&mut self, request: &AggRequest, ctx: &ShardFinish) -> Result<()> {
        let significant = significant_request(request)?;
        if let Some(searcher) = ctx.searcher {
            self.superset_size = searcher
                .segment_readers()
                .iter()
                .map(|r| r.max_doc() as u64)
                .sum();
            let field = significant.source.field.as_deref().unwrap_or_default();
            let background = Background::new(searcher, field, &self.format);
            let min = significant.shard_min_doc_count;
            let mut queue =
                LuceneQueue::new(significant.shard_size().min(self.buckets.len()), weaker);
            let mut buckets = std::mem::take(&mut self.buckets);
            if self.first_seen_order {
                // OpenSearch's bucket ordinals: the order documents brought the terms in
                buckets.sort_by(|a, b| a.first_seen.cmp(&b.first_seen).then(a.key.cmp(&b.key)));
            } else if background.is_ip() {
                // OpenSearch offers terms in global ordinal order: ips by address
                buckets.sort_by_key(|b| match &b.key {
                    TermKey::Str(s) => s.parse::<IpAddr>().ok().map(|ip| match ip {
                        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
                        IpAddr::V6(v6) => v6.octets(),
                    }),
                    _ => None,
                });
            }
            buckets.retain(|b| b.subset_df >= min);
            let keys: Vec<&TermKey> = buckets.iter().map(|b| &b.key).collect();
            let frequencies = background.frequencies(&keys)?;
            for (mut bucket, superset_df) in buckets.into_iter().zip(frequencies) {
                bucket.superset_df = superset_df;
                bucket.score = significant.heuristic.score(
                    bucket.subset_df,
                    self.subset_size,
                    bucket.superset_df,
                    self.superset_size,
                )?;
                queue.insert_with_overflow(Scored {
                    score: bucket.score,
                    bucket,
                });
            }
            let mut kept: Vec<SignificantBucket> = queue
                .into_sorted_desc()
                .into_iter()
                .enumerate()
                .map(|(rank, s)| SignificantBucket {
                    rank: rank as u32,
                    ..s.bucket
                })
                .collect();
            kept.sort_by(|a, b| a.key.cmp(&b.key));
            self.buckets = kept;
        }
        for bucket in &mut self.buckets {
            bucket.subs.finish_shard(&request.subs, ctx)?;
        }
        Ok(())
    }

    pub fn for_each_subs(
        &mut self,
        mut f: impl FnMut(&mut InternalAggregations) -> Result<()>,
    ) -> Result<()> {
        self.buckets.iter_mut().try_for_each(|b| f(&mut b.subs))
    }

    pub fn render(
        self,
        request: &AggRequest,
        ctx: &mut RenderContext,
    ) -> Result<Map<String, Value>> {
        let significant = significant_request(request)?;
        let mut out = Map::new();
        if !self.mapped {
            out.insert("buckets".into(), json!([]));
            return Ok(out);
        }
        let formatter = self.format.formatter();
        let key_string = |key: &TermKey| -> String {
            match key {
                TermKey::Str(s) => s.clone(),
                TermKey::Long(n) => formatter
                    .as_string(*n as f64)
                    .unwrap_or_else(|| n.to_string()),
                TermKey::Double(f) => formatter.as_string(*f).unwrap_or_else(|| f.to_string()),
                TermKey::Ip(_) | TermKey::Multi(_) => match key.to_json() {
                    Value::String(s) => s,
                    other => other.to_string(),
                },
            }
        };
        // the coordinator's final reduce: terms keyed by their string form (terms printing
        // alike merge) and offered in Java HashMap order to a queue of `size`, keeping those
        // with a positive score and enough documents
        let mut by_name: BTreeMap<String, Vec<SignificantBucket>> = BTreeMap::new();
        for bucket in self.buckets {
            by_name
                .entry(key_string(&bucket.key))
                .or_default()
                .push(bucket);
        }
        let mut names = Vec::with_capacity(by_name.len());
        let mut slots: Vec<Option<SignificantBucket>> = Vec::with_capacity(by_name.len());
        for (name, mut group) in by_name {
            let bucket = if group.len() == 1 {
                group.pop()
            } else {
                let subset_df = group.iter().map(|b| b.subset_df).sum();
                let superset_df = group.iter().map(|b| b.superset_df).sum();
                let rank = group.iter().map(|b| b.rank).min().unwrap_or(u32::MAX);
                let first_seen = group.iter().map(|b| b.first_seen).min().unwrap_or(u64::MAX);
                let key = group[0].key.clone();
                let subs = InternalAggregations::reduce(
                    group.into_iter().map(|b| b.subs).collect(),
                    &request.subs,
                )?;
                Some(SignificantBucket {
                    key,
                    subset_df,
                    superset_df,
                    score: 0.0,
                    rank,
                    first_seen,
                    subs,
                })
            };
            names.push((name, bucket.as_ref().map_or(u32::MAX, |b| b.rank)));
            slots.push(bucket);
        }
        let total = slots.len();
        let order = java_hash_map_order(&names);
        let mut queue = LuceneQueue::new(significant.size.min(total), weaker);
        for i in order {
            let Some(bucket) = slots[i].take() else {
                continue;
            };
            let score = significant.heuristic.score(
                bucket.subset_df,
                self.subset_size,
                bucket.superset_df,
                self.superset_size,
            )?;
            if score > 0.0 && bucket.subset_df >= significant.min_doc_count {
                queue.insert_with_overflow(Scored { score, bucket });
            }
        }
        let kept = queue.into_sorted_desc();
        ctx.add_buckets(kept.len())?;
        let boolean = self.format == ValueFormat::Boolean;
        let mut buckets = Vec::with_capacity(kept.len());
        for Scored { score, bucket } in kept {
            let mut b = Map::new();
            b.insert("key".into(), bucket.key.to_json());
            if let Some(number) = bucket.key.as_f64() {
                if boolean {
                    b.insert("key_as_string".into(), json!(number != 0.0));
                } else if let Some(text) = formatter.as_string(number) {
                    b.insert("key_as_string".into(), json!(text));
                }
            }
            b.insert("doc_count".into(), json!(bucket.subset_df));
            b.insert("score".into(), json!(score));
            b.insert("bg_count".into(), json!(bucket.superset_df));
            render_subs(&mut b, bucket.subs, &request.subs, ctx)?;
            buckets.push(Value::Object(b));
        }
        out.insert("doc_count".into(), json!(self.subset_size));
        out.insert("bg_count".into(), json!(self.superset_size));
        out.insert("buckets".into(), Value::Array(buckets));
        Ok(out)
    }
}

// ---- background frequencies ----

/// A shard's background: the field's terms in the inverted index.
struct Background<'a> {
    searcher: &'a Searcher,
    field: Option<(tantivy::schema::Field, TantivyType)>,
    /// The aggregation's date format, when the background of a date is looked up through
    /// its printed form (OpenSearch's `termQuery(format.format(term))`).
    date: Option<(DateFormat, Option<TimeZone>)>,
}

impl<'a> Background<'a> {
    fn new(searcher: &'a Searcher, path: &str, format: &ValueFormat) -> Background<'a> {
        let schema = searcher.schema();
        let field = schema
            .get_field(path)
            .ok()
            .map(|f| (f, schema.get_field_entry(f).field_type().clone()));
        let date = match format {
            ValueFormat::Date { format, zone } => DateFormat::parse(format)
                .ok()
                .map(|f| (f, zone.as_deref().and_then(|z| TimeZone::parse(z).ok()))),
            _ => None,
        };
        Background {
            searcher,
            field,
            date,
        }
    }

    fn is_ip(&self) -> bool {
        matches!(self.field, Some((_, TantivyType::IpAddr(_))))
    }

    /// The background frequencies of `keys`, in order. Numbers, dates and ips searched through
    /// their columns are counted together in one pass over each segment's column (what one
    /// point or range query per key would count); other fields look each key up.
    fn frequencies(&self, keys: &[&TermKey]) -> Result<Vec<u64>> {
        let Some((field, field_type)) = &self.field else {
            return Ok(vec![0; keys.len()]);
        };
        let schema = self.searcher.schema();
        let entry = schema.get_field_entry(*field);
        if !entry.is_fast() || entry.is_indexed() {
            return keys.iter().map(|key| self.frequency(key)).collect();
        }
        let name = entry.name();
        match field_type {
            TantivyType::I64(_) => {
                let intervals: Vec<Option<(i64, i64)>> = keys
                    .iter()
                    .map(|key| match key {
                        TermKey::Long(n) => Some(self.date_interval(*n).unwrap_or((*n, *n))),
                        _ => None,
                    })
                    .collect();
                count_in_intervals::<i64>(self.searcher, name, &intervals)
            }
            TantivyType::IpAddr(_) => {
                let intervals: Vec<Option<(Ipv6Addr, Ipv6Addr)>> = keys
                    .iter()
                    .map(|key| match key {
                        TermKey::Str(s) => s.parse::<IpAddr>().ok().map(|ip| {
                            let v6 = ipv6(ip);
                            (v6, v6)
                        }),
                        _ => None,
                    })
                    .collect();
                count_in_intervals::<Ipv6Addr>(self.searcher, name, &intervals)
            }
            _ => keys.iter().map(|key| self.frequency(key)).collect(),
        }
    }

    /// For a date looked up through its printed form: every millisecond that form covers,
    /// when that is more than the millisecond itself.
    fn date_interval(&self, millis: i64) -> Option<(i64, i64)> {
        let (format, zone) = self.date.as_ref()?;
        let text = format.format_millis(millis, zone.as_ref());
        let lo = parse_date_math(&text, format, 0, zone.as_ref(), false).ok()?;
        let hi = parse_date_math(&text, format, 0, zone.as_ref(), true).ok()?;
        ((lo, hi) != (millis, millis)).then_some((lo, hi))
    }

    /// The background frequency of `key`: Lucene's `docFreq` for keyword and boolean terms,
    /// the live documents holding the value for numbers, dates and ips.
    fn frequency(&self, key: &TermKey) -> Result<u64> {
        let Some((field, field_type)) = &self.field else {
            return Ok(0);
        };
        let field = *field;
        let io = |e: tantivy::TantivyError| Error::internal("read background frequencies", e);
        match (field_type, key) {
            (TantivyType::Str(_), TermKey::Str(s)) => self
                .searcher
                .doc_freq(&Term::from_field_text(field, s))
                .map_err(io),
            (TantivyType::Bool(_), TermKey::Long(n)) => self
                .searcher
                .doc_freq(&Term::from_field_bool(field, *n != 0))
                .map_err(io),
            (TantivyType::I64(_), TermKey::Long(n)) => {
                if let Some((lo, hi)) = self.date_interval(*n) {
                    // the term printed with the aggregation's format and read back as a
                    // date query: every millisecond the printed form covers
                    let query = RangeQuery::new(
                        Bound::Included(Term::from_field_i64(field, lo)),
                        Bound::Included(Term::from_field_i64(field, hi)),
                    );
                    return self
                        .searcher
                        .search(&query, &Count)
                        .map(|c| c as u64)
                        .map_err(io);
                }
                self.live_frequency(&Term::from_field_i64(field, *n))
            }
            (TantivyType::IpAddr(_), TermKey::Str(s)) => match s.parse::<IpAddr>() {
                Ok(ip) => self.live_frequency(&Term::from_field_ip_addr(field, ipv6(ip))),
                Err(_) => Ok(0),
            },
            _ => Ok(0),
        }
    }

    /// Live documents holding `term` (a point query's count).
    fn live_frequency(&self, term: &Term) -> Result<u64> {
        let io = |e: std::io::Error| Error::internal("read background frequencies", e);
        let schema = self.searcher.schema();
        if !schema.get_field_entry(term.field()).is_indexed() {
            // numbers, dates and ips are searched through their columns
            let query =
                RangeQuery::new(Bound::Included(term.clone()), Bound::Included(term.clone()));
            return self
                .searcher
                .search(&query, &Count)
                .map(|c| c as u64)
                .map_err(|e| Error::internal("read background frequencies", e));
        }
        let mut total = 0u64;
        for reader in self.searcher.segment_readers() {
            let inverted = reader
                .inverted_index(term.field())
                .map_err(|e| Error::internal("open an inverted index", e))?;
            match reader.alive_bitset() {
                None => total += inverted.doc_freq(term).map_err(io)? as u64,
                Some(alive) => {
                    if let Some(mut postings) = inverted
                        .read_postings(term, IndexRecordOption::Basic)
                        .map_err(io)?
                    {
                        let mut doc = postings.doc();
                        while doc != TERMINATED {
                            if alive.is_alive(doc) {
                                total += 1;
                            }
                            doc = postings.advance();
                        }
                    }
                }
            }
        }
        Ok(total)
    }
}

fn ipv6(ip: IpAddr) -> Ipv6Addr {
    match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    }
}

/// For each inclusive interval (`None`: a key that cannot occur, counted 0), the live
/// documents of the searcher with at least one value of column `column` inside it — what a
/// range query per interval would count — in one pass over each segment's column.
///
/// The interval bounds cut the value line into elementary pieces (each bound itself and the
/// open gap after it); every interval covers a run of pieces, so a value finds the intervals
/// holding it with one binary search. A document counts once per interval, whatever number
/// of its values fall inside.
fn count_in_intervals<T>(
    searcher: &Searcher,
    column: &str,
    intervals: &[Option<(T, T)>],
) -> Result<Vec<u64>>
where
    T: Ord + Copy + Send + Sync + std::fmt::Debug + PartialOrd + 'static,
    T: tantivy::columnar::HasAssociatedColumnType,
    tantivy::columnar::DynamicColumn: Into<Option<tantivy::columnar::Column<T>>>,
{
    // identical intervals (date keys printing alike) are counted once
    let mut unique: Vec<(T, T)> = intervals.iter().flatten().copied().collect();
    unique.sort_unstable();
    unique.dedup();
    let index_of = |interval: &(T, T)| unique.binary_search(interval).ok();
    let mut counts = vec![0u64; unique.len()];
    if !unique.is_empty() {
        let mut bounds: Vec<T> = unique.iter().flat_map(|&(lo, hi)| [lo, hi]).collect();
        bounds.sort_unstable();
        bounds.dedup();
        // piece 2j is bounds[j]; piece 2j + 1 the gap between bounds[j] and bounds[j + 1]
        let pieces = 2 * bounds.len() - 1;
        let mut covering: Vec<Vec<u32>> = vec![Vec::new(); pieces];
        for (id, (lo, hi)) in unique.iter().enumerate() {
            if lo > hi {
                continue;
            }
            let first = bounds.binary_search(lo).expect("a bound") * 2;
            let last = bounds.binary_search(hi).expect("a bound") * 2;
            for piece in &mut covering[first..=last] {
                piece.push(id as u32);
            }
        }
        let piece_of = |value: T| -> Option<usize> {
            match bounds.binary_search(&value) {
                Ok(j) => Some(2 * j),
                Err(0) => None,
                Err(j) if j == bounds.len() => None,
                Err(j) => Some(2 * j - 1),
            }
        };
        let mut last_doc = vec![DocId::MAX; unique.len()];
        for reader in searcher.segment_readers() {
            let Some(values) = reader
                .fast_fields()
                .column_opt::<T>(column)
                .map_err(|e| Error::internal("open a column for background frequencies", e))?
            else {
                continue;
            };
            last_doc.fill(DocId::MAX);
            let alive = reader.alive_bitset();
            for doc in 0..reader.max_doc() {
                if alive.is_some_and(|a| !a.is_alive(doc)) {
                    continue;
                }
                for value in values.values_for_doc(doc) {
                    let Some(piece) = piece_of(value) else {
                        continue;
                    };
                    for &id in &covering[piece] {
                        let id = id as usize;
                        if last_doc[id] != doc {
                            last_doc[id] = doc;
                            counts[id] += 1;
                        }
                    }
                }
            }
        }
    }
    Ok(intervals
        .iter()
        .map(|interval| {
            interval
                .as_ref()
                .and_then(index_of)
                .map_or(0, |id| counts[id])
        })
        .collect())
}

// ---- OpenSearch's tie-breaking machinery ----

/// The order a `java.util.HashMap` iterates `names` in, each inserted at its rank (ties in
/// rank by position): `java_hash::hash_map_order` over the names in insertion order.
fn java_hash_map_order(names: &[(String, u32)]) -> Vec<usize> {
    let mut inserted: Vec<usize> = (0..names.len()).collect();
    inserted.sort_by_key(|&i| names[i].1);
    let keys: Vec<&str> = inserted.iter().map(|&i| names[i].0.as_str()).collect();
    tessera_common::java_hash::hash_map_order(&keys)
        .into_iter()
        .map(|k| inserted[k])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::parse_aggregations;
    use crate::test_util::{json_diff, render_shards, split_docs, Rng, TestShard};

    fn parse_err(body: Value) -> (String, Option<String>) {
        let e = parse_aggregations(&json!({"s": {"significant_terms": body}})).unwrap_err();
        (
            e.reason().to_string(),
            e.cause().map(|c| format!("{}: {}", c.kind(), c.reason())),
        )
    }

    #[test]
    fn parse_errors_match_opensearch() {
        assert_eq!(
            parse_err(json!({"field": "k", "bogus": 1})),
            (
                "[significant_terms] unknown field [bogus]".into(),
                Some("named_object_not_found_exception: unknown field [bogus]".into())
            )
        );
        assert_eq!(
            parse_err(json!({"field": "k", "size": 0})),
            (
                "[significant_terms] failed to parse field [size]".into(),
                Some(
                    "illegal_argument_exception: [size] must be greater than 0. Found [0] in [s]"
                        .into()
                )
            )
        );
        assert_eq!(
            parse_err(json!({"field": "k", "shard_size": 0})).1.unwrap(),
            "illegal_argument_exception: [shardSize] must be greater than  0. Found [0] in [s]"
        );
        assert_eq!(
            parse_err(json!({"field": "k", "min_doc_count": -1})).1.unwrap(),
            "illegal_argument_exception: [minDocCount] must be greater than or equal to 0. Found [-1] in [s]"
        );
        assert_eq!(
            parse_err(json!({"field": "k", "shard_min_doc_count": -1})).1.unwrap(),
            "illegal_argument_exception: [shardMinDocCount] must be greater than or equal to 0. Found [-1] in [s]"
        );
        assert_eq!(
            parse_err(json!({"field": "k", "jlh": {"x": 1}})).0,
            "[jlh] unknown field [x]"
        );
        assert_eq!(
            parse_err(json!({"field": "k", "gnd": {"include_negatives": true}})).0,
            "[gnd] unknown field [include_negatives]"
        );
        assert_eq!(
            parse_err(json!({"field": "k", "mutual_information": {"include_negatives": "x"}})),
            (
                "[mutual_information] failed to parse field [include_negatives]".into(),
                Some("illegal_argument_exception: Failed to parse value [x] as only [true] or [false] are allowed.".into())
            )
        );
        assert!(
            parse_err(json!({"field": "k", "background_filter": {"match_all": {}}}))
                .0
                .contains("not supported")
        );
        assert!(
            parse_err(json!({"field": "k", "script_heuristic": {"script": "1"}}))
                .0
                .contains("not supported")
        );
        // the last heuristic wins, as in OpenSearch
        let aggs = parse_aggregations(
            &json!({"s": {"significant_terms": {"field": "k", "jlh": {}, "percentage": {}}}}),
        )
        .unwrap();
        let AggKind::SignificantTerms(s) = &aggs[0].kind else {
            panic!()
        };
        assert_eq!(s.heuristic, Heuristic::Percentage);
        assert_eq!(s.shard_size(), 50);
    }

    /// Scores OpenSearch 2.19 gave for terms seen in 29 (and 7) of 136 subset documents and
    /// 91 (and 17) of 600 background documents.
    #[test]
    fn heuristics_score_like_opensearch() {
        let cases = [
            (Heuristic::Jlh, 0.08656222670063497, 0.042031345410136374),
            (
                Heuristic::MutualInformation {
                    include_negatives: false,
                    background_is_superset: true,
                },
                0.0058342028986942416,
                0.003586756256826142,
            ),
            (
                Heuristic::MutualInformation {
                    include_negatives: true,
                    background_is_superset: false,
                },
                0.0028538134830677986,
                0.0016400318833588124,
            ),
            (
                Heuristic::ChiSquare {
                    include_negatives: false,
                    background_is_superset: true,
                },
                5.181248811323292,
                3.419643754363122,
            ),
            (
                Heuristic::ChiSquare {
                    include_negatives: true,
                    background_is_superset: false,
                },
                3.0798173329938034,
                1.8814834398178748,
            ),
            (
                Heuristic::Gnd {
                    background_is_superset: true,
                },
                0.4407162804317861,
                0.43496651651198864,
            ),
            (
                Heuristic::Gnd {
                    background_is_superset: false,
                },
                0.42654826617462116,
                0.4203513725933836,
            ),
            (
                Heuristic::Percentage,
                0.31868131868131866,
                0.4117647058823529,
            ),
        ];
        for (heuristic, gamma, theta) in cases {
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs();
            assert!(
                close(heuristic.score(29, 136, 91, 600).unwrap(), gamma),
                "{heuristic:?}"
            );
            assert!(
                close(heuristic.score(7, 136, 17, 600).unwrap(), theta),
                "{heuristic:?}"
            );
        }
        let e = Heuristic::Jlh.score(5, 4, 1, 10).unwrap_err();
        assert_eq!(e.reason(), "subsetFreq > subsetSize, in JLHScore");
        let e = Heuristic::ChiSquare {
            include_negatives: false,
            background_is_superset: true,
        }
        .score(5, 10, 2, 100)
        .unwrap_err();
        assert!(e
            .reason()
            .starts_with("subsetFreq > supersetFreq, does your background filter"));
    }

    /// OpenSearch 2.19 lists these 12 equally significant terms (percentage score 1.0) in this
    /// order, and keeps these 10 of them when `size` is 10.
    #[test]
    fn ties_follow_opensearch_hash_map_and_queue_order() {
        let words = [
            "alpha", "beta", "delta", "eps", "eta", "gamma", "iota", "kappa", "lambda", "mu",
            "theta", "zeta",
        ];
        let run = |size: usize| -> Vec<String> {
            let names: Vec<(String, u32)> = words.iter().map(|w| (w.to_string(), 0)).collect();
            let mut queue = LuceneQueue::new(size, weaker);
            for i in java_hash_map_order(&names) {
                queue.insert_with_overflow(Scored {
                    score: 1.0,
                    bucket: SignificantBucket {
                        key: TermKey::Str(words[i].to_string()),
                        subset_df: 1,
                        superset_df: 1,
                        score: 1.0,
                        rank: 0,
                        first_seen: 0,
                        subs: InternalAggregations::default(),
                    },
                });
            }
            queue
                .into_sorted_desc()
                .into_iter()
                .map(|s| match s.bucket.key {
                    TermKey::Str(s) => s,
                    _ => unreachable!(),
                })
                .collect()
        };
        assert_eq!(
            run(12),
            [
                "iota", "lambda", "eta", "alpha", "delta", "mu", "eps", "kappa", "theta", "beta",
                "gamma", "zeta"
            ]
        );
        assert_eq!(
            run(10),
            ["iota", "lambda", "eta", "alpha", "delta", "mu", "eps", "kappa", "theta", "zeta"]
        );
        assert_eq!(
            tessera_common::java_hash::string_hash("lambda"),
            0xbdd5_53c7_u32 as i32
        );
    }

    fn docs(seed: u64, n: usize) -> Vec<Value> {
        let mut rng = Rng::new(seed);
        let words = ["a", "b", "c", "d", "e", "f", "g", "h"];
        (0..n)
            .map(|i| {
                let group = if rng.below(4) == 0 { "x" } else { "y" };
                // "x" documents favour the first words
                let w = if group == "x" {
                    words[rng.below(3) as usize]
                } else {
                    words[rng.below(8) as usize]
                };
                match i % 11 {
                    0 => json!({"g": group, "n": rng.below(5)}),
                    1 => json!({"g": group, "k": [w, words[rng.below(8) as usize]], "n": rng.below(5),
                                "d": 1_420_070_400_000i64 + rng.below(5) as i64 * 86_400_000}),
                    _ => json!({"g": group, "k": w, "n": rng.below(5),
                                "d": 1_420_070_400_000i64 + rng.below(5) as i64 * 86_400_000}),
                }
            })
            .collect()
    }

    fn shard(docs: &[Value], segments: usize) -> TestShard {
        TestShard::new(
            json!({"properties": {"g": {"type": "keyword"}, "k": {"type": "keyword"},
                   "n": {"type": "long"}, "d": {"type": "date"}}}),
            docs,
            segments,
        )
    }

    #[test]
    fn background_counts_and_slice_invariance() {
        let docs = docs(5, 500);
        let shard = shard(&docs, 4);
        let body = json!({"g": {"terms": {"field": "g"}, "aggs": {
            "k": {"significant_terms": {"field": "k", "min_doc_count": 1}},
            "n": {"significant_terms": {"field": "n", "min_doc_count": 1, "chi_square": {}}},
            "d": {"significant_terms": {"field": "d", "min_doc_count": 1, "percentage": {}}}
        }}});
        let reference = shard.render(&body, 1, 0);
        for seed in 1..8 {
            let other = shard.render(&body, 1 + seed as usize % 8, seed);
            assert_eq!(json_diff(&reference, &other, 0.0, ""), None);
        }
        let x = &reference["g"]["buckets"][1];
        assert_eq!(x["key"], "x");
        let subset = docs.iter().filter(|d| d["g"] == "x").count() as u64;
        assert_eq!(x["k"]["doc_count"], subset);
        assert_eq!(x["k"]["bg_count"], 500);
        // a keyword term's background is its document frequency in the whole shard
        let has = |d: &Value, w: &str| match &d["k"] {
            Value::Array(a) => a.iter().any(|v| v == w),
            v => v == w,
        };
        let top = x["k"]["buckets"][0]["key"].as_str().unwrap().to_string();
        let bg = docs.iter().filter(|d| has(d, &top)).count() as u64;
        let fg = docs
            .iter()
            .filter(|d| d["g"] == "x" && has(d, &top))
            .count() as u64;
        assert_eq!(x["k"]["buckets"][0]["bg_count"], bg);
        assert_eq!(x["k"]["buckets"][0]["doc_count"], fg);
        let score = Heuristic::Jlh.score(fg, subset, bg, 500).unwrap();
        assert_eq!(x["k"]["buckets"][0]["score"], json!(score));
        // numbers and dates count the documents holding the value
        let n0 = x["n"]["buckets"][0]["key"].as_u64().unwrap();
        let bg = docs.iter().filter(|d| d["n"] == n0).count() as u64;
        assert_eq!(x["n"]["buckets"][0]["bg_count"], bg);
        assert!(x["d"]["buckets"][0]["key_as_string"].is_string());
    }

    #[test]
    fn one_pass_counts_equal_a_range_query_per_interval() {
        use tantivy::schema::{Schema, FAST};
        use tantivy::{doc, Index, IndexWriter};
        let mut builder = Schema::builder();
        let id = builder.add_u64_field("id", tantivy::schema::INDEXED);
        let n = builder.add_i64_field("n", FAST);
        let ip = builder.add_ip_addr_field("ip", FAST);
        let index = Index::create_in_ram(builder.build());
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        let mut rng = Rng::new(3);
        for i in 0..3000u64 {
            let mut d = doc!(id => i);
            // zero to three values, repeats included
            for _ in 0..rng.below(4) {
                let v = rng.below(40) as i64 - 20;
                d.add_i64(n, v);
                d.add_ip_addr(
                    ip,
                    Ipv6Addr::from(0xffff_0a00_0000u128 + v.unsigned_abs() as u128),
                );
            }
            writer.add_document(d).unwrap();
            if i % 700 == 699 {
                writer.commit().unwrap();
            }
        }
        writer.commit().unwrap();
        for i in (0..3000u64).step_by(7) {
            writer.delete_term(Term::from_field_u64(id, i));
        }
        writer.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        assert!(searcher.segment_readers().len() > 1);
        let range_count = |lo: i64, hi: i64| {
            let q = RangeQuery::new(
                Bound::Included(Term::from_field_i64(n, lo)),
                Bound::Included(Term::from_field_i64(n, hi)),
            );
            searcher.search(&q, &Count).unwrap() as u64
        };
        // points, overlapping and nested ranges, duplicates, empty and out-of-range intervals
        let intervals = vec![
            Some((3, 3)),
            Some((-20, -20)),
            Some((0, 10)),
            Some((5, 15)),
            Some((7, 7)),
            Some((0, 10)),
            Some((-100, 100)),
            None,
            Some((50, 60)),
            Some((19, 19)),
            Some((12, 11)),
        ];
        let counts = count_in_intervals::<i64>(&searcher, "n", &intervals).unwrap();
        for (interval, count) in intervals.iter().zip(&counts) {
            let expected = match interval {
                Some((lo, hi)) if lo <= hi => range_count(*lo, *hi),
                _ => 0,
            };
            assert_eq!(*count, expected, "{interval:?}");
        }
        assert!(counts[0] > 0 && counts[6] > counts[2]);
        let ip_of = |v: u128| Ipv6Addr::from(0xffff_0a00_0000u128 + v);
        let ips: Vec<Option<(Ipv6Addr, Ipv6Addr)>> =
            (0..25).map(|v| Some((ip_of(v), ip_of(v)))).collect();
        let ip_counts = count_in_intervals::<Ipv6Addr>(&searcher, "ip", &ips).unwrap();
        for (v, count) in ip_counts.iter().enumerate() {
            let q = RangeQuery::new(
                Bound::Included(Term::from_field_ip_addr(ip, ip_of(v as u128))),
                Bound::Included(Term::from_field_ip_addr(ip, ip_of(v as u128))),
            );
            assert_eq!(
                *count,
                searcher.search(&q, &Count).unwrap() as u64,
                "ip {v}"
            );
        }
        assert_eq!(
            count_in_intervals::<i64>(&searcher, "missing", &intervals[..2]).unwrap(),
            [0, 0]
        );
    }

    #[test]
    fn batched_backgrounds_equal_one_lookup_per_key() {
        // dates spread over a few days, some documents with two dates, some deleted by nothing
        // but present in several segments; a coarse format makes a key cover a whole day
        let docs: Vec<Value> = (0..400)
            .map(|i| {
                let d = 1_420_070_400_000i64 + (i % 23) as i64 * 7_200_000;
                if i % 5 == 0 {
                    json!({"d": [d, d + 86_400_000], "n": [i % 9, i % 4]})
                } else {
                    json!({"d": d, "n": i % 9})
                }
            })
            .collect();
        let shard = TestShard::new(
            json!({"properties": {"n": {"type": "long"}, "d": {"type": "date"}}}),
            &docs,
            3,
        );
        let searcher = shard.searcher();
        let keys: Vec<TermKey> = (-2..12)
            .map(TermKey::Long)
            .chain((0..30).map(|h| TermKey::Long(1_420_070_400_000 + h * 3_600_000)))
            .chain([TermKey::Str("x".into())])
            .collect();
        let refs: Vec<&TermKey> = keys.iter().collect();
        for (field, format) in [
            ("n", ValueFormat::Raw),
            (
                "d",
                ValueFormat::Date {
                    format: "strict_date_optional_time||epoch_millis".into(),
                    zone: None,
                },
            ),
            (
                "d",
                ValueFormat::Date {
                    format: "yyyy-MM-dd".into(),
                    zone: Some("+05:00".into()),
                },
            ),
        ] {
            let background = Background::new(searcher, field, &format);
            let batched = background.frequencies(&refs).unwrap();
            let one_by_one: Vec<u64> = refs
                .iter()
                .map(|k| background.frequency(k).unwrap())
                .collect();
            assert_eq!(batched, one_by_one, "{field} {format:?}");
            assert!(batched.iter().any(|&c| c > 0), "{field} {format:?}");
        }
    }

    #[test]
    fn shards_sum_their_statistics_in_any_order() {
        let docs = docs(9, 600);
        let parts = split_docs(&docs, 3, 2);
        let shards: Vec<TestShard> = parts.iter().map(|p| shard(p, 2)).collect();
        let refs: Vec<&TestShard> = shards.iter().collect();
        let body =
            json!({"s": {"significant_terms": {"field": "k", "min_doc_count": 1, "size": 3}}});
        let first = render_shards(&refs, &body, 2, 1).unwrap();
        for seed in 2..6 {
            let other = render_shards(&refs, &body, 1 + seed as usize, seed).unwrap();
            assert_eq!(json_diff(&first, &other, 0.0, ""), None);
        }
        assert_eq!(first["s"]["doc_count"], 600);
        assert_eq!(first["s"]["bg_count"], 600);
        assert_eq!(first["s"]["buckets"].as_array().unwrap().len(), 0);
        let unmapped = render_shards(
            &refs,
            &json!({"s": {"significant_terms": {"field": "nope"}}}),
            1,
            0,
        )
        .unwrap();
        assert_eq!(unmapped["s"], json!({"buckets": []}));
    }

    #[test]
    fn shard_errors_match_opensearch() {
        let shard = shard(&docs(1, 50), 1);
        let e = shard
            .try_run(
                &json!({"s": {"significant_terms": {"field": "n", "include": "1.*"}}}),
                1,
                0,
            )
            .unwrap_err();
        assert!(e.reason().starts_with(
            "Aggregation [s] cannot support regular expression style include/exclude settings"
        ));
        let e = shard
            .try_run(
                &json!({"s": {"significant_terms": {"field": "k", "execution_hint": "bogus"}}}),
                1,
                0,
            )
            .unwrap_err();
        assert_eq!(
            e.reason(),
            "Unknown `execution_hint`: [bogus], expected any of [map, global_ordinals]"
        );
    }
}
