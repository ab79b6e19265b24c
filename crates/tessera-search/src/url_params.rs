//! A search's URL parameters (`q`, `from`, `size`, `sort`, `_source`, `timeout`, …) applied over
//! its body, as OpenSearch applies them (the URL wins). They are read here, below the REST
//! layer, because a shard request carries the body and the parameters as the client sent them
//! and the node that runs the shard parses them again.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use tessera_common::params::ParamMap;
use tessera_common::{Error, Result};
use tessera_query::ast::{Operator, QueryAst, QueryStringQuery};

use crate::request::{
    parse_track_total_hits, DocValueField, SearchRequest, SourceSpec, StoredFields,
};
use crate::sort::parse_sort;
use crate::suggest::spell::SuggestMode;
use crate::suggest::term::TermSuggester;
use crate::suggest::{SuggestRequest, Suggester, Suggestion};

/// `q=` as a `query_string` query, with `df`, `default_operator`, `analyzer`, `lenient`…
pub fn url_query(params: &BTreeMap<String, String>) -> Result<Option<QueryAst>> {
    let Some(q) = params.param("q") else {
        return Ok(None);
    };
    let mut query = QueryStringQuery::new(q);
    if let Some(df) = params.param("df") {
        query.default_field = Some(df.to_string());
    }
    if let Some(op) = params.param("default_operator") {
        query.default_operator = match op.to_ascii_uppercase().as_str() {
            "AND" => Operator::And,
            "OR" => Operator::Or,
            other => {
                return Err(Error::illegal_argument(format!(
                    "No enum constant org.opensearch.index.query.Operator.{other}"
                )))
            }
        };
    }
    if let Some(analyzer) = params.param("analyzer") {
        query.analyzer = Some(analyzer.to_string());
    }
    if params.param("lenient").is_some() {
        query.lenient = Some(params.param_bool("lenient", false)?);
    }
    query.analyze_wildcard = params.param_bool("analyze_wildcard", false)?;
    Ok(Some(QueryAst::QueryString(query)))
}

/// `sort=field:desc,other` as in the URL form.
fn url_sort(text: &str) -> Value {
    let items: Vec<Value> = text
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|item| match item.rsplit_once(':') {
            Some((field, order)) => json!({ field: order }),
            None => json!(item),
        })
        .collect();
    Value::Array(items)
}

