//! The `_scripts` endpoints. Stored scripts: `PUT/POST /_scripts/{id}[/{context}]`,
//! `GET /_scripts/{id}`, `DELETE /_scripts/{id}` (kept by `tessera_node::scripts`).
//! `POST /_scripts/painless/_execute`: runs an inline Painless script (the `tessera_script`
//! subset) in the `painless_test` context and answers `{"result": <toString of its value>}`,
//! or OpenSearch's `script_exception`. The `score` and `filter` contexts need a document
//! indexed against an index's mapping (`context_setup`), which Tessera does not build yet:
//! they are refused with a 400 rather than answered wrongly.

use std::sync::Arc;

use serde_json::{json, Map, Value};
use tessera_common::{Error, Result};
use tessera_node::scripts::{get_response, script_cache};
use tessera_node::{Node, ResolveOptions};
use tessera_script::{Env, ScriptContext, Value as ScriptValue};

use crate::request::{key_position, RestRequest};
use crate::response::RestResponse;

/// The line and column of the value of the first `"key"` in the body.
fn value_position(body: &[u8], key: &str) -> (usize, usize) {
    let (line, col) = key_position(body, key);
    let text = String::from_utf8_lossy(body);
    let line_text = text.lines().nth(line - 1).unwrap_or("");
    let after_key = col - 1 + key.len() + 2;
    let rest = line_text.get(after_key..).unwrap_or("");
    let skipped = rest.len() - rest.trim_start_matches([' ', ':', '\t']).len();
    (line, after_key + skipped + 1)
}

/// The line and column of the `}` closing the object that is the value of `"key"`.
fn object_end_position(body: &[u8], key: &str) -> (usize, usize) {
    let (line, col) = value_position(body, key);
    let text = String::from_utf8_lossy(body);
    let start: usize = text
        .split_inclusive('\n')
        .take(line - 1)
        .map(str::len)
        .sum::<usize>()
        + col
        - 1;
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, c) in text[start..].char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            '{' if !in_string => depth += 1,
            '}' if !in_string => {
                depth -= 1;
                if depth == 0 {
                    let at = start + i;
                    let line_start = text[..at].rfind('\n').map_or(0, |p| p + 1);
                    return (text[..at].matches('\n').count() + 1, at - line_start + 1);
                }
            }
            _ => {}
        }
    }
    (line, col)
}

fn json_token(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "VALUE_STRING",
        Value::Number(_) => "VALUE_NUMBER",
        Value::Bool(_) => "VALUE_BOOLEAN",
        Value::Null => "VALUE_NULL",
        Value::Array(_) => "START_ARRAY",
        Value::Object(_) => "START_OBJECT",
    }
}

fn xcontent(reason: String) -> Error {
    Error::new("x_content_parse_exception", 400, reason)
}

struct ExecuteRequest {
    source: String,
    params: Value,
    context: String,
    /// `context_setup.index`: OpenSearch resolves it even for `painless_test`.
    index: Option<String>,
}

