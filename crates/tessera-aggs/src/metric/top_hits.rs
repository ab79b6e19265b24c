//! `top_hits`: the best documents of each bucket, with their `_source`.
//!
//! Each slice keeps, per bucket, the first `from + size` documents in the requested order (as
//! segment and doc addresses with their sort values). Once the shard has merged its slices and
//! trimmed its buckets (`finish_shard`), the surviving hits read their `_id`, `_source`
//! (filtered) and, when asked, `_version`, `_seq_no` and `_primary_term` from the shard's
//! segments, so a top_hits under a large terms aggregation reads documents only for the
//! buckets the shard sends; the hits then travel in the intermediate result. Documents are totally ordered — sort values, then the shard's position
//! in the request, then index order inside the shard (OpenSearch's tie-breaks) — so the best
//! `k` of a union is the best `k` of the parts' best `k`: slices and shards merge exactly.
//!
//! Sorting is by field (numeric, date, boolean, keyword and ip columns, with `order`,
//! `missing`, `mode` and `unmapped_type`), `_doc`, or `_score`. Under a constant-score query
//! (`match_all`, a `bool` of filters, `range`, `terms`, ...) every match scores the same: the
//! shard tells the aggregation that score ([`AggContext::constant_score`]: 1.0 for `match_all`,
//! 0.0 for filters) and hits by score come in index order, as in OpenSearch. Under a scored
//! query (`match`, ...) the slice hands each match's score over ([`BlockScores`]), so hits rank
//! by relevance; documents the query did not score (those a `global` bucket adds) score 1.0,
//! as under OpenSearch's match-all.
//!
//! Under a `nested` aggregation the hits are nested objects, as OpenSearch shows them: the root
//! document's `_id` and metadata, the object's `_nested` identity, the object as `_source`
//! (filtered by full path), and the root's score.
//!
//! `stored_fields` takes `_none_` (no `_id`, no `_source`) and `_source`; other stored fields,
//! `explain`, `highlight`, `docvalue_fields`, `fields` and `script_fields` are refused with a
//! "not supported" error.

use std::cmp::Ordering;
use std::net::Ipv6Addr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tantivy::schema::Value as _;
use tantivy::store::StoreReader;
use tantivy::{DocId, SegmentReader, TantivyDocument};
use tessera_common::{Error, Result};
use tessera_mapping::field_table::{
    ID_FIELD, PRIMARY_TERM_FIELD, SEQ_NO_FIELD, SOURCE_FIELD, VERSION_FIELD,
};
use tessera_mapping::{FieldType, SourceFilter};
use tessera_query::nested::DocBits;
use tessera_query::nested_identity::{NestedIdentity, NestedLevels};

use crate::bucket::token;
use crate::collector::{BlockScores, Collector, SegmentContext, SubCollectors};
use crate::internal::{InternalAgg, ShardFinish};
use crate::metric::json_double;
use crate::prepare::{AggContext, Factory};
use crate::request::{value_text, AggKind, AggRequest};
use crate::values::{
    ip_to_string, IpValues, KeywordValues, NumericKind, NumericValues, ValueSource,
};

const AGG: &str = "top_hits";

/// Where documents without a value sort.
#[derive(Clone, Debug, PartialEq)]
pub enum SortMissing {
    First,
    Last,
    /// A value standing in for the missing one.
    Value(Value),
}

/// How a multi-valued field picks its sort value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortMode {
    Min,
    Max,
    Sum,
    Avg,
    Median,
}

#[derive(Clone, Debug, PartialEq)]
pub enum HitSort {
    Score {
        asc: bool,
    },
    Doc {
        asc: bool,
    },
    Field {
        field: String,
        asc: bool,
        missing: SortMissing,
        mode: Option<SortMode>,
        unmapped_type: Option<String>,
    },
}

/// `_source`: whether to return it, and which parts.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceSpec {
    pub enabled: bool,
    pub includes: Vec<String>,
    pub excludes: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TopHitsRequest {
    pub from: usize,
    pub size: usize,
    /// Empty: by score (index order, as every document scores 1.0).
    pub sort: Vec<HitSort>,
    pub source: SourceSpec,
    pub version: bool,
    pub seq_no_primary_term: bool,
    pub track_scores: bool,
    /// What `stored_fields` leaves: `_id` (not with `_none_`) and `_source` (a list without
    /// `_source` drops it, whatever `_source` says, as in OpenSearch).
    pub stored: StoredFields,
}

/// What `stored_fields` asks a hit to show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoredFields {
    pub id: bool,
    pub source: bool,
}

/// The order of hits by score: best first, then index order.
static BY_SCORE: [HitSort; 1] = [HitSort::Score { asc: false }];

impl TopHitsRequest {
    /// `from + size`: how many hits each part keeps.
    pub fn window(&self) -> usize {
        self.from.saturating_add(self.size)
    }

    /// Whether hits are ordered by score (no sort, or `_score` descending alone): they then
    /// show `_score` and no `sort` values.
    pub fn by_score(&self) -> bool {
        matches!(self.sort.as_slice(), [] | [HitSort::Score { asc: false }])
    }

    /// The order of the hits (ties go to the shard first in the request, then index order).
    pub fn ordering(&self) -> &[HitSort] {
        if self.by_score() {
            &BY_SCORE
        } else {
            &self.sort
        }
    }

    /// Whether the hits show or sort by score.
    pub fn uses_scores(&self) -> bool {
        self.track_scores
            || self
                .ordering()
                .iter()
                .any(|s| matches!(s, HitSort::Score { .. }))
    }

    pub fn parse(name: &str, body: &Map<String, Value>) -> Result<TopHitsRequest> {
        let mut request = TopHitsRequest {
            from: 0,
            size: 3,
            sort: Vec::new(),
            source: SourceSpec {
                enabled: true,
                includes: Vec::new(),
                excludes: Vec::new(),
            },
            version: false,
            seq_no_primary_term: false,
            track_scores: false,
            stored: StoredFields {
                id: true,
                source: true,
            },
        };
        let unknown = |key: &str, value: &Value| {
            Error::parsing(format!("Unknown key for a {} in [{key}].", token(value)))
        };
        let int = |key: &str, value: &Value| -> Result<usize> {
            let n = match value {
                Value::Number(n) => n
                    .as_i64()
                    .or_else(|| n.as_f64().map(|f| f as i64))
                    .ok_or_else(|| unknown(key, value))?,
                Value::String(s) => s.trim().parse::<i64>().map_err(|_| {
                    Error::new(
                        "number_format_exception",
                        400,
                        format!("For input string: \"{s}\""),
                    )
                })?,
                other => return Err(unknown(key, other)),
            };
            usize::try_from(n).map_err(|_| {
                Error::illegal_argument(format!(
                    "[{key}] must be greater than or equal to 0. Found [{n}] in [{name}]"
                ))
            })
        };
        let flag = |key: &str, value: &Value| -> Result<bool> {
            match value {
                Value::Bool(b) => Ok(*b),
                Value::String(s) if s == "true" || s == "false" => Ok(s == "true"),
                other => Err(unknown(key, other)),
            }
        };
        for (key, value) in body {
            match key.as_str() {
                "from" => request.from = int(key, value)?,
                "size" => request.size = int(key, value)?,
                "version" => request.version = flag(key, value)?,
                "seq_no_primary_term" => request.seq_no_primary_term = flag(key, value)?,
                "track_scores" => request.track_scores = flag(key, value)?,
                "explain" => {
                    if flag(key, value)? {
                        return Err(not_supported("explain"));
                    }
                }
                "_source" => request.source = parse_source(value)?,
                "sort" => request.sort = parse_sort(value)?,
                "stored_fields" => request.stored = parse_stored_fields(value)?,
                "highlight" | "docvalue_fields" | "fields" | "script_fields" => {
                    return Err(not_supported(key))
                }
                _ => return Err(unknown(key, value)),
            }
        }
        Ok(request)
    }
}

