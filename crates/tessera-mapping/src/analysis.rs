//! Analyzers: how text becomes terms, at index time and at query time alike.
//!
//! OpenSearch's default `standard` analyzer is Lucene's StandardTokenizer (Unicode word
//! boundaries, UAX#29) followed by lowercasing. tantivy's `SimpleTokenizer` splits on every
//! non-alphanumeric character, which would turn `don't`, `3.14` or `example.com` into several
//! terms and make phrase and term queries disagree with OpenSearch; so Tessera ships its own
//! word-boundary tokenizer. `simple`, `whitespace` and `keyword` are supported as well.

use tantivy::tokenizer::{
    LowerCaser, RawTokenizer, TextAnalyzer, Token, TokenStream, Tokenizer, WhitespaceTokenizer,
};
use tantivy::Index;

/// The analyzers a `text` field may name.
pub const ANALYZERS: &[&str] = &["standard", "simple", "whitespace", "keyword"];

/// Lucene's default maximum token length; longer words are split.
const MAX_TOKEN_CHARS: usize = 255;

/// Registers every analyzer under its OpenSearch name on a tantivy index.
pub fn register_analyzers(index: &Index) {
    let tokenizers = index.tokenizers();
    for name in ANALYZERS {
        tokenizers.register(name, analyzer(name).expect("known analyzer"));
    }
}

/// Registers everything a shard's schema may name: the analyzers, and the `lowercase`
/// normalizer's tokenizer (for the terms and for the columns of keyword fields).
pub fn register_tokenizers(index: &Index) {
    register_analyzers(index);
    let lowercase_keyword = || {
        TextAnalyzer::builder(RawTokenizer::default())
            .filter(LowerCaser)
            .build()
    };
    let name = crate::field_table::LOWERCASE_KEYWORD_TOKENIZER;
    index.tokenizers().register(name, lowercase_keyword());
    index
        .fast_field_tokenizer()
        .register(name, lowercase_keyword());
}

/// The analyzer called `name`, or `None` when Tessera does not know it.
pub fn analyzer(name: &str) -> Option<TextAnalyzer> {
    match name {
        "standard" => Some(TextAnalyzer::from(StandardTokenizer::default())),
        "simple" => Some(
            TextAnalyzer::builder(LetterTokenizer::default())
                .filter(LowerCaser)
                .build(),
        ),
        "whitespace" => Some(TextAnalyzer::from(WhitespaceTokenizer::default())),
        "keyword" => Some(TextAnalyzer::from(RawTokenizer::default())),
        _ => None,
    }
}

/// The terms of `text` with their positions, as the analyzer `name` produces them.
pub fn analyze(name: &str, text: &str) -> Vec<(usize, String)> {
    tokens(name, text)
        .into_iter()
        .map(|token| (token.position, token.text))
        .collect()
}

/// The tokens of `text` as the analyzer `name` produces them: term, position and byte
/// offsets into `text` (an unknown name analyzes as `standard`).
pub fn tokens(name: &str, text: &str) -> Vec<Token> {
    let mut analyzer =
        analyzer(name).unwrap_or_else(|| TextAnalyzer::from(StandardTokenizer::default()));
    let mut stream = analyzer.token_stream(text);
    let mut out = Vec::new();
    while let Some(token) = stream.next() {
        out.push(token.clone());
    }
    out
}

