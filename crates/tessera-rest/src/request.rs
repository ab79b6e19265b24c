//! A REST request as handlers see it: method, path, path and query parameters, body; with the
//! parameter checks OpenSearch makes (unknown parameters are an error, values are typed).

use std::collections::BTreeMap;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::Method;
use serde_json::Value;
use tessera_common::params::ParamMap;
use tessera_common::{Error, Result};

/// Parameters every route accepts.
pub const GLOBAL_PARAMS: &[&str] = &[
    "pretty",
    "human",
    "error_trace",
    "filter_path",
    "source",
    "source_content_type",
];

pub struct RestRequest {
    pub method: Method,
    /// The raw path, as in error messages (`/idx/_search`).
    pub path: String,
    pub path_params: BTreeMap<&'static str, String>,
    pub params: BTreeMap<String, String>,
    pub body: Bytes,
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Decodes a path segment (`%2A` → `*`); `+` stays as is in paths.
pub fn decode_path_segment(segment: &str) -> String {
    percent_decode(&segment.replace('+', "%2B"))
}

/// Parses a query string into parameters (a bare `?v` is `"v" => ""`), decoding each key and
/// value as OpenSearch's `RestUtils.decodeComponent` does: a malformed escape is a 400.
pub fn parse_query_string(query: Option<&str>) -> Result<BTreeMap<String, String>> {
    let mut params = BTreeMap::new();
    if let Some(query) = query {
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            params.insert(decode_component(key)?, decode_component(value)?);
        }
    }
    Ok(params)
}

/// Strict percent-decoding of one query-string component, with OpenSearch's error messages.
fn decode_component(text: &str) -> Result<String> {
    let bad = |reason: String| {
        Error::new(
            "bad_parameter_exception",
            400,
            format!("java.lang.IllegalArgumentException: {reason}"),
        )
        .caused_by(Error::illegal_argument(reason))
    };
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                if i + 1 == bytes.len() {
                    return Err(bad(format!(
                        "unterminated escape sequence at end of string: {text}"
                    )));
                }
                if bytes[i + 1] == b'%' {
                    out.push(b'%');
                    i += 2;
                    continue;
                }
                if i + 2 == bytes.len() {
                    return Err(bad(format!(
                        "partial escape sequence at end of string: {text}"
                    )));
                }
                let hex = |b: u8| (b as char).to_digit(16);
                match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(hi), Some(lo)) => out.push((hi * 16 + lo) as u8),
                    _ => {
                        return Err(bad(format!(
                            "invalid escape sequence `%{}{}' at index {i} of: {text}",
                            bytes[i + 1] as char,
                            bytes[i + 2] as char
                        )))
                    }
                }
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

impl RestRequest {
    pub fn path_param(&self, name: &str) -> &str {
        self.path_params.get(name).map(String::as_str).unwrap_or("")
    }

    pub fn param(&self, name: &str) -> Option<&str> {
        self.params.param(name)
    }

    /// A boolean parameter: a bare flag or `true` is true; OpenSearch rejects other values.
    pub fn param_bool(&self, name: &str, default: bool) -> Result<bool> {
        self.params.param_bool(name, default)
    }

    pub fn param_i64(&self, name: &str) -> Result<Option<i64>> {
        self.params.param_i64(name)
    }

    pub fn param_time(&self, name: &str) -> Result<Option<Duration>> {
        self.params.param_time(name)
    }

