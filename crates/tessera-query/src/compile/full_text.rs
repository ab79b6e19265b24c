//! Full-text queries: match, match_phrase, match_phrase_prefix, multi_match, and the field
//! resolver that lets query_string expand field patterns against this shard.

use serde_json::Value;
use tantivy::query::{
    BooleanQuery, DisjunctionMaxQuery, Occur, PhrasePrefixQuery, PhraseQuery, Query, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::Term;
use tessera_common::Result;
use tessera_mapping::analysis::{self, ANALYZERS};
use tessera_mapping::{LeafField, LeafKind};

use super::fuzzy_terms::{BlendedFuzzyQuery, Expansion};
use super::term_level::{edits, exact_query, fuzzy_term, lookup, regex_escape};
use super::values::{exact, text_of};
use super::{boosted, constant, match_none, CompileContext};
use crate::ast::{
    FieldPattern, MatchQuery, MultiMatchQuery, MultiMatchType, Operator, ZeroTermsQuery,
};
use crate::dsl::resolve_msm;
use tantivy::query::AllQuery;

/// A scored query on one field, with that field's BM25 statistics (see `field_stats`).
/// `match_only_text` keeps no frequencies or norms in OpenSearch: its matches score 1.0.
pub(crate) fn per_field(
    ctx: &CompileContext,
    leaf: &LeafField,
    query: Box<dyn Query>,
) -> Box<dyn Query> {
    if leaf.field_type == tessera_mapping::FieldType::MatchOnlyText {
        return constant(query, 1.0);
    }
    use super::field_stats::{DocCountSource, FieldScoped};
    let source = match leaf.kind {
        LeafKind::Keyword { .. } if leaf.fast => DocCountSource::Column(ctx.table.meta.field_names),
        _ => DocCountSource::FieldNames(ctx.table.meta.field_names),
    };
    let scoped = FieldScoped::wrap(query, source, &leaf.path);
    match ctx.legacy_bm25 {
        true => scoped,
        // Lucene's BM25 is the legacy one divided by `1 + k1`
        false => Box::new(tantivy::query::BoostQuery::new(
            scoped,
            1.0 / (1.0 + BM25_K1),
        )),
    }
}

/// BM25's term frequency saturation, OpenSearch's and tantivy's default.
const BM25_K1: f32 = 1.2;

fn zero_terms(zero: ZeroTermsQuery) -> Box<dyn Query> {
    match zero {
        ZeroTermsQuery::None => match_none(),
        ZeroTermsQuery::All => constant(Box::new(AllQuery), 1.0),
    }
}

fn analyzer_for<'a>(
    ctx: &CompileContext,
    leaf: &'a LeafField,
    requested: Option<&'a str>,
) -> Result<&'a str> {
    if let Some(name) = requested {
        if !ANALYZERS.contains(&name) {
            return Err(ctx.error(format!("[match] analyzer [{name}] not found")));
        }
        return Ok(name);
    }
    Ok(match &leaf.kind {
        LeafKind::Text {
            search_analyzer, ..
        } => search_analyzer.as_str(),
        _ => "keyword",
    })
}

/// `match` on one field.
pub(crate) fn match_query(ctx: &CompileContext, query: &MatchQuery) -> Result<Box<dyn Query>> {
    let Some((leaf, field)) = lookup(ctx, &query.field) else {
        return Ok(match_none());
    };
    match_on_field(ctx, leaf, field, query, query.boost)
}

