//! The `completion` field type: the inputs the completion suggester completes prefixes to.
//!
//! Lucene keeps a completion field as a per-segment FST of *keys*: the analyzed input (tokens
//! joined by a separator label), before it the suggestion's context, after it the weight and
//! the input as given (the *surface form* a suggestion shows). Tessera keeps the same keys as
//! the terms of an indexed bytes field, one term per input and context value, so a segment's
//! term dictionary answers a prefix with a range of keys and each key's postings are the
//! documents that gave it:
//!
//! ```text
//! [context index byte, context value, CONTEXT_END]  analyzed form  FORM_END  weight (u32 BE)  surface
//! ```
//!
//! The context part is there only when the mapping has `contexts`; OpenSearch then requires a
//! context on every suggestion and every query, so a query always knows which key ranges to
//! read. This module parses the mapping (checked and rendered as OpenSearch renders it), the
//! documents' values (with OpenSearch's messages) and builds and reads the keys; the
//! suggester itself is `tessera_search::suggest::completion`.

use serde_json::{Map, Value};
use tessera_common::error::json_token as token;
use tessera_common::{Error, Result};

use crate::geo::{encode_geohash, geohash_levels_for, parse_distance, parse_point, GeoPoint};

/// Between the tokens of an analyzed input when `preserve_separators` is on (Lucene's
/// `SEP_LABEL`).
pub const SEPARATOR: u8 = 0x1f;
/// Ends a key's context value.
pub const CONTEXT_END: u8 = 0x1d;
/// Ends a key's analyzed form (no analyzed token holds a NUL: inputs holding one are refused).
pub const FORM_END: u8 = 0x00;
/// OpenSearch's defaults.
const DEFAULT_ANALYZER: &str = "simple";
const DEFAULT_MAX_INPUT_LENGTH: u64 = 50;
const DEFAULT_GEO_PRECISION: i64 = 6;
/// The characters Lucene reserves for its keys, refused in inputs and context values.
const RESERVED: &[char] = &['\u{0}', '\u{1d}', '\u{1e}', '\u{1f}'];

/// A `completion` field's definition.
#[derive(Clone, Debug, PartialEq)]
pub struct CompletionSpec {
    pub analyzer: String,
    pub search_analyzer: String,
    pub preserve_separators: bool,
    pub max_input_length: usize,
    pub contexts: Vec<ContextMapping>,
}