/// Normalizes one term the way the analyzer would, without splitting it (used for wildcard,
/// prefix and fuzzy terms, which OpenSearch lowercases for text fields).
pub fn normalize(name: &str, term: &str) -> String {
    match name {
        "standard" | "simple" => term.to_lowercase(),
        _ => term.to_string(),
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum WordClass {
    Letter,
    Numeric,
    Katakana,
    /// Han and Hiragana characters: each one is a token of its own.
    Ideographic,
    ExtendNumLet,
    /// Combining marks, joiners: they stick to the character before them.
    Extend,
    MidLetter,
    MidNum,
    MidNumLet,
    SingleQuote,
    Other,
}

fn classify(c: char) -> WordClass {
    let cp = c as u32;
    match c {
        '\'' => return WordClass::SingleQuote,
        '.' | '\u{2018}' | '\u{2019}' | '\u{2024}' | '\u{FE52}' | '\u{FF07}' | '\u{FF0E}' => {
            return WordClass::MidNumLet
        }
        ':' | '\u{00B7}' | '\u{0387}' | '\u{05F4}' | '\u{2027}' | '\u{FE13}' | '\u{FE55}'
        | '\u{FF1A}' => return WordClass::MidLetter,
        ',' | ';' | '\u{037E}' | '\u{0589}' | '\u{060C}' | '\u{060D}' | '\u{066C}' | '\u{07F8}'
        | '\u{2044}' | '\u{FE10}' | '\u{FE14}' | '\u{FE50}' | '\u{FE54}' | '\u{FF0C}'
        | '\u{FF1B}' => return WordClass::MidNum,
        '_'
        | '\u{203F}'
        | '\u{2040}'
        | '\u{2054}'
        | '\u{FE33}'
        | '\u{FE34}'
        | '\u{FE4D}'..='\u{FE4F}'
        | '\u{FF3F}' => return WordClass::ExtendNumLet,
        '\u{200D}' | '\u{200C}' => return WordClass::Extend,
        _ => {}
    }
    if c.is_ascii_alphabetic() {
        return WordClass::Letter;
    }
    if c.is_ascii_digit() {
        return WordClass::Numeric;
    }
    if c.is_ascii() {
        return WordClass::Other;
    }
    if (0x3040..=0x309F).contains(&cp)
        || (0x3400..=0x4DBF).contains(&cp)
        || (0x4E00..=0x9FFF).contains(&cp)
        || (0xF900..=0xFAFF).contains(&cp)
        || (0x20000..=0x2FA1F).contains(&cp)
    {
        return WordClass::Ideographic;
    }
    if (0x30A0..=0x30FF).contains(&cp)
        || (0x31F0..=0x31FF).contains(&cp)
        || (0xFF66..=0xFF9F).contains(&cp)
    {
        return WordClass::Katakana;
    }
    if is_combining_mark(cp) {
        return WordClass::Extend;
    }
    if c.is_numeric() {
        return WordClass::Numeric;
    }
    if c.is_alphabetic() {
        return WordClass::Letter;
    }
    WordClass::Other
}

fn is_combining_mark(cp: u32) -> bool {
    (0x0300..=0x036F).contains(&cp)
        || (0x0483..=0x0489).contains(&cp)
        || (0x0591..=0x05BD).contains(&cp)
        || (0x0610..=0x061A).contains(&cp)
        || (0x064B..=0x065F).contains(&cp)
        || (0x0900..=0x0903).contains(&cp)
        || (0x093A..=0x094F).contains(&cp)
        || (0x1AB0..=0x1AFF).contains(&cp)
        || (0x1DC0..=0x1DFF).contains(&cp)
        || (0x20D0..=0x20FF).contains(&cp)
        || (0xFE00..=0xFE0F).contains(&cp)
        || (0xFE20..=0xFE2F).contains(&cp)
}

/// Splits text at Unicode word boundaries (a practical subset of UAX#29, as Lucene's
/// StandardTokenizer does) and lowercases each word.
#[derive(Clone, Default)]
pub struct StandardTokenizer {
    token: Token,
}

pub struct StandardTokenStream<'a> {
    chars: Vec<(usize, char, WordClass)>,
    text: &'a str,
    cursor: usize,
    token: &'a mut Token,
    pending_split: Option<usize>,
}

impl Tokenizer for StandardTokenizer {
    type TokenStream<'a> = StandardTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> StandardTokenStream<'a> {
        self.token.reset();
        StandardTokenStream {
            chars: text
                .char_indices()
                .map(|(i, c)| (i, c, classify(c)))
                .collect(),
            text,
            cursor: 0,
            token: &mut self.token,
            pending_split: None,
        }
    }
}

impl StandardTokenStream<'_> {
    fn class_at(&self, i: usize) -> Option<WordClass> {
        self.chars.get(i).map(|(_, _, k)| *k)
    }

    fn byte_at(&self, i: usize) -> usize {
        self.chars
            .get(i)
            .map(|(b, _, _)| *b)
            .unwrap_or(self.text.len())
    }

    /// Index one past the end of the word starting at `start`; `base` is the class that decides
    /// which joiners are allowed (letters join through MidLetter, digits through MidNum).
    fn word_end(&self, start: usize) -> usize {
        let mut i = start + 1;
        let mut last = self.chars[start].2;
        while let Some(class) = self.class_at(i) {
            let joins = match class {
                WordClass::Extend => true,
                WordClass::Letter => matches!(
                    last,
                    WordClass::Letter | WordClass::Numeric | WordClass::ExtendNumLet
                ),
                WordClass::Numeric => matches!(
                    last,
                    WordClass::Letter | WordClass::Numeric | WordClass::ExtendNumLet
                ),
                WordClass::Katakana => {
                    matches!(last, WordClass::Katakana | WordClass::ExtendNumLet)
                }
                WordClass::ExtendNumLet => matches!(
                    last,
                    WordClass::Letter
                        | WordClass::Numeric
                        | WordClass::Katakana
                        | WordClass::ExtendNumLet
                ),
                WordClass::MidLetter
                | WordClass::MidNum
                | WordClass::MidNumLet
                | WordClass::SingleQuote => {
                    let next = self.skip_extend(i + 1);
                    let next_class = self.class_at(next);
                    let letter_join = last == WordClass::Letter
                        && matches!(
                            class,
                            WordClass::MidLetter | WordClass::MidNumLet | WordClass::SingleQuote
                        )
                        && next_class == Some(WordClass::Letter);
                    let number_join = last == WordClass::Numeric
                        && matches!(
                            class,
                            WordClass::MidNum | WordClass::MidNumLet | WordClass::SingleQuote
                        )
                        && next_class == Some(WordClass::Numeric);
                    if letter_join || number_join {
                        i = next;
                        continue;
                    }
                    false
                }
                _ => false,
            };
            if !joins {
                break;
            }
            if class != WordClass::Extend {
                last = class;
            }
            i += 1;
        }
        i
    }

    fn skip_extend(&self, mut i: usize) -> usize {
        while self.class_at(i) == Some(WordClass::Extend) {
            i += 1;
        }
        i
    }

    fn emit(&mut self, start: usize, end: usize) {
        let from = self.byte_at(start);
        let to = self.byte_at(end);
        self.token.position = self.token.position.wrapping_add(1);
        self.token.offset_from = from;
        self.token.offset_to = to;
        self.token.text.clear();
        for c in self.text[from..to].chars() {
            self.token.text.extend(c.to_lowercase());
        }
    }
}

