//! Lowering of a parsed `query_string` into [`QueryAst`].
//!
//! Two layers of OpenSearch behaviour are reproduced here:
//!
//! * Lucene's `QueryParserBase.addClause`, which turns the flat list of clauses of one
//!   parenthesised level into a boolean query. Its rules are famously not a precedence grammar:
//!   `AND` makes the *previous* clause required, `OR` under `default_operator: AND` makes it
//!   optional again, and a clause's own occurrence depends on its modifier, its conjunction and the
//!   default operator. `a AND b OR c` therefore means `+a +b c` with the default `OR` operator and
//!   `+a b c` with `AND`. Users depend on these exact outcomes, so the rules are copied, not
//!   re-derived.
//! * OpenSearch's `QueryStringQueryParser`, which decides per clause which fields to search
//!   (`fields`, `default_field`, `index.query.default_field`, `field:` prefixes, `field.*:`
//!   patterns), builds one query per field and joins them with `dis_max`, and handles
//!   `_exists_:`, `field:*`, `*:*` and `age:>=10`. For `type: most_fields` without an explicit
//!   `tie_breaker` OpenSearch uses `dis_max` with `tie_breaker: 1.0`; a `bool` of `should`
//!   clauses scores the same and is used instead.
//!
//! Differences from OpenSearch by choice:
//!
//! * `fields` together with `default_field` is a validation error in OpenSearch; here `fields`
//!   wins, as the AST contract says.
//!
//! Differences from OpenSearch because the AST or the resolver cannot express the behaviour:
//!
//! * Analysis happens in the compiler, so a clause whose text analyzes to no tokens cannot be
//!   dropped the way Lucene drops it. Text made only of ASCII punctuation (`a - b`, `a & b`) is
//!   treated as analyzing to nothing and dropped here, which is what the standard analyzer does;
//!   stop words and other analyzer-specific removals are not (they become match-none clauses).
//! * A run of bare words (`quick brown fox`) is analyzed as one text by Lucene and, for a single
//!   field, its term queries are spliced into the surrounding boolean query. Here the run stays
//!   one `Match` clause (with the default operator), which matches the same documents and keeps
//!   keyword fields correct; only `minimum_should_match` counts differ when such a run is mixed
//!   with other clauses (`a b c -d`).
//! * `lenient` is carried on `Match` only; wildcard, prefix, fuzzy, regexp and range nodes on
//!   fields of the wrong type are left for the compiler to reject or ignore.
//! * OpenSearch turns a plain term on a date field into a one-day range when `time_zone` is set;
//!   the resolver does not expose field types, so that term stays a `Match`.
//! * `analyze_wildcard` is not applied (prefix and wildcard terms are only normalized).

use serde_json::Value;
use tessera_common::Error;

use super::parser::{self, ClauseBody, Conj, Item, Modifier, QueryExpr, RangeEnd, TermExpr};
use super::{
    analyzes_to_nothing, apply_minimum_should_match, expand_field, is_match_all_pattern,
    is_simple_match_pattern, multiply_boost, parse_failure, resolve_weighted, FieldResolver,
};
use crate::ast::{
    BoolQuery, FieldPattern, Fuzziness, MatchQuery, MultiMatchQuery, MultiMatchType, Operator,
    QueryAst, QueryStringQuery, RangeBound, RangeQuery, RangeRelation, ZeroTermsQuery,
};

/// The field OpenSearch uses to spell an exists query inside query text (`_exists_:title`).
const EXISTS_FIELD: &str = "_exists_";

/// Default `max_expansions` of a phrase-prefix query.
const PHRASE_PREFIX_MAX_EXPANSIONS: u32 = 50;

/// Why lowering stopped.
enum Failure {
    /// Reported like a syntax error (`Failed to parse query [...]`).
    Parse(String),
    /// Reported as is.
    Other(Error),
}

type Lowered = Result<Option<QueryAst>, Failure>;

pub(super) fn lower(q: &QueryStringQuery, resolver: &dyn FieldResolver) -> Result<QueryAst, Error> {
    // Java's `String.trim()` only strips characters up to U+0020.
    if q.query.chars().all(|c| c <= ' ') {
        return Ok(QueryAst::MatchNone);
    }
    let expr = parser::parse(&q.query).map_err(|detail| parse_failure(&q.query, &detail))?;
    let lowerer = Lowerer::new(q, resolver);
    let top_field = lowerer.default_field.clone();
    let top = lowerer
        .query(&expr, top_field.as_deref())
        .map_err(|failure| match failure {
            Failure::Parse(detail) => parse_failure(&q.query, &detail),
            Failure::Other(error) => error,
        })?;
    // An empty result (every word analyzed away) is Lucene's empty boolean query: no hits.
    let top = top.map(fix_negative_query).unwrap_or(QueryAst::MatchNone);
    let top = apply_minimum_should_match(top, &q.minimum_should_match);
    Ok(multiply_boost(top, q.boost))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Occur {
    Must,
    Should,
    MustNot,
}

struct BoolClause {
    occur: Occur,
    query: QueryAst,
}

/// A boolean query of prohibited clauses only matches nothing in Lucene; OpenSearch's
/// `Queries.fixNegativeQueryIfNeeded` adds a match-all filter so that `-a` means "all but a".
fn fix_negative_query(query: QueryAst) -> QueryAst {
    match query {
        QueryAst::Bool(mut b)
            if !b.must_not.is_empty()
                && b.must.is_empty()
                && b.should.is_empty()
                && b.filter.is_empty() =>
        {
            b.filter.push(QueryAst::match_all());
            QueryAst::Bool(b)
        }
        other => other,
    }
}

struct Lowerer<'a> {
    q: &'a QueryStringQuery,
    resolver: &'a dyn FieldResolver,
    /// OpenSearch's `this.field`: the default field (or pattern such as `*`) when the defaults
    /// are a single name; `None` when they are a weighted list.
    default_field: Option<String>,
    /// The default fields with their boosts, used when `default_field` is `None`.
    default_weights: Vec<(String, f32)>,
    lenient: bool,
}

impl<'a> Lowerer<'a> {
    fn new(q: &'a QueryStringQuery, resolver: &'a dyn FieldResolver) -> Self {
        let (default_field, default_weights, all_fields) = if !q.fields.is_empty() {
            let all = q.fields.iter().any(|p| is_match_all_pattern(&p.pattern));
            (None, resolve_weighted(resolver, &q.fields), all)
        } else if let Some(field) = &q.default_field {
            (Some(field.clone()), Vec::new(), is_match_all_pattern(field))
        } else {
            let defaults = resolver.default_fields();
            if defaults.iter().any(|p| is_match_all_pattern(&p.pattern)) {
                // OpenSearch ignores the other entries (and boosts) once `*` is among them.
                (Some("*".to_string()), Vec::new(), true)
            } else {
                (None, resolve_weighted(resolver, &defaults), false)
            }
        };
        // Searching every field means searching fields of every type: OpenSearch turns on
        // leniency unless the request chose otherwise.
        let lenient = q.lenient.unwrap_or(all_fields);
        Lowerer {
            q,
            resolver,
            default_field,
            default_weights,
            lenient,
        }
    }

    fn default_occur(&self) -> Occur {
        match self.q.default_operator {
            Operator::And => Occur::Must,
            Operator::Or => Occur::Should,
        }
    }