/// One of the field's `contexts`.
#[derive(Clone, Debug, PartialEq)]
pub struct ContextMapping {
    pub name: String,
    pub kind: ContextKind,
    /// The document field the context's values are read from, besides the suggestion's own.
    pub path: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ContextKind {
    Category,
    /// Points kept as geohashes of `precision` characters.
    Geo {
        precision: usize,
    },
}

/// One suggestion of a document: an input with its weight and context values (each the index
/// of its context mapping and the value, a category or a geohash).
#[derive(Clone, Debug, PartialEq)]
pub struct Suggestion {
    pub input: String,
    pub weight: u32,
    pub contexts: Vec<(u8, String)>,
}

/// A key read back from the term dictionary.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Key<'a> {
    pub context: Option<(u8, &'a str)>,
    pub form: &'a [u8],
    pub weight: u32,
    pub surface: &'a str,
}

/// Checks a `completion` definition (less its `type`) and fills in OpenSearch's defaults, so
/// that `GET _mapping` shows what OpenSearch shows.
pub fn normalise(path: &str, given: &Map<String, Value>) -> Result<Map<String, Value>> {
    let analyzer = |key: &str| -> Result<Option<String>> {
        match given.get(key) {
            None => Ok(None),
            Some(Value::String(name)) if crate::analysis::ANALYZERS.contains(&name.as_str()) => {
                Ok(Some(name.clone()))
            }
            Some(other) => Err(Error::illegal_argument(format!(
                "analyzer [{}] has not been configured in mappings",
                crate::mapping::plain(other)
            ))),
        }
    };
    let flag = |key: &str| -> Result<bool> {
        match given.get(key) {
            None => Ok(true),
            Some(Value::Bool(b)) => Ok(*b),
            Some(Value::String(s)) if s == "true" || s == "false" => Ok(s == "true"),
            Some(other) => Err(Error::mapper_parsing(format!(
                "Failed to parse value [{}] as only [true] or [false] are allowed.",
                crate::mapping::plain(other)
            ))),
        }
    };
    let mut out = Map::new();
    let index_analyzer = analyzer("analyzer")?.unwrap_or_else(|| DEFAULT_ANALYZER.into());
    out.insert("analyzer".into(), Value::String(index_analyzer));
    if let Some(search) = analyzer("search_analyzer")? {
        out.insert("search_analyzer".into(), Value::String(search));
    }
    out.insert(
        "preserve_separators".into(),
        Value::Bool(flag("preserve_separators")?),
    );
    out.insert(
        "preserve_position_increments".into(),
        Value::Bool(flag("preserve_position_increments")?),
    );
    let max_input_length = match given.get("max_input_length") {
        None => DEFAULT_MAX_INPUT_LENGTH as i64,
        Some(value) => integer(value).ok_or_else(|| {
            Error::mapper_parsing(format!(
                "failed to parse [max_input_length] on field [{path}]: {}",
                crate::mapping::plain(value)
            ))
        })?,
    };
    if max_input_length <= 0 {
        return Err(Error::illegal_argument(format!(
            "[max_input_length] must be > 0 but was [{max_input_length}]"
        )));
    }
    out.insert("max_input_length".into(), Value::from(max_input_length));
    if let Some(contexts) = given.get("contexts") {
        let items: Vec<&Value> = match contexts {
            Value::Array(items) => items.iter().collect(),
            other => vec![other],
        };
        let mut rendered = Vec::new();
        for item in items {
            rendered.push(normalise_context(item)?);
        }
        if !rendered.is_empty() {
            out.insert("contexts".into(), Value::Array(rendered));
        }
    }
    for key in ["meta", "copy_to", "fields"] {
        if let Some(value) = given.get(key) {
            out.insert(key.into(), value.clone());
        }
    }
    Ok(out)
}

fn normalise_context(item: &Value) -> Result<Value> {
    let Value::Object(map) = item else {
        return Err(Error::parsing(format!(
            "expected a context mapping object, got a {}",
            token(item)
        )));
    };
    if let Some(key) = map
        .keys()
        .find(|k| !["name", "type", "path", "precision"].contains(&k.as_str()))
    {
        return Err(Error::mapper_parsing(format!(
            "unknown parameter [{key}] in context mapping"
        )));
    }
    // OpenSearch wraps these parse errors as mapping errors, and shows the parse error as
    // the root cause
    let missing = |key: &str| {
        let reason = format!("missing [{key}] in context mapping");
        Error::mapper_parsing(format!("Failed to parse mapping [_doc]: {reason}"))
            .caused_by(Error::new("parse_exception", 400, reason))
    };
    let name = match map.get("name") {
        Some(Value::String(name)) => name.clone(),
        _ => return Err(missing("name")),
    };
    let kind = match map.get("type") {
        Some(Value::String(kind)) => kind.to_ascii_lowercase(),
        _ => return Err(missing("type")),
    };
    let mut out = Map::new();
    out.insert("name".into(), Value::String(name));
    match kind.as_str() {
        "category" => {
            if map.contains_key("precision") {
                return Err(Error::mapper_parsing(
                    "unknown parameter [precision] in context mapping",
                ));
            }
            out.insert("type".into(), Value::String("CATEGORY".into()));
        }
        "geo" => {
            out.insert("type".into(), Value::String("GEO".into()));
            let precision = match map.get("precision") {
                None => DEFAULT_GEO_PRECISION,
                Some(value) => geo_precision(value)?,
            };
            out.insert("precision".into(), Value::from(precision));
        }
        _ => {
            return Err(Error::illegal_argument(format!(
                "No context type for [{}]",
                map.get("type")
                    .map(crate::mapping::plain)
                    .unwrap_or_default()
            )))
        }
    }
    match map.get("path") {
        None => {}
        Some(Value::String(path)) => {
            out.insert("path".into(), Value::String(path.clone()));
        }
        Some(other) => {
            return Err(Error::parsing(format!(
                "[path] in a context mapping must be a string, got a {}",
                token(other)
            )))
        }
    }
    Ok(Value::Object(out))
}

/// A geohash precision: a number of characters (1..=12) or a distance the cells must be
/// smaller than.
pub fn geo_precision(value: &Value) -> Result<i64> {
    let levels = match value {
        Value::Number(_) => integer(value).ok_or_else(|| {
            Error::illegal_argument(format!("invalid geohash precision [{value}]"))
        })?,
        Value::String(text) => match text.parse::<i64>() {
            Ok(n) => n,
            Err(_) => geohash_levels_for(parse_distance(value)?),
        },
        other => {
            return Err(Error::illegal_argument(format!(
                "precision must be a number or a distance, got a {}",
                token(other)
            )))
        }
    };
    if !(1..=12).contains(&levels) {
        return Err(Error::illegal_argument(format!(
            "Invalid geohash aggregation precision of {levels}. Must be between 1 and 12."
        )));
    }
    Ok(levels)
}

fn integer(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

impl CompletionSpec {
    /// The spec of a mapping already checked by [`normalise`].
    pub fn from_params(params: &Map<String, Value>) -> CompletionSpec {
        let text = |key: &str| params.get(key).and_then(Value::as_str).map(String::from);
        let analyzer = text("analyzer").unwrap_or_else(|| DEFAULT_ANALYZER.into());
        let contexts = params
            .get("contexts")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .map(|item| ContextMapping {
                        name: item["name"].as_str().unwrap_or_default().to_string(),
                        kind: match item["type"].as_str() {
                            Some("GEO") => ContextKind::Geo {
                                precision: item["precision"]
                                    .as_u64()
                                    .unwrap_or(DEFAULT_GEO_PRECISION as u64)
                                    as usize,
                            },
                            _ => ContextKind::Category,
                        },
                        path: item["path"].as_str().map(String::from),
                    })
                    .collect()
            })
            .unwrap_or_default();
        CompletionSpec {
            search_analyzer: text("search_analyzer").unwrap_or_else(|| analyzer.clone()),
            analyzer,
            preserve_separators: params
                .get("preserve_separators")
                .and_then(Value::as_bool)
                .unwrap_or(true),
            max_input_length: params
                .get("max_input_length")
                .and_then(Value::as_u64)
                .unwrap_or(DEFAULT_MAX_INPUT_LENGTH) as usize,
            contexts,
        }
    }

