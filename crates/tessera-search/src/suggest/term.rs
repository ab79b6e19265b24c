//! The `term` suggester: for each token of the text, the shard's terms within two edits of
//! it, as Lucene's `DirectSpellChecker` finds them (OpenSearch's term suggester is that
//! spell checker run on each shard, then merged).
//!
//! On a shard, for each token: nothing when it is shorter than `min_word_length`, present in
//! the index under `suggest_mode: missing`, or too frequent (`max_term_freq`); otherwise the
//! candidates within one edit are ranked first, and, when they are fewer than
//! `shard_size × max_inspections`, those within `max_edits` join them. Each pass keeps that
//! many by similarity (then term order), skipping the token itself, terms not more frequent
//! than the threshold (`min_doc_freq`; under `popular`, the token's own frequency) and
//! those less similar than `accuracy`. The survivors are sorted by `sort` and cut to
//! `shard_size`. The coordinator adds up the frequencies of an option several shards found,
//! keeps its best score, sorts again and cuts to `size`.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap};

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tantivy::schema::Field;
use tantivy::{Searcher, Term};
use tessera_common::error::json_token as token;
use tessera_common::{Error, Result};
use tessera_mapping::analysis::{self, ANALYZERS};
use tessera_mapping::{FieldTable, LeafKind};
use tessera_query::compile::{fuzzy_candidates, FuzzyAutomaton};

/// The term suggester's options, defaults as OpenSearch's.
#[derive(Clone, Debug, PartialEq)]
pub struct TermSuggester {
    pub field: String,
    /// Analyzes the text (default: the field's search analyzer).
    pub analyzer: Option<String>,
    /// Options per token in the answer.
    pub size: usize,
    /// Options per token each shard returns (default: `size`, at least 5).
    pub shard_size: Option<i64>,
    pub suggest_mode: SuggestMode,
    pub sort: SortBy,
    pub string_distance: StringDistance,
    /// The least similarity an option must have.
    pub accuracy: f32,
    pub max_edits: u8,
    /// Candidates inspected per option asked for.
    pub max_inspections: usize,
    /// Tokens in more documents than this (a fraction of the shard's documents below 1, a
    /// count from 1) get no suggestions.
    pub max_term_freq: f32,
    /// Leading characters a candidate shares with the token.
    pub prefix_length: u32,
    /// Shorter tokens get no suggestions.
    pub min_word_length: usize,
    /// Candidates in fewer documents are left out (a fraction below 1, a count from 1).
    pub min_doc_freq: f32,
}

/// When a token gets suggestions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SuggestMode {
    /// Only when it is not in the shard.
    Missing,
    /// Only terms in more documents than it.
    Popular,
    Always,
}

impl SuggestMode {
    /// The mode a name (any case) stands for.
    pub fn resolve(name: &str) -> Result<SuggestMode> {
        match name.to_uppercase().as_str() {
            "MISSING" => Ok(SuggestMode::Missing),
            "POPULAR" => Ok(SuggestMode::Popular),
            "ALWAYS" => Ok(SuggestMode::Always),
            other => Err(no_enum_constant(
                "term.TermSuggestionBuilder.SuggestMode",
                other,
            )),
        }
    }
}

/// How options are ranked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortBy {
    /// Similarity, then frequency, then text.
    Score,
    /// Frequency, then similarity, then text.
    Frequency,
}

/// How an option's similarity to the token is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StringDistance {
    /// The edit distance the candidates were found with, over the shorter length.
    Internal,
    /// Edits with transpositions, over the shorter length.
    DamerauLevenshtein,
    /// Edits without transpositions, over the longer length.
    Levenshtein,
    JaroWinkler,
}

/// A token of the text and its options.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TermEntry {
    /// The token as analyzed.
    pub text: String,
    /// Where it is in the text, in UTF-16 code units (Java's string offsets).
    pub offset: u32,
    pub length: u32,
    pub options: Vec<TermOption>,
}

