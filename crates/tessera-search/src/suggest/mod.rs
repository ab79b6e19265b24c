//! `suggest`: suggestions computed beside a search, as OpenSearch's suggest phase.
//!
//! Each shard runs every suggestion of the request on its reader and answers with its own
//! options ([`ShardSuggest`], part of the query phase's result, so a remote shard sends it
//! over the wire like the hits); the coordinator merges them with one reduce per suggestion
//! ([`reduce`]) and renders the `suggest` section. A search with `suggest` but neither a
//! query nor aggregations is "suggest only": the shards skip the query and the answer has no
//! hits, as in OpenSearch.
//!
//! The `term` ([`term`]), `phrase` ([`phrase`]) and `completion` ([`completion`])
//! suggesters are implemented; the first two draw their candidates from one spell checker
//! ([`spell`]).

pub mod completion;
mod options;
pub mod phrase;
pub mod spell;
pub mod term;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tantivy::Searcher;
use tessera_common::error::json_token as token;
use tessera_common::{Error, Result};
use tessera_mapping::FieldTable;

use crate::request::SourceSpec;
use completion::{CompletionOption, CompletionSuggester, TextKind};
use phrase::{PhraseEntry, PhraseSuggester};
use term::{TermEntry, TermSuggester};

/// The request's `suggest` section.
#[derive(Clone, Debug, PartialEq)]
pub struct SuggestRequest {
    pub suggestions: Vec<Suggestion>,
}

/// One named suggestion.
#[derive(Clone, Debug, PartialEq)]
pub struct Suggestion {
    pub name: String,
    /// Its own `text`, else the section's global one (checked on the shard, as OpenSearch
    /// does: a suggestion without text fails the shards).
    pub text: Option<String>,
    /// Whether the text came as `regex` (the completion suggester's regular expression).
    pub text_kind: TextKind,
    pub suggester: Suggester,
}

/// What a suggestion runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Suggester {
    Term(TermSuggester),
    Phrase(PhraseSuggester),
    Completion(CompletionSuggester),
}

impl Suggester {
    /// The type name `typed_keys` prefixes the suggestion's name with.
    fn type_name(&self) -> &'static str {
        match self {
            Suggester::Term(_) => "term",
            Suggester::Phrase(_) => "phrase",
            Suggester::Completion(_) => "completion",
        }
    }
}

/// One shard's answer to every suggestion of the request, in request order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ShardSuggest {
    pub suggestions: Vec<ShardSuggestion>,
}

/// One shard's answer to one suggestion.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ShardSuggestion {
    /// One entry per token of the text.
    Term(Vec<TermEntry>),
    /// The corrected phrases, best first, and the shard's cut-off.
    Phrase(PhraseEntry),
    /// The shard's best options, best first.
    Completion(Vec<CompletionOption>),
}

/// What a shard runs the suggestions on: its reader, its fields, its index's name (the
/// completion options show it), the `_source` the request asks for, and whether a query
/// matches a document of the shard (the phrase suggester's `collate`).
pub struct ShardInputs<'a> {
    pub searcher: &'a Searcher,
    pub table: &'a FieldTable,
    pub index: &'a str,
    pub source: &'a SourceSpec,
    pub exists: Option<&'a ExistsCheck<'a>>,
}

/// Whether a query (an object of the query DSL) matches a document of the shard.
pub type ExistsCheck<'a> = dyn Fn(&Value) -> Result<bool> + 'a;

impl SuggestRequest {
    /// Parses the body's `suggest` object.
    pub fn parse(value: &Value) -> Result<SuggestRequest> {
        let Value::Object(map) = value else {
            return Err(Error::parsing(format!(
                "Unknown key for a {} in [suggest].",
                token(value)
            )));
        };
        let global_text = map.get("text").map(text_value).transpose()?;
        let mut suggestions = Vec::new();
        for (name, body) in map {
            if name == "text" {
                continue;
            }
            let mut suggestion = parse_suggestion(name, body)?;
            if suggestion.text.is_none() {
                suggestion.text = global_text.clone();
            }
            suggestions.push(suggestion);
        }
        Ok(SuggestRequest { suggestions })
    }

