//! Geo queries over a geo point's latitude/longitude columns: a scan of the segment's values
//! with a cheap bounding-box check before the exact distance. Matches score 1.0 × boost.

use std::sync::Arc;

use tantivy::columnar::Column;
use tantivy::query::{ConstScorer, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED};
use tessera_mapping::geo::{haversine_meters, GeoPoint};

/// What a point must satisfy.
#[derive(Clone, Debug)]
pub enum GeoShape {
    Circle {
        center: GeoPoint,
        meters: f64,
    },
    Box {
        top: f64,
        left: f64,
        bottom: f64,
        right: f64,
    },
    /// A closed ring of (lat, lon) corners, with its bounding box.
    Polygon {
        ring: Vec<(f64, f64)>,
        min_lat: f64,
        max_lat: f64,
        min_lon: f64,
        max_lon: f64,
    },
}

impl GeoShape {
    /// The polygon of `points` (lat, lon); out-of-range corners fail under `strict`, and are
    /// normalized under `coerce`, as OpenSearch's `geo_polygon` does.
    pub fn polygon(
        points: &[(f64, f64)],
        validation: crate::ast::GeoValidation,
    ) -> Result<GeoShape, String> {
        use crate::ast::GeoValidation;
        let mut ring = Vec::with_capacity(points.len() + 1);
        for &(lat, lon) in points {
            let (lat, lon) = match validation {
                GeoValidation::Strict => {
                    if !(-90.0..=90.0).contains(&lat) {
                        return Err(format!(
                            "illegal latitude value [{lat:?}] for [geo_polygon]"
                        ));
                    }
                    if !(-180.0..=180.0).contains(&lon) {
                        return Err(format!(
                            "illegal longitude value [{lon:?}] for [geo_polygon]"
                        ));
                    }
                    (lat, lon)
                }
                GeoValidation::Coerce => normalize(lat, lon),
                GeoValidation::IgnoreMalformed => (lat, lon),
            };
            ring.push((lat, lon));
        }
        ring.push(ring[0]);
        let (mut min_lat, mut max_lat) = (f64::INFINITY, f64::NEG_INFINITY);
        let (mut min_lon, mut max_lon) = (f64::INFINITY, f64::NEG_INFINITY);
        for &(lat, lon) in &ring {
            min_lat = min_lat.min(lat);
            max_lat = max_lat.max(lat);
            min_lon = min_lon.min(lon);
            max_lon = max_lon.max(lon);
        }
        Ok(GeoShape::Polygon {
            ring,
            min_lat,
            max_lat,
            min_lon,
            max_lon,
        })
    }

    fn contains(&self, lat: f64, lon: f64) -> bool {
        match self {
            GeoShape::Polygon {
                ring,
                min_lat,
                max_lat,
                min_lon,
                max_lon,
            } => {
                lat >= *min_lat
                    && lat <= *max_lat
                    && lon >= *min_lon
                    && lon <= *max_lon
                    && in_ring(ring, lat, lon)
            }
            GeoShape::Circle { center, meters } => {
                // degrees of latitude are ~111 km everywhere: skip far points without trig
                let lat_slack = meters / 110_000.0 + 1e-6;
                if (lat - center.lat).abs() > lat_slack {
                    return false;
                }
                haversine_meters(*center, GeoPoint { lat, lon }) <= *meters
            }
            GeoShape::Box {
                top,
                left,
                bottom,
                right,
            } => {
                let in_lat = lat <= *top && lat >= *bottom;
                let in_lon = if left <= right {
                    lon >= *left && lon <= *right
                } else {
                    lon >= *left || lon <= *right
                };
                in_lat && in_lon
            }
        }
    }
}

/// Crossing-number test of a point against a closed ring, a point on an edge being inside (as
/// Lucene's polygon test counts it).
fn in_ring(ring: &[(f64, f64)], lat: f64, lon: f64) -> bool {
    let mut inside = false;
    for edge in ring.windows(2) {
        let ((lat1, lon1), (lat2, lon2)) = (edge[0], edge[1]);
        let within_lats = lat >= lat1.min(lat2) && lat <= lat1.max(lat2);
        let within_lons = lon >= lon1.min(lon2) && lon <= lon1.max(lon2);
        // on the edge: collinear and within its extent
        if within_lats && within_lons {
            let cross = (lon2 - lon1) * (lat - lat1) - (lat2 - lat1) * (lon - lon1);
            if cross == 0.0 {
                return true;
            }
        }
        if (lat1 > lat) != (lat2 > lat) {
            let at = (lon2 - lon1) * (lat - lat1) / (lat2 - lat1) + lon1;
            if lon < at {
                inside = !inside;
            }
        }
    }
    inside
}

/// Latitude and longitude brought into range, as OpenSearch's `GeoUtils.normalizePoint`:
/// a latitude past a pole comes back down on the other side of the globe.
fn normalize(lat: f64, lon: f64) -> (f64, f64) {
    let mut lat = lat % 360.0;
    let mut lon = lon;
    if lat > 180.0 {
        lat -= 360.0;
    } else if lat < -180.0 {
        lat += 360.0;
    }
    if lat > 90.0 {
        lat = 180.0 - lat;
        lon += 180.0;
    } else if lat < -90.0 {
        lat = -180.0 - lat;
        lon += 180.0;
    }
    if !(-180.0..=180.0).contains(&lon) {
        lon = (lon + 180.0).rem_euclid(360.0) - 180.0;
    }
    (lat, lon)
}