/// A suggested term.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TermOption {
    pub text: String,
    pub score: f32,
    /// Documents holding it (on a shard; summed over shards).
    pub freq: u64,
}

impl TermSuggester {
    /// A suggester on `field` with OpenSearch's defaults.
    pub fn new(field: String) -> TermSuggester {
        TermSuggester {
            field,
            analyzer: None,
            size: 5,
            shard_size: None,
            suggest_mode: SuggestMode::Missing,
            sort: SortBy::Score,
            string_distance: StringDistance::Internal,
            accuracy: 0.5,
            max_edits: 2,
            max_inspections: 5,
            max_term_freq: 0.01,
            prefix_length: 1,
            min_word_length: 4,
            min_doc_freq: 0.0,
        }
    }

    /// Parses the `term` object of a suggestion.
    pub fn parse(value: &Value) -> Result<TermSuggester> {
        let Value::Object(map) = value else {
            return Err(Error::parsing(format!(
                "suggester[term] must be an object, got a {}",
                token(value)
            )));
        };
        let mut field = None;
        let mut suggester = TermSuggester::new(String::new());
        for (key, value) in map {
            match key.as_str() {
                "field" => field = Some(string_option(key, value)?),
                "analyzer" => suggester.analyzer = Some(string_option(key, value)?),
                "size" => {
                    let size = int_option(key, value)?;
                    if size <= 0 {
                        return Err(Error::illegal_argument("size must be positive"));
                    }
                    suggester.size = size as usize;
                }
                "shard_size" => suggester.shard_size = Some(int_option(key, value)?),
                "suggest_mode" => {
                    suggester.suggest_mode = SuggestMode::resolve(&string_option(key, value)?)?
                }
                "sort" => {
                    suggester.sort = match enum_option(key, value)?.as_str() {
                        "SCORE" => SortBy::Score,
                        "FREQUENCY" => SortBy::Frequency,
                        other => return Err(no_enum_constant("SortBy", other)),
                    }
                }
                "string_distance" => {
                    suggester.string_distance = match enum_option(key, value)?.as_str() {
                        "INTERNAL" => StringDistance::Internal,
                        "DAMERAU_LEVENSHTEIN" => StringDistance::DamerauLevenshtein,
                        "LEVENSHTEIN" => StringDistance::Levenshtein,
                        "JARO_WINKLER" => StringDistance::JaroWinkler,
                        "NGRAM" => {
                            return Err(Error::not_supported(
                                "[string_distance] [ngram] in the term suggester",
                            ))
                        }
                        _ => {
                            return Err(Error::illegal_argument(format!(
                                "Illegal distance option {}",
                                string_option(key, value)?
                            )))
                        }
                    }
                }
                "accuracy" => {
                    let accuracy = float_option(key, value)?;
                    if !(0.0..=1.0).contains(&accuracy) {
                        return Err(Error::illegal_argument("accuracy must be between 0 and 1"));
                    }
                    suggester.accuracy = accuracy;
                }
                "max_edits" => {
                    let edits = int_option(key, value)?;
                    if !(1..=2).contains(&edits) {
                        return Err(Error::illegal_argument("maxEdits must be between 1 and 2"));
                    }
                    suggester.max_edits = edits as u8;
                }
                "max_inspections" => {
                    let inspections = int_option(key, value)?;
                    if inspections <= 0 {
                        return Err(Error::illegal_argument("maxInspections must be positive"));
                    }
                    suggester.max_inspections = inspections as usize;
                }
                "max_term_freq" => {
                    let freq = float_option(key, value)?;
                    if freq < 0.0 {
                        return Err(Error::illegal_argument("maxTermFreq must be positive"));
                    }
                    suggester.max_term_freq = freq;
                }
                "prefix_length" => {
                    let length = int_option(key, value)?;
                    if length < 0 {
                        return Err(Error::illegal_argument("prefixLength must be positive"));
                    }
                    suggester.prefix_length = length as u32;
                }
                "min_word_length" => {
                    let length = int_option(key, value)?;
                    if length < 1 {
                        return Err(Error::illegal_argument(
                            "minWordLength must be greater or equal to 1",
                        ));
                    }
                    suggester.min_word_length = length as usize;
                }
                "min_doc_freq" => {
                    let freq = float_option(key, value)?;
                    if freq < 0.0 {
                        return Err(Error::illegal_argument("minDocFreq must be positive"));
                    }
                    suggester.min_doc_freq = freq;
                }
                other => {
                    return Err(Error::parsing(format!(
                        "suggester[term] doesn't support field [{other}]"
                    )))
                }
            }
        }
        suggester.field = field.ok_or_else(|| {
            Error::new(
                "parse_exception",
                400,
                "the required field option [field] is missing".to_string(),
            )
        })?;
        Ok(suggester)
    }

