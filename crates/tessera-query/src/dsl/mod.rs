//! Wire parsing of the query DSL: OpenSearch JSON → [`QueryAst`].
//!
//! One file per query type, each checking every key it is given: an unknown parameter is a
//! `parsing_exception` naming the query and the parameter, exactly as OpenSearch words it,
//! never silently ignored.

use serde_json::{Map, Value};
use tessera_common::{Error, Result};

use crate::ast::{Fuzziness, MinimumShouldMatch, Operator, QueryAst, ZeroTermsQuery};
pub(crate) use tessera_common::error::json_token as token;

mod bool_query;
mod compound;
mod distance_feature;
mod exists;
mod function_score;
mod fuzzy;
mod geo;
mod geo_polygon;
mod ids;
mod knn;
mod match_all;
mod match_bool_prefix;
mod match_phrase;
mod match_query;
mod more_like_this;
mod multi_match;
mod nested;
pub(crate) mod percolate;
mod prefix;
mod query_string;
mod range;
mod regexp;
mod script;
mod simple_query_string;
mod term;
pub(crate) mod terms;
mod terms_set;
mod wildcard;

/// Query types OpenSearch has that Tessera does not implement.
const UNSUPPORTED: &[&str] = &[
    "has_child",
    "has_parent",
    "parent_id",
    "geo_shape",
    "span_term",
    "span_near",
    "span_or",
    "span_not",
    "span_first",
    "span_multi",
    "span_containing",
    "span_within",
    "field_masking_span",
    "intervals",
    "rank_feature",
    "wrapper",
    "pinned",
    "combined_fields",
    "neural",
    "hybrid",
];

/// The reason for a `{}` query clause; the REST layer appends ` at [line:col]`.
pub const EMPTY_CLAUSE: &str = "query malformed, empty clause found";

/// Parses a query object such as `{"match": {"title": "quick"}}`.
pub fn parse_query(value: &Value) -> Result<QueryAst> {
    let Value::Object(object) = value else {
        return Err(Error::parsing(
            "[_na] query malformed, must start with start_object",
        ));
    };
    let mut entries = object.iter();
    let Some((name, body)) = entries.next() else {
        // Empty clauses were removed in OpenSearch's 6.0; the REST layer adds the position.
        return Err(Error::illegal_argument(EMPTY_CLAUSE));
    };
    if let Some((extra, _)) = entries.next() {
        return Err(Error::parsing(format!(
            "[{name}] malformed query, expected [END_OBJECT] but found [FIELD_NAME]"
        ))
        .at_body_key(extra.as_str()));
    }
    match name.as_str() {
        "match_all" => match_all::parse_match_all(body),
        "match_none" => match_all::parse_match_none(body),
        "term" => term::parse(body),
        "terms" => terms::parse(body),
        "terms_set" => terms_set::parse(body),
        "more_like_this" | "mlt" => more_like_this::parse(body),
        "range" => range::parse(body),
        "exists" => exists::parse(body),
        "ids" => ids::parse(body),
        "prefix" => prefix::parse(body),
        "wildcard" => wildcard::parse(body),
        "regexp" => regexp::parse(body),
        "percolate" => percolate::parse(body),
        "fuzzy" => fuzzy::parse(body),
        "match" => match_query::parse(body),
        "match_phrase" => match_phrase::parse_phrase(body),
        "match_phrase_prefix" => match_phrase::parse_phrase_prefix(body),
        "multi_match" => multi_match::parse(body),
        "match_bool_prefix" => match_bool_prefix::parse(body),
        "bool" => bool_query::parse(body),
        "constant_score" => compound::parse_constant_score(body),
        "dis_max" => compound::parse_dis_max(body),
        "boosting" => compound::parse_boosting(body),
        "function_score" => function_score::parse(body),
        "script_score" => script::parse_script_score(body),
        "script" => script::parse_script(body),
        "geo_distance" => geo::parse_distance_query(body),
        "geo_bounding_box" => geo::parse_bounding_box(body),
        "geo_polygon" => geo_polygon::parse(body),
        "distance_feature" => distance_feature::parse(body),
        "query_string" => query_string::parse(body),
        "knn" => knn::parse(body),
        "nested" => nested::parse(body),
        "simple_query_string" => simple_query_string::parse(body),
        other if UNSUPPORTED.contains(&other) => Err(Error::parsing(format!(
            "[{other}] query is not supported by Tessera"
        ))),
        other => Err(Error::parsing(format!("unknown query [{other}]"))),
    }
}

