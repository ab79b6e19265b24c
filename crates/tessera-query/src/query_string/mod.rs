//! `query_string` and `simple_query_string`: from query text to a [`QueryAst`].
//!
//! Both queries carry a small query language inside a JSON string, and what the text means
//! depends on the index: which fields `*` or `title.*` expand to, which fields are searched by
//! default, how a term is normalized for a wildcard. This module therefore parses the text and
//! *lowers* it into the ordinary AST variants (`Match`, `DisMax`, `Bool`, `Wildcard`, `Range`,
//! ...) that name only concrete fields, once a [`FieldResolver`] can answer those questions. The
//! compiler never sees query text.
//!
//! The goal is to behave like OpenSearch 2.x, which uses Lucene's classic `QueryParser` (with
//! OpenSearch's `QueryStringQueryParser` on top) for `query_string` and Lucene's
//! `SimpleQueryParser` (with OpenSearch's `SimpleQueryStringQueryParser`) for
//! `simple_query_string`. Where the two engines differ in structure but not in results (for
//! example OpenSearch's `dis_max` with `tie_breaker: 1.0` versus a `bool` of `should` clauses)
//! the choice is documented at the place it is made.
//!
//! * `lexer.rs` / `parser.rs`: the classic syntax, token by token and production by production.
//! * `lower.rs`: the classic parser's clause combination (`addClause`) and OpenSearch's per-field
//!   query construction.
//! * `simple.rs`: the simple syntax, which never fails.

mod lexer;
mod lower;
mod parser;
mod simple;

use tessera_common::Error;

use crate::ast::{
    BoolQuery, FieldPattern, MinimumShouldMatch, QueryAst, QueryStringQuery, SimpleQueryStringQuery,
};

/// What the lowering needs to know about the index's fields.
pub trait FieldResolver {
    /// Concrete field names matching `pattern`: an exact name, or a wildcard pattern (`*`,
    /// `title.*`, `*_name`). For wildcard patterns the resolver already keeps only fields a
    /// query_string can search.
    fn expand(&self, pattern: &str) -> Vec<String>;
    /// `index.query.default_field` (patterns with optional boosts, e.g. `["message", "title^2"]`;
    /// OpenSearch's default is `["*"]`).
    fn default_fields(&self) -> Vec<FieldPattern>;
    /// The field's search-time normalization of a single term for wildcard/prefix/fuzzy/regexp/
    /// range terms: lowercase for text fields (standard analyzer), identity for keyword/numeric/
    /// date fields.
    fn normalize(&self, field: &str, term: &str) -> String;
}

/// Parses `q.query` with the classic Lucene/OpenSearch query_string syntax and lowers it to a
/// QueryAst that names only concrete fields.
pub fn lower_query_string(
    q: &QueryStringQuery,
    resolver: &dyn FieldResolver,
) -> Result<QueryAst, Error> {
    lower::lower(q, resolver)
}

/// Same for simple_query_string (never fails on syntax: it degrades gracefully like Lucene's
/// SimpleQueryParser).
pub fn lower_simple_query_string(
    q: &SimpleQueryStringQuery,
    resolver: &dyn FieldResolver,
) -> Result<QueryAst, Error> {
    Ok(simple::lower(q, resolver))
}

/// The error OpenSearch returns for text the classic parser rejects.
pub(crate) fn parse_failure(query: &str, detail: &str) -> Error {
    Error::new(
        "query_shard_exception",
        400,
        format!("Failed to parse query [{query}]"),
    )
    .caused_by(Error::new(
        "parse_exception",
        400,
        format!("Cannot parse '{query}': {detail}"),
    ))
}

/// A parse failure with the error that caused it (Lucene's `TooManyClauses` under the classic
/// parser's "too many boolean clauses").
pub(crate) fn parse_failure_caused_by(query: &str, detail: &str, cause: Error) -> Error {
    Error::new(
        "query_shard_exception",
        400,
        format!("Failed to parse query [{query}]"),
    )
    .caused_by(
        Error::new(
            "parse_exception",
            400,
            format!("Cannot parse '{query}': {detail}"),
        )
        .caused_by(cause),
    )
}

/// True for the pattern that means "all fields".
pub(crate) fn is_match_all_pattern(pattern: &str) -> bool {
    pattern == "*"
}

/// True for field patterns that need expanding (OpenSearch's `Regex.isSimpleMatchPattern`).
pub(crate) fn is_simple_match_pattern(pattern: &str) -> bool {
    pattern.contains('*')
}

