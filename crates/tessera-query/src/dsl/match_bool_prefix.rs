//! `match_bool_prefix`: the analyzed terms of a text as a `bool` of term queries, the last one
//! a prefix — the query `multi_match` runs for `type: bool_prefix`, on one field.

use serde_json::Value;
use tessera_common::{Error, Result};

use super::{
    as_bool, as_f32, as_scalar, as_string, as_u32, parse_fuzziness, parse_fuzzy_rewrite,
    parse_minimum_should_match, parse_operator, single_field, unknown,
};
use crate::ast::{FieldPattern, MultiMatchQuery, MultiMatchType, QueryAst};

const NAME: &str = "match_bool_prefix";

pub fn parse(body: &Value) -> Result<QueryAst> {
    let (field, spec, outer_boost) = single_field(NAME, body)?;
    let pattern = FieldPattern {
        pattern: field.clone(),
        boost: 1.0,
    };
    let mut query = MultiMatchQuery::new(vec![pattern], MultiMatchType::BoolPrefix);
    if let Some(boost) = outer_boost {
        query.boost = boost;
    }
    match spec {
        Value::Object(options) => {
            let mut text = None;
            let mut rewrite_size = None;
            for (key, v) in options {
                match key.as_str() {
                    "query" => text = Some(as_scalar(NAME, key, v)?),
                    "analyzer" => query.analyzer = Some(as_string(NAME, key, v)?),
                    "operator" => query.operator = parse_operator(NAME, v)?,
                    "minimum_should_match" => {
                        query.minimum_should_match = Some(parse_minimum_should_match(v)?)
                    }
                    "fuzziness" => query.fuzziness = Some(parse_fuzziness(v)?),
                    "prefix_length" => query.prefix_length = as_u32(NAME, key, v)?,
                    "max_expansions" => {
                        query.max_expansions = as_u32(NAME, key, v)?;
                        if query.max_expansions == 0 {
                            return Err(Error::illegal_argument(
                                "[max_expansions] must be greater than 0",
                            ));
                        }
                    }
                    "fuzzy_transpositions" => query.fuzzy_transpositions = as_bool(NAME, key, v)?,
                    "fuzzy_rewrite" => rewrite_size = Some(parse_fuzzy_rewrite(NAME, key, v)?),
                    "boost" => query.boost = as_f32(NAME, key, v)?,
                    "_name" => {}
                    _ => return Err(unknown(NAME, key)),
                }
            }
            if let Some(n) = rewrite_size {
                query.max_expansions = n;
            }
            query.query = text
                .ok_or_else(|| Error::illegal_argument(format!("[{NAME}] requires query value")))?;
        }
        other => query.query = as_scalar(NAME, field, other)?,
    }
    Ok(QueryAst::MultiMatch(query))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::Operator;
    use serde_json::json;

    #[test]
    fn a_short_and_a_long_form() {
        let QueryAst::MultiMatch(q) = parse(&json!({"t": "quick brown f"})).unwrap() else {
            panic!()
        };
        assert_eq!(q.kind, MultiMatchType::BoolPrefix);
        assert_eq!(q.fields[0].pattern, "t");
        let QueryAst::MultiMatch(q) = parse(&json!({"t": {"query": "quick f", "operator": "and",
            "minimum_should_match": 2, "fuzziness": 1, "boost": 2}}))
        .unwrap() else {
            panic!()
        };
        assert_eq!((q.operator, q.boost), (Operator::And, 2.0));
        assert!(q.fuzziness.is_some() && q.minimum_should_match.is_some());
        assert!(parse(&json!({"t": {"query": "x", "slop": 1}})).is_err());
        assert!(parse(&json!({"t": {"operator": "and"}})).is_err());
    }
}
