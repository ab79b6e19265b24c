//! Scripts compiled for a shard ([`PreparedScript`]) and the `script` query (the documents the
//! script returns true for); `script_score` lives in `script_score`.
//!
//! The script is compiled once per process (`tessera_script::cache::shared`), its `doc[...]`
//! fields resolved once per shard (`ScriptFields`) and their columns opened once per segment.
//! A tantivy scorer cannot fail, but a script can (a runtime error), and OpenSearch then fails
//! the shard.
//! A `script` query under the shard's search runs as Lucene's two-phase iteration does: a
//! document is evaluated only when the collection or a conjunction asks about it (tantivy's
//! predicate query and `seek_danger`), so a script beside a `match` never sees the documents
//! the `match` leaves out; its first failure waits in the context's [`QueryFailures`] for the
//! shard. (A conjunction counted in bulk, without collecting hits, fills a bit set per clause
//! and so runs the script on every document.) Where nobody would read such a failure
//! (aggregation filters, `can_match`) the script query evaluates its segment eagerly instead.
//! The request's deadline is checked while evaluating; past it the segment's remaining
//! documents are left out and the collector, which checks the same deadline, marks the result
//! timed out.

use std::sync::Arc;
use std::time::Instant;

use tantivy::query::doc_predicate_query::{
    ConstOrVariableSegmentPredicate, DocPredicate, DocPredicateQuery, SegmentDocPredicate,
};
use tantivy::query::{
    AllScorer, BitSetDocSet, ConstScorer, EnableScoring, Explanation, Query, Scorer, Weight,
};
use tantivy::{DocId, DocSet, Score, SeekDangerResult, SegmentReader};
use tessera_common::{Error, Result};
use tessera_script::{Env, Script, ScriptContext, ScriptSpec, Value};

use super::numeric_script::NumExpr;
use super::{CompileContext, QueryFailures};
use crate::script_docs::{ScriptFields, SegmentDocs};

/// A script compiled for a shard: the script, its `params` converted once, its fields
/// resolved against the shard's mapping.
pub struct PreparedScript {
    pub script: Arc<Script>,
    pub params: Value,
    pub fields: ScriptFields,
    /// The double arithmetic fast path, for a score or aggregation script that is one (see
    /// `numeric_script`).
    pub fast: Option<NumExpr>,
}

impl std::fmt::Debug for PreparedScript {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedScript")
            .field("source", &self.script.source())
            .finish()
    }
}

impl PreparedScript {
    /// Compiles (or finds compiled) an inline script and resolves its fields against `table`.
    /// Stored scripts (`id`) are resolved into inline ones by the node before a search
    /// reaches a shard; one left here is an error rather than a guess.
    pub fn prepare(
        table: &tessera_mapping::FieldTable,
        spec: &ScriptSpec,
        context: ScriptContext,
    ) -> Result<PreparedScript> {
        let script = spec.compile(context)?;
        let fields = ScriptFields::resolve(table, script.fields())?;
        let fast = matches!(context, ScriptContext::Score | ScriptContext::Aggregation)
            .then(|| {
                NumExpr::build(script.source(), |name| {
                    let slot = script.fields().iter().position(|f| f == name)?;
                    fields.is_double(slot).then_some(slot as u32)
                })
            })
            .flatten();
        Ok(PreparedScript {
            params: spec.params_value(),
            script,
            fields,
            fast,
        })
    }

    /// The value of the double arithmetic fast path for `doc` (`docs`' segment), when the
    /// script has one and every field it reads has a value there; `None` means the
    /// interpreter must run (and fail as Painless does for a missing value).
    #[inline]
    pub fn fast_value(&self, docs: &SegmentDocs, doc: DocId, score: f64) -> Option<f64> {
        self.fast
            .as_ref()
            .and_then(|fast| fast.eval(&|slot| docs.first_f64(slot, doc), score))
    }

    /// The script's error as OpenSearch's `script_exception`.
    pub fn error(&self, e: &tessera_script::ScriptError) -> Error {
        e.to_exception(self.script.source())
    }