fn match_on_field(
    ctx: &CompileContext,
    leaf: &LeafField,
    field: Field,
    query: &MatchQuery,
    boost: f32,
) -> Result<Box<dyn Query>> {
    if !leaf.indexed && !leaf.fast {
        return Err(ctx.error(format!(
            "Cannot search on field [{}] since it is not indexed.",
            leaf.path
        )));
    }
    let expansion = Expansion {
        prefix_length: query.prefix_length,
        transpositions: query.fuzzy_transpositions,
        max_expansions: query.max_expansions,
    };
    let LeafKind::Text { .. } = leaf.kind else {
        // not analyzed: a match is a term query on the whole value
        let value = match exact(ctx, leaf, &query.query) {
            Ok(v) => v,
            Err(_) if query.lenient => return Ok(match_none()),
            Err(e) => return Err(e),
        };
        let scored = matches!(leaf.kind, LeafKind::Keyword { .. } | LeafKind::Boolean);
        if let (Some(fuzziness), LeafKind::Keyword { .. }) = (&query.fuzziness, &leaf.kind) {
            let text = text_of(&query.query);
            let distance = edits(fuzziness, &text);
            return Ok(boosted(
                fuzzy_term(ctx, leaf, field, &text, distance, expansion),
                boost,
            ));
        }
        let q = exact_query(leaf, field, value);
        return Ok(if scored {
            boosted(per_field(ctx, leaf, q), boost)
        } else {
            constant(q, boost)
        });
    };
    let analyzer = analyzer_for(ctx, leaf, query.analyzer.as_deref())?;
    let tokens = analysis::analyze(analyzer, &text_of(&query.query));
    if tokens.is_empty() {
        return Ok(zero_terms(query.zero_terms_query));
    }
    let term_query = |text: &str| -> Box<dyn Query> {
        match &query.fuzziness {
            Some(fuzziness) => {
                let distance = edits(fuzziness, text);
                if distance == 0 {
                    Box::new(TermQuery::new(
                        Term::from_field_text(field, text),
                        IndexRecordOption::WithFreqs,
                    ))
                } else {
                    Box::new(BlendedFuzzyQuery::new(field, text, distance, expansion))
                }
            }
            None => Box::new(TermQuery::new(
                Term::from_field_text(field, text),
                IndexRecordOption::WithFreqs,
            )),
        }
    };
    // match_only_text scores each matching term 1.0 (OpenSearch wraps every term query of the
    // field in a constant score), so a document matching three terms scores 3.0
    let match_only = leaf.field_type == tessera_mapping::FieldType::MatchOnlyText;
    let mut clauses: Vec<Box<dyn Query>> = tokens
        .iter()
        .map(|(_, text)| match match_only {
            true => per_field(ctx, leaf, term_query(text)),
            false => term_query(text),
        })
        .collect();
    let combined: Box<dyn Query> = if clauses.len() == 1 {
        clauses.pop().expect("one clause")
    } else {
        let count = clauses.len();
        ctx.count_clauses(count)?;
        let (occur, minimum) = match query.operator {
            Operator::And => (Occur::Must, 0),
            Operator::Or => (
                Occur::Should,
                query
                    .minimum_should_match
                    .as_ref()
                    .map(|m| resolve_msm(m, count))
                    .unwrap_or(1)
                    .max(1),
            ),
        };
        let clauses: Vec<(Occur, Box<dyn Query>)> =
            clauses.into_iter().map(|q| (occur, q)).collect();
        if occur == Occur::Should {
            Box::new(BooleanQuery::with_minimum_required_clauses(
                clauses, minimum,
            ))
        } else {
            Box::new(BooleanQuery::new(clauses))
        }
    };
    if match_only {
        return Ok(boosted(combined, boost));
    }
    Ok(boosted(per_field(ctx, leaf, combined), boost))
}

fn positions_required(ctx: &CompileContext, leaf: &LeafField, text: &str) -> Result<()> {
    match leaf.kind {
        LeafKind::Text { positions: true, .. } => Ok(()),
        _ => Err(ctx.error(format!(
            "field:[{}] was indexed without position data; cannot run PhraseQuery (phrase={}:\"{text}\")",
            leaf.path, leaf.path
        ))),
    }
}

pub(crate) fn phrase(
    ctx: &CompileContext,
    path: &str,
    text: &str,
    slop: u32,
    analyzer: Option<&str>,
    zero: ZeroTermsQuery,
    boost: f32,
) -> Result<Box<dyn Query>> {
    let Some((leaf, field)) = lookup(ctx, path) else {
        return Ok(match_none());
    };
    phrase_on_field(ctx, leaf, field, text, slop, analyzer, zero, boost, false)
}

