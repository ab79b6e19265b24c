//! The `phrase` suggester: whole-phrase corrections scored by a noisy-channel model, as
//! OpenSearch's `PhraseSuggester` computes them on each shard.
//!
//! The text is analyzed into tokens. For each token, the candidate generators (spell
//! checkers on a field, [`super::spell`]) draw corrections; each candidate carries a channel
//! score (how likely the token was meant as it: the similarity, or
//! `real_word_error_likelihood` for the token itself) and a language-model score from the
//! suggestion field's n-gram frequencies, smoothed by [`Smoothing`]. Every path through the
//! candidates that changes at most `max_errors` tokens is scored as the product of its
//! words' scores (summed as `log10`, then `exp`, as OpenSearch does); the best `shard_size`
//! above the original phrase's score × `confidence` are the shard's options. `collate`
//! keeps (or, with `prune`, flags) those whose template query matches a document.
//!
//! Tessera has no shingle analysis, so `gram_size` defaults to 1 (unigrams); a larger one
//! looks the joined words up as terms of the field, as OpenSearch does. The coordinator
//! merges the shards' options (best score of each phrase), drops those not above the
//! highest shard cut-off, sorts by score then text and cuts to `size`.

use std::cmp::Ordering;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tessera_common::error::json_token as token;
use tessera_common::{Error, Result};
use tessera_mapping::analysis::{self, ANALYZERS};
use tessera_script::mustache::Template;

use super::options::{
    bool_option, check_analyzer, float_option, int_option, no_enum_constant, number_option,
    shard_size, string_option,
};
use super::spell::{
    suggest_field, ShardTerms, SortBy, SpellChecker, StringDistance, SuggestMode, TermStats,
};
use super::ShardInputs;

const WHAT: &str = "suggester[phrase]";

/// The phrase suggester's options, defaults as OpenSearch's.
#[derive(Clone, Debug, PartialEq)]
pub struct PhraseSuggester {
    /// The field whose n-grams score the phrases.
    pub field: String,
    /// Analyzes the text (default: the field's search analyzer).
    pub analyzer: Option<String>,
    /// Phrases in the answer.
    pub size: usize,
    /// Phrases each shard returns (default: `size`, at least 5); also the candidates kept
    /// per token.
    pub shard_size: Option<i64>,
    /// How likely a word of the index is a misspelling all the same.
    pub real_word_error_likelihood: f32,
    /// Options must score above the text's own score times this (0: no cut-off).
    pub confidence: f32,
    /// Joins the words of an n-gram looked up in the field.
    pub separator: String,
    /// Tokens a correction may change: a fraction of the tokens below 1, a count from 1.
    pub max_errors: f32,
    /// The n-gram order of the model (default 1).
    pub gram_size: Option<usize>,
    /// Accepted as OpenSearch accepts it; with no shingle analysis every token is a
    /// unigram, so it changes nothing.
    pub force_unigrams: bool,
    /// Texts of this many tokens or more get no corrections.
    pub token_limit: usize,
    /// Where candidates come from (default: one generator on `field`).
    pub generators: Vec<Generator>,
    pub smoothing: Smoothing,
    /// Tags around the changed words, in an extra `highlighted` text.
    pub highlight: Option<(String, String)>,
    pub collate: Option<Collate>,
}

/// A `direct_generator`: a spell checker on a field.
#[derive(Clone, Debug, PartialEq)]
pub struct Generator {
    pub field: String,
    /// Candidates per token.
    pub size: usize,
    /// An analyzer each token goes through before the spell checker sees it.
    pub pre_filter: Option<String>,
    /// An analyzer each candidate goes through before it is scored.
    pub post_filter: Option<String>,
    /// The spell checker's settings but the three below.
    pub checker: SpellChecker,
    /// `suggest_mode`, `sort` and `string_distance` as given: OpenSearch resolves them on
    /// the shards, which report a wrong one.
    pub suggest_mode: Option<String>,
    pub sort: Option<String>,
    pub string_distance: Option<String>,
}

/// The language model's smoothing of unseen n-grams.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Smoothing {
    /// A missing n-gram falls back to the shorter one times `discount`.
    StupidBackoff { discount: f64 },
    /// Every count gets `alpha` added.
    Laplace { alpha: f64 },
    /// A weighted sum of the three orders (weights normalized to sum to 1).
    LinearInterpolation {
        trigram: f64,
        bigram: f64,
        unigram: f64,
    },
}

/// `collate`: a template query each option is checked against.
#[derive(Clone, Debug, PartialEq)]
pub struct Collate {
    /// The mustache source of the query.
    pub source: String,
    /// Template parameters besides `suggestion`.
    pub params: Map<String, Value>,
    /// Keep the options that match nothing, flagged with `collate_match: false`.
    pub prune: bool,
}

/// One shard's answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PhraseEntry {
    /// The text's own score times `confidence`: options must score above it.
    pub cutoff: f64,
    /// Best first.
    pub options: Vec<PhraseOption>,
}

/// A corrected phrase.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhraseOption {
    pub text: String,
    pub highlighted: Option<String>,
    pub score: f32,
    /// Whether the collate query matched (only under `prune`).
    pub collate_match: Option<bool>,
}

/// Java's `Double.MIN_VALUE`, the cut-off of a shard that scored nothing.
fn no_cutoff() -> f64 {
    f64::from_bits(1)
}

impl PhraseSuggester {
    /// A suggester on `field` with OpenSearch's defaults.
    pub fn new(field: String) -> PhraseSuggester {
        PhraseSuggester {
            field,
            analyzer: None,
            size: 5,
            shard_size: None,
            real_word_error_likelihood: 0.95,
            confidence: 1.0,
            separator: " ".to_string(),
            max_errors: 0.5,
            gram_size: None,
            force_unigrams: true,
            token_limit: 10,
            generators: Vec::new(),
            smoothing: Smoothing::StupidBackoff {
                discount: f64::from(0.4f32),
            },
            highlight: None,
            collate: None,
        }
    }