/// `_source`, `_source_includes`, `_source_excludes` (searches and document reads alike).
pub fn source_spec(params: &BTreeMap<String, String>) -> Result<Option<SourceSpec>> {
    let list = |name: &str| -> Vec<String> {
        params
            .param(name)
            .map(|v| {
                v.split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    };
    let includes = list("_source_includes");
    let excludes = list("_source_excludes");
    let mut spec = match params.param("_source") {
        None if includes.is_empty() && excludes.is_empty() => return Ok(None),
        None => SourceSpec::default(),
        Some("" | "true") => SourceSpec::default(),
        Some("false") => SourceSpec {
            enabled: false,
            ..Default::default()
        },
        Some(fields) => SourceSpec {
            enabled: true,
            includes: fields.split(',').map(|s| s.trim().to_string()).collect(),
            excludes: Vec::new(),
        },
    };
    spec.includes.extend(includes);
    spec.excludes.extend(excludes);
    Ok(Some(spec))
}

/// `suggest_field` (with `suggest_text`, else `q`, `suggest_size` and `suggest_mode`): a term
/// suggestion named after the field, in place of the body's `suggest`.
fn url_suggest(params: &BTreeMap<String, String>) -> Result<Option<SuggestRequest>> {
    let Some(field) = params.param("suggest_field") else {
        return Ok(None);
    };
    let mut term = TermSuggester::new(field.to_string());
    if let Some(size) = params.param_i64("suggest_size")? {
        if size <= 0 {
            return Err(Error::illegal_argument("size must be positive"));
        }
        term.size = size as usize;
    }
    if let Some(mode) = params.param("suggest_mode") {
        term.checker.suggest_mode = SuggestMode::resolve(mode)?;
    }
    Ok(Some(SuggestRequest {
        suggestions: vec![Suggestion {
            name: field.to_string(),
            text: params
                .param("suggest_text")
                .or(params.param("q"))
                .map(str::to_string),
            text_kind: crate::suggest::completion::TextKind::Prefix,
            suggester: Suggester::Term(term),
        }],
    }))
}

fn non_negative(params: &BTreeMap<String, String>, name: &str) -> Result<Option<usize>> {
    match params.param_i64(name)? {
        Some(n) if n < 0 => Err(Error::illegal_argument(format!(
            "[{name}] parameter cannot be negative, found [{n}]"
        ))),
        Some(n) => Ok(Some(n as usize)),
        None => Ok(None),
    }
}

/// Applies URL parameters on top of the body, as OpenSearch does (the URL wins).
pub fn apply(params: &BTreeMap<String, String>, search: &mut SearchRequest) -> Result<()> {
    if let Some(query) = url_query(params)? {
        search.query = query;
        search.query_given = true;
    }
    if let Some(from) = non_negative(params, "from")? {
        search.from = from;
    }
    if let Some(size) = non_negative(params, "size")? {
        search.size = size;
    }
    if let Some(sort) = params.param("sort") {
        search.sort = parse_sort(&url_sort(sort))?;
    }
    if let Some(spec) = source_spec(params)? {
        search.source = spec;
    }
    if let Some(stored) = params.param("stored_fields") {
        search.stored_fields =
            StoredFields::from_names(&stored.split(',').map(str::trim).collect::<Vec<_>>())?;
    }
    if let Some(fields) = params.param("docvalue_fields") {
        search.docvalue_fields = fields
            .split(',')
            .map(|f| DocValueField {
                field: f.trim().to_string(),
                format: None,
            })
            .collect();
    }
    if let Some(track) = params.param("track_total_hits") {
        search.track_total_hits = parse_track_total_hits(&match track {
            "" | "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            other => Value::String(other.to_string()),
        })?;
    }
    if params.param("track_scores").is_some() {
        search.track_scores = params.param_bool("track_scores", false)?;
    }
    if let Some(timeout) = params.param_time("timeout")? {
        search.timeout = Some(timeout);
    }
    if let Some(n) = params.param_i64("terminate_after")? {
        search.terminate_after = (n > 0).then_some(n as u64);
    }
    if params.param("version").is_some() {
        search.version = params.param_bool("version", false)?;
    }
    if params.param("seq_no_primary_term").is_some() {
        search.seq_no_primary_term = params.param_bool("seq_no_primary_term", false)?;
    }
    if let Some(size) = params.param_i64("pre_filter_shard_size")? {
        search.pre_filter_shard_size = size.max(1) as usize;
    }
    search.allow_partial_search_results =
        params.param_bool("allow_partial_search_results", true)?;
    if params.param("explain").is_some() {
        search.explain = params.param_bool("explain", false)?;
    }
    if let Some(suggest) = url_suggest(params)? {
        search.suggest = Some(std::sync::Arc::new(suggest));
    }
    match params.param("search_type") {
        None | Some("query_then_fetch") => {}
        Some("dfs_query_then_fetch") => search.dfs = true,
        Some(removed @ ("query_and_fetch" | "dfs_query_and_fetch")) => {
            return Err(Error::illegal_argument(format!(
                "Unsupported search type [{removed}]"
            )))
        }
        Some(other) => {
            return Err(Error::illegal_argument(format!(
                "No search type for [{other}]"
            )))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_url_wins_over_the_body() {
        let mut search = SearchRequest::parse(&json!({"size": 3, "from": 1})).unwrap();
        apply(
            &params(&[("size", "7"), ("q", "title:x"), ("_source", "false")]),
            &mut search,
        )
        .unwrap();
        assert_eq!((search.size, search.from), (7, 1));
        assert!(matches!(search.query, QueryAst::QueryString(_)));
        assert!(!search.source.enabled);
    }

    #[test]
    fn bad_values_fail_as_opensearch_fails_them() {
        let mut search = SearchRequest::default();
        let e = apply(&params(&[("size", "-1")]), &mut search).unwrap_err();
        assert_eq!(
            e.reason(),
            "[size] parameter cannot be negative, found [-1]"
        );
        let e = apply(&params(&[("search_type", "x")]), &mut search).unwrap_err();
        assert_eq!(e.reason(), "No search type for [x]");
        let e = apply(&params(&[("search_type", "query_and_fetch")]), &mut search).unwrap_err();
        assert_eq!(e.reason(), "Unsupported search type [query_and_fetch]");
        apply(
            &params(&[("search_type", "dfs_query_then_fetch")]),
            &mut search,
        )
        .unwrap();
        assert!(search.dfs);
    }

    #[test]
    fn source_filtering_lists_add_up() {
        let spec = source_spec(&params(&[("_source", "a,b"), ("_source_excludes", "c")]))
            .unwrap()
            .unwrap();
        assert_eq!(spec.includes, vec!["a", "b"]);
        assert_eq!(spec.excludes, vec!["c"]);
        assert!(source_spec(&params(&[])).unwrap().is_none());
    }
}
