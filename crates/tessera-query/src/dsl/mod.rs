//! Wire parsing of the query DSL: OpenSearch JSON → [`QueryAst`].
//!
//! One file per query type, each checking every key it is given: an unknown parameter is a
//! `parsing_exception` naming the query and the parameter, exactly as OpenSearch words it,
//! never silently ignored.

use serde_json::{Map, Value};
use tessera_common::{Error, Result};

use crate::ast::{Fuzziness, MinimumShouldMatch, Operator, QueryAst, ZeroTermsQuery};

mod bool_query;
mod compound;
mod exists;
mod fuzzy;
mod geo;
mod ids;
mod match_all;
mod match_phrase;
mod match_query;
mod multi_match;
mod prefix;
mod query_string;
mod range;
mod regexp;
mod simple_query_string;
mod term;
mod terms;
mod wildcard;

/// Query types OpenSearch has that Tessera does not implement.
const UNSUPPORTED: &[&str] = &[
    "nested",
    "has_child",
    "has_parent",
    "parent_id",
    "geo_polygon",
    "geo_shape",
    "script",
    "script_score",
    "function_score",
    "more_like_this",
    "percolate",
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
    "distance_feature",
    "rank_feature",
    "wrapper",
    "pinned",
    "terms_set",
    "match_bool_prefix",
    "combined_fields",
    "knn",
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
        "range" => range::parse(body),
        "exists" => exists::parse(body),
        "ids" => ids::parse(body),
        "prefix" => prefix::parse(body),
        "wildcard" => wildcard::parse(body),
        "regexp" => regexp::parse(body),
        "fuzzy" => fuzzy::parse(body),
        "match" => match_query::parse(body),
        "match_phrase" => match_phrase::parse_phrase(body),
        "match_phrase_prefix" => match_phrase::parse_phrase_prefix(body),
        "multi_match" => multi_match::parse(body),
        "bool" => bool_query::parse(body),
        "constant_score" => compound::parse_constant_score(body),
        "dis_max" => compound::parse_dis_max(body),
        "boosting" => compound::parse_boosting(body),
        "geo_distance" => geo::parse_distance_query(body),
        "geo_bounding_box" => geo::parse_bounding_box(body),
        "query_string" => query_string::parse(body),
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

pub(crate) fn token(value: &Value) -> &'static str {
    match value {
        Value::Object(_) => "START_OBJECT",
        Value::Array(_) => "START_ARRAY",
        Value::Null => "VALUE_NULL",
        Value::Bool(_) => "VALUE_BOOLEAN",
        Value::Number(_) => "VALUE_NUMBER",
        Value::String(_) => "VALUE_STRING",
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

    #[test]
    fn unknown_and_unsupported_queries() {
        assert_eq!(
            parse_query(&json!({"bogus": {}})).unwrap_err().reason(),
            "unknown query [bogus]"
        );
        assert!(parse_query(&json!({"nested": {}}))
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