fn not_supported(option: &str) -> Error {
    Error::not_supported(&format!("[{option}] in the [{AGG}] aggregation"))
}

fn string_list(value: &Value, what: &str) -> Result<Vec<String>> {
    let one = |v: &Value| match v {
        Value::String(s) => Ok(s.clone()),
        other => Err(Error::parsing(format!(
            "Unknown key for a {} in [{what}].",
            token(other)
        ))),
    };
    match value {
        Value::Array(items) => items.iter().map(one).collect(),
        other => Ok(vec![one(other)?]),
    }
}

/// `stored_fields`: a name or a list. Tessera keeps no stored fields apart from `_source`, so
/// only `_none_` and `_source` are served; another field would be silently missing.
fn parse_stored_fields(value: &Value) -> Result<StoredFields> {
    let names = string_list(value, "stored_fields")?;
    if names.iter().any(|n| n == "_none_") {
        if names.len() > 1 {
            return Err(Error::illegal_argument(
                "cannot combine _none_ with other fields",
            ));
        }
        return Ok(StoredFields {
            id: false,
            source: false,
        });
    }
    if let Some(other) = names.iter().find(|n| *n != "_source") {
        return Err(not_supported(&format!("stored_fields [{other}]")));
    }
    Ok(StoredFields {
        id: true,
        source: names.iter().any(|n| n == "_source"),
    })
}

/// `_source`: `true`/`false`, a pattern, a list of patterns, or `{includes, excludes}`.
fn parse_source(value: &Value) -> Result<SourceSpec> {
    let mut spec = SourceSpec {
        enabled: true,
        includes: Vec::new(),
        excludes: Vec::new(),
    };
    match value {
        Value::Bool(b) => spec.enabled = *b,
        Value::String(_) | Value::Array(_) => spec.includes = string_list(value, "_source")?,
        Value::Object(object) => {
            for (key, v) in object {
                match key.as_str() {
                    "includes" | "include" => spec.includes = string_list(v, key)?,
                    "excludes" | "exclude" => spec.excludes = string_list(v, key)?,
                    _ => {
                        return Err(Error::parsing(format!(
                            "Unknown key for a {} in [{key}].",
                            token(v)
                        )))
                    }
                }
            }
        }
        other => {
            return Err(Error::parsing(format!(
                "Expected one of [VALUE_BOOLEAN, VALUE_STRING, START_ARRAY, START_OBJECT] but found [{}]",
                token(other)
            )))
        }
    }
    Ok(spec)
}

fn parse_order(value: &Value) -> Result<bool> {
    match value.as_str().map(str::to_ascii_lowercase).as_deref() {
        Some("asc") => Ok(true),
        Some("desc") => Ok(false),
        _ => Err(Error::illegal_argument(format!(
            "Unknown SortOrder [{}]",
            value
                .as_str()
                .map_or_else(|| value.to_string(), String::from)
        ))),
    }
}

fn sort_of(name: &str, asc: Option<bool>) -> HitSort {
    match name {
        "_score" => HitSort::Score {
            asc: asc.unwrap_or(false),
        },
        "_doc" => HitSort::Doc {
            asc: asc.unwrap_or(true),
        },
        field => HitSort::Field {
            field: field.to_string(),
            asc: asc.unwrap_or(true),
            missing: SortMissing::Last,
            mode: None,
            unmapped_type: None,
        },
    }
}

/// `sort`: `"field"`, `{"field": "desc"}`, `{"field": {"order": ..., ...}}`, or a list.
fn parse_sort(value: &Value) -> Result<Vec<HitSort>> {
    let items: Vec<&Value> = match value {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    let mut out = Vec::new();
    for item in items {
        match item {
            Value::String(name) => out.push(sort_of(name, None)),
            Value::Object(map) => {
                for (name, spec) in map {
                    match spec {
                        Value::String(_) => out.push(sort_of(name, Some(parse_order(spec)?))),
                        Value::Object(options) => {
                            let mut sort = sort_of(name, None);
                            for (key, v) in options {
                                match (key.as_str(), &mut sort) {
                                    (
                                        "order",
                                        HitSort::Score { asc }
                                        | HitSort::Doc { asc }
                                        | HitSort::Field { asc, .. },
                                    ) => *asc = parse_order(v)?,
                                    ("missing", HitSort::Field { missing, .. }) => {
                                        *missing = match v.as_str() {
                                            Some("_last") => SortMissing::Last,
                                            Some("_first") => SortMissing::First,
                                            _ => SortMissing::Value(v.clone()),
                                        }
                                    }
                                    ("mode", HitSort::Field { mode, .. }) => {
                                        *mode = Some(match v.as_str().unwrap_or_default() {
                                            "min" => SortMode::Min,
                                            "max" => SortMode::Max,
                                            "sum" => SortMode::Sum,
                                            "avg" => SortMode::Avg,
                                            "median" => SortMode::Median,
                                            other => {
                                                return Err(Error::illegal_argument(format!(
                                                    "Unknown SortMode [{other}]"
                                                )))
                                            }
                                        })
                                    }
                                    ("unmapped_type", HitSort::Field { unmapped_type, .. }) => {
                                        *unmapped_type = v.as_str().map(String::from)
                                    }
                                    (
                                        "format" | "numeric_type" | "nested",
                                        HitSort::Field { .. },
                                    ) => return Err(not_supported(&format!("sort.{key}"))),
                                    _ => {
                                        let sort_type = match sort {
                                            HitSort::Score { .. } => "_score",
                                            HitSort::Doc { .. } => "_doc",
                                            HitSort::Field { .. } => "field_sort",
                                        };
                                        return Err(Error::x_content_parse(format!(
                                            "[{sort_type}] unknown field [{key}]"
                                        )));
                                    }
                                }
                            }
                            out.push(sort);
                        }
                        other => {
                            return Err(Error::parsing(format!(
                                "expected string or object for the sort of [{name}], but got [{}]",
                                token(other)
                            )))
                        }
                    }
                }
            }
            other => {
                return Err(Error::parsing(format!(
                    "expected string or object in [sort], but got [{}]",
                    token(other)
                )))
            }
        }
    }
    Ok(out)
}

// ---- sort values ----

/// One sort value of a hit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum SortKey {
    /// long, integer, date, boolean (missing: the extreme long), `_doc`.
    Long(i64),
    /// double, scaled_float (missing: ±infinity).
    Double(f64),
    /// float, half_float: shown with float precision.
    Float(f32),
    /// keyword; `None` when missing.
    Text(Option<String>),
    /// ip; `None` when missing.
    Ip(Option<u128>),
    Score(f32),
}

impl SortKey {
    fn to_json(&self) -> Value {
        match self {
            SortKey::Long(n) => json!(n),
            SortKey::Double(f) => json_double(*f),
            SortKey::Float(f) | SortKey::Score(f) => float_json(*f),
            SortKey::Text(t) => t.as_ref().map_or(Value::Null, |t| json!(t)),
            SortKey::Ip(ip) => ip.map_or(Value::Null, |ip| json!(ip_to_string(Ipv6Addr::from(ip)))),
        }
    }
}

/// A float with Java's float precision (`-4.9402733`, not its double expansion).
fn float_json(f: f32) -> Value {
    if !f.is_finite() {
        return json_double(f as f64);
    }
    format!("{f:?}")
        .parse::<serde_json::Number>()
        .map(Value::Number)
        .unwrap_or_else(|_| json!(f as f64))
}

/// Compares two keys of one sort field in ascending order (missing text/ip values last).
fn compare_ascending(a: &SortKey, b: &SortKey) -> Ordering {
    match (a, b) {
        (SortKey::Long(a), SortKey::Long(b)) => a.cmp(b),
        (SortKey::Double(a), SortKey::Double(b)) => a.total_cmp(b),
        (SortKey::Float(a), SortKey::Float(b)) | (SortKey::Score(a), SortKey::Score(b)) => {
            a.total_cmp(b)
        }
        (SortKey::Text(a), SortKey::Text(b)) => a.cmp(b),
        (SortKey::Ip(a), SortKey::Ip(b)) => a.cmp(b),
        _ => Ordering::Equal,
    }
}