    /// Parses the `phrase` object of a suggestion.
    pub fn parse(value: &Value) -> Result<PhraseSuggester> {
        let Value::Object(map) = value else {
            return Err(Error::parsing(format!(
                "{WHAT} must be an object, got a {}",
                token(value)
            )));
        };
        let mut field = None;
        let mut s = PhraseSuggester::new(String::new());
        let mut smoothing = None;
        for (key, value) in map {
            match (key.as_str(), value) {
                ("direct_generator", Value::Array(generators)) => {
                    for generator in generators {
                        s.generators.push(Generator::parse(generator)?);
                    }
                }
                (_, Value::Array(_)) => return Err(unsupported_object(key)),
                ("smoothing", Value::Object(models)) => {
                    if smoothing.is_some() {
                        return Err(Error::illegal_argument(
                            "only one smoothing model supported",
                        ));
                    }
                    smoothing = Some(Smoothing::parse(models)?);
                }
                ("highlight", Value::Object(tags)) => s.highlight = parse_highlight(tags)?,
                ("collate", Value::Object(collate)) => s.collate = Some(Collate::parse(collate)?),
                (_, Value::Object(_)) => return Err(unsupported_object(key)),
                ("analyzer", _) => s.analyzer = Some(string_option(WHAT, key, value)?),
                ("field", _) => field = Some(string_option(WHAT, key, value)?),
                ("size", _) => {
                    let size = int_option(WHAT, key, value)?;
                    if size <= 0 {
                        return Err(Error::illegal_argument("size must be positive"));
                    }
                    s.size = size as usize;
                }
                ("shard_size", _) => s.shard_size = Some(int_option(WHAT, key, value)?),
                ("real_word_error_likelihood", _) => {
                    let likelihood = float_option(WHAT, key, value)?;
                    if likelihood <= 0.0 {
                        return Err(Error::illegal_argument(
                            "real_word_error_likelihood must be > 0.0",
                        ));
                    }
                    s.real_word_error_likelihood = likelihood;
                }
                ("confidence", _) => {
                    let confidence = float_option(WHAT, key, value)?;
                    if confidence < 0.0 {
                        return Err(Error::illegal_argument("confidence must be >= 0.0"));
                    }
                    s.confidence = confidence;
                }
                ("separator", _) => s.separator = string_option(WHAT, key, value)?,
                ("max_errors", _) => {
                    let max_errors = float_option(WHAT, key, value)?;
                    if max_errors <= 0.0 {
                        return Err(Error::illegal_argument("max_error must be > 0.0"));
                    }
                    s.max_errors = max_errors;
                }
                ("gram_size", _) => {
                    let gram_size = int_option(WHAT, key, value)?;
                    if gram_size < 1 {
                        return Err(Error::illegal_argument("gramSize must be >= 1"));
                    }
                    s.gram_size = Some(gram_size as usize);
                }
                ("force_unigrams", _) => s.force_unigrams = bool_option(WHAT, key, value)?,
                ("token_limit", _) => {
                    let limit = int_option(WHAT, key, value)?;
                    if limit <= 0 {
                        return Err(Error::illegal_argument("token_limit must be >= 1"));
                    }
                    s.token_limit = limit as usize;
                }
                _ => {
                    return Err(Error::parsing(format!(
                        "{WHAT} doesn't support field [{key}]"
                    )))
                }
            }
        }
        s.field = field.ok_or_else(|| {
            Error::new(
                "parse_exception",
                400,
                "the required field option [field] is missing".to_string(),
            )
        })?;
        if let Some(smoothing) = smoothing {
            s.smoothing = smoothing;
        }
        Ok(s)
    }

    /// The shard's corrections of `text`.
    pub fn run(&self, text: &str, shard: &ShardInputs) -> Result<PhraseEntry> {
        let shard_size = shard_size(self.size, self.shard_size)?;
        check_analyzer(self.analyzer.as_deref())?;
        for generator in &self.generators {
            generator.resolved_checker()?;
            for name in [&generator.pre_filter, &generator.post_filter]
                .into_iter()
                .flatten()
            {
                if !ANALYZERS.contains(&name.as_str()) {
                    return Err(Error::illegal_argument(format!(
                        "Analyzer [{name}] doesn't exists"
                    )));
                }
            }
        }
        let collate = self
            .collate
            .as_ref()
            .map(|collate| {
                Template::compile(&collate.source)
                    .map_err(|e| e.to_exception(&collate.source))
                    .map(|template| (collate, template))
            })
            .transpose()?;
        let empty = PhraseEntry {
            cutoff: no_cutoff(),
            options: Vec::new(),
        };
        let (analyzer, lowercase, field) = suggest_field(shard.table, &self.field)?;
        if shard.searcher.num_docs() == 0 {
            return Ok(empty);
        }
        let Some(terms) = ShardTerms::new(shard.searcher, field) else {
            return Ok(empty);
        };
        if !terms.has_terms()? {
            return Ok(empty);
        }
        let default_generator;
        let generators = match self.generators.is_empty() {
            true => {
                default_generator = [Generator::new(self.field.clone())];
                &default_generator[..]
            }
            false => &self.generators[..],
        };
        let mut drawers = Vec::new();
        for generator in generators {
            if let Some(drawer) = Drawer::new(generator, shard, self.real_word_error_likelihood)? {
                drawers.push(drawer);
            }
        }
        if drawers.is_empty() {
            return Ok(empty);
        }
        let analyzer = self.analyzer.as_deref().unwrap_or(&analyzer);
        let tokens: Vec<String> = analysis::tokens(analyzer, text)
            .into_iter()
            .map(|token| match lowercase {
                true => token.text.to_lowercase(),
                false => token.text,
            })
            .collect();
        if tokens.is_empty() || tokens.len() >= self.token_limit {
            return Ok(empty);
        }
        // each token and its candidates, drawn by every generator and cut to `shard_size`
        let mut sets = Vec::with_capacity(tokens.len());
        for token in tokens {
            let stats = drawers[0].term_stats(&token)?;
            let original = drawers[0].candidate(token, stats, 1.0, true);
            let mut set = CandidateSet {
                original,
                candidates: Vec::new(),
            };
            for drawer in &drawers {
                drawer.draw(&mut set)?;
            }
            if set.candidates.len() > shard_size {
                set.candidates
                    .sort_by(|a, b| b.score.partial_cmp(&a.score).unwrap_or(Ordering::Equal));
                set.candidates.truncate(shard_size);
            }
            sets.push(set);
        }
        let model = WordModel::new(self, terms)?;
        let scorer = PathScorer {
            model: &model,
            gram_size: self.gram_size.unwrap_or(1),
            max_corrections: shard_size,
        };
        let mut cutoff = no_cutoff();
        if self.confidence > 0.0 {
            let originals: Vec<&Candidate> = sets.iter().map(|set| &set.original).collect();
            cutoff = scorer.score(&originals)? * f64::from(self.confidence);
        }
        let corrections = scorer.best(&sets, self.max_errors, cutoff)?;
        let mut options = Vec::new();
        for correction in corrections {
            let phrase = correction.join(None);
            let mut collate_match = None;
            if let Some((collate, template)) = &collate {
                let matched = self.collates(collate, template, &phrase, shard)?;
                if !matched && !collate.prune {
                    continue;
                }
                collate_match = collate.prune.then_some(matched);
            }
            let score = correction.score as f32;
            // OpenSearch keeps an option above the cut-off, its score as a float
            if f64::from(score) <= cutoff {
                continue;
            }
            options.push(PhraseOption {
                highlighted: self
                    .highlight
                    .as_ref()
                    .map(|tags| correction.join(Some(tags))),
                text: phrase,
                score,
                collate_match,
            });
        }
        Ok(PhraseEntry { cutoff, options })
    }