    /// The suggestions of one shard for `text`.
    pub fn run(
        &self,
        text: &str,
        searcher: &Searcher,
        table: &FieldTable,
    ) -> Result<Vec<TermEntry>> {
        let shard_size = match self.shard_size {
            Some(n) if n <= 0 => {
                return Err(Error::illegal_argument(format!(
                    "ShardSize must be positive but was: {n}"
                )))
            }
            Some(n) => n as usize,
            None => self.size.max(5),
        };
        let leaf = table.leaf(&self.field).ok_or_else(|| {
            Error::illegal_argument(format!("no mapping found for field [{}]", self.field))
        })?;
        if let Some(name) = &self.analyzer {
            if !ANALYZERS.contains(&name.as_str()) {
                return Err(Error::illegal_argument(format!(
                    "analyzer [{name}] doesn't exists"
                )));
            }
        }
        // the analyzer, and the terms dictionary the candidates come from (only text and
        // keyword fields hold terms a spell checker can offer)
        let (analyzer, lowercase, field) = match &leaf.kind {
            LeafKind::Text {
                search_analyzer, ..
            } => (search_analyzer.as_str(), false, leaf.field),
            LeafKind::Keyword { lowercase, .. } => ("keyword", *lowercase, leaf.field),
            _ => ("keyword", false, None),
        };
        let field = field.filter(|_| leaf.indexed);
        let analyzer = self.analyzer.as_deref().unwrap_or(analyzer);
        let shard = ShardTerms::new(searcher, field);
        analysis::tokens(analyzer, text)
            .into_iter()
            .map(|token| {
                let term = match lowercase {
                    true => token.text.to_lowercase(),
                    false => token.text,
                };
                let options = match &shard {
                    Some(shard) => self.suggest_similar(&term, shard, shard_size)?,
                    None => Vec::new(),
                };
                let before = &text[..token.offset_from.min(text.len())];
                let within = text
                    .get(token.offset_from..token.offset_to)
                    .unwrap_or_default();
                Ok(TermEntry {
                    text: term,
                    offset: before.encode_utf16().count() as u32,
                    length: within.encode_utf16().count() as u32,
                    options,
                })
            })
            .collect()
    }

    /// `DirectSpellChecker.suggestSimilar` for one token: at most `shard_size` options.
    fn suggest_similar(
        &self,
        term: &str,
        shard: &ShardTerms,
        shard_size: usize,
    ) -> Result<Vec<TermOption>> {
        if term.chars().count() < self.min_word_length {
            return Ok(Vec::new());
        }
        let doc_freq = shard.doc_freq(term)?;
        if self.suggest_mode == SuggestMode::Missing && doc_freq > 0 {
            return Ok(Vec::new());
        }
        let max_doc = shard.max_doc as f32;
        let too_frequent = if self.max_term_freq >= 1.0 {
            doc_freq as f32 > self.max_term_freq
        } else {
            doc_freq as f64 > (self.max_term_freq * max_doc).ceil() as f64
        };
        if too_frequent {
            return Ok(Vec::new());
        }
        // options must be in more documents than this
        let mut threshold = match self.suggest_mode {
            SuggestMode::Popular => doc_freq as i64,
            _ => 0,
        };
        if self.min_doc_freq >= 1.0 {
            threshold = threshold.max(self.min_doc_freq as i64);
        } else if self.min_doc_freq > 0.0 {
            threshold = threshold.max((self.min_doc_freq * max_doc) as i64 - 1);
        }
        let inspections = shard_size.saturating_mul(self.max_inspections);
        let mut found = self.pass(term, shard, 1, self.prefix_length, inspections, threshold)?;
        if self.max_edits > 1 && found.len() < inspections {
            let prefix = self.prefix_length.max(u32::from(self.max_edits) - 1);
            for option in self.pass(term, shard, self.max_edits, prefix, inspections, threshold)? {
                if !found.iter().any(|known| known.text == option.text) {
                    found.push(option);
                }
            }
        }
        found.sort_by(|a, b| self.sort.compare(a, b));
        found.truncate(shard_size);
        Ok(found)
    }