impl TokenStream for StandardTokenStream<'_> {
    fn advance(&mut self) -> bool {
        if let Some(end) = self.pending_split.take() {
            // continue a word longer than MAX_TOKEN_CHARS
            let start = self.cursor;
            let stop = (start + MAX_TOKEN_CHARS).min(end);
            self.cursor = stop;
            if stop < end {
                self.pending_split = Some(end);
            }
            self.emit(start, stop);
            return true;
        }
        while self.cursor < self.chars.len() {
            let start = self.cursor;
            match self.chars[start].2 {
                WordClass::Ideographic => {
                    let end = self.skip_extend(start + 1);
                    self.cursor = end;
                    self.emit(start, end);
                    return true;
                }
                WordClass::Letter
                | WordClass::Numeric
                | WordClass::Katakana
                | WordClass::ExtendNumLet => {
                    let end = self.word_end(start);
                    self.cursor = end;
                    let has_alnum = self.chars[start..end].iter().any(|(_, _, k)| {
                        matches!(
                            k,
                            WordClass::Letter | WordClass::Numeric | WordClass::Katakana
                        )
                    });
                    if !has_alnum {
                        continue;
                    }
                    let stop = (start + MAX_TOKEN_CHARS).min(end);
                    if stop < end {
                        self.cursor = stop;
                        self.pending_split = Some(end);
                    }
                    self.emit(start, stop);
                    return true;
                }
                _ => self.cursor += 1,
            }
        }
        false
    }

    fn token(&self) -> &Token {
        self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        self.token
    }
}

