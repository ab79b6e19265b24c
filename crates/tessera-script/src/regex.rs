//! Painless regexes: `/pattern/flags` literals, `=~` (find) and `==~` (match the whole text),
//! and the `Pattern` and `Matcher` methods scripts call.
//!
//! Java's syntax is translated to the `regex` crate's: `\d`, `\w`, `\s`, `\b` and the POSIX
//! classes (`\p{Alpha}`, ...) stay ASCII as in Java (unless the `U` flag asks for Unicode
//! classes), `.` leaves out every Java line terminator, `\v` and `\h` are Java's, `\Q…\E`
//! quotes. What the crate cannot do (backreferences, lookaround, possessive quantifiers, atomic
//! groups, canonical equivalence, the inline flags `s`, `U`, `d`, `c`) is a compile error
//! naming it. Known differences that remain: Java's `$` also matches before a final line
//! terminator, its `^`/`$` under `m` know `\r` and Unicode line ends, and its `i` without `u`
//! folds ASCII letters only; the crate's do not. The crate matches in time linear in the text,
//! which is the protection OpenSearch's default `script.painless.regex.enabled: limited` buys
//! with a budget of characters read; `false` refuses regexes (see [`set_enabled`]).
//!
//! Positions (`start()`, `end()`) are Java's: UTF-16 units.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Whether scripts may use regexes (`script.painless.regex.enabled`: `true` or `limited`).
static ENABLED: AtomicBool = AtomicBool::new(true);

/// Sets `script.painless.regex.enabled` for this process (a node setting, read at start).
pub fn set_enabled(enabled: bool) {
    ENABLED.store(enabled, Ordering::Relaxed);
}

pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// OpenSearch's compile error when regexes are off.
pub const DISABLED: &str = "Regexes are disabled. Set [script.painless.regex.enabled] to [true] in opensearch.yaml to allow them. Be careful though, regexes break out of Painless's protection against deep recursion and long loops.";

/// A compiled `/pattern/flags` literal.
#[derive(Debug)]
pub struct Pattern {
    source: String,
    /// Leftmost-first search (`find`, `=~`).
    find: regex::Regex,
    /// Anchored at both ends (`matches`, `==~`): with alternations the whole-text match may
    /// not be the leftmost-first one.
    whole: regex::Regex,
}

impl Pattern {
    /// Compiles `source` with Painless's `flags` (`cilmsUux`); the error is the reason of
    /// OpenSearch's `illegal_argument_exception`.
    pub fn compile(source: &str, flags: &str) -> Result<Pattern, String> {
        let invalid = |why: String| {
            format!(
                "invalid regular expression: could not compile regex constant [{source}] with flags [{flags}]: {why}"
            )
        };
        let mut inline = String::new();
        let (mut literal, mut unicode_classes, mut dot_all) = (false, false, false);
        for flag in flags.chars() {
            match flag {
                'i' => inline.push('i'),
                'm' => inline.push('m'),
                's' => {
                    inline.push('s');
                    dot_all = true;
                }
                'x' => inline.push('x'),
                'l' => literal = true,
                'U' => unicode_classes = true,
                // Unicode-aware case folding: the crate folds case by Unicode anyway
                'u' => {}
                'c' => {
                    return Err(invalid(
                        "canonical equivalence (flag [c]) is not supported by Tessera".into(),
                    ))
                }
                other => return Err(invalid(format!("unknown flag [{other}]"))),
            }
        }
        let body = if literal {
            escape_whitespace(&regex::escape(source))
        } else {
            translate(source, unicode_classes, dot_all).map_err(invalid)?
        };
        let prefix = if inline.is_empty() {
            String::new()
        } else {
            format!("(?{inline})")
        };
        let build = |text: String| {
            regex::RegexBuilder::new(&text)
                .size_limit(1 << 20)
                .build()
                .map_err(|e| {
                    // the crate's syntax errors draw the pattern; the last line says why
                    let text = e.to_string();
                    invalid(text.lines().last().unwrap_or_default().trim().to_string())
                })
        };
        Ok(Pattern {
            source: source.to_string(),
            find: build(format!("{prefix}{body}"))?,
            // under `x` a trailing `#` comment would swallow the closing group: end its line
            whole: build(if inline.contains('x') {
                format!("{prefix}\\A(?:{body}\n)\\z")
            } else {
                format!("{prefix}\\A(?:{body})\\z")
            })?,
        })
    }

