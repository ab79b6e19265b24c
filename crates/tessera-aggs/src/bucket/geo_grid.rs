//! `geohash_grid` and `geotile_grid`: one bucket per cell of a grid over the earth that holds
//! a document's point, the fullest cells first.
//!
//! A cell is a 64-bit number as OpenSearch encodes it, so that ties in the bucket order (equal
//! counts: the larger cell number first) come out as in OpenSearch: a geohash is its
//! interleaved longitude/latitude bits (the base-32 string's bits) above a 4-bit precision, a
//! map tile is `zoom << 58 | x << 29 | y` in Web Mercator. A document counts once per distinct
//! cell of its points; `bounds` keeps only points inside a box. Shards cut to `shard_size`
//! (by default `size`, or `1.5 × size + 10` with several shards, as OpenSearch), the
//! coordinator to `size`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tantivy::columnar::Column;
use tantivy::DocId;
use tessera_common::{Error, Result};
use tessera_mapping::geo::{parse_distance, parse_point, GeoPoint};

use crate::bucket::token;
use crate::collector::{Collector, SegmentContext, SubCollectors};
use crate::internal::{render_subs, InternalAgg, InternalAggregations, RenderContext, ShardFinish};
use crate::metric::geo::columns;
use crate::ords::{slot, BucketOrds};
use crate::prepare::{AggContext, Factory};
use crate::request::{int_param, no_scripts, string_param, unknown_field, AggKind, AggRequest};

/// Which grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Grid {
    Geohash,
    Geotile,
}

impl Grid {
    pub fn type_name(self) -> &'static str {
        match self {
            Grid::Geohash => "geohash_grid",
            Grid::Geotile => "geotile_grid",
        }
    }

    fn default_precision(self) -> u8 {
        match self {
            Grid::Geohash => 5,
            Grid::Geotile => 7,
        }
    }

    fn precision_range(self) -> (i64, i64) {
        match self {
            Grid::Geohash => (1, 12),
            Grid::Geotile => (0, 29),
        }
    }

    /// The cell holding `point` at `precision`.
    pub fn cell(self, point: GeoPoint, precision: u8) -> u64 {
        match self {
            Grid::Geohash => geohash_cell(point, precision),
            Grid::Geotile => geotile_cell(point, precision),
        }
    }

    /// The bucket key of a cell (`u173zt8`, `6/32/21`).
    pub fn key(self, cell: u64) -> String {
        match self {
            Grid::Geohash => geohash_string(cell),
            Grid::Geotile => {
                let (zoom, x, y) = (cell >> 58, (cell >> 29) & TILE_MASK, cell & TILE_MASK);
                format!("{zoom}/{x}/{y}")
            }
        }
    }
}

const BASE32: &[u8] = b"0123456789bcdefghjkmnpqrstuvwxyz";
const TILE_MASK: u64 = (1 << 29) - 1;

/// The geohash of `point` with `precision` characters: its `5 × precision` interleaved bits
/// (longitude first) shifted above the 4-bit precision.
fn geohash_cell(point: GeoPoint, precision: u8) -> u64 {
    (tessera_mapping::geo::geohash_bits(point, precision as usize) << 4) | precision as u64
}

fn geohash_string(cell: u64) -> String {
    let precision = (cell & 0xf) as u32;
    let bits = cell >> 4;
    (0..precision)
        .map(|i| BASE32[((bits >> ((precision - 1 - i) * 5)) & 31) as usize] as char)
        .collect()
}

/// Web Mercator's latitude limit: tiles cover ±85.0511°.
const MAX_TILE_LAT: f64 = 85.051_128_779_806_6;

fn geotile_cell(point: GeoPoint, zoom: u8) -> u64 {
    let tiles = 1u64 << zoom;
    let clamp = |v: f64| (v.floor().max(0.0) as u64).min(tiles - 1);
    let x = clamp((point.lon + 180.0) / 360.0 * tiles as f64);
    let sin = point
        .lat
        .clamp(-MAX_TILE_LAT, MAX_TILE_LAT)
        .to_radians()
        .sin();
    let y = clamp(
        (0.5 - ((1.0 + sin) / (1.0 - sin)).ln() / (4.0 * std::f64::consts::PI)) * tiles as f64,
    );
    ((zoom as u64) << 58) | (x << 29) | y
}

/// `bounds`: only points inside the box count (a box whose left is east of its right crosses
/// the antimeridian).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bounds {
    top: f64,
    left: f64,
    bottom: f64,
    right: f64,
}

