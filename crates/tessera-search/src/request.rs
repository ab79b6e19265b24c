//! The search request: the body of `_search` (and `_count`) parsed and validated, with
//! OpenSearch's errors for unknown keys and wrong value types.

use std::time::Duration;

use serde_json::{Map, Value};
use tessera_common::{Error, Result};
use tessera_query::{parse_query, QueryAst};

use crate::sort::{parse_sort, SortField};
pub use crate::source_fields::DocValueField;
use tessera_common::error::json_token as token;

/// `track_total_hits`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrackTotalHits {
    Disabled,
    UpTo(u64),
    Exact,
}

impl TrackTotalHits {
    pub fn threshold(self) -> u64 {
        match self {
            TrackTotalHits::Disabled => 0,
            TrackTotalHits::UpTo(n) => n,
            TrackTotalHits::Exact => u64::MAX,
        }
    }
}

/// `_source` in a request.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceSpec {
    pub enabled: bool,
    pub includes: Vec<String>,
    pub excludes: Vec<String>,
}

impl Default for SourceSpec {
    fn default() -> Self {
        SourceSpec {
            enabled: true,
            includes: Vec::new(),
            excludes: Vec::new(),
        }
    }
}

/// A parsed search request.
#[derive(Clone, Debug)]
pub struct SearchRequest {
    pub query: QueryAst,
    pub post_filter: Option<QueryAst>,
    /// `indices_boost`: index expressions and the factor the scores of their documents are
    /// multiplied by (the first expression naming an index applies).
    pub indices_boost: Vec<(String, f32)>,
    pub from: usize,
    pub size: usize,
    pub sort: Vec<SortField>,
    pub track_total_hits: TrackTotalHits,
    pub track_scores: bool,
    pub source: SourceSpec,
    /// `stored_fields`: what to return besides `_source` rules.
    pub stored_fields: StoredFields,
    pub docvalue_fields: Vec<DocValueField>,
    /// The `fields` option: values read from `_source`, typed and formatted by the mapping.
    pub fields: Vec<DocValueField>,
    /// `script_fields`: values a script computes for each hit.
    pub script_fields: Vec<ScriptField>,
    pub search_after: Option<Vec<Value>>,
    pub timeout: Option<Duration>,
    pub terminate_after: Option<u64>,
    pub min_score: Option<f32>,
    pub version: bool,
    /// Explain how each hit's score was computed.
    pub explain: bool,
    /// `search_type=dfs_query_then_fetch`: score with every shard's term statistics.
    pub dfs: bool,
    pub highlight: Option<crate::highlight::HighlightSpec>,
    pub seq_no_primary_term: bool,
    pub profile: bool,
    /// Run can_match only when more shards than this are searched (URL parameter; OpenSearch's
    /// default is 128).
    pub pre_filter_shard_size: usize,
    /// Answer with the shards that succeeded when others failed (URL parameter, default true);
    /// when false any shard failure fails the whole search.
    pub allow_partial_search_results: bool,
    /// `aggs` / `aggregations`.
    pub aggs: Option<Vec<tessera_aggs::AggRequest>>,
    /// The top level's pipeline aggregations (those inside an aggregation are in its
    /// `AggRequest::pipelines`): run by the coordinator on the final aggregations.
    pub agg_pipelines: Vec<tessera_aggs::PipelineAgg>,
    /// `search.max_buckets` (a cluster setting the REST layer fills in).
    pub max_buckets: usize,
    /// The node's request circuit breaker for this request (the REST layer makes it); its
    /// charges are given back when the request, and with it this breaker, is dropped.
    pub breaker: Option<std::sync::Arc<tessera_common::breaker::RequestBreaker>>,
    /// The cluster's concurrent segment search settings (the REST layer fills them in; index
    /// settings override them on each shard).
    pub concurrency: crate::concurrent::ConcurrencySettings,
    /// `pit`: search the readers of this point in time.
    pub pit: Option<PitReference>,
    /// `slice`: one slice of a scroll or a point in time.
    pub slice: Option<crate::scroll_slice::SliceSpec>,
    /// The queries of `query` and `post_filter` with a `_name`, whose names each hit that
    /// matches them shows in `matched_queries`.
    pub named_queries: Vec<crate::named_queries::NamedQuery>,
    /// `rescore`: the rescorers each shard applies to its best hits, in order.
    pub rescore: Vec<crate::rescore::Rescorer>,
    /// `collapse`: one hit per value of a field.
    pub collapse: Option<crate::collapse::CollapseSpec>,
    /// `suggest`: suggestions computed beside the hits.
    pub suggest: Option<std::sync::Arc<crate::suggest::SuggestRequest>>,
    /// Whether the request names a query (`query`, or the `q` parameter): a suggestion
    /// without one, nor aggregations, runs no query (see [`SearchRequest::suggest_only`]).
    pub query_given: bool,
}

