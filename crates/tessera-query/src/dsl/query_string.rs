//! `query_string`: wire options only; the query text is parsed once the shard's fields are
//! known (see `crate::query_string`).

use serde_json::Value;
use tessera_common::{Error, Result};

use super::multi_match::{parse_fields, parse_type};
use super::{
    as_bool, as_f32, as_string, as_u32, object, parse_fuzziness, parse_fuzzy_rewrite,
    parse_minimum_should_match, parse_operator, parse_rewrite, plain, unknown, Rewrite,
};
use crate::ast::{QueryAst, QueryStringQuery};

/// `escape: true`: the query's syntax characters are taken literally, as Lucene's
/// `QueryParser.escape` makes them (the words AND, OR and NOT stay operators).
fn escape_syntax(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if "\\+-!():^[]\"{}~*?|&/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

pub fn parse(body: &Value) -> Result<QueryAst> {
    let mut q = QueryStringQuery::new(String::new());
    let mut text = None;
    let mut escape = false;
    for (key, v) in object("query_string", body)? {
        match key.as_str() {
            "query" => text = Some(as_string("query_string", key, v)?),
            "default_field" => q.default_field = Some(as_string("query_string", key, v)?),
            "fields" => q.fields = parse_fields("query_string", v)?,
            "default_operator" => q.default_operator = parse_operator("query_string", v)?,
            "analyze_wildcard" => q.analyze_wildcard = as_bool("query_string", key, v)?,
            "allow_leading_wildcard" => q.allow_leading_wildcard = as_bool("query_string", key, v)?,
            "lenient" => q.lenient = Some(as_bool("query_string", key, v)?),
            "minimum_should_match" => q.minimum_should_match = Some(parse_minimum_should_match(v)?),
            "phrase_slop" => q.phrase_slop = as_u32("query_string", key, v)?,
            "fuzziness" => q.fuzziness = Some(parse_fuzziness(v)?),
            "fuzzy_prefix_length" => q.fuzzy_prefix_length = as_u32("query_string", key, v)?,
            "tie_breaker" => q.tie_breaker = Some(as_f32("query_string", key, v)?),
            "type" => q.kind = parse_type(v)?,
            "time_zone" => q.time_zone = Some(as_string("query_string", key, v)?),
            "analyzer" | "quote_analyzer" => q.analyzer = Some(as_string("query_string", key, v)?),
            "boost" => q.boost = as_f32("query_string", key, v)?,
            "fuzzy_max_expansions" => q.fuzzy_max_expansions = as_u32("query_string", key, v)?,
            "fuzzy_transpositions" => q.fuzzy_transpositions = as_bool("query_string", key, v)?,
            "fuzzy_rewrite" => {
                q.fuzzy_max_expansions = parse_fuzzy_rewrite("query_string", key, v)?
            }
            "rewrite" => {
                // its prefix, wildcard and regexp terms score a constant, OpenSearch's default
                if parse_rewrite("query_string", key, v)? != Rewrite::Constant {
                    return Err(Error::not_supported(&format!(
                        "[rewrite] [{}] in the [query_string] query",
                        plain(v)
                    )));
                }
            }
            "escape" => escape = as_bool("query_string", key, v)?,
            "enable_position_increments" => {
                // true is what Tessera's phrases do; false would place them differently
                if !as_bool("query_string", key, v)? {
                    return Err(Error::not_supported(
                        "[query_string] enable_position_increments: false",
                    ));
                }
            }
            "auto_generate_synonyms_phrase_query" | "max_determinized_states" | "_name" => {}
            "quote_field_suffix" => {
                return Err(Error::not_supported("[query_string] quote_field_suffix"))
            }
            _ => return Err(unknown("query_string", key)),
        }
    }
    let text =
        text.ok_or_else(|| Error::parsing("[query_string] must be provided with a [query]"))?;
    q.query = if escape { escape_syntax(&text) } else { text };
    if q.default_field.is_some() && !q.fields.is_empty() {
        return Err(Error::parsing(
            "[query_string] cannot use [fields] parameter in conjunction with [default_field]",
        ));
    }
    Ok(QueryAst::QueryString(q))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escape_takes_the_syntax_literally() {
        assert_eq!(
            escape_syntax("a -b (c) AND d:e"),
            "a \\-b \\(c\\) AND d\\:e"
        );
        let QueryAst::QueryString(q) =
            parse(&json!({"query": "quick -fox", "escape": true})).unwrap()
        else {
            panic!()
        };
        assert_eq!(q.query, "quick \\-fox");
        let e = parse(&json!({"query": "a", "enable_position_increments": false})).unwrap_err();
        assert_eq!(e.status(), 400);
        assert!(parse(&json!({"query": "a", "enable_position_increments": true})).is_ok());
    }

    #[test]
    fn parses() {
        let QueryAst::QueryString(q) = parse(
            &json!({"query": "a AND b", "default_field": "message", "default_operator": "AND"}),
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(q.default_field.as_deref(), Some("message"));
        assert!(parse(&json!({"default_field": "m"})).is_err());
        assert!(parse(&json!({"query": "x", "fields": ["a"], "default_field": "b"})).is_err());
        assert!(parse(&json!({"query": "x", "bogus": 1})).is_err());
    }
}
