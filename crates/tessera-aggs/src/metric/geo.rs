//! `geo_bounds` and `geo_centroid`: the box around, and the mean of, a bucket's geo points,
//! read from the point's latitude and longitude columns (quantized as Lucene's).
//!
//! Bounds keep OpenSearch's six extremes (top, bottom, and the leftmost and rightmost
//! longitude on each side of the prime meridian) so that `wrap_longitude` can pick the
//! narrower of the box that crosses the antimeridian and the one that does not; extremes merge
//! by min/max. The centroid keeps exact sums of latitudes and longitudes and the number of
//! points, so its value does not depend on how points were split into slices and shards.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tantivy::columnar::Column;
use tantivy::DocId;
use tessera_common::{Error, Result};
use tessera_mapping::LeafKind;

use crate::collector::{Collector, SegmentContext, SubCollectors};
use crate::internal::InternalAgg;
use crate::metric::exact_sum::ExactSum;
use crate::ords::slot;
use crate::prepare::{AggContext, Factory};
use crate::request::{bool_param, no_scripts, unknown_field, AggRequest};

/// `geo_bounds` (with `wrap_longitude`) or `geo_centroid`.
#[derive(Clone, Debug, PartialEq)]
pub struct GeoMetricRequest {
    pub field: Option<String>,
    pub wrap_longitude: bool,
}

impl GeoMetricRequest {
    pub fn parse(agg: &str, body: &Map<String, Value>) -> Result<GeoMetricRequest> {
        let mut request = GeoMetricRequest {
            field: None,
            wrap_longitude: true,
        };
        for (key, value) in body {
            match key.as_str() {
                "field" => match value {
                    Value::String(name) => request.field = Some(name.clone()),
                    other => {
                        return Err(Error::x_content_parse(format!(
                            "[{agg}] field doesn't support values of type: {}",
                            crate::bucket::token(other)
                        )))
                    }
                },
                "wrap_longitude" if agg == "geo_bounds" => {
                    request.wrap_longitude = bool_param(agg, key, value)?
                }
                "script" => return Err(no_scripts(agg)),
                "missing" | "value_type" | "valueType" | "format" => {
                    return Err(Error::not_supported(&format!("[{key}] in [{agg}]")))
                }
                _ => return Err(unknown_field(agg, key)),
            }
        }
        Ok(request)
    }
}