    /// The context mapping called `name`, with its index (the byte its keys start with).
    pub fn context(&self, name: &str) -> Option<(u8, &ContextMapping)> {
        self.contexts
            .iter()
            .enumerate()
            .find(|(_, c)| c.name == name)
            .map(|(i, c)| (i as u8, c))
    }

    /// The analyzed form of `text` under `analyzer`: its tokens, joined by [`SEPARATOR`]
    /// when separators are preserved.
    pub fn form(&self, analyzer: &str, text: &str) -> Vec<u8> {
        let mut form = Vec::with_capacity(text.len());
        for (i, token) in crate::analysis::tokens(analyzer, text).iter().enumerate() {
            if i > 0 && self.preserve_separators {
                form.push(SEPARATOR);
            }
            form.extend_from_slice(token.text.as_bytes());
        }
        form
    }

    /// Reads a document's value of the field: a string, an object with `input`, `weight` and
    /// `contexts`, or an array of those. `root` is the whole document, which the contexts
    /// with a `path` read their values from.
    pub fn suggestions(&self, path: &str, value: &Value, root: &Value) -> Result<Vec<Suggestion>> {
        let mut out = Vec::new();
        match value {
            Value::Array(items) => {
                for item in items {
                    self.one_value(path, item, root, &mut out)?;
                }
            }
            other => self.one_value(path, other, root, &mut out)?,
        }
        Ok(out)
    }

