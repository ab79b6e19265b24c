//! `geo_distance` and `geo_bounding_box`.

use serde_json::Value;
use tessera_common::{Error, Result};
use tessera_mapping::geo::{parse_distance, parse_point, GeoPoint};

use super::{as_bool, as_f32, object};
use crate::ast::QueryAst;

fn point(query: &str, value: &Value) -> Result<GeoPoint> {
    parse_point(value)
        .map_err(|e| Error::parsing(format!("[{query}] failed to parse point: {}", e.reason())))
}

pub fn parse_distance_query(body: &Value) -> Result<QueryAst> {
    let mut field = None;
    let mut distance = None;
    let mut boost = 1.0;
    let mut ignore_unmapped = false;
    for (key, value) in object("geo_distance", body)? {
        match key.as_str() {
            "distance" => {
                distance = Some(
                    parse_distance(value).map_err(|e| Error::parsing(e.reason().to_string()))?,
                )
            }
            "boost" => boost = as_f32("geo_distance", key, value)?,
            "ignore_unmapped" => ignore_unmapped = as_bool("geo_distance", key, value)?,
            "distance_type" | "validation_method" | "_name" => {}
            name => {
                if field.is_some() {
                    return Err(Error::parsing(format!("[geo_distance] failed to parse field [{name}]: the query supports one field")));
                }
                field = Some((name.to_string(), point("geo_distance", value)?));
            }
        }
    }
    let (field, center) =
        field.ok_or_else(|| Error::parsing("[geo_distance] requires a field with a point"))?;
    let distance_meters = distance
        .ok_or_else(|| Error::parsing("geo_distance requires 'distance' to be specified"))?;
    Ok(QueryAst::GeoDistance {
        field,
        lat: center.lat,
        lon: center.lon,
        distance_meters,
        ignore_unmapped,
        boost,
    })
}

pub fn parse_bounding_box(body: &Value) -> Result<QueryAst> {
    let mut found = None;
    let mut boost = 1.0;
    let mut ignore_unmapped = false;
    for (key, value) in object("geo_bounding_box", body)? {
        match key.as_str() {
            "boost" => boost = as_f32("geo_bounding_box", key, value)?,
            "ignore_unmapped" => ignore_unmapped = as_bool("geo_bounding_box", key, value)?,
            "type" | "validation_method" | "_name" => {}
            name => {
                let corners = object("geo_bounding_box", value)?;
                let (mut top, mut left, mut bottom, mut right) = (None, None, None, None);
                for (corner, spec) in corners {
                    let number = |v: &Value| {
                        v.as_f64().ok_or_else(|| {
                            Error::parsing(format!(
                                "[geo_bounding_box] [{corner}] must be a number"
                            ))
                        })
                    };
                    match corner.as_str() {
                        "top_left" => {
                            let p = point("geo_bounding_box", spec)?;
                            (top, left) = (Some(p.lat), Some(p.lon));
                        }
                        "bottom_right" => {
                            let p = point("geo_bounding_box", spec)?;
                            (bottom, right) = (Some(p.lat), Some(p.lon));
                        }
                        "top_right" => {
                            let p = point("geo_bounding_box", spec)?;
                            (top, right) = (Some(p.lat), Some(p.lon));
                        }
                        "bottom_left" => {
                            let p = point("geo_bounding_box", spec)?;
                            (bottom, left) = (Some(p.lat), Some(p.lon));
                        }
                        "top" => top = Some(number(spec)?),
                        "left" => left = Some(number(spec)?),
                        "bottom" => bottom = Some(number(spec)?),
                        "right" => right = Some(number(spec)?),
                        other => {
                            return Err(Error::parsing(format!(
                                "[geo_bounding_box] unexpected field [{other}]"
                            )))
                        }
                    }
                }
                match (top, left, bottom, right) {
                    (Some(top), Some(left), Some(bottom), Some(right)) => {
                        found = Some((name.to_string(), top, left, bottom, right))
                    }
                    _ => {
                        return Err(Error::parsing(
                            "[geo_bounding_box] needs all four sides of the box",
                        ))
                    }
                }
            }
        }
    }
    let (field, top, left, bottom, right) =
        found.ok_or_else(|| Error::parsing("[geo_bounding_box] requires a field"))?;
    if top < bottom {
        return Err(Error::illegal_argument(format!(
            "top is below bottom corner: {top} vs. {bottom}"
        )));
    }
    Ok(QueryAst::GeoBoundingBox {
        field,
        top,
        left,
        bottom,
        right,
        ignore_unmapped,
        boost,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_distance_and_box() {
        let q =
            parse_distance_query(&json!({"distance": "100km", "loc": {"lat": 52.5, "lon": 13.4}}))
                .unwrap();
        assert_eq!(
            q,
            QueryAst::GeoDistance {
                field: "loc".into(),
                lat: 52.5,
                lon: 13.4,
                distance_meters: 100_000.0,
                ignore_unmapped: false,
                boost: 1.0
            }
        );
        let q = parse_bounding_box(
            &json!({"loc": {"top_left": [13.0, 53.0], "bottom_right": "52.0,14.0"}}),
        )
        .unwrap();
        assert_eq!(
            q,
            QueryAst::GeoBoundingBox {
                field: "loc".into(),
                top: 53.0,
                left: 13.0,
                bottom: 52.0,
                right: 14.0,
                ignore_unmapped: false,
                boost: 1.0
            }
        );
        assert!(parse_distance_query(&json!({"loc": [1, 2]})).is_err());
        assert!(parse_bounding_box(&json!({"loc": {"top": 1, "left": 2}})).is_err());
    }
}