/// The latitude and longitude columns of the request's field, or none (unmapped: empty
/// results).
pub(crate) fn columns(
    ctx: &AggContext,
    agg: &str,
    field: Option<&str>,
) -> Result<Option<(String, String)>> {
    let Some(field) = field else {
        return Err(Error::illegal_argument(format!(
            "Required one of fields [field, script], but none were specified. [{agg}]"
        )));
    };
    let Some(leaf) = ctx.table.leaf(field) else {
        return Ok(None);
    };
    match leaf.kind {
        LeafKind::GeoPoint {
            lat: Some(lat),
            lon: Some(lon),
        } => {
            let schema = ctx.table.schema();
            Ok(Some((
                schema.get_field_name(lat).to_string(),
                schema.get_field_name(lon).to_string(),
            )))
        }
        LeafKind::GeoPoint { .. } => Err(Error::illegal_argument(format!(
            "Can't load fielddata on [{field}] because fielddata is unsupported on fields of type [geo_point]. Use doc values instead."
        ))),
        _ => Err(Error::illegal_argument(format!(
            "Field [{field}] of type [{}] is not supported for aggregation [{agg}]",
            leaf.field_type.name()
        ))),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Bounds,
    Centroid,
}

struct GeoFactory {
    kind: Kind,
    columns: Option<(String, String)>,
}

pub fn bounds_factory(
    _request: &AggRequest,
    geo: &GeoMetricRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    Ok(Box::new(GeoFactory {
        kind: Kind::Bounds,
        columns: columns(ctx, "geo_bounds", geo.field.as_deref())?,
    }))
}

pub fn centroid_factory(
    _request: &AggRequest,
    geo: &GeoMetricRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    Ok(Box::new(GeoFactory {
        kind: Kind::Centroid,
        columns: columns(ctx, "geo_centroid", geo.field.as_deref())?,
    }))
}

impl Factory for GeoFactory {
    fn collector(&self, _subs: SubCollectors, _single_parent: bool) -> Result<Box<dyn Collector>> {
        Ok(Box::new(GeoCollector {
            kind: self.kind,
            columns: self.columns.clone(),
            lats: None,
            lons: None,
            bounds: Vec::new(),
            centroids: Vec::new(),
        }))
    }
}

struct GeoCollector {
    kind: Kind,
    columns: Option<(String, String)>,
    lats: Option<Column<f64>>,
    lons: Option<Column<f64>>,
    bounds: Vec<GeoBounds>,
    centroids: Vec<GeoCentroid>,
}

impl Collector for GeoCollector {
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        (self.lats, self.lons) = (None, None);
        let Some((lat, lon)) = &self.columns else {
            return Ok(());
        };
        let fast = segment.reader.fast_fields();
        let open = |name: &str| {
            fast.column_opt::<f64>(name)
                .map_err(|e| Error::internal("open a geo point column", e))
        };
        self.lats = open(lat)?;
        self.lons = open(lon)?;
        Ok(())
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        let (Some(lats), Some(lons)) = (&self.lats, &self.lons) else {
            return;
        };
        for (&doc, &parent) in docs.iter().zip(parents) {
            // a document's points: its latitudes and longitudes in the same order
            for (lat, lon) in lats.values_for_doc(doc).zip(lons.values_for_doc(doc)) {
                match self.kind {
                    Kind::Bounds => slot(&mut self.bounds, parent).add(lat, lon),
                    Kind::Centroid => slot(&mut self.centroids, parent).add(lat, lon),
                }
            }
        }
    }

    fn build(&mut self, parent: u32) -> Result<InternalAgg> {
        let i = parent as usize;
        Ok(match self.kind {
            Kind::Bounds => InternalAgg::GeoBounds(self.bounds.get(i).cloned().unwrap_or_default()),
            Kind::Centroid => {
                InternalAgg::GeoCentroid(self.centroids.get(i).cloned().unwrap_or_default())
            }
        })
    }
}

// ---- intermediate results ----

/// OpenSearch's six extremes; infinite until a point is seen.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeoBounds {
    top: f64,
    bottom: f64,
    pos_left: f64,
    pos_right: f64,
    neg_left: f64,
    neg_right: f64,
}

impl Default for GeoBounds {
    fn default() -> Self {
        GeoBounds {
            top: f64::NEG_INFINITY,
            bottom: f64::INFINITY,
            pos_left: f64::INFINITY,
            pos_right: f64::NEG_INFINITY,
            neg_left: f64::INFINITY,
            neg_right: f64::NEG_INFINITY,
        }
    }
}

impl GeoBounds {
    fn add(&mut self, lat: f64, lon: f64) {
        self.top = self.top.max(lat);
        self.bottom = self.bottom.min(lat);
        if lon >= 0.0 {
            self.pos_left = self.pos_left.min(lon);
            self.pos_right = self.pos_right.max(lon);
        } else {
            self.neg_left = self.neg_left.min(lon);
            self.neg_right = self.neg_right.max(lon);
        }
    }

    pub fn reduce(parts: Vec<GeoBounds>) -> GeoBounds {
        let mut out = GeoBounds::default();
        for part in parts {
            out.top = out.top.max(part.top);
            out.bottom = out.bottom.min(part.bottom);
            out.pos_left = out.pos_left.min(part.pos_left);
            out.pos_right = out.pos_right.max(part.pos_right);
            out.neg_left = out.neg_left.min(part.neg_left);
            out.neg_right = out.neg_right.max(part.neg_right);
        }
        out
    }

