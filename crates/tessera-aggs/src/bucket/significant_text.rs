//! `significant_text`: `significant_terms` over the terms of a text (or keyword) field as
//! its `_source` reads when analyzed, as OpenSearch computes it: each matching document's
//! values at the field (or at its `source_fields`) are analyzed with the field's index
//! analyzer and each distinct term counts the document once. The background, the scoring,
//! the shard's cut and the reduce are `significant_terms`' (the result is one), with terms
//! offered to the shard's queue in the order documents first brought them in (the smallest
//! `_seq_no` of a term's documents, then its position there), as OpenSearch's bucket
//! ordinals are.
//!
//! Sub-aggregations and `filter_duplicate_text: true` are refused with a clear error.

use std::collections::HashMap;

use serde_json::{Map, Value};
use tantivy::columnar::Column;
use tantivy::schema::Field;
use tantivy::store::StoreReader;
use tantivy::DocId;
use tessera_common::{Error, Result};
use tessera_mapping::field_table::SEQ_NO_FIELD;
use tessera_mapping::{analysis, LeafKind};

use crate::bucket::significant_terms::{
    InternalSignificantTerms, SignificantBucket, SignificantTermsRequest,
};
use crate::bucket::terms::{TermFilter, TermKey};
use crate::collector::{Collector, SegmentContext, SubCollectors};
use crate::format::ValueFormat;
use crate::internal::{InternalAgg, InternalAggregations};
use crate::ords::slot;
use crate::prepare::{AggContext, Factory};
use crate::request::AggRequest;

const AGG: &str = "significant_text";

/// Parses a `significant_text` body: `significant_terms`' options, without a script,
/// `missing` or an execution hint, with `source_fields` and `filter_duplicate_text`.
pub fn parse(name: &str, body: &Map<String, Value>) -> Result<SignificantTermsRequest> {
    let mut rest = Map::new();
    let mut source_fields = Vec::new();
    for (key, value) in body {
        match key.as_str() {
            "source_fields" => {
                source_fields = match value {
                    Value::Array(items) => items
                        .iter()
                        .map(|v| v.as_str().map(str::to_string))
                        .collect::<Option<Vec<_>>>(),
                    Value::String(s) => Some(vec![s.clone()]),
                    _ => None,
                }
                .ok_or_else(|| {
                    Error::x_content_parse(format!("[{AGG}] failed to parse field [{key}]"))
                })?
            }
            "filter_duplicate_text" => match value {
                Value::Bool(false) => {}
                Value::Bool(true) => {
                    return Err(Error::not_supported(
                        "[filter_duplicate_text] in the [significant_text] aggregation",
                    ))
                }
                _ => {
                    return Err(Error::x_content_parse(format!(
                        "[{AGG}] failed to parse field [{key}]"
                    )))
                }
            },
            "script" | "missing" | "format" | "value_type" | "execution_hint" => {
                return Err(Error::x_content_parse(format!(
                    "[{AGG}] unknown field [{key}]"
                )))
            }
            _ => {
                rest.insert(key.clone(), value.clone());
            }
        }
    }
    let mut request = SignificantTermsRequest::parse(name, &rest)?;
    request.text = Some(source_fields);
    Ok(request)
}

/// How a value becomes terms: the field's index analyzer, or a keyword's whole value.
#[derive(Clone, Debug)]
enum Analyzer {
    Named(String),
    Keyword { lowercase: bool },
}

impl Analyzer {
    fn terms(&self, text: &str, out: &mut Vec<String>) {
        match self {
            Analyzer::Named(name) => {
                out.extend(analysis::analyze(name, text).into_iter().map(|(_, t)| t))
            }
            Analyzer::Keyword { lowercase } => out.push(if *lowercase {
                text.to_lowercase()
            } else {
                text.to_string()
            }),
        }
    }
}

