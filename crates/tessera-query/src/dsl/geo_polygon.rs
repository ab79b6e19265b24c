//! `geo_polygon`: points inside a polygon given by its vertices (any point form OpenSearch
//! accepts; the polygon closes itself).

use serde_json::Value;
use tessera_common::{Error, Result};
use tessera_mapping::geo::parse_point_unchecked;

use super::{as_bool, as_f32, object};
use crate::ast::{GeoValidation, QueryAst};

const NAME: &str = "geo_polygon";

pub fn parse(body: &Value) -> Result<QueryAst> {
    let mut field = None;
    let mut boost = 1.0;
    let mut ignore_unmapped = false;
    let mut validation = GeoValidation::Strict;
    for (key, value) in object(NAME, body)? {
        match key.as_str() {
            "boost" => boost = as_f32(NAME, key, value)?,
            "ignore_unmapped" => ignore_unmapped = as_bool(NAME, key, value)?,
            "validation_method" => {
                validation = match value.as_str().map(str::to_ascii_lowercase).as_deref() {
                    Some("strict") => GeoValidation::Strict,
                    Some("coerce") => GeoValidation::Coerce,
                    Some("ignore_malformed") => GeoValidation::IgnoreMalformed,
                    _ => {
                        return Err(Error::illegal_argument(format!(
                            "No enum constant org.opensearch.index.query.GeoValidationMethod.{}",
                            value.as_str().unwrap_or_default().to_ascii_uppercase()
                        )))
                    }
                }
            }
            "_name" => {}
            name => {
                if field.is_some() {
                    return Err(Error::parsing(format!(
                        "[{NAME}] query doesn't support multiple fields, found [{}] and [{name}]",
                        field
                            .as_ref()
                            .map(|(f, _): &(String, _)| f.as_str())
                            .unwrap_or_default()
                    )));
                }
                field = Some((name.to_string(), points(value)?));
            }
        }
    }
    let (field, points) =
        field.ok_or_else(|| Error::illegal_argument("no geo_point field specified"))?;
    // OpenSearch closes the polygon and needs at least three distinct corners
    if points.len() < 3 {
        return Err(Error::illegal_argument(
            "too few points defined for geo_polygon query",
        ));
    }
    Ok(QueryAst::GeoPolygon {
        field,
        points: points.iter().map(|p| (p.lat, p.lon)).collect(),
        validation,
        ignore_unmapped,
        boost,
    })
}

fn points(value: &Value) -> Result<Vec<tessera_mapping::geo::GeoPoint>> {
    let mut points = None;
    for (key, value) in object(NAME, value)? {
        match (key.as_str(), value) {
            ("points", Value::Array(items)) => {
                points = Some(
                    items
                        .iter()
                        .map(|item| {
                            parse_point_unchecked(item)
                                .map_err(|e| Error::parsing(e.reason().to_string()))
                        })
                        .collect::<Result<Vec<_>>>()?,
                )
            }
            ("points", other) => {
                return Err(Error::parsing(format!(
                    "[{NAME}] query does not support token type [{}] under [points]",
                    tessera_common::error::json_token(other)
                )))
            }
            (other, value) => {
                return Err(Error::parsing(format!(
                    "[{NAME}] query does not support token type [{}] under [{other}]",
                    tessera_common::error::json_token(value)
                )))
            }
        }
    }
    let mut points = points
        .ok_or_else(|| Error::illegal_argument("too few points defined for geo_polygon query"))?;
    // a closing point that repeats the first is not a corner
    if points.len() > 1 && points.first() == points.last() {
        points.pop();
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn takes_every_point_form_and_refuses_too_few() {
        let QueryAst::GeoPolygon { points, .. } = parse(&json!({"p": {"points":
            [{"lat": 53, "lon": 4}, "53,5", [4.5, 51], [4, 53]]}, "boost": 2}))
        .unwrap() else {
            panic!()
        };
        assert_eq!(points, [(53.0, 4.0), (53.0, 5.0), (51.0, 4.5)]);
        for body in [
            json!({"p": {"points": [[4, 53], [5, 53]]}}),
            json!({"p": {"points": [[4, 53], [5, 53], [4, 53]]}}),
            json!({"p": {}}),
        ] {
            assert_eq!(
                parse(&body).unwrap_err().reason(),
                "too few points defined for geo_polygon query"
            );
        }
        assert!(
            parse(&json!({"p": {"points": [[4, 53], [5, 53], [4.5, 51]], "bogus": 1}})).is_err()
        );
    }
}