    /// Rejects parameters the route does not know, with OpenSearch's message.
    pub fn check_params(&self, allowed: &[&str]) -> Result<()> {
        let unknown: Vec<&String> = self
            .params
            .keys()
            .filter(|k| !allowed.contains(&k.as_str()) && !GLOBAL_PARAMS.contains(&k.as_str()))
            .collect();
        match unknown.len() {
            0 => Ok(()),
            1 => Err(Error::illegal_argument(format!(
                "request [{}] contains unrecognized parameter: [{}]",
                self.path, unknown[0]
            ))),
            _ => Err(Error::illegal_argument(format!(
                "request [{}] contains unrecognized parameters: {}",
                self.path,
                unknown
                    .iter()
                    .map(|k| format!("[{k}]"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    pub fn has_body(&self) -> bool {
        self.body.iter().any(|b| !b.is_ascii_whitespace())
    }

    /// The body (or the `source` parameter) parsed as JSON; `None` when empty.
    pub fn json_body(&self) -> Result<Option<Value>> {
        let text: &[u8] = if self.has_body() {
            &self.body
        } else if let Some(source) = self.param("source") {
            source.as_bytes()
        } else {
            return Ok(None);
        };
        parse_json(text).map(Some)
    }

    /// Like [`json_body`], but a body is required.
    pub fn required_json_body(&self) -> Result<Value> {
        self.json_body()?
            .ok_or_else(|| Error::new("parse_exception", 400, "request body is required"))
    }
}

/// Parses JSON, mapping serde's errors to the exception types Jackson gives in OpenSearch.
pub fn parse_json(bytes: &[u8]) -> Result<Value> {
    serde_json::from_slice::<Value>(bytes).map_err(|e| {
        let position = format!("line: {}, column: {}", e.line(), e.column());
        if e.is_eof() {
            Error::new(
                "json_e_o_f_exception",
                400,
                format!("Unexpected end-of-input\n at [Source: REDACTED; {position}]"),
            )
        } else {
            Error::json_parse(format!("{e}\n at [Source: REDACTED; {position}]"))
        }
    })
}

/// The 1-based line and column of the first `"key"` in a JSON body (1:1 when absent), as
/// OpenSearch's parser reports positions.
pub fn key_position(body: &[u8], key: &str) -> (usize, usize) {
    let text = String::from_utf8_lossy(body);
    let Some(offset) = text.find(&format!("\"{key}\"")) else {
        return (1, 1);
    };
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = offset - before.rfind('\n').map(|p| p + 1).unwrap_or(0) + 1;
    (line, col)
}

/// Adds OpenSearch's `line`/`col` to a parsing error, locating the key it names in the body.
pub fn with_position(error: Error, body: &[u8]) -> Error {
    if error.kind() == "x_content_parse_exception" && error.reason().contains("] unknown field [") {
        return object_parser_position(error, body);
    }
    if error.reason() == tessera_query::dsl::EMPTY_CLAUSE {
        let (line, col) = empty_clause_position(body);
        let reason = format!("{} at [{line}:{col}]", error.reason());
        return error.with_reason(reason);
    }
    if error.kind() != "parsing_exception" || error.meta("line").is_some() {
        return error;
    }
    if let Some(key) = error.body_key() {
        let (line, col) = key_position(body, key);
        return error.with_meta("line", line).with_meta("col", col);
    }
    let named = error
        .reason()
        .rsplit_once('[')
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(key, _)| key.to_string())
        .unwrap_or_default();
    let (line, col) = value_position(body, &named);
    let error = error.with_meta("line", line).with_meta("col", col);
    if error.reason().starts_with("unknown query [") {
        let cause = Error::new(
            "named_object_not_found_exception",
            400,
            format!("[{line}:{col}] unknown field [{named}]"),
        );
        return error.caused_by(cause);
    }
    error
}

/// OpenSearch's declarative object parsers put the unknown key's position in the reason
/// (`[1:33] [bool] unknown field [bogus]`) instead of `line`/`col` keys.
fn object_parser_position(error: Error, body: &[u8]) -> Error {
    let reason = error.reason();
    if reason.starts_with('[') && reason[1..].starts_with(|c: char| c.is_ascii_digit()) {
        return error;
    }
    let named = reason
        .rsplit_once('[')
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(key, _)| key.to_string())
        .unwrap_or_default();
    let (line, col) = key_position(body, &named);
    let reason = format!("[{line}:{col}] {reason}");
    error.with_reason(reason)
}

/// Where OpenSearch's parser stands when it meets an empty query clause: on the `}` of the
/// first `{}` that is a clause (in an array, or the value of a key that holds queries).
fn empty_clause_position(body: &[u8]) -> (usize, usize) {
    const CLAUSE_KEYS: &[&str] = &[
        "query", "filter", "must", "should", "must_not", "positive", "negative",
    ];
    let text = String::from_utf8_lossy(body);
    let bytes = text.as_bytes();
    let mut offset = None;
    for (open, _) in text.match_indices('{') {
        let close = open + 1 + text[open + 1..].len() - text[open + 1..].trim_start().len();
        if bytes.get(close) != Some(&b'}') {
            continue;
        }
        let before = text[..open].trim_end();
        let is_clause = before.ends_with('[')
            || before.ends_with(',') && !before[..before.len() - 1].trim_end().ends_with('"')
            || before.strip_suffix(':').is_some_and(|b| {
                let b = b.trim_end();
                CLAUSE_KEYS.iter().any(|k| b.ends_with(&format!("\"{k}\"")))
            });
        if is_clause {
            offset = Some(close);
            break;
        }
    }
    let Some(offset) = offset else { return (1, 1) };
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = offset - before.rfind('\n').map(|p| p + 1).unwrap_or(0) + 1;
    (line, col)
}

/// The position of the value that follows `"key":` (where OpenSearch's parser stands when it
/// rejects the key).
pub fn value_position(body: &[u8], key: &str) -> (usize, usize) {
    let text = String::from_utf8_lossy(body);
    let Some(start) = text.find(&format!("\"{key}\"")) else {
        return (1, 1);
    };
    let after_key = start + key.len() + 2;
    let offset = text[after_key..]
        .char_indices()
        .find(|(_, c)| !c.is_whitespace() && *c != ':')
        .map(|(i, _)| after_key + i)
        .unwrap_or(start);
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = offset - before.rfind('\n').map(|p| p + 1).unwrap_or(0) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(query: &str) -> RestRequest {
        RestRequest {
            method: Method::GET,
            path: "/idx/_search".into(),
            path_params: BTreeMap::new(),
            params: parse_query_string(Some(query)).unwrap(),
            body: Bytes::new(),
        }
    }

    #[test]
    fn parses_and_decodes_query_strings() {
        let r = request("q=title:fox%20AND%20x&v&size=10");
        assert_eq!(r.param("q"), Some("title:fox AND x"));
        assert_eq!(r.param("v"), Some(""));
        assert!(r.param_bool("v", false).unwrap());
        assert_eq!(r.param_i64("size").unwrap(), Some(10));
        assert_eq!(decode_path_segment("logs-%2A"), "logs-*");
        assert_eq!(
            request("q=price:%3E10%7C%25%25").param("q"),
            Some("price:>10|%%")
        );
    }

    #[test]
    fn malformed_escapes_are_opensearch_errors() {
        for (query, reason) in [
            ("q=%zz", "invalid escape sequence `%zz' at index 0 of: %zz"),
            (
                "q=abc%",
                "unterminated escape sequence at end of string: abc%",
            ),
            ("q=ab%4", "partial escape sequence at end of string: ab%4"),
            (
                "a%g1=1",
                "invalid escape sequence `%g1' at index 1 of: a%g1",
            ),
        ] {
            let e = parse_query_string(Some(query)).unwrap_err();
            assert_eq!(e.kind(), "bad_parameter_exception");
            assert_eq!(e.status(), 400);
            assert_eq!(
                e.reason(),
                format!("java.lang.IllegalArgumentException: {reason}")
            );
        }
    }

    #[test]
    fn unknown_parameters_are_rejected() {
        let r = request("bogus=1&pretty");
        assert_eq!(
            r.check_params(&["size"]).unwrap_err().reason(),
            "request [/idx/_search] contains unrecognized parameter: [bogus]"
        );
        let r = request("bogus=1&other=2");
        assert_eq!(
            r.check_params(&[]).unwrap_err().reason(),
            "request [/idx/_search] contains unrecognized parameters: [bogus], [other]"
        );
        assert!(request("size=abc").param_i64("size").is_err());
    }

    #[test]
    fn json_errors_and_positions() {
        assert_eq!(
            parse_json(b"{\"a\": ").unwrap_err().kind(),
            "json_e_o_f_exception"
        );
        assert_eq!(
            parse_json(b"{\"a\": 1} x").unwrap_err().kind(),
            "json_parse_exception"
        );
        let body = br#"{"query": {"match": {"title": {"query": "x", "bogus": 1}}}}"#;
        let e = with_position(
            Error::parsing("[match] query does not support [bogus]"),
            body,
        );
        assert_eq!(e.meta("line"), Some(&Value::from(1)));
        assert_eq!(
            e.meta("col"),
            Some(&Value::from(55)),
            "the value after the key, as OpenSearch"
        );
        let e = with_position(
            Error::illegal_argument(tessera_query::dsl::EMPTY_CLAUSE),
            br#"{"query": {"bool": {"must": [{"match_all": {}}, {}]}}}"#,
        );
        assert_eq!(e.reason(), "query malformed, empty clause found at [1:50]");
        let e = with_position(
            Error::parsing("unknown query [bogus]"),
            br#"{"query": {"bogus": {}}}"#,
        );
        assert_eq!(e.meta("col"), Some(&Value::from(21)));
        assert_eq!(
            e.cause().unwrap().kind(),
            "named_object_not_found_exception"
        );
        assert_eq!(key_position(br#"{"bogus": 1}"#, "bogus"), (1, 2));
    }
}