    fn one_value(
        &self,
        path: &str,
        value: &Value,
        root: &Value,
        out: &mut Vec<Suggestion>,
    ) -> Result<()> {
        let (inputs, weight, given_contexts) = match value {
            Value::Null => return Ok(()),
            Value::String(input) => (vec![input.clone()], 1, None),
            Value::Object(map) => {
                let mut inputs = Vec::new();
                let mut weight = 1;
                let mut contexts = None;
                for (key, item) in map {
                    match key.as_str() {
                        "input" => inputs = input_list(path, item)?,
                        "weight" => weight = parse_weight(item)?,
                        "contexts" => contexts = Some(item),
                        other => {
                            return Err(Error::illegal_argument(format!(
                                "unknown field name [{other}], must be one of [input, weight, contexts]"
                            )))
                        }
                    }
                }
                (inputs, weight, contexts)
            }
            other => {
                return Err(Error::parsing(format!(
                    "failed to parse [{path}]: expected text or object, but got {}",
                    token(other)
                )))
            }
        };
        let contexts = self.context_values(path, given_contexts, root)?;
        for input in inputs {
            if input.is_empty() {
                continue;
            }
            if let Some(c) = input.chars().find(|c| RESERVED.contains(c)) {
                return Err(Error::illegal_argument(format!(
                    "Illegal input [{}] reserved character [0x{:x}] in [{path}]",
                    input.escape_debug(),
                    c as u32
                )));
            }
            out.push(Suggestion {
                input: truncate_chars(&input, self.max_input_length),
                weight,
                contexts: contexts.clone(),
            });
        }
        Ok(())
    }

    /// The context values of one suggestion: its own `contexts`, then the values of the
    /// contexts' `path` fields; a field with contexts needs at least one.
    fn context_values(
        &self,
        path: &str,
        given: Option<&Value>,
        root: &Value,
    ) -> Result<Vec<(u8, String)>> {
        if self.contexts.is_empty() {
            return Ok(Vec::new());
        }
        let mut out: Vec<(u8, String)> = Vec::new();
        if let Some(given) = given {
            let Value::Object(map) = given else {
                return Err(Error::parsing(format!(
                    "[contexts] of [{path}] must be an object, got a {}",
                    token(given)
                )));
            };
            for (name, value) in map {
                let (index, mapping) = self.context(name).ok_or_else(|| {
                    Error::illegal_argument(format!(
                        "context [{name}] is not defined in the mapping of [{path}]"
                    ))
                })?;
                mapping.values(value, index, &mut out)?;
            }
        }
        for (index, mapping) in self.contexts.iter().enumerate() {
            if let Some(field) = &mapping.path {
                if let Some(value) = lookup(root, field) {
                    mapping.values(value, index as u8, &mut out)?;
                }
            }
        }
        if out.is_empty() {
            return Err(Error::illegal_argument(format!(
                "Contexts are mandatory in context enabled completion field [{path}]"
            )));
        }
        out.sort();
        out.dedup();
        Ok(out)
    }
}

impl ContextMapping {
    /// Adds the context values `value` holds: categories (strings, numbers, booleans) or
    /// points kept as geohashes.
    fn values(&self, value: &Value, index: u8, out: &mut Vec<(u8, String)>) -> Result<()> {
        match self.kind {
            ContextKind::Category => {
                let items: Vec<&Value> = match value {
                    Value::Array(items) => items.iter().collect(),
                    other => vec![other],
                };
                for item in items {
                    let category = match item {
                        Value::String(s) => s.clone(),
                        Value::Number(n) => n.to_string(),
                        Value::Bool(b) => b.to_string(),
                        Value::Null => continue,
                        other => {
                            return Err(Error::parsing(format!(
                                "context array must have string, number or boolean values, but was [{}]",
                                token(other)
                            )))
                        }
                    };
                    if let Some(c) = category.chars().find(|c| RESERVED.contains(c)) {
                        return Err(Error::illegal_argument(format!(
                            "Illegal context value [{}] reserved character [0x{:x}]",
                            category.escape_debug(),
                            c as u32
                        )));
                    }
                    out.push((index, category));
                }
            }
            ContextKind::Geo { precision } => {
                let points: Vec<&Value> = match value {
                    Value::Array(items) if items.iter().all(Value::is_number) => vec![value],
                    Value::Array(items) => items.iter().collect(),
                    other => vec![other],
                };
                for point in points {
                    if point.is_null() {
                        continue;
                    }
                    let point: GeoPoint = parse_point(point)?;
                    out.push((index, encode_geohash(point, precision)));
                }
            }
        }
        Ok(())
    }
}

