//! Term-level queries: term, terms, range, exists, ids, prefix, wildcard, regexp, fuzzy.

use super::column_set::{ColumnSetQuery, ColumnValues};
use super::covering_range::CoveringRangeQuery;
use std::ops::Bound;

use serde_json::Value;
use tantivy::query::{
    BooleanQuery, ExistsQuery, Query, RangeQuery, RegexQuery, TermQuery, TermSetQuery,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::Term;
use tessera_common::Result;
use tessera_mapping::{LeafField, LeafKind};

use super::fuzzy_terms::{BlendedFuzzyQuery, Expansion};
use super::values::{
    bound_f64, date_format_for, exact, integer_bounds, parse_date_bound, scaled_bounds, text_of,
    time_zone, DateBoundContext, Exact,
};
use super::{boosted, constant, match_none, CompileContext};
use crate::ast::{Fuzziness, RangeQuery as RangeAst};

/// The searchable tantivy field of `path`, or `None` when the path is unmapped here.
///
/// A range field has no field of its own: its lower-bound column stands for it here, and
/// [`exact_query`] builds its queries from the leaf.
pub(crate) fn lookup<'a>(ctx: &'a CompileContext, path: &str) -> Option<(&'a LeafField, Field)> {
    let leaf = ctx.table.leaf(path)?;
    let field = match &leaf.kind {
        LeafKind::Range { from, .. } => *from,
        _ => leaf.field,
    };
    field.map(|f| (leaf.as_ref(), f))
}

fn require_indexed(ctx: &CompileContext, leaf: &LeafField) -> Result<()> {
    if let LeafKind::Completion(_) | LeafKind::Percolator = leaf.kind {
        return Err(unsearchable_field(ctx, leaf));
    }
    if let LeafKind::KnnVector(_) = leaf.kind {
        return Err(ctx.error(format!(
            "KNN vector do not support exact searching, use KNN queries instead: [{}]",
            leaf.path
        )));
    }
    if !leaf.indexed && !leaf.fast {
        return Err(ctx.error(format!(
            "Cannot search on field [{}] since it is not indexed.",
            leaf.path
        )));
    }
    Ok(())
}

fn range_of(low: Term, high: Term) -> Box<dyn Query> {
    Box::new(RangeQuery::new(Bound::Included(low), Bound::Included(high)))
}

/// The query for one exact value (without boost or scoring wrapper). A text field's term
/// is scored with its frequency in the document, as BM25 scores it in OpenSearch.
pub(crate) fn exact_query(leaf: &LeafField, field: Field, value: Exact) -> Box<dyn Query> {
    let record = match leaf.kind {
        LeafKind::Text { .. } => IndexRecordOption::WithFreqs,
        _ => IndexRecordOption::Basic,
    };
    let single = |term: Term| -> Box<dyn Query> {
        if leaf.indexed {
            Box::new(TermQuery::new(term, record))
        } else {
            Box::new(RangeQuery::new(
                Bound::Included(term.clone()),
                Bound::Included(term),
            ))
        }
    };
    match value {
        Exact::Str(s) => single(Term::from_field_text(field, &s)),
        Exact::I64(n) => single(Term::from_field_i64(field, n)),
        Exact::F64(f) => single(Term::from_field_f64(field, f)),
        Exact::Bool(b) => single(Term::from_field_bool(field, b)),
        Exact::Ip(ip) => single(Term::from_field_ip_addr(field, ip)),
        Exact::I64Range(low, high) => range_of(
            Term::from_field_i64(field, low),
            Term::from_field_i64(field, high),
        ),
        Exact::IpRange(low, high) => range_of(
            Term::from_field_ip_addr(field, low),
            Term::from_field_ip_addr(field, high),
        ),
        Exact::Range(bounds) => {
            super::range_field::leaf_query(leaf, bounds, crate::ast::RangeRelation::Intersects)
        }
        Exact::Impossible => match_none(),
    }
}

/// Whether OpenSearch scores this field's term queries with BM25 (text, keyword, boolean)
/// rather than as a constant (points: numbers, dates, ips).
fn scored_terms(leaf: &LeafField) -> bool {
    matches!(
        leaf.kind,
        LeafKind::Text { .. } | LeafKind::Keyword { .. } | LeafKind::Boolean
    )
}

