//! `more_like_this` as OpenSearch builds it (`MoreLikeThisQuery` over Lucene's
//! `XMoreLikeThis`): on each shard, the liked texts and documents are broken into terms, the
//! most telling of them (term frequency in the liked input × the shard's classic idf) become
//! `term` queries, and the documents matching enough of them (`minimum_should_match`, 30% by
//! default) are the hits, scored by the terms' BM25 scores.
//!
//! - Liked texts are analyzed as the first field (with `analyzer` if given); each of their
//!   terms goes to the field where it is most frequent.
//! - Liked documents (read by the coordinator, or given in the request) are broken into terms
//!   field by field as term vectors would be (each field's index analyzer); each field picks
//!   its own best terms.
//! - `unlike` texts and documents name terms never picked; the liked indexed documents are
//!   not hits unless `include` is set.
//!
//! Terms are offered to the selection in the order of Java's `HashMap`, and kept in Lucene's
//! priority queue, so that ties are broken as OpenSearch breaks them.

use std::collections::{HashMap, HashSet};

use serde_json::Value;
use tantivy::query::Query;
use tantivy::Term;
use tessera_common::java_hash::hash_map_order;
use tessera_common::lucene_queue::LuceneQueue;
use tessera_common::{Error, Result};
use tessera_mapping::{analysis, LeafField, LeafKind};

use super::CompileContext;
use crate::ast::{BoolQuery, MltItem, MoreLikeThisQuery, QueryAst};

/// Lucene's `DEFAULT_MAX_NUM_TOKENS_PARSED`: the most tokens read from one liked text.
const MAX_TOKENS_PARSED: usize = 5000;

pub(super) fn compile(ctx: &CompileContext, query: &MoreLikeThisQuery) -> Result<Box<dyn Query>> {
    let ast = rewrite(ctx, query)?;
    super::compile(&ast, ctx)
}