    /// Runs every suggestion on one shard's reader.
    pub fn run_on_shard(&self, shard: &ShardInputs) -> Result<ShardSuggest> {
        let suggestions = self
            .suggestions
            .iter()
            .map(|suggestion| {
                let text = suggestion.text.as_deref().ok_or_else(|| {
                    Error::illegal_argument("The required text option is missing")
                })?;
                match &suggestion.suggester {
                    Suggester::Term(term) => Ok(ShardSuggestion::Term(term.run(
                        text,
                        shard.searcher,
                        shard.table,
                    )?)),
                    Suggester::Phrase(phrase) => {
                        Ok(ShardSuggestion::Phrase(phrase.run(text, shard)?))
                    }
                    Suggester::Completion(completion) => Ok(ShardSuggestion::Completion(
                        completion.run(text, suggestion.text_kind, shard)?,
                    )),
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(ShardSuggest { suggestions })
    }
}

/// A suggestion's text: a string, or a number or boolean as its text.
fn text_value(value: &Value) -> Result<String> {
    match value {
        Value::String(text) => Ok(text.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        other => Err(Error::parsing(format!(
            "[suggestion] text doesn't support values of type: {}",
            token(other)
        ))),
    }
}

fn parse_suggestion(name: &str, body: &Value) -> Result<Suggestion> {
    let Value::Object(map) = body else {
        return Err(Error::parsing(format!(
            "suggestion [{name}] must be an object, got a {}",
            token(body)
        )));
    };
    let (mut text, mut prefix, mut regex) = (None, None, None);
    let mut suggester = None;
    for (key, value) in map {
        match key.as_str() {
            "text" => text = Some(text_value(value)?),
            "prefix" => prefix = Some(text_value(value)?),
            "regex" => regex = Some(text_value(value)?),
            "term" => suggester = Some(Suggester::Term(TermSuggester::parse(value)?)),
            "completion" => {
                suggester = Some(Suggester::Completion(CompletionSuggester::parse(value)?))
            }
            "phrase" => suggester = Some(Suggester::Phrase(PhraseSuggester::parse(value)?)),
            other => {
                return Err(Error::new(
                    "named_object_not_found_exception",
                    400,
                    format!("unknown field [{other}]"),
                ))
            }
        }
    }
    let suggester = suggester.ok_or_else(|| {
        Error::new(
            "parse_exception",
            400,
            "missing suggestion object".to_string(),
        )
    })?;
    // the completion suggester takes `prefix`, then `regex`, then `text`, as OpenSearch's
    // does; the others read `text` alone (and leave the other two unused, as OpenSearch does)
    let mut text_kind = TextKind::Prefix;
    if let Suggester::Completion(_) = suggester {
        if let Some(prefix) = prefix {
            text = Some(prefix);
        } else if let Some(regex) = regex {
            text = Some(regex);
            text_kind = TextKind::Regex;
        }
    }
    Ok(Suggestion {
        name: name.to_string(),
        text,
        text_kind,
        suggester,
    })
}

/// Merges the shards' answers (one reduce per suggestion: equal options added up, then
/// sorted and cut to the suggestion's `size`) and renders the `suggest` section.
pub fn reduce(
    request: &SuggestRequest,
    shards: Vec<ShardSuggest>,
    typed_keys: bool,
) -> Result<Map<String, Value>> {
    let mut per_suggestion: Vec<Vec<ShardSuggestion>> = vec![Vec::new(); request.suggestions.len()];
    for shard in shards {
        if shard.suggestions.len() != request.suggestions.len() {
            return Err(Error::illegal_state(
                "a shard answered a different number of suggestions than asked",
            ));
        }
        for (i, suggestion) in shard.suggestions.into_iter().enumerate() {
            per_suggestion[i].push(suggestion);
        }
    }
    let mut out = Map::new();
    for (suggestion, answers) in request.suggestions.iter().zip(per_suggestion) {
        let rendered = match &suggestion.suggester {
            Suggester::Term(term) => {
                let entries = answers
                    .into_iter()
                    .map(|answer| match answer {
                        ShardSuggestion::Term(entries) => Ok(entries),
                        _ => Err(mixed()),
                    })
                    .collect::<Result<_>>()?;
                term.reduce(entries)?
            }
            Suggester::Phrase(phrase) => {
                let entries = answers
                    .into_iter()
                    .map(|answer| match answer {
                        ShardSuggestion::Phrase(entry) => Ok(entry),
                        _ => Err(mixed()),
                    })
                    .collect::<Result<_>>()?;
                phrase.reduce(suggestion.text.as_deref().unwrap_or_default(), entries)
            }
            Suggester::Completion(completion) => {
                let options = answers
                    .into_iter()
                    .map(|answer| match answer {
                        ShardSuggestion::Completion(options) => Ok(options),
                        _ => Err(mixed()),
                    })
                    .collect::<Result<_>>()?;
                completion.reduce(suggestion.text.as_deref().unwrap_or_default(), options)
            }
        };
        let key = match typed_keys {
            true => format!("{}#{}", suggestion.suggester.type_name(), suggestion.name),
            false => suggestion.name.clone(),
        };
        out.insert(key, rendered);
    }
    Ok(out)
}

fn mixed() -> Error {
    Error::illegal_state("a shard answered a suggestion with another suggester's options")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_global_text_serves_suggestions_without_their_own() {
        let request = SuggestRequest::parse(&json!({
            "text": "global",
            "a": {"term": {"field": "body"}},
            "b": {"text": "own", "term": {"field": "body"}}
        }))
        .unwrap();
        let texts: Vec<_> = request
            .suggestions
            .iter()
            .map(|s| (s.name.as_str(), s.text.as_deref()))
            .collect();
        assert_eq!(texts, vec![("a", Some("global")), ("b", Some("own"))]);
    }

    #[test]
    fn malformed_sections_are_refused_as_opensearch_refuses_them() {
        let e = SuggestRequest::parse(&json!([])).unwrap_err();
        assert_eq!(e.reason(), "Unknown key for a START_ARRAY in [suggest].");
        let e = SuggestRequest::parse(&json!({"s": {"text": "x"}})).unwrap_err();
        assert_eq!(
            (e.kind(), e.reason()),
            ("parse_exception", "missing suggestion object")
        );
        let e = SuggestRequest::parse(&json!({"s": {"bogus": {}}})).unwrap_err();
        assert_eq!(e.kind(), "named_object_not_found_exception");
        // `prefix` (then `regex`) is the completion suggester's text; the term suggester
        // reads `text` alone
        let request = SuggestRequest::parse(&json!({"text": "g", "s": {
            "prefix": "ni", "regex": "n.", "text": "t", "completion": {"field": "f"}
        }}))
        .unwrap();
        let s = &request.suggestions[0];
        assert_eq!(
            (s.text.as_deref(), s.text_kind),
            (Some("ni"), TextKind::Prefix)
        );
        let request =
            SuggestRequest::parse(&json!({"s": {"regex": "n.", "completion": {"field": "f"}}}))
                .unwrap();
        let s = &request.suggestions[0];
        assert_eq!(
            (s.text.as_deref(), s.text_kind),
            (Some("n."), TextKind::Regex)
        );
        let request = SuggestRequest::parse(
            &json!({"text": "g", "s": {"prefix": "ni", "term": {"field": "f"}}}),
        )
        .unwrap();
        assert_eq!(request.suggestions[0].text.as_deref(), Some("g"));
        // a number is text too
        let request = SuggestRequest::parse(&json!({"text": 5, "s": {"term": {"field": "f"}}}));
        assert_eq!(request.unwrap().suggestions[0].text.as_deref(), Some("5"));
    }

    #[test]
    fn a_suggestion_without_text_fails_on_the_shard() {
        let request = SuggestRequest::parse(&json!({"s": {"term": {"field": "f"}}})).unwrap();
        assert_eq!(request.suggestions[0].text, None);
    }

    #[test]
    fn typed_keys_prefix_the_names_with_the_suggester() {
        let request =
            SuggestRequest::parse(&json!({"s": {"text": "x", "term": {"field": "f"}}})).unwrap();
        let shard = ShardSuggest {
            suggestions: vec![ShardSuggestion::Term(Vec::new())],
        };
        let out = reduce(&request, vec![shard.clone()], true).unwrap();
        assert_eq!(Value::Object(out), json!({"term#s": []}));
        let out = reduce(&request, vec![shard], false).unwrap();
        assert_eq!(Value::Object(out), json!({"s": []}));
    }
}