/// The body's `pit`: a point in time's id, and a new keep-alive for it.
#[derive(Clone, Debug, PartialEq)]
pub struct PitReference {
    pub id: String,
    pub keep_alive: Option<Duration>,
}

fn parse_pit(value: &Value) -> Result<PitReference> {
    let Value::Object(map) = value else {
        return Err(Error::parsing(format!(
            "Unknown key for a {} in [pit].",
            token(value)
        )));
    };
    let mut id = None;
    let mut keep_alive = None;
    for (key, value) in map {
        match (key.as_str(), value) {
            ("id", Value::String(text)) => id = Some(text.clone()),
            ("keep_alive", Value::String(text)) => {
                keep_alive = tessera_common::time::parse_time_value(text, "keep_alive")?
                    .map(Duration::from_millis)
            }
            ("id" | "keep_alive", other) => {
                return Err(Error::parsing(format!(
                    "[pit] failed to parse field [{key}]: expected a string, got a {}",
                    token(other)
                )))
            }
            (other, _) => return Err(Error::parsing(format!("[pit] unknown field [{other}]"))),
        }
    }
    let id = id.ok_or_else(|| Error::parsing("[pit] requires [id]"))?;
    Ok(PitReference { id, keep_alive })
}

/// OpenSearch's default `pre_filter_shard_size`.
pub const DEFAULT_PRE_FILTER_SHARD_SIZE: usize = 128;

impl Default for SearchRequest {
    fn default() -> Self {
        SearchRequest {
            query: QueryAst::match_all(),
            post_filter: None,
            indices_boost: Vec::new(),
            from: 0,
            size: 10,
            sort: Vec::new(),
            track_total_hits: TrackTotalHits::UpTo(10_000),
            track_scores: false,
            source: SourceSpec::default(),
            stored_fields: StoredFields::Default,
            docvalue_fields: Vec::new(),
            fields: Vec::new(),
            script_fields: Vec::new(),
            search_after: None,
            timeout: None,
            terminate_after: None,
            min_score: None,
            version: false,
            explain: false,
            dfs: false,
            highlight: None,
            seq_no_primary_term: false,
            profile: false,
            pre_filter_shard_size: DEFAULT_PRE_FILTER_SHARD_SIZE,
            allow_partial_search_results: true,
            aggs: None,
            agg_pipelines: Vec::new(),
            max_buckets: tessera_aggs::DEFAULT_MAX_BUCKETS,
            breaker: None,
            concurrency: Default::default(),
            pit: None,
            slice: None,
            named_queries: Vec::new(),
            rescore: Vec::new(),
            collapse: None,
            suggest: None,
            query_given: false,
        }
    }
}

/// An integer as OpenSearch's hand-written search source parser reads it: numeric
/// strings are accepted and anything else is a bare `number_format_exception`.
fn int_value(key: &str, value: &Value) -> Result<i64> {
    let number_format = |text: &str| {
        Error::new(
            "number_format_exception",
            400,
            format!("For input string: \"{text}\""),
        )
    };
    match value {
        Value::Number(n) if n.is_i64() => Ok(n.as_i64().unwrap_or_default()),
        Value::String(s) => s.trim().parse::<i64>().map_err(|_| number_format(s)),
        Value::Number(n) => n
            .as_f64()
            .filter(|f| f.fract() == 0.0)
            .map(|f| f as i64)
            .ok_or_else(|| number_format(&n.to_string())),
        other => Err(Error::parsing(format!(
            "Unknown key for a {} in [{key}].",
            token(other)
        ))),
    }
}

