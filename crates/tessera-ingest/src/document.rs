//! The document a pipeline works on, as OpenSearch's `IngestDocument`: one map holding the
//! `_source` fields and the metadata fields `_index`, `_id` and `_routing` (a processor
//! changes where a document goes by setting them), and the `_ingest` map (`timestamp`, the
//! `on_failure_*` fields, `_value` inside `foreach`).
//!
//! Fields are addressed by dotted paths (`a.b.0.c`: a number indexes a list). A path starting
//! with `_ingest.` reads the ingest map, one starting with `_source.` the source alone. Errors
//! carry OpenSearch's wording, Java type names included, since clients match on them.

use serde_json::{Map, Number, Value};
use tessera_common::{Error, Result};

/// The metadata fields a pipeline may read and change.
pub const METADATA: [&str; 3] = ["_index", "_id", "_routing"];

/// See the module documentation.
#[derive(Clone, Debug, PartialEq)]
pub struct IngestDocument {
    /// The source fields and the metadata fields of [`METADATA`].
    pub ctx: Map<String, Value>,
    /// `_ingest`.
    pub ingest: Map<String, Value>,
}

/// OpenSearch's error for a value read as a string that is not one.
pub fn not_a_string(field: &str, value: &Value) -> Error {
    Error::illegal_argument(format!(
        "field [{field}] of type [{}] cannot be cast to [java.lang.String]",
        java_type(value)
    ))
}

/// The Java class OpenSearch names for a JSON value in its errors.
pub fn java_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "java.lang.Boolean",
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                if i32::try_from(i).is_ok() {
                    "java.lang.Integer"
                } else {
                    "java.lang.Long"
                }
            } else if n.is_u64() {
                "java.math.BigInteger"
            } else {
                "java.lang.Double"
            }
        }
        Value::String(_) => "java.lang.String",
        Value::Array(_) => "java.util.ArrayList",
        Value::Object(_) => "java.util.HashMap",
    }
}

/// A value as Java's `toString` prints it (`{a=1, b=[1, 2]}`): what a template renders for
/// objects and lists, and what error messages quote.
pub fn java_string(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::String(s) => s.clone(),
        Value::Number(n) => number_string(n),
        Value::Bool(b) => b.to_string(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(java_string).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) => {
            let items: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{k}={}", java_string(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
    }
}

/// A number as Java prints it: doubles always with a fraction (`1.0`).
pub fn number_string(n: &Number) -> String {
    match n.as_f64() {
        Some(f) if !n.is_i64() && !n.is_u64() => {
            if f.fract() == 0.0 && f.abs() < 1e7 {
                format!("{f:.1}")
            } else {
                f.to_string()
            }
        }
        _ => n.to_string(),
    }
}

/// Where a path points: the map it starts in, and its segments.
struct Resolved<'p> {
    ingest: bool,
    segments: Vec<&'p str>,
}

fn resolve(path: &str) -> Result<Resolved<'_>> {
    if path.is_empty() {
        return Err(Error::illegal_argument("path cannot be null nor empty"));
    }
    let (ingest, rest) = if let Some(rest) = path.strip_prefix("_ingest.") {
        (true, rest)
    } else if let Some(rest) = path.strip_prefix("_source.") {
        (false, rest)
    } else {
        (false, path)
    };
    if rest.is_empty() {
        return Err(Error::illegal_argument(format!(
            "path [{path}] is not valid"
        )));
    }
    Ok(Resolved {
        ingest,
        segments: rest.split('.').collect(),
    })
}

fn not_present(segment: &str, path: &str) -> Error {
    Error::illegal_argument(format!(
        "field [{segment}] not present as part of path [{path}]"
    ))
}

fn list_index(segment: &str, len: usize, path: &str) -> Result<usize> {
    let index: usize = segment.parse().map_err(|_| {
        Error::illegal_argument(format!(
            "[{segment}] is not an integer, cannot be used as an index as part of path [{path}]"
        ))
    })?;
    if index >= len {
        return Err(Error::illegal_argument(format!(
            "[{index}] is out of bounds for array with length [{len}] as part of path [{path}]"
        )));
    }
    Ok(index)
}

