//! The `script` object of a request, parsed as OpenSearch's `Script.parse` reads it: an inline
//! `source` (or its old name `inline`), or the `id` of a stored script, a `lang` (painless when
//! absent), `params` and compiler `options`; a bare string is an inline painless script. Bad
//! shapes get OpenSearch's words: the inner `[script] ...` error wrapped in the owner's
//! `[owner] failed to parse field [script]`.
//!
//! A minimal version written on the update branch while the full one (with stored scripts)
//! was not there yet; resolving an `id` is the node's (`tessera_node::scripts`).

use serde_json::{Map, Value as Json};
use tessera_common::error::{json_token, Error};

use crate::value::Value;

/// The language when a script names none.
pub const DEFAULT_LANG: &str = "painless";

/// A parsed `script` object.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptSpec {
    /// The inline source; `None` for a stored script.
    pub source: Option<String>,
    /// The stored script's id; `None` for an inline script.
    pub id: Option<String>,
    /// The language as the request gave it (`None`: painless).
    pub lang: Option<String>,
    pub params: Map<String, Json>,
    /// Compiler options.
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

    /// Reads `value`, the `script` field of `owner`: an object, or a string (inline).
    pub fn parse(owner: &str, value: &Json) -> Result<Self, Error> {
        match value {
            Json::String(source) => Ok(ScriptSpec::inline(source.clone())),
            _ => Self::parse_object(owner, value),
        }
    }

    /// Reads `value` where the owner takes only the object form.
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
            match (key.as_str(), value) {
                ("source" | "inline", Json::String(s)) => spec.source = Some(s.clone()),
                ("source" | "inline", Json::Object(_)) => spec.source = Some(value.to_string()),
                ("id", Json::String(s)) => spec.id = Some(s.clone()),
                ("lang", Json::String(s)) => spec.lang = Some(s.clone()),
                ("params", Json::Object(params)) => spec.params = params.clone(),
                ("options", Json::Object(options)) => spec.options = options.clone(),
                ("source" | "inline" | "id" | "lang" | "params" | "options", _) => {
                    return Err(unsupported())
                }
                (other, _) => {
                    return Err(failed().caused_by(Error::x_content_parse(format!(
                        "[script] unknown field [{other}]"
                    ))))
                }
            }
        }
        let illegal = |reason: &str| Err(failed().caused_by(Error::illegal_argument(reason)));
        match (&spec.source, &spec.id) {
            (None, None) => illegal(
                "must specify either [source] for an inline script or [id] for a stored script",
            ),
            (Some(_), Some(_)) => {
                illegal("must only use one of [source, id] when specifying a script")
            }
            (None, Some(_)) if spec.lang.is_some() => {
                illegal("illegally specified <lang> for a stored script")
            }
            _ => Ok(spec),
        }
    }

    /// The language: the request's, else painless.
    pub fn lang(&self) -> &str {
        self.lang.as_deref().unwrap_or(DEFAULT_LANG)
    }

    /// OpenSearch's error for a language other than painless.
    pub fn check_lang(&self) -> Result<(), Error> {
        match self.lang() {
            DEFAULT_LANG => Ok(()),
            other => Err(Error::illegal_argument(format!(
                "script_lang not supported [{other}]"
            ))),
        }
    }

    /// `params` as the script sees it (a `Value::Map`).
    pub fn params_value(&self) -> Value {
        Value::from_json(&Json::Object(self.params.clone()))
    }
}

/// A script with its source at hand: an inline one, or a stored one looked up by id.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedScript {
    pub lang: String,
    pub source: String,
    /// The stored script's id, when it came from the stored scripts.
    pub stored: Option<String>,
    pub params: Map<String, Json>,
}

impl ResolvedScript {
    /// The painless source (OpenSearch's error for another language).
    pub fn painless(&self, _context: &str) -> Result<&str, Error> {
        match self.lang.as_str() {
            DEFAULT_LANG => Ok(&self.source),
            other => Err(Error::illegal_argument(format!(
                "script_lang not supported [{other}]"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn scripts_parse_with_opensearchs_errors() {
        let spec = ScriptSpec::parse("o", &json!("ctx.a = 1")).unwrap();
        assert_eq!(spec.source.as_deref(), Some("ctx.a = 1"));
        let spec = ScriptSpec::parse("o", &json!({"id": "s", "params": {"n": 1}})).unwrap();
        assert_eq!((spec.id.as_deref(), spec.lang()), (Some("s"), "painless"));
        let e = ScriptSpec::parse("o", &json!({"source": "1", "foo": 1})).unwrap_err();
        assert_eq!(e.reason(), "[o] failed to parse field [script]");
        assert_eq!(e.cause().unwrap().reason(), "[script] unknown field [foo]");
        let e = ScriptSpec::parse("o", &json!({})).unwrap_err();
        assert_eq!(e.cause().unwrap().kind(), "illegal_argument_exception");
        let e = ScriptSpec::parse("o", &json!({"source": "1", "lang": "x"}))
            .unwrap()
            .check_lang()
            .unwrap_err();
        assert_eq!(e.reason(), "script_lang not supported [x]");
    }
}
