//! `function_score` as a tantivy query: the wrapped query's documents, each scored by
//! combining the query's score with its functions' (OpenSearch's `FunctionScoreQuery`, whose
//! arithmetic this follows: functions in doubles, the combination cast to a float).
//!
//! The query's own `boost` goes to the wrapped query (as Lucene passes a weight's boost down),
//! not to the functions, and `min_score` is compared with the final score, as in OpenSearch.
//! A function that cannot score a document it applies to (a missing value with no `missing`,
//! a `field_value_factor` that comes out negative or not a number) fails the shard as in
//! OpenSearch: a scorer cannot return an error, so a segment whose column could produce one
//! (its value range or its documents without a value say so) is checked document by document
//! when its scorer is made, and the first failure is the scorer's error.

use tantivy::columnar::Column;
use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED};
use tessera_common::{Error, Result};
use tessera_mapping::geo::GeoPoint;
use tessera_mapping::sloppy_math::haversin_meters;
use tessera_mapping::{scaled_float_value, LeafKind};

use super::values::{parse_date_bound, DateBoundContext};
use super::CompileContext;
use crate::ast::{
    DecayCurve, DecayFunction, FieldValueModifier, FunctionBoostMode, FunctionScoreMode,
    FunctionScoreQuery, MultiValueMode, ScoreFunction,
};