fn child<'v>(value: &'v Value, segment: &str, path: &str) -> Result<&'v Value> {
    match value {
        Value::Object(map) => map.get(segment).ok_or_else(|| not_present(segment, path)),
        Value::Array(items) => Ok(&items[list_index(segment, items.len(), path)?]),
        other => Err(Error::illegal_argument(format!(
            "cannot resolve [{segment}] from object of type [{}] as part of path [{path}]",
            java_type(other)
        ))),
    }
}

fn child_mut<'v>(value: &'v mut Value, segment: &str, path: &str) -> Result<&'v mut Value> {
    match value {
        Value::Object(map) => map
            .get_mut(segment)
            .ok_or_else(|| not_present(segment, path)),
        Value::Array(items) => {
            let index = list_index(segment, items.len(), path)?;
            Ok(&mut items[index])
        }
        other => Err(Error::illegal_argument(format!(
            "cannot resolve [{segment}] from object of type [{}] as part of path [{path}]",
            java_type(other)
        ))),
    }
}

impl IngestDocument {
    /// A document as a write brings it: its source (an object) and metadata.
    pub fn new(
        source: Map<String, Value>,
        index: &str,
        id: Option<&str>,
        routing: Option<&str>,
        timestamp: String,
    ) -> IngestDocument {
        let mut ctx = source;
        ctx.insert("_index".into(), Value::String(index.to_string()));
        if let Some(id) = id {
            ctx.insert("_id".into(), Value::String(id.to_string()));
        }
        if let Some(routing) = routing {
            ctx.insert("_routing".into(), Value::String(routing.to_string()));
        }
        let mut ingest = Map::new();
        ingest.insert("timestamp".into(), Value::String(timestamp));
        IngestDocument { ctx, ingest }
    }

    /// The metadata field `name` as a string (`_index`, `_id`, `_routing`), if set.
    pub fn metadata(&self, name: &str) -> Option<String> {
        match self.ctx.get(name)? {
            Value::Null => None,
            value => Some(java_string(value)),
        }
    }

