//! `terms_set` as Lucene's `CoveringQuery`: each listed term is a `term` query on the field
//! (scored as one: BM25 on keywords and text, a constant on numbers), and a document matches
//! when at least its minimum of them match — the minimum read from a numeric field (its first
//! value; a document without one never matches) or computed by a script that sees
//! `params.num_terms` — at least one in any case. Its score is the sum of the matching terms'
//! scores, a term listed twice counting twice.
//!
//! A script can fail and a tantivy scorer cannot, so a segment's matches are computed when
//! its scorer is made (the first failure fails the shard, as in OpenSearch) and then walked.

use std::sync::Arc;

use tantivy::columnar::Column;
use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED};
use tessera_common::{Error, Result};
use tessera_knn::query::DocScoresScorer;
use tessera_mapping::{scaled_float_value, LeafKind};
use tessera_script::ScriptContext;

use super::script::PreparedScript;
use super::CompileContext;
use crate::ast::{QueryAst, TermsSetMinimum, TermsSetQuery};

/// Compiles `query`; its boost multiplies every term's score.
pub(super) fn compile(ctx: &CompileContext, query: &TermsSetQuery) -> Result<Box<dyn Query>> {
    let minimum = match &query.minimum {
        None => {
            let cause = Error::new(
                "illegal_state_exception",
                400,
                "No minimum should match has been specified",
            );
            return Err(ctx
                .error(format!("failed to create query: {}", cause.reason()))
                .caused_by(cause));
        }
        Some(TermsSetMinimum::Field(field)) => Minimum::Field(minimum_field(ctx, field)?),
        Some(TermsSetMinimum::Script(spec)) => {
            let mut spec = spec.as_ref().clone();
            spec.params
                .insert("num_terms".into(), query.terms.len().into());
            Minimum::Script(super::script::prepare(ctx, &spec, ScriptContext::Score)?)
        }
    };
    if query.terms.is_empty() {
        return Ok(super::match_none());
    }
    ctx.count_clauses(query.terms.len())?;
    let terms = query
        .terms
        .iter()
        .map(|value| {
            let term = QueryAst::Term {
                field: query.field.clone(),
                value: value.clone(),
                boost: 1.0,
                case_insensitive: false,
            };
            super::compile(&term, ctx)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Box::new(TermsSet {
        terms,
        minimum,
        boost: query.boost,
    }))
}

/// The numeric column a field minimum is read from, with OpenSearch's errors.
fn minimum_field(ctx: &CompileContext, field: &str) -> Result<MinimumColumn> {
    let leaf = ctx.table.leaf(field).ok_or_else(|| {
        ctx.error(format!(
            "failed to find minimum_should_match field [{field}]"
        ))
    })?;
    let failed = |e: Error| {
        ctx.error(format!("failed to create query: {}", e.reason()))
            .caused_by(e)
    };
    let path = leaf.path.clone();
    match &leaf.kind {
        LeafKind::Text { .. } => Err(failed(Error::text_fielddata_disabled(field))),
        LeafKind::Integer | LeafKind::Date { .. } if leaf.fast => Ok(MinimumColumn::Integer(path)),
        LeafKind::ScaledFloat { factor } if leaf.fast => Ok(MinimumColumn::Scaled(path, *factor)),
        LeafKind::Float if leaf.fast => Ok(MinimumColumn::Float(path)),
        _ => Err(failed(Error::illegal_argument(format!(
            "field [{field}] of type [{}] cannot give a minimum_should_match: it has no numeric doc values",
            leaf.field_type.name()
        )))),
    }
}

#[derive(Clone, Debug)]
enum MinimumColumn {
    Integer(String),
    Float(String),
    Scaled(String, f64),
}

#[derive(Clone, Debug)]
enum Minimum {
    Field(MinimumColumn),
    Script(Arc<PreparedScript>),
}

#[derive(Debug)]
struct TermsSet {
    terms: Vec<Box<dyn Query>>,
    minimum: Minimum,
    boost: f32,
}

impl Clone for TermsSet {
    fn clone(&self) -> Self {
        TermsSet {
            terms: self.terms.iter().map(|t| t.box_clone()).collect(),
            minimum: self.minimum.clone(),
            boost: self.boost,
        }
    }
}

impl Query for TermsSet {
    fn weight(&self, enable_scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(TermsSetWeight {
            terms: self
                .terms
                .iter()
                .map(|t| t.weight(enable_scoring))
                .collect::<tantivy::Result<_>>()?,
            minimum: self.minimum.clone(),
            boost: self.boost,
        }))
    }
}