    /// The `Query` production: clauses combined with `addClause`.
    fn query(&self, expr: &QueryExpr, field: Option<&str>) -> Lowered {
        let mut clauses: Vec<BoolClause> = Vec::new();
        let mut first_query: Option<QueryAst> = None;
        for (index, item) in expr.items.iter().enumerate() {
            match item {
                Item::MultiTerm { words } => {
                    let query = self.field_query(field, &words.join(" "))?;
                    if index == 0 {
                        first_query = query.clone();
                    }
                    // Lucene's addMultiTermClauses: the default operator's occurrence, no
                    // conjunction rules.
                    if let Some(query) = query {
                        clauses.push(BoolClause {
                            occur: self.default_occur(),
                            query,
                        });
                    }
                }
                Item::Clause {
                    conj,
                    modifier,
                    clause,
                } => {
                    let field = clause.field.as_deref().or(field);
                    let query = self.clause_body(&clause.body, field)?;
                    let query = match clause.boost {
                        Some(boost) => query.map(|q| multiply_boost(q, boost)),
                        None => query,
                    };
                    if index == 0 && *modifier == Modifier::None {
                        first_query = query.clone();
                    }
                    self.add_clause(&mut clauses, *conj, *modifier, query);
                }
            }
        }
        if clauses.len() == 1 && first_query.is_some() {
            return Ok(first_query);
        }
        Ok(boolean_query(clauses))
    }

    /// Lucene's `QueryParserBase.addClause`.
    fn add_clause(
        &self,
        clauses: &mut Vec<BoolClause>,
        conj: Conj,
        modifier: Modifier,
        query: Option<QueryAst>,
    ) {
        let and_operator = self.q.default_operator == Operator::And;
        if let Some(previous) = clauses.last_mut() {
            // `AND` makes the preceding clause required, unless it is prohibited.
            if conj == Conj::And && previous.occur != Occur::MustNot {
                previous.occur = Occur::Must;
            }
            // Under the AND operator, `OR` makes the preceding clause optional again
            // (`a OR b` would otherwise mean `+a b`), unless it is prohibited.
            if and_operator && conj == Conj::Or && previous.occur != Occur::MustNot {
                previous.occur = Occur::Should;
            }
        }
        // A clause analyzed away still had its effect on the previous one.
        let Some(query) = query else {
            return;
        };
        let prohibited = modifier == Modifier::Prohibited;
        let required = if and_operator {
            !prohibited && conj != Conj::Or
        } else {
            modifier == Modifier::Required || (conj == Conj::And && !prohibited)
        };
        let occur = if required {
            Occur::Must
        } else if prohibited {
            Occur::MustNot
        } else {
            Occur::Should
        };
        clauses.push(BoolClause { occur, query });
    }