    /// One pass of the spell checker: the `keep` most similar candidates within `edits`
    /// (ties: the lower term), in no particular order.
    fn pass(
        &self,
        term: &str,
        shard: &ShardTerms,
        edits: u8,
        prefix_length: u32,
        keep: usize,
        threshold: i64,
    ) -> Result<Vec<TermOption>> {
        let automaton = FuzzyAutomaton {
            text: term,
            distance: edits,
            prefix_length,
            transpositions: true,
        };
        let candidates = fuzzy_candidates(&shard.searcher, shard.field, &automaton)
            .map_err(|e| Error::internal("enumerate the suggester's candidates", e))?;
        // the least competitive on top: the lowest similarity, then the highest term
        let mut queue: BinaryHeap<std::cmp::Reverse<Ranked>> = BinaryHeap::new();
        for candidate in candidates {
            let similarity = candidate.similarity;
            if queue.len() >= keep
                && queue
                    .peek()
                    .is_some_and(|least| similarity <= least.0.similarity)
            {
                continue;
            }
            if candidate.term == term.as_bytes() || candidate.doc_freq as i64 <= threshold {
                continue;
            }
            let Ok(text) = String::from_utf8(candidate.term) else {
                continue;
            };
            let score = match self.string_distance {
                StringDistance::Internal => similarity,
                other => other.similarity(term, &text),
            };
            if score < self.accuracy {
                continue;
            }
            queue.push(std::cmp::Reverse(Ranked {
                similarity: score,
                text,
                freq: candidate.doc_freq,
            }));
            if queue.len() > keep {
                queue.pop();
            }
        }
        Ok(queue
            .into_iter()
            .map(|ranked| TermOption {
                text: ranked.0.text,
                score: ranked.0.similarity,
                freq: ranked.0.freq,
            })
            .collect())
    }

    /// Merges the shards' entries for one suggestion and renders them.
    pub fn reduce(&self, shards: Vec<Vec<TermEntry>>) -> Result<Value> {
        let mut shards = shards.into_iter();
        let mut entries = shards.next().unwrap_or_default();
        let mut merged: Vec<BTreeMap<String, TermOption>> = entries
            .iter_mut()
            .map(|entry| {
                std::mem::take(&mut entry.options)
                    .into_iter()
                    .map(|option| (option.text.clone(), option))
                    .collect()
            })
            .collect();
        for shard in shards {
            if shard.len() != entries.len() {
                return Err(Error::illegal_state(
                    "shards analyzed a suggestion's text into different tokens",
                ));
            }
            for (options, entry) in merged.iter_mut().zip(shard) {
                for option in entry.options {
                    match options.get_mut(&option.text) {
                        Some(known) => {
                            known.score = known.score.max(option.score);
                            known.freq += option.freq;
                        }
                        None => {
                            options.insert(option.text.clone(), option);
                        }
                    }
                }
            }
        }
        let rendered: Vec<Value> = entries
            .into_iter()
            .zip(merged)
            .map(|(entry, options)| {
                let mut options: Vec<TermOption> = options.into_values().collect();
                options.sort_by(|a, b| self.sort.compare(a, b));
                options.truncate(self.size);
                let options: Vec<Value> = options
                    .into_iter()
                    .map(|o| {
                        json!({
                            "text": o.text,
                            "score": crate::source_fields::float_value(o.score),
                            "freq": o.freq,
                        })
                    })
                    .collect();
                let mut out = Map::new();
                out.insert("text".into(), json!(entry.text));
                out.insert("offset".into(), json!(entry.offset));
                out.insert("length".into(), json!(entry.length));
                out.insert("options".into(), Value::Array(options));
                Value::Object(out)
            })
            .collect();
        Ok(Value::Array(rendered))
    }
}