/// The collectors' shared plan: where the values are and how they become terms.
struct TextFactory {
    /// `None` for a field this shard does not map (no buckets).
    analyzer: Option<Analyzer>,
    paths: Vec<String>,
    filter: Option<TermFilter>,
    source: Field,
}

pub fn factory(
    request: &AggRequest,
    significant: &SignificantTermsRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    let field = significant.source.require_field(&request.name)?;
    if !request.subs.is_empty() {
        return Err(Error::not_supported(
            "sub-aggregations of the [significant_text] aggregation",
        ));
    }
    let analyzer = match ctx.table.leaf(field).map(|leaf| &leaf.kind) {
        None => None,
        Some(LeafKind::Text { analyzer, .. }) => Some(Analyzer::Named(analyzer.clone())),
        Some(LeafKind::Keyword { lowercase, .. }) => Some(Analyzer::Keyword {
            lowercase: *lowercase,
        }),
        Some(_) => {
            let type_name = ctx.table.leaf(field).map(|l| l.field_type.name());
            return Err(Error::illegal_argument(format!(
                "Field [{field}] of type [{}] is not supported for aggregation [{AGG}]",
                type_name.unwrap_or_default()
            )));
        }
    };
    let paths = match significant.text.as_deref() {
        Some(fields) if !fields.is_empty() => fields.to_vec(),
        _ => vec![field.to_string()],
    };
    Ok(Box::new(TextFactory {
        analyzer,
        paths,
        filter: TermFilter::compile(&significant.filter)?,
        source: ctx.table.meta.source,
    }))
}

impl Factory for TextFactory {
    fn collector(&self, _subs: SubCollectors, _single_parent: bool) -> Result<Box<dyn Collector>> {
        Ok(Box::new(TextCollector {
            analyzer: self.analyzer.clone(),
            paths: self.paths.clone(),
            filter: self.filter.clone(),
            source: self.source,
            store: None,
            seq_nos: None,
            terms: Vec::new(),
            subset_sizes: Vec::new(),
            error: None,
        }))
    }
}

struct TextCollector {
    analyzer: Option<Analyzer>,
    paths: Vec<String>,
    filter: Option<TermFilter>,
    source: Field,
    store: Option<StoreReader>,
    seq_nos: Option<Column<u64>>,
    /// Per parent bucket: each term's document count and first-seen key.
    terms: Vec<HashMap<String, (u64, u64)>>,
    subset_sizes: Vec<u64>,
    /// The first document whose source could not be read.
    error: Option<Error>,
}

impl TextCollector {
    /// The distinct terms of `doc`'s values, in the order they come.
    fn doc_terms(&mut self, analyzer: &Analyzer, doc: DocId) -> Result<Vec<String>> {
        use tantivy::schema::Value as _;
        let Some(store) = &self.store else {
            return Ok(Vec::new());
        };
        let stored = store
            .get::<tantivy::TantivyDocument>(doc)
            .map_err(|e| Error::internal("read a document's _source", e))?;
        let Some(bytes) = stored.get_first(self.source).and_then(|v| v.as_bytes()) else {
            return Ok(Vec::new());
        };
        let source: Value = serde_json::from_slice(bytes)
            .map_err(|e| Error::internal("parse a document's _source", e))?;
        let mut tokens = Vec::new();
        for path in &self.paths {
            for value in tessera_query::lookup::extract_raw_values(&source, path) {
                match value {
                    Value::String(text) => analyzer.terms(&text, &mut tokens),
                    other => analyzer.terms(&other.to_string(), &mut tokens),
                }
            }
        }
        let mut seen = std::collections::HashSet::new();
        tokens.retain(|t| seen.insert(t.clone()));
        Ok(tokens)
    }
}

