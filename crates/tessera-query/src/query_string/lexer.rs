//! Tokenizer for the classic (Lucene `QueryParser`) query_string syntax.
//!
//! OpenSearch's `query_string` is parsed by a JavaCC grammar whose token manager has three
//! lexical states (default, `Boost` after `^`, `Range` inside `[`/`{`) and always picks the
//! *longest* token that matches, breaking ties by the order the tokens are declared. Many of the
//! syntax's surprises come straight from that rule (`a&&b` is one term, `foo*` is a prefix term
//! while `foo*bar` is a wildcard term, `-` inside a word does not negate), so this lexer mirrors
//! the token definitions and the tie-breaking order instead of inventing its own.
//!
//! The whole input is tokenized up front; a lexical error becomes a [`Kind::LexError`] token that
//! the parser reports when it reaches it, which is the same moment JavaCC would have failed.

/// Token kinds, in the declaration order that breaks ties between equally long matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    Eof,
    And,
    Or,
    Not,
    Plus,
    Minus,
    BareOper,
    LParen,
    RParen,
    Colon,
    Star,
    Carat,
    Quoted,
    Term,
    FuzzySlop,
    PrefixTerm,
    WildTerm,
    RegexpTerm,
    RangeInStart,
    RangeExStart,
    Number,
    RangeTo,
    RangeInEnd,
    RangeExEnd,
    RangeQuoted,
    RangeGoop,
    /// Not a token: the lexer could not go on. `image` holds the error message.
    LexError,
}

impl Kind {
    /// The name JavaCC uses for the token in error messages.
    pub(crate) fn display(self) -> &'static str {
        match self {
            Kind::Eof => "<EOF>",
            Kind::And => "<AND>",
            Kind::Or => "<OR>",
            Kind::Not => "<NOT>",
            Kind::Plus => "\"+\"",
            Kind::Minus => "\"-\"",
            Kind::BareOper => "<BAREOPER>",
            Kind::LParen => "\"(\"",
            Kind::RParen => "\")\"",
            Kind::Colon => "\":\"",
            Kind::Star => "\"*\"",
            Kind::Carat => "\"^\"",
            Kind::Quoted => "<QUOTED>",
            Kind::Term => "<TERM>",
            Kind::FuzzySlop => "<FUZZY_SLOP>",
            Kind::PrefixTerm => "<PREFIXTERM>",
            Kind::WildTerm => "<WILDTERM>",
            Kind::RegexpTerm => "<REGEXPTERM>",
            Kind::RangeInStart => "\"[\"",
            Kind::RangeExStart => "\"{\"",
            Kind::Number => "<NUMBER>",
            Kind::RangeTo => "\"TO\"",
            Kind::RangeInEnd => "\"]\"",
            Kind::RangeExEnd => "\"}\"",
            Kind::RangeQuoted => "<RANGE_QUOTED>",
            Kind::RangeGoop => "<RANGE_GOOP>",
            Kind::LexError => "<ERROR>",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Token {
    pub kind: Kind,
    pub image: String,
    /// Offset of the token's first character, in characters (JavaCC's "column").
    pub offset: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Default,
    Boost,
    Range,
}

/// Whitespace as the grammar defines it (note: no other Unicode spaces besides U+3000).
pub(crate) fn is_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{3000}')
}

/// Characters that cannot start a term unless escaped.
fn is_excluded_from_term_start(c: char) -> bool {
    is_whitespace(c)
        || matches!(
            c,
            '+' | '-'
                | '!'
                | '('
                | ')'
                | ':'
                | '^'
                | '['
                | ']'
                | '"'
                | '{'
                | '}'
                | '~'
                | '*'
                | '?'
                | '\\'
                | '/'
        )
}

/// Length of a `_TERM_START_CHAR` at `i` (an escaped character counts two), 0 if none.
fn term_start_len(chars: &[char], i: usize) -> usize {
    match chars.get(i) {
        None => 0,
        Some('\\') if i + 1 < chars.len() => 2,
        Some('\\') => 0,
        Some(&c) if is_excluded_from_term_start(c) => 0,
        Some(_) => 1,
    }
}

/// Length of a `_TERM_CHAR` at `i` (a term start character, `-` or `+`), 0 if none.
fn term_char_len(chars: &[char], i: usize) -> usize {
    match chars.get(i) {
        Some('-') | Some('+') => 1,
        _ => term_start_len(chars, i),
    }
}

/// Length of a run of term characters starting at `i`.
fn term_chars_run(chars: &[char], mut i: usize) -> usize {
    let start = i;
    loop {
        let len = term_char_len(chars, i);
        if len == 0 {
            return i - start;
        }
        i += len;
    }
}

/// `"` ( ~["\"", "\\"] | "\\" any )* `"`: deterministic, escapes consume the next character.
fn quoted_len(chars: &[char], i: usize) -> usize {
    let mut j = i + 1;
    while j < chars.len() {
        match chars[j] {
            '"' => return j - i + 1,
            '\\' => {
                if j + 1 >= chars.len() {
                    return 0;
                }
                j += 2;
            }
            _ => j += 1,
        }
    }
    0
}

/// Longest match of `open (~[close] | "\\" close){min,} close`: a closing character may be
/// skipped over only when a backslash precedes it.
fn delimited_len(chars: &[char], i: usize, delimiter: char, min_content: usize) -> usize {
    let mut best = 0;
    let mut j = i + 1;
    while j < chars.len() {
        if chars[j] == delimiter {
            if j - (i + 1) >= min_content {
                best = j - i + 1;
            }
            let escaped = j >= i + 2 && chars[j - 1] == '\\';
            if !escaped {
                break;
            }
        }
        j += 1;
    }
    best
}

fn starts_with(chars: &[char], i: usize, text: &str) -> bool {
    let wanted: Vec<char> = text.chars().collect();
    chars.get(i..i + wanted.len()) == Some(&wanted[..])
}

/// The escapes JavaCC applies to images in its error messages.
pub(crate) fn add_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            '"' => out.push_str("\\\""),
            '\'' => out.push_str("\\'"),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out
}