/// Compiles `query`; its `boost` is the caller's to apply (see the module docs).
pub(super) fn compile(ctx: &CompileContext, query: &FunctionScoreQuery) -> Result<Box<dyn Query>> {
    let inner = super::compile(&query.query, ctx)?;
    let functions = query
        .functions
        .iter()
        .map(|function| {
            Ok(Function {
                filter: match &function.filter {
                    Some(filter) => Some(super::compile(filter, ctx)?),
                    None => None,
                },
                weight: function.weight.map(f64::from),
                kind: prepare(ctx, &function.function)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Box::new(FunctionScore {
        inner,
        functions,
        score_mode: query.score_mode,
        boost_mode: query.boost_mode,
        max_boost: f64::from(query.max_boost),
        min_score: query.min_score,
    }))
}

/// A numeric column as a function reads it: its path, and how its stored values become the
/// field's (a scaled float's integers times its factor's inverse, as field data computes them).
#[derive(Clone, Debug)]
enum ColumnSource {
    Integer {
        path: String,
        scaling_factor: f64,
    },
    Float {
        path: String,
    },
    /// A geo point's distances in meters from `origin` (a geo decay's values: its origin is
    /// then 0), by Lucene's sloppy haversine as OpenSearch's `arc` distance.
    GeoDistance {
        lat: String,
        lon: String,
        origin: GeoPoint,
    },
}

#[derive(Clone, Debug)]
enum Kind {
    Weight,
    FieldValueFactor {
        field: String,
        column: Option<ColumnSource>,
        factor: f64,
        modifier: FieldValueModifier,
        missing: Option<f64>,
    },
    Decay {
        curve: DecayCurve,
        column: ColumnSource,
        origin: f64,
        /// The curve's scale parameter, computed once from `scale` and `decay`.
        scale: f64,
        offset: f64,
        mode: MultiValueMode,
    },
    Script(std::sync::Arc<super::script::PreparedScript>),
    Random(super::random_score::RandomScore),
}

struct Function {
    filter: Option<Box<dyn Query>>,
    weight: Option<f64>,
    kind: Kind,
}

impl Clone for Function {
    fn clone(&self) -> Self {
        Function {
            filter: self.filter.as_ref().map(|f| f.box_clone()),
            weight: self.weight,
            kind: self.kind.clone(),
        }
    }
}

impl std::fmt::Debug for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Function")
            .field("filtered", &self.filter.is_some())
            .field("weight", &self.weight)
            .field("kind", &self.kind)
            .finish()
    }
}

fn numeric_source(kind: &LeafKind, path: &str) -> Option<ColumnSource> {
    match kind {
        LeafKind::Integer | LeafKind::Date { .. } => Some(ColumnSource::Integer {
            path: path.to_string(),
            scaling_factor: 1.0,
        }),
        LeafKind::ScaledFloat { factor } => Some(ColumnSource::Integer {
            path: path.to_string(),
            scaling_factor: *factor,
        }),
        LeafKind::Float => Some(ColumnSource::Float {
            path: path.to_string(),
        }),
        _ => None,
    }
}

fn only_numeric(field: &str, type_name: &str) -> Error {
    Error::parsing(format!(
        "field [{field}] is of type [{type_name}], but only numeric types are supported."
    ))
}

fn prepare(ctx: &CompileContext, function: &ScoreFunction) -> Result<Kind> {
    Ok(match function {
        ScoreFunction::Weight => Kind::Weight,
        ScoreFunction::Random { seed, field } => Kind::Random(
            super::random_score::RandomScore::prepare(ctx, *seed, field.as_deref())?,
        ),
        ScoreFunction::Script(spec) => Kind::Script(super::script::prepare(
            ctx,
            spec,
            tessera_script::ScriptContext::Score,
        )?),
        ScoreFunction::FieldValueFactor {
            field,
            factor,
            modifier,
            missing,
        } => {
            let column = match ctx.table.leaf(field) {
                None if missing.is_none() => {
                    return Err(Error::new(
                        "exception",
                        400,
                        format!(
                            "Unable to find a field mapper for field [{field}]. No 'missing' value defined."
                        ),
                    ))
                }
                None => None,
                Some(leaf) => Some(
                    numeric_source(&leaf.kind, &leaf.path)
                        .filter(|_| leaf.fast)
                        .ok_or_else(|| only_numeric(field, leaf.field_type.name()))?,
                ),
            };
            Kind::FieldValueFactor {
                field: field.clone(),
                column,
                factor: *factor,
                modifier: *modifier,
                missing: *missing,
            }
        }
        ScoreFunction::Decay(function) => {
            let DecayFunction {
                curve,
                field,
                origin,
                scale,
                offset,
                decay,
                multi_value_mode,
            } = function.as_ref();
            let leaf = ctx
                .table
                .leaf(field)
                .ok_or_else(|| Error::parsing(format!("unknown field [{field}]")))?;
            let create_failed = |reason: String| Error::new("parse_exception", 400, reason);
            if let LeafKind::GeoPoint {
                lat: Some(lat),
                lon: Some(lon),
            } = &leaf.kind
            {
                let Some(scale) = scale else {
                    return Err(create_failed(
                        "[origin] and [scale] must be set for geo fields.".into(),
                    ));
                };
                let failed = |e: Error| {
                    ctx.error(format!("failed to create query: {}", e.reason()))
                        .caused_by(e)
                };
                // OpenSearch takes a missing origin as the point (0, 0)
                let origin = match origin {
                    Some(origin) => tessera_mapping::geo::parse_point(origin).map_err(failed)?,
                    None => GeoPoint { lat: 0.0, lon: 0.0 },
                };
                let meters = |value: &serde_json::Value| {
                    tessera_mapping::geo::parse_distance(value).map_err(failed)
                };
                let schema = ctx.table.schema();
                return Ok(Kind::Decay {
                    curve: *curve,
                    column: ColumnSource::GeoDistance {
                        lat: schema.get_field_name(*lat).to_string(),
                        lon: schema.get_field_name(*lon).to_string(),
                        origin,
                    },
                    origin: 0.0,
                    scale: curve_scale(*curve, meters(scale)?, *decay),
                    offset: offset.as_ref().map(meters).transpose()?.unwrap_or(0.0),
                    mode: *multi_value_mode,
                });
            }
            let column = numeric_source(&leaf.kind, &leaf.path)
                .filter(|_| leaf.fast)
                .ok_or_else(|| only_numeric(field, leaf.field_type.name()))?;
            let (origin, scale, offset) = match &leaf.kind {
                LeafKind::Date { format } => {
                    let Some(scale) = scale else {
                        return Err(create_failed("[scale] must be set for date fields.".into()));
                    };
                    let dates = DateBoundContext {
                        format,
                        zone: None,
                        now: ctx.now_millis,
                    };
                    let origin = match origin {
                        Some(origin) => parse_date_bound(&dates, origin, false)? as f64,
                        None => ctx.now_millis as f64,
                    };
                    let time = |value: &serde_json::Value, key: &str| -> Result<f64> {
                        let text = value
                            .as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| value.to_string());
                        tessera_common::time::parse_time_value(&text, key)?
                            .map(|millis| millis as f64)
                            .ok_or_else(|| {
                                Error::parsing(format!("failed to parse [{key}] [{text}]"))
                            })
                    };
                    let offset = match offset {
                        Some(offset) => time(offset, "offset")?,
                        None => 0.0,
                    };
                    (origin, time(scale, "scale")?, offset)
                }
                _ => {
                    let (Some(origin), Some(scale)) = (origin, scale) else {
                        return Err(create_failed(
                            "both [scale] and [origin] must be set for numeric fields.".into(),
                        ));
                    };
                    let number = |value: &serde_json::Value, key: &str| -> Result<f64> {
                        match value {
                            serde_json::Value::Number(n) => n.as_f64(),
                            serde_json::Value::String(s) => s.trim().parse().ok(),
                            _ => None,
                        }
                        .ok_or_else(|| Error::parsing(format!("[{key}] [{value}] is not a number")))
                    };
                    let offset = match offset {
                        Some(offset) => number(offset, "offset")?,
                        None => 0.0,
                    };
                    (number(origin, "origin")?, number(scale, "scale")?, offset)
                }
            };
            Kind::Decay {
                curve: *curve,
                column,
                origin,
                scale: curve_scale(*curve, scale, *decay),
                offset,
                mode: *multi_value_mode,
            }
        }
    })
}