impl Bounds {
    fn parse(agg: &str, value: &Value) -> Result<Bounds> {
        let failed = |cause: Error| {
            Error::x_content_parse(format!("[{agg}] failed to parse field [bounds]"))
                .caused_by(cause)
        };
        let Value::Object(map) = value else {
            return Err(failed(Error::illegal_argument(format!(
                "bounds doesn't support values of type: {}",
                token(value)
            ))));
        };
        let (mut top, mut left, mut bottom, mut right) = (None, None, None, None);
        let number = |v: &Value| {
            v.as_f64()
                .ok_or_else(|| failed(Error::illegal_argument("bounds must be numbers")))
        };
        for (key, v) in map {
            match key.as_str() {
                "top_left" => {
                    let p = parse_point(v).map_err(failed)?;
                    (top, left) = (Some(p.lat), Some(p.lon));
                }
                "bottom_right" => {
                    let p = parse_point(v).map_err(failed)?;
                    (bottom, right) = (Some(p.lat), Some(p.lon));
                }
                "top_right" => {
                    let p = parse_point(v).map_err(failed)?;
                    (top, right) = (Some(p.lat), Some(p.lon));
                }
                "bottom_left" => {
                    let p = parse_point(v).map_err(failed)?;
                    (bottom, left) = (Some(p.lat), Some(p.lon));
                }
                "top" => top = Some(number(v)?),
                "left" => left = Some(number(v)?),
                "bottom" => bottom = Some(number(v)?),
                "right" => right = Some(number(v)?),
                other => {
                    return Err(failed(Error::illegal_argument(format!(
                        "unexpected field [{other}]"
                    ))))
                }
            }
        }
        match (top, left, bottom, right) {
            (Some(top), Some(left), Some(bottom), Some(right)) => Ok(Bounds {
                top,
                left,
                bottom,
                right,
            }),
            _ => Err(failed(Error::illegal_argument(
                "bounds need a top, a left, a bottom and a right",
            ))),
        }
    }