/// The order of two hits under `sort` (then shard, then index order).
fn compare_hits(sort: &[HitSort], a: &HitKey, b: &HitKey) -> Ordering {
    for (i, spec) in sort.iter().enumerate() {
        let (Some(ka), Some(kb)) = (a.keys.get(i), b.keys.get(i)) else {
            continue;
        };
        let (asc, first) = match spec {
            HitSort::Score { asc } | HitSort::Doc { asc } => (*asc, false),
            HitSort::Field { asc, missing, .. } => (*asc, *missing == SortMissing::First),
        };
        let missing = |k: &SortKey| matches!(k, SortKey::Text(None) | SortKey::Ip(None));
        let ordering = match (missing(ka), missing(kb)) {
            (true, true) => Ordering::Equal,
            (true, false) if first => Ordering::Less,
            (true, false) => Ordering::Greater,
            (false, true) if first => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ if asc => compare_ascending(ka, kb),
            _ => compare_ascending(kb, ka),
        };
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    (a.shard, a.segment_rank, a.doc).cmp(&(b.shard, b.segment_rank, b.doc))
}

/// Where a hit stands: its sort values and its place in index order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HitKey {
    pub keys: Vec<SortKey>,
    pub shard: u32,
    pub segment_rank: u32,
    pub doc: DocId,
}

// ---- collection ----

/// A sort field resolved against the shard.
#[derive(Clone)]
enum ResolvedSort {
    Score,
    /// `_doc`: the doc's position in index order.
    Doc,
    Numeric {
        source: ValueSource,
        /// Read as exact longs (long, date, boolean).
        long: bool,
        float: bool,
        mode: SortMode,
        missing: f64,
    },
    Keyword {
        source: ValueSource,
        mode: SortMode,
        missing: Option<String>,
    },
    Ip {
        source: ValueSource,
        mode: SortMode,
        missing: Option<u128>,
    },
}

fn resolve_sort(spec: &HitSort, ctx: &AggContext) -> Result<ResolvedSort> {
    let HitSort::Field {
        field,
        asc,
        missing,
        mode,
        unmapped_type,
    } = spec
    else {
        return Ok(match spec {
            HitSort::Doc { .. } => ResolvedSort::Doc,
            _ => ResolvedSort::Score,
        });
    };
    let mut source = ValueSource::resolve(ctx.table, field, "sort", crate::values::Accepts::Any)
        .map_err(|e| {
            if e.reason().starts_with("Field [") {
                Error::illegal_argument(format!(
                    "can't sort on field [{field}] of type [{}]",
                    ValueSource::field_type_of(ctx.table, field)
                        .map(|t| t.name().to_string())
                        .unwrap_or_default()
                ))
            } else {
                e
            }
        })?;
    let mut field_type = ValueSource::field_type_of(ctx.table, field);
    if source == ValueSource::Unmapped {
        let Some(unmapped) = unmapped_type else {
            return Err(Error::query_shard(
                ctx.index,
                format!("No mapping found for [{field}] in order to sort on"),
            ));
        };
        let as_type = FieldType::parse(unmapped, field).map_err(|_| {
            Error::illegal_argument(format!("No mapper found for type [{unmapped}]"))
        })?;
        field_type = Some(as_type);
        // an unmapped field has no values: only its type (how missing values show) matters
        source = match as_type.name() {
            "keyword" | "text" | "match_only_text" => ValueSource::Unmapped,
            "ip" => ValueSource::Unmapped,
            _ => ValueSource::Numeric {
                path: field.clone(),
                kind: match as_type.name() {
                    "double" | "float" | "half_float" | "scaled_float" => NumericKind::Double,
                    _ => NumericKind::Long,
                },
            },
        };
    }
    let type_name = field_type.map(|t| t.name()).unwrap_or("keyword");
    let mode = mode.unwrap_or(if *asc { SortMode::Min } else { SortMode::Max });
    let text = value_text;
    Ok(match (&source, type_name) {
        (ValueSource::Numeric { kind, .. }, _) => {
            let long = matches!(
                kind,
                NumericKind::Long | NumericKind::Date(_) | NumericKind::Boolean
            );
            let missing = match missing {
                // OpenSearch reads a numeric sort's missing value as a number (dates too)
                SortMissing::Value(v) => match v {
                    Value::Number(n) => n.as_f64().unwrap_or(0.0),
                    Value::Bool(b) => *b as i64 as f64,
                    other => {
                        let text = text(other);
                        text.trim().parse::<f64>().map_err(|_| {
                            Error::new(
                                "number_format_exception",
                                400,
                                format!("For input string: \"{text}\""),
                            )
                        })?
                    }
                },
                // the extreme value in the direction that puts the doc where it belongs
                SortMissing::Last if *asc => f64::INFINITY,
                SortMissing::Last => f64::NEG_INFINITY,
                SortMissing::First if *asc => f64::NEG_INFINITY,
                SortMissing::First => f64::INFINITY,
            };
            ResolvedSort::Numeric {
                source,
                long,
                float: matches!(type_name, "float" | "half_float"),
                mode,
                missing,
            }
        }
        (_, "ip") => {
            let missing = match missing {
                SortMissing::Value(v) => {
                    let s = text(v);
                    let ip: std::net::IpAddr = s.parse().map_err(|_| {
                        Error::illegal_argument(format!("'{s}' is not an IP string literal."))
                    })?;
                    let v6 = match ip {
                        std::net::IpAddr::V4(v4) => v4.to_ipv6_mapped(),
                        std::net::IpAddr::V6(v6) => v6,
                    };
                    Some(u128::from(v6))
                }
                _ => None,
            };
            ResolvedSort::Ip {
                source,
                mode,
                missing,
            }
        }
        _ => ResolvedSort::Keyword {
            source,
            mode,
            missing: match missing {
                SortMissing::Value(v) => Some(text(v)),
                _ => None,
            },
        },
    })
}

/// Index order of a shard's segments (by their first sequence number, as shards order them),
/// and the first doc of each segment in that order.
fn segment_order(searcher: &tantivy::Searcher) -> (Vec<u32>, Vec<u64>) {
    let readers = searcher.segment_readers();
    let first_seq_no: Vec<u64> = readers
        .iter()
        .map(|segment| {
            segment
                .fast_fields()
                .column_opt::<u64>(SEQ_NO_FIELD)
                .ok()
                .flatten()
                .map(|column| column.min_value())
                .unwrap_or(u64::MAX)
        })
        .collect();
    let mut order: Vec<u32> = (0..readers.len() as u32).collect();
    order.sort_by_key(|&ord| (first_seq_no[ord as usize], ord));
    let mut ranks = vec![0u32; readers.len()];
    let mut bases = vec![0u64; readers.len()];
    let mut next = 0u64;
    for (rank, &ord) in order.iter().enumerate() {
        ranks[ord as usize] = rank as u32;
        bases[ord as usize] = next;
        next += readers[ord as usize].max_doc() as u64;
    }
    (ranks, bases)
}

struct Shared {
    request: TopHitsRequest,
    /// Under a `nested` aggregation: the levels of its path (hits are nested objects).
    nested: Option<NestedLevels>,
    /// The score of a document the slice gave no score for (see the module doc).
    score: f32,
    sorts: Vec<ResolvedSort>,
    index: String,
    shard: u32,
    ranks: Vec<u32>,
    bases: Vec<u64>,
}

struct TopHitsFactory {
    shared: Arc<Shared>,
}