/// `input`: a string or an array of strings.
fn input_list(path: &str, value: &Value) -> Result<Vec<String>> {
    let one = |item: &Value| match item {
        Value::String(s) => Ok(s.clone()),
        other => Err(Error::parsing(format!(
            "failed to parse [{path}]: input must be a string or an array of strings, but got {}",
            token(other)
        ))),
    };
    match value {
        Value::Array(items) => items.iter().map(one).collect(),
        other => Ok(vec![one(other)?]),
    }
}

/// `weight`: an integer in 0..=i32::MAX (a numeric string too), as OpenSearch says.
fn parse_weight(value: &Value) -> Result<u32> {
    let shown = crate::mapping::plain(value);
    let number = match value {
        Value::Number(n) => n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 1e18)
                .map(|f| f as i64)
        }),
        Value::String(s) => s.trim().parse::<i64>().ok(),
        _ => None,
    };
    match number {
        None if value.is_string() || value.is_number() => Err(Error::illegal_argument(format!(
            "weight must be an integer, but was [{shown}]"
        ))),
        None => Err(Error::illegal_argument(format!(
            "weight must be a number or string, but was [{}]",
            token(value)
        ))),
        Some(w) if !(0..=i32::MAX as i64).contains(&w) => Err(Error::illegal_argument(format!(
            "weight must be in the interval [0..2147483647], but was [{shown}]"
        ))),
        Some(w) => Ok(w as u32),
    }
}

/// The first `limit` characters of `text` (Lucene counts UTF-16 units; for text without
/// surrogate pairs that is the same).
fn truncate_chars(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((at, _)) => text[..at].to_string(),
        None => text.to_string(),
    }
}

/// The value at a dotted path of a document (objects only; an array of objects is not
/// walked, as OpenSearch's context paths name a field of the document itself).
fn lookup<'v>(root: &'v Value, path: &str) -> Option<&'v Value> {
    if let Some(value) = root.get(path) {
        return Some(value);
    }
    let (head, rest) = path.split_once('.')?;
    lookup(root.get(head)?, rest)
}

/// The key of one input under one context value (or none).
pub fn encode_key(context: Option<(u8, &str)>, form: &[u8], weight: u32, surface: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(form.len() + surface.len() + 16);
    if let Some((index, value)) = context {
        key.push(index);
        key.extend_from_slice(value.as_bytes());
        key.push(CONTEXT_END);
    }
    key.extend_from_slice(form);
    key.push(FORM_END);
    key.extend_from_slice(&weight.to_be_bytes());
    key.extend_from_slice(surface.as_bytes());
    key
}