/// The curve's parameter from the user's `scale` (the distance at which the score is `decay`).
fn curve_scale(curve: DecayCurve, scale: f64, decay: f64) -> f64 {
    match curve {
        DecayCurve::Gauss => 0.5 * scale.powi(2) / decay.ln(),
        DecayCurve::Exp => decay.ln() / scale,
        DecayCurve::Linear => scale / (1.0 - decay),
    }
}

/// The curve at `distance` (already less the offset, never negative).
fn curve_value(curve: DecayCurve, distance: f64, scale: f64) -> f64 {
    match curve {
        DecayCurve::Gauss => (0.5 * distance.powi(2) / scale).exp(),
        DecayCurve::Exp => (scale * distance).exp(),
        DecayCurve::Linear => ((scale - distance) / scale).max(0.0),
    }
}

fn modify(modifier: FieldValueModifier, value: f64) -> f64 {
    match modifier {
        FieldValueModifier::None => value,
        FieldValueModifier::Log => value.log10(),
        FieldValueModifier::Log1p => (value + 1.0).log10(),
        FieldValueModifier::Log2p => (value + 2.0).log10(),
        FieldValueModifier::Ln => value.ln(),
        FieldValueModifier::Ln1p => value.ln_1p(),
        FieldValueModifier::Ln2p => (value + 2.0).ln(),
        FieldValueModifier::Square => value * value,
        FieldValueModifier::Sqrt => value.sqrt(),
        FieldValueModifier::Reciprocal => 1.0 / value,
    }
}

/// Java's `Double.toString` for the values OpenSearch's messages show.
fn java_double(value: f64) -> String {
    if value.is_finite() && value.fract() == 0.0 && value.abs() < 1e7 {
        format!("{value:.1}")
    } else {
        format!("{value}")
    }
}

#[derive(Debug)]
struct FunctionScore {
    inner: Box<dyn Query>,
    functions: Vec<Function>,
    score_mode: FunctionScoreMode,
    boost_mode: FunctionBoostMode,
    max_boost: f64,
    min_score: Option<f32>,
}

impl Clone for FunctionScore {
    fn clone(&self) -> Self {
        FunctionScore {
            inner: self.inner.box_clone(),
            functions: self.functions.clone(),
            score_mode: self.score_mode,
            boost_mode: self.boost_mode,
            max_boost: self.max_boost,
            min_score: self.min_score,
        }
    }
}

