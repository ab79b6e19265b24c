//! `geo_distance`: `range` over the distance of a document's geo points from an origin.
//!
//! The distance (arc: haversine; plane: equirectangular, cheaper) is computed in the request's
//! `unit` from the point's latitude and longitude columns; a document falls in a range when
//! one of its points does. Everything after that is the `range` aggregation: its collector
//! (reading distances instead of a numeric column), its intermediate result and its rendering.
//! As in OpenSearch, an open `from` is 0, a key's lower end reads `*` when `from` is 0, and
//! the ranges keep the order of the request.

use serde_json::{Map, Value};
use tantivy::columnar::Column;
use tantivy::{DocId, SegmentReader};
use tessera_common::{Error, Result};
use tessera_mapping::geo::{distance_meters, parse_point, unit_meters, GeoPoint};

use crate::bucket::histogram::java_double;
use crate::bucket::range::{numeric_bound, parse_range, RangeFactory, RangeSpec, ResolvedRange};
use crate::bucket::token;
use crate::format::ValueFormat;
use crate::metric::geo::columns;
use crate::prepare::{AggContext, Factory};
use crate::request::{bool_param, no_scripts, string_param, unknown_field, AggRequest};

const AGG: &str = "geo_distance";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DistanceType {
    Arc,
    Plane,
}

#[derive(Clone, Debug, PartialEq)]
pub struct GeoDistanceRequest {
    pub field: Option<String>,
    pub origin: GeoPoint,
    /// Meters per unit of the ranges' bounds.
    pub unit: f64,
    pub distance_type: DistanceType,
    pub ranges: Vec<RangeSpec>,
    pub keyed: bool,
    pub missing: Option<GeoPoint>,
}

fn parse_error(key: &str, cause: Error) -> Error {
    Error::x_content_parse(format!("[{AGG}] failed to parse field [{key}]")).caused_by(cause)
}

impl GeoDistanceRequest {
    pub fn parse(name: &str, body: &Map<String, Value>) -> Result<GeoDistanceRequest> {
        let mut field = None;
        let mut origin = None;
        let mut unit = 1.0;
        let mut distance_type = DistanceType::Arc;
        let mut ranges = Vec::new();
        let mut keyed = false;
        let mut missing = None;
        for (key, value) in body {
            match key.as_str() {
                "field" => field = Some(string_param(AGG, key, value)?),
                "origin" | "point" | "center" => {
                    origin = Some(parse_point(value).map_err(|e| parse_error(key, e))?)
                }
                "unit" => {
                    let text = string_param(AGG, key, value)?;
                    unit = unit_meters(&text).ok_or_else(|| {
                        parse_error(
                            key,
                            Error::illegal_argument(format!("No distance unit match [{text}]")),
                        )
                    })?;
                }
                "distance_type" => {
                    distance_type = match string_param(AGG, key, value)?.as_str() {
                        "arc" => DistanceType::Arc,
                        "plane" => DistanceType::Plane,
                        other => {
                            return Err(parse_error(
                                key,
                                Error::illegal_argument(format!("No geo distance for [{other}]")),
                            ))
                        }
                    }
                }
                "ranges" => {
                    let Value::Array(items) = value else {
                        return Err(Error::x_content_parse(format!(
                            "[{AGG}] ranges doesn't support values of type: {}",
                            token(value)
                        )));
                    };
                    for item in items {
                        ranges.push(parse_range(AGG, item)?);
                    }
                }
                "keyed" => keyed = bool_param(AGG, key, value)?,
                "missing" => missing = Some(parse_point(value).map_err(|e| parse_error(key, e))?),
                "script" => return Err(no_scripts(AGG)),
                _ => return Err(unknown_field(AGG, key)),
            }
        }
        let Some(origin) = origin else {
            return Err(Error::illegal_argument(format!(
                "Aggregation [{name}] must define an [origin]."
            )));
        };
        Ok(GeoDistanceRequest {
            field,
            origin,
            unit,
            distance_type,
            ranges,
            keyed,
            missing,
        })
    }

    /// The ranges in request order, open `from` as 0, keys generated as OpenSearch does.
    pub fn resolved_ranges(&self) -> Result<Vec<ResolvedRange>> {
        self.ranges
            .iter()
            .map(|spec| {
                let from = spec
                    .from
                    .as_ref()
                    .map(numeric_bound)
                    .transpose()?
                    .unwrap_or(0.0);
                let to = spec
                    .to
                    .as_ref()
                    .map(numeric_bound)
                    .transpose()?
                    .unwrap_or(f64::INFINITY);
                let key = spec.key.clone().unwrap_or_else(|| {
                    let end = |v: f64, open: bool| if open { "*".into() } else { java_double(v) };
                    format!("{}-{}", end(from, from == 0.0), end(to, to.is_infinite()))
                });
                Ok(ResolvedRange {
                    key: Some(key),
                    from,
                    to,
                })
            })
            .collect()
    }
}

