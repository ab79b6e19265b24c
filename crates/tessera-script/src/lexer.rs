//! Turns script text into tokens, each with the byte offset where it starts: the offsets are
//! what OpenSearch reports as an error's `position`.

use crate::error::ScriptError;

/// A token of the script text.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// A number as written (digits, sign-less, with any `L`/`F`/`D` suffix or `0x` prefix).
    Number(String),
    /// A string literal with its escapes resolved.
    Str(String),
    /// An identifier or keyword.
    Ident(String),
    /// An operator or punctuation mark.
    Punct(&'static str),
    /// A regex literal `/pattern/flags` (the pattern as written, escapes kept).
    Regex { pattern: String, flags: String },
    /// The end of the script.
    Eof,
}

/// A token and its start offset.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub start: usize,
    pub end: usize,
}

/// Longest first, so that `>>>=` wins over `>>>` and `>>`.
const PUNCTS: &[&str] = &[
    ">>>=", "===", "!==", ">>>", "<<=", ">>=", "==~", "?.", "?:", "++", "--", "&&", "||", "==",
    "!=", "<=", ">=", "<<", ">>", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "->", "::", "=~",
    "+", "-", "*", "/", "%", "<", ">", "=", "!", "~", "&", "|", "^", "?", ":", ".", ",", ";", "(",
    ")", "[", "]", "{", "}",
];

/// Splits `source` into tokens, skipping whitespace and `//` / `/* */` comments.
pub fn lex(source: &str) -> Result<Vec<Token>, ScriptError> {
    let bytes = source.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if source[i..].starts_with("//") {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if source[i..].starts_with("/*") {
            match source[i + 2..].find("*/") {
                Some(end) => i += end + 4,
                None => return Err(unexpected(source, i)),
            }
            continue;
        }
        let start = i;
        if c.is_ascii_digit() {
            i = number_end(bytes, i);
            tokens.push(Token {
                tok: Tok::Number(source[start..i].to_string()),
                start,
                end: i,
            });
            continue;
        }
        if c == b'_' || c == b'$' || c.is_ascii_alphabetic() {
            while i < bytes.len()
                && (bytes[i] == b'_' || bytes[i] == b'$' || bytes[i].is_ascii_alphanumeric())
            {
                i += 1;
            }
            tokens.push(Token {
                tok: Tok::Ident(source[start..i].to_string()),
                start,
                end: i,
            });
            continue;
        }
        if c == b'"' || c == b'\'' {
            let (text, end) = string(source, i)?;
            i = end;
            tokens.push(Token {
                tok: Tok::Str(text),
                start,
                end: i,
            });
            continue;
        }
        if c == b'/' && slash_is_regex(tokens.last()) {
            if let Some((pattern, flags, end)) = regex_literal(source, i) {
                tokens.push(Token {
                    tok: Tok::Regex { pattern, flags },
                    start,
                    end,
                });
                i = end;
                continue;
            }
        }
        match PUNCTS.iter().find(|p| source[i..].starts_with(**p)) {
            Some(p) => {
                i += p.len();
                tokens.push(Token {
                    tok: Tok::Punct(p),
                    start,
                    end: i,
                });
            }
            None => return Err(unexpected(source, i)),
        }
    }
    tokens.push(Token {
        tok: Tok::Eof,
        start: source.len(),
        end: source.len(),
    });
    Ok(tokens)
}

/// Whether a `/` after `previous` starts a regex rather than a division: as Painless decides,
/// a division follows what ends an operand (a name, a number, a string, `)`, `]`); after a
/// block's `}` a regex starts a statement.
fn slash_is_regex(previous: Option<&Token>) -> bool {
    match previous.map(|t| &t.tok) {
        None => true,
        Some(Tok::Ident(word)) => {
            matches!(word.as_str(), "return" | "else" | "do" | "in" | "throw")
        }
        Some(Tok::Number(_) | Tok::Str(_) | Tok::Regex { .. }) => false,
        Some(Tok::Punct(p)) => !matches!(*p, ")" | "]"),
        Some(Tok::Eof) => true,
    }
}

/// The regex literal starting with the `/` at `at`: its pattern, flags and end; `None` when
/// the line ends before the closing `/`.
fn regex_literal(source: &str, at: usize) -> Option<(String, String, usize)> {
    let bytes = source.as_bytes();
    let mut i = at + 1;
    loop {
        match bytes.get(i)? {
            b'\\' if bytes.get(i + 1).is_some_and(|c| *c != b'\n') => i += 2,
            b'/' if i > at + 1 => break,
            b'/' | b'\n' => return None,
            _ => i += 1,
        }
    }
    let pattern = source[at + 1..i].to_string();
    let mut end = i + 1;
    while bytes.get(end).is_some_and(|c| b"cilmsUux".contains(c)) {
        end += 1;
    }
    Some((pattern, source[i + 1..end].to_string(), end))
}