impl Query for FunctionScore {
    fn weight(&self, enable_scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let inner = self.inner.weight(enable_scoring)?;
        let unscored = EnableScoring::disabled_from_schema(enable_scoring.schema());
        let filters = self
            .functions
            .iter()
            .map(|f| f.filter.as_ref().map(|q| q.weight(unscored)).transpose())
            .collect::<tantivy::Result<Vec<_>>>()?;
        Ok(Box::new(FunctionScoreWeight {
            inner,
            filters,
            functions: self
                .functions
                .iter()
                .map(|f| (f.weight, f.kind.clone()))
                .collect(),
            score_mode: self.score_mode,
            boost_mode: self.boost_mode,
            max_boost: self.max_boost,
            min_score: self.min_score,
        }))
    }
}

struct FunctionScoreWeight {
    inner: Box<dyn Weight>,
    filters: Vec<Option<Box<dyn Weight>>>,
    functions: Vec<(Option<f64>, Kind)>,
    score_mode: FunctionScoreMode,
    boost_mode: FunctionBoostMode,
    max_boost: f64,
    min_score: Option<f32>,
}

impl FunctionScoreWeight {
    fn open(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<FunctionScoreScorer> {
        let filters = self
            .filters
            .iter()
            .map(|w| w.as_ref().map(|w| w.scorer(reader, 1.0)).transpose())
            .collect::<tantivy::Result<Vec<_>>>()?;
        let evaluators = self
            .functions
            .iter()
            .map(|(weight, kind)| Evaluator::open(*weight, kind, reader))
            .collect::<tantivy::Result<Vec<_>>>()?;
        Ok(FunctionScoreScorer {
            inner: self.inner.scorer(reader, boost)?,
            filters,
            evaluators,
            score_mode: self.score_mode,
            boost_mode: self.boost_mode,
            max_boost: self.max_boost,
            min_score: self.min_score,
            score: None,
        })
    }
}

impl Weight for FunctionScoreWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        if self
            .functions
            .iter()
            .any(|(_, kind)| may_fail(kind, reader))
        {
            // find the first document a function cannot score, as OpenSearch fails on it
            let mut check = self.open(reader, boost)?;
            let mut doc = check.inner.doc();
            while doc != TERMINATED {
                check
                    .compute(doc)
                    .map_err(|e| tantivy::TantivyError::InvalidArgument(e.to_carried_text()))?;
                doc = check.inner.advance();
            }
        }
        let mut scorer = self.open(reader, boost)?;
        scorer.settle();
        Ok(Box::new(scorer))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let score = super::score_of_match(self, reader, doc)?;
        Ok(Explanation::new("function score", score))
    }
}

/// Whether `kind` could fail on some document of this segment (see the module docs).
fn may_fail(kind: &Kind, reader: &SegmentReader) -> bool {
    if let Kind::Script(_) = kind {
        return true;
    }
    let Kind::FieldValueFactor {
        column: Some(source),
        factor,
        modifier,
        missing,
        ..
    } = kind
    else {
        return false;
    };
    let Ok(Some(column)) = NumberColumn::open(source, reader) else {
        return missing.is_none();
    };
    if missing.is_none() && !column.full() {
        return true;
    }
    let invalid = |value: f64| {
        let result = modify(*modifier, value * factor);
        result.is_nan() || result < 0.0
    };
    let (low, high) = column.range();
    invalid(low) || invalid(high) || missing.is_some_and(invalid)
}

/// A segment's numeric column, its values as the field's.
enum NumberColumn {
    Integer(Column<i64>, f64),
    Float(Column<f64>),
    /// Latitudes, longitudes and the origin their distances are measured from.
    GeoDistance(Column<f64>, Column<f64>, GeoPoint),
}