    fn clause_body(&self, body: &ClauseBody, field: Option<&str>) -> Lowered {
        match body {
            ClauseBody::Group(inner) => self.query(inner, field),
            ClauseBody::Term(term) => self.term(term, field),
            ClauseBody::Phrase { text, slop } => self.phrase(field, text, slop.as_deref()),
            ClauseBody::Range {
                lower,
                upper,
                lower_inclusive,
                upper_inclusive,
            } => {
                let end = |e: &'_ RangeEnd| match e {
                    RangeEnd::Open => None,
                    RangeEnd::Value(v) => Some(v.clone()),
                };
                Ok(Some(self.range(
                    field,
                    end(lower).as_deref(),
                    end(upper).as_deref(),
                    *lower_inclusive,
                    *upper_inclusive,
                )))
            }
        }
    }

    /// Lucene's `handleBareTokenQuery`: wildcard, prefix, regexp, fuzzy, or plain text.
    fn term(&self, term: &TermExpr, field: Option<&str>) -> Lowered {
        match term {
            TermExpr::Wildcard { pattern } => self.wildcard(field, pattern).map(Some),
            TermExpr::Prefix { text } => Ok(Some(self.per_field(field, |name| QueryAst::Prefix {
                field: name.to_string(),
                value: self.resolver.normalize(name, text),
                case_insensitive: false,
                boost: 1.0,
            }))),
            TermExpr::Regexp { pattern } => {
                Ok(Some(self.per_field(field, |name| QueryAst::Regexp {
                    field: name.to_string(),
                    pattern: self.resolver.normalize(name, pattern),
                    case_insensitive: false,
                    boost: 1.0,
                })))
            }
            TermExpr::Plain {
                text,
                fuzzy: Some(slop),
            } => {
                let fuzziness = self.fuzziness(slop)?;
                Ok(Some(self.per_field(field, |name| QueryAst::Fuzzy {
                    field: name.to_string(),
                    value: self.resolver.normalize(name, text),
                    fuzziness: fuzziness.clone(),
                    prefix_length: self.q.fuzzy_prefix_length,
                    transpositions: self.q.fuzzy_transpositions,
                    max_expansions: self.q.fuzzy_max_expansions,
                    boost: 1.0,
                })))
            }
            TermExpr::Plain { text, fuzzy: None } => self.field_query(field, text),
        }
    }

    /// Concrete fields and boosts for a clause: its field (or pattern), else the defaults.
    fn fields(&self, field: Option<&str>) -> Vec<(String, f32)> {
        match field {
            Some(field) => expand_field(self.resolver, field)
                .into_iter()
                .map(|name| (name, 1.0))
                .collect(),
            None => self.default_weights.clone(),
        }
    }

    /// One query per concrete field, each boosted by its field boost, combined.
    fn per_field(&self, field: Option<&str>, build: impl Fn(&str) -> QueryAst) -> QueryAst {
        let queries = self
            .fields(field)
            .into_iter()
            .map(|(name, boost)| multiply_boost(build(&name), boost))
            .collect();
        self.combine(queries)
    }

    /// Joins per-field queries: `dis_max` with the query's tie breaker, or for `most_fields`
    /// (whose tie breaker defaults to 1.0, i.e. a sum) a `bool` of `should` clauses, which scores
    /// the same. No fields at all (a pattern matching nothing) matches nothing.
    fn combine(&self, mut queries: Vec<QueryAst>) -> QueryAst {
        match queries.len() {
            0 => QueryAst::MatchNone,
            1 => queries.pop().unwrap_or(QueryAst::MatchNone),
            _ if self.q.kind == MultiMatchType::MostFields && self.q.tie_breaker.is_none() => {
                QueryAst::Bool(BoolQuery {
                    should: queries,
                    boost: 1.0,
                    ..Default::default()
                })
            }
            _ => QueryAst::DisMax {
                queries,
                tie_breaker: self.tie_breaker(),
                boost: 1.0,
            },
        }
    }

    fn tie_breaker(&self) -> f32 {
        self.q.tie_breaker.unwrap_or(match self.q.kind {
            MultiMatchType::MostFields | MultiMatchType::BoolPrefix => 1.0,
            _ => 0.0,
        })
    }

    /// OpenSearch's `getFieldQuery(field, text, quoted = false)`.
    fn field_query(&self, field: Option<&str>, text: &str) -> Lowered {
        if field == Some(EXISTS_FIELD) {
            return Ok(Some(self.exists(text)));
        }
        if let Some(field) = field {
            if let Some(range) = self.comparison(field, text) {
                return Ok(Some(range));
            }
        }
        if analyzes_to_nothing(text) {
            return Ok(None);
        }
        let fields = self.fields(field);
        if fields.is_empty() {
            return Ok(Some(QueryAst::MatchNone));
        }
        Ok(Some(self.text_query(&fields, text)))
    }

    /// `age:>10`, `age:>=10`, `age:<10`, `age:<=10`: one-sided ranges (only after a field).
    fn comparison(&self, field: &str, text: &str) -> Option<QueryAst> {
        let chars: Vec<char> = text.chars().collect();
        if chars.len() < 2 {
            return None;
        }
        let rest = |skip: usize| chars[skip..].iter().collect::<String>();
        let or_equal = chars.len() > 2 && chars[1] == '=';
        match chars[0] {
            '>' if or_equal => Some(self.range(Some(field), Some(&rest(2)), None, true, true)),
            '>' => Some(self.range(Some(field), Some(&rest(1)), None, false, true)),
            '<' if or_equal => Some(self.range(Some(field), None, Some(&rest(2)), true, true)),
            '<' => Some(self.range(Some(field), None, Some(&rest(1)), true, false)),
            _ => None,
        }
    }

    /// Analyzed text on the given fields, shaped by the query's `type`.
    fn text_query(&self, fields: &[(String, f32)], text: &str) -> QueryAst {
        let analyzer = self.q.analyzer.clone();
        let queries = match self.q.kind {
            MultiMatchType::BestFields | MultiMatchType::MostFields => fields
                .iter()
                .map(|(name, boost)| {
                    QueryAst::Match(MatchQuery {
                        operator: self.q.default_operator,
                        analyzer: analyzer.clone(),
                        lenient: self.lenient,
                        boost: *boost,
                        ..MatchQuery::new(name.as_str(), text)
                    })
                })
                .collect(),
            MultiMatchType::Phrase => fields
                .iter()
                .map(|(name, boost)| QueryAst::MatchPhrase {
                    field: name.clone(),
                    query: text.to_string(),
                    slop: self.q.phrase_slop,
                    analyzer: analyzer.clone(),
                    zero_terms_query: ZeroTermsQuery::None,
                    boost: *boost,
                })
                .collect(),
            MultiMatchType::PhrasePrefix => fields
                .iter()
                .map(|(name, boost)| QueryAst::MatchPhrasePrefix {
                    field: name.clone(),
                    query: text.to_string(),
                    slop: self.q.phrase_slop,
                    max_expansions: PHRASE_PREFIX_MAX_EXPANSIONS,
                    analyzer: analyzer.clone(),
                    boost: *boost,
                })
                .collect(),
            MultiMatchType::CrossFields | MultiMatchType::BoolPrefix => {
                // These blend all fields into one query; multi_match already knows how.
                return QueryAst::MultiMatch(MultiMatchQuery {
                    fields: fields
                        .iter()
                        .map(|(name, boost)| FieldPattern {
                            pattern: name.clone(),
                            boost: *boost,
                        })
                        .collect(),
                    query: Value::String(text.to_string()),
                    kind: self.q.kind,
                    operator: self.q.default_operator,
                    minimum_should_match: None,
                    tie_breaker: self.q.tie_breaker,
                    fuzziness: None,
                    prefix_length: 0,
                    max_expansions: crate::compile::DEFAULT_MAX_EXPANSIONS,
                    fuzzy_transpositions: true,
                    slop: self.q.phrase_slop,
                    analyzer,
                    zero_terms_query: ZeroTermsQuery::None,
                    lenient: self.lenient,
                    boost: 1.0,
                });
            }
        };
        self.combine(queries)
    }

    /// A quoted phrase, with `~N` slop or the query's `phrase_slop`.
    fn phrase(&self, field: Option<&str>, text: &str, slop: Option<&str>) -> Lowered {
        if field == Some(EXISTS_FIELD) {
            return Ok(Some(self.exists(text)));
        }
        // Lucene's handleQuotedTerm: `(int) Float.parseFloat(..)`, the default when unparsable.
        let slop = match slop.and_then(|s| s.parse::<f32>().ok()) {
            None => i64::from(self.q.phrase_slop),
            Some(value) => value as i64,
        };
        if slop < 0 {
            return Err(Failure::Other(Error::illegal_argument(
                "slop value cannot be negative",
            )));
        }
        let slop = u32::try_from(slop).unwrap_or(u32::MAX);
        if analyzes_to_nothing(text) {
            return Ok(None);
        }
        let fields = self.fields(field);
        if fields.is_empty() {
            return Ok(Some(QueryAst::MatchNone));
        }
        let queries = fields
            .iter()
            .map(|(name, boost)| QueryAst::MatchPhrase {
                field: name.clone(),
                query: text.to_string(),
                slop,
                analyzer: self.q.analyzer.clone(),
                zero_terms_query: ZeroTermsQuery::None,
                boost: *boost,
            })
            .collect();
        Ok(Some(self.combine(queries)))
    }

    /// `*` alone is "field exists" (or everything for `*:*` / an all-fields default); anything
    /// else is a wildcard pattern on each field.
    fn wildcard(&self, field: Option<&str>, pattern: &str) -> Result<QueryAst, Failure> {
        if pattern == "*" {
            if let Some(field) = field {
                if is_match_all_pattern(field) {
                    return Ok(QueryAst::match_all());
                }
                return Ok(self.exists(field));
            }
        }
        let mut queries = Vec::new();
        for (name, boost) in self.fields(field) {
            let query = if pattern == "*" {
                QueryAst::Exists {
                    field: name,
                    boost: 1.0,
                }
            } else {
                if !self.q.allow_leading_wildcard
                    && (pattern.starts_with('*') || pattern.starts_with('?'))
                {
                    return Err(Failure::Parse(
                        "'*' or '?' not allowed as first character in WildcardQuery".to_string(),
                    ));
                }
                QueryAst::Wildcard {
                    pattern: normalize_wildcard(self.resolver, &name, pattern),
                    field: name,
                    case_insensitive: false,
                    boost: 1.0,
                }
            };
            queries.push(multiply_boost(query, boost));
        }
        Ok(self.combine(queries))
    }

    /// `_exists_:field` and `field:*`; a pattern covers every field it expands to.
    fn exists(&self, pattern: &str) -> QueryAst {
        let mut names = self.resolver.expand(pattern);
        if names.is_empty() && !is_simple_match_pattern(pattern) {
            // Objects and unmapped names are the compiler's business, as for the exists query.
            names.push(pattern.to_string());
        }
        let mut exists: Vec<QueryAst> = names
            .into_iter()
            .map(|field| QueryAst::Exists { field, boost: 1.0 })
            .collect();
        match exists.len() {
            0 => QueryAst::MatchNone,
            1 => exists.pop().unwrap_or(QueryAst::MatchNone),
            _ => QueryAst::ConstantScore {
                filter: Box::new(QueryAst::Bool(BoolQuery {
                    should: exists,
                    boost: 1.0,
                    ..Default::default()
                })),
                boost: 1.0,
            },
        }
    }

    fn range(
        &self,
        field: Option<&str>,
        lower: Option<&str>,
        upper: Option<&str>,
        lower_inclusive: bool,
        upper_inclusive: bool,
    ) -> QueryAst {
        // OpenSearch also treats a quoted `"*"` as an open end.
        let lower = lower.filter(|v| *v != "*");
        let upper = upper.filter(|v| *v != "*");
        self.per_field(field, |name| {
            let bound = |value: &str, inclusive: bool| RangeBound {
                value: Value::String(self.resolver.normalize(name, value)),
                inclusive,
            };
            QueryAst::Range(RangeQuery {
                field: name.to_string(),
                lower: lower.map(|v| bound(v, lower_inclusive)),
                upper: upper.map(|v| bound(v, upper_inclusive)),
                format: None,
                time_zone: self.q.time_zone.clone(),
                relation: RangeRelation::Intersects,
                boost: 1.0,
            })
        })
    }

    /// The text after `~` of a fuzzy term: empty is the query's `fuzziness` (AUTO by default),
    /// otherwise `AUTO`, `AUTO:low,high` or a number of edits (capped at 2, fractions dropped).
    fn fuzziness(&self, slop: &str) -> Result<Fuzziness, Failure> {
        if slop.is_empty() {
            return Ok(self
                .q
                .fuzziness
                .clone()
                .unwrap_or(Fuzziness::Auto { low: 3, high: 6 }));
        }
        let upper = slop.to_ascii_uppercase();
        if upper == "AUTO" {
            return Ok(Fuzziness::Auto { low: 3, high: 6 });
        }
        if let Some(bounds) = upper.strip_prefix("AUTO:") {
            let parsed = bounds.split_once(',').and_then(|(low, high)| {
                Some((
                    low.trim().parse::<u32>().ok()?,
                    high.trim().parse::<u32>().ok()?,
                ))
            });
            return match parsed {
                Some((low, high)) if low <= high => Ok(Fuzziness::Auto { low, high }),
                _ => Err(Failure::Other(Error::illegal_argument(format!(
                    "failed to find low and high distance values in [{slop}]"
                )))),
            };
        }
        let value = slop.parse::<f32>().map_err(|_| {
            Failure::Other(Error::new(
                "number_format_exception",
                400,
                format!("For input string: \"{slop}\""),
            ))
        })?;
        let edits = (value as i32).min(2);
        if edits < 0 {
            return Err(Failure::Other(Error::illegal_argument(format!(
                "Valid edit distances are [0, 1, 2] but was [{edits}]"
            ))));
        }
        Ok(Fuzziness::Edits(edits as u8))
    }
}