/// The body of a query as an object, or OpenSearch's "malformed" error.
pub(crate) fn object<'a>(query: &str, body: &'a Value) -> Result<&'a Map<String, Value>> {
    body.as_object().ok_or_else(|| {
        Error::parsing(format!(
            "[{query}] query malformed, no start_object after query name"
        ))
    })
}

/// For queries of the form `{"<query>": {"<field>": <value or options>}}`: the one field.
pub(crate) fn single_field<'a>(
    query: &str,
    body: &'a Value,
) -> Result<(&'a String, &'a Value, Option<f32>)> {
    let map = object(query, body)?;
    let mut field: Option<(&String, &Value)> = None;
    let mut boost = None;
    for (key, value) in map {
        if key == "boost" {
            boost = Some(as_f32(query, key, value)?);
            continue;
        }
        if key == "_name" {
            continue;
        }
        if let Some((first, _)) = field {
            return Err(Error::parsing(format!(
                "[{query}] query doesn't support multiple fields, found [{first}] and [{key}]"
            )));
        }
        field = Some((key, value));
    }
    let (name, value) =
        field.ok_or_else(|| Error::parsing(format!("[{query}] query malformed, no field")))?;
    Ok((name, value, boost))
}

/// A multi-term query's `rewrite` (`fuzzy_rewrite` for fuzzy terms): how Lucene turns its
/// terms into a query, which decides the scores. Tessera scores as OpenSearch's default does —
/// a constant for `prefix`, `wildcard` and `regexp`, blended top terms for fuzzy terms — so the
/// methods that give those are taken, and one that would score otherwise is refused rather
/// than ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rewrite {
    /// `constant_score`, `constant_score_boolean`.
    Constant,
    /// `top_terms_blended_freqs_N`: the N closest terms.
    TopTermsBlended(u32),
}

pub(crate) fn parse_rewrite(query: &str, key: &str, value: &Value) -> Result<Rewrite> {
    let method = as_string(query, key, value)?;
    let top = |prefix: &str| {
        method
            .strip_prefix(prefix)
            .map(|n| n.parse::<u32>().ok().filter(|n| *n > 0))
    };
    let failed = || Error::illegal_argument(format!("Failed to parse rewrite_method [{method}]"));
    match method.as_str() {
        "constant_score" | "constant_score_boolean" => return Ok(Rewrite::Constant),
        "scoring_boolean" => {}
        _ => {
            if let Some(n) = top("top_terms_blended_freqs_") {
                return n.map(Rewrite::TopTermsBlended).ok_or_else(failed);
            }
            match top("top_terms_boost_").or_else(|| top("top_terms_")) {
                Some(Some(_)) => {}
                _ => return Err(failed()),
            }
        }
    }
    Err(Error::not_supported(&format!(
        "[{key}] [{method}] in the [{query}] query"
    )))
}

/// The `rewrite` of a fuzzy term (`fuzzy`'s `rewrite`, the `fuzzy_rewrite` of the full-text
/// queries): only blended top terms, OpenSearch's default; the number of terms it keeps.
pub(crate) fn parse_fuzzy_rewrite(query: &str, key: &str, value: &Value) -> Result<u32> {
    match parse_rewrite(query, key, value)? {
        Rewrite::TopTermsBlended(n) => Ok(n),
        Rewrite::Constant => Err(Error::not_supported(&format!(
            "[{key}] [{}] in the [{query}] query",
            plain(value)
        ))),
    }
}

pub(crate) fn unknown(query: &str, key: &str) -> Error {
    Error::parsing(format!("[{query}] query does not support [{key}]"))
}

pub(crate) fn as_f32(query: &str, key: &str, value: &Value) -> Result<f32> {
    match value {
        Value::Number(n) => n.as_f64().map(|f| f as f32),
        Value::String(s) => s.trim().parse::<f32>().ok(),
        _ => None,
    }
    .ok_or_else(|| {
        Error::parsing(format!(
            "[{query}] failed to parse field [{key}]: [{value}] is not a number"
        ))
    })
}