fn bool_value(key: &str, value: &Value) -> Result<bool> {
    match value {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s == "true" => Ok(true),
        Value::String(s) if s == "false" => Ok(false),
        other => Err(Error::parsing(format!(
            "Unknown key for a {} in [{key}].",
            token(other)
        ))),
    }
}

/// Parses `track_total_hits`: `true`, `false` or a number.
pub fn parse_track_total_hits(value: &Value) -> Result<TrackTotalHits> {
    match value {
        Value::Bool(true) => Ok(TrackTotalHits::Exact),
        Value::Bool(false) => Ok(TrackTotalHits::Disabled),
        Value::String(s) if s == "true" => Ok(TrackTotalHits::Exact),
        Value::String(s) if s == "false" => Ok(TrackTotalHits::Disabled),
        other => {
            let n = int_value("track_total_hits", other)?;
            match n {
                -1 => Ok(TrackTotalHits::Exact),
                n if n < 0 => Err(Error::illegal_argument(format!(
                    "[track_total_hits] parameter must be positive or equals to -1, got {n}"
                ))),
                n => Ok(TrackTotalHits::UpTo(n as u64)),
            }
        }
    }
}

/// Parses `_source`: `false`, `"field"`, `["a", "b*"]`, `{"includes": [...], "excludes": [...]}`.
pub fn parse_source_spec(value: &Value) -> Result<SourceSpec> {
    let list = |v: &Value| -> Result<Vec<String>> {
        match v {
            Value::String(s) => Ok(vec![s.clone()]),
            Value::Array(items) => items
                .iter()
                .map(|i| {
                    i.as_str()
                        .map(String::from)
                        .ok_or_else(|| Error::parsing("[_source] patterns must be strings"))
                })
                .collect(),
            Value::Null => Ok(Vec::new()),
            _ => Err(Error::parsing("[_source] patterns must be strings")),
        }
    };
    match value {
        Value::Bool(enabled) => Ok(SourceSpec {
            enabled: *enabled,
            ..Default::default()
        }),
        Value::String(s) if s == "true" || s == "false" => Ok(SourceSpec {
            enabled: s == "true",
            ..Default::default()
        }),
        Value::String(_) | Value::Array(_) => Ok(SourceSpec {
            enabled: true,
            includes: list(value)?,
            excludes: Vec::new(),
        }),
        Value::Object(map) => {
            let mut spec = SourceSpec::default();
            for (key, v) in map {
                match key.as_str() {
                    "includes" | "include" => spec.includes = list(v)?,
                    "excludes" | "exclude" => spec.excludes = list(v)?,
                    other => {
                        return Err(Error::parsing(format!(
                            "Unknown key for a {} in [{other}].",
                            token(v)
                        )))
                    }
                }
            }
            Ok(spec)
        }
        other => Err(Error::parsing(format!(
            "Unknown key for a {} in [_source].",
            token(other)
        ))),
    }
}

