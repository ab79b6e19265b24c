//! The `script` object of a request (`script_score`, `script` queries, script fields, sorts,
//! aggregations, updates), parsed the way OpenSearch's `Script.parse` reads it: an inline
//! `source` (or its old name `inline`; an object source is kept as its JSON text), or the
//! `id` of a stored script, a `lang` (painless when absent), `params` and compiler `options`;
//! a bare string is an inline painless script where the owner accepts that form. The bad
//! shapes get OpenSearch's words: the inner `[script] ...` error wrapped in the owner's
//! `[owner] failed to parse field [script]`.
//!
//! Resolving an `id` against the stored scripts is the node's (`tessera_node::scripts`): this
//! module only reads the request.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};
use tessera_common::error::{json_token, Error};

use crate::compile::{Script, ScriptContext};
use crate::value::Value;

/// The language when a script names none.
pub const DEFAULT_LANG: &str = "painless";

/// OpenSearch's error for a stored script `id` that does not exist.
pub fn script_not_found(id: &str) -> Error {
    Error::new(
        "resource_not_found_exception",
        404,
        format!("unable to find script [{id}] in cluster state"),
    )
}

/// A parsed `script` object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptSpec {
    /// The inline source; `None` for a stored script.
    pub source: Option<String>,
    /// The stored script's id; `None` for an inline script.
    pub id: Option<String>,
    /// The language as the request gave it (`None`: painless, or the stored script's).
    pub lang: Option<String>,
    pub params: Map<String, Json>,
    /// Compiler options (only `content_type` is legal).
    pub options: Map<String, Json>,
}

impl ScriptSpec {
    /// An inline painless script without parameters.
    pub fn inline(source: impl Into<String>) -> Self {
        ScriptSpec {
            source: Some(source.into()),
            id: None,
            lang: None,
            params: Map::new(),
            options: Map::new(),
        }
    }

    /// Reads `value`, the `script` field of `owner` (the query, aggregation or section that
    /// holds it, as OpenSearch names it in errors): an object, or a string (an inline script).
    pub fn parse(owner: &str, value: &Json) -> Result<Self, Error> {
        match value {
            Json::String(source) => Ok(ScriptSpec::inline(source.clone())),
            _ => Self::parse_object(owner, value),
        }
    }

    /// Reads `value` where the owner takes only the object form (`script_score`'s `script`).
    pub fn parse_object(owner: &str, value: &Json) -> Result<Self, Error> {
        let Json::Object(fields) = value else {
            return Err(Error::x_content_parse(format!(
                "[{owner}] script doesn't support values of type: {}",
                json_token(value)
            )));
        };
        let failed = || Error::x_content_parse(format!("[{owner}] failed to parse field [script]"));
        let mut spec = ScriptSpec {
            source: None,
            id: None,
            lang: None,
            params: Map::new(),
            options: Map::new(),
        };
        for (key, value) in fields {
            let unsupported = || {
                failed().caused_by(Error::x_content_parse(format!(
                    "[script] {key} doesn't support values of type: {}",
                    json_token(value)
                )))
            };
            match key.as_str() {
                "source" | "inline" | "id" => {
                    let text = match (key.as_str(), value) {
                        (_, Json::String(s)) => s.clone(),
                        ("source" | "inline", Json::Object(_)) => {
                            spec.options.insert(
                                "content_type".to_string(),
                                Json::from("application/json; charset=UTF-8"),
                            );
                            value.to_string()
                        }
                        _ => return Err(unsupported()),
                    };
                    if spec.source.is_some() || spec.id.is_some() {
                        return Err(failed().caused_by(
                            Error::x_content_parse(format!(
                                "[script] failed to parse field [{key}]"
                            ))
                            .caused_by(Error::illegal_argument(
                                "must only use one of [source, id] when specifying a script",
                            )),
                        ));
                    }
                    if key == "id" {
                        spec.id = Some(text);
                    } else {
                        spec.source = Some(text);
                    }
                }
                "lang" => match value {
                    Json::String(s) => spec.lang = Some(s.clone()),
                    _ => return Err(unsupported()),
                },
                "params" => match value {
                    Json::Object(params) => spec.params = params.clone(),
                    _ => return Err(unsupported()),
                },
                "options" => match value {
                    Json::Object(options) => spec.options.extend(options.clone()),
                    _ => return Err(unsupported()),
                },
                other => {
                    return Err(failed().caused_by(Error::x_content_parse(format!(
                        "[script] unknown field [{other}]"
                    ))))
                }
            }
        }
        let illegal = |reason: String| Err(failed().caused_by(Error::illegal_argument(reason)));
        if spec.source.is_none() && spec.id.is_none() {
            return illegal(
                "must specify either [source] for an inline script or [id] for a stored script"
                    .to_string(),
            );
        }
        if spec.id.is_some() {
            if spec.lang.is_some() {
                return illegal("illegally specified <lang> for a stored script".to_string());
            }
            if !spec.options.is_empty() {
                return illegal("illegally specified <options> for a stored script".to_string());
            }
        }
        let illegal_options: Vec<String> = spec
            .options
            .iter()
            .filter(|(key, _)| *key != "content_type")
            .map(|(key, value)| format!("{key}={}", java_text(value)))
            .collect();
        if !illegal_options.is_empty() {
            return illegal(format!(
                "illegal compiler options [{{{}}}] specified",
                illegal_options.join(", ")
            ));
        }
        Ok(spec)
    }

    /// The language: the request's, else painless.
    pub fn lang(&self) -> &str {
        self.lang.as_deref().unwrap_or(DEFAULT_LANG)
    }

