//! Recursive-descent parser for the classic query_string grammar.
//!
//! It follows Lucene's `QueryParser.jj` production by production (`Query`, `MultiTerm`,
//! `Clause`, `Term`, `Conjunction`, `Modifiers`) including its lookaheads, so that what
//! parses, what fails and how clauses are grouped is the same as in OpenSearch. It only builds a
//! syntax tree; the meaning of each clause (which fields, which query type, how `AND`/`OR`/`+`/`-`
//! combine) is decided in `lower.rs`, which has the options and the field resolver.

use super::lexer::{add_escapes, tokenize, Kind, Token};

/// Deepest nesting of parentheses accepted. Lucene has no explicit limit, but recursion on
/// unbounded input must not be able to exhaust the stack.
pub(crate) const MAX_DEPTH: usize = 256;

/// A parse failure: the text that follows `Cannot parse '<query>': `.
pub(crate) type ParseError = String;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Conj {
    None,
    And,
    Or,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Modifier {
    None,
    Required,
    Prohibited,
}

/// The `Query` production: a sequence of clauses and multi-term runs.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct QueryExpr {
    pub items: Vec<Item>,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Item {
    /// Consecutive bare words without operators between them (`quick brown fox`), which Lucene
    /// analyzes as one text (it does not split on whitespace).
    MultiTerm { words: Vec<String> },
    Clause {
        conj: Conj,
        modifier: Modifier,
        clause: Clause,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Clause {
    /// `field:` prefix, escapes removed; `*` for `*:`. `None` inherits the enclosing field.
    pub field: Option<String>,
    pub body: ClauseBody,
    pub boost: Option<f32>,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ClauseBody {
    Group(QueryExpr),
    Term(TermExpr),
    Phrase {
        text: String,
        slop: Option<String>,
    },
    Range {
        lower: RangeEnd,
        upper: RangeEnd,
        lower_inclusive: bool,
        upper_inclusive: bool,
    },
}

/// One end of a range: the text (escapes removed, quotes stripped) or open (`*`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum RangeEnd {
    Open,
    Value(String),
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum TermExpr {
    /// A word, escapes removed. `fuzzy` is the text after `~` when a `~` follows.
    Plain { text: String, fuzzy: Option<String> },
    /// `foo*`: the text before the final `*`, escapes removed.
    Prefix { text: String },
    /// A term containing `*` or `?` (or a lone `*`), escapes kept as the wildcard syntax uses them.
    Wildcard { pattern: String },
    /// `/regex/`: the text between the slashes, unchanged.
    Regexp { pattern: String },
}

/// Parses a whole query string.
pub(crate) fn parse(input: &str) -> Result<QueryExpr, ParseError> {
    let tokens = tokenize(input);
    let mut parser = Parser {
        tokens,
        pos: 0,
        depth: 0,
    };
    let query = parser.query()?;
    let next = parser.peek(0)?;
    if next.kind != Kind::Eof {
        return Err(parser.unexpected(0, &after_clause_expected(Kind::Eof)));
    }
    Ok(query)
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    depth: usize,
}

const CLAUSE_START: &[Kind] = &[
    Kind::BareOper,
    Kind::LParen,
    Kind::Star,
    Kind::Quoted,
    Kind::Term,
    Kind::PrefixTerm,
    Kind::WildTerm,
    Kind::RegexpTerm,
    Kind::RangeInStart,
    Kind::RangeExStart,
    Kind::Number,
];

const MODIFIERS: &[Kind] = &[Kind::Not, Kind::Plus, Kind::Minus];

const RANGE_VALUE: &[Kind] = &[Kind::RangeTo, Kind::RangeQuoted, Kind::RangeGoop];

/// What may follow a complete clause: another clause, a conjunction, or the end (`end`).
fn after_clause_expected(end: Kind) -> Vec<Kind> {
    let mut expected = vec![end, Kind::And, Kind::Or];
    expected.extend_from_slice(MODIFIERS);
    expected.extend_from_slice(CLAUSE_START);
    expected.sort();
    expected
}

fn with_modifiers() -> Vec<Kind> {
    let mut expected = MODIFIERS.to_vec();
    expected.extend_from_slice(CLAUSE_START);
    expected.sort();
    expected
}

/// Tokens after which a run of words stops being one multi-term text.
fn allowed_post_multi_term(kind: Kind) -> bool {
    !matches!(
        kind,
        Kind::Colon | Kind::Star | Kind::FuzzySlop | Kind::Carat | Kind::And | Kind::Or
    )
}

/// Tokens that let the `Query` loop go on to another clause.
fn starts_item(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::And | Kind::Or | Kind::Not | Kind::Plus | Kind::Minus
    ) || CLAUSE_START.contains(&kind)
}

impl Parser {
    /// The token `k` positions ahead; reaching a lexical error reports it.
    fn peek(&self, k: usize) -> Result<&Token, ParseError> {
        let index = (self.pos + k).min(self.tokens.len() - 1);
        let token = &self.tokens[index];
        if token.kind == Kind::LexError {
            return Err(token.image.clone());
        }
        Ok(token)
    }

    fn kind(&self, k: usize) -> Result<Kind, ParseError> {
        Ok(self.peek(k)?.kind)
    }

    fn advance(&mut self) -> Token {
        let index = self.pos.min(self.tokens.len() - 1);
        self.pos += 1;
        self.tokens[index].clone()
    }

    /// JavaCC's "Encountered ... Was expecting ..." message for the token `k` ahead.
    fn unexpected(&self, k: usize, expected: &[Kind]) -> ParseError {
        let index = (self.pos + k).min(self.tokens.len() - 1);
        let token = &self.tokens[index];
        if token.kind == Kind::LexError {
            return token.image.clone();
        }
        let encountered = if token.kind == Kind::Eof {
            "<EOF>".to_string()
        } else {
            format!(
                " {} \"{} \"",
                token.kind.display(),
                add_escapes(&token.image)
            )
        };
        let mut message = format!(
            "Encountered \"{encountered}\" at line 1, column {}.\n",
            token.offset
        );
        if expected.len() == 1 {
            message.push_str("Was expecting:\n    ");
        } else {
            message.push_str("Was expecting one of:\n    ");
        }
        for kind in expected {
            message.push_str(kind.display());
            message.push_str(" ...\n    ");
        }
        message
    }

    fn expect(&mut self, kind: Kind) -> Result<Token, ParseError> {
        if self.kind(0)? == kind {
            Ok(self.advance())
        } else {
            Err(self.unexpected(0, &[kind]))
        }
    }

    /// `LOOKAHEAD(2) MultiTerm`: two words, the second not followed by `:`, `*`, `~`, `^`,
    /// `AND` or `OR`.
    fn multi_term_ahead(&self) -> Result<bool, ParseError> {
        Ok(self.kind(0)? == Kind::Term
            && self.kind(1)? == Kind::Term
            && allowed_post_multi_term(self.kind(2)?))
    }

    fn query(&mut self) -> Result<QueryExpr, ParseError> {
        let mut items = Vec::new();
        if self.multi_term_ahead()? {
            items.push(self.multi_term()?);
        } else {
            let modifier = self.modifiers()?;
            let expected = if modifier == Modifier::None {
                with_modifiers()
            } else {
                CLAUSE_START.to_vec()
            };
            let clause = self.clause(&expected)?;
            items.push(Item::Clause {
                conj: Conj::None,
                modifier,
                clause,
            });
        }
        loop {
            if !starts_item(self.kind(0)?) {
                break;
            }
            if self.multi_term_ahead()? {
                items.push(self.multi_term()?);
                continue;
            }
            let conj = match self.kind(0)? {
                Kind::And => {
                    self.advance();
                    Conj::And
                }
                Kind::Or => {
                    self.advance();
                    Conj::Or
                }
                _ => Conj::None,
            };
            let modifier = self.modifiers()?;
            let expected = if modifier == Modifier::None {
                with_modifiers()
            } else {
                CLAUSE_START.to_vec()
            };
            let clause = self.clause(&expected)?;
            items.push(Item::Clause {
                conj,
                modifier,
                clause,
            });
        }
        Ok(QueryExpr { items })
    }

    fn multi_term(&mut self) -> Result<Item, ParseError> {
        let first = self.advance();
        let mut words = vec![discard_escape_char(&first.image)?];
        while self.kind(0)? == Kind::Term && allowed_post_multi_term(self.kind(1)?) {
            let next = self.advance();
            words.push(discard_escape_char(&next.image)?);
        }
        Ok(Item::MultiTerm { words })
    }

    fn modifiers(&mut self) -> Result<Modifier, ParseError> {
        Ok(match self.kind(0)? {
            Kind::Plus => {
                self.advance();
                Modifier::Required
            }
            Kind::Minus | Kind::Not => {
                self.advance();
                Modifier::Prohibited
            }
            _ => Modifier::None,
        })
    }

    fn clause(&mut self, expected: &[Kind]) -> Result<Clause, ParseError> {
        let mut field = None;
        let first = self.kind(0)?;
        // Lucene only accepts a plain term (or `*`) before `:`, so a field pattern must be
        // written `city.\*:paris`; an unescaped pattern (`city.*:paris`) is a syntax error, as
        // in OpenSearch.
        if matches!(first, Kind::Term | Kind::Star) && self.kind(1)? == Kind::Colon {
            let token = self.advance();
            self.advance();
            field = Some(if first == Kind::Star {
                "*".to_string()
            } else {
                discard_escape_char(&token.image)?
            });
        }
        if self.kind(0)? == Kind::LParen {
            self.advance();
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return Err(format!(
                    "query is nested too deeply (more than {MAX_DEPTH} levels of parentheses)"
                ));
            }
            let inner = self.query()?;
            self.depth -= 1;
            if self.kind(0)? != Kind::RParen {
                return Err(self.unexpected(0, &after_clause_expected(Kind::RParen)));
            }
            self.advance();
            let boost = self.optional_boost()?;
            return Ok(Clause {
                field,
                body: ClauseBody::Group(inner),
                boost,
            });
        }
        let expected = if field.is_some() {
            CLAUSE_START
        } else {
            expected
        };
        self.term(field, expected)
    }

    /// `[ "^" <NUMBER> ]`
    fn optional_boost(&mut self) -> Result<Option<f32>, ParseError> {
        if self.kind(0)? != Kind::Carat {
            return Ok(None);
        }
        self.advance();
        let number = self.expect(Kind::Number)?;
        // NUMBER is digits with an optional fraction, which always parses.
        Ok(Some(number.image.parse::<f32>().unwrap_or(1.0)))
    }

    /// `[ "^" <NUMBER> [ <FUZZY_SLOP> ] | <FUZZY_SLOP> [ "^" <NUMBER> ] ]`
    fn boost_and_slop(&mut self) -> Result<(Option<f32>, Option<String>), ParseError> {
        match self.kind(0)? {
            Kind::Carat => {
                let boost = self.optional_boost()?;
                let slop = if self.kind(0)? == Kind::FuzzySlop {
                    Some(self.slop_text())
                } else {
                    None
                };
                Ok((boost, slop))
            }
            Kind::FuzzySlop => {
                let slop = Some(self.slop_text());
                let boost = self.optional_boost()?;
                Ok((boost, slop))
            }
            _ => Ok((None, None)),
        }
    }

    fn slop_text(&mut self) -> String {
        let token = self.advance();
        token.image.chars().skip(1).collect()
    }

    fn term(&mut self, field: Option<String>, expected: &[Kind]) -> Result<Clause, ParseError> {
        match self.kind(0)? {
            Kind::Term
            | Kind::Star
            | Kind::PrefixTerm
            | Kind::WildTerm
            | Kind::RegexpTerm
            | Kind::Number
            | Kind::BareOper => {
                let token = self.advance();
                let (boost, fuzzy) = self.boost_and_slop()?;
                // Lucene un-escapes every bare term first, so escape errors surface for all kinds.
                let unescaped = discard_escape_char(&token.image)?;
                let term = match token.kind {
                    Kind::Star | Kind::WildTerm => TermExpr::Wildcard {
                        pattern: token.image,
                    },
                    Kind::PrefixTerm => TermExpr::Prefix {
                        text: discard_escape_char(without_last_char(&token.image))?,
                    },
                    Kind::RegexpTerm => TermExpr::Regexp {
                        pattern: inside_delimiters(&token.image).to_string(),
                    },
                    Kind::BareOper => TermExpr::Plain {
                        text: token.image.chars().take(1).collect(),
                        fuzzy,
                    },
                    _ => TermExpr::Plain {
                        text: unescaped,
                        fuzzy,
                    },
                };
                Ok(Clause {
                    field,
                    body: ClauseBody::Term(term),
                    boost,
                })
            }
            Kind::RangeInStart | Kind::RangeExStart => {
                let lower_inclusive = self.advance().kind == Kind::RangeInStart;
                let lower = self.range_value()?;
                self.expect(Kind::RangeTo)?;
                let upper = self.range_value()?;
                let upper_inclusive = match self.kind(0)? {
                    Kind::RangeInEnd => true,
                    Kind::RangeExEnd => false,
                    _ => return Err(self.unexpected(0, &[Kind::RangeInEnd, Kind::RangeExEnd])),
                };
                self.advance();
                let boost = self.optional_boost()?;
                Ok(Clause {
                    field,
                    body: ClauseBody::Range {
                        lower,
                        upper,
                        lower_inclusive,
                        upper_inclusive,
                    },
                    boost,
                })
            }
            Kind::Quoted => {
                let token = self.advance();
                let (boost, slop) = self.boost_and_slop()?;
                let text = discard_escape_char(inside_delimiters(&token.image))?;
                Ok(Clause {
                    field,
                    body: ClauseBody::Phrase { text, slop },
                    boost,
                })
            }
            _ => Err(self.unexpected(0, expected)),
        }
    }

    fn range_value(&mut self) -> Result<RangeEnd, ParseError> {
        let kind = self.kind(0)?;
        if !RANGE_VALUE.contains(&kind) {
            return Err(self.unexpected(0, RANGE_VALUE));
        }
        let token = self.advance();
        if kind == Kind::RangeQuoted {
            return Ok(RangeEnd::Value(discard_escape_char(inside_delimiters(
                &token.image,
            ))?));
        }
        if token.image == "*" {
            return Ok(RangeEnd::Open);
        }
        Ok(RangeEnd::Value(discard_escape_char(&token.image)?))
    }
}

/// `image` without its last character (the `*` of a prefix term).
fn without_last_char(image: &str) -> &str {
    let mut chars = image.chars();
    chars.next_back();
    chars.as_str()
}

/// `image` without its first and last characters (quotes or slashes).
fn inside_delimiters(image: &str) -> &str {
    let mut chars = image.chars();
    chars.next();
    chars.next_back();
    chars.as_str()
}

/// Removes backslash escapes the way Lucene's `discardEscapeChar` does, including `\uXXXX`.
pub(crate) fn discard_escape_char(input: &str) -> Result<String, ParseError> {
    let mut out: Vec<u16> = Vec::with_capacity(input.len());
    let mut last_was_escape = false;
    let mut multiplier: u32 = 0;
    let mut code_point: u32 = 0;
    let mut units = [0u16; 2];
    for c in input.chars() {
        if multiplier > 0 {
            let digit = c
                .to_digit(16)
                .ok_or_else(|| format!("Non-hex character in Unicode escape sequence: {c}"))?;
            code_point += digit * multiplier;
            multiplier >>= 4;
            if multiplier == 0 {
                out.push(code_point as u16);
                code_point = 0;
            }
        } else if last_was_escape {
            if c == 'u' {
                multiplier = 16 * 16 * 16;
            } else {
                out.extend_from_slice(c.encode_utf16(&mut units));
            }
            last_was_escape = false;
        } else if c == '\\' {
            last_was_escape = true;
        } else {
            out.extend_from_slice(c.encode_utf16(&mut units));
        }
    }
    if multiplier > 0 {
        return Err("Truncated unicode escape sequence.".to_string());
    }
    if last_was_escape {
        return Err("Term can not end with escape character.".to_string());
    }
    Ok(String::from_utf16_lossy(&out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clause(item: &Item) -> &Clause {
        match item {
            Item::Clause { clause, .. } => clause,
            other => panic!("expected a clause, got {other:?}"),
        }
    }

    fn plain(text: &str) -> ClauseBody {
        ClauseBody::Term(TermExpr::Plain {
            text: text.into(),
            fuzzy: None,
        })
    }

    #[test]
    fn words_without_operators_form_one_multi_term() {
        let q = parse("quick brown fox").unwrap();
        assert_eq!(
            q.items,
            vec![Item::MultiTerm {
                words: vec!["quick".into(), "brown".into(), "fox".into()]
            }]
        );
    }

    #[test]
    fn multi_term_stops_before_fields_operators_and_suffixes() {
        // `c` is followed by `:` so it starts its own clause.
        let q = parse("a b c:d").unwrap();
        assert_eq!(q.items.len(), 2);
        assert_eq!(
            q.items[0],
            Item::MultiTerm {
                words: vec!["a".into(), "b".into()]
            }
        );
        assert_eq!(clause(&q.items[1]).field.as_deref(), Some("c"));
        // `b` is followed by AND, so nothing merges.
        let q = parse("a b AND c").unwrap();
        assert_eq!(q.items.len(), 3);
        assert!(matches!(
            q.items[2],
            Item::Clause {
                conj: Conj::And,
                ..
            }
        ));
        // A boost or fuzzy suffix on the second word prevents merging.
        assert_eq!(parse("a b^2").unwrap().items.len(), 2);
        assert_eq!(parse("a b~").unwrap().items.len(), 2);
    }

    #[test]
    fn clauses_record_conjunctions_and_modifiers() {
        let q = parse("+a -b AND NOT c OR !d").unwrap();
        let shape: Vec<(Conj, Modifier)> = q
            .items
            .iter()
            .map(|i| match i {
                Item::Clause { conj, modifier, .. } => (*conj, *modifier),
                Item::MultiTerm { .. } => panic!(),
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                (Conj::None, Modifier::Required),
                (Conj::None, Modifier::Prohibited),
                (Conj::And, Modifier::Prohibited),
                (Conj::Or, Modifier::Prohibited),
            ]
        );
    }

    #[test]
    fn fields_groups_and_boosts() {
        let q = parse("title:(a OR b)^2 city.name:paris *:x").unwrap();
        let c = clause(&q.items[0]);
        assert_eq!(c.field.as_deref(), Some("title"));
        assert_eq!(c.boost, Some(2.0));
        assert!(matches!(&c.body, ClauseBody::Group(inner) if inner.items.len() == 2));
        assert_eq!(clause(&q.items[1]).field.as_deref(), Some("city.name"));
        assert_eq!(clause(&q.items[2]).field.as_deref(), Some("*"));
        // Field patterns must be escaped, as Lucene wants; unescaped ones are syntax errors.
        let q = parse(r"city.\*:paris \*_name:x c\?ty.\*:y").unwrap();
        let fields: Vec<Option<&str>> =
            q.items.iter().map(|i| clause(i).field.as_deref()).collect();
        assert_eq!(fields, vec![Some("city.*"), Some("*_name"), Some("c?ty.*")]);
        assert!(parse("city.*:paris").is_err());
        assert!(parse("tit*:bears").is_err());
        let q = parse(r"first\ name:bob").unwrap();
        assert_eq!(clause(&q.items[0]).field.as_deref(), Some("first name"));
    }

    #[test]
    fn term_suffixes() {
        let q = parse("a^2~1").unwrap();
        let c = clause(&q.items[0]);
        assert_eq!(c.boost, Some(2.0));
        assert_eq!(
            c.body,
            ClauseBody::Term(TermExpr::Plain {
                text: "a".into(),
                fuzzy: Some("1".into())
            })
        );
        let q = parse("\"a b\"~3^1.5").unwrap();
        let c = clause(&q.items[0]);
        assert_eq!(c.boost, Some(1.5));
        assert_eq!(
            c.body,
            ClauseBody::Phrase {
                text: "a b".into(),
                slop: Some("3".into())
            }
        );
    }

    #[test]
    fn term_kinds() {
        let q = parse(r"foo* f?o /jo.n/ * foo\-bar").unwrap();
        let bodies: Vec<&ClauseBody> = q.items.iter().map(|i| &clause(i).body).collect();
        assert_eq!(
            bodies[0],
            &ClauseBody::Term(TermExpr::Prefix { text: "foo".into() })
        );
        assert_eq!(
            bodies[1],
            &ClauseBody::Term(TermExpr::Wildcard {
                pattern: "f?o".into()
            })
        );
        assert_eq!(
            bodies[2],
            &ClauseBody::Term(TermExpr::Regexp {
                pattern: "jo.n".into()
            })
        );
        assert_eq!(
            bodies[3],
            &ClauseBody::Term(TermExpr::Wildcard {
                pattern: "*".into()
            })
        );
        assert_eq!(bodies[4], &plain("foo-bar"));
    }

    #[test]
    fn ranges() {
        let q = parse("age:[10 TO *} date:{\"2020-01-01\" TO 2021]").unwrap();
        assert_eq!(
            clause(&q.items[0]).body,
            ClauseBody::Range {
                lower: RangeEnd::Value("10".into()),
                upper: RangeEnd::Open,
                lower_inclusive: true,
                upper_inclusive: false
            }
        );
        assert_eq!(
            clause(&q.items[1]).body,
            ClauseBody::Range {
                lower: RangeEnd::Value("2020-01-01".into()),
                upper: RangeEnd::Value("2021".into()),
                lower_inclusive: false,
                upper_inclusive: true
            }
        );
    }

    #[test]
    fn syntax_errors() {
        for bad in [
            "foo AND",
            "(foo",
            "foo)",
            "title:",
            "\"unbalanced",
            "a:b:c",
            "--a",
            "a AND OR b",
            "[1 TO",
            "[1 TO 2",
            "[1 2]",
            "a^",
            "(a b)~2",
            "AND",
            "()",
            "a/b",
        ] {
            assert!(parse(bad).is_err(), "{bad} should not parse");
        }
    }

    #[test]
    fn error_messages_look_like_javacc() {
        let message = parse("foo AND").unwrap_err();
        assert!(
            message.starts_with("Encountered \"<EOF>\" at line 1, column 7."),
            "{message}"
        );
        assert!(message.contains("Was expecting one of:"), "{message}");
        assert!(message.contains("<TERM> ..."), "{message}");
        let message = parse("foo)").unwrap_err();
        assert!(
            message.starts_with("Encountered \" \")\" \") \"\" at line 1, column 3."),
            "{message}"
        );
        let message = parse("a^").unwrap_err();
        assert!(
            message.contains("Was expecting:\n    <NUMBER> ..."),
            "{message}"
        );
    }

    #[test]
    fn escape_removal() {
        assert_eq!(discard_escape_char(r"a\:b\\c").unwrap(), r"a:b\c");
        assert_eq!(discard_escape_char(r"\u0041b").unwrap(), "Ab");
        assert_eq!(discard_escape_char(r"\ud83d\ude00").unwrap(), "😀");
        assert!(discard_escape_char(r"\u12").is_err());
        assert!(discard_escape_char(r"\u12zz").is_err());
        assert!(discard_escape_char("a\\").is_err());
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = format!(
            "{}a{}",
            "(".repeat(MAX_DEPTH + 5),
            ")".repeat(MAX_DEPTH + 5)
        );
        assert!(parse(&deep).is_err());
        let ok = format!("{}a{}", "(".repeat(50), ")".repeat(50));
        assert!(parse(&ok).is_ok());
    }
}