fn parse_docvalue_fields(value: &Value) -> Result<Vec<DocValueField>> {
    let items: Vec<&Value> = match value {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    items
        .into_iter()
        .map(|item| match item {
            Value::String(field) => Ok(DocValueField {
                field: field.clone(),
                format: None,
            }),
            Value::Object(map) => {
                let field = map
                    .get("field")
                    .and_then(Value::as_str)
                    .ok_or_else(|| Error::parsing("[docvalue_fields] entries need a [field]"))?;
                let format = map.get("format").and_then(Value::as_str).map(String::from);
                Ok(DocValueField {
                    field: field.to_string(),
                    format,
                })
            }
            other => Err(Error::parsing(format!(
                "Expected [VALUE_STRING] or [START_OBJECT] in [docvalue_fields] but found [{}]",
                token(other)
            ))),
        })
        .collect()
}

/// One entry of `script_fields`.
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptField {
    pub name: String,
    pub script: tessera_script::ScriptSpec,
    /// A failing script leaves the field out instead of failing the shard.
    pub ignore_failure: bool,
}

/// `script_fields`: `{"<name>": {"script": ..., "ignore_failure": false}}`.
fn parse_script_fields(value: &Value) -> Result<Vec<ScriptField>> {
    let Value::Object(entries) = value else {
        return Err(Error::parsing(format!(
            "Expected [START_OBJECT] in [script_fields] but found [{}]",
            token(value)
        )));
    };
    entries
        .iter()
        .map(|(name, entry)| {
            let Value::Object(options) = entry else {
                return Err(Error::parsing(format!(
                    "Expected [START_OBJECT] in [{name}] but found [{}]",
                    token(entry)
                )));
            };
            let mut script = None;
            let mut ignore_failure = false;
            for (key, option) in options {
                match (key.as_str(), option) {
                    ("script", _) => {
                        script = Some(tessera_script::ScriptSpec::parse("script", option)?)
                    }
                    ("ignore_failure", Value::Bool(b)) => ignore_failure = *b,
                    (other, option) => {
                        return Err(Error::parsing(format!(
                            "Unknown key for a {} in [{other}].",
                            token(option)
                        )))
                    }
                }
            }
            let script = script.ok_or_else(|| {
                Error::illegal_argument(format!("[script_fields] [{name}] requires a [script]"))
            })?;
            Ok(ScriptField {
                name: name.clone(),
                script,
                ignore_failure,
            })
        })
        .collect()
}

/// `indices_boost`: a list of one-key objects (`[{"index": 1.5}]`), or one object of them
/// (OpenSearch's deprecated form), in order.
fn parse_indices_boost(value: &Value) -> Result<Vec<(String, f32)>> {
    let number = |value: &Value| match value {
        Value::Number(n) => Ok(n.as_f64().unwrap_or_default() as f32),
        other => Err(Error::parsing(format!(
            "Expected [VALUE_NUMBER] in [indices_boost] but found [{}]",
            token(other)
        ))),
    };
    match value {
        Value::Object(map) => map
            .iter()
            .map(|(index, boost)| Ok((index.clone(), number(boost)?)))
            .collect(),
        Value::Array(items) => items
            .iter()
            .map(|item| {
                let Value::Object(map) = item else {
                    return Err(Error::parsing(format!(
                        "Expected [START_OBJECT] in [indices_boost] but found [{}]",
                        token(item)
                    )));
                };
                let mut entries = map.iter();
                let (Some((index, boost)), None) = (entries.next(), entries.next()) else {
                    return Err(Error::parsing(match map.len() {
                        0 => "Expected [FIELD_NAME] in [indices_boost] but found [END_OBJECT]",
                        _ => "Expected [END_OBJECT] in [indices_boost] but found [FIELD_NAME]",
                    }));
                };
                Ok((index.clone(), number(boost)?))
            })
            .collect(),
        other => Err(Error::parsing(format!(
            "Unknown key for a {} in [indices_boost].",
            token(other)
        ))),
    }
}

/// Keys of the search body that name features Tessera does not implement.
const UNSUPPORTED_KEYS: &[&str] = &[
    "point_in_time",
    "runtime_mappings",
    "search_pipeline",
    "derived",
];

impl SearchRequest {
    /// Parses a `_search` body.
    pub fn parse(body: &Value) -> Result<SearchRequest> {
        let mut request = SearchRequest::default();
        let map: &Map<String, Value> = match body {
            Value::Object(map) => map,
            Value::Null => return Ok(request),
            other => {
                return Err(Error::parsing(format!(
                    "Unknown key for a {} in [_na_].",
                    token(other)
                )))
            }
        };
        for (key, value) in map {
            match key.as_str() {
                "query" => {
                    request.query = parse_query(value)?;
                    request.query_given = true;
                }
                "suggest" => {
                    request.suggest = Some(std::sync::Arc::new(
                        crate::suggest::SuggestRequest::parse(value)?,
                    ))
                }
                "post_filter" => request.post_filter = Some(parse_query(value)?),
                "indices_boost" => request.indices_boost = parse_indices_boost(value)?,
                "from" => request.from = non_negative("from", int_value(key, value)?)?,
                "size" => request.size = non_negative("size", int_value(key, value)?)?,
                "sort" => request.sort = parse_sort(value)?,
                "track_total_hits" => request.track_total_hits = parse_track_total_hits(value)?,
                "track_scores" => request.track_scores = bool_value(key, value)?,
                "_source" => request.source = parse_source_spec(value)?,
                "stored_fields" => request.stored_fields = parse_stored_fields(value)?,
                "docvalue_fields" => request.docvalue_fields = parse_docvalue_fields(value)?,
                "fields" => request.fields = parse_docvalue_fields(value)?,
                "script_fields" => request.script_fields = parse_script_fields(value)?,
                "search_after" => match value {
                    Value::Array(values) => request.search_after = Some(values.clone()),
                    other => {
                        return Err(Error::parsing(format!(
                            "Unknown key for a {} in [search_after].",
                            token(other)
                        )))
                    }
                },
                "timeout" => request.timeout = parse_timeout(value)?,
                "pit" => request.pit = Some(parse_pit(value)?),
                "slice" => request.slice = Some(crate::scroll_slice::parse_slice(value)?),
                "terminate_after" => {
                    let n = int_value(key, value)?;
                    if n < 0 {
                        return Err(Error::illegal_argument("terminateAfter must be > 0"));
                    }
                    request.terminate_after = (n > 0).then_some(n as u64);
                }
                "min_score" => {
                    request.min_score = Some(value.as_f64().ok_or_else(|| {
                        Error::parsing(format!(
                            "Unknown key for a {} in [min_score].",
                            token(value)
                        ))
                    })? as f32)
                }
                "version" => request.version = bool_value(key, value)?,
                "explain" => request.explain = bool_value(key, value)?,
                "aggs" | "aggregations" => {
                    let (parsed, pipelines) =
                        tessera_aggs::parse_aggregations_with_pipelines(value)?;
                    request.agg_pipelines.extend(pipelines);
                    match &mut request.aggs {
                        Some(existing) => existing.extend(parsed),
                        None => request.aggs = Some(parsed),
                    }
                }
                "collapse" => request.collapse = Some(crate::collapse::parse_collapse(value)?),
                "rescore" => request.rescore = crate::rescore::parse_rescore(value)?,
                "highlight" => request.highlight = Some(crate::highlight::parse_highlight(value)?),
                "seq_no_primary_term" => request.seq_no_primary_term = bool_value(key, value)?,
                "profile" => request.profile = bool_value(key, value)?,
                "stats" | "ext" | "_name" => {}
                key if UNSUPPORTED_KEYS.contains(&key) => {
                    return Err(Error::not_supported(&format!(
                        "[{key}] in a search request"
                    )));
                }
                other => {
                    return Err(Error::parsing(format!(
                        "Unknown key for a {} in [{other}].",
                        token(value)
                    )));
                }
            }
        }
        for key in ["query", "post_filter"] {
            if let Some(query) = map.get(key) {
                crate::named_queries::collect(query, &mut request.named_queries)?;
            }
        }
        Ok(request)
    }

    /// A search for suggestions alone (`suggest` without a query or aggregations): the
    /// shards skip the query phase and the answer has no hits, as OpenSearch's.
    pub fn suggest_only(&self) -> bool {
        self.suggest.is_some() && !self.query_given && self.aggs.is_none()
    }

    /// Checks the request against an index's `max_result_window`.
    pub fn check_window(&self, max_result_window: usize) -> Result<()> {
        if self.from + self.size > max_result_window {
            return Err(Error::illegal_argument(format!(
                "Result window is too large, from + size must be less than or equal to: [{max_result_window}] but was [{}]. See the scroll api for a more efficient way to request large data sets. This limit can be set by changing the [index.max_result_window] index level setting.",
                self.from + self.size
            )));
        }
        if let Some(after) = &self.search_after {
            if self.sort.is_empty() {
                return Err(Error::illegal_argument(
                    "Sort must contain at least one field.".to_string(),
                ));
            }
            if !self.sort.is_empty() && after.len() != self.sort.len() {
                return Err(Error::illegal_argument(format!(
                    "search_after has {} value(s) but sort has {}.",
                    after.len(),
                    self.sort.len()
                )));
            }
            if self.from > 0 {
                return Err(Error::parsing(
                    "[from] parameter must be set to 0 when [search_after] is used",
                ));
            }
        }
        Ok(())
    }

    /// No sort, or `_score` descending alone: OpenSearch's default order, whose hits carry no
    /// sort values and whose answer reports `max_score`.
    pub fn sorts_by_score_only(&self) -> bool {
        crate::hits::HitSort::new(self.sort.clone()).is_score()
    }

    /// Whether hits need scores.
    pub fn needs_scores(&self) -> bool {
        self.sort.is_empty()
            || self.track_scores
            || !self.rescore.is_empty()
            || self.min_score.is_some()
            || self.sort.iter().any(SortField::is_score)
    }
}

fn non_negative(name: &str, n: i64) -> Result<usize> {
    if n < 0 {
        return Err(Error::illegal_argument(format!(
            "[{name}] parameter cannot be negative, found [{n}]"
        )));
    }
    Ok(n as usize)
}

fn parse_stored_fields(value: &Value) -> Result<StoredFields> {
    let names: Vec<&str> = match value {
        Value::String(s) => vec![s.as_str()],
        Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
        other => {
            return Err(Error::parsing(format!(
                "Unknown key for a {} in [stored_fields].",
                token(other)
            )))
        }
    };
    StoredFields::from_names(&names)
}

impl StoredFields {
    /// From the names of `stored_fields` (body or URL).
    pub fn from_names(names: &[&str]) -> Result<StoredFields> {
        if names.contains(&"_none_") {
            if names.len() > 1 {
                return Err(Error::illegal_argument(
                    "cannot combine _none_ with other fields",
                ));
            }
            return Ok(StoredFields::None);
        }
        // stored fields other than `_source` are not kept apart from `_source` in Tessera;
        // asking for any list without `_source` means "no _source", as in OpenSearch
        Ok(if names.contains(&"_source") {
            StoredFields::Source
        } else {
            StoredFields::NoSource
        })
    }

    pub fn returns_id(self) -> bool {
        self != StoredFields::None
    }

    pub fn returns_source(self) -> bool {
        matches!(self, StoredFields::Default | StoredFields::Source)
    }
}

/// What `stored_fields` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoredFields {
    /// Not given: `_id` and `_source`.
    Default,
    /// A list with `_source`.
    Source,
    /// A list without `_source`: `_id` only.
    NoSource,
    /// `_none_`: neither `_id` nor `_source`.
    None,
}