/// The query's terms on this shard, as a boolean query of `term` queries.
fn rewrite(ctx: &CompileContext, query: &MoreLikeThisQuery) -> Result<QueryAst> {
    let failed = |e: Error| {
        ctx.error(format!("failed to create query: {}", e.reason()))
            .caused_by(e)
    };
    let searcher = ctx
        .searcher
        .ok_or_else(|| ctx.error("[more_like_this] needs the shard's term statistics"))?;
    let has_texts = |items: &[MltItem]| items.iter().any(|i| matches!(i, MltItem::Text(_)));
    let fields: Vec<String> = match &query.fields {
        None => {
            let defaults: Vec<String> = ctx
                .default_fields
                .iter()
                .flat_map(|pattern| ctx.table.expand(pattern))
                .collect();
            if ctx.default_fields.iter().any(|f| f == "*")
                && (has_texts(&query.like) || has_texts(&query.unlike))
            {
                return Err(failed(Error::illegal_argument(
                    "[more_like_this] query cannot infer the field to analyze the free text, you should update the [index.query.default_field] index setting to a field that exists in the mapping or set the [fields] option in the query.",
                )));
            }
            defaults.into_iter().filter(|f| supported(ctx, f)).collect()
        }
        Some(list) => {
            let mut kept = Vec::new();
            for field in list {
                match ctx.table.leaf(field) {
                    Some(leaf) if !is_string(leaf) => {
                        if query.fail_on_unsupported_field {
                            return Err(failed(Error::illegal_argument(format!(
                                "more_like_this only supports text/keyword fields: [{field}]"
                            ))));
                        }
                    }
                    _ => kept.push(field.clone()),
                }
            }
            kept
        }
    };
    if fields.is_empty() {
        return Ok(QueryAst::MatchNone);
    }
    let selection = Selection {
        ctx,
        query,
        searcher,
        num_docs: searcher.num_docs(),
        skip: skip_terms(ctx, query, &fields)?,
    };

    // liked documents, field by field
    let docs: Vec<DocTerms> = query
        .like
        .iter()
        .filter_map(|item| doc_terms(ctx, item, query.fields.as_deref()).transpose())
        .collect::<Result<_>>()?;
    let mut parts = Vec::new();
    if query.like.iter().any(|i| !matches!(i, MltItem::Text(_))) {
        let mut names: Vec<&str> = docs
            .iter()
            .flat_map(|d| d.iter().map(|(field, _)| field.as_str()))
            .collect();
        names.sort_unstable();
        names.dedup();
        let mut clauses = Vec::new();
        for i in hash_map_order(&names) {
            let field = names[i];
            let mut words = Words::default();
            for doc in &docs {
                for (_, terms) in doc.iter().filter(|(f, _)| f == field) {
                    for (term, freq) in terms {
                        if !selection.noise(term) && !selection.skipped(field, term) {
                            words.add(term, *freq);
                        }
                    }
                }
            }
            clauses.extend(selection.clauses(&words, &[field.to_string()]));
        }
        parts.push(selection.part(clauses));
    }
    // liked texts, analyzed as the first field
    let texts: Vec<&str> = query
        .like
        .iter()
        .filter_map(|i| match i {
            MltItem::Text(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    if !texts.is_empty() {
        let analyzer = text_analyzer(ctx, query, &fields[0])?;
        let mut words = Words::default();
        for text in texts {
            for token in analyze(&analyzer, text).into_iter().take(MAX_TOKENS_PARSED) {
                if !selection.noise(&token) && !selection.skipped(&fields[0], &token) {
                    words.add(&token, 1);
                }
            }
        }
        parts.push(selection.part(selection.clauses(&words, &fields)));
    }
    let mlt = QueryAst::Bool(BoolQuery {
        should: parts,
        boost: 1.0,
        ..Default::default()
    });
    // the liked indexed documents are not hits unless `include`
    let liked_ids: Vec<String> = query
        .like
        .iter()
        .filter_map(|item| match item {
            MltItem::Indexed { doc, .. } => Some(doc.id.clone()),
            _ => None,
        })
        .collect();
    Ok(QueryAst::Bool(BoolQuery {
        should: vec![mlt],
        must_not: if query.include || liked_ids.is_empty() {
            Vec::new()
        } else {
            vec![QueryAst::Ids {
                values: liked_ids,
                boost: 1.0,
            }]
        },
        boost: query.boost,
        ..Default::default()
    }))
}

fn is_string(leaf: &LeafField) -> bool {
    matches!(leaf.kind, LeafKind::Text { .. } | LeafKind::Keyword { .. })
}

fn supported(ctx: &CompileContext, field: &str) -> bool {
    ctx.table.leaf(field).is_some_and(|leaf| is_string(leaf))
}

/// How a field's values are broken into terms.
#[derive(Clone, Debug)]
enum Analyzer {
    Named(String),
    /// A keyword: the whole value, lowercased with the lowercase normalizer, left out above
    /// `ignore_above` characters.
    Keyword {
        lowercase: bool,
        ignore_above: Option<usize>,
    },
}

fn analyze(analyzer: &Analyzer, text: &str) -> Vec<String> {
    match analyzer {
        Analyzer::Named(name) => analysis::analyze(name, text)
            .into_iter()
            .map(|(_, term)| term)
            .collect(),
        Analyzer::Keyword {
            lowercase,
            ignore_above,
        } => {
            if ignore_above.is_some_and(|max| text.chars().count() > max) {
                return Vec::new();
            }
            vec![if *lowercase {
                text.to_lowercase()
            } else {
                text.to_string()
            }]
        }
    }
}

/// A field's analyzer: `named` if given, else its index (`search: false`) or search analyzer.
fn field_analyzer(leaf: Option<&LeafField>, named: Option<&str>, search: bool) -> Analyzer {
    if let Some(name) = named {
        return Analyzer::Named(name.to_string());
    }
    match leaf.map(|l| &l.kind) {
        Some(LeafKind::Text {
            analyzer,
            search_analyzer,
            ..
        }) => Analyzer::Named(if search { search_analyzer } else { analyzer }.clone()),
        Some(LeafKind::Keyword {
            lowercase,
            ignore_above,
        }) => Analyzer::Keyword {
            lowercase: *lowercase,
            ignore_above: *ignore_above,
        },
        _ => Analyzer::Named("standard".into()),
    }
}

/// The analyzer of liked and unliked texts: `analyzer`, or the first field's search analyzer.
fn text_analyzer(ctx: &CompileContext, query: &MoreLikeThisQuery, first: &str) -> Result<Analyzer> {
    if let Some(name) = &query.analyzer {
        if !analysis::ANALYZERS.contains(&name.as_str()) {
            return Err(ctx.error(format!("[more_like_this] analyzer [{name}] not found")));
        }
    }
    Ok(field_analyzer(
        ctx.table.leaf(first).map(|l| l.as_ref()),
        query.analyzer.as_deref(),
        true,
    ))
}

/// A document's terms and their frequencies, field by field (its term vectors).
type DocTerms = Vec<(String, Vec<(String, u64)>)>;

/// The term vectors of a liked or unliked document: `None` for a text or a document that was
/// not found.
fn doc_terms(
    ctx: &CompileContext,
    item: &MltItem,
    query_fields: Option<&[String]>,
) -> Result<Option<DocTerms>> {
    let (source, item_fields, per_field, artificial) = match item {
        MltItem::Text(_) => return Ok(None),
        MltItem::Indexed {
            source: None, doc, ..
        } => {
            return Err(Error::illegal_state(format!(
                "[more_like_this] document [{}/{}] was not read before the search",
                doc.index, doc.id
            )))
        }
        MltItem::Indexed {
            source: Some(None), ..
        } => return Ok(None),
        MltItem::Indexed {
            source: Some(Some(source)),
            fields,
            per_field_analyzer,
            ..
        } => (source, fields, per_field_analyzer, false),
        MltItem::Artificial {
            doc,
            fields,
            per_field_analyzer,
        } => (doc, fields, per_field_analyzer, true),
    };
    // an indexed document without fields of its own takes the query's (all without them); an
    // artificial one all of its fields
    let patterns: Vec<String> = match (item_fields, query_fields) {
        (Some(fields), _) => fields.clone(),
        (None, Some(fields)) if !artificial => fields.to_vec(),
        _ => vec!["*".into()],
    };
    let mut names: Vec<String> = patterns
        .iter()
        .flat_map(|p| ctx.table.expand(p))
        .filter(|f| supported(ctx, f))
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut out = Vec::new();
    for name in names {
        let leaf = ctx.table.leaf(&name).map(|l| l.as_ref());
        let named = per_field
            .iter()
            .find(|(f, _)| *f == name)
            .map(|(_, a)| a.as_str());
        let analyzer = field_analyzer(leaf, named, false);
        let values = crate::lookup::extract_raw_values(source, source_path(ctx, &name));
        let mut counts: HashMap<String, u64> = HashMap::new();
        for value in values {
            let text = match &value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            for term in analyze(&analyzer, &text) {
                *counts.entry(term).or_default() += 1;
            }
        }
        if counts.is_empty() {
            continue;
        }
        // term vectors list a field's terms in byte order
        let mut terms: Vec<(String, u64)> = counts.into_iter().collect();
        terms.sort_unstable();
        out.push((name, terms));
    }
    Ok(Some(out))
}

/// Where a field's values are in `_source`: its own path, or its parent's for a multi-field.
fn source_path<'a>(ctx: &CompileContext, field: &'a str) -> &'a str {
    match field.rsplit_once('.') {
        Some((parent, _)) if ctx.table.leaf(parent).is_some() => parent,
        _ => field,
    }
}

/// The terms never picked: the unliked texts' (as the first field) and documents'.
fn skip_terms(
    ctx: &CompileContext,
    query: &MoreLikeThisQuery,
    fields: &[String],
) -> Result<HashSet<(String, String)>> {
    let mut skip = HashSet::new();
    for item in &query.unlike {
        match item {
            MltItem::Text(text) => {
                let analyzer = text_analyzer(ctx, query, &fields[0])?;
                for term in analyze(&analyzer, text) {
                    skip.insert((fields[0].clone(), term));
                }
            }
            _ => {
                for (field, terms) in
                    doc_terms(ctx, item, query.fields.as_deref())?.unwrap_or_default()
                {
                    for (term, _) in terms {
                        skip.insert((field.clone(), term));
                    }
                }
            }
        }
    }
    Ok(skip)
}

/// Words and their frequencies in the liked input, in the order they were first seen.
#[derive(Default)]
struct Words {
    order: Vec<String>,
    freqs: HashMap<String, u64>,
}

impl Words {
    fn add(&mut self, word: &str, freq: u64) {
        match self.freqs.get_mut(word) {
            Some(f) => *f += freq,
            None => {
                self.order.push(word.to_string());
                self.freqs.insert(word.to_string(), freq);
            }
        }
    }
}

/// A term picked, with the field it is searched in and its score.
struct Picked {
    word: String,
    field: String,
    score: f32,
}

/// The shard's statistics and the query's bounds.
struct Selection<'a> {
    ctx: &'a CompileContext<'a>,
    query: &'a MoreLikeThisQuery,
    searcher: &'a tantivy::Searcher,
    num_docs: u64,
    skip: HashSet<(String, String)>,
}

