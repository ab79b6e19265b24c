//! The terms a query looks for, per field, for highlighting: analyzed the way the query is
//! (a `match` on a text field highlights its tokens; a `term` on a keyword the whole value),
//! with prefix and wildcard patterns kept as patterns. Negated clauses highlight nothing.

use tessera_common::Result;
use tessera_mapping::analysis;
use tessera_mapping::LeafKind;

use crate::ast::{MultiMatchQuery, QueryAst};
use crate::compile::CompileContext;

/// How a highlighted token is recognised.
#[derive(Clone, Debug, PartialEq)]
pub enum TermMatcher {
    Exact(String),
    Prefix(String),
    /// A `*`/`?` pattern.
    Wildcard(String),
}

impl TermMatcher {
    pub fn matches(&self, token: &str) -> bool {
        match self {
            TermMatcher::Exact(t) => t == token,
            TermMatcher::Prefix(p) => token.starts_with(p.as_str()),
            TermMatcher::Wildcard(p) => {
                tessera_mapping::dynamic::simple_match(&p.replace('?', "*"), token)
            }
        }
    }
}

/// A term to highlight in one field.
#[derive(Clone, Debug, PartialEq)]
pub struct HighlightTerm {
    pub field: String,
    pub matcher: TermMatcher,
}

fn analyzed(ctx: &CompileContext, field: &str, text: &str, out: &mut Vec<HighlightTerm>) {
    let Some(leaf) = ctx.table.leaf(field) else {
        return;
    };
    match &leaf.kind {
        LeafKind::Text {
            search_analyzer, ..
        } => {
            for (_, token) in analysis::analyze(search_analyzer, text) {
                out.push(HighlightTerm {
                    field: field.to_string(),
                    matcher: TermMatcher::Exact(token),
                });
            }
        }
        LeafKind::Keyword { lowercase, .. } => {
            let value = if *lowercase {
                text.to_lowercase()
            } else {
                text.to_string()
            };
            out.push(HighlightTerm {
                field: field.to_string(),
                matcher: TermMatcher::Exact(value),
            });
        }
        _ => {}
    }
}

fn text(value: &serde_json::Value) -> String {
    value
        .as_str()
        .map(String::from)
        .unwrap_or_else(|| value.to_string())
}

fn multi_match(ctx: &CompileContext, query: &MultiMatchQuery, out: &mut Vec<HighlightTerm>) {
    let (fields, _) = crate::compile::resolve_fields(ctx, &query.fields);
    for (field, _) in fields {
        analyzed(ctx, &field, &text(&query.query), out);
    }
}

/// Each of `values` as an exact term of `field`.
fn exact(field: &str, values: &[serde_json::Value], out: &mut Vec<HighlightTerm>) {
    for value in values {
        out.push(HighlightTerm {
            field: field.to_string(),
            matcher: TermMatcher::Exact(text(value)),
        });
    }
}

fn collect(ast: &QueryAst, ctx: &CompileContext, out: &mut Vec<HighlightTerm>) -> Result<()> {
    match ast {
        QueryAst::Term { field, value, .. } => out.push(HighlightTerm {
            field: field.clone(),
            matcher: TermMatcher::Exact(text(value)),
        }),
        QueryAst::Terms { field, values, .. } => exact(field, values, out),
        QueryAst::TermsSet(query) => exact(&query.field, &query.terms, out),
        QueryAst::Match(m) => analyzed(ctx, &m.field, &text(&m.query), out),
        QueryAst::MatchPhrase { field, query, .. }
        | QueryAst::MatchPhrasePrefix { field, query, .. } => analyzed(ctx, field, query, out),
        QueryAst::MultiMatch(m) => multi_match(ctx, m, out),
        QueryAst::Prefix { field, value, .. } => out.push(HighlightTerm {
            field: field.clone(),
            matcher: TermMatcher::Prefix(value.clone()),
        }),
        QueryAst::Wildcard { field, pattern, .. } => out.push(HighlightTerm {
            field: field.clone(),
            matcher: TermMatcher::Wildcard(pattern.clone()),
        }),
        QueryAst::Fuzzy { field, value, .. } => out.push(HighlightTerm {
            field: field.clone(),
            matcher: TermMatcher::Exact(value.clone()),
        }),
        QueryAst::Bool(b) => {
            for clause in b.must.iter().chain(&b.should).chain(&b.filter) {
                collect(clause, ctx, out)?;
            }
        }
        QueryAst::ConstantScore { filter, .. } => collect(filter, ctx, out)?,
        QueryAst::DisMax { queries, .. } => {
            for q in queries {
                collect(q, ctx, out)?;
            }
        }
        QueryAst::Boosting { positive, .. } => collect(positive, ctx, out)?,
        // nested fields are not in the hit's own document: their terms highlight nothing
        QueryAst::Nested(_) => {}
        QueryAst::FunctionScore(query) => collect(&query.query, ctx, out)?,
        QueryAst::ScriptScore(query) => collect(&query.query, ctx, out)?,
        QueryAst::QueryString(q) => {
            let resolver = crate::compile::shard_resolver(ctx);
            collect(
                &crate::query_string::lower_query_string(q, &resolver)?,
                ctx,
                out,
            )?
        }
        QueryAst::SimpleQueryString(q) => {
            let resolver = crate::compile::shard_resolver(ctx);
            collect(
                &crate::query_string::lower_simple_query_string(q, &resolver)?,
                ctx,
                out,
            )?
        }
        _ => {}
    }
    Ok(())
}

/// The terms `query` highlights on this shard.
pub fn highlight_terms(query: &QueryAst, ctx: &CompileContext) -> Result<Vec<HighlightTerm>> {
    let mut out = Vec::new();
    collect(query, ctx, &mut out)?;
    Ok(out)
}