    /// The pattern as written (`Pattern.pattern()`, `toString()`).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// `text =~ pattern`: whether the pattern occurs in `text`.
    pub fn find_in(&self, text: &str) -> bool {
        self.find.is_match(text)
    }

    /// `text ==~ pattern`: whether the pattern matches all of `text`.
    pub fn matches(&self, text: &str) -> bool {
        self.whole.is_match(text)
    }

    /// The number of capturing groups (`Matcher.groupCount()`).
    pub fn group_count(&self) -> usize {
        self.find.captures_len() - 1
    }
}

/// `Pattern.matcher(text)`: the matches of a pattern in one text, found one at a time.
#[derive(Debug)]
pub struct Matcher {
    pattern: Arc<Pattern>,
    text: Arc<str>,
    /// Where the next `find` starts (bytes).
    from: usize,
    /// The groups of the last match (byte spans), if the last attempt matched.
    groups: Option<Vec<Option<(usize, usize)>>>,
}

/// What `group`, `start` and `end` fail with.
#[derive(Debug, PartialEq)]
pub enum GroupError {
    /// No match attempt succeeded yet (Java's `IllegalStateException`).
    NoMatch,
    /// Java's `IndexOutOfBoundsException`.
    NoGroup(i32),
}

impl Matcher {
    pub fn new(pattern: Arc<Pattern>, text: Arc<str>) -> Matcher {
        Matcher {
            pattern,
            text,
            from: 0,
            groups: None,
        }
    }

    pub fn pattern(&self) -> &Arc<Pattern> {
        &self.pattern
    }

    /// `find()`: the next match after the previous one.
    pub fn find(&mut self) -> bool {
        if self.from > self.text.len() {
            self.groups = None;
            return false;
        }
        self.groups = spans(self.pattern.find.captures_at(&self.text, self.from));
        if let Some(Some((start, end))) = self.groups.as_ref().map(|g| g[0]) {
            self.from = self.after(start, end);
        }
        self.groups.is_some()
    }

    /// `find(start)`: resets, then finds from UTF-16 index `start`; `None` when it is out of
    /// the text.
    pub fn find_from(&mut self, start: i32) -> Option<bool> {
        let byte = byte_of(&self.text, start)?;
        self.from = byte;
        Some(self.find())
    }

    /// `matches()`: whether the whole text matches.
    /// `matches()`: whether the whole text matches. As in Java, a failure leaves where the
    /// next `find` starts; a success moves it past the match.
    pub fn matches(&mut self) -> bool {
        self.groups = spans(self.pattern.whole.captures(&self.text));
        if let Some(Some((start, end))) = self.groups.as_ref().map(|g| g[0]) {
            self.from = self.after(start, end);
        }
        self.groups.is_some()
    }

    /// Where the search after the match `start..end` starts: one character later after an
    /// empty match (as Java).
    fn after(&self, start: usize, end: usize) -> usize {
        if end == start {
            end + self.text[end..].chars().next().map_or(1, char::len_utf8)
        } else {
            end
        }
    }

    /// Java's `toString`: `java.util.regex.Matcher[pattern=a region=0,3 lastmatch=a]`.
    pub fn to_java_string(&self) -> String {
        let last = self.group(0).ok().flatten().unwrap_or_default();
        format!(
            "java.util.regex.Matcher[pattern={} region=0,{} lastmatch={last}]",
            self.pattern.source(),
            utf16_len(&self.text)
        )
    }

    /// `reset()`.
    pub fn reset(&mut self) {
        self.from = 0;
        self.groups = None;
    }

    fn span(&self, group: i32) -> Result<Option<(usize, usize)>, GroupError> {
        let groups = self.groups.as_ref().ok_or(GroupError::NoMatch)?;
        usize::try_from(group)
            .ok()
            .and_then(|g| groups.get(g).copied())
            .ok_or(GroupError::NoGroup(group))
    }

    /// `group(n)`: the text of group `n` of the last match (`None`: the group took no part).
    pub fn group(&self, group: i32) -> Result<Option<&str>, GroupError> {
        Ok(self.span(group)?.map(|(s, e)| &self.text[s..e]))
    }