/// Reads the body as OpenSearch's `painless_execute_request` parser does.
fn parse_request(body: &[u8], json: &Value) -> Result<ExecuteRequest> {
    let Value::Object(fields) = json else {
        return Err(xcontent(
            "[1:1] [painless_execute_request] Expected START_OBJECT".to_string(),
        ));
    };
    for key in fields.keys() {
        if !matches!(key.as_str(), "script" | "context" | "context_setup") {
            let (line, col) = key_position(body, key);
            return Err(xcontent(format!(
                "[{line}:{col}] [painless_execute_request] unknown field [{key}]"
            )));
        }
    }
    let script = match fields.get("script") {
        None => return Err(Error::illegal_argument("Required [script]")),
        Some(Value::Object(script)) => script,
        Some(other) => {
            let (line, col) = value_position(body, "script");
            return Err(xcontent(format!(
                "[{line}:{col}] [painless_execute_request] script doesn't support values of type: {}",
                json_token(other)
            )));
        }
    };
    let script_error = |key: &str, reason: String| {
        let (line, col) = value_position(body, key);
        xcontent(format!(
            "[{line}:{col}] [painless_execute_request] failed to parse field [script]"
        ))
        .caused_by(xcontent(reason))
    };
    let mut source = None;
    let mut params = Value::Object(Map::new());
    let mut lang = "painless".to_string();
    for (key, value) in script {
        match (key.as_str(), value) {
            ("source" | "inline", Value::String(s)) => source = Some(s.clone()),
            ("source" | "inline", Value::Object(_)) => source = Some(value.to_string()),
            ("lang", Value::String(s)) => lang = s.clone(),
            ("params", Value::Object(_)) => params = value.clone(),
            ("options", Value::Object(_)) => {}
            ("id", _) => {
                return Err(Error::action_request_validation(&[
                    "only inline scripts are supported".to_string(),
                ]))
            }
            ("source" | "inline" | "lang" | "params" | "options", other) => {
                let (line, col) = value_position(body, key);
                return Err(script_error(
                    key,
                    format!(
                        "[{line}:{col}] [script] {key} doesn't support values of type: {}",
                        json_token(other)
                    ),
                ));
            }
            (other, _) => {
                let (line, col) = key_position(body, other);
                return Err(script_error(
                    other,
                    format!("[{line}:{col}] [script] unknown field [{other}]"),
                ));
            }
        }
    }
    if lang != "painless" {
        return Err(Error::illegal_argument(format!(
            "script_lang not supported [{lang}]"
        )));
    }
    let Some(source) = source else {
        let (line, col) = object_end_position(body, "script");
        return Err(xcontent(format!(
            "[{line}:{col}] [painless_execute_request] failed to parse field [script]"
        ))
        .caused_by(Error::illegal_argument(
            "must specify either [source] for an inline script or [id] for a stored script",
        )));
    };
    let context = match fields.get("context") {
        None | Some(Value::Null) => "painless_test".to_string(),
        Some(Value::String(c)) => c.clone(),
        Some(other) => {
            let (line, col) = value_position(body, "context");
            return Err(xcontent(format!(
                "[{line}:{col}] [painless_execute_request] context doesn't support values of type: {}",
                json_token(other)
            )));
        }
    };
    let index = fields
        .get("context_setup")
        .and_then(|setup| setup.get("index"))
        .and_then(Value::as_str)
        .map(str::to_string);
    Ok(ExecuteRequest {
        source,
        params,
        context,
        index,
    })
}

/// `POST /_scripts/painless/_execute`.
pub async fn execute(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let Some(json) = request.json_body()? else {
        return Err(Error::new(
            "parse_exception",
            400,
            "request body or source parameter is required",
        ));
    };
    let parsed = parse_request(&request.body, &json)?;
    match parsed.context.as_str() {
        "painless_test" => {}
        "score" | "filter" => {
            return Err(Error::illegal_argument(format!(
                "the [{}] context of _scripts/painless/_execute is not supported by Tessera: only [painless_test] is",
                parsed.context
            )));
        }
        other => {
            return Err(xcontent(
                "Failed to build [painless_execute_request] after last required field arrived"
                    .to_string(),
            )
            .caused_by(Error::new(
                "unsupported_operation_exception",
                400,
                format!("unsupported script context name [{other}]"),
            )));
        }
    }
    if let Some(index) = &parsed.index {
        let options = ResolveOptions {
            document_api: true,
            ..ResolveOptions::default()
        };
        node.resolve(index, &options)?;
    }
    let result = node
        .pools
        .search
        .run(move || {
            let script = script_cache()
                .get_or_compile(&parsed.source, ScriptContext::PainlessTest)
                .map_err(|e| e.to_exception(&parsed.source))?;
            let params = ScriptValue::from_json(&parsed.params);
            let value = script
                .execute(&Env::new(&params))
                .map_err(|e| e.to_exception(&parsed.source))?;
            Ok(value.to_java_string())
        })
        .await?;
    Ok(RestResponse::ok(json!({ "result": result })))
}