#[derive(Clone, Debug)]
pub struct GeoQuery {
    lat_column: String,
    lon_column: String,
    shape: Arc<GeoShape>,
}

impl GeoQuery {
    pub fn new(lat_column: String, lon_column: String, shape: GeoShape) -> GeoQuery {
        GeoQuery {
            lat_column,
            lon_column,
            shape: Arc::new(shape),
        }
    }
}

impl Query for GeoQuery {
    fn weight(&self, _: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl Weight for GeoQuery {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let fast = reader.fast_fields();
        let lats: Option<Column<f64>> = fast.column_opt(&self.lat_column)?;
        let lons: Option<Column<f64>> = fast.column_opt(&self.lon_column)?;
        let mut docs = GeoDocSet {
            lats,
            lons,
            shape: self.shape.clone(),
            max_doc: reader.max_doc(),
            doc: 0,
        };
        docs.settle();
        Ok(Box::new(ConstScorer::new(docs, boost)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let score = super::score_of_match(self, reader, doc)?;
        Ok(Explanation::new("geo query", score))
    }
}

struct GeoDocSet {
    lats: Option<Column<f64>>,
    lons: Option<Column<f64>>,
    shape: Arc<GeoShape>,
    max_doc: DocId,
    doc: DocId,
}

impl GeoDocSet {
    fn matches(&self, doc: DocId) -> bool {
        let (Some(lats), Some(lons)) = (&self.lats, &self.lons) else {
            return false;
        };
        lats.values_for_doc(doc)
            .zip(lons.values_for_doc(doc))
            .any(|(lat, lon)| self.shape.contains(lat, lon))
    }

    fn settle(&mut self) {
        if self.lats.is_none() {
            self.doc = TERMINATED;
            return;
        }
        while self.doc < self.max_doc && !self.matches(self.doc) {
            self.doc += 1;
        }
        if self.doc >= self.max_doc {
            self.doc = TERMINATED;
        }
    }
}

impl DocSet for GeoDocSet {
    fn advance(&mut self) -> DocId {
        if self.doc != TERMINATED {
            self.doc += 1;
            self.settle();
        }
        self.doc
    }

    fn seek(&mut self, target: DocId) -> DocId {
        if self.doc != TERMINATED && self.doc < target {
            self.doc = target;
            self.settle();
        }
        self.doc
    }

    fn doc(&self) -> DocId {
        self.doc
    }

    fn size_hint(&self) -> u32 {
        self.max_doc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let berlin = GeoPoint {
            lat: 52.52,
            lon: 13.405,
        };
        let circle = GeoShape::Circle {
            center: berlin,
            meters: 100_000.0,
        };
        assert!(circle.contains(52.5, 13.4));
        assert!(!circle.contains(48.85, 2.35));
        let across_dateline = GeoShape::Box {
            top: 10.0,
            left: 170.0,
            bottom: -10.0,
            right: -170.0,
        };
        assert!(across_dateline.contains(0.0, 175.0));
        assert!(across_dateline.contains(0.0, -175.0));
        assert!(!across_dateline.contains(0.0, 0.0));
    }

    #[test]
    fn polygons_hold_their_inside_and_their_edges() {
        use crate::ast::GeoValidation;
        let triangle = GeoShape::polygon(
            &[(53.0, 4.0), (53.0, 5.0), (51.0, 4.5)],
            GeoValidation::Strict,
        )
        .unwrap();
        assert!(triangle.contains(52.5, 4.5));
        assert!(!triangle.contains(52.37, 4.9)); // right of the slanted edge
        assert!(triangle.contains(53.0, 4.5)); // on the top edge
        assert!(triangle.contains(51.0, 4.5)); // a corner
        assert!(!triangle.contains(50.0, 4.5));
        // a concave ring: the notch is outside
        let notched = GeoShape::polygon(
            &[(0.0, 0.0), (0.0, 4.0), (4.0, 4.0), (2.0, 2.0), (4.0, 0.0)],
            GeoValidation::Strict,
        )
        .unwrap();
        assert!(notched.contains(1.0, 2.0));
        assert!(!notched.contains(3.0, 2.0));
        assert_eq!(
            GeoShape::polygon(
                &[(95.0, 4.0), (53.0, 5.0), (51.0, 4.5)],
                GeoValidation::Strict
            )
            .unwrap_err(),
            "illegal latitude value [95.0] for [geo_polygon]"
        );
        assert!(GeoShape::polygon(
            &[(95.0, 4.0), (53.0, 5.0), (51.0, 4.5)],
            GeoValidation::Coerce
        )
        .is_ok());
        assert_eq!(normalize(95.0, 4.0), (85.0, -176.0));
        assert_eq!(normalize(10.0, 190.0), (10.0, -170.0));
        assert_eq!(normalize(10.0, 180.0), (10.0, 180.0));
    }
}