#[allow(clippy::too_many_arguments)]
fn phrase_on_field(
    ctx: &CompileContext,
    leaf: &LeafField,
    field: Field,
    text: &str,
    slop: u32,
    analyzer: Option<&str>,
    zero: ZeroTermsQuery,
    boost: f32,
    lenient: bool,
) -> Result<Box<dyn Query>> {
    if !matches!(leaf.kind, LeafKind::Text { .. }) {
        let mut m = MatchQuery::new(leaf.path.clone(), Value::String(text.to_string()));
        m.lenient = lenient;
        return match_on_field(ctx, leaf, field, &m, boost);
    }
    let analyzer = analyzer_for(ctx, leaf, analyzer)?;
    let tokens = analysis::analyze(analyzer, text);
    let query: Box<dyn Query> = match tokens.len() {
        0 => return Ok(zero_terms(zero)),
        1 => Box::new(TermQuery::new(
            Term::from_field_text(field, &tokens[0].1),
            IndexRecordOption::WithFreqs,
        )),
        _ => {
            positions_required(ctx, leaf, text)?;
            let terms = tokens
                .iter()
                .map(|(pos, t)| (*pos, Term::from_field_text(field, t)))
                .collect();
            if slop == 0 {
                Box::new(PhraseQuery::new_with_offset_and_slop(terms, 0))
            } else {
                Box::new(super::sloppy_phrase::SloppyPhraseQuery::new(
                    field, terms, slop,
                ))
            }
        }
    };
    Ok(boosted(per_field(ctx, leaf, query), boost))
}

pub(crate) fn phrase_prefix(
    ctx: &CompileContext,
    path: &str,
    text: &str,
    _slop: u32,
    max_expansions: u32,
    analyzer: Option<&str>,
    boost: f32,
) -> Result<Box<dyn Query>> {
    let Some((leaf, field)) = lookup(ctx, path) else {
        return Ok(match_none());
    };
    phrase_prefix_on_field(ctx, leaf, field, text, max_expansions, analyzer, boost)
}

fn phrase_prefix_on_field(
    ctx: &CompileContext,
    leaf: &LeafField,
    field: Field,
    text: &str,
    max_expansions: u32,
    analyzer: Option<&str>,
    boost: f32,
) -> Result<Box<dyn Query>> {
    if !matches!(leaf.kind, LeafKind::Text { .. } | LeafKind::Keyword { .. }) {
        let m = MatchQuery::new(leaf.path.clone(), Value::String(text.to_string()));
        return match_on_field(ctx, leaf, field, &m, boost);
    }
    let analyzer = analyzer_for(ctx, leaf, analyzer)?;
    let tokens = analysis::analyze(analyzer, text);
    match tokens.len() {
        0 => Ok(match_none()),
        1 => {
            let pattern = format!("{}.*", regex_escape(&tokens[0].1));
            let query = tantivy::query::RegexQuery::from_pattern(&pattern, field)
                .map_err(|e| ctx.error(format!("failed to create query: {e}")))?;
            Ok(constant(Box::new(query), boost))
        }
        _ => {
            positions_required(ctx, leaf, text)?;
            let terms = tokens
                .iter()
                .map(|(pos, t)| (*pos, Term::from_field_text(field, t)))
                .collect();
            let mut query = PhrasePrefixQuery::new_with_offset(terms);
            query.set_max_expansions(max_expansions);
            Ok(boosted(Box::new(query), boost))
        }
    }
}

/// Resolves field patterns (with boosts) to this shard's searchable fields. `lenient` comes
/// back true when a wildcard was expanded (OpenSearch is lenient for those).
pub(crate) fn resolve_fields(
    ctx: &CompileContext,
    patterns: &[FieldPattern],
) -> (Vec<(String, f32)>, bool) {
    let defaults: Vec<FieldPattern>;
    let patterns = if patterns.is_empty() {
        defaults = ctx
            .default_fields
            .iter()
            .filter_map(|spec| FieldPattern::parse(spec).ok())
            .collect();
        &defaults
    } else {
        patterns
    };
    let mut out: Vec<(String, f32)> = Vec::new();
    let mut wildcard = false;
    for pattern in patterns {
        if pattern.pattern.contains('*') {
            wildcard = true;
            for path in ctx.table.expand(&pattern.pattern) {
                let searchable = ctx
                    .table
                    .leaf(&path)
                    .is_some_and(|l| l.is_default_searchable());
                if searchable && !out.iter().any(|(p, _)| p == &path) {
                    out.push((path, pattern.boost));
                }
            }
        } else if !out.iter().any(|(p, _)| p == &pattern.pattern) {
            out.push((pattern.pattern.clone(), pattern.boost));
        }
    }
    (out, wildcard)
}

