//! `terms_set`: `{"terms_set": {"<field>": {"terms": [...], "minimum_should_match_field" or
//! "minimum_should_match_script": ...}}}`, parsed with OpenSearch's errors. A query with
//! neither minimum parses, as in OpenSearch, and fails when the shard builds it.

use serde_json::Value;
use tessera_common::{Error, Result};
use tessera_script::ScriptSpec;

use super::{as_f32, as_string, token};
use crate::ast::{QueryAst, TermsSetMinimum, TermsSetQuery};

const NAME: &str = "terms_set";

pub fn parse(body: &Value) -> Result<QueryAst> {
    let Value::Object(map) = body else {
        return Err(unknown_token(body));
    };
    let mut entries = map.iter();
    let Some((field, options)) = entries.next() else {
        return Err(Error::parsing(format!(
            "[{NAME}] unknown token [END_OBJECT]"
        )));
    };
    if entries.next().is_some() {
        return Err(Error::parsing(format!(
            "[{NAME}] unknown token [FIELD_NAME]"
        )));
    }
    let Value::Object(options) = options else {
        return Err(unknown_token(options));
    };
    let mut terms = Vec::new();
    let mut minimum = None;
    let mut boost = 1.0;
    for (key, value) in options {
        match (key.as_str(), value) {
            ("terms", Value::Array(values)) => terms = values.clone(),
            ("minimum_should_match_field", value) if !value.is_object() => {
                if matches!(minimum, Some(TermsSetMinimum::Script(_))) {
                    return Err(both("script"));
                }
                minimum = Some(TermsSetMinimum::Field(as_string(NAME, key, value)?));
            }
            ("minimum_should_match_script", Value::Object(_)) => {
                if matches!(minimum, Some(TermsSetMinimum::Field(_))) {
                    return Err(both("field"));
                }
                minimum = Some(TermsSetMinimum::Script(Box::new(ScriptSpec::parse(
                    NAME, value,
                )?)));
            }
            ("boost", value) => boost = as_f32(NAME, key, value)?,
            ("_name", _) => {}
            (other, _) => {
                return Err(Error::parsing(format!(
                    "[{NAME}] query does not support [{other}]"
                )))
            }
        }
    }
    Ok(QueryAst::TermsSet(Box::new(TermsSetQuery {
        field: field.clone(),
        terms,
        minimum,
        boost,
    })))
}

fn unknown_token(value: &Value) -> Error {
    Error::parsing(format!("[{NAME}] unknown token [{}]", token(value)))
}

/// The second of a field and a script; `first` names the one already given.
fn both(first: &str) -> Error {
    Error::illegal_argument(format!(
        "A {first} has already been specified. Cannot specify both a field and script"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parsed(body: Value) -> TermsSetQuery {
        match parse(&body).unwrap() {
            QueryAst::TermsSet(query) => *query,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn parses_a_field_or_a_script_minimum() {
        let query = parsed(json!({"tags": {
            "terms": ["a", "b", "a"], "minimum_should_match_field": "req", "boost": 2, "_name": "n"
        }}));
        assert_eq!(query.field, "tags");
        assert_eq!(query.terms, vec![json!("a"), json!("b"), json!("a")]);
        assert_eq!(query.minimum, Some(TermsSetMinimum::Field("req".into())));
        assert_eq!(query.boost, 2.0);
        let query = parsed(json!({"tags": {
            "terms": [1], "minimum_should_match_script": {"source": "params.num_terms"}
        }}));
        let Some(TermsSetMinimum::Script(script)) = query.minimum else {
            panic!("a script minimum")
        };
        assert_eq!(script.source.as_deref(), Some("params.num_terms"));
        assert_eq!(parsed(json!({"tags": {"terms": []}})).minimum, None);
    }

    #[test]
    fn refuses_as_opensearch_does() {
        let reason = |body: Value| parse(&body).unwrap_err().reason().to_string();
        assert_eq!(reason(json!({})), "[terms_set] unknown token [END_OBJECT]");
        assert_eq!(
            reason(json!({"tags": ["a"]})),
            "[terms_set] unknown token [START_ARRAY]"
        );
        assert_eq!(
            reason(json!({"tags": {"terms": []}, "x": {}})),
            "[terms_set] unknown token [FIELD_NAME]"
        );
        assert_eq!(
            reason(json!({"tags": {"terms": "a"}})),
            "[terms_set] query does not support [terms]"
        );
        assert_eq!(
            reason(json!({"tags": {"terms": ["a"], "minimum_should_match_script": "1"}})),
            "[terms_set] query does not support [minimum_should_match_script]"
        );
        assert_eq!(
            reason(
                json!({"tags": {"terms": ["a"], "minimum_should_match_field": "r",
                "minimum_should_match_script": {"source": "1"}}})
            ),
            "A field has already been specified. Cannot specify both a field and script"
        );
    }
}
