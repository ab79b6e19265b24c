//! `simple_query_string`: Lucene's `SimpleQueryParser` with OpenSearch's field handling.
//!
//! The simple syntax is meant for text typed by end users, so it never rejects input: an
//! unbalanced quote or parenthesis is read as an ordinary character, an operator with nothing
//! to apply to is ignored, and a disabled operator (see `flags`) is plain text. That forgiving
//! behaviour is defined by the exact scanning rules of Lucene's state machine (for example
//! `"a b"~2+c` swallows the `+`, and `a | b + c` means `(a | b) + c` because a change of
//! operator wraps everything so far), so this is a faithful re-implementation of that scanner
//! rather than a grammar.
//!
//! Each term, phrase, prefix or fuzzy term becomes one query per field. OpenSearch's
//! `SimpleQueryStringQueryParser` joins those with `dis_max` (`tie_breaker` 1.0 for terms,
//! prefixes and fuzzy terms, 0.0 for phrases), not with Lucene's `bool`; this follows OpenSearch.
//! `analyze_wildcard` is not applied (a prefix term is only normalized), and text made only of
//! ASCII punctuation is treated as analyzing to nothing, as in `lower.rs`.

use super::{
    analyzes_to_nothing, apply_minimum_should_match, is_match_all_pattern, multiply_boost,
    resolve_weighted, FieldResolver,
};
use crate::ast::{
    BoolQuery, Fuzziness, MatchQuery, Operator, QueryAst, SimpleQueryFlags, SimpleQueryStringQuery,
    ZeroTermsQuery,
};

/// Deepest nesting of parentheses treated as sub-queries; deeper ones are ignored as
/// unbalanced parentheses are, so that no input can exhaust the stack.
const MAX_DEPTH: usize = 256;

/// Largest edit distance a fuzzy term may ask for.
const MAX_EDITS: i32 = 2;

pub(super) fn lower(q: &SimpleQueryStringQuery, resolver: &dyn FieldResolver) -> QueryAst {
    let (patterns, all_fields) = if q.fields.is_empty() {
        let defaults = resolver.default_fields();
        let all = defaults.iter().any(|p| is_match_all_pattern(&p.pattern));
        (defaults, all)
    } else {
        let all = q.fields.iter().any(|p| is_match_all_pattern(&p.pattern));
        (q.fields.clone(), all)
    };
    let data: Vec<char> = q.query.chars().collect();
    let lowerer = SimpleLowerer {
        q,
        resolver,
        fields: resolve_weighted(resolver, &patterns),
        lenient: q.lenient.unwrap_or(all_fields),
        flags: q.flags,
        closing: closing_parens(&data, q.flags.has(SimpleQueryFlags::ESCAPE)),
    };
    // Java's `String.trim()`, which only strips characters up to U+0020.
    let trimmed = q.query.trim_matches(|c: char| c <= ' ');
    let top = if trimmed == "*" {
        QueryAst::match_all()
    } else {
        let mut state = State::new(0, data.len());
        lowerer.parse_sub_query(&data, &mut state, 0);
        state
            .top
            .map(Tree::into_query)
            .unwrap_or(QueryAst::MatchNone)
    };
    let top = apply_minimum_should_match(top, &q.minimum_should_match);
    multiply_boost(top, q.boost)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Occur {
    Must,
    Should,
}

/// The query built so far at one level: a single branch, or a boolean query this level created.
enum Tree {
    Leaf(Box<QueryAst>),
    Bool(Vec<(Occur, QueryAst)>),
}

impl Tree {
    fn into_query(self) -> QueryAst {
        match self {
            Tree::Leaf(query) => *query,
            Tree::Bool(clauses) => {
                let mut b = BoolQuery {
                    boost: 1.0,
                    ..Default::default()
                };
                for (occur, query) in clauses {
                    match occur {
                        Occur::Must => b.must.push(query),
                        Occur::Should => b.should.push(query),
                    }
                }
                QueryAst::Bool(b)
            }
        }
    }
}

struct State {
    index: usize,
    end: usize,
    current_operation: Option<Occur>,
    previous_operation: Option<Occur>,
    not: u32,
    top: Option<Tree>,
}

impl State {
    fn new(index: usize, end: usize) -> State {
        State {
            index,
            end,
            current_operation: None,
            previous_operation: None,
            not: 0,
            top: None,
        }
    }
}

struct SimpleLowerer<'a> {
    q: &'a SimpleQueryStringQuery,
    resolver: &'a dyn FieldResolver,
    fields: Vec<(String, f32)>,
    lenient: bool,
    flags: SimpleQueryFlags,
    /// For each `(`, the index of the `)` that closes it (`NO_MATCH` if none).
    closing: Vec<usize>,
}