/// Concrete fields for one name or pattern. An exact name the resolver does not know is kept as
/// it is (OpenSearch keeps unmapped names too; the compiler turns queries on them into
/// match-none), a pattern that matches nothing yields nothing.
pub(crate) fn expand_field(resolver: &dyn FieldResolver, pattern: &str) -> Vec<String> {
    let expanded = resolver.expand(pattern);
    if expanded.is_empty() && !is_simple_match_pattern(pattern) {
        return vec![pattern.to_string()];
    }
    expanded
}

/// Resolves `fields`-style patterns with boosts into concrete fields, in first-seen order. A
/// field reached by several patterns gets the product of their boosts, as in OpenSearch's
/// `QueryParserHelper.resolveMappingFields`.
pub(crate) fn resolve_weighted(
    resolver: &dyn FieldResolver,
    patterns: &[FieldPattern],
) -> Vec<(String, f32)> {
    let mut resolved: Vec<(String, f32)> = Vec::new();
    for pattern in patterns {
        for name in expand_field(resolver, &pattern.pattern) {
            match resolved.iter_mut().find(|(existing, _)| *existing == name) {
                Some((_, boost)) => *boost *= pattern.boost,
                None => resolved.push((name, pattern.boost)),
            }
        }
    }
    resolved
}

/// Text the standard analyzer turns into no tokens at all (only ASCII punctuation and spaces,
/// like the `-` of `a - b`). Lucene drops such clauses instead of letting them match nothing;
/// see the divergence note in `lower.rs`.
pub(crate) fn analyzes_to_nothing(text: &str) -> bool {
    text.chars()
        .all(|c| c.is_ascii_punctuation() || c.is_whitespace())
}

/// Multiplies the boost of the outermost node (a no-op for `MatchNone`, which has none).
///
/// Only the variants this module produces are named, so that new AST variants need no change
/// here; any other node is wrapped in a one-clause `bool`, which scales its score the same way.
pub(crate) fn multiply_boost(mut query: QueryAst, factor: f32) -> QueryAst {
    if factor == 1.0 {
        return query;
    }
    match &mut query {
        QueryAst::MatchNone => {}
        QueryAst::MatchAll { boost }
        | QueryAst::Exists { boost, .. }
        | QueryAst::Prefix { boost, .. }
        | QueryAst::Wildcard { boost, .. }
        | QueryAst::Regexp { boost, .. }
        | QueryAst::Fuzzy { boost, .. }
        | QueryAst::MatchPhrase { boost, .. }
        | QueryAst::MatchPhrasePrefix { boost, .. }
        | QueryAst::ConstantScore { boost, .. }
        | QueryAst::DisMax { boost, .. } => *boost *= factor,
        QueryAst::Range(range) => range.boost *= factor,
        QueryAst::Match(m) => m.boost *= factor,
        QueryAst::MultiMatch(m) => m.boost *= factor,
        QueryAst::Bool(b) => b.boost *= factor,
        _ => {
            return QueryAst::Bool(BoolQuery {
                must: vec![query],
                boost: factor,
                ..Default::default()
            })
        }
    }
    query
}

/// Applies `minimum_should_match` the way OpenSearch's `Queries.maybeApplyMinimumShouldMatch`
/// does: only a boolean query at the top takes it. A single `Match` stands for the boolean query
/// its analysis produces, so it takes it too.
pub(crate) fn apply_minimum_should_match(
    mut query: QueryAst,
    msm: &Option<MinimumShouldMatch>,
) -> QueryAst {
    let Some(msm) = msm else {
        return query;
    };
    match &mut query {
        QueryAst::Bool(b) => b.minimum_should_match = Some(msm.clone()),
        QueryAst::Match(m) => m.minimum_should_match = Some(msm.clone()),
        _ => {}
    }
    query
}

#[cfg(test)]
pub(crate) mod test_support {
    //! A fake index for the tests: title/body (text), status (keyword), age (long),
    //! date (date), city.name (text), city.zip (keyword).

    use super::FieldResolver;
    use crate::ast::FieldPattern;

    pub(crate) struct FakeResolver {
        pub defaults: Vec<FieldPattern>,
    }

    pub(crate) const FIELDS: &[(&str, bool)] = &[
        ("title", true),
        ("body", true),
        ("status", false),
        ("age", false),
        ("date", false),
        ("city.name", true),
        ("city.zip", false),
    ];