/// Lucene's LetterTokenizer: maximal runs of letters (digits and punctuation separate words).
#[derive(Clone, Default)]
pub struct LetterTokenizer {
    token: Token,
}

pub struct LetterTokenStream<'a> {
    text: &'a str,
    chars: std::str::CharIndices<'a>,
    token: &'a mut Token,
}

impl Tokenizer for LetterTokenizer {
    type TokenStream<'a> = LetterTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> LetterTokenStream<'a> {
        self.token.reset();
        LetterTokenStream {
            text,
            chars: text.char_indices(),
            token: &mut self.token,
        }
    }
}

impl TokenStream for LetterTokenStream<'_> {
    fn advance(&mut self) -> bool {
        self.token.text.clear();
        self.token.position = self.token.position.wrapping_add(1);
        while let Some((from, c)) = self.chars.next() {
            if c.is_alphabetic() {
                let to = self
                    .chars
                    .find(|(_, c)| !c.is_alphabetic())
                    .map(|(i, _)| i)
                    .unwrap_or(self.text.len());
                self.token.offset_from = from;
                self.token.offset_to = to;
                self.token.text.push_str(&self.text[from..to]);
                return true;
            }
        }
        false
    }

    fn token(&self) -> &Token {
        self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        self.token
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        analyze("standard", text)
            .into_iter()
            .map(|(_, t)| t)
            .collect()
    }

    #[test]
    fn standard_splits_on_word_boundaries_and_lowercases() {
        assert_eq!(
            words("The Quick-Brown fox!"),
            ["the", "quick", "brown", "fox"]
        );
        assert_eq!(words("don't stop"), ["don't", "stop"]);
        assert_eq!(
            words("pi is 3.14, e is 2,718"),
            ["pi", "is", "3.14", "e", "is", "2,718"]
        );
        assert_eq!(
            words("visit example.com now"),
            ["visit", "example.com", "now"]
        );
        assert_eq!(
            words("ip-10-0-0-1 sshd[42]:"),
            ["ip", "10", "0", "0", "1", "sshd", "42"]
        );
        assert_eq!(words("snake_case_word"), ["snake_case_word"]);
        assert_eq!(words("end. Next"), ["end", "next"]);
        assert_eq!(words("___ --- ..."), Vec::<String>::new());
    }

    #[test]
    fn standard_handles_unicode() {
        assert_eq!(words("Ünïcödé Straße"), ["ünïcödé", "straße"]);
        assert_eq!(words("東京タワー"), ["東", "京", "タワー"]);
        assert_eq!(words("café\u{0301}s"), ["café\u{0301}s"]);
    }

    #[test]
    fn positions_are_consecutive() {
        let tokens = analyze("standard", "a b c");
        assert_eq!(
            tokens.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
            [0, 1, 2]
        );
    }

    #[test]
    fn long_words_are_split_at_255_chars() {
        let long = "a".repeat(600);
        let tokens = words(&long);
        assert_eq!(
            tokens.iter().map(|t| t.len()).collect::<Vec<_>>(),
            [255, 255, 90]
        );
    }

    #[test]
    fn other_analyzers() {
        let simple: Vec<String> = analyze("simple", "R2-D2 Rocks")
            .into_iter()
            .map(|(_, t)| t)
            .collect();
        assert_eq!(simple, ["r", "d", "rocks"]);
        let ws: Vec<String> = analyze("whitespace", "Foo-Bar baz")
            .into_iter()
            .map(|(_, t)| t)
            .collect();
        assert_eq!(ws, ["Foo-Bar", "baz"]);
        let kw: Vec<String> = analyze("keyword", "Foo Bar")
            .into_iter()
            .map(|(_, t)| t)
            .collect();
        assert_eq!(kw, ["Foo Bar"]);
        assert_eq!(normalize("standard", "FoO*"), "foo*");
        assert_eq!(normalize("keyword", "FoO*"), "FoO*");
    }
}