impl Collector for TextCollector {
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        let open = |e: tantivy::TantivyError| Error::internal("open a segment's documents", e);
        self.store = Some(
            segment
                .reader
                .get_store_reader(64)
                .map_err(|e| Error::internal("open a segment's documents", e))?,
        );
        self.seq_nos = segment
            .reader
            .fast_fields()
            .column_opt::<u64>(SEQ_NO_FIELD)
            .map_err(open)?;
        Ok(())
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        let Some(analyzer) = self.analyzer.clone() else {
            for &parent in &parents[..docs.len()] {
                *slot(&mut self.subset_sizes, parent) += 1;
            }
            return;
        };
        for (&doc, &parent) in docs.iter().zip(parents) {
            *slot(&mut self.subset_sizes, parent) += 1;
            if self.error.is_some() {
                continue;
            }
            let terms = match self.doc_terms(&analyzer, doc) {
                Ok(terms) => terms,
                Err(e) => {
                    self.error = Some(e);
                    continue;
                }
            };
            let seq_no = self
                .seq_nos
                .as_ref()
                .and_then(|c| c.first(doc))
                .unwrap_or(u64::MAX >> 16);
            while self.terms.len() <= parent as usize {
                self.terms.push(HashMap::new());
            }
            let counts = &mut self.terms[parent as usize];
            for (position, term) in terms.into_iter().enumerate() {
                if self.filter.as_ref().is_some_and(|f| !f.accepts(&term)) {
                    continue;
                }
                let first_seen = (seq_no << 16) | (position.min(0xFFFF) as u64);
                let entry = counts.entry(term).or_insert((0, first_seen));
                entry.0 += 1;
                entry.1 = entry.1.min(first_seen);
            }
        }
    }

    fn finish_segment(&mut self) -> Result<()> {
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn build(&mut self, parent: u32) -> Result<InternalAgg> {
        let terms = self
            .terms
            .get_mut(parent as usize)
            .map(std::mem::take)
            .unwrap_or_default();
        let mut buckets: Vec<SignificantBucket> = terms
            .into_iter()
            .map(|(term, (doc_count, first_seen))| SignificantBucket {
                key: TermKey::Str(term),
                subset_df: doc_count,
                superset_df: 0,
                score: 0.0,
                rank: u32::MAX,
                first_seen,
                subs: InternalAggregations::default(),
            })
            .collect();
        buckets.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(InternalAgg::SignificantTerms(InternalSignificantTerms {
            buckets,
            subset_size: self.subset_sizes.get(parent as usize).copied().unwrap_or(0),
            superset_size: 0,
            format: ValueFormat::Raw,
            mapped: self.analyzer.is_some(),
            first_seen_order: true,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parsed(body: Value) -> Result<SignificantTermsRequest> {
        parse("st", body.as_object().unwrap())
    }

    #[test]
    fn parses_significant_terms_options_and_its_own() {
        let request = parsed(json!({
            "field": "body", "source_fields": ["title", "body"], "size": 5,
            "min_doc_count": 1, "filter_duplicate_text": false, "gnd": {}
        }))
        .unwrap();
        assert_eq!(
            request.text,
            Some(vec!["title".to_string(), "body".to_string()])
        );
        assert_eq!((request.size, request.min_doc_count), (5, 1));
        assert_eq!(
            parsed(json!({"field": "body"})).unwrap().text,
            Some(Vec::new())
        );
    }

    #[test]
    fn refuses_what_it_does_not_do() {
        let reason = |body: Value| parsed(body).unwrap_err().reason().to_string();
        assert!(
            reason(json!({"field": "b", "filter_duplicate_text": true})).contains("not supported")
        );
        assert_eq!(
            reason(json!({"field": "b", "script": "x"})),
            "[significant_text] unknown field [script]"
        );
    }

    #[test]
    fn keywords_are_one_term_and_text_is_analyzed() {
        let mut out = Vec::new();
        Analyzer::Keyword { lowercase: true }.terms("New York", &mut out);
        Analyzer::Named("standard".into()).terms("The Quick fox", &mut out);
        assert_eq!(out, ["new york", "the", "quick", "fox"]);
    }
}