    /// Whether the collate query rendered for `phrase` matches a document of the shard.
    fn collates(
        &self,
        collate: &Collate,
        template: &Template,
        phrase: &str,
        shard: &ShardInputs,
    ) -> Result<bool> {
        let mut params = collate.params.clone();
        params.insert("suggestion".to_string(), json!(phrase));
        let rendered = template
            .render(&Value::Object(params))
            .map_err(|e| e.to_exception(&collate.source))?;
        let query: Value = serde_json::from_str(&rendered).map_err(|e| {
            Error::parsing(format!("the collate query is not JSON once rendered: {e}"))
        })?;
        let exists = shard.exists.ok_or_else(|| {
            Error::illegal_state("the phrase suggester's collate query has no shard to run on")
        })?;
        exists(&query)
    }

    /// Merges the shards' entries and renders the suggestion's one entry.
    pub fn reduce(&self, text: &str, shards: Vec<PhraseEntry>) -> Value {
        let cutoff = shards
            .iter()
            .map(|entry| entry.cutoff)
            .fold(no_cutoff(), f64::max);
        let mut merged: Vec<PhraseOption> = Vec::new();
        let mut at: HashMap<String, usize> = HashMap::new();
        for option in shards.into_iter().flat_map(|entry| entry.options) {
            match at.get(&option.text) {
                Some(&i) => {
                    let known = &mut merged[i];
                    known.score = known.score.max(option.score);
                    known.collate_match = match (known.collate_match, option.collate_match) {
                        (Some(a), Some(b)) => Some(a || b),
                        (a, b) => a.or(b),
                    };
                }
                None => {
                    at.insert(option.text.clone(), merged.len());
                    merged.push(option);
                }
            }
        }
        merged.retain(|option| f64::from(option.score) > cutoff);
        merged.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.text.cmp(&b.text))
        });
        merged.truncate(self.size);
        let options: Vec<Value> = merged
            .into_iter()
            .map(|option| {
                let mut out = Map::new();
                out.insert("text".into(), json!(option.text));
                if let Some(highlighted) = option.highlighted {
                    out.insert("highlighted".into(), json!(highlighted));
                }
                out.insert(
                    "score".into(),
                    crate::source_fields::float_value(option.score),
                );
                if let Some(matched) = option.collate_match {
                    out.insert("collate_match".into(), json!(matched));
                }
                Value::Object(out)
            })
            .collect();
        json!([{
            "text": text,
            "offset": 0,
            "length": text.encode_utf16().count(),
            "options": options,
        }])
    }
}

fn unsupported_object(key: &str) -> Error {
    // OpenSearch's message, with its two spaces, for any object or array it does not know
    Error::parsing(format!("{WHAT}  doesn't support array field [{key}]"))
}

fn parse_highlight(tags: &Map<String, Value>) -> Result<Option<(String, String)>> {
    let (mut pre, mut post) = (None, None);
    for (key, value) in tags {
        match key.as_str() {
            "pre_tag" => pre = Some(string_option(WHAT, key, value)?),
            "post_tag" => post = Some(string_option(WHAT, key, value)?),
            other => {
                return Err(Error::parsing(format!(
                    "{WHAT}[highlight] doesn't support field [{other}]"
                )))
            }
        }
    }
    match (pre, post) {
        (Some(pre), Some(post)) => Ok(Some((pre, post))),
        (None, None) => Ok(None),
        _ => Err(Error::illegal_argument(
            "Pre and post tag must both be null or both not be null.",
        )),
    }
}

impl Collate {
    fn parse(map: &Map<String, Value>) -> Result<Collate> {
        let mut source = None;
        let mut params = Map::new();
        let mut prune = false;
        for (key, value) in map {
            match key.as_str() {
                "query" => source = Some(template_source(value)?),
                "params" => match value {
                    Value::Object(map) => params = map.clone(),
                    other => {
                        return Err(Error::parsing(format!(
                            "{WHAT}[collate] [params] must be an object, got a {}",
                            token(other)
                        )))
                    }
                },
                "prune" => match value {
                    Value::Bool(b) => prune = *b,
                    _ => {
                        return Err(Error::parsing(format!(
                            "{WHAT}[collate] prune must be either 'true' or 'false'"
                        )))
                    }
                },
                other => {
                    return Err(Error::parsing(format!(
                        "{WHAT}[collate] doesn't support field [{other}]"
                    )))
                }
            }
        }
        let source = source.ok_or_else(|| {
            Error::illegal_argument("the collate of a phrase suggestion needs a [query]")
        })?;
        Ok(Collate {
            source,
            params,
            prune,
        })
    }
}

/// The mustache source of a collate query: a script (`source` as a string or an object,
/// or the string itself).
fn template_source(value: &Value) -> Result<String> {
    let source = match value {
        Value::String(source) => return Ok(source.clone()),
        Value::Object(script) => script,
        other => {
            return Err(Error::parsing(format!(
                "{WHAT}[collate] [query] must be a script, got a {}",
                token(other)
            )))
        }
    };
    for (key, value) in source {
        match (key.as_str(), value) {
            ("source", Value::String(text)) => return Ok(text.clone()),
            ("source", Value::Object(_)) => return Ok(value.to_string()),
            ("lang", Value::String(lang)) if lang != "mustache" => {
                return Err(Error::illegal_argument(format!(
                    "script_lang not supported [{lang}]"
                )))
            }
            ("id", _) => {
                return Err(Error::not_supported(
                    "a stored script as the phrase suggester's collate query",
                ))
            }
            _ => {}
        }
    }
    Err(Error::parsing(
        "must specify either [source] for an inline script or [id] for a stored script",
    ))
}

impl Generator {
    fn new(field: String) -> Generator {
        Generator {
            field,
            size: 5,
            pre_filter: None,
            post_filter: None,
            checker: SpellChecker::default(),
            suggest_mode: None,
            sort: None,
            string_distance: None,
        }
    }

