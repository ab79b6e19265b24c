//! Per-field BM25 statistics, as Lucene computes them.
//!
//! Lucene's BM25 uses the number of documents that *have* the field (`docCount`) for idf and
//! average length; tantivy uses the number of all documents. The two agree on dense fields and
//! drift apart on sparse ones (a `status` keyword on half the documents). Wrapping a field's
//! scored query here gives it a statistics provider that answers with the field's document
//! count, read from the `_field_names` index.

use tantivy::query::{Bm25StatisticsProvider, EnableScoring, Query, Weight};
use tantivy::schema::Field;
use tantivy::Term;

/// A query on one field whose BM25 statistics use that field's document count.
#[derive(Debug)]
pub struct FieldScoped {
    inner: Box<dyn Query>,
    field_names: Field,
    path: String,
}

impl Clone for FieldScoped {
    fn clone(&self) -> Self {
        FieldScoped {
            inner: self.inner.box_clone(),
            field_names: self.field_names,
            path: self.path.clone(),
        }
    }
}

impl FieldScoped {
    pub fn wrap(inner: Box<dyn Query>, field_names: Field, path: &str) -> Box<dyn Query> {
        Box::new(FieldScoped {
            inner,
            field_names,
            path: path.to_string(),
        })
    }
}

struct FieldDocCount<'a> {
    inner: &'a dyn Bm25StatisticsProvider,
    doc_count: u64,
}

impl Bm25StatisticsProvider for FieldDocCount<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        self.inner.total_num_tokens(field)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.doc_count)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        // a term cannot be in more documents than have the field
        Ok(self.inner.doc_freq(term)?.min(self.doc_count))
    }
}

impl Query for FieldScoped {
    fn weight(&self, enable_scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        match enable_scoring {
            EnableScoring::Enabled {
                searcher,
                statistics_provider,
            } => {
                let doc_count = statistics_provider
                    .doc_freq(&Term::from_field_text(self.field_names, &self.path))?;
                if doc_count == 0 {
                    // no `_field_names` data (older segments): fall back to all documents
                    return self.inner.weight(enable_scoring);
                }
                let provider = FieldDocCount {
                    inner: statistics_provider,
                    doc_count,
                };
                self.inner.weight(EnableScoring::Enabled {
                    searcher,
                    statistics_provider: &provider,
                })
            }
            disabled => self.inner.weight(disabled),
        }
    }
}