    /// `namedGroup(name)` (Painless's augmentation): the named group's text, `None` when the
    /// group took no part; `Err(None)` when there is no such group.
    pub fn named_group(&self, name: &str) -> Result<Option<&str>, Option<GroupError>> {
        let index = self
            .pattern
            .find
            .capture_names()
            .position(|n| n == Some(name))
            .ok_or(None)?;
        self.group(index as i32).map_err(Some)
    }

    /// `start(n)` / `end(n)` in UTF-16 units (-1 when the group took no part).
    pub fn bound(&self, group: i32, end: bool) -> Result<i32, GroupError> {
        Ok(match self.span(group)? {
            Some((s, e)) => utf16_len(&self.text[..if end { e } else { s }]),
            None => -1,
        })
    }
}

/// The byte spans of a match's groups.
fn spans(found: Option<regex::Captures<'_>>) -> Option<Vec<Option<(usize, usize)>>> {
    found.map(|c| c.iter().map(|m| m.map(|m| (m.start(), m.end()))).collect())
}

/// The length of `text` in UTF-16 units (Java's string indices).
fn utf16_len(text: &str) -> i32 {
    text.chars().map(char::len_utf16).sum::<usize>() as i32
}

/// The byte offset of UTF-16 index `index` of `text` (one past the end is the end).
fn byte_of(text: &str, index: i32) -> Option<usize> {
    let mut units = 0i32;
    for (byte, c) in text.char_indices() {
        if units == index {
            return Some(byte);
        }
        units += c.len_utf16() as i32;
    }
    (units == index).then_some(text.len())
}

/// Java's POSIX classes (`\p{Lower}`, ...), which are ASCII in Java, as sets.
fn posix_class(name: &str) -> Option<&'static str> {
    Some(match name {
        "Lower" => "a-z",
        "Upper" => "A-Z",
        "ASCII" => "\\x00-\\x7F",
        "Alpha" => "a-zA-Z",
        "Digit" => "0-9",
        "Alnum" => "a-zA-Z0-9",
        "Punct" => "!-/:-@\\[-`{-~",
        "Graph" => "!-~",
        "Print" => "\\x20-~",
        "Blank" => "\\x20\\t",
        "Cntrl" => "\\x00-\\x1F\\x7F",
        "XDigit" => "0-9a-fA-F",
        "Space" => "\\x20\\t\\n\\x0B\\f\\r",
        _ => return None,
    })
}