fn lexical_error_at_char(chars: &[char], i: usize) -> String {
    let c = chars[i];
    let mut units = [0u16; 2];
    let code = c.encode_utf16(&mut units)[0];
    format!(
        "Lexical error at line 1, column {}.  Encountered: \"{}\" ({}), after : \"\"",
        i + 1,
        add_escapes(&c.to_string()),
        code
    )
}

fn lexical_error_at_eof(chars: &[char], i: usize) -> String {
    let after: String = chars[i..].iter().collect();
    format!(
        "Lexical error at line 1, column {}.  Encountered: <EOF> after : \"{}\"",
        chars.len(),
        add_escapes(&after)
    )
}

/// Tokenizes `input`. The result always ends with an [`Kind::Eof`] or [`Kind::LexError`] token.
pub(crate) fn tokenize(input: &str) -> Vec<Token> {
    let chars: Vec<char> = input.chars().collect();
    let mut tokens = Vec::new();
    let mut state = State::Default;
    let mut i = 0;
    loop {
        if state != State::Boost {
            while i < chars.len() && skippable(&chars, i, state) {
                i += 1;
            }
        }
        if i >= chars.len() {
            tokens.push(Token {
                kind: Kind::Eof,
                image: String::new(),
                offset: chars.len(),
            });
            return tokens;
        }
        let matched = match state {
            State::Default => longest_default(&chars, i),
            State::Boost => number_len(&chars, i).map(|len| (Kind::Number, len)),
            State::Range => longest_range(&chars, i),
        };
        let Some((kind, len)) = matched else {
            // A character that can start a token but whose token never completes (an unclosed
            // quote or regex, a trailing backslash) runs into the end of the input.
            let runs_to_eof = matches!(chars[i], '"' | '/' | '\\') && state == State::Default;
            let message = if runs_to_eof {
                lexical_error_at_eof(&chars, i)
            } else {
                lexical_error_at_char(&chars, i)
            };
            tokens.push(Token {
                kind: Kind::LexError,
                image: message,
                offset: i,
            });
            return tokens;
        };
        let image: String = chars[i..i + len].iter().collect();
        tokens.push(Token {
            kind,
            image,
            offset: i,
        });
        i += len;
        state = match kind {
            Kind::Carat => State::Boost,
            Kind::RangeInStart | Kind::RangeExStart => State::Range,
            Kind::Number | Kind::RangeInEnd | Kind::RangeExEnd => State::Default,
            _ => state,
        };
    }
}

/// Whether the character at `i` is skipped as whitespace in `state`.
fn skippable(chars: &[char], i: usize, state: State) -> bool {
    let c = chars[i];
    if !is_whitespace(c) {
        return false;
    }
    if state == State::Range && c != ' ' {
        // In a range a tab or newline may also start a RANGE_GOOP; the longer match wins and a
        // tie goes to the SKIP rule, which is declared first.
        return goop_len(chars, i) <= 1;
    }
    true
}

