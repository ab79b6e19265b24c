//! The spell checker both the `term` and the `phrase` suggesters draw their candidates from:
//! Lucene's `DirectSpellChecker`, which reads the shard's terms dictionary instead of a
//! separate dictionary index.
//!
//! For a token: nothing when it is shorter than `min_word_length`, present in the shard
//! under `suggest_mode: missing`, or too frequent (`max_term_freq`); otherwise the
//! candidates within one edit are ranked first, and, when they are fewer than
//! `count × max_inspections`, those within `max_edits` join them. Each pass keeps that many
//! by similarity (then term order), skipping the token itself, terms not more frequent than
//! the threshold (`min_doc_freq`; under `popular`, the token's own frequency) and those less
//! similar than `accuracy`. The survivors are sorted by `sort` and cut to `count`.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};
use tantivy::postings::Postings;
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocSet, TERMINATED};
use tantivy::{Searcher, Term};
use tessera_common::{Error, Result};
use tessera_mapping::{FieldTable, LeafKind};
use tessera_query::compile::{fuzzy_candidates, FuzzyAutomaton};

use super::options::no_enum_constant;

/// The spell checker's settings, defaults as OpenSearch's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpellChecker {
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

impl Default for SpellChecker {
    fn default() -> SpellChecker {
        SpellChecker {
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

/// A suggested term.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SuggestWord {
    pub text: String,
    pub score: f32,
    /// Documents holding it (on a shard; summed over shards).
    pub freq: u64,
}

impl SpellChecker {
    /// `DirectSpellChecker.suggestSimilar` for one token: at most `count` options, best first.
    pub fn suggest_similar(
        &self,
        term: &str,
        shard: &ShardTerms,
        count: usize,
    ) -> Result<Vec<SuggestWord>> {
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
        let inspections = count.saturating_mul(self.max_inspections);
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
        found.truncate(count);
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
    ) -> Result<Vec<SuggestWord>> {
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
            .map(|ranked| SuggestWord {
                text: ranked.0.text,
                score: ranked.0.similarity,
                freq: ranked.0.freq,
            })
            .collect())
    }
}

/// The shard's terms of the suggested field.
pub struct ShardTerms {
    pub(crate) searcher: Searcher,
    pub(crate) field: Field,
    /// Documents in the shard, deleted ones included (Lucene's `maxDoc`).
    pub(crate) max_doc: u64,
}

impl ShardTerms {
    pub fn new(searcher: &Searcher, field: Option<Field>) -> Option<ShardTerms> {
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

    pub fn doc_freq(&self, term: &str) -> Result<u64> {
        self.searcher
            .doc_freq(&Term::from_field_text(self.field, term))
            .map_err(|e| Error::internal("read a term's document frequency", e))
    }

    /// Whether the field records how often a term occurs in a document (Lucene counts one
    /// occurrence per document where it does not).
    fn has_freqs(&self) -> bool {
        self.searcher
            .schema()
            .get_field_entry(self.field)
            .field_type()
            .get_index_record_option()
            .is_some_and(|option| option.has_freq())
    }

    /// Documents holding `term` and its occurrences in them (Lucene's `TermStats`), deleted
    /// documents included as in Lucene.
    pub fn term_stats(&self, term: &str) -> Result<TermStats> {
        let key = Term::from_field_text(self.field, term);
        let freqs = self.has_freqs();
        let mut stats = TermStats::default();
        for segment in self.searcher.segment_readers() {
            let inverted = segment.inverted_index(self.field).map_err(io_error)?;
            let Some(info) = inverted.get_term_info(&key).map_err(io_error)? else {
                continue;
            };
            stats.doc_freq += u64::from(info.doc_freq);
            if !freqs {
                stats.total_term_freq += u64::from(info.doc_freq);
                continue;
            }
            let mut postings = inverted
                .read_postings_from_terminfo(&info, IndexRecordOption::WithFreqs)
                .map_err(io_error)?;
            while postings.doc() != TERMINATED {
                stats.total_term_freq += u64::from(postings.term_freq());
                postings.advance();
            }
        }
        Ok(stats)
    }

    /// Occurrences of all the field's terms (Lucene's `sumTotalTermFreq`; without
    /// frequencies, the documents of all its terms).
    pub fn sum_total_term_freq(&self) -> Result<u64> {
        let mut sum = 0;
        for segment in self.searcher.segment_readers() {
            let inverted = segment.inverted_index(self.field).map_err(io_error)?;
            if self.has_freqs() {
                sum += inverted.total_num_tokens();
                continue;
            }
            let mut terms = inverted.terms().stream().map_err(io_error)?;
            while terms.advance() {
                sum += u64::from(terms.value().doc_freq);
            }
        }
        Ok(sum)
    }

    /// The field's distinct terms as Lucene's `Terms.size()` counts them for a reader: a
    /// shard of one segment knows them; over several the count is unknown and
    /// OpenSearch's phrase suggester takes the number of documents instead.
    pub fn distinct_terms(&self) -> Result<u64> {
        match self.searcher.segment_readers() {
            [segment] => Ok(segment
                .inverted_index(self.field)
                .map_err(io_error)?
                .terms()
                .num_terms() as u64),
            _ => Ok(self.max_doc),
        }
    }

    /// Whether any segment holds a term of the field (Lucene has no `Terms` otherwise).
    pub fn has_terms(&self) -> Result<bool> {
        for segment in self.searcher.segment_readers() {
            let inverted = segment.inverted_index(self.field).map_err(io_error)?;
            if inverted.terms().num_terms() > 0 {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// A term's document and occurrence counts.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TermStats {
    pub doc_freq: u64,
    pub total_term_freq: u64,
}

fn io_error(e: impl std::fmt::Display) -> Error {
    Error::internal("read the suggested field's terms", e)
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
    pub fn compare(self, a: &SuggestWord, b: &SuggestWord) -> Ordering {
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
    pub fn similarity(self, a: &str, b: &str) -> f32 {
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

/// How a field is suggested from: the analyzer its text goes through, whether a keyword's
/// normalizer lower-cases it, and its terms dictionary (only indexed text and keyword
/// fields hold terms a spell checker can offer).
pub fn suggest_field(table: &FieldTable, name: &str) -> Result<(String, bool, Option<Field>)> {
    let leaf = table
        .leaf(name)
        .ok_or_else(|| Error::illegal_argument(format!("no mapping found for field [{name}]")))?;
    let (analyzer, lowercase, field) = match &leaf.kind {
        LeafKind::Text {
            search_analyzer, ..
        } => (search_analyzer.clone(), false, leaf.field),
        LeafKind::Keyword { lowercase, .. } => ("keyword".to_string(), *lowercase, leaf.field),
        _ => ("keyword".to_string(), false, None),
    };
    Ok((analyzer, lowercase, field.filter(|_| leaf.indexed)))
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
        let option = |text: &str, score: f32, freq: u64| SuggestWord {
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
}
