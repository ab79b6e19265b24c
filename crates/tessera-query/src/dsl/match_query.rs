//! `match`: analyzed full-text search on one field.

use serde_json::Value;
use tessera_common::Result;

use super::{
    as_bool, as_f32, as_scalar, as_string, as_u32, parse_fuzziness, parse_fuzzy_rewrite,
    parse_minimum_should_match, parse_operator, parse_zero_terms, single_field, unknown,
};
use crate::ast::{MatchQuery, QueryAst};

pub fn parse(body: &Value) -> Result<QueryAst> {
    let (field, spec, outer_boost) = single_field("match", body)?;
    let mut query = MatchQuery::new(field.clone(), Value::Null);
    if let Some(boost) = outer_boost {
        query.boost = boost;
    }
    match spec {
        Value::Object(options) => {
            let mut text = None;
            // top_terms_blended_freqs_N: N terms, whatever max_expansions says
            let mut rewrite_size = None;
            for (key, v) in options {
                match key.as_str() {
                    "query" => text = Some(as_scalar("match", key, v)?),
                    "operator" => query.operator = parse_operator("match", v)?,
                    "minimum_should_match" => {
                        query.minimum_should_match = Some(parse_minimum_should_match(v)?)
                    }
                    "fuzziness" => query.fuzziness = Some(parse_fuzziness(v)?),
                    "prefix_length" => query.prefix_length = as_u32("match", key, v)?,
                    "zero_terms_query" => query.zero_terms_query = parse_zero_terms(v)?,
                    "analyzer" => query.analyzer = Some(as_string("match", key, v)?),
                    "lenient" => query.lenient = as_bool("match", key, v)?,
                    "boost" => query.boost = as_f32("match", key, v)?,
                    "max_expansions" => {
                        query.max_expansions = as_u32("match", key, v)?;
                        if query.max_expansions == 0 {
                            return Err(tessera_common::Error::illegal_argument(
                                "[max_expansions] must be greater than 0",
                            ));
                        }
                    }
                    "fuzzy_transpositions" => {
                        query.fuzzy_transpositions = as_bool("match", key, v)?
                    }
                    "fuzzy_rewrite" => rewrite_size = Some(parse_fuzzy_rewrite("match", key, v)?),
                    "auto_generate_synonyms_phrase_query" | "cutoff_frequency" | "_name" => {}
                    _ => return Err(unknown("match", key)),
                }
            }
            if let Some(n) = rewrite_size {
                query.max_expansions = n;
            }
            query.query = text.ok_or_else(|| {
                tessera_common::Error::parsing("No text specified for text query")
            })?;
        }
        other => query.query = as_scalar("match", field, other)?,
    }
    Ok(QueryAst::Match(query))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::{MinimumShouldMatch, Operator};
    use serde_json::json;

    #[test]
    fn parses_options() {
        let QueryAst::Match(q) = parse(&json!({"title": {"query": "quick fox", "operator": "and", "minimum_should_match": "75%"}})).unwrap() else { panic!() };
        assert_eq!(q.operator, Operator::And);
        assert_eq!(
            q.minimum_should_match,
            Some(MinimumShouldMatch::Percent(75))
        );
        let QueryAst::Match(q) = parse(&json!({"n": 5})).unwrap() else {
            panic!()
        };
        assert_eq!(q.query, json!(5));
        assert_eq!(
            parse(&json!({"title": {"query": "x", "bogus": 1}}))
                .unwrap_err()
                .reason(),
            "[match] query does not support [bogus]"
        );
        assert!(parse(&json!({"title": {"operator": "and"}})).is_err());
        assert!(parse(&json!({"title": {"query": "x", "operator": "xor"}})).is_err());
    }
}
