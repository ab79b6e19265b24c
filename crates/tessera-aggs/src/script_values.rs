//! Values an aggregation computes with a script instead of reading a column: `"script"` in
//! place of `"field"` (the script's result for each document), or a value script beside
//! `"field"` (the script's result for each of the field's values, which it sees as `_value`).
//!
//! A script result of `null` is no value, a list is several, anything else one. Numeric
//! aggregations (min, avg, stats, percentiles, histogram, range, ...) read the results as
//! doubles as OpenSearch's `ScriptDoubleValues` does: numbers, dates as epoch milliseconds and
//! booleans as 1 or 0, and any other value fails the shard. Aggregations that only count or
//! tell values apart (value_count, cardinality) take any value, as its text.
//!
//! The script is compiled once per process and its columns opened once per segment (see
//! `tessera_query::compile::script`). A collector's `collect` cannot fail, so a script's first
//! error is recorded in the request's [`QueryFailures`] and the slice fails the shard when it
//! finishes the segment; a failed source yields no more values.

use std::sync::Arc;

use tantivy::{DocId, SegmentReader};
use tessera_common::{Error, Result};
use tessera_query::compile::script::PreparedScript;
use tessera_query::compile::QueryFailures;
use tessera_query::script_docs::{ScriptFields, SegmentDocs};
use tessera_script::value::lock;
use tessera_script::{DocValues, Value};

/// A script resolved against a shard, for one aggregation.
#[derive(Clone, Debug)]
pub struct ScriptSource {
    pub script: Arc<PreparedScript>,
    /// The field of a value script, whose every value the script sees as `_value`.
    pub field: Option<ScriptFields>,
    /// The value script's field kind, when numeric: its values are shown as the field's
    /// (a date field's as dates).
    pub field_kind: Option<crate::values::NumericKind>,
    /// Where the first script error waits for the slice (see [`crate::prepare`]).
    pub failures: QueryFailures,
}

impl PartialEq for ScriptSource {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.script, &other.script)
    }
}

impl ScriptSource {
    pub fn open(&self, segment: &SegmentReader) -> Result<ScriptValues> {
        let open = |fields: &ScriptFields| {
            fields
                .open(segment)
                .map_err(|e| Error::internal("open an aggregation script's columns", e))
        };
        Ok(ScriptValues {
            docs: open(&self.script.fields)?,
            field: self.field.as_ref().map(open).transpose()?,
            frame: self.script.script.new_frame(),
            source: self.clone(),
            failed: false,
        })
    }
}

/// A script's values in one segment.
pub struct ScriptValues {
    source: ScriptSource,
    docs: SegmentDocs,
    /// The value script's field, positioned with `docs`.
    field: Option<SegmentDocs>,
    frame: Vec<Value>,
    /// Whether a run failed: the error is recorded, and no more values come.
    failed: bool,
}

impl ScriptValues {
    /// Calls `f(position, value)` for every value the script gives for the documents of
    /// `docs` (ascending; `position` is the index in `docs`), lists flattened, nulls skipped.
    pub fn for_each(&mut self, docs: &[DocId], mut f: impl FnMut(usize, &Value)) {
        let mut field = self.field.take();
        for (position, &doc) in docs.iter().enumerate() {
            if self.failed {
                break;
            }
            let Some(field) = &mut field else {
                // double arithmetic straight from the columns; a document missing a field
                // runs the interpreter, which fails as Painless does
                if let Some(value) = self.source.script.fast_value(&self.docs, doc, 0.0) {
                    f(position, &Value::Double(value));
                    continue;
                }
                self.docs.set_doc(doc);
                let result = self.source.script.run(&mut self.frame, &self.docs, 0.0);
                self.emit(position, result, &mut f);
                continue;
            };
            self.docs.set_doc(doc);
            field.set_doc(doc);
            for index in 0..field.count(0) {
                let value = as_agg_value(field.value(0, index));
                let result = self.source.script.run_with_value(
                    &mut self.frame,
                    &self.docs,
                    0.0,
                    Some(&value),
                );
                self.emit(position, result, &mut f);
                if self.failed {
                    break;
                }
            }
        }
        self.field = field;
    }

    /// Like [`ScriptValues::for_each`], each value as a double; a value that is not a number,
    /// a date or a boolean fails the shard.
    pub fn for_each_f64(&mut self, docs: &[DocId], mut f: impl FnMut(usize, f64)) {
        let mut bad: Option<Error> = None;
        self.for_each(docs, |position, value| {
            if bad.is_some() {
                return;
            }
            match to_f64(value) {
                Some(v) => f(position, v),
                None => bad = Some(unsupported(value)),
            }
        });
        if let Some(e) = bad {
            self.fail(e);
        }
    }

    fn emit(&mut self, position: usize, result: Result<Value>, f: &mut impl FnMut(usize, &Value)) {
        match result {
            Ok(Value::Null) => {}
            Ok(Value::List(items)) => {
                for item in lock(&items).iter().filter(|v| !v.is_null()) {
                    f(position, item);
                }
            }
            Ok(value) => f(position, &value),
            Err(e) => self.fail(e),
        }
    }

    fn fail(&mut self, error: Error) {
        self.failed = true;
        self.source.failures.record(error);
    }
}

