//! `geo_distance` and `geo_bounding_box`.

use serde_json::Value;
use tessera_common::{Error, Result};
use tessera_mapping::geo::{checked, decode_geohash, parse_distance, parse_point, GeoPoint};

use super::{as_bool, as_f32, object};
use crate::ast::QueryAst;

fn point(query: &str, value: &Value) -> Result<GeoPoint> {
    parse_point(value)
        .map_err(|e| Error::parsing(format!("[{query}] failed to parse point: {}", e.reason())))
}

/// Which corner of a bounding box a point gives.
#[derive(Clone, Copy)]
enum Corner {
    TopLeft,
    TopRight,
    BottomLeft,
    BottomRight,
}

/// A bounding box's corner. A geohash (a bare string, or `{"geohash": ..}`) stands for its
/// cell's matching corner, as OpenSearch's `GeoUtils.EffectivePoint` takes it: `top_left: "c"`
/// is the top-left corner of cell `c`, so a box of whole cells covers them entirely.
fn corner(spec: &Value, which: Corner) -> Result<GeoPoint> {
    let hash = match spec {
        Value::String(s) => {
            let s = s.trim();
            let is_hash = !s.is_empty()
                && s.len() <= 12
                && !s.contains(',')
                && !s.to_ascii_lowercase().contains("point");
            is_hash.then_some(s)
        }
        Value::Object(o) if o.len() == 1 => o.get("geohash").and_then(Value::as_str),
        _ => None,
    };
    let Some(hash) = hash else {
        return point("geo_bounding_box", spec);
    };
    let centre = decode_geohash(hash).map_err(|e| {
        Error::parsing(format!(
            "[geo_bounding_box] failed to parse point: {}",
            e.reason()
        ))
    })?;
    // a cell of n characters halves longitude ceil(5n/2) times and latitude floor(5n/2)
    // times; the centre plus or minus half a cell is exact in binary
    let bits = 5 * hash.chars().count() as i32;
    let half_lon = 180.0 / 2f64.powi((bits + 1) / 2);
    let half_lat = 90.0 / 2f64.powi(bits / 2);
    let (min_lat, max_lat) = (centre.lat - half_lat, centre.lat + half_lat);
    let (min_lon, max_lon) = (centre.lon - half_lon, centre.lon + half_lon);
    let (lat, lon) = match which {
        Corner::TopLeft => (max_lat, min_lon),
        Corner::TopRight => (max_lat, max_lon),
        Corner::BottomLeft => (min_lat, min_lon),
        Corner::BottomRight => (min_lat, max_lon),
    };
    checked(GeoPoint { lat, lon })
}

/// The sides of a WKT `BBOX (minLon, maxLon, maxLat, minLat)`: `(top, left, bottom, right)`.
fn wkt_bbox(spec: &Value) -> Result<(f64, f64, f64, f64)> {
    let text = spec
        .as_str()
        .ok_or_else(|| Error::parsing("[geo_bounding_box] [wkt] must be a string"))?;
    let bad = || Error::parsing(format!("failed to parse WKT bounding box [{text}]"));
    let trimmed = text.trim();
    let upper = trimmed.to_ascii_uppercase();
    let inner = upper
        .strip_prefix("BBOX")
        .map(str::trim)
        .and_then(|rest| rest.strip_prefix('('))
        .and_then(|rest| rest.strip_suffix(')'))
        .ok_or_else(|| {
            Error::parsing(format!(
                "failed to parse bounding box. [{trimmed}] is not a BBOX"
            ))
        })?;
    let numbers = inner
        .split(',')
        .map(|n| n.trim().parse::<f64>().map_err(|_| bad()))
        .collect::<Result<Vec<_>>>()?;
    match numbers[..] {
        [min_lon, max_lon, max_lat, min_lat] => Ok((max_lat, min_lon, min_lat, max_lon)),
        _ => Err(bad()),
    }
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
                let mut wkt = None;
                for (corner_name, spec) in corners {
                    let number = |v: &Value| {
                        v.as_f64().ok_or_else(|| {
                            Error::parsing(format!(
                                "[geo_bounding_box] [{corner_name}] must be a number"
                            ))
                        })
                    };
                    match corner_name.as_str() {
                        "top_left" => {
                            let p = corner(spec, Corner::TopLeft)?;
                            (top, left) = (Some(p.lat), Some(p.lon));
                        }
                        "bottom_right" => {
                            let p = corner(spec, Corner::BottomRight)?;
                            (bottom, right) = (Some(p.lat), Some(p.lon));
                        }
                        "top_right" => {
                            let p = corner(spec, Corner::TopRight)?;
                            (top, right) = (Some(p.lat), Some(p.lon));
                        }
                        "bottom_left" => {
                            let p = corner(spec, Corner::BottomLeft)?;
                            (bottom, left) = (Some(p.lat), Some(p.lon));
                        }
                        "top" => top = Some(number(spec)?),
                        "left" => left = Some(number(spec)?),
                        "bottom" => bottom = Some(number(spec)?),
                        "right" => right = Some(number(spec)?),
                        "wkt" => wkt = Some(wkt_bbox(spec)?),
                        other => {
                            return Err(Error::parsing(format!(
                                "[geo_bounding_box] unexpected field [{other}]"
                            )))
                        }
                    }
                }
                if let Some(sides) = wkt {
                    if top.is_some() || left.is_some() || bottom.is_some() || right.is_some() {
                        return Err(Error::parsing(
                            "failed to parse bounding box. Conflicting definition found using well-known text and explicit corners.",
                        ));
                    }
                    (top, left, bottom, right) =
                        (Some(sides.0), Some(sides.1), Some(sides.2), Some(sides.3));
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

    /// Geohash corners are the cells' corners (OpenSearch 2.19.6 finds the points of cells
    /// `c` and `9` with `top_left: "c", bottom_right: "9"`; the centres made a box of no width).
    #[test]
    fn geohash_corners_are_the_cells_corners() {
        let sides = |q: Value| match parse_bounding_box(&q).unwrap() {
            QueryAst::GeoBoundingBox {
                top,
                left,
                bottom,
                right,
                ..
            } => (top, left, bottom, right),
            other => panic!("{other:?}"),
        };
        let whole = (90.0, -135.0, 0.0, -90.0);
        assert_eq!(
            sides(json!({"loc": {"top_left": "c", "bottom_right": "9"}})),
            whole
        );
        assert_eq!(
            sides(json!({"loc": {"top_right": "c", "bottom_left": "9"}})),
            whole
        );
        assert_eq!(
            sides(json!({"loc": {"top_left": {"geohash": "c"}, "bottom_right": "9"}})),
            whole
        );
        assert_eq!(
            sides(json!({"loc": {"wkt": "BBOX (-135, -90, 90, 0)"}})),
            whole
        );
        // a point string is still a point
        assert_eq!(
            sides(json!({"loc": {"top_left": "50,-120", "bottom_right": "POINT (-100 10)"}})),
            (50.0, -120.0, 10.0, -100.0)
        );
        assert!(
            parse_bounding_box(&json!({"loc": {"wkt": "BBOX (-135, -90, 90, 0)", "top": 1}}))
                .is_err()
        );
    }
}