pub(crate) fn term(
    ctx: &CompileContext,
    path: &str,
    value: &Value,
    boost: f32,
    case_insensitive: bool,
) -> Result<Box<dyn Query>> {
    let Some((leaf, field)) = lookup(ctx, path) else {
        return Ok(match_none());
    };
    require_indexed(ctx, leaf)?;
    if case_insensitive && matches!(leaf.kind, LeafKind::Text { .. } | LeafKind::Keyword { .. }) {
        let pattern = format!("(?i){}", regex_escape(&text_of(value)));
        let query = RegexQuery::from_pattern(&pattern, field)
            .map_err(|e| ctx.error(format!("failed to create query: {e}")))?;
        return Ok(constant(Box::new(query), boost));
    }
    let exact = exact(ctx, leaf, value)?;
    let scored = scored_terms(leaf) && leaf.indexed && !matches!(exact, Exact::Impossible);
    let query = exact_query(leaf, field, exact);
    Ok(if scored {
        boosted(super::full_text::per_field(ctx, leaf, query), boost)
    } else {
        constant(query, boost)
    })
}

pub(crate) fn terms(
    ctx: &CompileContext,
    path: &str,
    values: &[Value],
    boost: f32,
) -> Result<Box<dyn Query>> {
    let Some((leaf, field)) = lookup(ctx, path) else {
        return Ok(match_none());
    };
    require_indexed(ctx, leaf)?;
    let mut terms = Vec::new();
    let mut others: Vec<Box<dyn Query>> = Vec::new();
    // values of fields searched through their columns, tested in one pass per segment
    let (mut longs, mut doubles, mut ips) = (Vec::new(), Vec::new(), Vec::new());
    for value in values {
        match exact(ctx, leaf, value)? {
            Exact::Str(s) if leaf.indexed => terms.push(Term::from_field_text(field, &s)),
            Exact::I64(n) if leaf.indexed => terms.push(Term::from_field_i64(field, n)),
            Exact::F64(f) if leaf.indexed => terms.push(Term::from_field_f64(field, f)),
            Exact::Bool(b) if leaf.indexed => terms.push(Term::from_field_bool(field, b)),
            Exact::Ip(ip) if leaf.indexed => terms.push(Term::from_field_ip_addr(field, ip)),
            Exact::I64(n) if leaf.fast => longs.push(n),
            Exact::F64(f) if leaf.fast => doubles.push(f),
            Exact::Ip(ip) if leaf.fast => ips.push(ip),
            Exact::Impossible => {}
            other => others.push(exact_query(leaf, field, other)),
        }
    }
    if !terms.is_empty() {
        others.push(Box::new(TermSetQuery::new(terms)));
    }
    for set in [
        ColumnValues::I64(longs),
        ColumnValues::F64(doubles),
        ColumnValues::Ip(ips),
    ] {
        let single = match &set {
            ColumnValues::I64(v) if v.len() == 1 => Some(Exact::I64(v[0])),
            ColumnValues::F64(v) if v.len() == 1 => Some(Exact::F64(v[0])),
            ColumnValues::Ip(v) if v.len() == 1 => Some(Exact::Ip(v[0])),
            ColumnValues::I64(v) if v.is_empty() => continue,
            ColumnValues::F64(v) if v.is_empty() => continue,
            ColumnValues::Ip(v) if v.is_empty() => continue,
            _ => None,
        };
        others.push(match single {
            // one value: a range scan of the column is the fastest test
            Some(exact) => exact_query(leaf, field, exact),
            None => Box::new(ColumnSetQuery::new(leaf.path.clone(), set)),
        });
    }
    let query: Box<dyn Query> = match others.len() {
        0 => return Ok(match_none()),
        1 => others.pop().expect("one query"),
        _ => Box::new(BooleanQuery::union(others)),
    };
    Ok(constant(query, boost))
}

