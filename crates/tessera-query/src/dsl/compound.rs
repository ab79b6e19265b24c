//! `constant_score` and `dis_max`.

use serde_json::Value;
use tessera_common::{Error, Result};

use super::{as_f32, object, parse_query, unknown};
use crate::ast::QueryAst;

pub fn parse_constant_score(body: &Value) -> Result<QueryAst> {
    let mut filter = None;
    let mut boost = 1.0;
    for (key, value) in object("constant_score", body)? {
        match key.as_str() {
            "filter" => filter = Some(parse_query(value)?),
            "boost" => boost = as_f32("constant_score", key, value)?,
            "_name" => {}
            _ => return Err(unknown("constant_score", key)),
        }
    }
    let filter =
        filter.ok_or_else(|| Error::parsing("[constant_score] requires a 'filter' element"))?;
    Ok(QueryAst::ConstantScore {
        filter: Box::new(filter),
        boost,
    })
}

pub fn parse_boosting(body: &Value) -> Result<QueryAst> {
    let mut positive = None;
    let mut negative = None;
    let mut negative_boost = None;
    let mut boost = 1.0;
    for (key, value) in object("boosting", body)? {
        match key.as_str() {
            "positive" => positive = Some(parse_query(value)?),
            "negative" => negative = Some(parse_query(value)?),
            "negative_boost" => negative_boost = Some(as_f32("boosting", key, value)?),
            "boost" => boost = as_f32("boosting", key, value)?,
            "_name" => {}
            _ => return Err(unknown("boosting", key)),
        }
    }
    let positive = positive
        .ok_or_else(|| Error::parsing("[boosting] query requires 'positive' query to be set'"))?;
    let negative = negative
        .ok_or_else(|| Error::parsing("[boosting] query requires 'negative' query to be set'"))?;
    let negative_boost = negative_boost.filter(|b| *b >= 0.0).ok_or_else(|| {
        Error::parsing(
            "[boosting] query requires 'negative_boost' to be set to be a positive value'",
        )
    })?;
    Ok(QueryAst::Boosting {
        positive: Box::new(positive),
        negative: Box::new(negative),
        negative_boost,
        boost,
    })
}

pub fn parse_dis_max(body: &Value) -> Result<QueryAst> {
    let mut queries = Vec::new();
    let mut tie_breaker = 0.0;
    let mut boost = 1.0;
    for (key, value) in object("dis_max", body)? {
        match key.as_str() {
            "queries" => match value {
                Value::Array(items) => {
                    for item in items {
                        queries.push(parse_query(item)?);
                    }
                }
                Value::Object(_) => queries.push(parse_query(value)?),
                _ => return Err(Error::parsing("[dis_max] queries must be an array")),
            },
            "tie_breaker" => tie_breaker = as_f32("dis_max", key, value)?,
            "boost" => boost = as_f32("dis_max", key, value)?,
            "_name" => {}
            _ => return Err(unknown("dis_max", key)),
        }
    }
    if queries.is_empty() {
        return Err(Error::parsing(
            "[dis_max] requires 'queries' field with at least one clause",
        ));
    }
    Ok(QueryAst::DisMax {
        queries,
        tie_breaker,
        boost,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses() {
        assert!(matches!(
            parse_constant_score(&json!({"filter": {"match_all": {}}, "boost": 1.2})).unwrap(),
            QueryAst::ConstantScore { .. }
        ));
        assert!(parse_constant_score(&json!({"boost": 1})).is_err());
        assert!(matches!(
            parse_dis_max(&json!({"queries": [{"match_all": {}}], "tie_breaker": 0.3})).unwrap(),
            QueryAst::DisMax { .. }
        ));
        assert!(parse_dis_max(&json!({"queries": []})).is_err());
    }
}