    /// The source: everything but the metadata fields.
    pub fn source(&self) -> Map<String, Value> {
        self.ctx
            .iter()
            .filter(|(k, _)| !METADATA.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Takes the source out, leaving the metadata.
    pub fn into_parts(self) -> (Map<String, Value>, Map<String, Value>) {
        let mut source = Map::new();
        let mut metadata = Map::new();
        for (k, v) in self.ctx {
            if METADATA.contains(&k.as_str()) {
                metadata.insert(k, v);
            } else {
                source.insert(k, v);
            }
        }
        (source, metadata)
    }

    fn root(&self, ingest: bool) -> &Map<String, Value> {
        if ingest {
            &self.ingest
        } else {
            &self.ctx
        }
    }

    fn root_mut(&mut self, ingest: bool) -> &mut Map<String, Value> {
        if ingest {
            &mut self.ingest
        } else {
            &mut self.ctx
        }
    }

    /// The string at `path` for a processor that reads one (grok, dissect), as OpenSearch's
    /// `getFieldValue(field, String.class, ignoreMissing)` and the null check after it: `None`
    /// when the field is missing or null and `ignore_missing`; otherwise an error for a missing
    /// or null field and for a value of another type.
    pub fn string_field(&self, path: &str, ignore_missing: bool) -> Result<Option<String>> {
        match self.non_null_field(path, ignore_missing)? {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(not_a_string(path, other)),
        }
    }

    /// The value at `path` for a processor that cannot work on null: `None` to skip (missing or
    /// null with `ignore_missing`); a null without it is OpenSearch's "is null" error.
    pub fn non_null_field(&self, path: &str, ignore_missing: bool) -> Result<Option<&Value>> {
        match self.get(path) {
            Err(_) | Ok(Value::Null) if ignore_missing => Ok(None),
            Err(e) => Err(e),
            Ok(Value::Null) => Err(Error::illegal_argument(format!(
                "field [{path}] is null, cannot process it."
            ))),
            Ok(value) => Ok(Some(value)),
        }
    }

    /// The value at `path`; an error names the missing part.
    pub fn get(&self, path: &str) -> Result<&Value> {
        let resolved = resolve(path)?;
        let (first, rest) = resolved.segments.split_first().expect("one segment");
        let mut value = self
            .root(resolved.ingest)
            .get(*first)
            .ok_or_else(|| not_present(first, path))?;
        for segment in rest {
            value = child(value, segment, path)?;
        }
        Ok(value)
    }

    /// Whether `path` holds a value (null included).
    pub fn has(&self, path: &str) -> bool {
        self.get(path).is_ok()
    }

    /// The value at `path` for writing.
    pub fn get_mut(&mut self, path: &str) -> Result<&mut Value> {
        let resolved = resolve(path)?;
        let (first, rest) = resolved.segments.split_first().expect("one segment");
        let mut value = self
            .root_mut(resolved.ingest)
            .get_mut(*first)
            .ok_or_else(|| not_present(first, path))?;
        for segment in rest {
            value = child_mut(value, segment, path)?;
        }
        Ok(value)
    }

    /// The container that holds the last segment of `path` (of two segments or more),
    /// objects created on the way.
    fn parent_mut<'a>(&'a mut self, path: &'a str) -> Result<(&'a mut Value, &'a str)> {
        let resolved = resolve(path)?;
        let (last, parents) = resolved.segments.split_last().expect("one segment");
        let (first, rest) = parents
            .split_first()
            .ok_or_else(|| Error::illegal_state("a path of one segment has no parent"))?;
        let mut current = self
            .root_mut(resolved.ingest)
            .entry(first.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        for segment in rest {
            current = match current {
                Value::Object(map) => map
                    .entry(segment.to_string())
                    .or_insert_with(|| Value::Object(Map::new())),
                Value::Array(items) => {
                    let index = list_index(segment, items.len(), path)?;
                    &mut items[index]
                }
                other => {
                    return Err(Error::illegal_argument(format!(
                        "cannot set [{segment}] with parent object of type [{}] as part of path [{path}]",
                        java_type(other)
                    )))
                }
            };
        }
        Ok((current, last))
    }

    /// Sets `path` to `value`, creating missing objects on the way; a list element is
    /// replaced, or appended when the index is the list's length.
    pub fn set(&mut self, path: &str, value: Value) -> Result<()> {
        let resolved = resolve(path)?;
        if resolved.segments.len() == 1 {
            let key = resolved.segments[0].to_string();
            self.root_mut(resolved.ingest).insert(key, value);
            return Ok(());
        }
        let (parent, last) = self.parent_mut(path)?;
        match parent {
            Value::Object(map) => {
                map.insert(last.to_string(), value);
                Ok(())
            }
            Value::Array(items) => {
                let index = list_index(last, items.len(), path)?;
                items[index] = value;
                Ok(())
            }
            other => Err(Error::illegal_argument(format!(
                "cannot set [{last}] with parent object of type [{}] as part of path [{path}]",
                java_type(other)
            ))),
        }
    }

    /// Removes `path`; an error when it is missing.
    pub fn remove(&mut self, path: &str) -> Result<Value> {
        let resolved = resolve(path)?;
        let (last, parents) = resolved.segments.split_last().expect("one segment");
        if parents.is_empty() {
            return self
                .root_mut(resolved.ingest)
                .shift_remove(*last)
                .ok_or_else(|| not_present(last, path));
        }
        let parent_path = {
            let mut p = String::new();
            if resolved.ingest {
                p.push_str("_ingest.");
            }
            p.push_str(&parents.join("."));
            p
        };
        let parent = self.get_mut(&parent_path).map_err(|e| {
            // the error names the whole path, as OpenSearch's does
            Error::illegal_argument(e.reason().replace(&parent_path, path))
        })?;
        match parent {
            Value::Object(map) => map
                .shift_remove(*last)
                .ok_or_else(|| not_present(last, path)),
            Value::Array(items) => {
                let index = list_index(last, items.len(), path)?;
                Ok(items.remove(index))
            }
            other => Err(Error::illegal_argument(format!(
                "cannot remove [{last}] from object of type [{}] as part of path [{path}]",
                java_type(other)
            ))),
        }
    }

    /// `append`: adds `values` to the list at `path` (a single value becomes a list first; a
    /// missing field becomes the list of the values).
    pub fn append(&mut self, path: &str, values: Vec<Value>, allow_duplicates: bool) -> Result<()> {
        if !self.has(path) {
            return self.set(path, Value::Array(values));
        }
        let current = self.get_mut(path)?;
        let list = match current {
            Value::Array(items) => items,
            other => {
                let single = std::mem::take(other);
                *other = Value::Array(vec![single]);
                match other {
                    Value::Array(items) => items,
                    _ => unreachable!("just made a list"),
                }
            }
        };
        for value in values {
            if allow_duplicates || !list.contains(&value) {
                list.push(value);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(source: Value) -> IngestDocument {
        let Value::Object(map) = source else { panic!() };
        IngestDocument::new(map, "i", Some("1"), None, "now".into())
    }

    #[test]
    fn paths_read_nested_objects_lists_and_the_ingest_map() {
        let d = doc(json!({"a": {"b": [1, {"c": "x"}]}}));
        assert_eq!(d.get("a.b.1.c").unwrap(), &json!("x"));
        assert_eq!(d.get("_source.a.b.0").unwrap(), &json!(1));
        assert_eq!(d.get("_ingest.timestamp").unwrap(), &json!("now"));
        assert_eq!(d.get("_index").unwrap(), &json!("i"));
        assert_eq!(
            d.get("a.x").unwrap_err().reason(),
            "field [x] not present as part of path [a.x]"
        );
        assert_eq!(
            d.get("a.b.5").unwrap_err().reason(),
            "[5] is out of bounds for array with length [2] as part of path [a.b.5]"
        );
        assert_eq!(
            d.get("a.b.1.c.d").unwrap_err().reason(),
            "cannot resolve [d] from object of type [java.lang.String] as part of path [a.b.1.c.d]"
        );
    }

    #[test]
    fn set_creates_objects_and_remove_takes_fields_out() {
        let mut d = doc(json!({"a": 1}));
        d.set("x.y.z", json!(2)).unwrap();
        d.set("_ingest.k", json!("v")).unwrap();
        assert_eq!(
            d.source(),
            json!({"a": 1, "x": {"y": {"z": 2}}})
                .as_object()
                .cloned()
                .unwrap()
        );
        assert_eq!(
            d.set("a.b", json!(1)).unwrap_err().reason(),
            "cannot set [b] with parent object of type [java.lang.Integer] as part of path [a.b]"
        );
        assert_eq!(d.remove("x.y.z").unwrap(), json!(2));
        assert_eq!(
            d.remove("x.y.z").unwrap_err().reason(),
            "field [z] not present as part of path [x.y.z]"
        );
        assert_eq!(
            d.remove("nope").unwrap_err().reason(),
            "field [nope] not present as part of path [nope]"
        );
        d.set("_id", json!("2")).unwrap();
        assert_eq!(d.metadata("_id").as_deref(), Some("2"));
    }

    #[test]
    fn append_makes_lists() {
        let mut d = doc(json!({"a": 1}));
        d.append("a", vec![json!(2), json!(1)], false).unwrap();
        assert_eq!(d.get("a").unwrap(), &json!([1, 2]));
        d.append("b", vec![json!("x")], true).unwrap();
        assert_eq!(d.get("b").unwrap(), &json!(["x"]));
    }

    #[test]
    fn java_renders_values_as_opensearch_quotes_them() {
        assert_eq!(
            java_string(&json!({"x": 1, "y": [1, 2]})),
            "{x=1, y=[1, 2]}"
        );
        assert_eq!(java_string(&json!(1.5)), "1.5");
        assert_eq!(java_string(&json!(2.0)), "2.0");
        assert_eq!(java_type(&json!(1)), "java.lang.Integer");
        assert_eq!(java_type(&json!(10_000_000_000i64)), "java.lang.Long");
    }
}
