//! `script_score` (a query's documents scored by a Painless script) and `script` (the
//! documents a script returns true for), with OpenSearch's parse errors. The `script` object
//! itself is `tessera_script::ScriptSpec`'s to read.

use serde_json::Value;
use tessera_common::{Error, Result};
use tessera_script::ScriptSpec;

use super::{as_f32, object, parse_query};
use crate::ast::{QueryAst, ScriptScoreQuery};

/// `{"script_score": {"query": ..., "script": {...}, "min_score": ..., "boost": ...}}`.
pub fn parse_script_score(body: &Value) -> Result<QueryAst> {
    const NAME: &str = "script_score";
    let (mut query, mut script, mut min_score, mut boost) = (None, None, None, 1.0);
    for (key, value) in object(NAME, body)? {
        match key.as_str() {
            "query" => query = Some(parse_query(value)?),
            "script" => script = Some(ScriptSpec::parse_object(NAME, value)?),
            "min_score" => min_score = Some(number(NAME, key, value)?),
            "boost" => boost = as_f32(NAME, key, value)?,
            "_name" => {}
            other => {
                return Err(Error::x_content_parse(format!(
                    "[{NAME}] unknown field [{other}]"
                )))
            }
        }
    }
    let query = query.ok_or_else(|| Error::illegal_argument("Required [query]"))?;
    let script = script.ok_or_else(|| Error::illegal_argument("Required [script]"))?;
    Ok(QueryAst::ScriptScore(Box::new(ScriptScoreQuery {
        query,
        script,
        min_score,
        boost,
    })))
}

/// A float as OpenSearch's object parser reads one (a number or a numeric string).
fn number(owner: &str, key: &str, value: &Value) -> Result<f32> {
    let parsed = match value {
        Value::Number(n) => n.as_f64().map(|f| f as f32),
        Value::String(s) => s.trim().parse::<f32>().ok(),
        _ => None,
    };
    parsed.ok_or_else(|| {
        let text = value
            .as_str()
            .map_or_else(|| value.to_string(), str::to_string);
        Error::x_content_parse(format!("[{owner}] failed to parse field [{key}]")).caused_by(
            Error::new(
                "number_format_exception",
                400,
                format!("For input string: \"{text}\""),
            ),
        )
    })
}

/// `{"script": {"script": ..., "boost": ...}}`.
pub fn parse_script(body: &Value) -> Result<QueryAst> {
    const NAME: &str = "script";
    let (mut script, mut boost) = (None, 1.0);
    for (key, value) in object(NAME, body)? {
        match key.as_str() {
            "script" => script = Some(ScriptSpec::parse(NAME, value)?),
            "boost" => boost = as_f32(NAME, key, value)?,
            "_name" => {}
            other => {
                return Err(Error::parsing(format!(
                    "[{NAME}] query does not support [{other}]"
                )))
            }
        }
    }
    let script =
        script.ok_or_else(|| Error::parsing("script must be provided with a [script] filter"))?;
    Ok(QueryAst::Script {
        script: Box::new(script),
        boost,
    })
}

/// `function_score`'s `script_score` function: `{"script": ...}`.
pub fn parse_script_function(body: &Value) -> Result<ScriptSpec> {
    const NAME: &str = "script_score";
    let Value::Object(map) = body else {
        return Err(Error::parsing(format!(
            "[{NAME}] malformed score function score parameters."
        )));
    };
    let mut script = None;
    for (key, value) in map {
        match key.as_str() {
            "script" => script = Some(ScriptSpec::parse(NAME, value)?),
            other => {
                return Err(Error::parsing(format!(
                    "{NAME} query does not support [{other}]"
                )))
            }
        }
    }
    script.ok_or_else(|| Error::parsing(format!("{NAME} requires 'script' field")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn script_score_and_its_errors() {
        let q = parse_script_score(&json!({
            "query": {"match_all": {}},
            "script": {"source": "_score * 2", "params": {"a": 1}},
            "min_score": 1,
            "boost": 2
        }))
        .unwrap();
        let QueryAst::ScriptScore(q) = q else {
            panic!()
        };
        assert_eq!((q.min_score, q.boost), (Some(1.0), 2.0));
        assert_eq!(q.script.source.as_deref(), Some("_score * 2"));
        let reason = |body| parse_script_score(&body).unwrap_err().reason().to_string();
        assert_eq!(
            reason(json!({"script": {"source": "1"}})),
            "Required [query]"
        );
        assert_eq!(
            reason(json!({"query": {"match_all": {}}})),
            "Required [script]"
        );
        assert_eq!(
            reason(json!({"query": {"match_all": {}}, "script": {"source": "1"}, "foo": 1})),
            "[script_score] unknown field [foo]"
        );
        assert_eq!(
            reason(json!({"query": {"match_all": {}}, "script": "1"})),
            "[script_score] script doesn't support values of type: VALUE_STRING"
        );
        assert_eq!(
            reason(
                json!({"query": {"match_all": {}}, "script": {"source": "1"}, "min_score": "x"})
            ),
            "[script_score] failed to parse field [min_score]"
        );
    }

    #[test]
    fn script_query_and_its_errors() {
        let q = parse_script(&json!({"script": "doc['a'].value > 1", "boost": 2})).unwrap();
        assert!(matches!(q, QueryAst::Script { boost, .. } if boost == 2.0));
        let reason = |body| parse_script(&body).unwrap_err().reason().to_string();
        assert_eq!(
            reason(json!({"foo": 1})),
            "[script] query does not support [foo]"
        );
        assert_eq!(
            reason(json!({})),
            "script must be provided with a [script] filter"
        );
        assert_eq!(
            parse_script_function(&json!({})).unwrap_err().reason(),
            "script_score requires 'script' field"
        );
        assert_eq!(
            parse_script_function(&json!({"script": "1", "foo": 1}))
                .unwrap_err()
                .reason(),
            "script_score query does not support [foo]"
        );
    }
}