fn unexpected(source: &str, at: usize) -> ScriptError {
    let ch: String = source[at..].chars().take(1).collect();
    ScriptError::compile(
        at,
        "illegal_argument_exception",
        format!("unexpected character [{ch}]."),
    )
}

/// The end of the number starting at `i`: decimal, octal, hex, with a fraction, an exponent and
/// a type suffix.
fn number_end(bytes: &[u8], mut i: usize) -> usize {
    if bytes[i] == b'0' && matches!(bytes.get(i + 1), Some(b'x' | b'X')) {
        i += 2;
        while i < bytes.len() && bytes[i].is_ascii_hexdigit() {
            i += 1;
        }
        if matches!(bytes.get(i), Some(b'l' | b'L')) {
            i += 1;
        }
        return i;
    }
    // an octal literal takes octal digits only: `08` is `0` and then `8`
    if bytes[i] == b'0' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
        while i < bytes.len() && (b'0'..=b'7').contains(&bytes[i]) {
            i += 1;
        }
        if matches!(bytes.get(i), Some(b'l' | b'L')) {
            i += 1;
        }
        return i;
    }
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        i += 1;
    }
    if bytes.get(i) == Some(&b'.') && bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i += 1;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(bytes.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if bytes.get(j).is_some_and(u8::is_ascii_digit) {
            i = j;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
        }
    }
    if matches!(bytes.get(i), Some(b'l' | b'L' | b'f' | b'F' | b'd' | b'D')) {
        i += 1;
    }
    i
}

/// A string literal starting at the quote at `i`: its text with escapes resolved (Painless
/// knows `\\`, `\"` and `\'`), and the offset after the closing quote.
fn string(source: &str, i: usize) -> Result<(String, usize), ScriptError> {
    let quote = source.as_bytes()[i] as char;
    let mut out = String::new();
    let mut chars = source[i + 1..].char_indices();
    while let Some((at, ch)) = chars.next() {
        match ch {
            // Painless knows two escapes: `\\` and the string's own quote
            '\\' => match chars.next() {
                Some((_, e)) if e == '\\' || e == quote => out.push(e),
                other => {
                    let end = other.map_or(source.len(), |(at2, c)| i + 1 + at2 + c.len_utf8());
                    return Err(ScriptError::compile(
                        i,
                        "illegal_argument_exception",
                        format!(
                            "unexpected character [{}]. The only valid escape sequences in strings starting with [{quote}] are [\\\\] and [\\{quote}].",
                            &source[i..end]
                        ),
                    ));
                }
            },
            c if c == quote => return Ok((out, i + 1 + at + 1)),
            c => out.push(c),
        }
    }
    Err(unexpected(source, i))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        lex(s).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn numbers_strings_and_operators() {
        assert_eq!(
            toks("x >>>= 0x1fL + 1.5e3f - 0.5; 'a\\'b' \"c\""),
            vec![
                Tok::Ident("x".into()),
                Tok::Punct(">>>="),
                Tok::Number("0x1fL".into()),
                Tok::Punct("+"),
                Tok::Number("1.5e3f".into()),
                Tok::Punct("-"),
                Tok::Number("0.5".into()),
                Tok::Punct(";"),
                Tok::Str("a'b".into()),
                Tok::Str("c".into()),
                Tok::Eof,
            ]
        );
    }

    #[test]
    fn comments_and_offsets() {
        let t = lex("a /* x */ + // y\n b").unwrap();
        assert_eq!(
            t.iter().map(|t| t.start).collect::<Vec<_>>(),
            vec![0, 10, 18, 19]
        );
        assert_eq!(t[1].tok, Tok::Punct("+"));
    }

    #[test]
    fn unterminated_string_is_an_error() {
        assert!(lex("'abc").is_err());
        assert!(lex("a # b").is_err());
        let e = lex("'tab\\there'").unwrap_err();
        assert_eq!(
            e.reason,
            "unexpected character ['tab\\t]. The only valid escape sequences in strings starting with ['] are [\\\\] and [\\'].",
        );
        let octal: Vec<Tok> = lex("08").unwrap().into_iter().map(|t| t.tok).collect();
        assert_eq!(
            octal[..2],
            [Tok::Number("0".into()), Tok::Number("8".into())]
        );
    }
}
