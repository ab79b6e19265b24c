//! `nested`: `path`, `query`, `score_mode`, `ignore_unmapped`, `inner_hits`, `boost`.

use serde_json::Value;
use tessera_common::{Error, Result};

use super::{as_bool, as_f32, as_string, object, parse_query, unknown};
use crate::ast::{NestedQueryAst, QueryAst};
use crate::nested::ScoreMode;

pub fn parse(body: &Value) -> Result<QueryAst> {
    let mut path = None;
    let mut query = None;
    let mut score_mode = ScoreMode::Avg;
    let mut ignore_unmapped = false;
    let mut boost = 1.0;
    let mut inner_hits = None;
    for (key, value) in object("nested", body)? {
        match key.as_str() {
            "path" => path = Some(as_string("nested", key, value)?),
            "query" => query = Some(parse_query(value)?),
            "score_mode" => {
                let name = as_string("nested", key, value)?;
                score_mode = ScoreMode::parse(&name).ok_or_else(|| {
                    Error::illegal_argument(format!("No score mode for child query [{name}] found"))
                })?;
            }
            "ignore_unmapped" => ignore_unmapped = as_bool("nested", key, value)?,
            "boost" => boost = as_f32("nested", key, value)?,
            "inner_hits" => {
                if !value.is_object() {
                    return Err(Error::parsing(
                        "[nested] query malformed, [inner_hits] must be an object",
                    ));
                }
                inner_hits = Some(value.clone());
            }
            "_name" => {}
            _ => return Err(unknown("nested", key)),
        }
    }
    let path = path.ok_or_else(|| Error::illegal_argument("[nested] requires 'path' field"))?;
    let query = query.ok_or_else(|| Error::illegal_argument("[nested] requires 'query' field"))?;
    Ok(QueryAst::Nested(Box::new(NestedQueryAst {
        path,
        query,
        score_mode,
        ignore_unmapped,
        boost,
        inner_hits,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_and_checks_the_nested_query() {
        let q =
            parse(&json!({"path": "c", "query": {"match_all": {}}, "score_mode": "max"})).unwrap();
        let QueryAst::Nested(n) = q else { panic!() };
        assert_eq!((n.path.as_str(), n.score_mode), ("c", ScoreMode::Max));
        let reason = |b: Value| parse(&b).unwrap_err().reason().to_string();
        assert_eq!(reason(json!({})), "[nested] requires 'path' field");
        assert_eq!(
            reason(json!({"path": "c"})),
            "[nested] requires 'query' field"
        );
        assert_eq!(
            reason(json!({"path": "c", "query": {"match_all": {}}, "score_mode": "x"})),
            "No score mode for child query [x] found"
        );
        assert_eq!(
            reason(json!({"path": "c", "query": {"match_all": {}}, "bogus": 1})),
            "[nested] query does not support [bogus]"
        );
    }
}