/// Parses a timeout (`"10ms"`, `"1s"`, `-1` for none).
pub fn parse_timeout(value: &Value) -> Result<Option<Duration>> {
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => {
            return Err(Error::parsing(format!(
                "Unknown key for a {} in [timeout].",
                token(other)
            )))
        }
    };
    Ok(tessera_common::time::parse_time_value(&text, "timeout")?.map(Duration::from_millis))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_a_full_request() {
        let r = SearchRequest::parse(&json!({
            "query": {"match_all": {}}, "from": 5, "size": 20, "sort": [{"n": "desc"}],
            "track_total_hits": 100, "_source": {"includes": ["a*"], "excludes": ["b"]},
            "docvalue_fields": ["d", {"field": "e", "format": "epoch_millis"}],
            "search_after": [1], "timeout": "10ms", "terminate_after": 3, "version": true
        }))
        .unwrap();
        assert_eq!((r.from, r.size), (5, 20));
        assert_eq!(r.track_total_hits, TrackTotalHits::UpTo(100));
        assert_eq!(r.source.includes, ["a*"]);
        assert_eq!(r.docvalue_fields[1].format.as_deref(), Some("epoch_millis"));
        assert_eq!(r.timeout, Some(Duration::from_millis(10)));
        assert_eq!(r.terminate_after, Some(3));
        assert!(!r.needs_scores());
    }

    #[test]
    fn pipeline_aggregations_are_kept_apart_from_what_shards_collect() {
        let r = SearchRequest::parse(&json!({
            "aggs": {
                "h": {"histogram": {"field": "n", "interval": 1}, "aggs": {
                    "s": {"sum": {"field": "x"}},
                    "d": {"derivative": {"buckets_path": "s"}}}},
                "mx": {"max_bucket": {"buckets_path": "h>s"}}
            }
        }))
        .unwrap();
        let aggs = r.aggs.as_deref().unwrap();
        assert_eq!(aggs.len(), 1);
        assert_eq!(aggs[0].subs.len(), 1);
        assert_eq!(aggs[0].pipelines[0].name, "d");
        assert_eq!(r.agg_pipelines.len(), 1);
        assert_eq!(r.agg_pipelines[0].name, "mx");
        let e = SearchRequest::parse(
            &json!({"aggs": {"d": {"derivative": {"buckets_path": "_count"}}}}),
        )
        .unwrap_err();
        assert_eq!(e.kind(), "action_request_validation_exception");
    }

    #[test]
    fn rejects_unknown_keys_and_bad_values() {
        let e = SearchRequest::parse(&json!({"bogus": 1})).unwrap_err();
        assert_eq!(e.reason(), "Unknown key for a VALUE_NUMBER in [bogus].");
        assert_eq!(e.kind(), "parsing_exception");
        assert!(SearchRequest::parse(&json!({"size": "abc"})).is_err());
        assert!(SearchRequest::parse(&json!({"size": -1}))
            .unwrap_err()
            .reason()
            .contains("cannot be negative"));
        let boosts = SearchRequest::parse(&json!({"indices_boost": [{"a*": 2}, {"b": 1.5}]}))
            .unwrap()
            .indices_boost;
        assert_eq!(boosts, [("a*".to_string(), 2.0), ("b".to_string(), 1.5)]);
        let boosts = SearchRequest::parse(&json!({"indices_boost": {"a": 3}}))
            .unwrap()
            .indices_boost;
        assert_eq!(boosts, [("a".to_string(), 3.0)]);
        for (bad, reason) in [
            (
                json!([{"a": "x"}]),
                "Expected [VALUE_NUMBER] in [indices_boost] but found [VALUE_STRING]",
            ),
            (
                json!([{"a": 1, "b": 2}]),
                "Expected [END_OBJECT] in [indices_boost] but found [FIELD_NAME]",
            ),
            (
                json!(5),
                "Unknown key for a VALUE_NUMBER in [indices_boost].",
            ),
        ] {
            let e = SearchRequest::parse(&json!({"indices_boost": bad})).unwrap_err();
            assert_eq!((e.kind(), e.reason()), ("parsing_exception", reason));
        }
        assert!(SearchRequest::parse(&json!({"track_total_hits": -5})).is_err());
    }

    #[test]
    fn suggestions_alone_run_no_query() {
        let suggest = json!({"s": {"text": "x", "term": {"field": "f"}}});
        let only = |body: serde_json::Value| SearchRequest::parse(&body).unwrap().suggest_only();
        assert!(only(json!({"suggest": suggest, "size": 3, "sort": ["f"]})));
        assert!(!only(
            json!({"suggest": suggest, "query": {"match_all": {}}})
        ));
        assert!(!only(
            json!({"suggest": suggest, "aggs": {"c": {"value_count": {"field": "f"}}}})
        ));
        assert!(!only(json!({"size": 0})));
    }

    #[test]
    fn pit_takes_an_id_and_a_keep_alive() {
        let r = SearchRequest::parse(&json!({"pit": {"id": "abc", "keep_alive": "2m"}})).unwrap();
        assert_eq!(
            r.pit,
            Some(PitReference {
                id: "abc".into(),
                keep_alive: Some(Duration::from_secs(120))
            })
        );
        for bad in [
            json!({"pit": {"id": 5}}),
            json!({"pit": {}}),
            json!({"pit": "abc"}),
            json!({"pit": {"id": "a", "other": 1}}),
            json!({"pit": {"id": "a", "keep_alive": "zz"}}),
        ] {
            assert_eq!(
                SearchRequest::parse(&bad).unwrap_err().status(),
                400,
                "{bad}"
            );
        }
    }

    #[test]
    fn window_and_search_after_checks() {
        let r = SearchRequest::parse(&json!({"from": 9995, "size": 10})).unwrap();
        assert!(r
            .check_window(10_000)
            .unwrap_err()
            .reason()
            .starts_with("Result window is too large"));
        let r = SearchRequest::parse(&json!({"sort": ["a", "b"], "search_after": [1]})).unwrap();
        assert!(r.check_window(10_000).is_err());
        let r = SearchRequest::parse(
            &json!({"stored_fields": "_none_", "_source": false, "track_total_hits": false}),
        )
        .unwrap();
        assert!(
            r.stored_fields == StoredFields::None
                && !r.source.enabled
                && r.track_total_hits == TrackTotalHits::Disabled
        );
    }
}