/// Lucene's `getBooleanQuery` (nothing for no clauses) plus OpenSearch's negative-query fix.
fn boolean_query(clauses: Vec<BoolClause>) -> Option<QueryAst> {
    if clauses.is_empty() {
        return None;
    }
    let mut bool_query = BoolQuery {
        boost: 1.0,
        ..Default::default()
    };
    for clause in clauses {
        match clause.occur {
            Occur::Must => bool_query.must.push(clause.query),
            Occur::Should => bool_query.should.push(clause.query),
            Occur::MustNot => bool_query.must_not.push(clause.query),
        }
    }
    Some(fix_negative_query(QueryAst::Bool(bool_query)))
}

/// Normalizes the literal parts of a wildcard pattern for `field`, leaving `*`/`?` runs and
/// backslash escapes untouched (OpenSearch's `normalizeWildcardPattern`).
fn normalize_wildcard(resolver: &dyn FieldResolver, field: &str, pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chunk = String::new();
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                flush_chunk(resolver, field, &mut chunk, &mut out);
                out.push('\\');
                if let Some(escaped) = chars.next() {
                    out.push(escaped);
                }
            }
            '*' | '?' => {
                flush_chunk(resolver, field, &mut chunk, &mut out);
                out.push(c);
            }
            _ => chunk.push(c),
        }
    }
    flush_chunk(resolver, field, &mut chunk, &mut out);
    out
}