pub(crate) fn as_u32(query: &str, key: &str, value: &Value) -> Result<u32> {
    match value {
        Value::Number(n) => n.as_u64().map(|n| n as u32),
        Value::String(s) => s.trim().parse::<u32>().ok(),
        _ => None,
    }
    .ok_or_else(|| {
        Error::parsing(format!(
            "[{query}] failed to parse field [{key}]: [{value}] is not a non-negative integer"
        ))
    })
}

pub(crate) fn as_i64(query: &str, key: &str, value: &Value) -> Result<i64> {
    match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse::<i64>().ok(),
        _ => None,
    }
    .ok_or_else(|| {
        Error::parsing(format!(
            "[{query}] failed to parse field [{key}]: [{value}] is not an integer"
        ))
    })
}

pub(crate) fn as_bool(query: &str, key: &str, value: &Value) -> Result<bool> {
    match value {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s == "true" => Ok(true),
        Value::String(s) if s == "false" => Ok(false),
        other => Err(Error::parsing(format!(
            "[{query}] failed to parse field [{key}]: Failed to parse value [{}] as only [true] or [false] are allowed.",
            plain(other)
        ))),
    }
}

pub(crate) fn as_string(query: &str, key: &str, value: &Value) -> Result<String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        other => Err(Error::parsing(format!(
            "[{query}] unknown token [{}] after [{key}]",
            token(other)
        ))),
    }
}

/// A scalar value (string, number, boolean) as given.
pub(crate) fn as_scalar(query: &str, key: &str, value: &Value) -> Result<Value> {
    match value {
        Value::String(_) | Value::Number(_) | Value::Bool(_) => Ok(value.clone()),
        other => Err(Error::parsing(format!(
            "[{query}] unknown token [{}] after [{key}]",
            token(other)
        ))),
    }
}

pub(crate) fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

pub(crate) fn parse_operator(query: &str, value: &Value) -> Result<Operator> {
    match value.as_str().map(|s| s.to_ascii_lowercase()) {
        Some(s) if s == "or" => Ok(Operator::Or),
        Some(s) if s == "and" => Ok(Operator::And),
        _ => Err(Error::illegal_argument(format!(
            "No enum constant org.opensearch.index.query.Operator.{}",
            plain(value).to_uppercase()
        )))
        .map_err(|e: Error| e.with_meta("query", query.to_string())),
    }
}

pub(crate) fn parse_zero_terms(value: &Value) -> Result<ZeroTermsQuery> {
    match value.as_str().map(|s| s.to_ascii_lowercase()).as_deref() {
        Some("none") => Ok(ZeroTermsQuery::None),
        Some("all") => Ok(ZeroTermsQuery::All),
        _ => Err(Error::parsing(format!(
            "Unsupported zero_terms_query value [{}]",
            plain(value)
        ))),
    }
}

/// `minimum_should_match`: `2`, `-1`, `"75%"`, `"-25%"`, `"3<90%"`.
pub fn parse_minimum_should_match(value: &Value) -> Result<MinimumShouldMatch> {
    let text = match value {
        Value::Number(n) => {
            return n
                .as_i64()
                .map(|n| MinimumShouldMatch::Count(n as i32))
                .ok_or_else(|| bad_msm(value))
        }
        Value::String(s) => s.trim(),
        _ => return Err(bad_msm(value)),
    };
    if text.contains('<') {
        return Ok(MinimumShouldMatch::Conditional(text.to_string()));
    }
    if let Some(percent) = text.strip_suffix('%') {
        return percent
            .parse::<i32>()
            .map(MinimumShouldMatch::Percent)
            .map_err(|_| bad_msm(value));
    }
    text.parse::<i32>()
        .map(MinimumShouldMatch::Count)
        .map_err(|_| bad_msm(value))
}

fn bad_msm(value: &Value) -> Error {
    Error::illegal_argument(format!("invalid minimum_should_match [{}]", plain(value)))
}