    /// An inline script's language must be painless: OpenSearch's error for any other when
    /// the script is about to be compiled.
    pub fn check_lang(&self) -> Result<(), Error> {
        match self.lang() {
            DEFAULT_LANG => Ok(()),
            other => Err(Error::illegal_argument(format!(
                "script_lang not supported [{other}]"
            ))),
        }
    }

    /// `params` as the script sees it (a `Value::Map`), converted once per request.
    pub fn params_value(&self) -> Value {
        Value::from_json(&Json::Object(self.params.clone()))
    }

    /// The inline painless script compiled for `context` (once per process: the shared
    /// cache), with OpenSearch's errors: another language, a compile error as a
    /// `script_exception`, and a stored script left unresolved (the node turns stored scripts
    /// into inline ones before a search reaches a shard) as a missing one.
    pub fn compile(&self, context: ScriptContext) -> Result<Arc<Script>, Error> {
        self.check_lang()?;
        let Some(source) = &self.source else {
            return Err(script_not_found(self.id.as_deref().unwrap_or_default()));
        };
        crate::cache::shared()
            .get_or_compile(source, context)
            .map_err(|e| e.to_exception(source))
    }
}

/// A script with its source at hand: an inline one, or a stored one looked up by id (its
/// `lang` then the stored script's, its `params` the request's).
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedScript {
    pub lang: String,
    pub source: String,
    /// Whether it came from the stored scripts (which changes the error for another language).
    pub stored: Option<String>,
    pub params: Map<String, Json>,
}

impl ResolvedScript {
    /// The painless source, to compile in `context` (OpenSearch's context name, `score`):
    /// OpenSearch's error when the script is in another language.
    pub fn painless(&self, context: &str) -> Result<&str, Error> {
        match (self.lang.as_str(), &self.stored) {
            (DEFAULT_LANG, _) => Ok(&self.source),
            ("mustache", Some(_)) if context != "template" => Err(Error::illegal_argument(
                format!("mustache engine does not know how to handle context [{context}]"),
            )),
            (other, _) => Err(Error::illegal_argument(format!(
                "script_lang not supported [{other}]"
            ))),
        }
    }

    /// `params` as the script sees it (a `Value::Map`), converted once per request.
    pub fn params_value(&self) -> Value {
        Value::from_json(&Json::Object(self.params.clone()))
    }
}

/// A JSON value as Java's `toString` of the parsed map value shows it in error messages.
fn java_text(value: &Json) -> String {
    match value {
        Json::String(s) => s.clone(),
        other => Value::from_json(other).to_java_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(value: Json) -> Error {
        ScriptSpec::parse("script_score", &value).unwrap_err()
    }

    #[test]
    fn forms() {
        let spec = ScriptSpec::parse("script", &json!("doc['a'].value")).unwrap();
        assert_eq!(spec.source.as_deref(), Some("doc['a'].value"));
        assert_eq!(spec.lang(), "painless");
        let spec = ScriptSpec::parse(
            "script",
            &json!({"inline": "1", "lang": "painless", "params": {"a": 1}}),
        )
        .unwrap();
        assert_eq!(spec.source.as_deref(), Some("1"));
        assert_eq!(spec.params["a"], json!(1));
        let spec = ScriptSpec::parse("script", &json!({"id": "s1", "params": {}})).unwrap();
        assert_eq!((spec.id.as_deref(), spec.source), (Some("s1"), None));
        let spec = ScriptSpec::parse("script", &json!({"source": {"a": 1}})).unwrap();
        assert_eq!(spec.source.as_deref(), Some(r#"{"a":1}"#));
        assert!(ScriptSpec::parse_object("script_score", &json!("1")).is_err());
    }

    #[test]
    fn bad_shapes_as_opensearch_words_them() {
        let e = ScriptSpec::parse_object("script_score", &json!("x")).unwrap_err();
        assert_eq!(
            e.reason(),
            "[script_score] script doesn't support values of type: VALUE_STRING"
        );
        let e = err(json!({"source": "1", "foo": 1}));
        assert_eq!(e.reason(), "[script_score] failed to parse field [script]");
        assert_eq!(e.cause().unwrap().reason(), "[script] unknown field [foo]");
        let e = err(json!({"source": "1", "id": "a"}));
        assert_eq!(
            e.cause().unwrap().cause().unwrap().reason(),
            "must only use one of [source, id] when specifying a script"
        );
        let e = err(json!({"id": "a", "lang": "painless"}));
        assert_eq!(
            e.cause().unwrap().reason(),
            "illegally specified <lang> for a stored script"
        );
        let e = err(json!({"lang": "painless"}));
        assert_eq!(
            e.cause().unwrap().reason(),
            "must specify either [source] for an inline script or [id] for a stored script"
        );
        let e = err(json!({"source": "1", "params": 5}));
        assert_eq!(
            e.cause().unwrap().reason(),
            "[script] params doesn't support values of type: VALUE_NUMBER"
        );
        let e = err(json!({"source": 5}));
        assert_eq!(
            e.cause().unwrap().reason(),
            "[script] source doesn't support values of type: VALUE_NUMBER"
        );
        let e = err(json!({"source": "1", "options": {"a": "b"}}));
        assert_eq!(
            e.cause().unwrap().reason(),
            "illegal compiler options [{a=b}] specified"
        );
        let spec = ScriptSpec::parse("s", &json!({"source": "1", "lang": "foo"})).unwrap();
        assert_eq!(
            spec.check_lang().unwrap_err().reason(),
            "script_lang not supported [foo]"
        );
    }
}