struct TermsSetWeight {
    terms: Vec<Box<dyn Weight>>,
    minimum: Minimum,
    boost: f32,
}

/// A segment's minimums, one document at a time.
enum SegmentMinimum {
    Integer(Option<Column<i64>>),
    Float(Option<Column<f64>>),
    Scaled(Option<Column<i64>>, f64),
    Script {
        script: Arc<PreparedScript>,
        docs: crate::script_docs::SegmentDocs,
        frame: Vec<tessera_script::Value>,
    },
}

impl SegmentMinimum {
    fn open(minimum: &Minimum, reader: &SegmentReader) -> tantivy::Result<SegmentMinimum> {
        let fast = reader.fast_fields();
        Ok(match minimum {
            Minimum::Field(MinimumColumn::Integer(path)) => {
                SegmentMinimum::Integer(fast.column_opt(path)?)
            }
            Minimum::Field(MinimumColumn::Float(path)) => {
                SegmentMinimum::Float(fast.column_opt(path)?)
            }
            Minimum::Field(MinimumColumn::Scaled(path, factor)) => {
                SegmentMinimum::Scaled(fast.column_opt(path)?, *factor)
            }
            Minimum::Script(script) => SegmentMinimum::Script {
                docs: script.fields.open(reader)?,
                frame: script.script.new_frame(),
                script: script.clone(),
            },
        })
    }

    /// `doc`'s minimum; `None` when it has none (it then matches nothing).
    fn of(&mut self, doc: DocId) -> Result<Option<i64>> {
        let smallest_f64 = |values: &mut dyn Iterator<Item = f64>| values.reduce(f64::min);
        Ok(match self {
            SegmentMinimum::Integer(column) => {
                column.as_ref().and_then(|c| c.values_for_doc(doc).min())
            }
            SegmentMinimum::Float(column) => column
                .as_ref()
                .and_then(|c| smallest_f64(&mut c.values_for_doc(doc)))
                .map(|v| v as i64),
            SegmentMinimum::Scaled(column, factor) => column
                .as_ref()
                .and_then(|c| c.values_for_doc(doc).min())
                .map(|raw| scaled_float_value(raw, *factor) as i64),
            SegmentMinimum::Script {
                script,
                docs,
                frame,
            } => {
                docs.set_doc(doc);
                let value = script.run(frame, docs, 0.0)?;
                let number = value.as_f64().ok_or_else(|| {
                    Error::new(
                        "class_cast_exception",
                        400,
                        format!(
                            "Cannot cast from [{}] to [java.lang.Number].",
                            value.java_class()
                        ),
                    )
                })?;
                Some(number as i64)
            }
        })
    }
}

impl TermsSetWeight {
    /// The segment's matches and their scores, in document order.
    fn matches(&self, reader: &SegmentReader, boost: Score) -> Result<Vec<(DocId, Score)>> {
        let tantivy_err = |e: tantivy::TantivyError| Error::internal("open a terms_set term", e);
        let mut scorers = self
            .terms
            .iter()
            .map(|w| w.scorer(reader, boost * self.boost))
            .collect::<tantivy::Result<Vec<_>>>()
            .map_err(tantivy_err)?;
        let mut minimum = SegmentMinimum::open(&self.minimum, reader).map_err(tantivy_err)?;
        let mut out = Vec::new();
        loop {
            let doc = scorers.iter().map(|s| s.doc()).min().unwrap_or(TERMINATED);
            if doc == TERMINATED {
                return Ok(out);
            }
            let (mut matched, mut score) = (0i64, 0.0f32);
            for scorer in scorers.iter_mut().filter(|s| s.doc() == doc) {
                matched += 1;
                score += scorer.score();
                scorer.advance();
            }
            if minimum.of(doc)?.is_some_and(|min| matched >= min.max(1)) {
                out.push((doc, score));
            }
        }
    }
}

impl Weight for TermsSetWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let docs = self
            .matches(reader, boost)
            .map_err(super::script::carried)?;
        Ok(Box::new(DocScoresScorer::new(Arc::from(docs), 1.0)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let score = super::score_of_match(self, reader, doc)?;
        Ok(Explanation::new(
            "terms_set: sum of the matching terms",
            score,
        ))
    }
}
