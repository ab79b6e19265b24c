//! `simple_query_string`: wire options; the text is parsed per shard (`crate::query_string`).

use serde_json::Value;
use tessera_common::{Error, Result};

use super::multi_match::parse_fields;
use super::{
    as_bool, as_f32, as_string, as_u32, object, parse_minimum_should_match, parse_operator, unknown,
};
use crate::ast::{QueryAst, SimpleQueryFlags, SimpleQueryStringQuery};

/// `flags`: `ALL`, `NONE`, or a `|` list such as `AND|OR|PREFIX`.
pub fn parse_flags(value: &Value) -> Result<SimpleQueryFlags> {
    if let Some(n) = value.as_i64() {
        return Ok(SimpleQueryFlags(if n < 0 {
            SimpleQueryFlags::ALL
        } else {
            n as u32
        }));
    }
    let text = value
        .as_str()
        .ok_or_else(|| Error::parsing("[simple_query_string] [flags] must be a string"))?;
    let mut bits = 0;
    for name in text.split('|').map(|s| s.trim().to_ascii_uppercase()) {
        bits |= match name.as_str() {
            "ALL" => SimpleQueryFlags::ALL,
            "NONE" | "" => 0,
            "AND" => SimpleQueryFlags::AND,
            "NOT" => SimpleQueryFlags::NOT,
            "OR" => SimpleQueryFlags::OR,
            "PREFIX" => SimpleQueryFlags::PREFIX,
            "PHRASE" => SimpleQueryFlags::PHRASE,
            "PRECEDENCE" => SimpleQueryFlags::PRECEDENCE,
            "ESCAPE" => SimpleQueryFlags::ESCAPE,
            "WHITESPACE" => SimpleQueryFlags::WHITESPACE,
            "FUZZY" => SimpleQueryFlags::FUZZY,
            "NEAR" | "SLOP" => SimpleQueryFlags::NEAR,
            other => {
                return Err(Error::illegal_argument(format!(
                    "Unknown simple_query_string flag [{other}]"
                )))
            }
        };
    }
    Ok(SimpleQueryFlags(bits))
}

pub fn parse(body: &Value) -> Result<QueryAst> {
    let mut q = SimpleQueryStringQuery::new(String::new());
    let mut text = None;
    for (key, v) in object("simple_query_string", body)? {
        match key.as_str() {
            "query" => text = Some(as_string("simple_query_string", key, v)?),
            "fields" => q.fields = parse_fields("simple_query_string", v)?,
            "default_operator" => q.default_operator = parse_operator("simple_query_string", v)?,
            "flags" => q.flags = parse_flags(v)?,
            "analyze_wildcard" => q.analyze_wildcard = as_bool("simple_query_string", key, v)?,
            "lenient" => q.lenient = Some(as_bool("simple_query_string", key, v)?),
            "minimum_should_match" => q.minimum_should_match = Some(parse_minimum_should_match(v)?),
            "fuzzy_prefix_length" => q.fuzzy_prefix_length = as_u32("simple_query_string", key, v)?,
            "fuzzy_max_expansions" => {
                q.fuzzy_max_expansions = as_u32("simple_query_string", key, v)?
            }
            "analyzer" => q.analyzer = Some(as_string("simple_query_string", key, v)?),
            "boost" => q.boost = as_f32("simple_query_string", key, v)?,
            "fuzzy_transpositions" => {
                q.fuzzy_transpositions = as_bool("simple_query_string", key, v)?
            }
            "auto_generate_synonyms_phrase_query" | "_name" => {}
            "quote_field_suffix" => {
                return Err(Error::not_supported(
                    "[simple_query_string] quote_field_suffix",
                ))
            }
            _ => return Err(unknown("simple_query_string", key)),
        }
    }
    q.query = text.ok_or_else(|| Error::parsing("[simple_query_string] query text missing"))?;
    Ok(QueryAst::SimpleQueryString(q))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_flags() {
        assert_eq!(
            parse_flags(&json!("AND|OR")).unwrap().0,
            SimpleQueryFlags::AND | SimpleQueryFlags::OR
        );
        assert_eq!(parse_flags(&json!("ALL")).unwrap().0, SimpleQueryFlags::ALL);
        assert!(parse_flags(&json!("BOGUS")).is_err());
        assert!(matches!(
            parse(&json!({"query": "a +b", "fields": ["t"]})).unwrap(),
            QueryAst::SimpleQueryString(_)
        ));
    }
}