fn flush_chunk(resolver: &dyn FieldResolver, field: &str, chunk: &mut String, out: &mut String) {
    if !chunk.is_empty() {
        out.push_str(&resolver.normalize(field, chunk));
        chunk.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::super::lower_query_string;
    use super::super::test_support::FakeResolver;
    use crate::ast::*;
    use serde_json::Value;

    /// A query on the single default field `title`.
    fn qs(query: &str) -> QueryStringQuery {
        QueryStringQuery {
            default_field: Some("title".into()),
            ..QueryStringQuery::new(query)
        }
    }

    fn and(mut q: QueryStringQuery) -> QueryStringQuery {
        q.default_operator = Operator::And;
        q
    }

    fn lower(q: &QueryStringQuery) -> QueryAst {
        lower_query_string(q, &FakeResolver::new()).unwrap_or_else(|e| panic!("{}: {e}", q.query))
    }

    fn on_title(query: &str) -> QueryAst {
        lower(&qs(query))
    }

    fn match_q(field: &str, text: &str, operator: Operator, boost: f32, lenient: bool) -> QueryAst {
        QueryAst::Match(MatchQuery {
            operator,
            boost,
            lenient,
            ..MatchQuery::new(field, text)
        })
    }

    fn m(field: &str, text: &str) -> QueryAst {
        match_q(field, text, Operator::Or, 1.0, false)
    }

    fn ma(field: &str, text: &str) -> QueryAst {
        match_q(field, text, Operator::And, 1.0, false)
    }

    fn t(text: &str) -> QueryAst {
        m("title", text)
    }

    fn ta(text: &str) -> QueryAst {
        ma("title", text)
    }

    fn bool_q(must: Vec<QueryAst>, should: Vec<QueryAst>, must_not: Vec<QueryAst>) -> QueryAst {
        let filter = if must.is_empty() && should.is_empty() && !must_not.is_empty() {
            vec![QueryAst::match_all()]
        } else {
            vec![]
        };
        QueryAst::Bool(BoolQuery {
            must,
            should,
            must_not,
            filter,
            minimum_should_match: None,
            boost: 1.0,
        })
    }

    fn dis_max(queries: Vec<QueryAst>, tie_breaker: f32) -> QueryAst {
        QueryAst::DisMax {
            queries,
            tie_breaker,
            boost: 1.0,
        }
    }

    fn boosted(query: QueryAst, boost: f32) -> QueryAst {
        super::multiply_boost(query, boost)
    }

    fn range(field: &str, lower: Option<(&str, bool)>, upper: Option<(&str, bool)>) -> QueryAst {
        let bound = |(v, inclusive): (&str, bool)| RangeBound {
            value: Value::String(v.into()),
            inclusive,
        };
        QueryAst::Range(RangeQuery {
            field: field.into(),
            lower: lower.map(bound),
            upper: upper.map(bound),
            format: None,
            time_zone: None,
            relation: RangeRelation::Intersects,
            boost: 1.0,
        })
    }

    fn exists(field: &str) -> QueryAst {
        QueryAst::Exists {
            field: field.into(),
            boost: 1.0,
        }
    }

    fn fails(q: &QueryStringQuery) -> tessera_common::Error {
        match lower_query_string(q, &FakeResolver::new()) {
            Ok(ast) => panic!("{} should fail, got {ast:?}", q.query),
            Err(e) => e,
        }
    }

    fn assert_parse_error(query: &str) {
        let e = fails(&qs(query));
        assert_eq!(e.kind(), "query_shard_exception", "{query}");
        assert_eq!(e.status(), 400);
        assert_eq!(e.reason(), format!("Failed to parse query [{query}]"));
        let cause = e.cause().expect("a cause");
        assert_eq!(cause.kind(), "parse_exception");
        assert!(
            cause
                .reason()
                .starts_with(&format!("Cannot parse '{query}': ")),
            "{}",
            cause.reason()
        );
    }

    // ---- plain terms, multi-terms and the default operator ----

    #[test]
    fn single_term() {
        assert_eq!(on_title("foo"), t("foo"));
        assert_eq!(lower(&and(qs("foo"))), ta("foo"));
    }

    #[test]
    fn bare_words_are_analyzed_together() {
        assert_eq!(on_title("quick brown fox"), t("quick brown fox"));
        assert_eq!(lower(&and(qs("quick brown fox"))), ta("quick brown fox"));
        // A word followed by a conjunction is a clause of its own.
        assert_eq!(
            on_title("a b c AND d"),
            bool_q(vec![t("c"), t("d")], vec![t("a b")], vec![])
        );
    }

    #[test]
    fn empty_and_blank_queries_match_nothing() {
        assert_eq!(on_title(""), QueryAst::MatchNone);
        assert_eq!(on_title("   \t\n"), QueryAst::MatchNone);
    }

    #[test]
    fn lowercase_operators_are_words() {
        assert_eq!(on_title("a and b"), t("a and b"));
        assert_eq!(on_title("a or not b"), t("a or not b"));
    }

    // ---- addClause with the OR operator ----

    #[test]
    fn and_binds_the_previous_clause_with_or_operator() {
        assert_eq!(
            on_title("a AND b OR c"),
            bool_q(vec![t("a"), t("b")], vec![t("c")], vec![])
        );
        assert_eq!(
            on_title("a OR b AND c"),
            bool_q(vec![t("b"), t("c")], vec![t("a")], vec![])
        );
        assert_eq!(
            on_title("a && b || c"),
            bool_q(vec![t("a"), t("b")], vec![t("c")], vec![])
        );
        assert_eq!(
            on_title("a OR b"),
            bool_q(vec![], vec![t("a"), t("b")], vec![])
        );
    }

    #[test]
    fn modifiers_with_or_operator() {
        assert_eq!(
            on_title("+a -b c"),
            bool_q(vec![t("a")], vec![t("c")], vec![t("b")])
        );
        assert_eq!(
            on_title("a AND NOT b"),
            bool_q(vec![t("a")], vec![], vec![t("b")])
        );
        assert_eq!(
            on_title("a NOT b"),
            bool_q(vec![], vec![t("a")], vec![t("b")])
        );
        assert_eq!(on_title("a !b"), bool_q(vec![], vec![t("a")], vec![t("b")]));
        // AND never makes a prohibited clause required.
        assert_eq!(
            on_title("-a AND b"),
            bool_q(vec![t("b")], vec![], vec![t("a")])
        );
        assert_eq!(on_title("+a"), bool_q(vec![t("a")], vec![], vec![]));
    }

    // ---- addClause with the AND operator ----

    #[test]
    fn or_relaxes_the_previous_clause_with_and_operator() {
        assert_eq!(
            lower(&and(qs("a OR b"))),
            bool_q(vec![], vec![ta("a"), ta("b")], vec![])
        );
        assert_eq!(
            lower(&and(qs("a AND b OR c"))),
            bool_q(vec![ta("a")], vec![ta("b"), ta("c")], vec![])
        );
        assert_eq!(
            lower(&and(qs("a OR b AND c"))),
            bool_q(vec![ta("b"), ta("c")], vec![ta("a")], vec![])
        );
        assert_eq!(
            lower(&and(qs("-a OR b"))),
            bool_q(vec![], vec![ta("b")], vec![ta("a")])
        );
    }

    #[test]
    fn modifiers_with_and_operator() {
        assert_eq!(
            lower(&and(qs("+a -b c"))),
            bool_q(vec![ta("a"), ta("c")], vec![], vec![ta("b")])
        );
        assert_eq!(
            lower(&and(qs("a AND NOT b"))),
            bool_q(vec![ta("a")], vec![], vec![ta("b")])
        );
        assert_eq!(
            lower(&and(qs("a -b"))),
            bool_q(vec![ta("a")], vec![], vec![ta("b")])
        );
    }

    #[test]
    fn purely_negative_queries_match_everything_else() {
        assert_eq!(on_title("-a"), bool_q(vec![], vec![], vec![t("a")]));
        assert_eq!(on_title("NOT a"), bool_q(vec![], vec![], vec![t("a")]));
        assert_eq!(
            on_title("-a -b"),
            bool_q(vec![], vec![], vec![t("a"), t("b")])
        );
        // Also inside groups, where Lucene's getBooleanQuery runs.
        assert_eq!(
            on_title("a (-b)"),
            bool_q(
                vec![],
                vec![t("a"), bool_q(vec![], vec![], vec![t("b")])],
                vec![]
            )
        );
        let QueryAst::Bool(b) = on_title("-a") else {
            panic!()
        };
        assert_eq!(b.filter, vec![QueryAst::match_all()]);
    }

    #[test]
    fn bare_operators_are_dropped_but_still_count_for_and() {
        assert_eq!(
            on_title("a - b"),
            bool_q(vec![], vec![t("a"), t("b")], vec![])
        );
        assert_eq!(on_title("a & b"), t("a & b"));
        // `a AND &` still made `a` required although `&` analyzes to nothing.
        assert_eq!(
            on_title("a AND & OR b"),
            bool_q(vec![t("a")], vec![t("b")], vec![])
        );
        assert_eq!(on_title("\"-\""), QueryAst::MatchNone);
    }

    // ---- grouping and fields ----

    #[test]
    fn grouping() {
        assert_eq!(
            on_title("(a OR b) AND c"),
            bool_q(
                vec![bool_q(vec![], vec![t("a"), t("b")], vec![]), t("c")],
                vec![],
                vec![]
            )
        );
        assert_eq!(on_title("((a))"), t("a"));
        assert_eq!(
            on_title("a AND (b OR (c AND d))"),
            bool_q(
                vec![
                    t("a"),
                    bool_q(
                        vec![],
                        vec![t("b"), bool_q(vec![t("c"), t("d")], vec![], vec![])],
                        vec![]
                    )
                ],
                vec![],
                vec![]
            )
        );
    }

    #[test]
    fn field_prefixes_and_field_groups() {
        assert_eq!(on_title("status:active"), m("status", "active"));
        assert_eq!(
            on_title("body:(a OR b)"),
            bool_q(vec![], vec![m("body", "a"), m("body", "b")], vec![])
        );
        assert_eq!(on_title("body:(a b)"), m("body", "a b"));
        // An inner prefix wins over the group's field.
        assert_eq!(
            on_title("body:(a status:b)"),
            bool_q(vec![], vec![m("body", "a"), m("status", "b")], vec![])
        );
        assert_eq!(on_title("city.name:paris"), m("city.name", "paris"));
        assert_eq!(on_title(r"city\.name:paris"), m("city.name", "paris"));
        // Unknown exact fields are passed through; the compiler makes them match nothing.
        assert_eq!(on_title("unknown:x"), m("unknown", "x"));
    }

    #[test]
    fn field_patterns_expand() {
        assert_eq!(
            on_title(r"city.\*:paris"),
            dis_max(vec![m("city.name", "paris"), m("city.zip", "paris")], 0.0)
        );
        assert_eq!(on_title(r"nothing.\*:paris"), QueryAst::MatchNone);
        let all = on_title("*:x");
        let QueryAst::DisMax { queries, .. } = all else {
            panic!("{all:?}")
        };
        assert_eq!(queries.len(), 7);
    }

    // ---- boosts ----

    #[test]
    fn boosts() {
        assert_eq!(on_title("a^2"), boosted(t("a"), 2.0));
        assert_eq!(
            on_title("a^0.5 b"),
            bool_q(vec![], vec![boosted(t("a"), 0.5), t("b")], vec![])
        );
        assert_eq!(
            on_title("(a OR b)^3"),
            boosted(bool_q(vec![], vec![t("a"), t("b")], vec![]), 3.0)
        );
        assert_eq!(
            on_title("\"a b\"^2"),
            boosted(phrase("title", "a b", 0), 2.0)
        );
        let mut q = qs("a OR b");
        q.boost = 4.0;
        assert_eq!(
            lower(&q),
            boosted(bool_q(vec![], vec![t("a"), t("b")], vec![]), 4.0)
        );
    }

    #[test]
    fn field_boosts_multiply_with_term_boosts() {
        let q = QueryStringQuery {
            fields: vec![
                FieldPattern::parse("title^3").unwrap(),
                FieldPattern::parse("body").unwrap(),
            ],
            ..QueryStringQuery::new("foo^2")
        };
        assert_eq!(
            lower(&q),
            boosted(
                dis_max(
                    vec![
                        match_q("title", "foo", Operator::Or, 3.0, false),
                        m("body", "foo")
                    ],
                    0.0
                ),
                2.0
            )
        );
    }

    // ---- phrases ----

    fn phrase(field: &str, text: &str, slop: u32) -> QueryAst {
        QueryAst::MatchPhrase {
            field: field.into(),
            query: text.into(),
            slop,
            analyzer: None,
            zero_terms_query: ZeroTermsQuery::None,
            boost: 1.0,
        }
    }

    #[test]
    fn phrases_and_slop() {
        assert_eq!(on_title("\"quick fox\""), phrase("title", "quick fox", 0));
        assert_eq!(on_title("\"quick fox\"~3"), phrase("title", "quick fox", 3));
        assert_eq!(
            on_title("\"quick fox\"~2.7"),
            phrase("title", "quick fox", 2)
        );
        let mut q = qs("\"quick fox\"");
        q.phrase_slop = 2;
        assert_eq!(lower(&q), phrase("title", "quick fox", 2));
        q.query = "\"quick fox\"~".into();
        assert_eq!(lower(&q), phrase("title", "quick fox", 2));
        assert_eq!(
            on_title(r#"body:"say \"hi\"""#),
            phrase("body", "say \"hi\"", 0)
        );
        assert_eq!(on_title("\"\""), QueryAst::MatchNone);
    }

    #[test]
    fn phrase_type_turns_words_into_phrases() {
        let mut q = qs("quick fox");
        q.kind = MultiMatchType::Phrase;
        q.phrase_slop = 1;
        assert_eq!(lower(&q), phrase("title", "quick fox", 1));
    }

    // ---- fuzzy ----

    fn fuzzy(field: &str, value: &str, fuzziness: Fuzziness) -> QueryAst {
        QueryAst::Fuzzy {
            field: field.into(),
            value: value.into(),
            fuzziness,
            prefix_length: 0,
            transpositions: true,
            max_expansions: 50,
            boost: 1.0,
        }
    }

    #[test]
    fn fuzzy_terms() {
        assert_eq!(
            on_title("Quikc~"),
            fuzzy("title", "quikc", Fuzziness::Auto { low: 3, high: 6 })
        );
        assert_eq!(
            on_title("quikc~1"),
            fuzzy("title", "quikc", Fuzziness::Edits(1))
        );
        assert_eq!(
            on_title("quikc~5"),
            fuzzy("title", "quikc", Fuzziness::Edits(2))
        );
        assert_eq!(
            on_title("quikc~0.5"),
            fuzzy("title", "quikc", Fuzziness::Edits(0))
        );
        assert_eq!(
            on_title("quikc~auto"),
            fuzzy("title", "quikc", Fuzziness::Auto { low: 3, high: 6 })
        );
        assert_eq!(
            on_title("status:Actve~1"),
            fuzzy("status", "Actve", Fuzziness::Edits(1))
        );
        assert_eq!(
            on_title("quikc~1^2"),
            boosted(fuzzy("title", "quikc", Fuzziness::Edits(1)), 2.0)
        );
        let mut q = qs("quikc~");
        q.fuzziness = Some(Fuzziness::Edits(1));
        q.fuzzy_prefix_length = 2;
        let QueryAst::Fuzzy {
            fuzziness,
            prefix_length,
            ..
        } = lower(&q)
        else {
            panic!()
        };
        assert_eq!((fuzziness, prefix_length), (Fuzziness::Edits(1), 2));
    }

    #[test]
    fn bad_fuzziness_is_an_error() {
        assert_eq!(fails(&qs("foo~abc")).kind(), "number_format_exception");
        assert_eq!(fails(&qs("foo~-1")).kind(), "illegal_argument_exception");
        // `:` ends the slop, so a custom AUTO cannot be written unescaped.
        assert_eq!(fails(&qs("foo~AUTO:2,5")).kind(), "query_shard_exception");
        assert_eq!(
            fails(&qs(r"foo~AUTO\:2,5")).kind(),
            "number_format_exception"
        );
    }

    // ---- wildcards, prefixes, regexps, exists ----

    fn wildcard(field: &str, pattern: &str) -> QueryAst {
        QueryAst::Wildcard {
            field: field.into(),
            pattern: pattern.into(),
            case_insensitive: false,
            boost: 1.0,
        }
    }

    fn prefix(field: &str, value: &str) -> QueryAst {
        QueryAst::Prefix {
            field: field.into(),
            value: value.into(),
            case_insensitive: false,
            boost: 1.0,
        }
    }

    #[test]
    fn wildcards_and_prefixes() {
        assert_eq!(on_title("qu?ck*"), wildcard("title", "qu?ck*"));
        assert_eq!(on_title("Qu?CK*"), wildcard("title", "qu?ck*"));
        assert_eq!(on_title("Foo*"), prefix("title", "foo"));
        assert_eq!(on_title("status:AB*"), prefix("status", "AB"));
        assert_eq!(on_title("status:A?B*"), wildcard("status", "A?B*"));
        assert_eq!(on_title("*oo"), wildcard("title", "*oo"));
        // Escapes stay in wildcard patterns, and escaped characters are not normalized.
        assert_eq!(on_title(r"F\?O*x"), wildcard("title", r"f\?o*x"));
        assert_eq!(on_title(r"foo\*bar*"), prefix("title", "foo*bar"));
        assert_eq!(on_title(r"foo\*"), t("foo*"));
    }

    #[test]
    fn leading_wildcards_can_be_forbidden() {
        let mut q = qs("*oo");
        q.allow_leading_wildcard = false;
        let e = fails(&q);
        assert_eq!(e.kind(), "query_shard_exception");
        assert!(e
            .cause()
            .unwrap()
            .reason()
            .contains("'*' or '?' not allowed as first character"));
        q.query = "?oo".into();
        fails(&q);
        q.query = "fo*".into();
        assert_eq!(lower(&q), prefix("title", "fo"));
    }

    #[test]
    fn star_means_exists_or_everything() {
        assert_eq!(on_title("status:*"), exists("status"));
        assert_eq!(on_title("*"), exists("title"));
        assert_eq!(on_title("*:*"), QueryAst::match_all());
        assert_eq!(on_title("*:*^2"), QueryAst::MatchAll { boost: 2.0 });
        assert_eq!(lower(&QueryStringQuery::new("*")), QueryAst::match_all());
        assert_eq!(
            on_title(r"city.\*:*"),
            QueryAst::ConstantScore {
                filter: Box::new(QueryAst::Bool(BoolQuery {
                    should: vec![exists("city.name"), exists("city.zip")],
                    boost: 1.0,
                    ..Default::default()
                })),
                boost: 1.0
            }
        );
        let q = QueryStringQuery {
            fields: vec![
                FieldPattern::parse("title").unwrap(),
                FieldPattern::parse("body").unwrap(),
            ],
            ..QueryStringQuery::new("*")
        };
        assert_eq!(
            lower(&q),
            dis_max(vec![exists("title"), exists("body")], 0.0)
        );
    }

    #[test]
    fn exists_syntax() {
        assert_eq!(on_title("_exists_:status"), exists("status"));
        assert_eq!(on_title("_exists_:\"status\""), exists("status"));
        assert_eq!(
            on_title("-_exists_:status"),
            bool_q(vec![], vec![], vec![exists("status")])
        );
        assert_eq!(on_title(r"_exists_:nothing.\*"), QueryAst::MatchNone);
        assert_eq!(on_title(r"_exists_:city.\*"), on_title(r"city.\*:*"));
    }

    #[test]
    fn regexps() {
        assert_eq!(
            on_title("/Joh?n/"),
            QueryAst::Regexp {
                field: "title".into(),
                pattern: "joh?n".into(),
                case_insensitive: false,
                boost: 1.0
            }
        );
        assert_eq!(
            on_title("status:/AB.*/"),
            QueryAst::Regexp {
                field: "status".into(),
                pattern: "AB.*".into(),
                case_insensitive: false,
                boost: 1.0
            }
        );
        assert_eq!(
            on_title(r"/a\/b/"),
            QueryAst::Regexp {
                field: "title".into(),
                pattern: r"a\/b".into(),
                case_insensitive: false,
                boost: 1.0
            }
        );
    }

    // ---- ranges ----

    #[test]
    fn bracket_ranges() {
        assert_eq!(
            on_title("age:[10 TO 20]"),
            range("age", Some(("10", true)), Some(("20", true)))
        );
        assert_eq!(
            on_title("age:{10 TO 20}"),
            range("age", Some(("10", false)), Some(("20", false)))
        );
        assert_eq!(
            on_title("age:[10 TO 20}"),
            range("age", Some(("10", true)), Some(("20", false)))
        );
        assert_eq!(
            on_title("age:{10 TO 20]"),
            range("age", Some(("10", false)), Some(("20", true)))
        );
        assert_eq!(
            on_title("age:[10 TO *]"),
            range("age", Some(("10", true)), None)
        );
        assert_eq!(
            on_title("age:[* TO 20}"),
            range("age", None, Some(("20", false)))
        );
        assert_eq!(
            on_title("age:[\"*\" TO 20]"),
            range("age", None, Some(("20", true)))
        );
        assert_eq!(
            on_title("date:[\"2020-01-01 00:00\" TO now]"),
            range(
                "date",
                Some(("2020-01-01 00:00", true)),
                Some(("now", true))
            )
        );
        // Text fields normalize the bounds.
        assert_eq!(
            on_title("[A TO C]"),
            range("title", Some(("a", true)), Some(("c", true)))
        );
        assert_eq!(
            on_title("age:[1 TO 2]^2"),
            boosted(range("age", Some(("1", true)), Some(("2", true))), 2.0)
        );
    }

    #[test]
    fn comparison_ranges() {
        assert_eq!(on_title("age:>10"), range("age", Some(("10", false)), None));
        assert_eq!(on_title("age:>=10"), range("age", Some(("10", true)), None));
        assert_eq!(on_title("age:<10"), range("age", None, Some(("10", false))));
        assert_eq!(on_title("age:<=10"), range("age", None, Some(("10", true))));
        assert_eq!(
            on_title("date:>now-1d"),
            range("date", Some(("now-1d", false)), None)
        );
        // `>` only means a range after a field; the single default field counts as one.
        assert_eq!(on_title(">5"), range("title", Some(("5", false)), None));
        let q = QueryStringQuery {
            fields: vec![FieldPattern::parse("status").unwrap()],
            ..QueryStringQuery::new(">5")
        };
        assert_eq!(lower(&q), m("status", ">5"));
    }

    #[test]
    fn ranges_carry_the_time_zone_and_expand_patterns() {
        let mut q = qs("date:[2020-01-01 TO 2020-02-01]");
        q.time_zone = Some("+01:00".into());
        let QueryAst::Range(r) = lower(&q) else {
            panic!()
        };
        assert_eq!(r.time_zone.as_deref(), Some("+01:00"));
        assert_eq!(
            on_title(r"city.\*:[a TO b]"),
            dis_max(
                vec![
                    range("city.name", Some(("a", true)), Some(("b", true))),
                    range("city.zip", Some(("a", true)), Some(("b", true)))
                ],
                0.0
            )
        );
    }

    // ---- escapes ----

    #[test]
    fn escaped_special_characters_are_text() {
        assert_eq!(on_title(r"foo\:bar"), t("foo:bar"));
        assert_eq!(on_title(r"\(x\)"), t("(x)"));
        assert_eq!(on_title(r"a\ b"), t("a b"));
        assert_eq!(
            on_title(r"\+\-\=\&\&\|\|\>\<\!\{\}\[\]\^\~\?\\\/x"),
            t(r"+-=&&||><!{}[]^~?\/x")
        );
        assert_eq!(on_title(r"\u0041bc"), t("Abc"));
        assert_eq!(on_title(r#"\"quoted\""#), t("\"quoted\""));
    }

    // ---- default fields, multi-field expansion and lenient ----

    #[test]
    fn multi_field_best_fields() {
        let q = QueryStringQuery {
            fields: vec![
                FieldPattern::parse("title^2").unwrap(),
                FieldPattern::parse("body").unwrap(),
            ],
            tie_breaker: Some(0.3),
            ..QueryStringQuery::new("foo bar")
        };
        assert_eq!(
            lower(&q),
            dis_max(
                vec![
                    match_q("title", "foo bar", Operator::Or, 2.0, false),
                    m("body", "foo bar")
                ],
                0.3
            )
        );
    }

    #[test]
    fn multi_field_most_fields_is_a_sum() {
        let q = QueryStringQuery {
            fields: vec![
                FieldPattern::parse("title").unwrap(),
                FieldPattern::parse("body").unwrap(),
            ],
            kind: MultiMatchType::MostFields,
            ..QueryStringQuery::new("foo")
        };
        assert_eq!(
            lower(&q),
            bool_q(vec![], vec![m("title", "foo"), m("body", "foo")], vec![])
        );
    }

    #[test]
    fn multi_field_phrases_and_wildcards_use_dis_max() {
        let q = QueryStringQuery {
            fields: vec![
                FieldPattern::parse("title").unwrap(),
                FieldPattern::parse("city.*^2").unwrap(),
            ],
            ..QueryStringQuery::new("\"a b\" Fo*")
        };
        let expected = bool_q(
            vec![],
            vec![
                dis_max(
                    vec![
                        phrase("title", "a b", 0),
                        boosted(phrase("city.name", "a b", 0), 2.0),
                        boosted(phrase("city.zip", "a b", 0), 2.0),
                    ],
                    0.0,
                ),
                dis_max(
                    vec![
                        prefix("title", "fo"),
                        boosted(prefix("city.name", "fo"), 2.0),
                        boosted(prefix("city.zip", "Fo"), 2.0),
                    ],
                    0.0,
                ),
            ],
            vec![],
        );
        assert_eq!(lower(&q), expected);
    }

    #[test]
    fn cross_fields_becomes_multi_match() {
        let q = QueryStringQuery {
            fields: vec![
                FieldPattern::parse("title").unwrap(),
                FieldPattern::parse("body^2").unwrap(),
            ],
            kind: MultiMatchType::CrossFields,
            ..QueryStringQuery::new("john smith")
        };
        let QueryAst::MultiMatch(mm) = lower(&q) else {
            panic!()
        };
        assert_eq!(mm.kind, MultiMatchType::CrossFields);
        assert_eq!(mm.query, Value::String("john smith".into()));
        assert_eq!(
            mm.fields,
            vec![
                FieldPattern {
                    pattern: "title".into(),
                    boost: 1.0
                },
                FieldPattern {
                    pattern: "body".into(),
                    boost: 2.0
                }
            ]
        );
    }

    #[test]
    fn index_default_fields_are_used_when_nothing_is_given() {
        let resolver = FakeResolver::with_defaults(&["title", "body^3"]);
        let ast = lower_query_string(&QueryStringQuery::new("foo"), &resolver).unwrap();
        assert_eq!(
            ast,
            dis_max(
                vec![
                    m("title", "foo"),
                    match_q("body", "foo", Operator::Or, 3.0, false)
                ],
                0.0
            )
        );
        // `*` among the defaults searches every field, leniently.
        let resolver = FakeResolver::with_defaults(&["title^5", "*"]);
        let QueryAst::DisMax { queries, .. } =
            lower_query_string(&QueryStringQuery::new("foo"), &resolver).unwrap()
        else {
            panic!()
        };
        assert_eq!(queries.len(), 7);
        assert_eq!(queries[0], match_q("title", "foo", Operator::Or, 1.0, true));
    }

    #[test]
    fn all_fields_are_lenient_by_default() {
        let QueryAst::DisMax { queries, .. } = lower(&QueryStringQuery::new("foo")) else {
            panic!()
        };
        assert!(queries
            .iter()
            .all(|q| matches!(q, QueryAst::Match(m) if m.lenient)));
        let mut q = QueryStringQuery::new("foo");
        q.lenient = Some(false);
        let QueryAst::DisMax { queries, .. } = lower(&q) else {
            panic!()
        };
        assert!(queries
            .iter()
            .all(|q| matches!(q, QueryAst::Match(m) if !m.lenient)));
        let q = QueryStringQuery {
            fields: vec![FieldPattern::parse("*").unwrap()],
            ..QueryStringQuery::new("age:foo")
        };
        assert_eq!(lower(&q), match_q("age", "foo", Operator::Or, 1.0, true));
        // A named field or pattern does not turn leniency on.
        assert_eq!(on_title("age:foo"), m("age", "foo"));
        let q = QueryStringQuery {
            lenient: Some(true),
            ..qs("age:foo")
        };
        assert_eq!(lower(&q), match_q("age", "foo", Operator::Or, 1.0, true));
    }

    #[test]
    fn fields_take_precedence_over_default_field() {
        let q = QueryStringQuery {
            fields: vec![FieldPattern::parse("body").unwrap()],
            ..qs("foo")
        };
        assert_eq!(lower(&q), m("body", "foo"));
    }

    #[test]
    fn analyzer_is_passed_on() {
        let q = QueryStringQuery {
            analyzer: Some("whitespace".into()),
            ..qs("foo")
        };
        let QueryAst::Match(mq) = lower(&q) else {
            panic!()
        };
        assert_eq!(mq.analyzer.as_deref(), Some("whitespace"));
    }

    // ---- minimum_should_match ----

    #[test]
    fn minimum_should_match_goes_on_the_top_boolean() {
        let msm = Some(MinimumShouldMatch::Count(2));
        let q = QueryStringQuery {
            minimum_should_match: msm.clone(),
            ..qs("a OR b OR c")
        };
        let QueryAst::Bool(b) = lower(&q) else {
            panic!()
        };
        assert_eq!(b.minimum_should_match, msm);
        // A run of words is one analyzed boolean query in OpenSearch.
        let q = QueryStringQuery {
            minimum_should_match: msm.clone(),
            ..qs("a b c")
        };
        let QueryAst::Match(mq) = lower(&q) else {
            panic!()
        };
        assert_eq!(mq.minimum_should_match, msm);
        // Nested booleans are left alone.
        let q = QueryStringQuery {
            minimum_should_match: msm.clone(),
            ..qs("x AND (a OR b)")
        };
        let QueryAst::Bool(b) = lower(&q) else {
            panic!()
        };
        assert_eq!(b.minimum_should_match, msm);
        let QueryAst::Bool(inner) = &b.must[1] else {
            panic!()
        };
        assert_eq!(inner.minimum_should_match, None);
        let q = QueryStringQuery {
            minimum_should_match: msm,
            ..qs(r"city.\*:x")
        };
        assert!(matches!(lower(&q), QueryAst::DisMax { .. }));
    }

    // ---- errors ----

    #[test]
    fn syntax_errors_are_query_shard_exceptions() {
        for query in [
            "foo AND",
            "foo OR",
            "(foo",
            "foo)",
            "((foo)",
            "\"foo",
            "foo\"",
            "title:",
            "a:b:c",
            "NOT",
            "!",
            "+",
            "-",
            "--a",
            "a AND OR b",
            "[1 TO 2",
            "[1 2]",
            "{1 TO 2",
            "a^",
            "a^x",
            "(a)~2",
            "()",
            "a/b",
            "/abc",
            "a\\",
            r"\u00",
            r"\u00zz",
            "\u{3000}",
        ] {
            assert_parse_error(query);
        }
    }

    #[test]
    fn error_message_matches_opensearch_shape() {
        let e = fails(&qs("foo AND"));
        let cause = e.cause().unwrap().reason().to_string();
        assert!(
            cause.starts_with("Cannot parse 'foo AND': Encountered \"<EOF>\" at line 1, column 7."),
            "{cause}"
        );
        let body = e.to_body();
        assert_eq!(body["error"]["caused_by"]["type"], "parse_exception");
    }

    #[test]
    fn deep_nesting_fails_cleanly() {
        let deep = format!("{}a{}", "(".repeat(10_000), ")".repeat(10_000));
        assert_parse_error(&deep);
    }
}