    /// The spell checker, with the options the shard resolves.
    fn resolved_checker(&self) -> Result<SpellChecker> {
        let mut checker = self.checker;
        if let Some(mode) = &self.suggest_mode {
            let mode = mode.to_lowercase();
            checker.suggest_mode = match mode.as_str() {
                "missing" => SuggestMode::Missing,
                "popular" => SuggestMode::Popular,
                "always" => SuggestMode::Always,
                _ => {
                    return Err(Error::illegal_argument(format!(
                        "Illegal suggest mode {mode}"
                    )))
                }
            };
        }
        if let Some(sort) = &self.sort {
            checker.sort = match sort.to_uppercase().as_str() {
                "SCORE" => SortBy::Score,
                "FREQUENCY" => SortBy::Frequency,
                other => return Err(no_enum_constant("SortBy", other)),
            };
        }
        if let Some(name) = &self.string_distance {
            let name = name.to_lowercase();
            checker.string_distance = match name.as_str() {
                "internal" => StringDistance::Internal,
                "damerau_levenshtein" => StringDistance::DamerauLevenshtein,
                "levenshtein" => StringDistance::Levenshtein,
                "jaro_winkler" => StringDistance::JaroWinkler,
                "ngram" => {
                    return Err(Error::not_supported(
                        "[string_distance] [ngram] in the phrase suggester",
                    ))
                }
                _ => {
                    return Err(Error::illegal_argument(format!(
                        "Illegal distance option {name}"
                    )))
                }
            };
        }
        Ok(checker)
    }

    fn parse(value: &Value) -> Result<Generator> {
        const GEN: &str = "[direct_generator]";
        let Value::Object(map) = value else {
            return Err(Error::parsing(format!(
                "{WHAT} [direct_generator] must hold objects, got a {}",
                token(value)
            )));
        };
        let mut field = None;
        let mut g = Generator::new(String::new());
        let failed = |key: &str, cause: Error| {
            Error::x_content_parse(format!("{GEN} failed to parse field [{key}]")).caused_by(cause)
        };
        for (key, value) in map {
            let checker = &mut g.checker;
            match key.as_str() {
                "field" => field = Some(string_option(GEN, key, value)?),
                "pre_filter" => g.pre_filter = Some(string_option(GEN, key, value)?),
                "post_filter" => g.post_filter = Some(string_option(GEN, key, value)?),
                "suggest_mode" => g.suggest_mode = Some(string_option(GEN, key, value)?),
                "min_doc_freq" => checker.min_doc_freq = float_option(GEN, key, value)?,
                "accuracy" => checker.accuracy = float_option(GEN, key, value)?,
                "size" => {
                    let size = int_option(GEN, key, value)?;
                    if size <= 0 {
                        return Err(failed(
                            key,
                            Error::illegal_argument("Size must be positive"),
                        ));
                    }
                    g.size = size as usize;
                }
                "sort" => g.sort = Some(string_option(GEN, key, value)?),
                "string_distance" => g.string_distance = Some(string_option(GEN, key, value)?),
                "max_inspections" => {
                    let inspections = int_option(GEN, key, value)?;
                    if inspections <= 0 {
                        return Err(Error::illegal_argument("maxInspections must be positive"));
                    }
                    checker.max_inspections = inspections as usize;
                }
                "max_term_freq" => checker.max_term_freq = float_option(GEN, key, value)?,
                "max_edits" => {
                    let edits = int_option(GEN, key, value)?;
                    if !(1..=2).contains(&edits) {
                        return Err(failed(
                            key,
                            Error::illegal_argument(format!("Illegal max_edits value {edits}")),
                        ));
                    }
                    checker.max_edits = edits as u8;
                }
                "min_word_length" => {
                    let length = int_option(GEN, key, value)?;
                    if length < 1 {
                        return Err(Error::illegal_argument(
                            "minWordLength must be greater or equal to 1",
                        ));
                    }
                    checker.min_word_length = length as usize;
                }
                "prefix_length" => {
                    let length = int_option(GEN, key, value)?;
                    if length < 0 {
                        return Err(Error::illegal_argument("prefixLength must be positive"));
                    }
                    checker.prefix_length = length as u32;
                }
                other => {
                    return Err(Error::x_content_parse(format!(
                        "{GEN} unknown field [{other}]"
                    )))
                }
            }
        }
        g.field = field.ok_or_else(|| Error::illegal_argument("Required [field]"))?;
        Ok(g)
    }
}

impl Smoothing {
    fn parse(map: &Map<String, Value>) -> Result<Smoothing> {
        let mut model = None;
        for (name, body) in map {
            let Value::Object(params) = body else {
                return Err(Error::parsing(format!(
                    "[smoothing] unknown token [{}] after [{name}]",
                    token(body)
                )));
            };
            // a number parameter, as `parser.doubleValue()` reads it
            let number = |key: &str, value: &Value| number_option("[smoothing]", key, value);
            model = Some(match name.as_str() {
                "stupid_backoff" => {
                    let mut discount = 0.4;
                    for (key, value) in params {
                        if key == "discount" {
                            discount = number(key, value)?;
                        }
                    }
                    Smoothing::StupidBackoff { discount }
                }
                "laplace" => {
                    let mut alpha = 0.5;
                    for (key, value) in params {
                        if key == "alpha" {
                            alpha = number(key, value)?;
                        }
                    }
                    Smoothing::Laplace { alpha }
                }
                "linear" => {
                    let (mut trigram, mut bigram, mut unigram) = (0.0, 0.0, 0.0);
                    for (key, value) in params {
                        let slot = match key.as_str() {
                            "trigram_lambda" => &mut trigram,
                            "bigram_lambda" => &mut bigram,
                            "unigram_lambda" => &mut unigram,
                            other => {
                                return Err(Error::illegal_argument(format!(
                                    "{WHAT}[smoothing][linear] doesn't support field [{other}]"
                                )))
                            }
                        };
                        *slot = number(key, value)?;
                        if *slot < 0.0 {
                            return Err(Error::illegal_argument(format!("{key} must be positive")));
                        }
                    }
                    if (trigram + bigram + unigram - 1.0).abs() > 0.001 {
                        return Err(Error::illegal_argument(
                            "linear smoothing lambdas must sum to 1",
                        ));
                    }
                    Smoothing::LinearInterpolation {
                        trigram,
                        bigram,
                        unigram,
                    }
                }
                other => {
                    return Err(Error::illegal_argument(format!(
                        "{WHAT} doesn't support object field [{other}]"
                    )))
                }
            });
        }
        model.ok_or_else(|| Error::illegal_argument("the [smoothing] object names no model"))
    }
}