/// `scope`: the nested path of the documents collected (`None`: root documents).
pub fn factory(
    request: &AggRequest,
    top: &TopHitsRequest,
    ctx: &AggContext,
    scope: Option<&str>,
) -> Result<Box<dyn Factory>> {
    let window = top.window();
    if window > ctx.max_inner_result_window {
        return Err(Error::illegal_argument(format!(
            "Top hits result window is too large, the top hits aggregator [{}]'s from + size must be less than or equal to: [{}] but was [{window}]. This limit can be set by changing the [index.max_inner_result_window] index level setting.",
            request.name, ctx.max_inner_result_window
        )));
    }
    if window == 0 {
        return Err(Error::illegal_argument(
            "numHits must be > 0; please use TotalHitCountCollectorManager if you just need the total hit count",
        ));
    }
    let sorts = top
        .ordering()
        .iter()
        .map(|s| resolve_sort(s, ctx))
        .collect::<Result<Vec<_>>>()?;
    let (ranks, bases) = segment_order(ctx.searcher);
    Ok(Box::new(TopHitsFactory {
        shared: Arc::new(Shared {
            request: top.clone(),
            // a path this index does not map has no objects (the `nested` bucket is empty)
            nested: scope
                .filter(|path| ctx.table.nested_path(path).is_some())
                .map(|path| NestedLevels::of(ctx.table, Some(path)))
                .transpose()?,
            score: ctx.constant_score.unwrap_or(1.0),
            sorts,
            index: ctx.index.to_string(),
            shard: ctx.shard_index,
            ranks,
            bases,
        }),
    }))
}

impl TopHitsFactory {
    fn make(&self, scores: Option<BlockScores>) -> Box<dyn Collector> {
        Box::new(TopHitsCollector {
            shared: self.shared.clone(),
            scores,
            current: None,
            readers: Vec::new(),
            buckets: Vec::new(),
            keys: Vec::new(),
            doc_scores: Vec::new(),
            looked_up: Vec::new(),
            scratch: Vec::new(),
            text: String::new(),
            segments: Vec::new(),
            roots: None,
            root_docs: Vec::new(),
        })
    }
}

impl Factory for TopHitsFactory {
    fn collector(&self, _subs: SubCollectors, _single_parent: bool) -> Result<Box<dyn Collector>> {
        Ok(self.make(None))
    }

    fn scored_collector(
        &self,
        _subs: SubCollectors,
        _single_parent: bool,
        scores: &BlockScores,
    ) -> Result<Box<dyn Collector>> {
        let wanted = self.shared.request.uses_scores();
        Ok(self.make(wanted.then(|| scores.clone())))
    }
}

/// A sort field's column in the current segment.
enum SortColumn {
    Constant,
    Doc,
    Numeric(NumericValues),
    Keyword(KeywordValues),
    Ip(IpValues),
}

/// One bucket's best documents so far (at most `2k` between trims).
struct Bucket {
    total: u64,
    /// The best score of the bucket's documents (NaN before the first).
    max_score: f32,
    /// The hit, its segment and its score.
    candidates: Vec<(HitKey, u32, f32)>,
}

impl Default for Bucket {
    fn default() -> Self {
        Bucket {
            total: 0,
            max_score: f32::NAN,
            candidates: Vec::new(),
        }
    }
}

struct TopHitsCollector {
    shared: Arc<Shared>,
    /// The scores of the slice's current block, under a scored query.
    scores: Option<BlockScores>,
    current: Option<u32>,
    readers: Vec<SortColumn>,
    buckets: Vec<Bucket>,
    /// Sort values of the current block, per position.
    keys: Vec<Vec<SortKey>>,
    /// Scores of the current block, per position.
    doc_scores: Vec<f32>,
    looked_up: Vec<Option<f32>>,
    scratch: Vec<(usize, f64)>,
    text: String,
    /// Under a `nested` aggregation: the segments seen, by ordinal (to find the hits' places
    /// when the bucket is built), the current segment's root documents, and scratch.
    segments: Vec<Option<SegmentReader>>,
    roots: Option<Arc<DocBits>>,
    root_docs: Vec<DocId>,
}

fn pick(values: &mut [f64], mode: SortMode, long: bool) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    Some(match mode {
        SortMode::Min => values.iter().copied().fold(f64::INFINITY, f64::min),
        SortMode::Max => values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        SortMode::Sum => values.iter().sum(),
        SortMode::Avg => {
            let avg = values.iter().sum::<f64>() / values.len() as f64;
            if long {
                avg.round()
            } else {
                avg
            }
        }
        SortMode::Median => {
            values.sort_by(f64::total_cmp);
            let n = values.len();
            let median = if n % 2 == 1 {
                values[n / 2]
            } else {
                (values[n / 2 - 1] + values[n / 2]) / 2.0
            };
            if long {
                median.round()
            } else {
                median
            }
        }
    })
}

impl TopHitsCollector {
    /// Fills `self.doc_scores` with the score of each doc of the block.
    fn block_scores(&mut self, docs: &[DocId]) {
        let score = self.shared.score;
        self.doc_scores.clear();
        match &self.scores {
            // a nested object scores as its root document
            Some(scores) if self.roots.is_some() => {
                let roots = self.roots.as_ref().expect("checked");
                self.root_docs.clear();
                self.root_docs
                    .extend(docs.iter().map(|&doc| roots.next_set(doc)));
                scores.read(&self.root_docs, &mut self.looked_up);
                self.doc_scores
                    .extend(self.looked_up.iter().map(|s| s.unwrap_or(score)));
            }
            Some(scores) => {
                scores.read(docs, &mut self.looked_up);
                self.doc_scores
                    .extend(self.looked_up.iter().map(|s| s.unwrap_or(score)));
            }
            None => self.doc_scores.resize(docs.len(), score),
        }
    }

    /// Fills `self.keys` with the sort values of each doc of the block.
    fn block_keys(&mut self, docs: &[DocId]) {
        let shared = self.shared.clone();
        self.keys.clear();
        self.keys.resize_with(docs.len(), Vec::new);
        let segment = self.current.unwrap_or(0);
        for (sort, column) in shared.sorts.iter().zip(&mut self.readers) {
            match (sort, column) {
                (ResolvedSort::Score, _) => {
                    for (k, &score) in self.keys.iter_mut().zip(&self.doc_scores) {
                        k.push(SortKey::Score(score));
                    }
                }
                (_, SortColumn::Constant) => {
                    let missing = match sort {
                        ResolvedSort::Numeric {
                            long,
                            float,
                            missing,
                            ..
                        } => numeric_key(*missing, *long, *float),
                        ResolvedSort::Keyword { missing, .. } => SortKey::Text(missing.clone()),
                        ResolvedSort::Ip { missing, .. } => SortKey::Ip(*missing),
                        ResolvedSort::Score | ResolvedSort::Doc => SortKey::Score(shared.score),
                    };
                    self.keys.iter_mut().for_each(|k| k.push(missing.clone()));
                }
                (ResolvedSort::Doc, _) => {
                    let base = shared.bases.get(segment as usize).copied().unwrap_or(0);
                    for (k, &doc) in self.keys.iter_mut().zip(docs) {
                        k.push(SortKey::Long((base + doc as u64) as i64));
                    }
                }
                (
                    ResolvedSort::Numeric {
                        long,
                        float,
                        mode,
                        missing,
                        ..
                    },
                    SortColumn::Numeric(values),
                ) => {
                    let scratch = &mut self.scratch;
                    scratch.clear();
                    if *long {
                        values.for_each_i64(docs, |p, v| scratch.push((p, v as f64)));
                    } else {
                        values.for_each_f64(docs, |p, v| scratch.push((p, v)));
                    }
                    let mut j = 0;
                    let mut doc_values = Vec::new();
                    for (position, k) in self.keys.iter_mut().enumerate() {
                        doc_values.clear();
                        while j < scratch.len() && scratch[j].0 == position {
                            doc_values.push(scratch[j].1);
                            j += 1;
                        }
                        let value = pick(&mut doc_values, *mode, *long).unwrap_or(*missing);
                        k.push(numeric_key(value, *long, *float));
                    }
                }
                (ResolvedSort::Keyword { mode, missing, .. }, SortColumn::Keyword(values)) => {
                    let mut ords: Vec<(usize, u64)> = Vec::new();
                    values.for_each_ord(docs, |p, ord| ords.push((p, ord)));
                    let mut j = 0;
                    for (position, k) in self.keys.iter_mut().enumerate() {
                        let mut chosen: Option<u64> = None;
                        while j < ords.len() && ords[j].0 == position {
                            let ord = ords[j].1;
                            chosen = Some(match (chosen, mode) {
                                (None, _) => ord,
                                (Some(c), SortMode::Max) => c.max(ord),
                                (Some(c), _) => c.min(ord),
                            });
                            j += 1;
                        }
                        let key = match chosen {
                            Some(ord) if values.term(ord, &mut self.text).is_ok() => {
                                Some(self.text.clone())
                            }
                            _ => missing.clone(),
                        };
                        k.push(SortKey::Text(key));
                    }
                }
                (ResolvedSort::Ip { mode, missing, .. }, SortColumn::Ip(values)) => {
                    let mut ips: Vec<(usize, u128)> = Vec::new();
                    values.for_each(docs, |p, ip| ips.push((p, u128::from(ip))));
                    let mut j = 0;
                    for (position, k) in self.keys.iter_mut().enumerate() {
                        let mut chosen: Option<u128> = None;
                        while j < ips.len() && ips[j].0 == position {
                            let ip = ips[j].1;
                            chosen = Some(match (chosen, mode) {
                                (None, _) => ip,
                                (Some(c), SortMode::Max) => c.max(ip),
                                (Some(c), _) => c.min(ip),
                            });
                            j += 1;
                        }
                        k.push(SortKey::Ip(chosen.or(*missing)));
                    }
                }
                _ => self
                    .keys
                    .iter_mut()
                    .for_each(|k| k.push(SortKey::Score(1.0))),
            }
        }
    }
}

