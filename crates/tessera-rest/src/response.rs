//! Responses: JSON (compact, or pretty with `?pretty`), `filter_path`, plain text for `_cat`,
//! and the error bodies of every layer (OpenSearch uses three shapes).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Map, Value};
use tessera_common::Error;

/// What a handler returns.
pub enum Body {
    Json(Value),
    /// Already-serialised JSON (search responses, with raw `_source`).
    Raw(Vec<u8>),
    Text(String),
    Empty,
}

pub struct RestResponse {
    pub status: StatusCode,
    pub body: Body,
}

impl RestResponse {
    pub fn ok(value: Value) -> RestResponse {
        RestResponse {
            status: StatusCode::OK,
            body: Body::Json(value),
        }
    }

    pub fn json(status: u16, value: Value) -> RestResponse {
        RestResponse {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
            body: Body::Json(value),
        }
    }

    pub fn serialized<T: Serialize>(status: u16, value: &T) -> Result<RestResponse, Error> {
        Self::serialized_sized(status, value, 128)
    }

    /// Like [`serialized`](Self::serialized), into a buffer of `capacity` bytes to start with:
    /// a large response (a bulk response is about 200 bytes per item) then grows no buffer.
    pub fn serialized_sized<T: Serialize>(
        status: u16,
        value: &T,
        capacity: usize,
    ) -> Result<RestResponse, Error> {
        let mut bytes = Vec::with_capacity(capacity);
        serde_json::to_writer(&mut bytes, value)
            .map_err(|e| Error::internal("serialise a response", e))?;
        Ok(RestResponse {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
            body: Body::Raw(bytes),
        })
    }

    pub fn text(text: String) -> RestResponse {
        RestResponse {
            status: StatusCode::OK,
            body: Body::Text(text),
        }
    }

    pub fn status_only(status: u16) -> RestResponse {
        RestResponse {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
            body: Body::Empty,
        }
    }

    pub fn error(error: &Error) -> RestResponse {
        RestResponse::json(error.status(), error.to_body())
    }
}

/// How to render JSON: `?pretty` and `?filter_path`.
#[derive(Default, Clone)]
pub struct RenderOptions {
    pub pretty: bool,
    pub filter_path: Option<String>,
}

const JSON: &str = "application/json; charset=UTF-8";
const TEXT: &str = "text/plain; charset=UTF-8";

fn with_type(status: StatusCode, body: Vec<u8>, content_type: &'static str) -> Response {
    let length = body.len();
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    // explicit, so that HEAD responses can announce the length of the body they omit
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    response
}

/// Renders a handler's response.
pub fn render(response: RestResponse, options: &RenderOptions) -> Response {
    let status = response.status;
    match response.body {
        Body::Json(value) => with_type(status, encode(value, options), JSON),
        Body::Raw(bytes) => {
            if options.pretty || options.filter_path.is_some() {
                match serde_json::from_slice::<Value>(&bytes) {
                    Ok(value) => with_type(status, encode(value, options), JSON),
                    Err(_) => with_type(status, bytes, JSON),
                }
            } else {
                with_type(status, bytes, JSON)
            }
        }
        Body::Text(text) => with_type(status, text.into_bytes(), TEXT),
        Body::Empty => with_type(status, Vec::new(), JSON),
    }
}

fn encode(value: Value, options: &RenderOptions) -> Vec<u8> {
    let value = match &options.filter_path {
        Some(filter) => filter_path(&value, filter),
        None => value,
    };
    let mut bytes = if options.pretty {
        serde_json::to_vec_pretty(&value).unwrap_or_default()
    } else {
        serde_json::to_vec(&value).unwrap_or_default()
    };
    if options.pretty {
        bytes.push(b'\n');
    }
    bytes
}

/// The string-valued error OpenSearch's HTTP layer gives (unknown route, bad method, …).
pub fn plain_error(status: u16, message: &str, with_status: bool) -> Response {
    let mut body = Map::new();
    body.insert("error".into(), Value::String(message.to_string()));
    if with_status {
        body.insert("status".into(), Value::from(status));
    }
    with_type(
        StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST),
        serde_json::to_vec(&Value::Object(body)).unwrap_or_default(),
        JSON,
    )
}