    fn contains(&self, point: GeoPoint) -> bool {
        let lat_ok = point.lat >= self.bottom && point.lat <= self.top;
        let lon_ok = if self.left <= self.right {
            point.lon >= self.left && point.lon <= self.right
        } else {
            point.lon >= self.left || point.lon <= self.right
        };
        lat_ok && lon_ok
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct GeoGridRequest {
    pub grid: Grid,
    pub field: Option<String>,
    pub precision: u8,
    pub size: usize,
    pub shard_size: Option<usize>,
    pub bounds: Option<Bounds>,
}

impl GeoGridRequest {
    pub fn parse(grid: Grid, name: &str, body: &Map<String, Value>) -> Result<GeoGridRequest> {
        let agg = grid.type_name();
        let failed = |key: &str, cause: Error| {
            Error::x_content_parse(format!("[{agg}] failed to parse field [{key}]"))
                .caused_by(cause)
        };
        let mut request = GeoGridRequest {
            grid,
            field: None,
            precision: grid.default_precision(),
            size: 10_000,
            shard_size: None,
            bounds: None,
        };
        for (key, value) in body {
            match key.as_str() {
                "field" => request.field = Some(string_param(agg, key, value)?),
                "precision" => {
                    let precision = match (grid, value) {
                        (Grid::Geohash, Value::String(text))
                            if text.trim().parse::<i64>().is_err() =>
                        {
                            let meters = parse_distance(value).map_err(|_| {
                                failed(
                                    key,
                                    Error::new(
                                        "number_format_exception",
                                        400,
                                        format!("For input string: \"{text}\""),
                                    ),
                                )
                            })?;
                            tessera_mapping::geo::geohash_levels_for(meters).min(12)
                        }
                        _ => int_param(agg, key, value)?,
                    };
                    let (low, high) = grid.precision_range();
                    if !(low..=high).contains(&precision) {
                        let what = match grid {
                            Grid::Geohash => "geohash aggregation precision",
                            Grid::Geotile => "geotile_grid precision",
                        };
                        return Err(failed(
                            key,
                            Error::illegal_argument(format!(
                                "Invalid {what} of {precision}. Must be between {low} and {high}."
                            )),
                        ));
                    }
                    request.precision = precision as u8;
                }
                "size" | "shard_size" => {
                    let n = int_param(agg, key, value)?;
                    if n <= 0 {
                        return Err(failed(
                            key,
                            Error::illegal_argument(format!(
                                "[{key}] must be greater than 0. Found [{n}] in [{name}]"
                            )),
                        ));
                    }
                    if key == "size" {
                        request.size = n as usize;
                    } else {
                        request.shard_size = Some(n as usize);
                    }
                }
                "bounds" => request.bounds = Some(Bounds::parse(agg, value)?),
                "script" => return Err(no_scripts(agg)),
                _ => return Err(unknown_field(agg, key)),
            }
        }
        Ok(request)
    }

    fn shard_size(&self, shards: usize) -> usize {
        let computed = if shards > 1 {
            self.size.saturating_mul(3) / 2 + 10
        } else {
            self.size
        };
        self.shard_size.unwrap_or(computed).max(self.size)
    }
}

pub fn factory(
    request: &AggRequest,
    grid: &GeoGridRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    let field = grid.field.as_deref().ok_or_else(|| {
        Error::illegal_argument(format!(
            "Required one of fields [field, script], but none were specified. [{}]",
            request.name
        ))
    })?;
    Ok(Box::new(GeoGridFactory {
        request: grid.clone(),
        columns: columns(ctx, grid.grid.type_name(), Some(field))?,
    }))
}

struct GeoGridFactory {
    request: GeoGridRequest,
    columns: Option<(String, String)>,
}

impl Factory for GeoGridFactory {
    fn collector(&self, subs: SubCollectors, single_parent: bool) -> Result<Box<dyn Collector>> {
        Ok(Box::new(GeoGridCollector {
            grid: self.request.grid,
            precision: self.request.precision,
            bounds: self.request.bounds,
            columns: self.columns.clone(),
            points: None,
            ords: BucketOrds::new(single_parent),
            counts: Vec::new(),
            subs,
            cells: Vec::new(),
        }))
    }
}

struct GeoGridCollector {
    grid: Grid,
    precision: u8,
    bounds: Option<Bounds>,
    columns: Option<(String, String)>,
    points: Option<(Column<f64>, Column<f64>)>,
    ords: BucketOrds,
    counts: Vec<u64>,
    subs: SubCollectors,
    /// The distinct cells of the current document.
    cells: Vec<u64>,
}

impl Collector for GeoGridCollector {
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        self.points = None;
        if let Some((lat, lon)) = &self.columns {
            let fast = segment.reader.fast_fields();
            let open = |name: &str| {
                fast.column_opt::<f64>(name)
                    .map_err(|e| Error::internal("open a geo point column", e))
            };
            self.points = open(lat)?.zip(open(lon)?);
        }
        self.subs.set_segment(segment)
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        let Some((lats, lons)) = &self.points else {
            return;
        };
        for (&doc, &parent) in docs.iter().zip(parents) {
            self.cells.clear();
            for (lat, lon) in lats.values_for_doc(doc).zip(lons.values_for_doc(doc)) {
                let point = GeoPoint { lat, lon };
                if self.bounds.is_some_and(|b| !b.contains(point)) {
                    continue;
                }
                let cell = self.grid.cell(point, self.precision);
                if !self.cells.contains(&cell) {
                    self.cells.push(cell);
                }
            }
            for &cell in &self.cells {
                let ord = self.ords.ord(parent, cell);
                *slot(&mut self.counts, ord) += 1;
                if !self.subs.is_empty() {
                    self.subs.push(doc, ord);
                }
            }
        }
        self.subs.flush();
    }

    fn finish_segment(&mut self) -> Result<()> {
        self.subs.finish_segment()
    }

    fn build(&mut self, parent: u32) -> Result<InternalAgg> {
        let pairs = self.ords.buckets_of(parent).to_vec();
        let mut buckets = Vec::with_capacity(pairs.len());
        for (cell, ord) in pairs {
            buckets.push(GridBucket {
                cell,
                doc_count: self.counts.get(ord as usize).copied().unwrap_or(0),
                subs: self.subs.build(ord)?,
            });
        }
        Ok(InternalAgg::GeoGrid(InternalGeoGrid { buckets }))
    }
}

// ---- intermediate result ----

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GridBucket {
    pub cell: u64,
    pub doc_count: u64,
    pub subs: InternalAggregations,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InternalGeoGrid {
    pub buckets: Vec<GridBucket>,
}

fn request_of(request: &AggRequest) -> Result<&GeoGridRequest> {
    match &request.kind {
        AggKind::GeoGrid(g) => Ok(g),
        _ => Err(Error::illegal_state("geo grid result for another request")),
    }
}

impl InternalGeoGrid {
    /// The fullest cells first; equal counts: the larger cell number first (OpenSearch's order).
    fn sort(&mut self) {
        self.buckets
            .sort_by(|a, b| b.doc_count.cmp(&a.doc_count).then(b.cell.cmp(&a.cell)));
    }

    pub fn reduce(parts: Vec<InternalGeoGrid>, request: &AggRequest) -> Result<InternalGeoGrid> {
        let mut merged: BTreeMap<u64, (u64, Vec<InternalAggregations>)> = BTreeMap::new();
        for bucket in parts.into_iter().flat_map(|p| p.buckets) {
            let entry = merged.entry(bucket.cell).or_default();
            entry.0 += bucket.doc_count;
            entry.1.push(bucket.subs);
        }
        let buckets = merged
            .into_iter()
            .map(|(cell, (doc_count, subs))| {
                Ok(GridBucket {
                    cell,
                    doc_count,
                    subs: InternalAggregations::reduce(subs, &request.subs)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(InternalGeoGrid { buckets })
    }

    pub fn finish_shard(&mut self, request: &AggRequest, ctx: &ShardFinish) -> Result<()> {
        let shard_size = request_of(request)?.shard_size(ctx.shards_in_request);
        self.sort();
        self.buckets.truncate(shard_size);
        for bucket in &mut self.buckets {
            bucket.subs.finish_shard(&request.subs, ctx)?;
        }
        Ok(())
    }

    pub fn render(
        mut self,
        request: &AggRequest,
        ctx: &mut RenderContext,
    ) -> Result<Map<String, Value>> {
        let grid = request_of(request)?;
        self.sort();
        self.buckets.truncate(grid.size);
        ctx.add_buckets(self.buckets.len())?;
        let mut buckets = Vec::with_capacity(self.buckets.len());
        for bucket in self.buckets {
            let mut out = Map::new();
            out.insert("key".into(), json!(grid.grid.key(bucket.cell)));
            out.insert("doc_count".into(), json!(bucket.doc_count));
            render_subs(&mut out, bucket.subs, &request.subs, ctx)?;
            buckets.push(Value::Object(out));
        }
        let mut out = Map::new();
        out.insert("buckets".into(), Value::Array(buckets));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(lat: f64, lon: f64) -> GeoPoint {
        GeoPoint { lat, lon }
    }

    #[test]
    fn geohashes_match_the_known_cells() {
        // the cells OpenSearch answers for these points
        let amsterdam = point(52.374, 4.894);
        assert_eq!(Grid::Geohash.key(Grid::Geohash.cell(amsterdam, 3)), "u17");
        assert_eq!(
            Grid::Geohash.key(Grid::Geohash.cell(amsterdam, 7)),
            "u173zq7"
        );
        assert_eq!(
            Grid::Geohash.key(Grid::Geohash.cell(point(40.7, -74.0), 7)),
            "dr5rs14"
        );
        assert_eq!(
            Grid::Geohash.key(Grid::Geohash.cell(point(48.86, 2.35), 1)),
            "u"
        );
    }

    #[test]
    fn tiles_match_the_known_cells() {
        assert_eq!(
            Grid::Geotile.key(Grid::Geotile.cell(point(52.374, 4.894), 6)),
            "6/32/21"
        );
        assert_eq!(
            Grid::Geotile.key(Grid::Geotile.cell(point(40.7, -74.0), 6)),
            "6/18/24"
        );
        assert_eq!(
            Grid::Geotile.key(Grid::Geotile.cell(point(52.52, 13.405), 7)),
            "7/68/41"
        );
        assert_eq!(
            Grid::Geotile.key(Grid::Geotile.cell(point(89.0, 180.0), 0)),
            "0/0/0"
        );
        assert_eq!(
            Grid::Geotile.key(Grid::Geotile.cell(point(-90.0, 180.0), 2)),
            "2/3/3"
        );
    }

    #[test]
    fn distance_precisions_pick_opensearch_s_levels() {
        assert_eq!(tessera_mapping::geo::geohash_levels_for(1000.0), 7);
        assert_eq!(tessera_mapping::geo::geohash_levels_for(500_000.0), 3);
        assert_eq!(tessera_mapping::geo::geohash_levels_for(0.0), 12);
    }

    #[test]
    fn parse_checks_precision_and_sizes() {
        let parse = |grid, body: Value| GeoGridRequest::parse(grid, "r", body.as_object().unwrap());
        let err = |grid, body| format!("{:?}", parse(grid, body).unwrap_err());
        assert!(err(Grid::Geohash, json!({"field": "p", "precision": 13}))
            .contains("Invalid geohash aggregation precision of 13. Must be between 1 and 12."));
        assert!(err(Grid::Geotile, json!({"field": "p", "precision": 30}))
            .contains("Invalid geotile_grid precision of 30. Must be between 0 and 29."));
        assert!(err(Grid::Geotile, json!({"field": "p", "size": 0}))
            .contains("[size] must be greater than 0. Found [0] in [r]"));
        assert!(err(Grid::Geohash, json!({"field": "p", "precision": "xx"}))
            .contains("For input string: \\\"xx\\\""));
        let by_distance = parse(Grid::Geohash, json!({"field": "p", "precision": "1km"})).unwrap();
        assert_eq!(by_distance.precision, 7);
    }

    #[test]
    fn bounds_may_cross_the_antimeridian() {
        let b = Bounds::parse(
            "g",
            &json!({"top_left": "10,170", "bottom_right": "-10,-170"}),
        )
        .unwrap();
        assert!(b.contains(point(0.0, 179.0)) && b.contains(point(0.0, -175.0)));
        assert!(!b.contains(point(0.0, 0.0)) && !b.contains(point(20.0, 175.0)));
    }
}