/// `fuzziness`: `AUTO`, `AUTO:3,6`, `0`, `1`, `2` (or `"1"`).
pub fn parse_fuzziness(value: &Value) -> Result<Fuzziness> {
    let text = plain(value);
    let upper = text.trim().to_ascii_uppercase();
    if upper == "AUTO" {
        return Ok(Fuzziness::Auto { low: 3, high: 6 });
    }
    if let Some(rest) = upper.strip_prefix("AUTO:") {
        if let Some((low, high)) = rest.split_once(',') {
            if let (Ok(low), Ok(high)) = (low.trim().parse::<u32>(), high.trim().parse::<u32>()) {
                if low <= high {
                    return Ok(Fuzziness::Auto { low, high });
                }
            }
        }
    }
    match upper.parse::<f64>() {
        Ok(n) if (0.0..=2.0).contains(&n) && n.fract() == 0.0 => Ok(Fuzziness::Edits(n as u8)),
        Ok(n) if n.fract() != 0.0 && (0.0..1.0).contains(&n) => Ok(Fuzziness::Edits(0)),
        _ => Err(Error::parsing(format!(
            "failed to parse fuzziness [{text}]: valid edit distances are [0, 1, 2] or AUTO"
        ))),
    }
}

/// Resolves `minimum_should_match` against the number of optional clauses.
pub fn resolve_msm(msm: &MinimumShouldMatch, optional: usize) -> usize {
    let n = optional as i64;
    let resolve_simple = |spec: &str| -> i64 {
        let spec = spec.trim();
        if let Some(p) = spec.strip_suffix('%') {
            let p: i64 = p.parse().unwrap_or(0);
            let count = n * p.abs() / 100;
            if p < 0 {
                n - count
            } else {
                count
            }
        } else {
            let c: i64 = spec.parse().unwrap_or(0);
            if c < 0 {
                n + c
            } else {
                c
            }
        }
    };
    let result = match msm {
        MinimumShouldMatch::Count(c) => {
            if *c < 0 {
                n + *c as i64
            } else {
                *c as i64
            }
        }
        MinimumShouldMatch::Percent(p) => {
            let count = n * (p.abs() as i64) / 100;
            if *p < 0 {
                n - count
            } else {
                count
            }
        }
        MinimumShouldMatch::Conditional(spec) => {
            // "a<b c<d": for more than a clauses apply b, …; the last matching condition wins
            let mut result = n;
            for part in spec.split_whitespace() {
                if let Some((threshold, rule)) = part.split_once('<') {
                    if let Ok(threshold) = threshold.trim().parse::<i64>() {
                        if n > threshold {
                            result = resolve_simple(rule);
                        }
                    }
                }
            }
            result
        }
    };
    result.clamp(0, n) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every query parameter that is accepted and then ignored (an arm `=> {}` of a query's
    /// parser), with why ignoring it gives OpenSearch's answer. A parameter that changes
    /// results must be honoured or refused with a 400, never silently dropped: one added to an
    /// ignore list without a reason here fails this test.
    const IGNORED: &[(&str, &str)] = &[
        (
            "_name",
            "names a query for matched_queries: the search request reads the names from its body (tessera-search's named_queries); a name changes no match or score",
        ),
        ("auto_generate_synonyms_phrase_query", "only acts on multi-word synonyms, which no Tessera analyzer produces"),
        ("cutoff_frequency", "no effect in OpenSearch 2.19 either (checked against the reference)"),
        ("distance_type", "no effect on OpenSearch's geo_distance query either: Lucene's distance query is always haversine"),
        ("validation_method", "Tessera validates points strictly (the default); a point that IGNORE_MALFORMED or COERCE would take fails with a 400, never silently"),
        ("type", "geo_bounding_box: an execution hint (memory or indexed) with the same matches; ids: mapping types, ignored by OpenSearch 2.x too"),
        ("max_determinized_states", "a limit that only decides whether a huge regex fails, not what matches"),
        ("store", "a terms lookup's `store: false` reads the values from _source, which is what Tessera does; `store: true` is refused"),
    ];

    /// The keys of the arms `"a" | "b" => {}` of a parser's source.
    fn ignored_keys(source: &str) -> Vec<String> {
        let lines: Vec<&str> = source.lines().collect();
        let mut keys = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            if !line.contains("=> {}") || line.contains("Some(") || line.contains("None") {
                continue;
            }
            let mut first = i;
            while first > 0 && lines[first].trim_start().starts_with('|') {
                first -= 1;
            }
            for arm in &lines[first..=i] {
                let pattern = arm.split("=>").next().unwrap_or_default();
                keys.extend(pattern.split('"').skip(1).step_by(2).map(String::from));
            }
        }
        keys
    }

    #[test]
    fn every_ignored_parameter_is_accounted_for() {
        let parsers = [
            ("bool", include_str!("bool_query.rs")),
            ("compound", include_str!("compound.rs")),
            ("distance_feature", include_str!("distance_feature.rs")),
            ("exists", include_str!("exists.rs")),
            ("function_score", include_str!("function_score.rs")),
            ("fuzzy", include_str!("fuzzy.rs")),
            ("geo", include_str!("geo.rs")),
            ("ids", include_str!("ids.rs")),
            ("match_all", include_str!("match_all.rs")),
            ("match_phrase", include_str!("match_phrase.rs")),
            ("match", include_str!("match_query.rs")),
            ("multi_match", include_str!("multi_match.rs")),
            ("prefix", include_str!("prefix.rs")),
            ("query_string", include_str!("query_string.rs")),
            ("range", include_str!("range.rs")),
            ("regexp", include_str!("regexp.rs")),
            (
                "simple_query_string",
                include_str!("simple_query_string.rs"),
            ),
            ("term", include_str!("term.rs")),
            ("terms", include_str!("terms.rs")),
            ("wildcard", include_str!("wildcard.rs")),
        ];
        let mut seen = Vec::new();
        for (parser, source) in parsers {
            for key in ignored_keys(source) {
                assert!(
                    IGNORED.iter().any(|(known, _)| *known == key),
                    "[{parser}] ignores [{key}]: honour it, refuse it, or say here why ignoring it is right"
                );
                seen.push(key);
            }
        }
        // the list holds nothing that is no longer ignored anywhere
        for (known, _) in IGNORED {
            assert!(
                seen.iter().any(|k| k == known),
                "[{known}] is no longer ignored"
            );
        }
        // the parameters that used to be ignored and now change the query
        let changes = |query: Value, with: Value| {
            let plain = parse_query(&query).unwrap();
            let mut changed = query.clone();
            merge(&mut changed, &with);
            assert_ne!(parse_query(&changed).unwrap(), plain, "{with} in {query}");
        };
        fn merge(into: &mut Value, from: &Value) {
            match (into, from) {
                (Value::Object(a), Value::Object(b)) => {
                    for (k, v) in b {
                        merge(a.entry(k.clone()).or_insert(Value::Null), v);
                    }
                }
                (slot, v) => *slot = v.clone(),
            }
        }
        let fuzzy = json!({"fuzzy": {"t": {"value": "a"}}});
        changes(
            fuzzy.clone(),
            json!({"fuzzy": {"t": {"max_expansions": 3}}}),
        );
        changes(
            fuzzy,
            json!({"fuzzy": {"t": {"rewrite": "top_terms_blended_freqs_3"}}}),
        );
        let m = json!({"match": {"t": {"query": "a", "fuzziness": 1}}});
        for option in [
            json!({"max_expansions": 3}),
            json!({"fuzzy_transpositions": false}),
            json!({"fuzzy_rewrite": "top_terms_blended_freqs_3"}),
        ] {
            changes(m.clone(), json!({"match": {"t": option.clone()}}));
            changes(
                json!({"multi_match": {"query": "a", "fuzziness": 1}}),
                json!({ "multi_match": option }),
            );
        }
        let qs = json!({"query_string": {"query": "a~1 -b"}});
        for option in [
            json!({"fuzzy_max_expansions": 3}),
            json!({"fuzzy_transpositions": false}),
            json!({"fuzzy_rewrite": "top_terms_blended_freqs_3"}),
            json!({"escape": true}),
        ] {
            changes(qs.clone(), json!({ "query_string": option }));
        }
        changes(
            json!({"simple_query_string": {"query": "a~1"}}),
            json!({"simple_query_string": {"fuzzy_transpositions": false}}),
        );
        let geo = json!({"geo_distance": {"distance": "1km", "loc": [0, 0]}});
        changes(geo, json!({"geo_distance": {"ignore_unmapped": true}}));
    }

    #[test]
    fn rewrite_methods_that_would_score_differently_are_refused() {
        let rewrite = |v: &str| parse_rewrite("prefix", "rewrite", &json!(v));
        assert_eq!(rewrite("constant_score").unwrap(), Rewrite::Constant);
        assert_eq!(
            rewrite("constant_score_boolean").unwrap(),
            Rewrite::Constant
        );
        assert_eq!(
            rewrite("top_terms_blended_freqs_7").unwrap(),
            Rewrite::TopTermsBlended(7)
        );
        for scored in ["scoring_boolean", "top_terms_3", "top_terms_boost_3"] {
            let e = rewrite(scored).unwrap_err();
            assert_eq!(e.status(), 400, "{scored}");
            assert!(e.reason().contains("not supported"), "{scored}");
        }
        for bogus in ["bogus", "top_terms_x", "top_terms_blended_freqs_0"] {
            assert_eq!(
                rewrite(bogus).unwrap_err().reason(),
                format!("Failed to parse rewrite_method [{bogus}]")
            );
        }
        // each query takes what its own default gives
        assert!(parse_query(
            &json!({"prefix": {"k": {"value": "a", "rewrite": "scoring_boolean"}}})
        )
        .is_err());
        assert!(parse_query(
            &json!({"wildcard": {"k": {"value": "a*", "rewrite": "constant_score"}}})
        )
        .is_ok());
        assert!(
            parse_query(&json!({"fuzzy": {"k": {"value": "a", "rewrite": "constant_score"}}}))
                .is_err()
        );
        let QueryAst::Fuzzy { max_expansions, .. } = parse_query(
            &json!({"fuzzy": {"k": {"value": "a", "rewrite": "top_terms_blended_freqs_4", "max_expansions": 9}}}),
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(max_expansions, 4);
        let QueryAst::Match(m) = parse_query(
            &json!({"match": {"t": {"query": "a", "fuzziness": 1, "fuzzy_rewrite": "top_terms_blended_freqs_3", "fuzzy_transpositions": false}}}),
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!((m.max_expansions, m.fuzzy_transpositions), (3, false));
        assert!(
            parse_query(&json!({"query_string": {"query": "a*", "rewrite": "top_terms_2"}}))
                .is_err()
        );
    }

    #[test]
    fn unknown_and_unsupported_queries() {
        assert_eq!(
            parse_query(&json!({"bogus": {}})).unwrap_err().reason(),
            "unknown query [bogus]"
        );
        assert!(parse_query(&json!({"has_child": {}}))
            .unwrap_err()
            .reason()
            .contains("not supported"));
        assert!(parse_query(&json!("x"))
            .unwrap_err()
            .reason()
            .contains("must start with start_object"));
        assert!(parse_query(&json!({"match_all": {}, "term": {}}))
            .unwrap_err()
            .reason()
            .contains("malformed query"));
        assert_eq!(parse_query(&json!({})).unwrap_err().reason(), EMPTY_CLAUSE);
    }

    #[test]
    fn msm_forms() {
        assert_eq!(
            resolve_msm(&parse_minimum_should_match(&json!(2)).unwrap(), 5),
            2
        );
        assert_eq!(
            resolve_msm(&parse_minimum_should_match(&json!("-1")).unwrap(), 5),
            4
        );
        assert_eq!(
            resolve_msm(&parse_minimum_should_match(&json!("75%")).unwrap(), 5),
            3
        );
        assert_eq!(
            resolve_msm(&parse_minimum_should_match(&json!("-25%")).unwrap(), 5),
            4
        );
        assert_eq!(
            resolve_msm(&parse_minimum_should_match(&json!("2<75%")).unwrap(), 2),
            2
        );
        assert_eq!(
            resolve_msm(&parse_minimum_should_match(&json!("2<75%")).unwrap(), 8),
            6
        );
        assert_eq!(
            resolve_msm(&parse_minimum_should_match(&json!(10)).unwrap(), 3),
            3
        );
        assert!(parse_minimum_should_match(&json!("x%")).is_err());
    }

    #[test]
    fn fuzziness_forms() {
        assert_eq!(
            parse_fuzziness(&json!("AUTO")).unwrap(),
            Fuzziness::Auto { low: 3, high: 6 }
        );
        assert_eq!(
            parse_fuzziness(&json!("auto:2,5")).unwrap(),
            Fuzziness::Auto { low: 2, high: 5 }
        );
        assert_eq!(parse_fuzziness(&json!(1)).unwrap(), Fuzziness::Edits(1));
        assert_eq!(parse_fuzziness(&json!("2")).unwrap(), Fuzziness::Edits(2));
        assert!(parse_fuzziness(&json!(3)).is_err());
    }
}