/// A field value as a value script's `_value`: numeric fields give numbers (dates their epoch
/// milliseconds, booleans 1 or 0), as OpenSearch's numeric values sources do.
fn as_agg_value(value: Value) -> Value {
    match value {
        Value::Date(millis) => Value::Long(millis),
        Value::Bool(b) => Value::Long(b as i64),
        other => other,
    }
}

/// A script value as a double, as OpenSearch's `ScriptDoubleValues` reads it.
fn to_f64(value: &Value) -> Option<f64> {
    Some(match value {
        Value::Int(v) => *v as f64,
        Value::Long(v) => *v as f64,
        Value::Float(v) => *v as f64,
        Value::Double(v) => *v,
        Value::Date(millis) => *millis as f64,
        Value::Bool(b) => *b as u8 as f64,
        _ => return None,
    })
}

fn unsupported(value: &Value) -> Error {
    let mut text = String::new();
    value.write_java(&mut text);
    // OpenSearch answers 500 here; the value comes from the user's script, so it is a
    // request error
    Error::new(
        "aggregation_execution_exception",
        400,
        format!("Unsupported script value [{text}], expected a number, date, or boolean"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::TestShard;
    use serde_json::json;

    fn shard() -> TestShard {
        let docs: Vec<_> = (0..200)
            .map(|i| match i % 4 {
                0 => json!({"k": "none"}),
                _ => json!({"n": i, "k": format!("k{}", i % 3), "d": i as f64 / 4.0}),
            })
            .collect();
        TestShard::new(
            json!({"properties": {"n": {"type": "long"}, "k": {"type": "keyword"}, "d": {"type": "double"}}}),
            &docs,
            5,
        )
    }

    #[test]
    fn scripts_and_value_scripts_agree_with_fields_for_any_slicing() {
        let shard = shard();
        let aggs = json!({
            "field": {"stats": {"field": "n"}},
            "script": {"stats": {"script": "doc['n'].size() == 0 ? null : doc['n'].value"}},
            "value": {"stats": {"field": "n", "script": "_value * 2"}},
            "kinds": {"cardinality": {"script": "doc['k'].value"}},
            "h": {"histogram": {"script": "doc['n']", "interval": 50}}
        });
        let one = shard.render(&aggs, 1, 0);
        assert_eq!(one["script"], one["field"]);
        assert_eq!(
            one["value"]["sum"],
            json!(2.0 * one["field"]["sum"].as_f64().unwrap())
        );
        assert_eq!(one["kinds"]["value"], json!(4));
        assert_eq!(one["h"]["buckets"][0]["doc_count"], json!(37));
        for seed in 1..4 {
            assert_eq!(shard.render(&aggs, 3, seed), one);
        }
    }

    #[test]
    fn the_double_arithmetic_path_agrees_with_the_interpreter() {
        let shard = shard();
        let aggs = json!({
            "fast": {"stats": {"script": "doc['d'].value / (doc['d'].value + 1) * 3"}},
            "interpreted": {"stats": {"script": "double x = doc['d'].value; return x / (x + 1) * 3"}}
        });
        let err = shard.try_run(&aggs, 2, 3).unwrap_err();
        // the documents without `d` fail either way, as Painless does
        assert_eq!(err.cause().unwrap().kind(), "illegal_state_exception");
        let only_d = TestShard::new(
            json!({"properties": {"d": {"type": "double"}}}),
            &(0..300)
                .map(|i| json!({"d": i as f64 / 7.0}))
                .collect::<Vec<_>>(),
            3,
        );
        for slices in [1, 3] {
            let out = only_d.render(&aggs, slices, 11);
            assert_eq!(out["fast"], out["interpreted"]);
            assert_eq!(out["fast"]["count"], json!(300));
        }
    }

    #[test]
    fn a_script_error_in_any_slice_fails_the_shard() {
        let shard = shard();
        let aggs = json!({"s": {"sum": {"script": "doc['n'].value"}}});
        for slices in [1, 2, 4] {
            let err = shard.try_run(&aggs, slices, 7).unwrap_err();
            assert_eq!(err.kind(), "script_exception");
            assert_eq!(err.cause().unwrap().kind(), "illegal_state_exception");
        }
        let bad = json!({"s": {"avg": {"script": "'x'"}}});
        let err = shard.try_run(&bad, 2, 1).unwrap_err();
        assert_eq!(
            (err.kind(), err.status()),
            ("aggregation_execution_exception", 400)
        );
    }

    #[test]
    fn doubles_as_opensearch_reads_them() {
        assert_eq!(to_f64(&Value::Long(3)), Some(3.0));
        assert_eq!(to_f64(&Value::Int(-2)), Some(-2.0));
        assert_eq!(to_f64(&Value::Date(1_600_000_000_000)), Some(1.6e12));
        assert_eq!(to_f64(&Value::Bool(true)), Some(1.0));
        assert_eq!(to_f64(&Value::Bool(false)), Some(0.0));
        assert_eq!(to_f64(&Value::str("x")), None);
        assert_eq!(
            unsupported(&Value::str("x")).reason(),
            "Unsupported script value [x], expected a number, date, or boolean"
        );
    }

    #[test]
    fn field_values_become_numbers() {
        assert!(matches!(as_agg_value(Value::Date(5)), Value::Long(5)));
        assert!(matches!(as_agg_value(Value::Bool(true)), Value::Long(1)));
        assert!(matches!(as_agg_value(Value::Double(1.5)), Value::Double(v) if v == 1.5));
    }
}