/// The shard's terms of the suggested field.
struct ShardTerms {
    searcher: Searcher,
    field: Field,
    /// Documents in the shard, deleted ones included (Lucene's `maxDoc`).
    max_doc: u64,
}

impl ShardTerms {
    fn new(searcher: &Searcher, field: Option<Field>) -> Option<ShardTerms> {
        Some(ShardTerms {
            searcher: searcher.clone(),
            field: field?,
            max_doc: searcher
                .segment_readers()
                .iter()
                .map(|s| u64::from(s.max_doc()))
                .sum(),
        })
    }

    fn doc_freq(&self, term: &str) -> Result<u64> {
        self.searcher
            .doc_freq(&Term::from_field_text(self.field, term))
            .map_err(|e| Error::internal("read a term's document frequency", e))
    }
}

/// A candidate in a pass's queue, ordered from the least competitive.
struct Ranked {
    similarity: f32,
    text: String,
    freq: u64,
}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        self.similarity
            .total_cmp(&other.similarity)
            .then_with(|| other.text.cmp(&self.text))
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ranked {}

impl SortBy {
    /// The order of options, best first.
    fn compare(self, a: &TermOption, b: &TermOption) -> Ordering {
        let by_score = b.score.total_cmp(&a.score);
        let by_freq = b.freq.cmp(&a.freq);
        let first = match self {
            SortBy::Score => by_score.then(by_freq),
            SortBy::Frequency => by_freq.then(by_score),
        };
        first.then_with(|| a.text.cmp(&b.text))
    }
}

impl StringDistance {
    /// The similarity of two strings in `[0, 1]`, computed as Lucene's `StringDistance`
    /// implementations compute it (in single precision, so scores print alike).
    fn similarity(self, a: &str, b: &str) -> f32 {
        let a: Vec<char> = a.chars().collect();
        let b: Vec<char> = b.chars().collect();
        match self {
            StringDistance::Internal | StringDistance::DamerauLevenshtein => {
                if a.is_empty() || b.is_empty() {
                    return if a.len() == b.len() {
                        0.0
                    } else {
                        a.len().max(b.len()) as f32
                    };
                }
                let edits = edit_distance(&a, &b, true);
                1.0 - edits as f32 / a.len().min(b.len()) as f32
            }
            StringDistance::Levenshtein => {
                if a.is_empty() || b.is_empty() {
                    return if a.len() == b.len() { 1.0 } else { 0.0 };
                }
                let edits = edit_distance(&a, &b, false);
                1.0 - edits as f32 / a.len().max(b.len()) as f32
            }
            StringDistance::JaroWinkler => jaro_winkler(&a, &b),
        }
    }
}

/// Edits from `a` to `b`; with `transpositions`, swapping two adjacent characters is one
/// edit (optimal string alignment, as Lucene's).
fn edit_distance(a: &[char], b: &[char], transpositions: bool) -> usize {
    let (n, m) = (a.len(), b.len());
    let mut d = vec![vec![0usize; m + 1]; n + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=n {
        for j in 1..=m {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if transpositions && i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + cost);
            }
            d[i][j] = best;
        }
    }
    d[n][m]
}

