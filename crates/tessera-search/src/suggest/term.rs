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

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tantivy::Searcher;
use tessera_common::error::json_token as token;
use tessera_common::{Error, Result};
use tessera_mapping::analysis;
use tessera_mapping::FieldTable;

use super::options::{
    check_analyzer, enum_option, float_option, int_option, no_enum_constant, shard_size,
    string_option,
};
use super::spell::{
    suggest_field, ShardTerms, SortBy, SpellChecker, StringDistance, SuggestMode, SuggestWord,
};

/// What `term` calls its objects in errors.
const WHAT: &str = "suggester[term]";

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
    /// How each token's options are found.
    pub checker: SpellChecker,
}

/// A token of the text and its options.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TermEntry {
    /// The token as analyzed.
    pub text: String,
    /// Where it is in the text, in UTF-16 code units (Java's string offsets).
    pub offset: u32,
    pub length: u32,
    pub options: Vec<SuggestWord>,
}

impl TermSuggester {
    /// A suggester on `field` with OpenSearch's defaults.
    pub fn new(field: String) -> TermSuggester {
        TermSuggester {
            field,
            analyzer: None,
            size: 5,
            shard_size: None,
            checker: SpellChecker::default(),
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
                "field" => field = Some(string_option(WHAT, key, value)?),
                "analyzer" => suggester.analyzer = Some(string_option(WHAT, key, value)?),
                "size" => {
                    let size = int_option(WHAT, key, value)?;
                    if size <= 0 {
                        return Err(Error::illegal_argument("size must be positive"));
                    }
                    suggester.size = size as usize;
                }
                "shard_size" => suggester.shard_size = Some(int_option(WHAT, key, value)?),
                "suggest_mode" => {
                    suggester.checker.suggest_mode =
                        SuggestMode::resolve(&string_option(WHAT, key, value)?)?
                }
                "sort" => {
                    suggester.checker.sort = match enum_option(WHAT, key, value)?.as_str() {
                        "SCORE" => SortBy::Score,
                        "FREQUENCY" => SortBy::Frequency,
                        other => return Err(no_enum_constant("SortBy", other)),
                    }
                }
                "string_distance" => {
                    suggester.checker.string_distance =
                        match enum_option(WHAT, key, value)?.as_str() {
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
                                    string_option(WHAT, key, value)?
                                )))
                            }
                        }
                }
                "accuracy" => {
                    let accuracy = float_option(WHAT, key, value)?;
                    if !(0.0..=1.0).contains(&accuracy) {
                        return Err(Error::illegal_argument("accuracy must be between 0 and 1"));
                    }
                    suggester.checker.accuracy = accuracy;
                }
                "max_edits" => {
                    let edits = int_option(WHAT, key, value)?;
                    if !(1..=2).contains(&edits) {
                        return Err(Error::illegal_argument("maxEdits must be between 1 and 2"));
                    }
                    suggester.checker.max_edits = edits as u8;
                }
                "max_inspections" => {
                    let inspections = int_option(WHAT, key, value)?;
                    if inspections <= 0 {
                        return Err(Error::illegal_argument("maxInspections must be positive"));
                    }
                    suggester.checker.max_inspections = inspections as usize;
                }
                "max_term_freq" => {
                    let freq = float_option(WHAT, key, value)?;
                    if freq < 0.0 {
                        return Err(Error::illegal_argument("maxTermFreq must be positive"));
                    }
                    suggester.checker.max_term_freq = freq;
                }
                "prefix_length" => {
                    let length = int_option(WHAT, key, value)?;
                    if length < 0 {
                        return Err(Error::illegal_argument("prefixLength must be positive"));
                    }
                    suggester.checker.prefix_length = length as u32;
                }
                "min_word_length" => {
                    let length = int_option(WHAT, key, value)?;
                    if length < 1 {
                        return Err(Error::illegal_argument(
                            "minWordLength must be greater or equal to 1",
                        ));
                    }
                    suggester.checker.min_word_length = length as usize;
                }
                "min_doc_freq" => {
                    let freq = float_option(WHAT, key, value)?;
                    if freq < 0.0 {
                        return Err(Error::illegal_argument("minDocFreq must be positive"));
                    }
                    suggester.checker.min_doc_freq = freq;
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
        let shard_size = shard_size(self.size, self.shard_size)?;
        check_analyzer(self.analyzer.as_deref())?;
        let (analyzer, lowercase, field) = suggest_field(table, &self.field)?;
        let analyzer = self.analyzer.as_deref().unwrap_or(&analyzer);
        let shard = ShardTerms::new(searcher, field);
        analysis::tokens(analyzer, text)
            .into_iter()
            .map(|token| {
                let term = match lowercase {
                    true => token.text.to_lowercase(),
                    false => token.text,
                };
                let options = match &shard {
                    Some(shard) => self.checker.suggest_similar(&term, shard, shard_size)?,
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

    /// Merges the shards' entries for one suggestion and renders them.
    pub fn reduce(&self, shards: Vec<Vec<TermEntry>>) -> Result<Value> {
        let mut shards = shards.into_iter();
        let mut entries = shards.next().unwrap_or_default();
        let mut merged: Vec<BTreeMap<String, SuggestWord>> = entries
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
                let mut options: Vec<SuggestWord> = options.into_values().collect();
                options.sort_by(|a, b| self.checker.sort.compare(a, b));
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

#[cfg(test)]
mod tests {
    use super::*;

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
            (ok.size, ok.checker.accuracy, ok.checker.suggest_mode),
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
                .map(|(text, score, freq)| SuggestWord {
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