fn numeric_key(value: f64, long: bool, float: bool) -> SortKey {
    if long {
        SortKey::Long(if value == f64::INFINITY {
            i64::MAX
        } else if value == f64::NEG_INFINITY {
            i64::MIN
        } else {
            value as i64
        })
    } else if float {
        SortKey::Float(value as f32)
    } else {
        SortKey::Double(value)
    }
}

fn read_u64(reader: &SegmentReader, field: &str, doc: DocId) -> Option<u64> {
    reader
        .fast_fields()
        .u64(field)
        .ok()
        .and_then(|column| column.first(doc))
}

impl Collector for TopHitsCollector {
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        self.current = Some(segment.segment_ord);
        if let Some(levels) = &self.shared.nested {
            self.roots = Some(levels.roots(segment.reader)?);
            let ord = segment.segment_ord as usize;
            if self.segments.len() <= ord {
                self.segments.resize(ord + 1, None);
            }
            self.segments[ord] = Some(segment.reader.clone());
        }
        self.readers.clear();
        for sort in &self.shared.sorts {
            let column = match sort {
                ResolvedSort::Score => SortColumn::Constant,
                ResolvedSort::Doc => SortColumn::Doc,
                ResolvedSort::Numeric { source, .. } => {
                    SortColumn::Numeric(NumericValues::open(source, segment.reader)?)
                }
                ResolvedSort::Keyword { source, .. } => match source {
                    ValueSource::Keyword { .. } => {
                        SortColumn::Keyword(KeywordValues::open(source, segment.reader)?)
                    }
                    _ => SortColumn::Constant,
                },
                ResolvedSort::Ip { source, .. } => match source {
                    ValueSource::Ip { .. } => {
                        SortColumn::Ip(IpValues::open(source, segment.reader)?)
                    }
                    _ => SortColumn::Constant,
                },
            };
            self.readers.push(column);
        }
        Ok(())
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        let Some(segment_ord) = self.current else {
            return;
        };
        self.block_scores(docs);
        self.block_keys(docs);
        let shared = self.shared.clone();
        let segment_rank = shared.ranks.get(segment_ord as usize).copied().unwrap_or(0);
        let k = shared.request.window();
        let sort = shared.request.ordering();
        for (position, &doc) in docs.iter().enumerate() {
            let parent = parents[position] as usize;
            if parent >= self.buckets.len() {
                self.buckets.resize_with(parent + 1, Bucket::default);
            }
            let bucket = &mut self.buckets[parent];
            bucket.total += 1;
            let score = self.doc_scores[position];
            bucket.max_score = bucket.max_score.max(score);
            let key = HitKey {
                keys: std::mem::take(&mut self.keys[position]),
                shard: shared.shard,
                segment_rank,
                doc,
            };
            bucket.candidates.push((key, segment_ord, score));
            if bucket.candidates.len() >= k.max(16).saturating_mul(2) {
                bucket
                    .candidates
                    .sort_by(|a, b| compare_hits(sort, &a.0, &b.0));
                bucket.candidates.truncate(k);
            }
        }
    }

    fn build(&mut self, parent: u32) -> Result<InternalAgg> {
        let shared = self.shared.clone();
        let request = &shared.request;
        let sort = request.ordering();
        let Some(bucket) = self.buckets.get_mut(parent as usize) else {
            return Ok(InternalAgg::TopHits(InternalTopHits::default()));
        };
        let max_score = bucket.max_score;
        bucket
            .candidates
            .sort_by(|a, b| compare_hits(sort, &a.0, &b.0));
        bucket.candidates.truncate(request.window());
        let total = bucket.total;
        // documents are read once the shard has trimmed its buckets (`finish_shard`)
        let mut hits = Vec::with_capacity(bucket.candidates.len());
        for (key, segment_ord, score) in &bucket.candidates {
            let nested = match &shared.nested {
                None => None,
                Some(levels) => {
                    let reader = self
                        .segments
                        .get(*segment_ord as usize)
                        .and_then(Option::as_ref)
                        .ok_or_else(|| Error::illegal_state("top_hits hit in an unseen segment"))?;
                    Some(NestedHit {
                        identity: levels.identity(reader, key.doc)?,
                        root: levels.roots(reader)?.next_set(key.doc),
                    })
                }
            };
            hits.push(TopHit {
                key: key.clone(),
                segment_ord: *segment_ord,
                score: *score,
                index: shared.index.clone(),
                loaded: false,
                nested,
                id: None,
                source: None,
                version: None,
                seq_no: None,
                primary_term: None,
            });
        }
        Ok(InternalAgg::TopHits(InternalTopHits {
            total,
            max_score,
            hits,
        }))
    }
}

/// Reads `_id`, `_source` and the asked-for metadata of hits from the shard's segments.
fn load_hits(
    hits: &mut [TopHit],
    request: &TopHitsRequest,
    searcher: &tantivy::Searcher,
) -> Result<()> {
    let schema = searcher.schema();
    let field = |name: &str| {
        schema
            .get_field(name)
            .map_err(|e| Error::internal(format!("find the {name} field"), e))
    };
    let (id_field, source_field) = (field(ID_FIELD)?, field(SOURCE_FIELD)?);
    let filter = SourceFilter::new(
        request.source.includes.clone(),
        request.source.excludes.clone(),
    );
    let mut stores: Vec<(u32, StoreReader)> = Vec::new();
    for hit in hits.iter_mut().filter(|h| !h.loaded) {
        let segment_ord = hit.segment_ord;
        if segment_ord as usize >= searcher.segment_readers().len() {
            return Err(Error::illegal_state("top_hits hit in an unknown segment"));
        }
        let reader = searcher.segment_reader(segment_ord);
        let position = match stores.iter().position(|(ord, _)| *ord == segment_ord) {
            Some(position) => position,
            None => {
                let store = reader
                    .get_store_reader(1)
                    .map_err(|e| Error::internal("open a stored-fields reader", e))?;
                stores.push((segment_ord, store));
                stores.len() - 1
            }
        };
        // a nested object's document is its root's
        let doc = hit.nested.as_ref().map_or(hit.key.doc, |n| n.root);
        let document: TantivyDocument = stores[position]
            .1
            .get(doc)
            .map_err(|e| Error::internal("read a stored document", e))?;
        if request.stored.id {
            hit.id = document
                .get_first(id_field)
                .and_then(|v| v.as_str())
                .map(String::from);
        }
        if request.source.enabled && request.stored.source {
            if let Some(bytes) = document.get_first(source_field).and_then(|v| v.as_bytes()) {
                hit.source = Some(match &hit.nested {
                    None => filtered_source(bytes, &filter)?,
                    Some(nested) => nested_source(bytes, &nested.identity, &filter)?,
                });
            }
        }
        if request.version {
            hit.version = read_u64(reader, VERSION_FIELD, doc);
        }
        if request.seq_no_primary_term {
            hit.seq_no = read_u64(reader, SEQ_NO_FIELD, doc);
            hit.primary_term = read_u64(reader, PRIMARY_TERM_FIELD, doc);
        }
        hit.loaded = true;
    }
    Ok(())
}