/// Jaro-Winkler similarity as Lucene computes it: the common-prefix bonus applies above a
/// Jaro similarity of 0.7, scaled by at most 0.1 per shared leading character.
fn jaro_winkler(s1: &[char], s2: &[char]) -> f32 {
    let (longer, shorter) = if s1.len() > s2.len() {
        (s1, s2)
    } else {
        (s2, s1)
    };
    let range = (longer.len() / 2).saturating_sub(1);
    let mut matched_at = vec![None; shorter.len()];
    let mut taken = vec![false; longer.len()];
    let mut matches = 0usize;
    for (i, c) in shorter.iter().enumerate() {
        let from = i.saturating_sub(range);
        let to = (i + range + 1).min(longer.len());
        for j in from..to {
            if !taken[j] && *c == longer[j] {
                matched_at[i] = Some(j);
                taken[j] = true;
                matches += 1;
                break;
            }
        }
    }
    if matches == 0 {
        return 0.0;
    }
    let from_shorter = shorter
        .iter()
        .zip(&matched_at)
        .filter(|(_, at)| at.is_some())
        .map(|(c, _)| *c);
    let from_longer = longer
        .iter()
        .zip(&taken)
        .filter(|(_, t)| **t)
        .map(|(c, _)| *c);
    let transpositions = from_shorter
        .zip(from_longer)
        .filter(|(a, b)| a != b)
        .count()
        / 2;
    let prefix = s1
        .iter()
        .zip(s2)
        .take(shorter.len())
        .take_while(|(a, b)| a == b)
        .count();
    let m = matches as f32;
    let jaro = (m / s1.len() as f32 + m / s2.len() as f32 + (m - transpositions as f32) / m) / 3.0;
    if jaro < 0.7 {
        jaro
    } else {
        jaro + (0.1f32).min(1.0 / longer.len() as f32) * prefix as f32 * (1.0 - jaro)
    }
}

fn string_option(key: &str, value: &Value) -> Result<String> {
    match value {
        Value::String(text) => Ok(text.clone()),
        other => Err(Error::parsing(format!(
            "suggester[term] [{key}] doesn't support values of type: {}",
            token(other)
        ))),
    }
}

/// An enum option's value, upper-cased as OpenSearch resolves it.
fn enum_option(key: &str, value: &Value) -> Result<String> {
    Ok(string_option(key, value)?.to_uppercase())
}

fn no_enum_constant(class: &str, value: &str) -> Error {
    Error::illegal_argument(format!(
        "No enum constant org.opensearch.search.suggest.{class}.{value}"
    ))
}

/// A number option (a number, truncated, or a numeric string), as the parser coerces it.
fn number_option(key: &str, value: &Value) -> Result<f64> {
    match value {
        Value::Number(n) => Ok(n.as_f64().unwrap_or_default()),
        Value::String(text) => text.trim().parse::<f64>().map_err(|_| {
            Error::new(
                "number_format_exception",
                400,
                format!("For input string: \"{text}\""),
            )
        }),
        other => Err(Error::parsing(format!(
            "suggester[term] [{key}] doesn't support values of type: {}",
            token(other)
        ))),
    }
}

fn int_option(key: &str, value: &Value) -> Result<i64> {
    Ok(number_option(key, value)?.trunc() as i64)
}