pub(crate) fn multi_match(ctx: &CompileContext, query: &MultiMatchQuery) -> Result<Box<dyn Query>> {
    let (fields, wildcard) = resolve_fields(ctx, &query.fields);
    let lenient = query.lenient || wildcard;
    let text = text_of(&query.query);
    let mut per_field: Vec<Box<dyn Query>> = Vec::new();
    if query.kind == MultiMatchType::CrossFields {
        return cross_fields(ctx, query, &fields, lenient);
    }
    for (path, field_boost) in &fields {
        let Some((leaf, field)) = lookup(ctx, path) else {
            continue;
        };
        let compiled = match query.kind {
            MultiMatchType::Phrase => phrase_on_field(
                ctx,
                leaf,
                field,
                &text,
                query.slop,
                query.analyzer.as_deref(),
                query.zero_terms_query,
                *field_boost,
                lenient,
            ),
            MultiMatchType::PhrasePrefix => phrase_prefix_on_field(
                ctx,
                leaf,
                field,
                &text,
                query.max_expansions,
                query.analyzer.as_deref(),
                *field_boost,
            ),
            MultiMatchType::BoolPrefix => bool_prefix(ctx, leaf, field, &text, query, *field_boost),
            _ => {
                let m = MatchQuery {
                    field: path.clone(),
                    query: query.query.clone(),
                    operator: query.operator,
                    minimum_should_match: query.minimum_should_match.clone(),
                    fuzziness: query.fuzziness.clone(),
                    prefix_length: query.prefix_length,
                    max_expansions: query.max_expansions,
                    fuzzy_transpositions: query.fuzzy_transpositions,
                    zero_terms_query: query.zero_terms_query,
                    analyzer: query.analyzer.clone(),
                    lenient,
                    boost: *field_boost,
                };
                match_on_field(ctx, leaf, field, &m, *field_boost)
            }
        };
        match compiled {
            Ok(q) => per_field.push(q),
            Err(_) if lenient => {}
            Err(e) => return Err(e),
        }
    }
    if per_field.is_empty() {
        return Ok(match_none());
    }
    let combined: Box<dyn Query> = match query.kind {
        MultiMatchType::MostFields => Box::new(BooleanQuery::union(per_field)),
        _ if per_field.len() == 1 => per_field.pop().expect("one field"),
        _ => Box::new(DisjunctionMaxQuery::with_tie_breaker(
            per_field,
            query.tie_breaker.unwrap_or(0.0),
        )),
    };
    Ok(boosted(combined, query.boost))
}

fn bool_prefix(
    ctx: &CompileContext,
    leaf: &LeafField,
    field: Field,
    text: &str,
    query: &MultiMatchQuery,
    boost: f32,
) -> Result<Box<dyn Query>> {
    let tokens = match leaf.kind {
        LeafKind::Text { .. } => {
            let analyzer = analyzer_for(ctx, leaf, query.analyzer.as_deref())?;
            analysis::analyze(analyzer, text)
        }
        // a keyword is one token, the last: a prefix of the (normalized) value
        LeafKind::Keyword { lowercase, .. } => {
            let value = if lowercase {
                text.to_lowercase()
            } else {
                text.to_string()
            };
            vec![(0, value)]
        }
        _ => {
            let m = MatchQuery::new(leaf.path.clone(), Value::String(text.to_string()));
            return match_on_field(ctx, leaf, field, &m, boost);
        }
    };
    let Some(((_, last), rest)) = tokens.split_last() else {
        return Ok(match_none());
    };
    let occur = if query.operator == Operator::And {
        Occur::Must
    } else {
        Occur::Should
    };
    let expansion = Expansion {
        prefix_length: query.prefix_length,
        transpositions: query.fuzzy_transpositions,
        max_expansions: query.max_expansions,
    };
    // every term but the last is a term query (fuzzy with `fuzziness`), the last a prefix
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = rest
        .iter()
        .map(|(_, t)| {
            let distance = query.fuzziness.as_ref().map_or(0, |f| edits(f, t));
            let term: Box<dyn Query> = if distance > 0 {
                Box::new(BlendedFuzzyQuery::new(field, t, distance, expansion))
            } else {
                Box::new(TermQuery::new(
                    Term::from_field_text(field, t),
                    IndexRecordOption::WithFreqs,
                ))
            };
            (occur, term)
        })
        .collect();
    ctx.count_clauses(clauses.len() + 1)?;
    let prefix =
        tantivy::query::RegexQuery::from_pattern(&format!("{}.*", regex_escape(last)), field)
            .map_err(|e| ctx.error(format!("failed to create query: {e}")))?;
    clauses.push((occur, constant(Box::new(prefix), 1.0)));
    let count = clauses.len();
    let combined = match (occur, &query.minimum_should_match) {
        (Occur::Should, Some(msm)) => {
            BooleanQuery::with_minimum_required_clauses(clauses, resolve_msm(msm, count).max(1))
        }
        _ => BooleanQuery::new(clauses),
    };
    Ok(boosted(Box::new(combined), boost))
}