/// Reads a key; `None` for bytes no [`encode_key`] wrote.
pub fn decode_key(bytes: &[u8], has_contexts: bool) -> Option<Key<'_>> {
    let (context, rest) = match has_contexts {
        true => {
            let end = bytes.iter().position(|&b| b == CONTEXT_END)?;
            let (index, value) = bytes[..end].split_first()?;
            let value = std::str::from_utf8(value).ok()?;
            (Some((*index, value)), &bytes[end + 1..])
        }
        false => (None, bytes),
    };
    let end = rest.iter().position(|&b| b == FORM_END)?;
    let form = &rest[..end];
    let weight = u32::from_be_bytes(rest.get(end + 1..end + 5)?.try_into().ok()?);
    let surface = std::str::from_utf8(&rest[end + 5..]).ok()?;
    Some(Key {
        context,
        form,
        weight,
        surface,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(mapping: Value) -> CompletionSpec {
        let Value::Object(map) = mapping else {
            unreachable!()
        };
        CompletionSpec::from_params(&normalise("s", &map).unwrap())
    }

    #[test]
    fn the_mapping_is_rendered_with_opensearch_defaults() {
        let Value::Object(given) = json!({"contexts": [
            {"name": "c", "type": "category", "path": "cat"},
            {"name": "g", "type": "geo"}
        ]}) else {
            unreachable!()
        };
        assert_eq!(
            Value::Object(normalise("s", &given).unwrap()),
            json!({
                "analyzer": "simple",
                "preserve_separators": true,
                "preserve_position_increments": true,
                "max_input_length": 50,
                "contexts": [
                    {"name": "c", "type": "CATEGORY", "path": "cat"},
                    {"name": "g", "type": "GEO", "precision": 6}
                ]
            })
        );
        let refused = |body: Value| {
            let Value::Object(map) = body else {
                unreachable!()
            };
            normalise("s", &map).unwrap_err().reason().to_string()
        };
        assert_eq!(
            refused(json!({"analyzer": "nope"})),
            "analyzer [nope] has not been configured in mappings"
        );
        assert_eq!(
            refused(json!({"max_input_length": 0})),
            "[max_input_length] must be > 0 but was [0]"
        );
        assert_eq!(
            refused(json!({"contexts": [{"name": "c", "type": "bogus"}]})),
            "No context type for [bogus]"
        );
        assert_eq!(
            refused(json!({"contexts": [{"type": "category"}]})),
            "Failed to parse mapping [_doc]: missing [name] in context mapping"
        );
    }

    #[test]
    fn values_take_every_form_with_opensearch_messages() {
        let s = spec(json!({}));
        let root = json!({});
        let got = s
            .suggestions(
                "s",
                &json!([
                    "Nirvana",
                    {"input": ["Nevermind", ""], "weight": "12"},
                    {"weight": 3}
                ]),
                &root,
            )
            .unwrap();
        let inputs: Vec<_> = got.iter().map(|g| (g.input.as_str(), g.weight)).collect();
        assert_eq!(inputs, [("Nirvana", 1), ("Nevermind", 12)]);
        let reason = |value: Value| {
            s.suggestions("s", &value, &root)
                .unwrap_err()
                .reason()
                .to_string()
        };
        assert_eq!(
            reason(json!({"input": "x", "weight": 1.5})),
            "weight must be an integer, but was [1.5]"
        );
        assert_eq!(
            reason(json!({"input": "x", "weight": 2147483648u64})),
            "weight must be in the interval [0..2147483647], but was [2147483648]"
        );
        assert_eq!(
            reason(json!({"input": "x", "bogus": 1})),
            "unknown field name [bogus], must be one of [input, weight, contexts]"
        );
        assert_eq!(
            reason(json!(5)),
            "failed to parse [s]: expected text or object, but got VALUE_NUMBER"
        );
    }

    #[test]
    fn long_inputs_are_cut_to_max_input_length() {
        let s = spec(json!({"max_input_length": 5}));
        let got = s.suggestions("s", &json!("Hell yeah"), &json!({})).unwrap();
        assert_eq!(got[0].input, "Hell ");
    }

    #[test]
    fn contexts_come_from_the_value_and_the_path_and_are_mandatory() {
        let s = spec(json!({"contexts": [
            {"name": "c", "type": "category", "path": "cat"},
            {"name": "g", "type": "geo", "precision": 4}
        ]}));
        let root = json!({"cat": ["x", "y"]});
        let got = s
            .suggestions(
                "s",
                &json!({"input": "a", "contexts": {"c": "z", "g": {"lat": 43.662, "lon": -79.380}}}),
                &root,
            )
            .unwrap();
        assert_eq!(
            got[0].contexts,
            [
                (0, "x".to_string()),
                (0, "y".to_string()),
                (0, "z".to_string()),
                (1, "dpz8".to_string())
            ]
        );
        let e = s.suggestions("s", &json!("a"), &json!({})).unwrap_err();
        assert_eq!(
            e.reason(),
            "Contexts are mandatory in context enabled completion field [s]"
        );
    }

    #[test]
    fn keys_round_trip_and_sort_by_form_first() {
        let s = spec(json!({}));
        let form = s.form("simple", "Nirvana Live!");
        assert_eq!(form, b"nirvana\x1flive");
        let key = encode_key(Some((1, "cafe")), &form, 34, "Nirvana Live!");
        assert_eq!(
            decode_key(&key, true),
            Some(Key {
                context: Some((1, "cafe")),
                form: &form,
                weight: 34,
                surface: "Nirvana Live!"
            })
        );
        // a shorter form sorts before its extensions, so a prefix is one range of keys
        assert!(encode_key(None, b"nir", 9, "Nir") < encode_key(None, b"nirvana", 1, "N"));
        let joined = spec(json!({"preserve_separators": false}));
        assert_eq!(joined.form("simple", "Nirvana Live"), b"nirvanalive");
    }
}