pub(crate) fn range(ctx: &CompileContext, range: &RangeAst) -> Result<Box<dyn Query>> {
    let Some((leaf, field)) = lookup(ctx, &range.field) else {
        return Ok(match_none());
    };
    require_indexed(ctx, leaf)?;
    if let LeafKind::Range { .. } = leaf.kind {
        // no bounds is the whole type's range, which every range intersects
        return super::range_field::range(ctx, leaf, range);
    }
    let lower = range.lower.as_ref().map(|b| (&b.value, b.inclusive));
    let upper = range.upper.as_ref().map(|b| (&b.value, b.inclusive));
    if lower.is_none() && upper.is_none() {
        return exists(ctx, &range.field, range.boost);
    }
    let i64_range = |bounds: Option<(i64, i64)>| -> Box<dyn Query> {
        match bounds {
            Some((low, high)) => {
                let query = range_of(
                    Term::from_field_i64(field, low),
                    Term::from_field_i64(field, high),
                );
                if leaf.fast {
                    Box::new(CoveringRangeQuery::new(query, &leaf.path, low, high))
                } else {
                    query
                }
            }
            None => match_none(),
        }
    };
    if let Some(bounds) = i64_bounds(ctx, leaf, range)? {
        return Ok(constant(i64_range(bounds), range.boost));
    }
    let query: Box<dyn Query> = match &leaf.kind {
        LeafKind::Float => {
            let to_bound = |b: Option<(&Value, bool)>| -> Result<Bound<Term>> {
                Ok(match b {
                    None => Bound::Unbounded,
                    Some((v, inclusive)) => {
                        let f = bound_f64(ctx, v)?;
                        let f = if leaf.field_type == tessera_mapping::FieldType::Double {
                            f
                        } else {
                            f as f32 as f64
                        };
                        let term = Term::from_field_f64(field, f);
                        if inclusive {
                            Bound::Included(term)
                        } else {
                            Bound::Excluded(term)
                        }
                    }
                })
            };
            Box::new(RangeQuery::new(to_bound(lower)?, to_bound(upper)?))
        }
        LeafKind::Text { .. } | LeafKind::Keyword { .. } => {
            let to_bound = |b: Option<(&Value, bool)>| match b {
                None => Bound::Unbounded,
                Some((v, inclusive)) => {
                    let term = Term::from_field_text(field, &text_of(v));
                    if inclusive {
                        Bound::Included(term)
                    } else {
                        Bound::Excluded(term)
                    }
                }
            };
            Box::new(RangeQuery::new(to_bound(lower), to_bound(upper)))
        }
        LeafKind::Ip => {
            let to_bound = |b: Option<(&Value, bool)>| -> Result<Bound<Term>> {
                Ok(match b {
                    None => Bound::Unbounded,
                    Some((v, inclusive)) => {
                        let ip = tessera_mapping::values::parse_ip(&text_of(v)).map_err(|e| {
                            ctx.error(format!("failed to create query: {}", e.reason()))
                        })?;
                        let term = Term::from_field_ip_addr(field, ip);
                        if inclusive {
                            Bound::Included(term)
                        } else {
                            Bound::Excluded(term)
                        }
                    }
                })
            };
            Box::new(RangeQuery::new(to_bound(lower)?, to_bound(upper)?))
        }
        LeafKind::Boolean => {
            let to_bound = |b: Option<(&Value, bool)>| -> Result<Bound<Term>> {
                Ok(match b {
                    None => Bound::Unbounded,
                    Some((v, inclusive)) => {
                        let Exact::Bool(flag) = exact(ctx, leaf, v)? else {
                            unreachable!("boolean fields give booleans")
                        };
                        let term = Term::from_field_bool(field, flag);
                        if inclusive {
                            Bound::Included(term)
                        } else {
                            Bound::Excluded(term)
                        }
                    }
                })
            };
            Box::new(RangeQuery::new(to_bound(lower)?, to_bound(upper)?))
        }
        LeafKind::GeoPoint { .. } => {
            return Err(ctx.error(format!(
                "Field [{}] of type [geo_point] does not support range queries",
                leaf.path
            )))
        }
        LeafKind::KnnVector(_) => {
            return Err(ctx.error(format!(
                "failed to create query: Field [{}] of type [knn_vector] does not support range queries",
                leaf.path
            )))
        }
        LeafKind::Completion(_) | LeafKind::Percolator => {
            return Err(unsearchable_field(ctx, leaf))
        }
        LeafKind::Integer | LeafKind::ScaledFloat { .. } | LeafKind::Date { .. } => {
            unreachable!("handled as i64 bounds")
        }
        LeafKind::Range { .. } => unreachable!("handled as a range field"),
    };
    Ok(constant(query, range.boost))
}

/// For fields stored as i64 (integers, scaled floats, dates): the inclusive bounds of `range`
/// in stored units (`Some(None)` when the range is empty); `None` for other field kinds.
pub fn i64_bounds(
    ctx: &CompileContext,
    leaf: &LeafField,
    range: &RangeAst,
) -> Result<Option<Option<(i64, i64)>>> {
    let lower = range.lower.as_ref().map(|b| (&b.value, b.inclusive));
    let upper = range.upper.as_ref().map(|b| (&b.value, b.inclusive));
    Ok(Some(match &leaf.kind {
        LeafKind::Integer => integer_bounds(ctx, lower, upper, leaf.field_type)?,
        LeafKind::ScaledFloat { factor } => scaled_bounds(ctx, lower, upper, *factor)?,
        LeafKind::Date { format } => {
            let format = date_format_for(ctx, format, range.format.as_deref())?;
            let zone = time_zone(ctx, range.time_zone.as_deref())?;
            let bounds = DateBoundContext {
                format: &format,
                zone: zone.as_ref(),
                now: ctx.now_millis,
            };
            // Range bounds are parsed while OpenSearch rewrites the query, so a bad
            // date surfaces as a bare `parse_exception`, not "failed to create query".
            let low = match lower {
                None => i64::MIN,
                Some((v, true)) => parse_date_bound(&bounds, v, false)?,
                Some((v, false)) => parse_date_bound(&bounds, v, true)?.saturating_add(1),
            };
            let high = match upper {
                None => i64::MAX,
                Some((v, true)) => parse_date_bound(&bounds, v, true)?,
                Some((v, false)) => parse_date_bound(&bounds, v, false)?.saturating_sub(1),
            };
            (low <= high).then_some((low, high))
        }
        _ => return Ok(None),
    }))
}