/// `PUT/POST /_scripts/{id}[/{context}]` (the context also as `?context=`).
pub async fn put_stored(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    if !request.has_body() {
        return Err(Error::new(
            "parse_exception",
            400,
            "request body is required",
        ));
    }
    let body = crate::request::parse_json(&request.body)?;
    let id = request.path_param("id").to_string();
    let context = request
        .path_params
        .get("context")
        .cloned()
        .or_else(|| request.param("context").map(str::to_string));
    let positioned = |e: Error| {
        // OpenSearch positions the parse errors of the body's top level
        if e.kind() != "parsing_exception" {
            return e;
        }
        let (line, col) = match e.reason().strip_prefix("unexpected field [") {
            Some(rest) => key_position(&request.body, rest.split(']').next().unwrap_or("")),
            None => value_position(&request.body, "script"),
        };
        e.with_meta("line", line).with_meta("col", col)
    };
    let runner = node.clone();
    node.pools
        .management
        .run(move || runner.put_stored_script(&id, &body, context.as_deref()))
        .await
        .map_err(positioned)?;
    Ok(RestResponse::ok(json!({"acknowledged": true})))
}

/// `GET /_scripts/{id}`: `found: false` with 404 when there is none.
pub async fn get_stored(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let id = request.path_param("id");
    let script = node.stored_script(id);
    let status = if script.is_some() { 200 } else { 404 };
    Ok(RestResponse::json(
        status,
        get_response(id, script.as_ref()),
    ))
}

/// `DELETE /_scripts/{id}`.
pub async fn delete_stored(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let id = request.path_param("id").to_string();
    let runner = node.clone();
    node.pools
        .management
        .run(move || runner.delete_stored_script(&id))
        .await?;
    Ok(RestResponse::ok(json!({"acknowledged": true})))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &str) -> Result<ExecuteRequest> {
        parse_request(body.as_bytes(), &serde_json::from_str(body).unwrap())
    }

    #[test]
    fn request_errors_as_opensearch_words_them() {
        let e = parse(r#"{"script":"1+1"}"#).err().unwrap();
        assert_eq!(
            e.reason(),
            "[1:11] [painless_execute_request] script doesn't support values of type: VALUE_STRING"
        );
        let e = parse(r#"{"script":{"source":"1+1","foo":1}}"#)
            .err()
            .unwrap();
        assert_eq!(
            e.reason(),
            "[1:33] [painless_execute_request] failed to parse field [script]"
        );
        assert_eq!(
            e.cause().unwrap().reason(),
            "[1:27] [script] unknown field [foo]"
        );
        let e = parse(r#"{"script":{"source":"1+1"},"foo":1}"#)
            .err()
            .unwrap();
        assert_eq!(
            e.reason(),
            "[1:28] [painless_execute_request] unknown field [foo]"
        );
        let e = parse(r#"{"script":{"source":"1+1","params":5}}"#)
            .err()
            .unwrap();
        assert_eq!(
            e.cause().unwrap().reason(),
            "[1:36] [script] params doesn't support values of type: VALUE_NUMBER"
        );
        assert_eq!(parse("{}").err().unwrap().reason(), "Required [script]");
        let e = parse(r#"{"script":{"lang":"painless"}}"#).err().unwrap();
        assert_eq!(
            e.reason(),
            "[1:29] [painless_execute_request] failed to parse field [script]"
        );
        assert_eq!(e.cause().unwrap().kind(), "illegal_argument_exception");
        let ok = parse(r#"{"script":{"source":"1","params":{"a":1}}}"#)
            .ok()
            .unwrap();
        assert_eq!(
            (ok.source.as_str(), ok.context.as_str()),
            ("1", "painless_test")
        );
    }
}