/// The `_source` text, filtered when `includes`/`excludes` ask for it.
fn filtered_source(bytes: &[u8], filter: &SourceFilter) -> Result<String> {
    let text = std::str::from_utf8(bytes).map_err(|e| Error::internal("read _source", e))?;
    if filter.is_noop() {
        return Ok(text.trim().to_string());
    }
    let value: Value =
        serde_json::from_str(text).map_err(|e| Error::internal("parse _source", e))?;
    Ok(filter.apply(&value).to_string())
}

/// A nested object's `_source`: the object in its root's source, filtered by full path.
fn nested_source(bytes: &[u8], identity: &NestedIdentity, filter: &SourceFilter) -> Result<String> {
    let root: Value =
        serde_json::from_slice(bytes).map_err(|e| Error::internal("parse _source", e))?;
    Ok(identity
        .filtered_object(&root, &identity.path(), filter)
        .unwrap_or_else(|| json!({}))
        .to_string())
}

// ---- intermediate result ----

/// Where a nested hit's object sits.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NestedHit {
    pub identity: NestedIdentity,
    /// The root document holding the object (in the hit's segment).
    pub root: DocId,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TopHit {
    pub key: HitKey,
    /// The segment holding the document, in the shard's searcher.
    pub segment_ord: u32,
    pub score: f32,
    /// Whether `_id`, `_source` and metadata have been read (on the shard, once trimmed).
    pub loaded: bool,
    pub index: String,
    /// Under a `nested` aggregation, the nested object the hit is.
    pub nested: Option<NestedHit>,
    pub id: Option<String>,
    /// The (filtered) `_source` as JSON text.
    pub source: Option<String>,
    pub version: Option<u64>,
    pub seq_no: Option<u64>,
    pub primary_term: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InternalTopHits {
    /// Documents in the bucket.
    pub total: u64,
    /// The best score in the bucket (NaN when it is empty).
    pub max_score: f32,
    /// The best `from + size` hits, best first.
    pub hits: Vec<TopHit>,
}

impl Default for InternalTopHits {
    fn default() -> Self {
        InternalTopHits {
            total: 0,
            max_score: f32::NAN,
            hits: Vec::new(),
        }
    }
}

fn request_of(request: &AggRequest) -> Result<&TopHitsRequest> {
    match &request.kind {
        AggKind::TopHits(t) => Ok(t),
        _ => Err(Error::illegal_state("top_hits result for another request")),
    }
}

impl InternalTopHits {
    pub fn reduce(parts: Vec<InternalTopHits>, request: &AggRequest) -> Result<InternalTopHits> {
        let top = request_of(request)?;
        let sort = top.ordering();
        let total = parts.iter().map(|p| p.total).sum();
        let max_score = parts.iter().map(|p| p.max_score).fold(f32::NAN, f32::max);
        let mut hits: Vec<TopHit> = parts.into_iter().flat_map(|p| p.hits).collect();
        hits.sort_by(|a, b| compare_hits(sort, &a.key, &b.key));
        hits.truncate(top.window());
        Ok(InternalTopHits {
            total,
            max_score,
            hits,
        })
    }

    /// Reads the documents of the hits that made it through the shard's trimming.
    pub fn finish_shard(&mut self, request: &AggRequest, ctx: &ShardFinish) -> Result<()> {
        let top = request_of(request)?;
        if self.hits.iter().all(|h| h.loaded) {
            return Ok(());
        }
        let Some(searcher) = ctx.searcher else {
            return Err(Error::illegal_state(
                "top_hits needs the shard's searcher to read its hits",
            ));
        };
        load_hits(&mut self.hits, top, searcher)
    }

    pub fn render(self, request: &AggRequest) -> Result<Map<String, Value>> {
        let top = request_of(request)?;
        if self.hits.iter().any(|h| !h.loaded) {
            return Err(Error::illegal_state(
                "top_hits result was not finished on its shard",
            ));
        }
        let by_score = top.by_score();
        let scores = by_score || top.track_scores;
        let max_score = if scores && !self.max_score.is_nan() {
            float_json(self.max_score)
        } else {
            Value::Null
        };
        let mut hits = Vec::new();
        for hit in self.hits.into_iter().skip(top.from).take(top.size) {
            let mut out = Map::new();
            out.insert("_index".into(), json!(hit.index));
            if let Some(id) = hit.id {
                out.insert("_id".into(), json!(id));
            }
            if let Some(nested) = &hit.nested {
                out.insert("_nested".into(), nested.identity.render());
            }
            if let Some(version) = hit.version {
                out.insert("_version".into(), json!(version));
            }
            if let (Some(seq_no), Some(primary_term)) = (hit.seq_no, hit.primary_term) {
                out.insert("_seq_no".into(), json!(seq_no));
                out.insert("_primary_term".into(), json!(primary_term));
            }
            out.insert(
                "_score".into(),
                if scores {
                    float_json(hit.score)
                } else {
                    Value::Null
                },
            );
            if let Some(source) = hit.source {
                let value: Value = serde_json::from_str(&source)
                    .map_err(|e| Error::internal("parse a top hit's _source", e))?;
                out.insert("_source".into(), value);
            }
            if !by_score {
                out.insert(
                    "sort".into(),
                    Value::Array(hit.key.keys.iter().map(SortKey::to_json).collect()),
                );
            }
            hits.push(Value::Object(out));
        }
        let mut body = Map::new();
        body.insert(
            "total".into(),
            json!({"value": self.total, "relation": "eq"}),
        );
        body.insert("max_score".into(), max_score);
        body.insert("hits".into(), Value::Array(hits));
        let mut out = Map::new();
        out.insert("hits".into(), Value::Object(body));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::test_support::{mapping, random_docs, render, Rng, TestShard};
    use crate::request::parse_aggregations;

    fn parse_err(body: Value) -> Error {
        parse_aggregations(&json!({"t": {"top_hits": body}})).unwrap_err()
    }

    fn small_shard() -> TestShard {
        TestShard::build(
            &mapping(),
            &[
                vec![
                    json!({"n": 14, "k": "alpha", "f": 1.5, "fl": -4.0614041322576515, "g": "a"}),
                    json!({"k": ["k51", "k95"], "f": 2.5, "b": false, "ip": "10.0.3.97", "g": "b"}),
                ],
                vec![
                    json!({"n": -15, "k": "alpha", "b": true, "ip": "10.0.0.2", "g": "a"}),
                    json!({"n": [251, 415], "k": "beta", "f": 0.25, "g": "b"}),
                ],
            ],
        )
    }

    #[test]
    fn parse_errors_match_opensearch() {
        let e = parse_err(json!({"bogus": 1}));
        assert_eq!(e.kind(), "parsing_exception");
        assert_eq!(e.reason(), "Unknown key for a VALUE_NUMBER in [bogus].");
        assert_eq!(
            parse_err(json!({"bogus": {}})).reason(),
            "Unknown key for a START_OBJECT in [bogus]."
        );
        let e = parse_err(json!({"size": -1}));
        assert_eq!(e.kind(), "illegal_argument_exception");
        assert_eq!(
            e.reason(),
            "[size] must be greater than or equal to 0. Found [-1] in [t]"
        );
        assert_eq!(
            parse_err(json!({"from": -1})).reason(),
            "[from] must be greater than or equal to 0. Found [-1] in [t]"
        );
        for option in ["highlight", "docvalue_fields", "script_fields", "fields"] {
            assert!(parse_err(json!({option: {}}))
                .reason()
                .contains("not supported"));
        }
        assert!(parse_err(json!({"explain": true}))
            .reason()
            .contains("not supported"));
        assert!(parse_aggregations(&json!({"t": {"top_hits": {"explain": false}}})).is_ok());
        let e = parse_err(json!({"sort": [{"n": {"order": "up"}}]}));
        assert_eq!(e.reason(), "Unknown SortOrder [up]");
        let e = parse_err(json!({"sort": [{"n": {"bogus": 1}}]}));
        assert_eq!(e.reason(), "[field_sort] unknown field [bogus]");
        let e = parse_aggregations(
            &json!({"t": {"top_hits": {}, "aggs": {"x": {"max": {"field": "n"}}}}}),
        )
        .unwrap_err();
        assert_eq!(
            e.reason(),
            "Aggregator [t] of type [top_hits] cannot accept sub-aggregations"
        );
    }

    #[test]
    fn sources_and_sort_options_parse() {
        let r = parse_aggregations(&json!({"t": {"top_hits": {
            "_source": {"include": ["a"], "excludes": "b"}, "sort": ["_score"], "size": "2"}}}))
        .unwrap();
        let AggKind::TopHits(t) = &r[0].kind else {
            panic!()
        };
        assert_eq!(t.source.includes, vec!["a"]);
        assert_eq!(t.source.excludes, vec!["b"]);
        assert!(t.by_score());
        assert_eq!(t.size, 2);
        let r = parse_aggregations(&json!({"t": {"top_hits": {"_source": "n",
            "sort": {"n": {"order": "desc", "mode": "min", "missing": "_first"}}}}}))
        .unwrap();
        let AggKind::TopHits(t) = &r[0].kind else {
            panic!()
        };
        assert_eq!(t.source.includes, vec!["n"]);
        assert_eq!(
            t.sort,
            vec![HitSort::Field {
                field: "n".into(),
                asc: false,
                missing: SortMissing::First,
                mode: Some(SortMode::Min),
                unmapped_type: None
            }]
        );
        assert!(!t.by_score());
    }

    /// The shapes OpenSearch 2.19.6 returns under `match_all`.
    #[test]
    fn default_hits_come_in_index_order_with_score_one() {
        let out = small_shard()
            .render(&json!({"t": {"top_hits": {"size": 2}}}))
            .unwrap();
        assert_eq!(
            out["t"],
            json!({"hits": {"total": {"value": 4, "relation": "eq"}, "max_score": 1.0, "hits": [
                {"_index": "idx", "_id": "0", "_score": 1.0, "_source":
                    {"n": 14, "k": "alpha", "f": 1.5, "fl": -4.0614041322576515, "g": "a"}},
                {"_index": "idx", "_id": "1", "_score": 1.0, "_source":
                    {"k": ["k51", "k95"], "f": 2.5, "b": false, "ip": "10.0.3.97", "g": "b"}}
            ]}})
        );
        let out = small_shard()
            .render(
                &json!({"t": {"top_hits": {"size": 1, "from": 3, "version": true,
                "seq_no_primary_term": true, "_source": false}}}),
            )
            .unwrap();
        assert_eq!(
            out["t"]["hits"]["hits"],
            json!([{"_index": "idx", "_id": "3", "_version": 1, "_seq_no": 3,
                "_primary_term": 1, "_score": 1.0}])
        );
    }

    #[test]
    fn field_sorts_show_values_and_missing_placeholders() {
        let shard = small_shard();
        let hits = |sort: Value| {
            let out = shard
                .render(&json!({"t": {"top_hits": {"size": 4, "sort": sort, "_source": false}}}))
                .unwrap();
            assert_eq!(out["t"]["hits"]["max_score"], Value::Null);
            out["t"]["hits"]["hits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| {
                    assert_eq!(h["_score"], Value::Null);
                    (h["_id"].as_str().unwrap().to_string(), h["sort"].clone())
                })
                .collect::<Vec<_>>()
        };
        let ids = |v: &[(String, Value)]| v.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>();
        // multi-valued: desc uses the max (415), asc the min (251); missing sorts last
        let desc = hits(json!([{"n": "desc"}]));
        assert_eq!(ids(&desc), ["3", "0", "2", "1"]);
        assert_eq!(desc[0].1, json!([415]));
        assert_eq!(desc[3].1, json!([i64::MIN]));
        let asc = hits(json!([{"n": "asc"}]));
        assert_eq!(ids(&asc), ["2", "0", "3", "1"]);
        assert_eq!(asc[3].1, json!([i64::MAX]));
        let first = hits(json!([{"n": {"order": "asc", "missing": "_first"}}]));
        assert_eq!(first[0], ("1".to_string(), json!([i64::MIN])));
        let given = hits(json!([{"n": {"order": "asc", "missing": 0}}]));
        assert_eq!(ids(&given), ["2", "1", "0", "3"]);
        // keywords, then a tie broken by index order; the score is 1.0 for everyone
        let kw = hits(json!([{"k": "asc"}, "_score"]));
        assert_eq!(kw[0], ("0".to_string(), json!(["alpha", 1.0])));
        assert_eq!(kw[1], ("2".to_string(), json!(["alpha", 1.0])));
        assert_eq!(kw[3], ("1".to_string(), json!(["k51", 1.0])));
        // floats keep float precision; doubles are missing as -Infinity when descending
        let fl = hits(json!([{"fl": "desc"}]));
        assert_eq!(fl[0].1, json!([-4.061404]));
        assert_eq!(fl[1].1, json!(["-Infinity"]));
        let f = hits(json!({"f": "desc"}));
        assert_eq!(ids(&f), ["1", "0", "3", "2"]);
        let ip = hits(json!([{"ip": "asc"}]));
        assert_eq!(ip[0].1, json!(["10.0.0.2"]));
        assert_eq!(ip[2].1, json!([null]));
        let b = hits(json!([{"b": "desc"}, {"_doc": "desc"}]));
        assert_eq!(b[0], ("2".to_string(), json!([1, 2])));
        let e = shard
            .render(&json!({"t": {"top_hits": {"sort": [{"n": {"missing": "2015-01-01"}}]}}}))
            .unwrap_err();
        assert_eq!(e.kind(), "number_format_exception");
        let unmapped = hits(json!([{"nope": {"unmapped_type": "long"}}]));
        assert_eq!(unmapped[0], ("0".to_string(), json!([i64::MAX])));
    }

    /// Under a scored query hits rank by the scores the slice hands over, best first, ties in
    /// index order; a `global` bucket's documents were not scored by the query and show 1.0.
    #[test]
    fn scored_queries_rank_hits_by_score_whatever_the_slicing() {
        let shard = small_shard();
        // by (segment in index order, doc): "0" 0.5, "1" 2.0, "2" 1.0, "3" 2.0
        let score = |segment_ord: u32, doc: u32| {
            let rank = shard.order.iter().position(|&o| o == segment_ord).unwrap();
            [[0.5, 2.0], [1.0, 2.0]][rank][doc as usize]
        };
        let aggs = json!({
            "best": {"top_hits": {"size": 3, "_source": false}},
            "g": {"terms": {"field": "g"}, "aggs": {"t": {"top_hits": {"_source": false}}}},
            "by_n": {"top_hits": {"size": 1, "_source": false, "sort": [{"n": "asc"}],
                "track_scores": true}},
            "all": {"global": {}, "aggs": {"t": {"top_hits": {"size": 1, "_source": false}}}}
        });
        let render_with = |slices: &[Vec<(u32, std::ops::Range<u32>)>], rng: &mut Rng| {
            let result = shard
                .scored_result(&aggs, slices, rng, 1, Some(&score))
                .unwrap();
            Value::Object(render(&aggs, vec![result]).unwrap())
        };
        let out = render_with(&shard.one_slice(), &mut Rng::new(1));
        let hits = |v: &Value| -> Vec<(String, Value)> {
            v["hits"]["hits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| (h["_id"].as_str().unwrap().to_string(), h["_score"].clone()))
                .collect()
        };
        let pair = |id: &str, score: f64| (id.to_string(), json!(score));
        assert_eq!(
            hits(&out["best"]),
            [pair("1", 2.0), pair("3", 2.0), pair("2", 1.0)]
        );
        assert_eq!(out["best"]["hits"]["max_score"], json!(2.0));
        let buckets = out["g"]["buckets"].as_array().unwrap();
        assert_eq!(hits(&buckets[0]["t"]), [pair("2", 1.0), pair("0", 0.5)]);
        assert_eq!(hits(&buckets[1]["t"]), [pair("1", 2.0), pair("3", 2.0)]);
        // sorted by a field, with the scores tracked (n: 14, none, -15, [251, 415])
        assert_eq!(hits(&out["by_n"]), [pair("2", 1.0)]);
        assert_eq!(out["by_n"]["hits"]["max_score"], json!(2.0));
        assert_eq!(hits(&out["all"]["t"]), [pair("0", 1.0)]);
        for round in 0..20 {
            let mut rng = Rng::new(round);
            let slices = shard.random_slices(&mut rng);
            assert_eq!(render_with(&slices, &mut rng), out, "round {round}");
        }
    }

    #[test]
    fn stored_fields_none_drops_id_and_source() {
        let shard = small_shard();
        let out = shard
            .render(
                &json!({"t": {"top_hits": {"size": 1, "stored_fields": "_none_"}},
                "u": {"top_hits": {"size": 1, "stored_fields": [], "version": true}},
                "v": {"top_hits": {"size": 1, "stored_fields": ["_source"]}}}),
            )
            .unwrap();
        assert_eq!(
            out["t"]["hits"]["hits"][0],
            json!({"_index": "idx", "_score": 1.0})
        );
        assert_eq!(
            out["u"]["hits"]["hits"][0],
            json!({"_index": "idx", "_id": "0", "_version": 1, "_score": 1.0})
        );
        assert!(out["v"]["hits"]["hits"][0]["_source"].is_object());
        assert_eq!(
            parse_err(json!({"stored_fields": ["_none_", "n"]})).reason(),
            "cannot combine _none_ with other fields"
        );
        assert_eq!(parse_err(json!({"stored_fields": ["n"]})).status(), 400);
    }

    /// Under a `bool` of filters OpenSearch scores every hit 0.0; an empty bucket has no
    /// max_score (both recorded from OpenSearch 2.19.6).
    #[test]
    fn renders_the_query_constant_score() {
        let request =
            &parse_aggregations(&json!({"t": {"top_hits": {"size": 1, "_source": false}}}))
                .unwrap()[0];
        let hits = InternalTopHits {
            total: 271,
            max_score: 0.0,
            hits: vec![TopHit {
                key: HitKey {
                    keys: vec![],
                    shard: 0,
                    segment_rank: 0,
                    doc: 3,
                },
                segment_ord: 0,
                score: 0.0,
                loaded: true,
                index: "m-one".into(),
                nested: None,
                id: Some("3".into()),
                source: None,
                version: None,
                seq_no: None,
                primary_term: None,
            }],
        };
        assert_eq!(
            Value::Object(hits.render(request).unwrap()),
            json!({"hits": {"total": {"value": 271, "relation": "eq"}, "max_score": 0.0,
                "hits": [{"_index": "m-one", "_id": "3", "_score": 0.0}]}})
        );
        assert_eq!(
            Value::Object(InternalTopHits::default().render(request).unwrap()),
            json!({"hits": {"total": {"value": 0, "relation": "eq"}, "max_score": null, "hits": []}})
        );
    }

    #[test]
    fn shard_errors_match_opensearch() {
        let shard = small_shard();
        let e = shard
            .render(&json!({"t": {"top_hits": {"sort": [{"nope": "desc"}]}}}))
            .unwrap_err();
        assert_eq!(e.kind(), "query_shard_exception");
        assert_eq!(
            e.reason(),
            "No mapping found for [nope] in order to sort on"
        );
        let e = shard
            .render(&json!({"t": {"top_hits": {"size": 50, "from": 51}}}))
            .unwrap_err();
        assert_eq!(
            e.reason(),
            "Top hits result window is too large, the top hits aggregator [t]'s from + size must be less than or equal to: [100] but was [101]. This limit can be set by changing the [index.max_inner_result_window] index level setting."
        );
        let e = shard
            .render(&json!({"t": {"top_hits": {"size": 0}}}))
            .unwrap_err();
        assert!(e.reason().starts_with("numHits must be > 0"));
    }

    #[test]
    fn source_filtering_and_buckets() {
        let out = small_shard()
            .render(&json!({"g": {"terms": {"field": "g"}, "aggs": {
                "t": {"top_hits": {"size": 1, "sort": [{"n": "desc"}],
                    "_source": {"includes": ["n", "k"]}, "track_scores": true}}}}}))
            .unwrap();
        let buckets = out["g"]["buckets"].as_array().unwrap();
        assert_eq!(buckets[0]["key"], "a");
        assert_eq!(
            buckets[0]["t"],
            json!({"hits": {"total": {"value": 2, "relation": "eq"}, "max_score": 1.0, "hits": [
                {"_index": "idx", "_id": "0", "_score": 1.0, "_source": {"n": 14, "k": "alpha"},
                    "sort": [14]}]}})
        );
        assert_eq!(buckets[1]["t"]["hits"]["hits"][0]["_id"], "3");
    }

    #[test]
    fn slices_and_shards_merge_exactly() {
        let docs = random_docs(51, 6, 70);
        let shard = TestShard::build(&mapping(), &docs);
        let aggs = json!({
            "plain": {"top_hits": {"size": 5, "_source": false}},
            "by_n": {"top_hits": {"size": 7, "from": 2, "sort": [{"n": "desc"}, {"k": "asc"}]}},
            "by_kw": {"top_hits": {"sort": [{"k": {"order": "desc", "missing": "_first"}}],
                "_source": ["k"]}},
            "terms": {"terms": {"field": "g"}, "aggs": {
                "t": {"top_hits": {"size": 2, "sort": [{"d": "asc"}, {"f": "desc"}]}}}}
        });
        let single = shard.check_slices(&aggs, 25);
        assert_eq!(single["plain"]["hits"]["hits"][0]["_id"], "0");
        // the same documents split over two shards: ties go to the first shard
        let half = docs.len() / 2;
        let first = TestShard::build_numbered(&mapping(), &docs[..half], 0, 0);
        let offset = docs[..half].iter().map(|b| b.len() as u64).sum();
        let second = TestShard::build_numbered(&mapping(), &docs[half..], offset, 1);
        let mut rng = Rng::new(5);
        let a = first
            .shard_result(&aggs, &first.random_slices(&mut rng), &mut rng, 2)
            .unwrap();
        let b = second
            .shard_result(&aggs, &second.random_slices(&mut rng), &mut rng, 2)
            .unwrap();
        let both = render(&aggs, vec![b, a]).unwrap();
        assert_eq!(both["plain"], single["plain"]);
        assert_eq!(both["by_n"], single["by_n"]);
        assert_eq!(both["by_kw"], single["by_kw"]);
    }
}