pub(crate) fn exists(ctx: &CompileContext, path: &str, boost: f32) -> Result<Box<dyn Query>> {
    let mut leaves: Vec<&LeafField> = match ctx.table.leaf(path) {
        Some(leaf) => vec![leaf.as_ref()],
        None => {
            let prefix = format!("{path}.");
            ctx.table
                .leaves()
                .filter(|l| l.path.starts_with(&prefix))
                .map(|l| l.as_ref())
                .collect()
        }
    };
    leaves.sort_by(|a, b| a.path.cmp(&b.path));
    let mut queries: Vec<Box<dyn Query>> = Vec::new();
    for leaf in leaves {
        if let LeafKind::GeoPoint { lat: Some(lat), .. }
        | LeafKind::Range {
            from: Some(lat), ..
        } = &leaf.kind
        {
            // the first column of a geo point or a range holds a value for every one
            let column = ctx.table.schema().get_field_name(*lat).to_string();
            queries.push(Box::new(ExistsQuery::new(column, false)));
            continue;
        }
        if leaf.field.is_none() {
            continue;
        }
        if leaf.fast {
            queries.push(Box::new(ExistsQuery::new(leaf.path.clone(), false)));
        } else if leaf.indexed {
            let term = Term::from_field_text(ctx.table.meta.field_names, &leaf.path);
            queries.push(Box::new(TermQuery::new(term, IndexRecordOption::Basic)));
        }
    }
    let query: Box<dyn Query> = match queries.len() {
        0 => return Ok(match_none()),
        1 => queries.pop().expect("one query"),
        _ => Box::new(BooleanQuery::union(queries)),
    };
    Ok(constant(query, boost))
}

pub(crate) fn ids(ctx: &CompileContext, values: &[String], boost: f32) -> Result<Box<dyn Query>> {
    if values.is_empty() {
        return Ok(match_none());
    }
    let field = ctx.table.meta.id;
    let terms = values.iter().map(|v| Term::from_field_text(field, v));
    Ok(constant(Box::new(TermSetQuery::new(terms)), boost))
}