/// cross_fields: each term may match in any of the fields (dis_max per term), and the terms
/// combine with the operator, as if the fields were one.
fn cross_fields(
    ctx: &CompileContext,
    query: &MultiMatchQuery,
    fields: &[(String, f32)],
    lenient: bool,
) -> Result<Box<dyn Query>> {
    let text = text_of(&query.query);
    let analyzer = query.analyzer.as_deref().unwrap_or("standard");
    let tokens = analysis::analyze(analyzer, &text);
    if tokens.is_empty() {
        return Ok(zero_terms(query.zero_terms_query));
    }
    let mut per_term: Vec<Box<dyn Query>> = Vec::new();
    for (_, token) in &tokens {
        let mut alternatives: Vec<Box<dyn Query>> = Vec::new();
        for (path, boost) in fields {
            let Some((leaf, field)) = lookup(ctx, path) else {
                continue;
            };
            let mut m = MatchQuery::new(path.clone(), Value::String(token.clone()));
            m.lenient = lenient;
            match match_on_field(ctx, leaf, field, &m, *boost) {
                Ok(q) => alternatives.push(q),
                Err(_) if lenient => {}
                Err(e) => return Err(e),
            }
        }
        if !alternatives.is_empty() {
            per_term.push(Box::new(DisjunctionMaxQuery::with_tie_breaker(
                alternatives,
                query.tie_breaker.unwrap_or(0.0),
            )));
        }
    }
    if per_term.is_empty() {
        return Ok(match_none());
    }
    let count = per_term.len();
    ctx.count_clauses(count)?;
    let combined: Box<dyn Query> = match query.operator {
        Operator::And => Box::new(BooleanQuery::new(
            per_term.into_iter().map(|q| (Occur::Must, q)).collect(),
        )),
        Operator::Or => {
            let minimum = query
                .minimum_should_match
                .as_ref()
                .map(|m| resolve_msm(m, count))
                .unwrap_or(1)
                .max(1);
            Box::new(BooleanQuery::with_minimum_required_clauses(
                per_term.into_iter().map(|q| (Occur::Should, q)).collect(),
                minimum,
            ))
        }
    };
    Ok(boosted(combined, query.boost))
}

/// Lets `query_string` expand fields and normalize terms against this shard.
pub(crate) struct ShardFieldResolver<'a, 'b> {
    pub ctx: &'a CompileContext<'b>,
}

impl crate::query_string::FieldResolver for ShardFieldResolver<'_, '_> {
    fn expand(&self, pattern: &str) -> Vec<String> {
        if pattern.contains('*') {
            self.ctx
                .table
                .expand(pattern)
                .into_iter()
                .filter(|p| {
                    self.ctx
                        .table
                        .leaf(p)
                        .is_some_and(|l| l.is_default_searchable())
                })
                .collect()
        } else {
            vec![pattern.to_string()]
        }
    }

    fn default_fields(&self) -> Vec<FieldPattern> {
        self.ctx
            .default_fields
            .iter()
            .filter_map(|s| FieldPattern::parse(s).ok())
            .collect()
    }

    fn normalize(&self, field: &str, term: &str) -> String {
        match self.ctx.table.leaf(field).map(|l| &l.kind) {
            Some(LeafKind::Text {
                search_analyzer, ..
            }) => analysis::normalize(search_analyzer, term),
            Some(LeafKind::Keyword {
                lowercase: true, ..
            }) => term.to_lowercase(),
            _ => term.to_string(),
        }
    }
}
