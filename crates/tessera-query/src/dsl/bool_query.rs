//! `bool`: must / should / filter / must_not.

use serde_json::Value;
use tessera_common::{Error, Result};

use super::{as_bool, as_f32, object, parse_minimum_should_match, parse_query};
use crate::ast::{BoolQuery, QueryAst};

fn clauses(key: &str, value: &Value) -> Result<Vec<QueryAst>> {
    match value {
        Value::Array(items) => items.iter().map(parse_query).collect(),
        Value::Object(_) => Ok(vec![parse_query(value)?]),
        _ => Err(Error::parsing(format!(
            "[bool] query does not support [{key}]"
        ))),
    }
}

pub fn parse(body: &Value) -> Result<QueryAst> {
    let mut query = BoolQuery {
        boost: 1.0,
        ..Default::default()
    };
    for (key, value) in object("bool", body)? {
        match key.as_str() {
            "must" => query.must.extend(clauses(key, value)?),
            "should" => query.should.extend(clauses(key, value)?),
            "filter" => query.filter.extend(clauses(key, value)?),
            "must_not" | "mustNot" => query.must_not.extend(clauses(key, value)?),
            "minimum_should_match" => {
                query.minimum_should_match = Some(parse_minimum_should_match(value)?)
            }
            "boost" => query.boost = as_f32("bool", key, value)?,
            "adjust_pure_negative" => {
                as_bool("bool", key, value)?;
            }
            "_name" => {}
            // `bool` is parsed by a declarative object parser in OpenSearch, whose unknown
            // keys are `x_content_parse_exception`s (the REST layer adds the position).
            _ => {
                return Err(Error::x_content_parse(format!(
                    "[bool] unknown field [{key}]"
                )))
            }
        }
    }
    Ok(QueryAst::Bool(query))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_object_and_array_clauses() {
        let QueryAst::Bool(b) = parse(&json!({
            "must": {"match_all": {}},
            "filter": [{"term": {"a": 1}}, {"range": {"n": {"gte": 1}}}],
            "must_not": [], "should": [{"term": {"b": 2}}],
            "minimum_should_match": 1
        }))
        .unwrap() else {
            panic!()
        };
        assert_eq!(
            (
                b.must.len(),
                b.filter.len(),
                b.must_not.len(),
                b.should.len()
            ),
            (1, 2, 0, 1)
        );
        assert_eq!(
            parse(&json!({"bogus": []})).unwrap_err().reason(),
            "[bool] unknown field [bogus]"
        );
        assert!(parse(&json!({"must": 1})).is_err());
    }
}