    /// Runs the script on the document `docs` stands on.
    pub fn run(
        &self,
        frame: &mut [Value],
        docs: &SegmentDocs,
        score: f64,
    ) -> std::result::Result<Value, Error> {
        self.run_with_value(frame, docs, score, None)
    }

    /// Runs a value script (an aggregation's `script` beside its `field`) on one of the
    /// field's values of the document `docs` stands on: `value` is its `_value`.
    pub fn run_with_value(
        &self,
        frame: &mut [Value],
        docs: &SegmentDocs,
        score: f64,
        value: Option<&Value>,
    ) -> std::result::Result<Value, Error> {
        let env = Env {
            params: &self.params,
            doc: Some(docs),
            score,
            ctx: None,
            value,
        };
        self.script.run_in(frame, &env).map_err(|e| self.error(&e))
    }
}

pub(super) fn prepare(
    ctx: &CompileContext,
    spec: &ScriptSpec,
    context: ScriptContext,
) -> Result<Arc<PreparedScript>> {
    PreparedScript::prepare(ctx.table, spec, context)
        .map(Arc::new)
        .map_err(|e| match e.kind() {
            "script_exception" | "resource_not_found_exception" | "illegal_argument_exception" => {
                ctx.error(format!("failed to create query: {}", e.reason()))
                    .caused_by(e)
            }
            _ => e,
        })
}

/// A script's value as a score (a number; OpenSearch casts the script's result to double).
pub fn as_score(value: &Value) -> Option<f64> {
    value.as_f64()
}

pub(super) fn carried(e: Error) -> tantivy::TantivyError {
    tantivy::TantivyError::InvalidArgument(e.to_carried_text())
}

/// Java's `Double.toString`, as OpenSearch's messages show scores.
pub(super) fn java_double(value: f64) -> String {
    Value::Double(value).to_java_string()
}

/// How often (in documents) scoring looks at the clock.
pub(super) const DEADLINE_CHECK: u32 = 1024;

/// `script` (a filter: every match scores the query's boost).
pub(super) fn script_filter(
    ctx: &CompileContext,
    spec: &ScriptSpec,
    boost: f32,
) -> Result<Box<dyn Query>> {
    let script = prepare(ctx, spec, ScriptContext::Filter)?;
    Ok(super::boosted(
        Box::new(ScriptFilterQuery {
            script,
            deadline: ctx.deadline,
            failures: ctx.failures.clone(),
        }),
        boost,
    ))
}

#[derive(Debug, Clone)]
struct ScriptFilterQuery {
    script: Arc<PreparedScript>,
    deadline: Option<Instant>,
    /// Given: the script runs on the documents the collection asks about, as Lucene's
    /// two-phase iteration runs it (inside a conjunction, only where the other clauses match),
    /// and its failure waits there for the shard.
    failures: Option<QueryFailures>,
}

impl ScriptFilterQuery {
    fn lazy(&self) -> Option<DocPredicateQuery> {
        self.failures.as_ref().map(|failures| {
            DocPredicateQuery::from(ScriptPredicate {
                script: self.script.clone(),
                deadline: self.deadline,
                failures: failures.clone(),
            })
        })
    }

    /// Every document of the segment evaluated now: the first failure is the scorer's error.
    fn eager(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let max_doc = reader.max_doc();
        let alive = reader.alive_bitset();
        let mut docs = self.script.fields.open(reader)?;
        let mut frame = self.script.script.new_frame();
        let mut matched = tantivy::BitSet::with_max_value(max_doc.max(1));
        for doc in 0..max_doc {
            if doc % DEADLINE_CHECK == DEADLINE_CHECK - 1
                && self.deadline.is_some_and(|d| Instant::now() >= d)
            {
                break;
            }
            if alive.is_some_and(|a| !a.is_alive(doc)) {
                continue;
            }
            docs.set_doc(doc);
            let value = self.script.run(&mut frame, &docs, 0.0).map_err(carried)?;
            if as_filter_match(&self.script, value).map_err(carried)? {
                matched.insert(doc);
            }
        }
        Ok(Box::new(ConstScorer::new(
            BitSetDocSet::from(matched),
            boost,
        )))
    }
}