impl NumberColumn {
    fn open(
        source: &ColumnSource,
        reader: &SegmentReader,
    ) -> tantivy::Result<Option<NumberColumn>> {
        let fast = reader.fast_fields();
        Ok(match source {
            ColumnSource::Integer {
                path,
                scaling_factor,
            } => fast
                .column_opt::<i64>(path)?
                .map(|c| NumberColumn::Integer(c, *scaling_factor)),
            ColumnSource::Float { path } => fast.column_opt::<f64>(path)?.map(NumberColumn::Float),
            ColumnSource::GeoDistance { lat, lon, origin } => fast
                .column_opt::<f64>(lat)?
                .zip(fast.column_opt::<f64>(lon)?)
                .map(|(lats, lons)| NumberColumn::GeoDistance(lats, lons, *origin)),
        })
    }

    /// Whether every document has a value.
    fn full(&self) -> bool {
        let cardinality = match self {
            NumberColumn::Integer(c, _) => c.get_cardinality(),
            NumberColumn::Float(c) | NumberColumn::GeoDistance(c, _, _) => c.get_cardinality(),
        };
        cardinality == tantivy::columnar::Cardinality::Full
    }

    fn range(&self) -> (f64, f64) {
        match self {
            NumberColumn::Integer(c, scaling_factor) => (
                scaled_float_value(c.min_value(), *scaling_factor),
                scaled_float_value(c.max_value(), *scaling_factor),
            ),
            NumberColumn::Float(c) => (c.min_value(), c.max_value()),
            NumberColumn::GeoDistance(..) => (0.0, f64::INFINITY),
        }
    }

    /// The document's values, smallest first, into `out`.
    fn values(&self, doc: DocId, out: &mut Vec<f64>) {
        out.clear();
        match self {
            NumberColumn::Integer(c, scaling_factor) => out.extend(
                c.values_for_doc(doc)
                    .map(|v| scaled_float_value(v, *scaling_factor)),
            ),
            NumberColumn::Float(c) => out.extend(c.values_for_doc(doc)),
            NumberColumn::GeoDistance(lats, lons, origin) => {
                out.extend(
                    lats.values_for_doc(doc)
                        .zip(lons.values_for_doc(doc))
                        .map(|(lat, lon)| haversin_meters(origin.lat, origin.lon, lat, lon)),
                );
                out.sort_by(f64::total_cmp);
            }
        }
    }
}

/// One function on one segment.
struct Evaluator {
    weight: Option<f64>,
    kind: Kind,
    column: Option<NumberColumn>,
    values: Vec<f64>,
    /// A script function's columns on this segment and its frame.
    script: Option<(crate::script_docs::SegmentDocs, Vec<tessera_script::Value>)>,
    /// A `random_score` function's values on this segment.
    random: Option<super::random_score::RandomValues>,
}

impl Evaluator {
    fn open(weight: Option<f64>, kind: &Kind, reader: &SegmentReader) -> tantivy::Result<Self> {
        let column = match kind {
            Kind::Weight => None,
            Kind::FieldValueFactor { column, .. } => match column {
                Some(source) => NumberColumn::open(source, reader)?,
                None => None,
            },
            Kind::Decay { column, .. } => NumberColumn::open(column, reader)?,
            Kind::Script(_) | Kind::Random(_) => None,
        };
        let random = match kind {
            Kind::Random(random) => Some(random.open(reader)?),
            _ => None,
        };
        let script = match kind {
            Kind::Script(script) => Some((script.fields.open(reader)?, script.script.new_frame())),
            _ => None,
        };
        Ok(Evaluator {
            weight,
            kind: kind.clone(),
            column,
            values: Vec::new(),
            script,
            random,
        })
    }