impl Selection<'_> {
    /// Lucene's `isNoiseWord`: outside the word lengths, or a stop word.
    fn noise(&self, word: &str) -> bool {
        let len = word.encode_utf16().count();
        let q = self.query;
        (q.min_word_length > 0 && len < q.min_word_length)
            || (q.max_word_length > 0 && len > q.max_word_length)
            || q.stop_words.iter().any(|w| w == word)
    }

    fn skipped(&self, field: &str, word: &str) -> bool {
        self.skip.contains(&(field.to_string(), word.to_string()))
    }

    fn doc_freq(&self, field: &str, word: &str) -> u64 {
        let Some(tantivy_field) = self.ctx.table.leaf(field).and_then(|l| l.field) else {
            return 0;
        };
        self.searcher
            .doc_freq(&Term::from_field_text(tantivy_field, word))
            .unwrap_or(0)
    }

    /// The best words as `term` clauses (Lucene's `createQueue` and `addToQuery`), weakest
    /// first; each searched in the field of `fields` where it is most frequent.
    fn clauses(&self, words: &Words, fields: &[String]) -> Vec<QueryAst> {
        let q = self.query;
        let limit = q.max_query_terms.min(words.order.len());
        let mut queue = LuceneQueue::new(limit, |a: &Picked, b: &Picked| a.score < b.score);
        for i in hash_map_order(&words.order) {
            let word = &words.order[i];
            let tf = words.freqs[word];
            if q.min_term_freq > 0 && tf < q.min_term_freq {
                continue;
            }
            let (mut top_field, mut doc_freq) = (&fields[0], 0);
            for field in fields {
                let freq = self.doc_freq(field, word);
                if freq > doc_freq {
                    top_field = field;
                    doc_freq = freq;
                }
            }
            if (q.min_doc_freq > 0 && doc_freq < q.min_doc_freq)
                || doc_freq > q.max_doc_freq
                || doc_freq == 0
            {
                continue;
            }
            // ClassicSimilarity's idf
            let idf = (((self.num_docs + 1) as f64 / (doc_freq + 1) as f64).ln() + 1.0) as f32;
            queue.insert_with_overflow(Picked {
                word: word.clone(),
                field: top_field.clone(),
                score: tf as f32 * idf,
            });
        }
        let mut clauses = Vec::new();
        let mut weakest = None;
        while let Some(picked) = queue.pop() {
            let boost = if q.boost_terms != 0.0 {
                // Lucene divides by the first popped, the weakest
                let first = *weakest.get_or_insert(picked.score);
                q.boost_terms * picked.score / first
            } else {
                1.0
            };
            clauses.push(QueryAst::Term {
                field: picked.field,
                value: Value::String(picked.word),
                boost,
                case_insensitive: false,
            });
        }
        clauses
    }

    /// One part of the query (the documents', the texts'): its clauses, enough of them
    /// required; none matches nothing.
    fn part(&self, clauses: Vec<QueryAst>) -> QueryAst {
        if clauses.is_empty() {
            return QueryAst::MatchNone;
        }
        QueryAst::Bool(BoolQuery {
            should: clauses,
            minimum_should_match: Some(self.query.minimum_should_match.clone()),
            boost: 1.0,
            ..Default::default()
        })
    }
}