/// A word a token may be corrected to (the token itself included).
#[derive(Clone, Debug)]
struct Candidate {
    term: String,
    /// Its statistics in the generator's field.
    stats: TermStats,
    /// How likely the token was meant as this word (1 for the token itself).
    string_distance: f64,
    /// The channel score times the word's frequency in the generator's field, which ranks
    /// a token's candidates.
    score: f64,
    /// Whether it is the token as given.
    user_input: bool,
}

/// A token and its corrections, best first.
struct CandidateSet {
    original: Candidate,
    candidates: Vec<Candidate>,
}

impl CandidateSet {
    /// Adds a generator's candidates: a word several generators offered keeps the newest.
    fn add(&mut self, found: Vec<Candidate>) {
        let mut merged: Vec<Candidate> = Vec::with_capacity(found.len() + self.candidates.len());
        for candidate in found.into_iter().chain(self.candidates.drain(..)) {
            if !merged.iter().any(|known| known.term == candidate.term) {
                merged.push(candidate);
            }
        }
        merged.sort_by(|a, b| {
            b.score
                .partial_cmp(&a.score)
                .unwrap_or(Ordering::Equal)
                .then_with(|| a.term.cmp(&b.term))
        });
        self.candidates = merged;
    }
}

/// A generator at work on a shard (OpenSearch's `DirectCandidateGenerator`).
struct Drawer<'a> {
    spec: &'a Generator,
    checker: SpellChecker,
    terms: ShardTerms,
    /// The field's occurrences, which normalize a candidate's frequency.
    sum_total_term_freq: u64,
    /// Documents a token must exceed before `popular` asks more of its candidates.
    plateau: i64,
    /// The channel score of a word the post filter changed.
    non_error_likelihood: f64,
}

impl<'a> Drawer<'a> {
    /// `None` when the generator's field holds no terms on this shard.
    fn new(
        spec: &'a Generator,
        shard: &ShardInputs,
        real_word_error_likelihood: f32,
    ) -> Result<Option<Drawer<'a>>> {
        let Some(field) = shard
            .table
            .leaf(&spec.field)
            .and_then(|_| suggest_field(shard.table, &spec.field).ok())
            .and_then(|(_, _, field)| field)
        else {
            return Ok(None);
        };
        let Some(terms) = ShardTerms::new(shard.searcher, Some(field)) else {
            return Ok(None);
        };
        if !terms.has_terms()? {
            return Ok(None);
        }
        let checker = spec.resolved_checker()?;
        let threshold = checker.min_doc_freq;
        let plateau = match threshold >= 1.0 {
            true => threshold as i64,
            false => (terms.max_doc as f32 * threshold) as i64,
        };
        Ok(Some(Drawer {
            spec,
            checker,
            sum_total_term_freq: terms.sum_total_term_freq()?,
            terms,
            plateau,
            non_error_likelihood: f64::from(real_word_error_likelihood),
        }))
    }

    /// The statistics of `term` after the pre filter.
    fn term_stats(&self, term: &str) -> Result<TermStats> {
        self.terms.term_stats(&self.pre_filter(term))
    }

    fn pre_filter(&self, term: &str) -> String {
        match &self.spec.pre_filter {
            // the last token the analyzer makes of it, as OpenSearch keeps it
            Some(analyzer) => analysis::tokens(analyzer, term)
                .pop()
                .map(|token| token.text)
                .unwrap_or_default(),
            None => term.to_string(),
        }
    }

    fn candidate(
        &self,
        term: String,
        stats: TermStats,
        channel: f64,
        user_input: bool,
    ) -> Candidate {
        Candidate {
            score: self.score(stats, channel),
            term,
            stats,
            string_distance: channel,
            user_input,
        }
    }

    fn score(&self, stats: TermStats, channel: f64) -> f64 {
        channel * ((stats.total_term_freq as f64 + 1.0) / (self.sum_total_term_freq as f64 + 1.0))
    }

    /// Adds this generator's candidates for the set's token.
    fn draw(&self, set: &mut CandidateSet) -> Result<()> {
        let term = self.pre_filter(&set.original.term);
        let mut checker = self.checker;
        if checker.suggest_mode != SuggestMode::Always {
            let threshold =
                threshold_term_frequency(set.original.stats.doc_freq as i64, self.plateau);
            if threshold == i64::from(i32::MAX) {
                return Ok(());
            }
            if checker.min_doc_freq < threshold as f32 {
                checker.min_doc_freq = threshold as f32;
            }
        }
        let mut found = Vec::new();
        for word in checker.suggest_similar(&term, &self.terms, self.spec.size)? {
            let stats = self.terms.term_stats(&word.text)?;
            let candidate = self.candidate(word.text, stats, f64::from(word.score), false);
            self.post_filter(candidate, &mut found)?;
        }
        set.add(found);
        Ok(())
    }

    fn post_filter(&self, candidate: Candidate, out: &mut Vec<Candidate>) -> Result<()> {
        let Some(analyzer) = &self.spec.post_filter else {
            out.push(candidate);
            return Ok(());
        };
        for token in analysis::tokens(analyzer, &candidate.term) {
            let score = self.score(candidate.stats, candidate.string_distance);
            out.push(match token.text == candidate.term {
                true => Candidate {
                    stats: self.terms.term_stats(&token.text)?,
                    term: token.text,
                    string_distance: candidate.string_distance,
                    score,
                    user_input: false,
                },
                false => Candidate {
                    term: token.text,
                    stats: candidate.stats,
                    string_distance: self.non_error_likelihood,
                    score,
                    user_input: false,
                },
            });
        }
        Ok(())
    }
}

/// The documents a candidate must exceed under `popular`, from the token's own (OpenSearch's
/// `thresholdTermFrequency`: grows like `df × log5(df − plateau)`).
fn threshold_term_frequency(doc_freq: i64, plateau: i64) -> i64 {
    if doc_freq <= 0 {
        return 0;
    }
    let x = doc_freq as f64 * (((doc_freq - plateau) as f64).log10() * (1.0 / 5f64.log10())) + 1.0;
    // Java's Math.round: NaN is 0, the rest rounds half up and saturates
    let rounded = if x.is_nan() {
        0
    } else {
        (x + 0.5).floor() as i64
    };
    rounded.clamp(0, i64::from(i32::MAX))
}