    /// The function's score of `doc` (whose query score is `query_score`), times its weight.
    fn score(&mut self, doc: DocId, query_score: f64) -> Result<f64> {
        if let Some(column) = &self.column {
            column.values(doc, &mut self.values);
        } else {
            self.values.clear();
        }
        let score = match &self.kind {
            Kind::Weight => 1.0,
            Kind::Random(_) => self
                .random
                .as_mut()
                .expect("opened with the random function")
                .score(doc),
            Kind::Script(script) => {
                let (docs, frame) = self.script.as_mut().expect("opened with the script");
                docs.set_doc(doc);
                let value = script.run(frame, docs, query_score)?;
                let score = super::script::as_score(&value).ok_or_else(|| {
                    Error::new(
                        "class_cast_exception",
                        400,
                        format!("Cannot cast from [{}] to [double].", value.java_class()),
                    )
                })?;
                if score < 0.0 {
                    return Err(Error::illegal_argument(format!(
                        "script score function must not produce negative scores, but got: [{}]",
                        java_double(score)
                    )));
                }
                score
            }
            Kind::FieldValueFactor {
                field,
                factor,
                modifier,
                missing,
                ..
            } => {
                let value = match (self.values.first(), missing) {
                    (Some(value), _) => *value,
                    (None, Some(missing)) => *missing,
                    (None, None) => {
                        return Err(Error::new(
                            "exception",
                            400,
                            format!("Missing value for field [{field}]"),
                        ))
                    }
                };
                let result = modify(*modifier, value * factor);
                if result.is_nan() {
                    return Err(Error::new(
                        "exception",
                        400,
                        format!(
                            "function score query returned an invalid score: NaN for doc: {doc}"
                        ),
                    ));
                }
                if result < 0.0 {
                    return Err(Error::illegal_argument(format!(
                        "field value function must not produce negative scores, but got: [{}] for field value: [{}]",
                        java_double(result),
                        java_double(value)
                    )));
                }
                result
            }
            Kind::Decay {
                curve,
                origin,
                scale,
                offset,
                mode,
                ..
            } => {
                if self.values.is_empty() {
                    1.0
                } else {
                    let distances = self
                        .values
                        .iter()
                        .map(|v| ((v - origin).abs() - offset).max(0.0));
                    let distance = match mode {
                        MultiValueMode::Min => distances.fold(f64::INFINITY, f64::min),
                        MultiValueMode::Max => distances.fold(f64::NEG_INFINITY, f64::max),
                        MultiValueMode::Sum => distances.sum(),
                        MultiValueMode::Avg => distances.sum::<f64>() / self.values.len() as f64,
                    };
                    curve_value(*curve, distance, *scale)
                }
            }
        };
        Ok(match self.weight {
            Some(weight) => weight * score,
            None => score,
        })
    }
}

struct FunctionScoreScorer {
    inner: Box<dyn Scorer>,
    filters: Vec<Option<Box<dyn Scorer>>>,
    evaluators: Vec<Evaluator>,
    score_mode: FunctionScoreMode,
    boost_mode: FunctionBoostMode,
    max_boost: f64,
    min_score: Option<f32>,
    /// The current document's score, once computed.
    score: Option<Score>,
}

impl FunctionScoreScorer {
    fn applies(&mut self, i: usize, doc: DocId) -> bool {
        match &mut self.filters[i] {
            None => true,
            Some(filter) => filter.doc() == doc || (filter.doc() < doc && filter.seek(doc) == doc),
        }
    }

    /// The functions' combined score of `doc` (OpenSearch's `computeScore`).
    fn factor(&mut self, doc: DocId) -> Result<f64> {
        let query_score = f64::from(self.inner.score());
        let mut factor = 1.0;
        match self.score_mode {
            FunctionScoreMode::First => {
                for i in 0..self.evaluators.len() {
                    if self.applies(i, doc) {
                        factor = self.evaluators[i].score(doc, query_score)?;
                        break;
                    }
                }
            }
            FunctionScoreMode::Multiply => {
                for i in 0..self.evaluators.len() {
                    if self.applies(i, doc) {
                        factor *= self.evaluators[i].score(doc, query_score)?;
                    }
                }
            }
            FunctionScoreMode::Max | FunctionScoreMode::Min => {
                let max = self.score_mode == FunctionScoreMode::Max;
                let mut best: Option<f64> = None;
                for i in 0..self.evaluators.len() {
                    if self.applies(i, doc) {
                        let score = self.evaluators[i].score(doc, query_score)?;
                        best = Some(match best {
                            Some(b) if max => b.max(score),
                            Some(b) => b.min(score),
                            None => score,
                        });
                    }
                }
                factor = best.unwrap_or(1.0);
            }
            FunctionScoreMode::Sum | FunctionScoreMode::Avg => {
                let (mut total, mut weights) = (0.0, 0.0);
                for i in 0..self.evaluators.len() {
                    if self.applies(i, doc) {
                        total += self.evaluators[i].score(doc, query_score)?;
                        weights += self.evaluators[i].weight.unwrap_or(1.0);
                    }
                }
                if weights != 0.0 {
                    factor = total;
                    if self.score_mode == FunctionScoreMode::Avg {
                        factor /= weights;
                    }
                }
            }
        }
        Ok(factor)
    }

