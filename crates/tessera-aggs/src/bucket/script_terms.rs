//! A `terms` aggregation over a script's values (`"script"` instead of `"field"`, or a value
//! script beside it): each value (see [`crate::script_values`]) is turned into text as Java's
//! `toString` does, which is how OpenSearch keys the buckets of a script without a
//! `value_type`. A script error fails the shard when the slice finishes the segment.

use tantivy::DocId;
use tessera_common::Result;

use super::terms::{Common, SliceTerms, TermKey, EXCLUDED};
use crate::collector::{Collector, SegmentContext};
use crate::internal::InternalAgg;
use crate::script_values::{ScriptSource, ScriptValues};
use tessera_script::Value;

pub(crate) struct ScriptTerms {
    pub(crate) common: Common,
    source: ScriptSource,
    pub(crate) missing: Option<String>,
    values: Option<ScriptValues>,
    terms: SliceTerms,
    /// The terms the current document was counted in.
    doc_terms: Vec<u32>,
    /// The text of the value at hand.
    text: String,
}

impl ScriptTerms {
    pub(crate) fn new(common: Common, source: ScriptSource, missing: Option<String>) -> Self {
        ScriptTerms {
            common,
            source,
            missing,
            values: None,
            terms: SliceTerms::default(),
            doc_terms: Vec::new(),
            text: String::new(),
        }
    }

    fn term_id(&mut self, term: &str) -> u32 {
        self.terms.id(term, &self.common)
    }
}

/// Counts one block's values as the script gives them, document by document (values come
/// in position order); a document the script gave no value gets the `missing` term.
struct Block<'a> {
    terms: &'a mut SliceTerms,
    common: &'a mut Common,
    doc_terms: &'a mut Vec<u32>,
    text: &'a mut String,
    missing: Option<&'a str>,
    docs: &'a [DocId],
    parents: &'a [u32],
    /// The first position not yet started.
    next: usize,
}

impl Block<'_> {
    fn add(&mut self, position: usize, value: &Value) {
        if position >= self.next {
            self.finish_docs_before(position);
            self.doc_terms.clear();
            self.next = position + 1;
        }
        self.text.clear();
        value.write_java(self.text);
        let id = self.terms.id(self.text, self.common);
        if id != EXCLUDED && !self.doc_terms.contains(&id) {
            self.doc_terms.push(id);
            self.common
                .add(self.docs[position], self.parents[position], id as u64);
        }
    }

    /// Gives the `missing` term to the documents before `end` that had no value.
    fn finish_docs_before(&mut self, end: usize) {
        let Some(missing) = self.missing else {
            self.next = self.next.max(end);
            return;
        };
        for position in self.next..end {
            let id = self.terms.id(missing, self.common);
            if id != EXCLUDED {
                self.common
                    .add(self.docs[position], self.parents[position], id as u64);
            }
        }
        self.next = self.next.max(end);
    }
}

impl Collector for ScriptTerms {
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        self.values = Some(self.source.open(segment.reader)?);
        if let Some(missing) = self.missing.clone() {
            self.term_id(&missing);
        }
        self.common.set_segment(segment)
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        let Some(mut values) = self.values.take() else {
            return;
        };
        let mut block = Block {
            terms: &mut self.terms,
            common: &mut self.common,
            doc_terms: &mut self.doc_terms,
            text: &mut self.text,
            missing: self.missing.as_deref(),
            docs,
            parents,
            next: 0,
        };
        values.for_each(docs, |position, value| block.add(position, value));
        block.finish_docs_before(docs.len());
        self.values = Some(values);
        self.common.subs.flush();
    }

    fn finish_segment(&mut self) -> Result<()> {
        self.common.subs.finish_segment()
    }

    fn build(&mut self, parent: u32) -> Result<InternalAgg> {
        self.terms.build(&mut self.common, parent, |text| {
            TermKey::Str(text.to_string())
        })
    }
}