const NO_MATCH: usize = usize::MAX;

/// Matches parentheses the way Lucene's sub-query scan does: unescaped `(` and `)` nest,
/// quotes are not special, and a backslash (with the ESCAPE flag) hides the next character.
fn closing_parens(data: &[char], escapes: bool) -> Vec<usize> {
    let mut closing = vec![NO_MATCH; data.len()];
    let mut open: Vec<usize> = Vec::new();
    let mut escaped = false;
    for (index, &c) in data.iter().enumerate() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' if escapes => escaped = true,
            '(' => open.push(index),
            ')' => {
                if let Some(opening) = open.pop() {
                    closing[opening] = index;
                }
            }
            _ => {}
        }
    }
    closing
}

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

impl SimpleLowerer<'_> {
    fn on(&self, flag: u32) -> bool {
        self.flags.has(flag)
    }

    fn default_occur(&self) -> Occur {
        match self.q.default_operator {
            Operator::And => Occur::Must,
            Operator::Or => Occur::Should,
        }
    }

    fn parse_sub_query(&self, data: &[char], state: &mut State, depth: usize) {
        while state.index < state.end {
            let c = data[state.index];
            if c == '(' && self.on(SimpleQueryFlags::PRECEDENCE) {
                self.consume_sub_query(data, state, depth);
            } else if c == ')' && self.on(SimpleQueryFlags::PRECEDENCE) {
                // An extraneous closing parenthesis is ignored.
                state.index += 1;
            } else if c == '"' && self.on(SimpleQueryFlags::PHRASE) {
                self.consume_phrase(data, state);
            } else if c == '+' && self.on(SimpleQueryFlags::AND) {
                // Ignored when an operator is already pending or nothing precedes it.
                if state.current_operation.is_none() && state.top.is_some() {
                    state.current_operation = Some(Occur::Must);
                }
                state.index += 1;
            } else if c == '|' && self.on(SimpleQueryFlags::OR) {
                if state.current_operation.is_none() && state.top.is_some() {
                    state.current_operation = Some(Occur::Should);
                }
                state.index += 1;
            } else if c == '-' && self.on(SimpleQueryFlags::NOT) {
                // Negations accumulate (two cancel out) and must touch what they negate.
                state.not += 1;
                state.index += 1;
                continue;
            } else if is_space(c) && self.on(SimpleQueryFlags::WHITESPACE) {
                state.index += 1;
            } else {
                self.consume_token(data, state);
            }
            state.not = 0;
        }
    }

    fn consume_sub_query(&self, data: &[char], state: &mut State, depth: usize) {
        let open = state.index;
        state.index += 1;
        let start = state.index;
        // Lucene scans forward for the parenthesis that closes this one; the matches are
        // computed once up front (`closing_parens`) so that many unclosed parentheses do not
        // make the scan quadratic. A match at or past the end of this level does not count.
        let close = self.closing.get(open).copied().unwrap_or(NO_MATCH);
        if depth >= MAX_DEPTH || close >= state.end {
            // Never closed (or too deep): the parenthesis is ignored and parsing resumes after it.
            return;
        }
        if close == start {
            // `()`: the pending operator was meant for it, so it is dropped.
            state.current_operation = None;
            state.index = close + 1;
            return;
        }
        let mut sub = State::new(start, close);
        self.parse_sub_query(data, &mut sub, depth + 1);
        let branch = sub.top.map(Tree::into_query);
        self.build_query_tree(state, branch);
        state.index = close + 1;
    }

    fn consume_phrase(&self, data: &[char], state: &mut State) {
        state.index += 1;
        let start = state.index;
        let mut text = String::new();
        let mut escaped = false;
        let mut has_slop = false;
        while state.index < state.end {
            let c = data[state.index];
            if !escaped {
                if c == '\\' && self.on(SimpleQueryFlags::ESCAPE) {
                    escaped = true;
                    state.index += 1;
                    continue;
                } else if c == '"' {
                    if state.end > state.index + 1
                        && data[state.index + 1] == '~'
                        && self.on(SimpleQueryFlags::NEAR)
                    {
                        state.index += 1;
                        if state.end > state.index + 1 {
                            has_slop = true;
                        }
                    }
                    break;
                }
            }
            escaped = false;
            text.push(c);
            state.index += 1;
        }
        if state.index >= state.end {
            // Never closed: the quote is ignored and parsing resumes after it.
            state.index = start;
        } else if state.index == start {
            // `""`: the pending operator was meant for it, so it is dropped.
            state.current_operation = None;
            state.index += 1;
        } else {
            let slop = if has_slop {
                self.parse_fuzziness(data, state)
            } else {
                0
            };
            let branch = self.phrase_query(&text, slop);
            self.build_query_tree(state, branch);
            // Skips the character that ended the slop (or the `"`/`~`), as Lucene does.
            state.index += 1;
        }
    }

    fn consume_token(&self, data: &[char], state: &mut State) {
        let mut text: Vec<char> = Vec::new();
        let mut escaped = false;
        let mut prefix = false;
        let mut fuzzy = false;
        while state.index < state.end {
            let c = data[state.index];
            if !escaped {
                if c == '\\' && self.on(SimpleQueryFlags::ESCAPE) {
                    escaped = true;
                    prefix = false;
                    state.index += 1;
                    continue;
                } else if self.token_finished(c) {
                    break;
                } else if !text.is_empty() && c == '~' && self.on(SimpleQueryFlags::FUZZY) {
                    fuzzy = true;
                    break;
                }
                // A trailing unescaped `*` after at least one character asks for a prefix.
                prefix = !text.is_empty() && c == '*' && self.on(SimpleQueryFlags::PREFIX);
            }
            escaped = false;
            text.push(c);
            state.index += 1;
        }
        if text.is_empty() {
            return;
        }
        let branch = if fuzzy {
            let edits = self.parse_fuzziness(data, state).min(MAX_EDITS);
            let token: String = text.iter().collect();
            if edits == 0 {
                self.default_query(&token)
            } else {
                self.fuzzy_query(&token, edits)
            }
        } else if prefix {
            let token: String = text[..text.len() - 1].iter().collect();
            self.prefix_query(&token)
        } else {
            let token: String = text.iter().collect();
            self.default_query(&token)
        };
        self.build_query_tree(state, branch);
    }

    /// Adds a finished term, phrase or sub-query to the tree of this level.
    fn build_query_tree(&self, state: &mut State, branch: Option<QueryAst>) {
        let Some(mut branch) = branch else {
            return;
        };
        if state.not % 2 == 1 {
            branch = QueryAst::Bool(BoolQuery {
                must_not: vec![branch],
                should: vec![QueryAst::match_all()],
                boost: 1.0,
                ..Default::default()
            });
        }
        state.top = Some(match state.top.take() {
            None => Tree::Leaf(Box::new(branch)),
            Some(top) => {
                let operation = state
                    .current_operation
                    .unwrap_or_else(|| self.default_occur());
                // A change of operator evaluates everything so far first: it becomes one
                // clause of a new boolean query with the new operator.
                let mut clauses = match top {
                    Tree::Bool(clauses) if state.previous_operation == Some(operation) => clauses,
                    other => vec![(operation, other.into_query())],
                };
                clauses.push((operation, branch));
                state.previous_operation = Some(operation);
                Tree::Bool(clauses)
            }
        });
        state.current_operation = None;
    }

    /// The number after `~`: empty means 2, unparsable means 0, negative is 0.
    fn parse_fuzziness(&self, data: &[char], state: &mut State) -> i32 {
        if state.index >= state.end || data[state.index] != '~' {
            return 0;
        }
        let mut digits = String::new();
        while state.index < state.end {
            state.index += 1;
            if state.index < state.end {
                let c = data[state.index];
                if self.token_finished(c) {
                    break;
                }
                digits.push(c);
            }
        }
        let value = if digits.is_empty() {
            2
        } else {
            digits.parse::<i32>().unwrap_or(0)
        };
        value.max(0)
    }

    fn token_finished(&self, c: char) -> bool {
        (c == '"' && self.on(SimpleQueryFlags::PHRASE))
            || (c == '|' && self.on(SimpleQueryFlags::OR))
            || (c == '+' && self.on(SimpleQueryFlags::AND))
            || ((c == '(' || c == ')') && self.on(SimpleQueryFlags::PRECEDENCE))
            || (is_space(c) && self.on(SimpleQueryFlags::WHITESPACE))
    }

    /// One query per field joined by `dis_max`; nothing for no fields' worth of queries.
    fn per_field(&self, tie_breaker: f32, build: impl Fn(&str, f32) -> QueryAst) -> QueryAst {
        let mut queries: Vec<QueryAst> = self
            .fields
            .iter()
            .map(|(name, boost)| build(name, *boost))
            .collect();
        match queries.len() {
            0 => QueryAst::MatchNone,
            1 => queries.pop().unwrap_or(QueryAst::MatchNone),
            _ => QueryAst::DisMax {
                queries,
                tie_breaker,
                boost: 1.0,
            },
        }
    }

    /// A plain term, analyzed per field (OpenSearch: `most_fields`).
    fn default_query(&self, text: &str) -> Option<QueryAst> {
        if analyzes_to_nothing(text) {
            return None;
        }
        Some(self.per_field(1.0, |field, boost| {
            QueryAst::Match(MatchQuery {
                operator: self.q.default_operator,
                analyzer: self.q.analyzer.clone(),
                lenient: self.lenient,
                boost,
                ..MatchQuery::new(field, text)
            })
        }))
    }

    fn fuzzy_query(&self, text: &str, edits: i32) -> Option<QueryAst> {
        let edits = u8::try_from(edits.clamp(0, MAX_EDITS)).unwrap_or(2);
        Some(self.per_field(1.0, |field, boost| QueryAst::Fuzzy {
            field: field.to_string(),
            value: self.resolver.normalize(field, text),
            fuzziness: Fuzziness::Edits(edits),
            prefix_length: self.q.fuzzy_prefix_length,
            transpositions: self.q.fuzzy_transpositions,
            max_expansions: self.q.fuzzy_max_expansions,
            boost,
        }))
    }

    fn prefix_query(&self, text: &str) -> Option<QueryAst> {
        Some(self.per_field(1.0, |field, boost| QueryAst::Prefix {
            field: field.to_string(),
            value: self.resolver.normalize(field, text),
            case_insensitive: false,
            boost,
        }))
    }

    fn phrase_query(&self, text: &str, slop: i32) -> Option<QueryAst> {
        if analyzes_to_nothing(text) {
            return None;
        }
        let slop = u32::try_from(slop).unwrap_or(0);
        Some(self.per_field(0.0, |field, boost| QueryAst::MatchPhrase {
            field: field.to_string(),
            query: text.to_string(),
            slop,
            analyzer: self.q.analyzer.clone(),
            zero_terms_query: ZeroTermsQuery::None,
            boost,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::lower_simple_query_string;
    use super::super::test_support::FakeResolver;
    use crate::ast::*;

    fn sq(query: &str) -> SimpleQueryStringQuery {
        SimpleQueryStringQuery {
            fields: vec![FieldPattern::parse("title").unwrap()],
            ..SimpleQueryStringQuery::new(query)
        }
    }

    fn lower(q: &SimpleQueryStringQuery) -> QueryAst {
        lower_simple_query_string(q, &FakeResolver::new()).unwrap()
    }

    fn on_title(query: &str) -> QueryAst {
        lower(&sq(query))
    }

    fn with_flags(query: &str, flags: u32) -> QueryAst {
        lower(&SimpleQueryStringQuery {
            flags: SimpleQueryFlags(flags),
            ..sq(query)
        })
    }

    fn m_op(field: &str, text: &str, operator: Operator) -> QueryAst {
        QueryAst::Match(MatchQuery {
            operator,
            ..MatchQuery::new(field, text)
        })
    }

    fn t(text: &str) -> QueryAst {
        m_op("title", text, Operator::Or)
    }

    fn should(queries: Vec<QueryAst>) -> QueryAst {
        QueryAst::Bool(BoolQuery {
            should: queries,
            boost: 1.0,
            ..Default::default()
        })
    }

    fn must(queries: Vec<QueryAst>) -> QueryAst {
        QueryAst::Bool(BoolQuery {
            must: queries,
            boost: 1.0,
            ..Default::default()
        })
    }

    fn not(query: QueryAst) -> QueryAst {
        QueryAst::Bool(BoolQuery {
            must_not: vec![query],
            should: vec![QueryAst::match_all()],
            boost: 1.0,
            ..Default::default()
        })
    }

    fn phrase(text: &str, slop: u32) -> QueryAst {
        QueryAst::MatchPhrase {
            field: "title".into(),
            query: text.into(),
            slop,
            analyzer: None,
            zero_terms_query: ZeroTermsQuery::None,
            boost: 1.0,
        }
    }

    fn prefix(value: &str) -> QueryAst {
        QueryAst::Prefix {
            field: "title".into(),
            value: value.into(),
            case_insensitive: false,
            boost: 1.0,
        }
    }

    fn fuzzy(value: &str, edits: u8) -> QueryAst {
        QueryAst::Fuzzy {
            field: "title".into(),
            value: value.into(),
            fuzziness: Fuzziness::Edits(edits),
            prefix_length: 0,
            transpositions: true,
            max_expansions: 50,
            boost: 1.0,
        }
    }

    #[test]
    fn whitespace_uses_the_default_operator() {
        assert_eq!(on_title("foo"), t("foo"));
        assert_eq!(
            on_title("foo bar baz"),
            should(vec![t("foo"), t("bar"), t("baz")])
        );
        let q = SimpleQueryStringQuery {
            default_operator: Operator::And,
            ..sq("foo bar")
        };
        assert_eq!(
            lower(&q),
            must(vec![
                m_op("title", "foo", Operator::And),
                m_op("title", "bar", Operator::And)
            ])
        );
    }

    #[test]
    fn and_or_operators() {
        assert_eq!(on_title("foo + bar"), must(vec![t("foo"), t("bar")]));
        assert_eq!(on_title("foo+bar"), must(vec![t("foo"), t("bar")]));
        assert_eq!(on_title("foo | bar"), should(vec![t("foo"), t("bar")]));
        // Operators apply left to right: a change of operator groups what came before.
        assert_eq!(
            on_title("a | b + c"),
            must(vec![should(vec![t("a"), t("b")]), t("c")])
        );
        assert_eq!(
            on_title("a + b | c"),
            should(vec![must(vec![t("a"), t("b")]), t("c")])
        );
        assert_eq!(on_title("a + b + c"), must(vec![t("a"), t("b"), t("c")]));
        // Operators with nothing before them, and repeated ones, are ignored.
        assert_eq!(on_title("+a"), t("a"));
        assert_eq!(on_title("a + | b"), must(vec![t("a"), t("b")]));
    }

    #[test]
    fn not_operator() {
        assert_eq!(on_title("-foo"), not(t("foo")));
        assert_eq!(on_title("--foo"), t("foo"));
        assert_eq!(on_title("---foo"), not(t("foo")));
        assert_eq!(on_title("foo -bar"), should(vec![t("foo"), not(t("bar"))]));
        assert_eq!(on_title("foo + -bar"), must(vec![t("foo"), not(t("bar"))]));
        // The negation must touch its operand.
        assert_eq!(on_title("- foo"), t("foo"));
        // A dash inside a word is part of it.
        assert_eq!(on_title("foo-bar"), t("foo-bar"));
        assert_eq!(on_title("-(a b)"), not(should(vec![t("a"), t("b")])));
    }

    #[test]
    fn phrases_and_slop() {
        assert_eq!(on_title("\"quick fox\""), phrase("quick fox", 0));
        assert_eq!(on_title("\"quick fox\"~2"), phrase("quick fox", 2));
        assert_eq!(on_title("\"quick fox\"~"), phrase("quick fox", 0));
        assert_eq!(
            on_title("\"a b\"~ c"),
            should(vec![phrase("a b", 2), t("c")])
        );
        assert_eq!(on_title("\"a b\"~x"), phrase("a b", 0));
        // The character ending the slop is consumed, even an operator (as in Lucene).
        assert_eq!(
            on_title("\"a b\"~2+c"),
            should(vec![phrase("a b", 2), t("c")])
        );
        assert_eq!(on_title(r#""say \"hi\"""#), phrase("say \"hi\"", 0));
        assert_eq!(
            on_title("x \"a b\" y"),
            should(vec![t("x"), phrase("a b", 0), t("y")])
        );
    }

    #[test]
    fn unbalanced_quotes_are_text() {
        assert_eq!(on_title("\"foo bar"), should(vec![t("foo"), t("bar")]));
        assert_eq!(on_title("foo\""), t("foo"));
        assert_eq!(on_title("a \"\" b"), should(vec![t("a"), t("b")]));
    }

    #[test]
    fn prefix_terms() {
        assert_eq!(on_title("foo*"), prefix("foo"));
        assert_eq!(on_title("FOO*"), prefix("foo"));
        assert_eq!(on_title(r"foo\*"), t("foo*"));
        assert_eq!(on_title("fo*o"), t("fo*o"));
        let q = SimpleQueryStringQuery {
            fields: vec![FieldPattern::parse("status").unwrap()],
            ..sq("AB*")
        };
        assert_eq!(
            lower(&q),
            QueryAst::Prefix {
                field: "status".into(),
                value: "AB".into(),
                case_insensitive: false,
                boost: 1.0
            }
        );
    }

    #[test]
    fn star_alone_matches_everything() {
        assert_eq!(on_title("*"), QueryAst::match_all());
        assert_eq!(on_title("  *  "), QueryAst::match_all());
        // Elsewhere a lone `*` analyzes to nothing.
        assert_eq!(on_title("foo *"), t("foo"));
    }

    #[test]
    fn fuzzy_terms() {
        assert_eq!(on_title("Foo~"), fuzzy("foo", 2));
        assert_eq!(on_title("foo~1"), fuzzy("foo", 1));
        assert_eq!(on_title("foo~5"), fuzzy("foo", 2));
        assert_eq!(on_title("foo~0"), t("foo"));
        assert_eq!(on_title("foo~x"), t("foo"));
        assert_eq!(on_title("foo~-1"), t("foo"));
        assert_eq!(on_title("~foo"), t("~foo"));
        assert_eq!(
            on_title("foo~1 bar"),
            should(vec![fuzzy("foo", 1), t("bar")])
        );
        let q = SimpleQueryStringQuery {
            fuzzy_prefix_length: 2,
            ..sq("foo~1")
        };
        let QueryAst::Fuzzy { prefix_length, .. } = lower(&q) else {
            panic!()
        };
        assert_eq!(prefix_length, 2);
    }

    #[test]
    fn precedence() {
        assert_eq!(
            on_title("(a | b) + c"),
            must(vec![should(vec![t("a"), t("b")]), t("c")])
        );
        assert_eq!(
            on_title("a + (b | c)"),
            must(vec![t("a"), should(vec![t("b"), t("c")])])
        );
        assert_eq!(on_title("((a))"), t("a"));
        // Unbalanced or empty parentheses are ignored.
        assert_eq!(on_title("(a b"), should(vec![t("a"), t("b")]));
        assert_eq!(on_title("a b)"), should(vec![t("a"), t("b")]));
        assert_eq!(on_title("a + () b"), should(vec![t("a"), t("b")]));
        assert_eq!(on_title("( )"), QueryAst::MatchNone);
    }

    #[test]
    fn escapes() {
        assert_eq!(on_title(r"foo\+bar"), t("foo+bar"));
        assert_eq!(on_title(r"\-foo"), t("-foo"));
        assert_eq!(on_title(r"a\ b"), t("a b"));
        assert_eq!(on_title(r"\(a\)"), t("(a)"));
        assert_eq!(on_title("foo\\"), t("foo"));
        // Without the ESCAPE flag a backslash is text.
        let flags = SimpleQueryFlags::ALL & !SimpleQueryFlags::ESCAPE;
        assert_eq!(
            with_flags(r"foo\+bar", flags),
            must(vec![t("foo\\"), t("bar")])
        );
    }

    #[test]
    fn flags_disable_operators() {
        let all = SimpleQueryFlags::ALL;
        assert_eq!(with_flags("a+b", all & !SimpleQueryFlags::AND), t("a+b"));
        assert_eq!(with_flags("a|b", all & !SimpleQueryFlags::OR), t("a|b"));
        assert_eq!(with_flags("-a", all & !SimpleQueryFlags::NOT), t("-a"));
        assert_eq!(
            with_flags("foo*", all & !SimpleQueryFlags::PREFIX),
            t("foo*")
        );
        assert_eq!(
            with_flags("foo~1", all & !SimpleQueryFlags::FUZZY),
            t("foo~1")
        );
        assert_eq!(
            with_flags("\"a b\"", all & !SimpleQueryFlags::PHRASE),
            should(vec![t("\"a"), t("b\"")])
        );
        assert_eq!(
            with_flags("\"a b\"~2", all & !SimpleQueryFlags::NEAR),
            should(vec![phrase("a b", 0), t("~2")])
        );
        assert_eq!(
            with_flags("(a | b) + c", all & !SimpleQueryFlags::PRECEDENCE),
            must(vec![should(vec![t("(a"), t("b)")]), t("c")])
        );
        assert_eq!(
            with_flags("a b", all & !SimpleQueryFlags::WHITESPACE),
            t("a b")
        );
        assert_eq!(with_flags("a+b -c \"d\" e*", 0), t("a+b -c \"d\" e*"));
        assert_eq!(
            with_flags("a b", SimpleQueryFlags::WHITESPACE),
            should(vec![t("a"), t("b")])
        );
    }

    #[test]
    fn multi_field_terms_use_dis_max_sum_and_phrases_dis_max() {
        let fields = vec![
            FieldPattern::parse("title^2").unwrap(),
            FieldPattern::parse("body").unwrap(),
        ];
        let q = SimpleQueryStringQuery {
            fields: fields.clone(),
            ..SimpleQueryStringQuery::new("foo")
        };
        assert_eq!(
            lower(&q),
            QueryAst::DisMax {
                queries: vec![
                    QueryAst::Match(MatchQuery {
                        boost: 2.0,
                        ..MatchQuery::new("title", "foo")
                    }),
                    QueryAst::Match(MatchQuery::new("body", "foo")),
                ],
                tie_breaker: 1.0,
                boost: 1.0
            }
        );
        let q = SimpleQueryStringQuery {
            fields,
            ..SimpleQueryStringQuery::new("\"a b\"")
        };
        let QueryAst::DisMax {
            queries,
            tie_breaker,
            ..
        } = lower(&q)
        else {
            panic!()
        };
        assert_eq!((queries.len(), tie_breaker), (2, 0.0));
        let q = SimpleQueryStringQuery {
            fields: vec![FieldPattern::parse("city.*").unwrap()],
            ..SimpleQueryStringQuery::new("Par*")
        };
        assert_eq!(
            lower(&q),
            QueryAst::DisMax {
                queries: vec![
                    QueryAst::Prefix {
                        field: "city.name".into(),
                        value: "par".into(),
                        case_insensitive: false,
                        boost: 1.0
                    },
                    QueryAst::Prefix {
                        field: "city.zip".into(),
                        value: "Par".into(),
                        case_insensitive: false,
                        boost: 1.0
                    },
                ],
                tie_breaker: 1.0,
                boost: 1.0
            }
        );
    }

    #[test]
    fn default_fields_and_lenient() {
        let QueryAst::DisMax { queries, .. } = lower(&SimpleQueryStringQuery::new("foo")) else {
            panic!()
        };
        assert_eq!(queries.len(), 7);
        assert!(queries
            .iter()
            .all(|q| matches!(q, QueryAst::Match(m) if m.lenient)));
        let q = SimpleQueryStringQuery {
            lenient: Some(false),
            ..SimpleQueryStringQuery::new("foo")
        };
        let QueryAst::DisMax { queries, .. } = lower(&q) else {
            panic!()
        };
        assert!(queries
            .iter()
            .all(|q| matches!(q, QueryAst::Match(m) if !m.lenient)));
        let resolver = FakeResolver::with_defaults(&["body^2"]);
        assert_eq!(
            lower_simple_query_string(&SimpleQueryStringQuery::new("foo"), &resolver).unwrap(),
            QueryAst::Match(MatchQuery {
                boost: 2.0,
                ..MatchQuery::new("body", "foo")
            })
        );
        assert!(matches!(on_title("foo"), QueryAst::Match(m) if !m.lenient));
        let q = SimpleQueryStringQuery {
            fields: vec![FieldPattern::parse("nothing.*").unwrap()],
            ..SimpleQueryStringQuery::new("foo")
        };
        assert_eq!(lower(&q), QueryAst::MatchNone);
    }

    #[test]
    fn empty_input_matches_nothing() {
        assert_eq!(on_title(""), QueryAst::MatchNone);
        assert_eq!(on_title("   "), QueryAst::MatchNone);
        assert_eq!(on_title("+ | -"), QueryAst::MatchNone);
        assert_eq!(on_title("\"\""), QueryAst::MatchNone);
    }

    #[test]
    fn minimum_should_match_and_boost() {
        let msm = Some(MinimumShouldMatch::Percent(75));
        let q = SimpleQueryStringQuery {
            minimum_should_match: msm.clone(),
            boost: 2.0,
            ..sq("a b c")
        };
        let QueryAst::Bool(b) = lower(&q) else {
            panic!()
        };
        assert_eq!(b.minimum_should_match, msm);
        assert_eq!(b.boost, 2.0);
        let q = SimpleQueryStringQuery {
            minimum_should_match: msm.clone(),
            ..sq("foo-bar")
        };
        let QueryAst::Match(mq) = lower(&q) else {
            panic!()
        };
        assert_eq!(mq.minimum_should_match, msm);
    }

    #[test]
    fn analyzer_is_passed_on() {
        let q = SimpleQueryStringQuery {
            analyzer: Some("simple".into()),
            ..sq("foo \"a b\"")
        };
        let QueryAst::Bool(b) = lower(&q) else {
            panic!()
        };
        assert!(
            matches!(&b.should[0], QueryAst::Match(m) if m.analyzer.as_deref() == Some("simple"))
        );
        assert!(
            matches!(&b.should[1], QueryAst::MatchPhrase { analyzer: Some(a), .. } if a == "simple")
        );
    }

    #[test]
    fn garbage_degrades_gracefully() {
        for garbage in [
            "(((",
            ")))",
            "\"\"\"",
            "\\",
            "~",
            "~~~",
            "*~",
            "-",
            "|||+++",
            "a~b~c",
            "(\"a)\"",
            "\"(a\")",
            "a\\",
            "((a | b) + (c",
            "\"a b\"~99999999999",
            "foo~99999999999",
            "-(-(-a))",
            "\u{3000}",
            "é*",
        ] {
            let ast = on_title(garbage);
            // Serialisable, i.e. a well-formed tree.
            serde_json::to_string(&ast).unwrap();
        }
        assert_eq!(on_title("\"a b\"~99999999999"), phrase("a b", 0));
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let deep = format!("{}a{}", "(".repeat(50_000), ")".repeat(50_000));
        assert_eq!(on_title(&deep), t("a"));
    }
}