    /// The final score of `doc` (the inner scorer stands on it).
    fn compute(&mut self, doc: DocId) -> Result<Score> {
        let query = f64::from(self.inner.score());
        let function = self.factor(doc)?.min(self.max_boost);
        let score = match self.boost_mode {
            FunctionBoostMode::Multiply => query * function,
            FunctionBoostMode::Replace => function,
            FunctionBoostMode::Sum => query + function,
            FunctionBoostMode::Avg => (query + function) / 2.0,
            FunctionBoostMode::Max => query.max(function),
            FunctionBoostMode::Min => query.min(function),
        } as f32;
        if score.is_nan() {
            return Err(Error::new(
                "exception",
                400,
                format!("function score query returned an invalid score: NaN for doc: {doc}"),
            ));
        }
        Ok(score)
    }

    /// A segment checked (see `Weight::scorer`) never fails: a failure here would be a bug,
    /// scored as nothing rather than a panic.
    fn current(&mut self) -> Score {
        let doc = self.inner.doc();
        match self.score {
            Some(score) => score,
            None => {
                let score = self.compute(doc).unwrap_or(0.0);
                self.score = Some(score);
                score
            }
        }
    }

    /// Moves past the documents below `min_score`, from the inner scorer's position.
    fn settle(&mut self) -> DocId {
        self.score = None;
        let Some(min) = self.min_score else {
            return self.inner.doc();
        };
        while self.inner.doc() != TERMINATED {
            if self.current() >= min {
                break;
            }
            self.score = None;
            self.inner.advance();
        }
        self.inner.doc()
    }
}

impl DocSet for FunctionScoreScorer {
    fn advance(&mut self) -> DocId {
        self.inner.advance();
        self.settle()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        self.inner.seek(target);
        self.settle()
    }

    fn doc(&self) -> DocId {
        self.inner.doc()
    }

    fn size_hint(&self) -> u32 {
        self.inner.size_hint()
    }
}

impl Scorer for FunctionScoreScorer {
    fn score(&mut self) -> Score {
        self.current()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decay_curves_give_decay_at_scale() {
        for curve in [DecayCurve::Gauss, DecayCurve::Exp, DecayCurve::Linear] {
            let scale = curve_scale(curve, 20.0, 0.4);
            assert!(
                (curve_value(curve, 20.0, scale) - 0.4).abs() < 1e-12,
                "{curve:?}"
            );
            assert_eq!(curve_value(curve, 0.0, scale), 1.0, "{curve:?}");
        }
        // linear reaches zero at scale / (1 - decay)
        let scale = curve_scale(DecayCurve::Linear, 20.0, 0.5);
        assert_eq!(curve_value(DecayCurve::Linear, 40.0, scale), 0.0);
    }

    #[test]
    fn modifiers_are_opensearchs() {
        assert_eq!(modify(FieldValueModifier::Log1p, 9.0), 1.0);
        assert_eq!(modify(FieldValueModifier::Ln2p, -1.0), 0.0);
        assert_eq!(modify(FieldValueModifier::Reciprocal, 4.0), 0.25);
        assert!(modify(FieldValueModifier::Ln, -2.0).is_nan());
        assert_eq!(java_double(-2.0), "-2.0");
        assert_eq!(java_double(0.25), "0.25");
    }
}