/// `text` with every whitespace character escaped, so that the `x` flag (which makes the
/// crate ignore whitespace in the pattern) keeps it.
fn escape_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_whitespace() {
            out.push_str(&format!("\\x{{{:X}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// Writes the character set `set` (`a-z`, the inside of brackets): bracketed on its own,
/// merged into the enclosing class inside one. A negated set inside a class would need class
/// subtraction, which the translation does not do: it is refused.
fn push_set(out: &mut String, set: &str, negated: bool, in_class: bool) -> Result<(), String> {
    match (in_class, negated) {
        (true, false) => out.push_str(set),
        (true, true) => {
            return Err(
                "negated classes inside a character class are not supported by Tessera".into(),
            )
        }
        (false, negated) => {
            out.push_str(if negated { "[^" } else { "[" });
            out.push_str(set);
            out.push(']');
        }
    }
    Ok(())
}

/// Java regex syntax in the `regex` crate's.
fn translate(java: &str, unicode_classes: bool, dot_all: bool) -> Result<String, String> {
    let unsupported = |what: &str| format!("{what} are not supported by Tessera");
    let chars: Vec<char> = java.chars().collect();
    let mut out = String::with_capacity(java.len() + 16);
    let mut in_class = false;
    let mut i = 0;
    // the ASCII sets Java gives `\d`, `\w`, `\s` (whitespace escaped for the `x` flag)
    let set_of = |escape: char| match escape.to_ascii_lowercase() {
        'd' => "0-9",
        'w' => "0-9A-Za-z_",
        _ => "\\t\\n\\x0B\\x0C\\r\\x20",
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                let Some(&next) = chars.get(i + 1) else {
                    return Err("unexpected internal error: trailing backslash".into());
                };
                i += 2;
                match next {
                    'd' | 'w' | 's' | 'D' | 'W' | 'S' if !unicode_classes => {
                        push_set(&mut out, set_of(next), next.is_ascii_uppercase(), in_class)?
                    }
                    'b' | 'B' if !unicode_classes && !in_class => {
                        out.push_str(if next == 'b' {
                            "(?-u:\\b)"
                        } else {
                            "(?-u:\\B)"
                        });
                    }
                    // Java's vertical and horizontal whitespace
                    'v' | 'h' => {
                        let set = if next == 'v' {
                            "\\n\\x0B\\x0C\\r\\x{85}\\x{2028}\\x{2029}"
                        } else {
                            "\\x20\\t\\x{A0}\\x{1680}\\x{180E}\\x{2000}-\\x{200A}\\x{202F}\\x{205F}\\x{3000}"
                        };
                        push_set(&mut out, set, false, in_class)?
                    }
                    'p' | 'P' if chars.get(i) == Some(&'{') => {
                        let close = chars[i..].iter().position(|c| *c == '}');
                        let name: String = match close {
                            Some(close) => chars[i + 1..i + close].iter().collect(),
                            None => String::new(),
                        };
                        match (posix_class(&name), close) {
                            (Some(set), Some(close)) if !unicode_classes => {
                                push_set(&mut out, set, next == 'P', in_class)?;
                                i += close + 1;
                            }
                            // Unicode categories and scripts: the crate's names
                            _ => {
                                out.push('\\');
                                out.push(next);
                            }
                        }
                    }
                    '1'..='9' => return Err(unsupported("backreferences")),
                    'Q' => {
                        let rest: String = chars[i..].iter().collect();
                        let (quoted, skip) = match rest.find("\\E") {
                            Some(end) => (&rest[..end], end + 2),
                            None => (rest.as_str(), rest.len()),
                        };
                        out.push_str(&escape_whitespace(&regex::escape(quoted)));
                        i += quoted.chars().count() + (skip - quoted.len());
                    }
                    // `\/` is how a literal writes a slash
                    '/' => out.push('/'),
                    other => {
                        out.push('\\');
                        out.push(other);
                    }
                }
                continue;
            }
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                // a `]` or `^]` right after the opening bracket is literal
                if chars.get(i + 1) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                if chars.get(i + 1) == Some(&']') {
                    out.push_str("\\]");
                    i += 1;
                }
            }
            '[' => {
                return Err(unsupported("nested character classes"));
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            '.' if !in_class && !dot_all => out.push_str("[^\\n\\r\\x{85}\\x{2028}\\x{2029}]"),
            '(' if !in_class && chars.get(i + 1) == Some(&'?') => {
                let rest: String = chars[i + 2..].iter().take(2).collect();
                if rest.starts_with('=')
                    || rest.starts_with('!')
                    || rest.starts_with("<=")
                    || rest.starts_with("<!")
                {
                    return Err(unsupported("lookahead and lookbehind groups"));
                }
                if rest.starts_with('>') {
                    return Err(unsupported("atomic groups"));
                }
                // inline flags: `i`, `m`, `x` and `u` mean the same to the crate; Java's
                // `s`, `U`, `d` and `c` would not (the translation has already fixed what `.`
                // and the classes match)
                let flags: String = chars[i + 2..]
                    .iter()
                    .take_while(|c| c.is_ascii_alphabetic() || **c == '-')
                    .collect();
                let ends = chars.get(i + 2 + flags.chars().count());
                if matches!(ends, Some(')' | ':'))
                    && flags.chars().any(|f| matches!(f, 's' | 'U' | 'd' | 'c'))
                {
                    return Err(format!(
                        "the inline flags [{flags}] are not supported by Tessera (write them after the closing slash)"
                    ));
                }
                out.push('(');
            }
            '*' | '+' | '?' | '}' if !in_class && chars.get(i + 1) == Some(&'+') => {
                return Err(unsupported("possessive quantifiers"));
            }
            other => out.push(other),
        }
        i += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(source: &str, flags: &str) -> Arc<Pattern> {
        Arc::new(Pattern::compile(source, flags).unwrap())
    }

    #[test]
    fn find_and_match_as_java() {
        assert!(p("b", "").find_in("abc"));
        assert!(!p("b", "").matches("abc"));
        assert!(p("a.c", "").matches("abc"));
        // the whole-text match is not the leftmost-first one
        assert!(p("a|ab", "").matches("ab"));
        assert!(p("A", "i").matches("a"));
        // Java's classes are ASCII, its dot leaves out line terminators
        assert!(!p("\\w", "").find_in("é"));
        assert!(p("\\w", "U").find_in("é"));
        assert!(p("[\\d-]+", "").matches("1-2"));
        assert!(!p("a.b", "").matches("a\rb"));
        assert!(p("a.b", "s").matches("a\rb"));
        assert!(p("\\bcat\\b", "").find_in("a cat!"));
        assert!(p("a\\/b", "").matches("a/b"));
        assert!(p("\\Q.*\\E!", "").matches(".*!"));
        assert!(p(".*", "l").matches(".*"));
        assert!(p("[]a]", "").matches("]"));
        // under `x` whitespace in the pattern is ignored, but not the translated classes'
        assert!(p("a\\sb # a comment", "x").find_in("a b"));
        assert!(p("a\\sb # a comment", "x").matches("a b"));
        assert!(!p("\\S", "x").find_in(" "));
        assert!(p("\\Qa b\\E", "x").matches("a b"));
        assert!(p("a b", "lx").matches("a b"));
        // Java's POSIX classes are ASCII; \v and \h are Java's
        assert!(p("\\p{Alpha}+", "").matches("abC"));
        assert!(!p("\\p{Alpha}", "").find_in("é"));
        assert!(p("[\\p{Digit}x]+", "").matches("1x2"));
        assert!(p("a\\vb", "").matches("a\u{2028}b"));
        assert!(p("a\\hb", "").matches("a\tb"));
        assert!(p("(?i)abc", "").matches("ABC"));
    }

    #[test]
    fn what_the_crate_cannot_do_is_an_error() {
        for (source, what) in [
            ("(a)\\1", "backreferences"),
            ("a(?=b)", "lookahead"),
            ("(?<!a)b", "lookahead"),
            ("(?>a)", "atomic"),
            ("a++", "possessive"),
            ("(?s)a.b", "inline flags [s]"),
            ("(?U)\\w", "inline flags [U]"),
            ("[\\D]", "negated classes"),
        ] {
            let e = Pattern::compile(source, "").unwrap_err();
            assert!(e.contains(what), "{source}: {e}");
            assert!(e.starts_with(&format!(
                "invalid regular expression: could not compile regex constant [{source}] with flags []"
            )));
        }
        assert!(Pattern::compile("a(", "").is_err());
        assert!(Pattern::compile("a", "c").is_err());
        assert!(Pattern::compile("a", "q").is_err());
    }

    #[test]
    fn a_matcher_walks_matches_with_groups_and_java_positions() {
        let pattern = p("(a)(?<x>b)?", "");
        assert_eq!(pattern.group_count(), 2);
        let mut m = Matcher::new(pattern.clone(), Arc::from("zab é ac"));
        assert_eq!(m.group(0), Err(GroupError::NoMatch));
        assert!(m.find());
        assert_eq!(m.group(0), Ok(Some("ab")));
        assert_eq!(m.named_group("x"), Ok(Some("b")));
        assert_eq!((m.bound(0, false), m.bound(0, true)), (Ok(1), Ok(3)));
        assert!(m.find());
        assert_eq!(m.group(2), Ok(None));
        assert_eq!(m.bound(2, false), Ok(-1));
        // `é` is one UTF-16 unit, two bytes
        assert_eq!(m.bound(0, false), Ok(6));
        assert_eq!(m.group(3), Err(GroupError::NoGroup(3)));
        assert!(!m.find());
        assert_eq!(m.group(0), Err(GroupError::NoMatch));
        assert_eq!(m.find_from(2), Some(true));
        assert_eq!(m.bound(0, false), Ok(6));
        assert_eq!(m.find_from(99), None);
        assert!(m.matches() == pattern.matches("zab é ac"));
        // a failed `matches` leaves where `find` goes on; a successful one moves past it
        let mut m = Matcher::new(p("b", ""), Arc::from("abc"));
        assert!(!m.matches());
        assert!(m.find());
        let mut empty = Matcher::new(p("", ""), Arc::from(""));
        assert!(empty.matches());
        assert!(!empty.find());
        // empty matches advance one character at a time
        let mut empty = Matcher::new(p("x*", ""), Arc::from("ab"));
        let mut count = 0;
        while empty.find() {
            count += 1;
        }
        assert_eq!(count, 3);
    }
}
