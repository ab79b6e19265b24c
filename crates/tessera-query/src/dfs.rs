//! `dfs_query_then_fetch`: scores computed with the term statistics of every shard rather
//! than each shard's own. A first round over the shards builds each one's query weight with a
//! [`Recorder`], which answers tantivy's BM25 with the shard's statistics and writes down
//! every one it was asked for (document frequencies, token totals, the document count, and
//! the column counts of `compile::field_stats`); the coordinator sums them ([`DfsStats::merge`])
//! and the query phase builds each weight with a [`Global`] provider that answers with the
//! sums. Statistics travel by field name and term bytes, so shards whose schemas number
//! fields differently agree.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use tantivy::query::Bm25StatisticsProvider;
use tantivy::schema::{Field, Schema};
use tantivy::{Searcher, Term};

use tessera_mapping::field_table::FIELD_NAMES_FIELD;

use crate::compile::field_stats::{column_count_path, column_doc_count, COLUMN_COUNT_PREFIX};

/// The statistics one shard's scoring read, or their sums over the shards.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DfsStats {
    /// Documents (deleted ones included, as tantivy's BM25 counts them).
    pub num_docs: u64,
    /// Tokens per field name.
    pub tokens: Vec<(String, u64)>,
    /// Document frequencies by field name and term value bytes.
    pub doc_freqs: Vec<(String, Vec<u8>, u64)>,
}

impl DfsStats {
    /// Adds `other` (another shard's statistics) to these.
    pub fn merge(&mut self, other: &DfsStats) {
        self.num_docs += other.num_docs;
        let mut tokens: BTreeMap<String, u64> = self.tokens.drain(..).collect();
        for (field, n) in &other.tokens {
            *tokens.entry(field.clone()).or_default() += n;
        }
        self.tokens = tokens.into_iter().collect();
        let mut freqs: BTreeMap<(String, Vec<u8>), u64> = self
            .doc_freqs
            .drain(..)
            .map(|(f, t, n)| ((f, t), n))
            .collect();
        for (field, term, n) in &other.doc_freqs {
            *freqs.entry((field.clone(), term.clone())).or_default() += n;
        }
        self.doc_freqs = freqs.into_iter().map(|((f, t), n)| (f, t, n)).collect();
    }
}

/// Tokens by field name, and document frequencies by field name and term bytes.
type Recorded = (BTreeMap<String, u64>, BTreeMap<(String, Vec<u8>), u64>);

/// Answers with the shard's statistics and records each one asked for.
pub struct Recorder<'a> {
    searcher: &'a Searcher,
    recorded: RefCell<Recorded>,
}

impl<'a> Recorder<'a> {
    pub fn new(searcher: &'a Searcher) -> Recorder<'a> {
        Recorder {
            searcher,
            recorded: RefCell::default(),
        }
    }

    /// What was recorded. A field's document count is kept only where the field's terms
    /// were scored: a shard where a query found nothing to score in a field (a fuzzy term
    /// without expansions there) adds nothing to the field's statistics, as in OpenSearch.
    pub fn into_stats(self) -> tantivy::Result<DfsStats> {
        let num_docs = self.searcher.total_num_docs()?;
        let (tokens, mut freqs) = self.recorded.into_inner();
        let scored: std::collections::BTreeSet<String> = freqs
            .keys()
            .map(|(field, _)| field.clone())
            .filter(|field| field != FIELD_NAMES_FIELD)
            .chain(tokens.keys().cloned())
            .collect();
        freqs.retain(|(field, term), _| {
            field != FIELD_NAMES_FIELD || {
                let path = std::str::from_utf8(term).unwrap_or_default();
                let path = path.strip_prefix(COLUMN_COUNT_PREFIX).unwrap_or(path);
                scored.contains(path)
            }
        });
        Ok(DfsStats {
            num_docs,
            tokens: tokens.into_iter().collect(),
            doc_freqs: freqs.into_iter().map(|((f, t), n)| (f, t, n)).collect(),
        })
    }

    fn schema(&self) -> &Schema {
        self.searcher.schema()
    }
}

fn term_key(schema: &Schema, term: &Term) -> (String, Vec<u8>) {
    (
        schema.get_field_name(term.field()).to_string(),
        term.serialized_value_bytes().to_vec(),
    )
}

impl Bm25StatisticsProvider for Recorder<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        let n = self.searcher.total_num_tokens(field)?;
        let name = self.schema().get_field_name(field).to_string();
        self.recorded.borrow_mut().0.insert(name, n);
        Ok(n)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        self.searcher.total_num_docs()
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let n = match column_count_path(self.schema(), term) {
            Some(path) => column_doc_count(self.searcher, path)?,
            None => self.searcher.doc_freq(term)?,
        };
        let key = term_key(self.schema(), term);
        self.recorded.borrow_mut().1.insert(key, n);
        Ok(n)
    }
}

/// Answers with the statistics of every shard; the shard's own for anything the first round
/// did not record.
pub struct Global<'a> {
    searcher: &'a Searcher,
    num_docs: u64,
    tokens: HashMap<&'a str, u64>,
    doc_freqs: HashMap<(&'a str, &'a [u8]), u64>,
}

impl<'a> Global<'a> {
    pub fn new(stats: &'a DfsStats, searcher: &'a Searcher) -> Global<'a> {
        Global {
            searcher,
            num_docs: stats.num_docs,
            tokens: stats.tokens.iter().map(|(f, n)| (f.as_str(), *n)).collect(),
            doc_freqs: stats
                .doc_freqs
                .iter()
                .map(|(f, t, n)| ((f.as_str(), t.as_slice()), *n))
                .collect(),
        }
    }
}

impl Bm25StatisticsProvider for Global<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        let name = self.searcher.schema().get_field_name(field);
        match self.tokens.get(name) {
            Some(n) => Ok(*n),
            None => self.searcher.total_num_tokens(field),
        }
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.num_docs)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let name = self.searcher.schema().get_field_name(term.field());
        match self.doc_freqs.get(&(name, term.serialized_value_bytes())) {
            Some(n) => Ok(*n),
            None if column_count_path(self.searcher.schema(), term).is_some() => Ok(0),
            None => self.searcher.doc_freq(term),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_sums_by_field_and_term() {
        let mut total = DfsStats {
            num_docs: 10,
            tokens: vec![("body".into(), 100)],
            doc_freqs: vec![("body".into(), b"fox".to_vec(), 3)],
        };
        total.merge(&DfsStats {
            num_docs: 5,
            tokens: vec![("body".into(), 40), ("title".into(), 9)],
            doc_freqs: vec![
                ("body".into(), b"fox".to_vec(), 1),
                ("title".into(), b"fox".to_vec(), 2),
            ],
        });
        assert_eq!(total.num_docs, 15);
        assert_eq!(
            total.tokens,
            vec![("body".to_string(), 140), ("title".to_string(), 9)]
        );
        assert_eq!(
            total.doc_freqs,
            vec![
                ("body".to_string(), b"fox".to_vec(), 4),
                ("title".to_string(), b"fox".to_vec(), 2)
            ]
        );
    }
}
