//! A `terms` aggregation over a script's values (`"script": ...` instead of `"field"`): each
//! document's script result (a value, or a list of values; `null` is none) is turned into
//! text as Java's `toString` does, which is how OpenSearch keys the buckets of a script
//! without a `value_type`. The script is compiled once per process and its columns opened
//! once per segment (`tessera_query::compile::script`); a script error is kept and fails the
//! shard when the segment is finished (a collector's `collect` cannot fail).

use std::sync::Arc;

use tantivy::DocId;
use tessera_common::{Error, Result};
use tessera_query::compile::script::PreparedScript;
use tessera_query::script_docs::SegmentDocs;
use tessera_script::Value;

use super::terms::{Common, SliceTerms, TermKey, EXCLUDED};
use crate::collector::{Collector, SegmentContext};
use crate::internal::InternalAgg;

pub(crate) struct ScriptTerms {
    pub(crate) common: Common,
    pub(crate) script: Arc<PreparedScript>,
    pub(crate) missing: Option<String>,
    docs: Option<SegmentDocs>,
    frame: Vec<Value>,
    terms: SliceTerms,
    doc_terms: Vec<u32>,
    text: String,
    error: Option<Error>,
}

impl ScriptTerms {
    pub(crate) fn new(
        common: Common,
        script: Arc<PreparedScript>,
        missing: Option<String>,
    ) -> Self {
        let frame = script.script.new_frame();
        ScriptTerms {
            common,
            script,
            missing,
            docs: None,
            frame,
            terms: SliceTerms::default(),
            doc_terms: Vec::new(),
            text: String::new(),
            error: None,
        }
    }

    fn term_id(&mut self, term: &str) -> u32 {
        self.terms.id(term, &self.common)
    }

    fn add_value(&mut self, doc: DocId, parent: u32, value: &Value) {
        let mut text = std::mem::take(&mut self.text);
        text.clear();
        value.write_java(&mut text);
        let id = self.term_id(&text);
        self.text = text;
        if id != EXCLUDED && !self.doc_terms.contains(&id) {
            self.doc_terms.push(id);
            self.common.add(doc, parent, id as u64);
        }
    }
}

impl Collector for ScriptTerms {
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        self.docs = Some(
            self.script
                .fields
                .open(segment.reader)
                .map_err(|e| Error::internal("open the script's columns", e))?,
        );
        if let Some(missing) = self.missing.clone() {
            self.term_id(&missing);
        }
        self.common.set_segment(segment)
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        if self.error.is_some() {
            return;
        }
        let Some(mut segment) = self.docs.take() else {
            return;
        };
        for (&doc, &parent) in docs.iter().zip(parents) {
            segment.set_doc(doc);
            let value = match self.script.run(&mut self.frame, &segment, 0.0) {
                Ok(value) => value,
                Err(e) => {
                    self.error = Some(e);
                    break;
                }
            };
            self.doc_terms.clear();
            match &value {
                Value::Null => {}
                Value::List(items) => {
                    let items: Vec<Value> = tessera_script::value::lock(items).clone();
                    for item in items.iter().filter(|v| !v.is_null()) {
                        self.add_value(doc, parent, item);
                    }
                }
                other => self.add_value(doc, parent, other),
            }
            if self.doc_terms.is_empty() {
                if let Some(missing) = self.missing.clone() {
                    let id = self.term_id(&missing);
                    if id != EXCLUDED {
                        self.common.add(doc, parent, id as u64);
                    }
                }
            }
        }
        self.docs = Some(segment);
        self.common.subs.flush();
    }

    fn finish_segment(&mut self) -> Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.common.subs.finish_segment()
    }

    fn build(&mut self, parent: u32) -> Result<InternalAgg> {
        self.terms.build(&mut self.common, parent, |text| {
            TermKey::Str(text.to_string())
        })
    }
}
