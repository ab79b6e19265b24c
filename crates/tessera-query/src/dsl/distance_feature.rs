//! `distance_feature`: documents scored by how close a date or geo point field is to an
//! origin.

use serde_json::Value;
use tessera_common::{Error, Result};

use super::{as_f32, as_string, object};
use crate::ast::{DistanceFeatureQuery, QueryAst};

pub fn parse(body: &Value) -> Result<QueryAst> {
    let (mut field, mut origin, mut pivot) = (None, None, None);
    let mut boost = 1.0;
    for (key, value) in object("distance_feature", body)? {
        match key.as_str() {
            "field" => field = Some(as_string("distance_feature", key, value)?),
            "origin" => origin = Some(value.clone()),
            "pivot" => pivot = Some(as_string("distance_feature", key, value)?),
            "boost" => boost = as_f32("distance_feature", key, value)?,
            "_name" => {}
            other => {
                return Err(Error::x_content_parse(format!(
                    "[distance_feature] unknown field [{other}]"
                )))
            }
        }
    }
    let required = |name: &str| Error::illegal_argument(format!("Required [{name}]"));
    Ok(QueryAst::DistanceFeature(Box::new(DistanceFeatureQuery {
        field: field.ok_or_else(|| required("field"))?,
        origin: origin.ok_or_else(|| required("origin"))?,
        pivot: pivot.ok_or_else(|| required("pivot"))?,
        boost,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_and_refuses_as_opensearch_does() {
        let QueryAst::DistanceFeature(q) =
            parse(&json!({"field": "d", "origin": "now", "pivot": "7d", "boost": 2})).unwrap()
        else {
            panic!("a distance_feature query")
        };
        assert_eq!(
            (q.field.as_str(), q.pivot.as_str(), q.boost),
            ("d", "7d", 2.0)
        );
        let e = parse(&json!({"field": "d", "pivot": "7d"})).unwrap_err();
        assert_eq!(e.reason(), "Required [origin]");
        let e = parse(&json!({"field": "d", "origin": 1, "pivot": "7d", "x": 1})).unwrap_err();
        assert_eq!(e.reason(), "[distance_feature] unknown field [x]");
    }
}