/// `filter_path`: comma-separated dotted paths with `*` and `**` wildcards; a leading `-`
/// excludes. Inclusions keep only matching paths; exclusions drop them.
pub fn filter_path(value: &Value, filter: &str) -> Value {
    let patterns: Vec<&str> = filter
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    let includes: Vec<Vec<&str>> = patterns
        .iter()
        .filter(|p| !p.starts_with('-'))
        .map(|p| p.split('.').collect())
        .collect();
    let excludes: Vec<Vec<&str>> = patterns
        .iter()
        .filter_map(|p| p.strip_prefix('-'))
        .map(|p| p.split('.').collect())
        .collect();
    let mut result = if includes.is_empty() {
        value.clone()
    } else {
        include(value, &includes).unwrap_or_else(|| Value::Object(Map::new()))
    };
    if !excludes.is_empty() {
        result = exclude(&result, &excludes).unwrap_or_else(|| Value::Object(Map::new()));
    }
    result
}

fn segment_matches(pattern: &str, key: &str) -> bool {
    tessera_mapping::dynamic::simple_match(pattern, key)
}

/// The patterns that continue below `key` (with `**` matching any depth), and whether one ends.
fn advance<'a>(patterns: &[Vec<&'a str>], key: &str) -> (Vec<Vec<&'a str>>, bool) {
    let mut next = Vec::new();
    let mut complete = false;
    for pattern in patterns {
        let Some(first) = pattern.first() else {
            continue;
        };
        if *first == "**" {
            // `**` may match nothing, or this key and more
            let rest: Vec<&str> = pattern[1..].to_vec();
            if rest.is_empty() {
                complete = true;
            } else {
                let (n, c) = advance(&[rest], key);
                next.extend(n);
                complete |= c;
            }
            next.push(pattern.clone());
        } else if segment_matches(first, key) {
            if pattern.len() == 1 {
                complete = true;
            } else {
                next.push(pattern[1..].to_vec());
            }
        }
    }
    (next, complete)
}

fn include(value: &Value, patterns: &[Vec<&str>]) -> Option<Value> {
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, child) in map {
                let (next, complete) = advance(patterns, key);
                if complete {
                    out.insert(key.clone(), child.clone());
                } else if !next.is_empty() {
                    if let Some(kept) = include(child, &next) {
                        out.insert(key.clone(), kept);
                    }
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        Value::Array(items) => {
            let kept: Vec<Value> = items
                .iter()
                .filter_map(|item| include(item, patterns))
                .collect();
            (!kept.is_empty()).then_some(Value::Array(kept))
        }
        _ => None,
    }
}

fn exclude(value: &Value, patterns: &[Vec<&str>]) -> Option<Value> {
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, child) in map {
                let (next, complete) = advance(patterns, key);
                if complete {
                    continue;
                }
                if next.is_empty() {
                    out.insert(key.clone(), child.clone());
                } else if let Some(kept) = exclude(child, &next) {
                    out.insert(key.clone(), kept);
                }
            }
            Some(Value::Object(out))
        }
        Value::Array(items) => Some(Value::Array(
            items
                .iter()
                .filter_map(|item| exclude(item, patterns))
                .collect(),
        )),
        other => Some(other.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn filter_path_includes_and_excludes() {
        let body = json!({"took": 1, "hits": {"total": {"value": 2}, "hits": [{"_id": "a", "_source": {"x": 1}}, {"_id": "b"}]}});
        assert_eq!(
            filter_path(&body, "hits.total"),
            json!({"hits": {"total": {"value": 2}}})
        );
        assert_eq!(
            filter_path(&body, "hits.hits._id"),
            json!({"hits": {"hits": [{"_id": "a"}, {"_id": "b"}]}})
        );
        assert_eq!(
            filter_path(&body, "-took,-hits.hits"),
            json!({"hits": {"total": {"value": 2}}})
        );
        assert_eq!(
            filter_path(&body, "**._id"),
            json!({"hits": {"hits": [{"_id": "a"}, {"_id": "b"}]}})
        );
        assert_eq!(
            filter_path(&body, "h*.total.*"),
            json!({"hits": {"total": {"value": 2}}})
        );
        assert_eq!(filter_path(&body, "nothing"), json!({}));
    }
}