pub fn factory(
    request: &AggRequest,
    geo: &GeoDistanceRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    let Some(field) = geo.field.as_deref() else {
        return Err(Error::illegal_argument(format!(
            "Required one of fields [field, script], but none were specified. [{}]",
            request.name
        )));
    };
    let columns = columns(ctx, AGG, Some(field))?;
    if geo.ranges.is_empty() {
        return Err(Error::illegal_argument(format!(
            "No [ranges] specified for the [{}] aggregation",
            request.name
        )));
    }
    Ok(Box::new(RangeFactory::distances(
        DistanceSource {
            columns,
            origin: geo.origin,
            unit: geo.unit,
            distance_type: geo.distance_type,
            missing: geo.missing,
        },
        ValueFormat::Raw,
        geo.resolved_ranges()?,
    )))
}

/// Where a segment's distances come from: the point columns and the request's geometry.
#[derive(Clone, Debug, PartialEq)]
pub struct DistanceSource {
    /// Latitude and longitude columns; `None` when the field is unmapped.
    pub columns: Option<(String, String)>,
    pub origin: GeoPoint,
    pub unit: f64,
    pub distance_type: DistanceType,
    pub missing: Option<GeoPoint>,
}

impl DistanceSource {
    pub fn open(&self, reader: &SegmentReader) -> Result<DistanceValues> {
        let mut lats = None;
        let mut lons = None;
        if let Some((lat, lon)) = &self.columns {
            let fast = reader.fast_fields();
            let open = |name: &str| {
                fast.column_opt::<f64>(name)
                    .map_err(|e| Error::internal("open a geo point column", e))
            };
            lats = open(lat)?;
            lons = open(lon)?;
        }
        Ok(DistanceValues {
            source: self.clone(),
            columns: lats.zip(lons),
        })
    }
}

/// A segment's distances from the origin, in the request's unit.
pub struct DistanceValues {
    source: DistanceSource,
    columns: Option<(Column<f64>, Column<f64>)>,
}

impl DistanceValues {
    fn distance(&self, point: GeoPoint) -> f64 {
        let plane = self.source.distance_type == DistanceType::Plane;
        let meters = distance_meters(self.source.origin, point, plane);
        meters / self.source.unit
    }

    /// Calls `f(position, distance)` for every point of every doc (a doc without a point uses
    /// `missing` when there is one), a doc's points one after another.
    pub fn for_each(&self, docs: &[DocId], mut f: impl FnMut(usize, f64)) {
        for (position, &doc) in docs.iter().enumerate() {
            let mut seen = false;
            if let Some((lats, lons)) = &self.columns {
                for (lat, lon) in lats.values_for_doc(doc).zip(lons.values_for_doc(doc)) {
                    seen = true;
                    f(position, self.distance(GeoPoint { lat, lon }));
                }
            }
            if !seen {
                if let Some(point) = self.source.missing {
                    f(position, self.distance(point));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(body: Value) -> Result<GeoDistanceRequest> {
        GeoDistanceRequest::parse("gd", body.as_object().unwrap())
    }

    #[test]
    fn keys_and_open_bounds_follow_opensearch() {
        let request = parse(
            json!({"field": "loc", "origin": "52.376,4.894", "unit": "km",
            "ranges": [{"from": -5, "to": 10}, {"from": 50}, {"from": 0, "to": 100},
                       {"key": "k", "to": 3}, {"from": 0.5, "to": 1e9}]}),
        )
        .unwrap();
        let resolved = request.resolved_ranges().unwrap();
        let keys: Vec<_> = resolved.iter().map(|r| r.key.clone().unwrap()).collect();
        assert_eq!(keys, ["-5.0-10.0", "50.0-*", "*-100.0", "k", "0.5-1.0E9"]);
        assert_eq!((resolved[3].from, resolved[3].to), (0.0, 3.0));
        assert_eq!(request.unit, 1000.0);
    }

    #[test]
    fn parse_errors_are_opensearch_s() {
        let no_origin = parse(json!({"field": "loc", "ranges": [{"to": 1}]})).unwrap_err();
        assert!(format!("{no_origin:?}").contains("Aggregation [gd] must define an [origin]."));
        let unit = parse(json!({"field": "loc", "origin": "1,1", "unit": "parsec"})).unwrap_err();
        assert!(format!("{unit:?}").contains("No distance unit match [parsec]"));
        let format = parse(json!({"field": "loc", "origin": "1,1", "format": "0"})).unwrap_err();
        assert!(format!("{format:?}").contains("unknown field [format]"));
    }

    #[test]
    fn plane_and_arc_distances_agree_nearby() {
        let request = parse(
            json!({"field": "loc", "origin": "52.376,4.894", "unit": "km",
            "ranges": [{"to": 1}]}),
        )
        .unwrap();
        let source = DistanceSource {
            columns: None,
            origin: request.origin,
            unit: request.unit,
            distance_type: DistanceType::Arc,
            missing: None,
        };
        let arc = DistanceValues {
            source: source.clone(),
            columns: None,
        };
        let plane = DistanceValues {
            source: DistanceSource {
                distance_type: DistanceType::Plane,
                ..source
            },
            columns: None,
        };
        let amsterdam_central = GeoPoint {
            lat: 52.379,
            lon: 4.900,
        };
        let (a, p) = (
            arc.distance(amsterdam_central),
            plane.distance(amsterdam_central),
        );
        assert!((a - 0.5).abs() < 0.1 && (a - p).abs() < 1e-3, "{a} {p}");
    }
}