/// The n-gram model over the suggestion field (OpenSearch's `WordScorer`).
struct WordModel {
    terms: ShardTerms,
    /// The field's occurrences.
    vocabulary: f64,
    /// Its distinct terms, as [`ShardTerms::distinct_terms`] counts them.
    distinct: f64,
    real_word_likelihood: f64,
    separator: String,
    smoothing: Smoothing,
    /// Frequencies already read.
    seen: std::cell::RefCell<HashMap<String, u64>>,
}

impl WordModel {
    fn new(suggester: &PhraseSuggester, terms: ShardTerms) -> Result<WordModel> {
        let smoothing = match suggester.smoothing {
            Smoothing::LinearInterpolation {
                trigram,
                bigram,
                unigram,
            } => {
                let sum = trigram + bigram + unigram;
                Smoothing::LinearInterpolation {
                    trigram: trigram / sum,
                    bigram: bigram / sum,
                    unigram: unigram / sum,
                }
            }
            other => other,
        };
        Ok(WordModel {
            vocabulary: terms.sum_total_term_freq()? as f64,
            distinct: terms.distinct_terms()? as f64,
            terms,
            real_word_likelihood: f64::from(suggester.real_word_error_likelihood),
            separator: suggester.separator.clone(),
            smoothing,
            seen: Default::default(),
        })
    }

    /// Occurrences of `words` joined by the separator in the field.
    fn frequency(&self, words: &[&str]) -> Result<u64> {
        let term = words.join(&self.separator);
        if let Some(&known) = self.seen.borrow().get(&term) {
            return Ok(known);
        }
        let freq = self.terms.term_stats(&term)?.total_term_freq;
        self.seen.borrow_mut().insert(term, freq);
        Ok(freq)
    }

    fn channel(&self, candidate: &Candidate) -> f64 {
        match candidate.string_distance == 1.0 {
            true => self.real_word_likelihood,
            false => candidate.string_distance,
        }
    }

    /// `log10` of the score of the word at `at` of `path`.
    fn score(&self, path: &[&Candidate], at: usize, gram_size: usize) -> Result<f64> {
        let word = path[at];
        let ngram = if at == 0 || gram_size == 1 {
            self.unigram(word)?
        } else if at == 1 || gram_size == 2 {
            self.bigram(word, path[at - 1])?
        } else {
            self.trigram(word, path[at - 1], path[at - 2])?
        };
        Ok((self.channel(word) * ngram).log10())
    }

    fn unigram(&self, word: &Candidate) -> Result<f64> {
        let freq = self.frequency(&[&word.term])? as f64;
        Ok(match self.smoothing {
            Smoothing::Laplace { alpha } => {
                (alpha + freq) / (self.vocabulary + alpha * self.distinct)
            }
            _ => (1.0 + freq) / (self.vocabulary + self.distinct),
        })
    }

    fn bigram(&self, word: &Candidate, w1: &Candidate) -> Result<f64> {
        let count = self.frequency(&[&w1.term, &word.term])? as f64;
        let w1_freq = w1.stats.total_term_freq as f64;
        Ok(match self.smoothing {
            Smoothing::StupidBackoff { discount } => match count < 1.0 {
                true => discount * self.unigram(word)?,
                false => count / (w1_freq + 0.00000000001),
            },
            Smoothing::Laplace { alpha } => (alpha + count) / (w1_freq + alpha * self.distinct),
            Smoothing::LinearInterpolation {
                bigram, unigram, ..
            } => match count < 1.0 {
                true => unigram * self.unigram(word)?,
                false => bigram * (count / (0.5 + w1_freq)) + unigram * self.unigram(word)?,
            },
        })
    }

    fn trigram(&self, word: &Candidate, w1: &Candidate, w2: &Candidate) -> Result<f64> {
        Ok(match self.smoothing {
            Smoothing::StupidBackoff { discount } => {
                let bigram = self.frequency(&[&w1.term, &word.term])? as f64;
                if bigram < 1.0 {
                    return Ok(discount * self.unigram(word)?);
                }
                let trigram = self.frequency(&[&w2.term, &w1.term, &word.term])? as f64;
                match trigram < 1.0 {
                    true => discount * (bigram / (w1.stats.total_term_freq as f64 + 0.00000000001)),
                    false => trigram / (bigram + 0.00000000001),
                }
            }
            Smoothing::Laplace { alpha } => {
                let trigram = self.frequency(&[&w2.term, &w1.term, &word.term])? as f64;
                let bigram = self.frequency(&[&w1.term, &word.term])? as f64;
                (alpha + trigram) / (bigram + alpha * self.distinct)
            }
            Smoothing::LinearInterpolation {
                trigram: lambda, ..
            } => {
                // OpenSearch joins these in reverse order; the same lookups give the same
                // scores
                let count = self.frequency(&[&word.term, &w1.term, &w2.term])? as f64;
                if count < 1.0 {
                    return self.bigram(word, w1);
                }
                let pair = self.frequency(&[&word.term, &w1.term])? as f64;
                lambda * (count / (1.0 + pair)) + self.bigram(word, w1)?
            }
        })
    }
}

/// A corrected phrase: one candidate per token.
struct Correction<'a> {
    score: f64,
    path: Vec<&'a Candidate>,
}

impl Correction<'_> {
    /// The phrase, words joined by spaces; with tags, the changed runs wrapped in them.
    fn join(&self, tags: Option<&(String, String)>) -> String {
        let mut out = String::new();
        for (i, candidate) in self.path.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            match tags {
                Some((pre, post)) if !candidate.user_input => {
                    if i == 0 || self.path[i - 1].user_input {
                        out.push_str(pre);
                    }
                    out.push_str(&candidate.term);
                    if i + 1 == self.path.len() || self.path[i + 1].user_input {
                        out.push_str(post);
                    }
                }
                _ => out.push_str(&candidate.term),
            }
        }
        out
    }
}

/// OpenSearch's order of corrections, from the weakest: the lower score, then the later
/// words, then the shorter path.
fn compare(a_score: f64, a: &[&Candidate], b_score: f64, b: &[&Candidate]) -> Ordering {
    if a_score != b_score {
        return a_score.partial_cmp(&b_score).unwrap_or(Ordering::Equal);
    }
    for (x, y) in a.iter().zip(b) {
        match x.term.as_bytes().cmp(y.term.as_bytes()) {
            Ordering::Equal => continue,
            other => return other.reverse(),
        }
    }
    a.len().cmp(&b.len())
}

/// Scores the paths through the candidate sets (OpenSearch's `CandidateScorer`).
struct PathScorer<'m> {
    model: &'m WordModel,
    gram_size: usize,
    /// The corrections kept.
    max_corrections: usize,
}

