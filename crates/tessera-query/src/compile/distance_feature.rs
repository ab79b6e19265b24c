//! `distance_feature`: every document with a value in a date or geo point field, scored
//! `boost × pivot / (pivot + distance)` by its value closest to the origin, as Lucene's
//! `LongDistanceFeatureQuery` and `LatLonPointDistanceFeatureQuery` score (the geo distance
//! is Lucene's sloppy haversine, the date origin rounded up as OpenSearch parses it).
//!
//! A segment's matches are scored when its scorer is made, reading the field's columns.

use std::sync::Arc;

use tantivy::columnar::Column;
use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, Score, SegmentReader};
use tessera_common::{Error, Result};
use tessera_knn::query::DocScoresScorer;
use tessera_mapping::geo::{parse_distance, parse_point, GeoPoint};
use tessera_mapping::sloppy_math::haversin_meters;
use tessera_mapping::LeafKind;

use super::values::{parse_date_bound, DateBoundContext};
use super::{match_none, CompileContext};
use crate::ast::DistanceFeatureQuery;

pub fn compile(ctx: &CompileContext, query: &DistanceFeatureQuery) -> Result<Box<dyn Query>> {
    let Some(leaf) = ctx.table.leaf(&query.field) else {
        return Ok(match_none());
    };
    let failed = |e: Error| {
        ctx.error(format!("failed to create query: {}", e.reason()))
            .caused_by(e)
    };
    let schema = ctx.table.schema();
    let source = match &leaf.kind {
        LeafKind::Date { format } if leaf.fast => {
            let dates = DateBoundContext {
                format,
                zone: None,
                now: ctx.now_millis,
            };
            let origin = parse_date_bound(&dates, &query.origin, true).map_err(failed)?;
            let pivot = tessera_common::time::parse_time_value(&query.pivot, "pivot")
                .ok()
                .flatten()
                .ok_or_else(|| {
                    failed(Error::illegal_argument(format!(
                        "failed to parse [{}]",
                        query.pivot
                    )))
                })?;
            Source::Date {
                column: leaf.path.clone(),
                origin,
                pivot: pivot as f64,
            }
        }
        LeafKind::GeoPoint {
            lat: Some(lat),
            lon: Some(lon),
        } => {
            let origin = parse_point(&query.origin).map_err(failed)?;
            let pivot = parse_distance(&serde_json::Value::String(query.pivot.clone()))
                .map_err(failed)?;
            Source::Geo {
                lat: schema.get_field_name(*lat).to_string(),
                lon: schema.get_field_name(*lon).to_string(),
                origin,
                pivot,
            }
        }
        _ => {
            return Err(failed(Error::illegal_argument(format!(
                "Illegal data type of [{}]![distance_feature] query can only be run on a date, date_nanos or geo_point field type!",
                leaf.field_type.name()
            ))))
        }
    };
    Ok(Box::new(DistanceFeature {
        source: Arc::new(source),
        boost: query.boost,
    }))
}

/// Where the distances come from.
#[derive(Debug)]
enum Source {
    /// A date column (milliseconds), its origin and pivot in milliseconds.
    Date {
        column: String,
        origin: i64,
        pivot: f64,
    },
    /// A geo point's columns, its origin and pivot in meters.
    Geo {
        lat: String,
        lon: String,
        origin: GeoPoint,
        pivot: f64,
    },
}

#[derive(Clone, Debug)]
struct DistanceFeature {
    source: Arc<Source>,
    boost: f32,
}

impl Source {
    fn pivot(&self) -> f64 {
        match self {
            Source::Date { pivot, .. } | Source::Geo { pivot, .. } => *pivot,
        }
    }

    /// Each document of the segment with a value, and its least distance from the origin.
    fn distances(&self, reader: &SegmentReader) -> tantivy::Result<Vec<(DocId, f64)>> {
        let fast = reader.fast_fields();
        let mut out = Vec::new();
        match self {
            Source::Date { column, origin, .. } => {
                let Some(column) = fast.column_opt::<i64>(column)? else {
                    return Ok(out);
                };
                for doc in 0..reader.max_doc() {
                    // a distance past the longs is the longest one, as Lucene takes it
                    let least = column
                        .values_for_doc(doc)
                        .map(|v| v.abs_diff(*origin).min(i64::MAX as u64))
                        .min();
                    if let Some(least) = least {
                        out.push((doc, least as f64));
                    }
                }
            }
            Source::Geo {
                lat, lon, origin, ..
            } => {
                let (Some(lats), Some(lons)): (Option<Column<f64>>, Option<Column<f64>>) =
                    (fast.column_opt(lat)?, fast.column_opt(lon)?)
                else {
                    return Ok(out);
                };
                for doc in 0..reader.max_doc() {
                    let least = lats
                        .values_for_doc(doc)
                        .zip(lons.values_for_doc(doc))
                        .map(|(lat, lon)| haversin_meters(origin.lat, origin.lon, lat, lon))
                        .min_by(f64::total_cmp);
                    if let Some(least) = least {
                        out.push((doc, least));
                    }
                }
            }
        }
        Ok(out)
    }
}

impl Query for DistanceFeature {
    fn weight(&self, _scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl DistanceFeature {
    /// Lucene's score: computed in double precision with the boost, then a float.
    fn score(&self, distance: f64, boost: Score) -> Score {
        let pivot = self.source.pivot();
        (f64::from(self.boost * boost) * (pivot / (pivot + distance))) as f32
    }
}

impl Weight for DistanceFeature {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let docs: Vec<(DocId, Score)> = self
            .source
            .distances(reader)?
            .into_iter()
            .map(|(doc, distance)| (doc, self.score(distance, boost)))
            .collect();
        Ok(Box::new(DocScoresScorer::new(Arc::from(docs), 1.0)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let distances = self.source.distances(reader)?;
        match distances.binary_search_by_key(&doc, |d| d.0) {
            Ok(i) => Ok(Explanation::new(
                "distance_feature: boost * pivot / (pivot + distance)",
                self.score(distances[i].1, 1.0),
            )),
            Err(_) => Err(tantivy::TantivyError::InvalidArgument(format!(
                "document #({doc}) does not match"
            ))),
        }
    }
}
