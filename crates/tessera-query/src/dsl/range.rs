//! `range`: bounds on a field (`gt`, `gte`, `lt`, `lte`, legacy `from`/`to`).

use serde_json::Value;
use tessera_common::{Error, Result};

use super::{as_bool, as_f32, as_string, object, single_field, unknown};
use crate::ast::{QueryAst, RangeBound, RangeQuery, RangeRelation};

pub fn parse(body: &Value) -> Result<QueryAst> {
    let (field, spec, outer_boost) = single_field("range", body)?;
    let options = object("range", spec)?;
    let mut range = RangeQuery {
        field: field.clone(),
        lower: None,
        upper: None,
        format: None,
        time_zone: None,
        relation: RangeRelation::Intersects,
        boost: outer_boost.unwrap_or(1.0),
    };
    // legacy from/to with include_lower/include_upper
    let mut from: Option<Value> = None;
    let mut to: Option<Value> = None;
    let mut include_lower = true;
    let mut include_upper = true;
    for (key, value) in options {
        let bound = |inclusive: bool| -> Result<Option<RangeBound>> {
            match value {
                Value::Null => Ok(None),
                Value::String(_) | Value::Number(_) | Value::Bool(_) => Ok(Some(RangeBound {
                    value: value.clone(),
                    inclusive,
                })),
                other => Err(Error::parsing(format!(
                    "[range] query does not support a [{}] value for [{key}]",
                    super::token(other)
                ))),
            }
        };
        match key.as_str() {
            "gt" => range.lower = bound(false)?,
            "gte" => range.lower = bound(true)?,
            "lt" => range.upper = bound(false)?,
            "lte" => range.upper = bound(true)?,
            "from" => from = Some(value.clone()),
            "to" => to = Some(value.clone()),
            "include_lower" => include_lower = as_bool("range", key, value)?,
            "include_upper" => include_upper = as_bool("range", key, value)?,
            "format" => range.format = Some(as_string("range", key, value)?),
            "time_zone" => range.time_zone = Some(as_string("range", key, value)?),
            "boost" => range.boost = as_f32("range", key, value)?,
            "relation" => {
                // OpenSearch's ShapeRelation names; only range fields look at it
                let relation = as_string("range", key, value)?;
                range.relation = match relation.to_lowercase().as_str() {
                    "intersects" => RangeRelation::Intersects,
                    "within" => RangeRelation::Within,
                    "contains" => RangeRelation::Contains,
                    "disjoint" => {
                        return Err(Error::illegal_argument(
                            "[range] query does not support relation [disjoint]",
                        ))
                    }
                    _ => {
                        return Err(Error::illegal_argument(format!(
                            "{relation} is not a valid relation"
                        )))
                    }
                };
            }
            "_name" => {}
            _ => return Err(unknown("range", key)),
        }
    }
    if let Some(from) = from.filter(|v| !v.is_null()) {
        range.lower = Some(RangeBound {
            value: from,
            inclusive: include_lower,
        });
    }
    if let Some(to) = to.filter(|v| !v.is_null()) {
        range.upper = Some(RangeBound {
            value: to,
            inclusive: include_upper,
        });
    }
    Ok(QueryAst::Range(range))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bounds_and_options() {
        let q = parse(&json!({"total_amount": {"gte": 5, "lt": 15}})).unwrap();
        let QueryAst::Range(r) = q else { panic!() };
        assert_eq!(
            r.lower,
            Some(RangeBound {
                value: json!(5),
                inclusive: true
            })
        );
        assert_eq!(
            r.upper,
            Some(RangeBound {
                value: json!(15),
                inclusive: false
            })
        );
        let QueryAst::Range(r) = parse(&json!({"d": {"gte": "01/01/2015", "lte": "21/01/2015", "format": "dd/MM/yyyy", "time_zone": "+01:00"}})).unwrap() else { panic!() };
        assert_eq!(r.format.as_deref(), Some("dd/MM/yyyy"));
        assert_eq!(r.time_zone.as_deref(), Some("+01:00"));
        let QueryAst::Range(r) =
            parse(&json!({"n": {"from": 1, "to": 5, "include_upper": false}})).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            r.upper,
            Some(RangeBound {
                value: json!(5),
                inclusive: false
            })
        );
        assert_eq!(
            parse(&json!({"n": {"gte": 1, "bogus": 2}}))
                .unwrap_err()
                .reason(),
            "[range] query does not support [bogus]"
        );
        assert!(parse(&json!({"n": 5})).is_err());
    }

    #[test]
    fn relations() {
        let relation = |body: Value| match parse(&body) {
            Ok(QueryAst::Range(r)) => Ok(r.relation),
            Ok(other) => panic!("{other:?}"),
            Err(e) => Err((e.kind().to_string(), e.reason().to_string())),
        };
        assert_eq!(
            relation(json!({"r": {"gte": 1}})),
            Ok(RangeRelation::Intersects)
        );
        assert_eq!(
            relation(json!({"r": {"gte": 1, "relation": "WITHIN"}})),
            Ok(RangeRelation::Within)
        );
        assert_eq!(
            relation(json!({"r": {"gte": 1, "relation": "contains"}})),
            Ok(RangeRelation::Contains)
        );
        assert_eq!(
            relation(json!({"r": {"gte": 1, "relation": "disjoint"}})),
            Err((
                "illegal_argument_exception".into(),
                "[range] query does not support relation [disjoint]".into()
            ))
        );
        assert_eq!(
            relation(json!({"r": {"gte": 1, "relation": "bogus"}})),
            Err((
                "illegal_argument_exception".into(),
                "bogus is not a valid relation".into()
            ))
        );
    }
}