    impl FakeResolver {
        pub(crate) fn new() -> Self {
            FakeResolver {
                defaults: vec![FieldPattern {
                    pattern: "*".into(),
                    boost: 1.0,
                }],
            }
        }

        pub(crate) fn with_defaults(specs: &[&str]) -> Self {
            FakeResolver {
                defaults: specs
                    .iter()
                    .map(|s| FieldPattern::parse(s).unwrap())
                    .collect(),
            }
        }
    }

    /// `*` matches any run of characters.
    pub(crate) fn glob(pattern: &str, name: &str) -> bool {
        match pattern.split_once('*') {
            None => pattern == name,
            Some((head, tail)) => {
                let Some(rest) = name.strip_prefix(head) else {
                    return false;
                };
                (0..=rest.len()).any(|i| rest.is_char_boundary(i) && glob(tail, &rest[i..]))
            }
        }
    }

    impl FieldResolver for FakeResolver {
        fn expand(&self, pattern: &str) -> Vec<String> {
            FIELDS
                .iter()
                .filter(|(name, _)| glob(pattern, name))
                .map(|(name, _)| name.to_string())
                .collect()
        }

        fn default_fields(&self) -> Vec<FieldPattern> {
            self.defaults.clone()
        }

        fn normalize(&self, field: &str, term: &str) -> String {
            let text = FIELDS.iter().any(|(name, text)| *name == field && *text);
            if text {
                term.to_lowercase()
            } else {
                term.to_string()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;
    use crate::ast::{BoolQuery, MatchQuery};

    #[test]
    fn weighted_resolution_multiplies_repeated_fields() {
        let r = FakeResolver::new();
        let patterns: Vec<FieldPattern> = ["title^2", "city.*", "title^3", "missing"]
            .iter()
            .map(|s| FieldPattern::parse(s).unwrap())
            .collect();
        assert_eq!(
            resolve_weighted(&r, &patterns),
            vec![
                ("title".to_string(), 6.0),
                ("city.name".to_string(), 1.0),
                ("city.zip".to_string(), 1.0),
                ("missing".to_string(), 1.0),
            ]
        );
        let none = [FieldPattern {
            pattern: "nothing.*".into(),
            boost: 1.0,
        }];
        assert!(resolve_weighted(&r, &none).is_empty());
    }

    #[test]
    fn glob_helper() {
        assert!(glob("*", "a.b"));
        assert!(glob("city.*", "city.zip"));
        assert!(glob("*_name", "first_name"));
        assert!(!glob("city.*", "title"));
    }

    #[test]
    fn boost_and_msm_helpers() {
        let m = QueryAst::Match(MatchQuery::new("title", "a"));
        let QueryAst::Match(boosted) = multiply_boost(m, 2.0) else {
            panic!()
        };
        assert_eq!(boosted.boost, 2.0);
        assert_eq!(
            multiply_boost(QueryAst::MatchNone, 3.0),
            QueryAst::MatchNone
        );
        // Variants this module never builds are wrapped rather than edited.
        let ids = QueryAst::Ids {
            values: vec!["1".into()],
            boost: 1.0,
        };
        assert_eq!(
            multiply_boost(ids.clone(), 2.0),
            QueryAst::Bool(BoolQuery {
                must: vec![ids],
                boost: 2.0,
                ..Default::default()
            })
        );
        let b = QueryAst::Bool(BoolQuery {
            boost: 1.0,
            ..Default::default()
        });
        let QueryAst::Bool(b) = apply_minimum_should_match(b, &Some(MinimumShouldMatch::Count(2)))
        else {
            panic!()
        };
        assert_eq!(b.minimum_should_match, Some(MinimumShouldMatch::Count(2)));
        let d = QueryAst::DisMax {
            queries: vec![],
            tie_breaker: 0.0,
            boost: 1.0,
        };
        assert_eq!(
            apply_minimum_should_match(d.clone(), &Some(MinimumShouldMatch::Count(2))),
            d
        );
    }

    #[test]
    fn punctuation_only_text_analyzes_to_nothing() {
        assert!(analyzes_to_nothing("-"));
        assert!(analyzes_to_nothing("&& |"));
        assert!(analyzes_to_nothing(""));
        assert!(!analyzes_to_nothing("a-"));
        assert!(!analyzes_to_nothing("é"));
        assert!(!analyzes_to_nothing("😀"));
    }

    /// A small deterministic generator (no external crates needed for fuzzing).
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 33) as usize
        }

        fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
            &items[self.next() % items.len()]
        }
    }

    const PIECES: &[&str] = &[
        "a", "b", "Foo", " ", " ", " ", "AND", "OR", "NOT", "&&", "||", "!", "+", "-", "(", ")",
        "[", "]", "{", "}", "\"", "~", "~2", "~0.5", "^", "^2", "*", "?", ":", "\\", "/", "TO",
        "1", "0.5", ".", ">", "<", "=", "_exists_", "title", "age", "city.*", "city\\.*", "é",
        "漢", "\u{3000}", "\t", "\\u00", "\\u0041", "|", "&", "*:*", "status:", "\n", "😀", "'",
    ];

    const CHARS: &[char] = &[
        'a', 'Z', '0', '9', ' ', '\t', '+', '-', '!', '(', ')', ':', '^', '[', ']', '"', '{', '}',
        '~', '*', '?', '\\', '/', '&', '|', '<', '>', '=', '.', ',', 'é', '\u{3000}', '\u{0}', 'T',
        'O', 'N',
    ];

    fn check(text: &str, rng: &mut Lcg) {
        let resolver = FakeResolver::new();
        let mut q = QueryStringQuery::new(text);
        match rng.next() % 4 {
            0 => q.default_field = Some("title".into()),
            1 => {
                q.fields = vec![
                    FieldPattern::parse("title^2").unwrap(),
                    FieldPattern::parse("city.*").unwrap(),
                ]
            }
            2 => q.default_field = Some("*".into()),
            _ => {}
        }
        if rng.next().is_multiple_of(2) {
            q.default_operator = crate::ast::Operator::And;
        }
        q.allow_leading_wildcard = !rng.next().is_multiple_of(3);
        q.kind = *rng.pick(&[
            crate::ast::MultiMatchType::BestFields,
            crate::ast::MultiMatchType::MostFields,
            crate::ast::MultiMatchType::Phrase,
            crate::ast::MultiMatchType::CrossFields,
        ]);
        q.minimum_should_match = Some(MinimumShouldMatch::Count(1));
        match lower_query_string(&q, &resolver) {
            Ok(ast) => {
                serde_json::to_string(&ast).unwrap();
            }
            Err(e) => assert_eq!(e.status(), 400, "{text:?}: {e}"),
        }
        let mut sq = SimpleQueryStringQuery::new(text);
        sq.flags = crate::ast::SimpleQueryFlags(if rng.next().is_multiple_of(2) {
            crate::ast::SimpleQueryFlags::ALL
        } else {
            (rng.next() as u32) & crate::ast::SimpleQueryFlags::ALL
        });
        if rng.next().is_multiple_of(2) {
            sq.fields = vec![FieldPattern::parse("title").unwrap()];
        }
        let ast =
            lower_simple_query_string(&sq, &resolver).expect("simple_query_string never fails");
        serde_json::to_string(&ast).unwrap();
    }

    #[test]
    fn random_inputs_never_panic() {
        // `QS_FUZZ_ROUNDS` raises the number of rounds for a longer local run.
        let rounds = std::env::var("QS_FUZZ_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(4000);
        let mut rng = Lcg(0x5eed);
        for _ in 0..rounds {
            let len = rng.next() % 14;
            let text: String = (0..len).map(|_| *rng.pick(PIECES)).collect();
            check(&text, &mut rng);
        }
        for _ in 0..rounds {
            let len = rng.next() % 24;
            let text: String = (0..len).map(|_| *rng.pick(CHARS)).collect();
            check(&text, &mut rng);
        }
    }

    #[test]
    fn long_inputs_stay_linear() {
        let resolver = FakeResolver::new();
        let q = |text: String| QueryStringQuery {
            default_field: Some("title".into()),
            ..QueryStringQuery::new(text)
        };
        let sq = |text: String| SimpleQueryStringQuery::new(text);
        for text in [
            "(".repeat(100_000),
            ")".repeat(100_000),
            "\"".repeat(100_001),
            "a ".repeat(50_000),
            "a AND ".repeat(20_000) + "a",
            "-a ".repeat(20_000),
            "\\(".repeat(50_000),
            "[".repeat(50_000),
            "\t".repeat(50_000),
        ] {
            let _ = lower_query_string(&q(text.clone()), &resolver);
            lower_simple_query_string(&sq(text), &resolver).unwrap();
        }
    }
}
