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
}

impl GeoShape {
    fn contains(&self, lat: f64, lon: f64) -> bool {
        match self {
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
}