impl PathScorer<'_> {
    /// The score of a whole path.
    fn score(&self, path: &[&Candidate]) -> Result<f64> {
        let mut sum = 0.0;
        for at in 0..path.len() {
            sum += self.model.score(path, at, self.gram_size)?;
        }
        Ok(sum.exp())
    }

    /// The best corrections scoring above `cutoff`, best first.
    fn best<'s>(
        &self,
        sets: &'s [CandidateSet],
        max_errors: f32,
        cutoff: f64,
    ) -> Result<Vec<Correction<'s>>> {
        if sets.is_empty() {
            return Ok(Vec::new());
        }
        let misspellings = match max_errors >= 1.0 {
            true => max_errors as i64,
            // Java's Math.round on a float
            false => (max_errors * sets.len() as f32 + 0.5).floor() as i64,
        };
        let mut search = Search {
            scorer: self,
            sets,
            path: Vec::with_capacity(sets.len()),
            cutoff,
            kept: Vec::new(),
            steps: 0,
        };
        search.walk(0, misspellings.max(1), 0.0)?;
        let mut kept = search.kept;
        kept.sort_by(|a, b| compare(b.score, &b.path, a.score, &a.path));
        Ok(kept)
    }
}

/// A depth-first walk over the paths, keeping the best corrections.
struct Search<'p, 's> {
    scorer: &'p PathScorer<'p>,
    sets: &'s [CandidateSet],
    path: Vec<&'s Candidate>,
    cutoff: f64,
    kept: Vec<Correction<'s>>,
    /// Words scored so far, bounded by [`MAX_STEPS`].
    steps: u64,
}

/// The most words one suggestion scores on a shard: the paths grow as the candidates to the
/// power of the errors allowed, and a request must not hold a search thread for minutes
/// (the defaults score under half a million).
const MAX_STEPS: u64 = 20_000_000;