fn number_len(chars: &[char], i: usize) -> Option<usize> {
    let digits = |from: usize| {
        chars[from..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count()
    };
    let whole = digits(i);
    if whole == 0 {
        return None;
    }
    let mut len = whole;
    if chars.get(i + len) == Some(&'.') {
        let fraction = digits(i + len + 1);
        if fraction > 0 {
            len += 1 + fraction;
        }
    }
    Some(len)
}

fn goop_len(chars: &[char], i: usize) -> usize {
    chars[i..]
        .iter()
        .take_while(|c| !matches!(c, ' ' | ']' | '}'))
        .count()
}

fn longest_range(chars: &[char], i: usize) -> Option<(Kind, usize)> {
    let mut candidates: Vec<(Kind, usize)> = Vec::with_capacity(4);
    if starts_with(chars, i, "TO") {
        candidates.push((Kind::RangeTo, 2));
    }
    match chars[i] {
        ']' => candidates.push((Kind::RangeInEnd, 1)),
        '}' => candidates.push((Kind::RangeExEnd, 1)),
        '"' => candidates.push((Kind::RangeQuoted, delimited_len(chars, i, '"', 1))),
        _ => {}
    }
    candidates.push((Kind::RangeGoop, goop_len(chars, i)));
    pick_longest(candidates)
}

fn longest_default(chars: &[char], i: usize) -> Option<(Kind, usize)> {
    let c = chars[i];
    let mut candidates: Vec<(Kind, usize)> = Vec::with_capacity(8);
    if starts_with(chars, i, "AND") {
        candidates.push((Kind::And, 3));
    } else if starts_with(chars, i, "&&") {
        candidates.push((Kind::And, 2));
    }
    if starts_with(chars, i, "OR") || starts_with(chars, i, "||") {
        candidates.push((Kind::Or, 2));
    }
    if starts_with(chars, i, "NOT") {
        candidates.push((Kind::Not, 3));
    } else if c == '!' {
        candidates.push((Kind::Not, 1));
    }
    match c {
        '+' => candidates.push((Kind::Plus, 1)),
        '-' => candidates.push((Kind::Minus, 1)),
        _ => {}
    }
    if matches!(c, '+' | '-' | '!') && chars.get(i + 1).is_some_and(|&n| is_whitespace(n)) {
        candidates.push((Kind::BareOper, 2));
    }
    match c {
        '(' => candidates.push((Kind::LParen, 1)),
        ')' => candidates.push((Kind::RParen, 1)),
        ':' => candidates.push((Kind::Colon, 1)),
        '*' => candidates.push((Kind::Star, 1)),
        '^' => candidates.push((Kind::Carat, 1)),
        '"' => candidates.push((Kind::Quoted, quoted_len(chars, i))),
        '~' => candidates.push((Kind::FuzzySlop, 1 + term_chars_run(chars, i + 1))),
        '/' => candidates.push((Kind::RegexpTerm, delimited_len(chars, i, '/', 0))),
        '[' => candidates.push((Kind::RangeInStart, 1)),
        '{' => candidates.push((Kind::RangeExStart, 1)),
        _ => {}
    }
    let start = term_start_len(chars, i);
    let term = if start > 0 {
        start + term_chars_run(chars, i + start)
    } else {
        0
    };
    candidates.push((Kind::Term, term));
    if c == '*' {
        candidates.push((Kind::PrefixTerm, 1));
    } else if term > 0 && chars.get(i + term) == Some(&'*') {
        candidates.push((Kind::PrefixTerm, term + 1));
    }
    let wild_start = if c == '*' || c == '?' { 1 } else { start };
    if wild_start > 0 {
        let mut j = i + wild_start;
        loop {
            if matches!(chars.get(j), Some('*') | Some('?')) {
                j += 1;
                continue;
            }
            let len = term_char_len(chars, j);
            if len == 0 {
                break;
            }
            j += len;
        }
        candidates.push((Kind::WildTerm, j - i));
    }
    pick_longest(candidates)
}

/// The longest non-empty candidate; among equals the one declared first.
fn pick_longest(candidates: Vec<(Kind, usize)>) -> Option<(Kind, usize)> {
    candidates
        .into_iter()
        .filter(|&(_, len)| len > 0)
        .min_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(input: &str) -> Vec<(Kind, String)> {
        tokenize(input)
            .into_iter()
            .map(|t| (t.kind, t.image))
            .collect()
    }

    fn k(input: &str) -> Vec<Kind> {
        tokenize(input).into_iter().map(|t| t.kind).collect()
    }

    #[test]
    fn operators_and_terms() {
        assert_eq!(
            k("a AND b"),
            vec![Kind::Term, Kind::And, Kind::Term, Kind::Eof]
        );
        assert_eq!(
            k("a && b || c"),
            vec![
                Kind::Term,
                Kind::And,
                Kind::Term,
                Kind::Or,
                Kind::Term,
                Kind::Eof
            ]
        );
        assert_eq!(k("NOT a"), vec![Kind::Not, Kind::Term, Kind::Eof]);
        // Lowercase operators and longer words are plain terms.
        assert_eq!(
            k("and ANDY ORe"),
            vec![Kind::Term, Kind::Term, Kind::Term, Kind::Eof]
        );
        // `&` is a term character, so `a&&b` and `&&b` are single terms (longest match).
        assert_eq!(kinds("a&&b")[0], (Kind::Term, "a&&b".into()));
        assert_eq!(kinds("&&b")[0], (Kind::Term, "&&b".into()));
    }

    #[test]
    fn modifiers_and_bare_operators() {
        assert_eq!(
            k("+a -b !c"),
            vec![
                Kind::Plus,
                Kind::Term,
                Kind::Minus,
                Kind::Term,
                Kind::Not,
                Kind::Term,
                Kind::Eof
            ]
        );
        assert_eq!(kinds("a - b")[1], (Kind::BareOper, "- ".into()));
        // A dash inside a word belongs to the word.
        assert_eq!(kinds("foo-bar")[0], (Kind::Term, "foo-bar".into()));
    }

    #[test]
    fn wildcard_prefix_and_fuzzy_terms() {
        assert_eq!(kinds("foo*")[0], (Kind::PrefixTerm, "foo*".into()));
        assert_eq!(kinds("foo*bar")[0], (Kind::WildTerm, "foo*bar".into()));
        assert_eq!(kinds("qu?ck*")[0], (Kind::WildTerm, "qu?ck*".into()));
        assert_eq!(kinds("*foo")[0], (Kind::WildTerm, "*foo".into()));
        assert_eq!(kinds("*")[0], (Kind::Star, "*".into()));
        assert_eq!(k("foo~2"), vec![Kind::Term, Kind::FuzzySlop, Kind::Eof]);
        assert_eq!(kinds("foo~0.5")[1], (Kind::FuzzySlop, "~0.5".into()));
        assert_eq!(kinds("foo\\*")[0], (Kind::Term, "foo\\*".into()));
    }

    #[test]
    fn boost_state_requires_a_number() {
        assert_eq!(
            kinds("a^2.5 b"),
            vec![
                (Kind::Term, "a".into()),
                (Kind::Carat, "^".into()),
                (Kind::Number, "2.5".into()),
                (Kind::Term, "b".into()),
                (Kind::Eof, String::new())
            ]
        );
        let toks = tokenize("a^b");
        assert_eq!(toks.last().unwrap().kind, Kind::LexError);
        assert!(toks
            .last()
            .unwrap()
            .image
            .contains("Encountered: \"b\" (98)"));
        assert_eq!(k("a^"), vec![Kind::Term, Kind::Carat, Kind::Eof]);
    }

    #[test]
    fn quoted_and_regex() {
        assert_eq!(
            kinds(r#""a \"b\" c""#)[0],
            (Kind::Quoted, r#""a \"b\" c""#.into())
        );
        assert_eq!(kinds(r"/a\/b/ c")[0], (Kind::RegexpTerm, r"/a\/b/".into()));
        assert_eq!(kinds("//")[0], (Kind::RegexpTerm, "//".into()));
        let toks = tokenize("\"abc");
        assert_eq!(toks[0].kind, Kind::LexError);
        assert!(toks[0].image.contains("<EOF>"), "{}", toks[0].image);
        assert_eq!(tokenize("a/b").last().unwrap().kind, Kind::LexError);
    }

    #[test]
    fn range_state() {
        assert_eq!(
            k("[1 TO 5]"),
            vec![
                Kind::RangeInStart,
                Kind::RangeGoop,
                Kind::RangeTo,
                Kind::RangeGoop,
                Kind::RangeInEnd,
                Kind::Eof
            ]
        );
        assert_eq!(
            kinds("{a TO \"b c\"}")[3],
            (Kind::RangeQuoted, "\"b c\"".into())
        );
        assert_eq!(kinds("[TOP TO *]")[1], (Kind::RangeGoop, "TOP".into()));
        assert_eq!(
            k("[a TO b} x"),
            vec![
                Kind::RangeInStart,
                Kind::RangeGoop,
                Kind::RangeTo,
                Kind::RangeGoop,
                Kind::RangeExEnd,
                Kind::Term,
                Kind::Eof
            ]
        );
    }

    #[test]
    fn escapes_and_whitespace() {
        assert_eq!(kinds("a\\ b")[0], (Kind::Term, "a\\ b".into()));
        assert_eq!(k("a\u{3000}b"), vec![Kind::Term, Kind::Term, Kind::Eof]);
        assert_eq!(tokenize("a\\").last().unwrap().kind, Kind::LexError);
        assert_eq!(tokenize("a\u{3000}").last().unwrap().offset, 2);
    }

    #[test]
    fn error_message_escapes() {
        assert_eq!(add_escapes("a\"b\n"), "a\\\"b\\n");
        assert_eq!(add_escapes("é"), "\\u00e9");
    }
}