fn float_option(key: &str, value: &Value) -> Result<f32> {
    Ok(number_option(key, value)? as f32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn similarity(distance: StringDistance, a: &str, b: &str) -> f32 {
        distance.similarity(a, b)
    }

    #[test]
    fn distances_score_as_lucene_scores_them() {
        // one transposition over five characters
        assert_eq!(
            similarity(StringDistance::DamerauLevenshtein, "quikc", "quick"),
            0.8
        );
        // without transpositions a swap is two edits
        assert_eq!(
            similarity(StringDistance::Levenshtein, "quikc", "quick"),
            0.6
        );
        // the figure the reference node gives for this pair
        assert_eq!(
            similarity(StringDistance::JaroWinkler, "quikc", "quick"),
            0.9533333
        );
        assert_eq!(similarity(StringDistance::JaroWinkler, "abc", "xyz"), 0.0);
        assert_eq!(similarity(StringDistance::Levenshtein, "", ""), 1.0);
    }

    #[test]
    fn options_sort_by_score_or_frequency_then_text() {
        let option = |text: &str, score: f32, freq: u64| TermOption {
            text: text.into(),
            score,
            freq,
        };
        let mut options = [
            option("brawn", 0.75, 1),
            option("brain", 0.5, 9),
            option("brown", 0.75, 3),
            option("brawl", 0.75, 1),
        ];
        options.sort_by(|a, b| SortBy::Score.compare(a, b));
        let texts: Vec<_> = options.iter().map(|o| o.text.as_str()).collect();
        assert_eq!(texts, ["brown", "brawl", "brawn", "brain"]);
        options.sort_by(|a, b| SortBy::Frequency.compare(a, b));
        let texts: Vec<_> = options.iter().map(|o| o.text.as_str()).collect();
        assert_eq!(texts, ["brain", "brown", "brawl", "brawn"]);
    }

    #[test]
    fn options_refuse_what_opensearch_refuses() {
        let parse = |options: Value| TermSuggester::parse(&options).unwrap_err();
        let e = parse(json!({}));
        assert_eq!(e.reason(), "the required field option [field] is missing");
        let e = parse(json!({"field": "f", "bogus": 1}));
        assert_eq!(e.reason(), "suggester[term] doesn't support field [bogus]");
        let e = parse(json!({"field": "f", "max_edits": 3}));
        assert_eq!(e.reason(), "maxEdits must be between 1 and 2");
        let e = parse(json!({"field": "f", "size": 0}));
        assert_eq!(e.reason(), "size must be positive");
        let e = parse(json!({"field": "f", "suggest_mode": "bogus"}));
        assert_eq!(
            e.reason(),
            "No enum constant org.opensearch.search.suggest.term.TermSuggestionBuilder.SuggestMode.BOGUS"
        );
        let e = parse(json!({"field": "f", "accuracy": 1.5}));
        assert_eq!(e.reason(), "accuracy must be between 0 and 1");
        let e = parse(json!({"field": "f", "size": "x"}));
        assert_eq!(e.kind(), "number_format_exception");
        let e = parse(json!({"field": "f", "string_distance": "ngram"}));
        assert!(e.reason().contains("not supported"));
        // coerced as OpenSearch coerces them
        let ok = TermSuggester::parse(
            &json!({"field": "f", "size": "3", "accuracy": "0.25", "suggest_mode": "Always"}),
        )
        .unwrap();
        assert_eq!(
            (ok.size, ok.accuracy, ok.suggest_mode),
            (3, 0.25, SuggestMode::Always)
        );
    }

    #[test]
    fn shards_options_merge_adding_frequencies_and_keeping_the_best_score() {
        let suggester = TermSuggester::parse(&json!({"field": "f", "size": 2})).unwrap();
        let entry = |options: Vec<(&str, f32, u64)>| TermEntry {
            text: "quikc".into(),
            offset: 0,
            length: 5,
            options: options
                .into_iter()
                .map(|(text, score, freq)| TermOption {
                    text: text.into(),
                    score,
                    freq,
                })
                .collect(),
        };
        let rendered = suggester
            .reduce(vec![
                vec![entry(vec![("quick", 0.8, 2), ("quack", 0.6, 1)])],
                vec![entry(vec![("quick", 0.8, 1), ("quirk", 0.6, 4)])],
            ])
            .unwrap();
        assert_eq!(
            rendered,
            json!([{"text": "quikc", "offset": 0, "length": 5, "options": [
                {"text": "quick", "score": 0.8, "freq": 3},
                {"text": "quirk", "score": 0.6, "freq": 4},
            ]}])
        );
    }

    /// The suggestions for `text` on a one-shard index of `texts` in `body`.
    fn suggest(texts: &[&str], text: &str, options: Value) -> Vec<TermEntry> {
        let dir = tempfile::tempdir().unwrap();
        let docs: Vec<Value> = texts.iter().map(|t| json!({"body": t})).collect();
        let mapping = json!({"properties": {"body": {"type": "text"}, "n": {"type": "long"}}});
        let index = crate::test_support::index_with(dir.path(), mapping, &docs);
        let snapshot = index.shard(0).unwrap().snapshot();
        let mut options = options;
        options["field"] = options.get("field").cloned().unwrap_or(json!("body"));
        TermSuggester::parse(&options)
            .unwrap()
            .run(text, &snapshot.searcher, &snapshot.table)
            .unwrap()
    }

    fn texts(entry: &TermEntry) -> Vec<(&str, f32, u64)> {
        entry
            .options
            .iter()
            .map(|o| (o.text.as_str(), o.score, o.freq))
            .collect()
    }

    const CORPUS: &[&str] = &[
        "quick brown fox",
        "quick quack",
        "the quirk of it",
        "quick quiz",
        "brown brawn brain",
    ];

    #[test]
    fn a_shard_offers_the_terms_within_two_edits_best_first() {
        let entries = suggest(CORPUS, "quikc brwn", json!({}));
        assert_eq!(entries.len(), 2);
        assert_eq!((entries[0].offset, entries[0].length), (0, 5));
        assert_eq!(
            texts(&entries[0]),
            [
                ("quick", 0.8, 3),
                ("quack", 0.6, 1),
                ("quirk", 0.6, 1),
                ("quiz", 0.5, 1)
            ]
        );
        assert_eq!(
            texts(&entries[1]),
            [("brown", 0.75, 2), ("brawn", 0.75, 1), ("brain", 0.5, 1)]
        );
    }

    #[test]
    fn known_short_and_frequent_tokens_get_nothing_unless_asked() {
        // "quick" is in the index (suggest_mode missing), "qk" is too short
        let entries = suggest(CORPUS, "quick qk", json!({}));
        assert!(entries.iter().all(|e| e.options.is_empty()));
        // always: "quick" is in 3 of 5 documents, above max_term_freq's 1%…
        let entries = suggest(CORPUS, "quick", json!({"suggest_mode": "always"}));
        assert!(entries[0].options.is_empty());
        // …which a count lets through
        let entries = suggest(
            CORPUS,
            "quick",
            json!({"suggest_mode": "always", "max_term_freq": 3}),
        );
        assert_eq!(
            texts(&entries[0]),
            [("quack", 0.8, 1), ("quirk", 0.8, 1), ("quiz", 0.5, 1)]
        );
        // popular: only terms in more documents than the token
        let entries = suggest(
            CORPUS,
            "quack",
            json!({"suggest_mode": "popular", "max_term_freq": 5}),
        );
        assert_eq!(texts(&entries[0]), [("quick", 0.8, 3)]);
    }

    #[test]
    fn inspections_and_prefix_bound_the_candidates() {
        // max_edits 1: the first pass alone
        let entries = suggest(CORPUS, "quikc", json!({"max_edits": 1}));
        assert_eq!(texts(&entries[0]), [("quick", 0.8, 3)]);
        // a three-character prefix must match exactly
        let entries = suggest(CORPUS, "quxck", json!({"prefix_length": 3}));
        assert!(entries[0].options.is_empty());
        // one inspection per option: the first pass found one, so the second runs and keeps
        // its best two, "quick" before "quirk" at the same similarity
        let entries = suggest(
            CORPUS,
            "quikc",
            json!({"size": 1, "shard_size": 1, "max_inspections": 1}),
        );
        assert_eq!(texts(&entries[0]), [("quick", 0.8, 3)]);
        let entries = suggest(
            CORPUS,
            "quaik",
            json!({"shard_size": 2, "max_inspections": 1}),
        );
        assert_eq!(texts(&entries[0]), [("quack", 0.8, 1), ("quick", 0.6, 3)]);
    }

    #[test]
    fn a_field_without_terms_answers_its_tokens_without_options() {
        let entries = suggest(CORPUS, "6", json!({"field": "n"}));
        assert_eq!(entries.len(), 1);
        assert!(entries[0].options.is_empty());
    }
}