    /// The box's left and right longitudes, as OpenSearch's `InternalGeoBounds` picks them.
    fn left_right(&self, wrap_longitude: bool) -> (f64, f64) {
        if self.pos_left.is_infinite() {
            return (self.neg_left, self.neg_right);
        }
        if self.neg_left.is_infinite() {
            return (self.pos_left, self.pos_right);
        }
        let unwrapped = self.pos_right - self.neg_left;
        let wrapped = (180.0 - self.pos_left) - (-180.0 - self.neg_right);
        if wrap_longitude && wrapped < unwrapped {
            (self.pos_left, self.neg_right)
        } else {
            (self.neg_left, self.pos_right)
        }
    }

    pub fn render(&self, request: &AggRequest) -> Map<String, Value> {
        let mut out = Map::new();
        if self.top.is_infinite() {
            return out;
        }
        let wrap = match &request.kind {
            crate::request::AggKind::GeoBounds(r) => r.wrap_longitude,
            _ => true,
        };
        let (left, right) = self.left_right(wrap);
        out.insert(
            "bounds".into(),
            json!({
                "top_left": {"lat": self.top, "lon": left},
                "bottom_right": {"lat": self.bottom, "lon": right},
            }),
        );
        out
    }
}

/// Exact sums of the points' coordinates, and their number.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GeoCentroid {
    lat: ExactSum,
    lon: ExactSum,
    count: u64,
}

impl GeoCentroid {
    fn add(&mut self, lat: f64, lon: f64) {
        self.lat.add(lat);
        self.lon.add(lon);
        self.count += 1;
    }

    pub fn reduce(parts: Vec<GeoCentroid>) -> GeoCentroid {
        let mut out = GeoCentroid::default();
        for part in &parts {
            out.lat.merge(&part.lat);
            out.lon.merge(&part.lon);
            out.count += part.count;
        }
        out
    }

    pub fn render(&self) -> Map<String, Value> {
        let mut out = Map::new();
        if self.count > 0 {
            let n = self.count as f64;
            out.insert(
                "location".into(),
                json!({"lat": self.lat.value() / n, "lon": self.lon.value() / n}),
            );
        }
        out.insert("count".into(), json!(self.count));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_wrap_across_the_antimeridian_when_narrower() {
        let mut b = GeoBounds::default();
        for (lat, lon) in [(52.0, 4.4), (51.0, 4.9), (10.0, -170.5), (-10.5, 175.25)] {
            b.add(lat, lon);
        }
        assert_eq!(b.left_right(true), (4.4, -170.5));
        assert_eq!(b.left_right(false), (-170.5, 175.25));
        let mut west = GeoBounds::default();
        west.add(1.0, -3.0);
        west.add(2.0, -1.0);
        assert_eq!(west.left_right(true), (-3.0, -1.0));
        // a box across the prime meridian stays unwrapped
        let mut small = GeoBounds::default();
        small.add(0.0, -1.0);
        small.add(0.0, 1.0);
        assert_eq!(small.left_right(true), (-1.0, 1.0));
    }

    #[test]
    fn any_split_of_the_points_reduces_the_same() {
        let points: Vec<(f64, f64)> = (0..50)
            .map(|i| {
                let i = i as f64;
                ((i * 7.3) % 180.0 - 90.0, (i * 13.7) % 360.0 - 180.0)
            })
            .collect();
        let (mut bounds, mut centroid) = (GeoBounds::default(), GeoCentroid::default());
        for &(lat, lon) in &points {
            bounds.add(lat, lon);
            centroid.add(lat, lon);
        }
        for split in 1..points.len() {
            let (mut b1, mut b2) = (GeoBounds::default(), GeoBounds::default());
            let (mut c1, mut c2) = (GeoCentroid::default(), GeoCentroid::default());
            for (i, &(lat, lon)) in points.iter().enumerate() {
                if i < split {
                    b1.add(lat, lon);
                    c1.add(lat, lon);
                } else {
                    b2.add(lat, lon);
                    c2.add(lat, lon);
                }
            }
            assert_eq!(GeoBounds::reduce(vec![b2, b1]), bounds);
            assert_eq!(
                GeoCentroid::reduce(vec![c2, c1]).render(),
                centroid.render()
            );
        }
        assert_eq!(GeoCentroid::default().render(), {
            let mut m = Map::new();
            m.insert("count".into(), json!(0));
            m
        });
    }
}