/// Escapes regex metacharacters of tantivy's regex syntax.
pub(crate) fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~\"<>@".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `*`/`?` wildcards (with `\` escapes) as a regex.
pub(crate) fn wildcard_to_regex(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '*' => out.push_str(".*"),
            '?' => out.push('.'),
            '\\' => {
                if let Some(next) = chars.next() {
                    out.push_str(&regex_escape(&next.to_string()));
                }
            }
            other => out.push_str(&regex_escape(&other.to_string())),
        }
    }
    out
}

fn string_field<'a>(
    ctx: &'a CompileContext,
    path: &str,
    query: &str,
    allowed: &str,
) -> Result<Option<(&'a LeafField, Field)>> {
    let Some((leaf, field)) = lookup(ctx, path) else {
        return Ok(None);
    };
    if !matches!(leaf.kind, LeafKind::Text { .. } | LeafKind::Keyword { .. }) {
        return Err(ctx.error(format!(
            "Can only use {query} queries on {allowed} fields - not on [{path}] which is of type [{}]",
            leaf.field_type.name()
        )));
    }
    require_indexed(ctx, leaf)?;
    Ok(Some((leaf, field)))
}

fn regex_query(
    ctx: &CompileContext,
    field: Field,
    pattern: &str,
    case_insensitive: bool,
    boost: f32,
) -> Result<Box<dyn Query>> {
    let pattern = if case_insensitive {
        format!("(?i){pattern}")
    } else {
        pattern.to_string()
    };
    let query = RegexQuery::from_pattern(&pattern, field)
        .map_err(|e| ctx.error(format!("failed to create query: {e}")))?;
    Ok(constant(Box::new(query), boost))
}

fn keyword_normalized(leaf: &LeafField, text: &str) -> String {
    match leaf.kind {
        LeafKind::Keyword {
            lowercase: true, ..
        } => text.to_lowercase(),
        _ => text.to_string(),
    }
}

pub(crate) fn prefix(
    ctx: &CompileContext,
    path: &str,
    value: &str,
    case_insensitive: bool,
    boost: f32,
) -> Result<Box<dyn Query>> {
    let Some((leaf, field)) = string_field(ctx, path, "prefix", "keyword, text and wildcard")?
    else {
        return Ok(match_none());
    };
    let value = keyword_normalized(leaf, value);
    regex_query(
        ctx,
        field,
        &format!("{}.*", regex_escape(&value)),
        case_insensitive,
        boost,
    )
}

pub(crate) fn wildcard(
    ctx: &CompileContext,
    path: &str,
    pattern: &str,
    case_insensitive: bool,
    boost: f32,
) -> Result<Box<dyn Query>> {
    let Some((leaf, field)) = string_field(ctx, path, "wildcard", "keyword, text and wildcard")?
    else {
        return Ok(match_none());
    };
    let pattern = keyword_normalized(leaf, pattern);
    regex_query(
        ctx,
        field,
        &wildcard_to_regex(&pattern),
        case_insensitive,
        boost,
    )
}

pub(crate) fn regexp(
    ctx: &CompileContext,
    path: &str,
    pattern: &str,
    case_insensitive: bool,
    boost: f32,
) -> Result<Box<dyn Query>> {
    let Some((_, field)) = string_field(ctx, path, "regexp", "keyword and text")? else {
        return Ok(match_none());
    };
    regex_query(ctx, field, pattern, case_insensitive, boost)
}

/// Edit distance for a term under `fuzziness`.
pub(crate) fn edits(fuzziness: &Fuzziness, term: &str) -> u8 {
    match fuzziness {
        Fuzziness::Edits(n) => *n,
        Fuzziness::Auto { low, high } => {
            let len = term.chars().count() as u32;
            if len < *low {
                0
            } else if len < *high {
                1
            } else {
                2
            }
        }
    }
}

/// A fuzzy term query on a field with the statistics of `leaf`: the shard's
/// `max_expansions` closest terms, scored with blended statistics as OpenSearch scores them
/// (see [`super::fuzzy_terms`]); the first `prefix_length` characters must match exactly.
pub(crate) fn fuzzy_term(
    ctx: &CompileContext,
    leaf: &LeafField,
    field: Field,
    text: &str,
    distance: u8,
    expansion: Expansion,
) -> Box<dyn Query> {
    let fuzzy = BlendedFuzzyQuery::new(field, text, distance, expansion);
    super::full_text::per_field(ctx, leaf, Box::new(fuzzy))
}

pub(crate) fn fuzzy(
    ctx: &CompileContext,
    path: &str,
    value: &str,
    fuzziness: &Fuzziness,
    expansion: Expansion,
    boost: f32,
) -> Result<Box<dyn Query>> {
    let Some((leaf, field)) = string_field(ctx, path, "fuzzy", "keyword and text")? else {
        return Ok(match_none());
    };
    let value = keyword_normalized(leaf, value);
    let distance = edits(fuzziness, &value);
    Ok(boosted(
        fuzzy_term(ctx, leaf, field, &value, distance, expansion),
        boost,
    ))
}

/// Queries on a `completion` or `percolator` field: its values serve the completion
/// suggester or the `percolate` query only.
pub(crate) fn unsearchable_field(ctx: &CompileContext, leaf: &LeafField) -> tessera_common::Error {
    let instead = match leaf.kind {
        LeafKind::Completion(_) => "the completion suggester",
        _ => "the percolate query",
    };
    ctx.error(format!(
        "Tessera does not support queries on the {} field [{}]: use {instead}",
        leaf.field_type.name(),
        leaf.path
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_and_wildcards() {
        assert_eq!(regex_escape("a.b*c"), "a\\.b\\*c");
        assert_eq!(wildcard_to_regex("ki*y?"), "ki.*y.");
        assert_eq!(wildcard_to_regex("a\\*b"), "a\\*b");
        assert_eq!(wildcard_to_regex("1.5"), "1\\.5");
    }

    #[test]
    fn auto_fuzziness() {
        let auto = Fuzziness::Auto { low: 3, high: 6 };
        assert_eq!(edits(&auto, "ab"), 0);
        assert_eq!(edits(&auto, "abc"), 1);
        assert_eq!(edits(&auto, "abcdef"), 2);
        assert_eq!(edits(&Fuzziness::Edits(1), "abcdefgh"), 1);
    }
}
