//! Per-field BM25 statistics, as Lucene computes them.
//!
//! Lucene's BM25 uses the number of documents that *have* the field (`docCount`) for idf and
//! average length; tantivy uses the number of all documents. The two agree on dense fields and
//! drift apart on sparse ones (a `status` keyword on half the documents). Wrapping a field's
//! scored query here gives it a statistics provider that answers with the field's document
//! count: for a field with a column (keywords with doc values), the documents that have a
//! value in it, which each segment's column index knows; otherwise the `_field_names` index,
//! which the document parser fills only for such fields (a term per document and field is
//! indexing work the columns make unnecessary).
//!
//! A column's count is asked of the statistics provider first, as the document frequency of
//! a term no document has ([`column_count_term`]): the shard's own searcher knows no such term
//! (the count is then read from the columns), while the providers of `dfs_query_then_fetch`
//! (`crate::dfs`) answer it with the count over every shard.

use tantivy::columnar::column_index::MultiValueIndex;
use tantivy::columnar::{Column, ColumnIndex};
use tantivy::query::{Bm25StatisticsProvider, EnableScoring, Query, Weight};
use tantivy::schema::Field;
use tantivy::{Searcher, Term};

/// Where a field's document count comes from.
#[derive(Clone, Copy, Debug)]
pub enum DocCountSource {
    /// The field's string column (keywords with doc values); the `_field_names` field names
    /// the count's term (see the module docs).
    Column(Field),
    /// Terms of the `_field_names` field.
    FieldNames(Field),
}

/// A query on one field whose BM25 statistics use that field's document count.
#[derive(Debug)]
pub struct FieldScoped {
    inner: Box<dyn Query>,
    source: DocCountSource,
    path: String,
}

impl Clone for FieldScoped {
    fn clone(&self) -> Self {
        FieldScoped {
            inner: self.inner.box_clone(),
            source: self.source,
            path: self.path.clone(),
        }
    }
}

impl FieldScoped {
    pub fn wrap(inner: Box<dyn Query>, source: DocCountSource, path: &str) -> Box<dyn Query> {
        Box::new(FieldScoped {
            inner,
            source,
            path: path.to_string(),
        })
    }

    fn doc_count(
        &self,
        searcher: &Searcher,
        statistics: &dyn Bm25StatisticsProvider,
    ) -> tantivy::Result<u64> {
        match self.source {
            DocCountSource::FieldNames(field_names) => {
                statistics.doc_freq(&Term::from_field_text(field_names, &self.path))
            }
            DocCountSource::Column(field_names) => {
                match statistics.doc_freq(&column_count_term(field_names, &self.path))? {
                    0 => column_doc_count(searcher, &self.path),
                    known => Ok(known),
                }
            }
        }
    }
}

/// The term whose document frequency stands for the number of documents with a value in
/// the column `path` (no document has it: `_field_names` holds field paths).
pub fn column_count_term(field_names: Field, path: &str) -> Term {
    Term::from_field_text(field_names, &format!("{COLUMN_COUNT_PREFIX}{path}"))
}

/// The path of a [`column_count_term`]'s column, if `term` is one.
pub fn column_count_path<'t>(schema: &tantivy::schema::Schema, term: &'t Term) -> Option<&'t str> {
    if schema.get_field_name(term.field()) != tessera_mapping::field_table::FIELD_NAMES_FIELD {
        return None;
    }
    std::str::from_utf8(term.serialized_value_bytes())
        .ok()?
        .strip_prefix(COLUMN_COUNT_PREFIX)
}

pub const COLUMN_COUNT_PREFIX: &str = "\u{1}column:";

/// The documents of the shard with a value in the string column `path` (deleted ones
/// included, as in Lucene's statistics).
pub fn column_doc_count(searcher: &Searcher, path: &str) -> tantivy::Result<u64> {
    let mut count = 0;
    for segment in searcher.segment_readers() {
        if let Some(column) = segment.fast_fields().str(path)? {
            count += docs_with_values(column.ords());
        }
    }
    Ok(count)
}

/// Documents of a segment with at least one value in a column (deleted ones included, as in
/// Lucene's statistics).
fn docs_with_values(column: &Column<u64>) -> u64 {
    let count = match &column.index {
        ColumnIndex::Empty { .. } => 0,
        ColumnIndex::Full => column.num_docs(),
        ColumnIndex::Optional(optional) => optional.num_non_nulls(),
        ColumnIndex::Multivalued(MultiValueIndex::MultiValueIndexV2(multi)) => {
            multi.optional_index.num_non_nulls()
        }
        ColumnIndex::Multivalued(multi) => multi.iter_non_null_docs().count() as u32,
    };
    count as u64
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
                let doc_count = self.doc_count(searcher, statistics_provider)?;
                if doc_count == 0 {
                    // no data (nothing matches either): tantivy's statistics will do
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