/// A filter script's answer: a boolean, or Painless's cast of its result failing at run time.
fn as_filter_match(script: &PreparedScript, value: Value) -> Result<bool> {
    match value {
        Value::Bool(matched) => Ok(matched),
        other => Err(script.error(&tessera_script::ScriptError::runtime(
            0,
            "class_cast_exception",
            format!("Cannot cast from [{}] to [boolean].", other.java_class()),
        ))),
    }
}

/// The lazy form of a `script` query (tantivy's predicate query: a document is evaluated when
/// the collection or a conjunction asks about it).
#[derive(Debug)]
struct ScriptPredicate {
    script: Arc<PreparedScript>,
    deadline: Option<Instant>,
    failures: QueryFailures,
}

impl DocPredicate for ScriptPredicate {
    type SegmentDocPredicate = SegmentScript;

    fn doc_predicate(
        &self,
        reader: &SegmentReader,
    ) -> tantivy::Result<ConstOrVariableSegmentPredicate<SegmentScript>> {
        Ok(ConstOrVariableSegmentPredicate::Variable {
            predicate: SegmentScript {
                script: self.script.clone(),
                docs: self.script.fields.open(reader)?,
                frame: self.script.script.new_frame(),
                alive: reader.alive_bitset().cloned(),
                deadline: self.deadline,
                failures: self.failures.clone(),
                failed: false,
                evaluated: 0,
            },
            necessary_condition: Box::new(AllScorer::new(reader.max_doc())),
        })
    }
}

/// A `script` query on one segment.
struct SegmentScript {
    script: Arc<PreparedScript>,
    docs: SegmentDocs,
    frame: Vec<Value>,
    alive: Option<tantivy::fastfield::AliveBitSet>,
    deadline: Option<Instant>,
    failures: QueryFailures,
    /// After a failure nothing matches: the shard fails anyway.
    failed: bool,
    evaluated: u32,
}

impl SegmentDocPredicate for SegmentScript {
    fn eval(&mut self, doc: DocId) -> bool {
        if self.failed || self.alive.as_ref().is_some_and(|a| !a.is_alive(doc)) {
            return false;
        }
        self.evaluated += 1;
        // past the deadline nothing more matches; the collector marks the result timed out
        if self.evaluated.is_multiple_of(DEADLINE_CHECK)
            && self.deadline.is_some_and(|d| Instant::now() >= d)
        {
            self.failed = true;
            return false;
        }
        self.docs.set_doc(doc);
        let outcome = self
            .script
            .run(&mut self.frame, &self.docs, 0.0)
            .and_then(|value| as_filter_match(&self.script, value));
        match outcome {
            Ok(matched) => matched,
            Err(e) => {
                self.failures.record(e);
                self.failed = true;
                false
            }
        }
    }

    fn cost(&self) -> u64 {
        // a script costs far more per document than advancing a posting list
        1_000
    }
}

impl Query for ScriptFilterQuery {
    fn weight(&self, _: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl Weight for ScriptFilterQuery {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        match self.lazy() {
            Some(lazy) => lazy.scorer(reader, boost),
            None => self.eager(reader, boost),
        }
    }

    fn scorer_danger(
        &self,
        reader: &SegmentReader,
        target: DocId,
        boost: Score,
    ) -> tantivy::Result<(SeekDangerResult, Box<dyn Scorer>)> {
        if let Some(lazy) = self.lazy() {
            return lazy.scorer_danger(reader, target, boost);
        }
        let mut scorer = self.eager(reader, boost)?;
        let doc = scorer.doc();
        let found = match doc.cmp(&target) {
            std::cmp::Ordering::Less => scorer.seek_danger(target),
            std::cmp::Ordering::Equal => SeekDangerResult::Found,
            std::cmp::Ordering::Greater => SeekDangerResult::SeekLowerBound(doc),
        };
        Ok((found, scorer))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let score = super::score_of_match(self, reader, doc)?;
        Ok(Explanation::new("ScriptQuery", score))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_doubles_in_messages() {
        assert_eq!(java_double(-5.0), "-5.0");
        assert_eq!(java_double(f64::NAN), "NaN");
    }
}
