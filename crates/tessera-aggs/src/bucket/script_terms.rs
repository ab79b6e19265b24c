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

pub(crate) struct ScriptTerms {
    pub(crate) common: Common,
    source: ScriptSource,
    pub(crate) missing: Option<String>,
    values: Option<ScriptValues>,
    terms: SliceTerms,
    /// The block's `(position, text)` values.
    texts: Vec<(usize, String)>,
    doc_terms: Vec<u32>,
}

impl ScriptTerms {
    pub(crate) fn new(common: Common, source: ScriptSource, missing: Option<String>) -> Self {
        ScriptTerms {
            common,
            source,
            missing,
            values: None,
            terms: SliceTerms::default(),
            texts: Vec::new(),
            doc_terms: Vec::new(),
        }
    }

    fn term_id(&mut self, term: &str) -> u32 {
        self.terms.id(term, &self.common)
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
        let Some(values) = &mut self.values else {
            return;
        };
        let mut texts = std::mem::take(&mut self.texts);
        texts.clear();
        values.for_each(docs, |position, value| {
            let mut text = String::new();
            value.write_java(&mut text);
            texts.push((position, text));
        });
        let mut next = texts.iter().peekable();
        for (position, (&doc, &parent)) in docs.iter().zip(parents).enumerate() {
            self.doc_terms.clear();
            let mut has_values = false;
            while let Some((_, text)) = next.next_if(|(p, _)| *p == position) {
                has_values = true;
                let id = self.term_id(text);
                if id != EXCLUDED && !self.doc_terms.contains(&id) {
                    self.doc_terms.push(id);
                    self.common.add(doc, parent, id as u64);
                }
            }
            if !has_values {
                if let Some(missing) = self.missing.clone() {
                    let id = self.term_id(&missing);
                    if id != EXCLUDED {
                        self.common.add(doc, parent, id as u64);
                    }
                }
            }
        }
        self.texts = texts;
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