impl<'s> Search<'_, 's> {
    fn walk(&mut self, at: usize, errors_left: i64, path_score: f64) -> Result<()> {
        let set = &self.sets[at];
        let last = at == self.sets.len() - 1;
        let choices = std::iter::once(&set.original).chain(match errors_left > 0 {
            true => set.candidates.iter(),
            false => [].iter(),
        });
        for (i, candidate) in choices.enumerate() {
            self.steps += 1;
            if self.steps > MAX_STEPS {
                return Err(Error::illegal_argument(format!(
                    "the phrase suggestion would score more than {MAX_STEPS} words on a shard; \
                     lower [max_errors], [shard_size] or the words of the text"
                )));
            }
            self.path.push(candidate);
            let score = path_score
                + self
                    .scorer
                    .model
                    .score(&self.path, at, self.scorer.gram_size)?;
            if last {
                self.offer(score.exp());
            } else {
                let left = if i == 0 { errors_left } else { errors_left - 1 };
                self.walk(at + 1, left, score)?;
            }
            self.path.pop();
        }
        Ok(())
    }

    /// Keeps the current path if it beats the cut-off and the weakest kept correction.
    fn offer(&mut self, score: f64) {
        if score <= self.cutoff {
            return;
        }
        if self.kept.len() < self.scorer.max_corrections {
            self.kept.push(Correction {
                score,
                path: self.path.clone(),
            });
            return;
        }
        let weakest = (0..self.kept.len())
            .min_by(|&a, &b| {
                let (a, b) = (&self.kept[a], &self.kept[b]);
                compare(a.score, &a.path, b.score, &b.path)
            })
            .expect("a full queue has a weakest entry");
        let top = &self.kept[weakest];
        if compare(top.score, &top.path, score, &self.path) == Ordering::Less {
            self.kept[weakest] = Correction {
                score,
                path: self.path.clone(),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::SourceSpec;

    const CORPUS: &[&str] = &[
        "the quick brown fox",
        "quick brown foxes",
        "the lazy dog sleeps",
        "quack quick quicker",
        "brown brawn brain",
        "the quick fox jumps",
    ];

    /// The options for `text` on a one-shard index of [`CORPUS`] in `body`, merged as the
    /// coordinator merges them; `exists` answers the collate queries.
    fn suggest(text: &str, options: Value, exists: &dyn Fn(&Value) -> Result<bool>) -> Value {
        let dir = tempfile::tempdir().unwrap();
        let docs: Vec<Value> = CORPUS.iter().map(|t| json!({"body": t})).collect();
        let mapping = json!({"properties": {"body": {"type": "text"}}});
        let index = crate::test_support::index_with(dir.path(), mapping, &docs);
        let snapshot = index.shard(0).unwrap().snapshot();
        let mut options = options;
        options["field"] = json!("body");
        let suggester = PhraseSuggester::parse(&options).unwrap();
        let shard = ShardInputs {
            searcher: &snapshot.searcher,
            table: &snapshot.table,
            index: "i",
            source: &SourceSpec::default(),
            exists: Some(exists),
        };
        let entry = suggester.run(text, &shard).unwrap();
        suggester.reduce(text, vec![entry])[0]["options"].clone()
    }

    fn never(_: &Value) -> Result<bool> {
        Ok(false)
    }

    fn phrases(options: &Value) -> Vec<(&str, f64)> {
        options
            .as_array()
            .unwrap()
            .iter()
            .map(|o| (o["text"].as_str().unwrap(), o["score"].as_f64().unwrap()))
            .collect()
    }

    // the figures below are the reference node's for the same corpus and request

    #[test]
    fn corrections_score_as_the_reference_scores_them() {
        let options = suggest("the quikc brwn fox", json!({}), &never);
        assert_eq!(
            phrases(&options),
            [
                ("the quick brown fox", 0.018095247),
                ("the quick brawn fox", 0.013391488),
                ("the quick brain fox", 0.011229319),
                ("the quick brwn fox", 0.010981935),
                ("the quack brown fox", 0.010727071),
            ]
        );
    }

    #[test]
    fn bigrams_with_two_errors_and_highlighting() {
        let options = suggest(
            "the quikc brwn fox",
            json!({"confidence": 0, "max_errors": 2, "gram_size": 2,
                   "highlight": {"pre_tag": "<b>", "post_tag": "</b>"}}),
            &never,
        );
        assert_eq!(
            phrases(&options)[..2],
            [
                ("the quick brown fox", 0.00548397),
                ("the quick brawn fox", 0.0040584425)
            ]
        );
        assert_eq!(options[0]["highlighted"], "the <b>quick brown</b> fox");
        assert_eq!(options[3]["highlighted"], "the <b>quick</b> brwn fox");
    }

    #[test]
    fn laplace_and_linear_smoothing() {
        let options = suggest(
            "quikc brwn",
            json!({"gram_size": 2, "smoothing": {"laplace": {"alpha": 0.5}}, "confidence": 0,
                   "size": 2}),
            &never,
        );
        assert_eq!(
            phrases(&options),
            [("quick brwn", 0.1077948), ("quack brwn", 0.06832648)]
        );
        let options = suggest(
            "the quikc brwn fox",
            json!({"gram_size": 3, "max_errors": 2, "confidence": 0, "size": 3,
                   "smoothing": {"linear": {"trigram_lambda": 0.6, "bigram_lambda": 0.3,
                                            "unigram_lambda": 0.1}}}),
            &never,
        );
        assert_eq!(
            phrases(&options),
            [
                ("the quick brown fox", 0.0009009093),
                ("the quick brawn fox", 0.00066672295),
                ("the quick brain fox", 0.0005590748),
            ]
        );
    }

    #[test]
    fn collate_keeps_or_flags_the_matching_corrections() {
        let brown = |query: &Value| Ok(query.to_string().contains("brown"));
        let collate = json!({"query": {"source": {"match_phrase": {"body": "{{suggestion}}"}}}});
        let options = suggest(
            "the quikc brwn fox",
            json!({"collate": collate.clone()}),
            &brown,
        );
        let texts: Vec<_> = phrases(&options).into_iter().map(|p| p.0).collect();
        assert_eq!(texts, ["the quick brown fox", "the quack brown fox"]);
        let mut pruned = collate;
        pruned["prune"] = json!(true);
        let options = suggest("the quikc brwn fox", json!({"collate": pruned}), &brown);
        let flags: Vec<_> = options
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["collate_match"].as_bool().unwrap())
            .collect();
        assert_eq!(flags, [true, false, false, false, true]);
    }

    #[test]
    fn shards_merge_by_phrase_above_the_highest_cutoff() {
        let suggester = PhraseSuggester::parse(&json!({"field": "body", "size": 2})).unwrap();
        let option = |text: &str, score: f32, collate_match: Option<bool>| PhraseOption {
            text: text.into(),
            highlighted: None,
            score,
            collate_match,
        };
        let merged = suggester.reduce(
            "x",
            vec![
                PhraseEntry {
                    cutoff: 0.1,
                    options: vec![option("b", 0.4, Some(false)), option("low", 0.15, None)],
                },
                PhraseEntry {
                    cutoff: 0.2,
                    options: vec![option("b", 0.5, Some(true)), option("a", 0.5, None)],
                },
            ],
        );
        assert_eq!(
            merged,
            json!([{"text": "x", "offset": 0, "length": 1, "options": [
                {"text": "a", "score": 0.5},
                {"text": "b", "score": 0.5, "collate_match": true},
            ]}])
        );
    }

    #[test]
    fn the_popular_threshold_grows_with_the_tokens_frequency() {
        assert_eq!(threshold_term_frequency(0, 0), 0);
        assert_eq!(threshold_term_frequency(1, 0), 1);
        assert_eq!(threshold_term_frequency(5, 0), 6);
        assert_eq!(threshold_term_frequency(25, 0), 51);
        // at the plateau log10(0) is minus infinity; below it, NaN: both give 0
        assert_eq!(threshold_term_frequency(3, 3), 0);
        assert_eq!(threshold_term_frequency(2, 3), 0);
    }

    #[test]
    fn options_default_and_refuse_as_opensearch_does() {
        let s = PhraseSuggester::parse(&json!({"field": "f"})).unwrap();
        assert_eq!(
            (
                s.size,
                s.max_errors,
                s.confidence,
                s.token_limit,
                s.gram_size
            ),
            (5, 0.5, 1.0, 10, None)
        );
        assert_eq!(
            s.smoothing,
            Smoothing::StupidBackoff {
                discount: f64::from(0.4f32)
            }
        );
        let parse = |options: Value| PhraseSuggester::parse(&options).unwrap_err();
        let e = parse(json!({}));
        assert_eq!(e.reason(), "the required field option [field] is missing");
        let e = parse(json!({"field": "f", "bogus": 1}));
        assert_eq!(
            e.reason(),
            "suggester[phrase] doesn't support field [bogus]"
        );
        let e = parse(json!({"field": "f", "bogus": []}));
        assert_eq!(
            e.reason(),
            "suggester[phrase]  doesn't support array field [bogus]"
        );
        let e = parse(json!({"field": "f", "max_errors": 0}));
        assert_eq!(e.reason(), "max_error must be > 0.0");
        let e = parse(json!({"field": "f", "highlight": {"post_tag": "x"}}));
        assert_eq!(
            e.reason(),
            "Pre and post tag must both be null or both not be null."
        );
        let e = parse(json!({"field": "f", "smoothing": {"linear": {"unigram_lambda": 0.5}}}));
        assert_eq!(e.reason(), "linear smoothing lambdas must sum to 1");
        let e = parse(json!({"field": "f", "direct_generator": [{"field": "f", "size": 0}]}));
        assert_eq!(
            (e.kind(), e.reason()),
            (
                "x_content_parse_exception",
                "[direct_generator] failed to parse field [size]"
            )
        );
        let e = parse(json!({"field": "f", "collate": {"query": {"id": "stored"}}}));
        assert!(e.reason().contains("not supported"), "{}", e.reason());
        // the generator's enum options are resolved on the shard, as OpenSearch resolves them
        let s = PhraseSuggester::parse(
            &json!({"field": "f", "direct_generator": [{"field": "f", "sort": "bogus"}]}),
        )
        .unwrap();
        let e = s.generators[0].resolved_checker().unwrap_err();
        assert_eq!(
            e.reason(),
            "No enum constant org.opensearch.search.suggest.SortBy.BOGUS"
        );
    }

    #[test]
    fn highlighting_wraps_each_run_of_changed_words() {
        let word = |term: &str, user_input: bool| Candidate {
            term: term.into(),
            stats: TermStats::default(),
            string_distance: 1.0,
            score: 0.0,
            user_input,
        };
        let words = [
            word("a", false),
            word("b", false),
            word("c", true),
            word("d", false),
        ];
        let correction = Correction {
            score: 1.0,
            path: words.iter().collect(),
        };
        let tags = ("<".to_string(), ">".to_string());
        assert_eq!(correction.join(Some(&tags)), "<a b> c <d>");
        assert_eq!(correction.join(None), "a b c d");
    }
}
