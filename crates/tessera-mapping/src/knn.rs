//! The `knn_vector` field type: its mapping parameters, validated and rendered as OpenSearch's
//! k-NN plugin does, and the vector values of documents and queries with the plugin's errors.
//!
//! Every `engine` (`lucene`, `faiss`, `nmslib`) is accepted and served by Tessera's own search;
//! the engine is kept so that `GET _mapping` shows what was given, and the checks that depend
//! on it (the lucene engine refuses `l1` and `linf`) match OpenSearch's.

use serde_json::{Map, Value};
use tessera_common::{Error, Result};
pub use tessera_knn::Space;

use crate::mapping::plain;

/// The largest `dimension` OpenSearch accepts.
pub const MAX_DIMENSION: u64 = 16_000;
const ENGINES: &[&str] = &["lucene", "faiss", "nmslib"];
/// OpenSearch 2.19's engine when `method` names none.
const DEFAULT_ENGINE: &str = "faiss";
/// OpenSearch's HNSW defaults when `method.parameters` leaves them out.
pub const DEFAULT_M: u32 = 16;
pub const DEFAULT_EF_CONSTRUCTION: u32 = 100;

/// `data_type`: how values are checked (a byte vector holds integers in -128..=127).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataType {
    Float,
    Byte,
}

/// A `knn_vector` field's definition.
#[derive(Clone, Debug, PartialEq)]
pub struct KnnSpec {
    pub dimension: usize,
    pub data_type: DataType,
    pub space: Space,
    pub engine: String,
    pub m: Option<u32>,
    pub ef_construction: Option<u32>,
}

impl KnnSpec {
    /// The spec of a mapping already validated by [`normalise`].
    pub fn from_params(params: &Map<String, Value>) -> KnnSpec {
        let method = params.get("method").and_then(Value::as_object);
        let space = method
            .and_then(|m| m.get("space_type"))
            .or_else(|| params.get("space_type"))
            .and_then(Value::as_str)
            .and_then(Space::parse)
            .unwrap_or(Space::L2);
        let parameter = |key: &str| {
            method
                .and_then(|m| m.get("parameters"))
                .and_then(|p| p.get(key))
                .and_then(Value::as_u64)
                .map(|v| v as u32)
        };
        KnnSpec {
            dimension: params.get("dimension").and_then(Value::as_u64).unwrap_or(1) as usize,
            data_type: match params.get("data_type").and_then(Value::as_str) {
                Some("BYTE") => DataType::Byte,
                _ => DataType::Float,
            },
            space,
            engine: method
                .and_then(|m| m.get("engine"))
                .and_then(Value::as_str)
                .unwrap_or(DEFAULT_ENGINE)
                .to_string(),
            m: parameter("m"),
            ef_construction: parameter("ef_construction"),
        }
    }

    /// Checks a vector (of a document or a query) against the field: dimension, finite values,
    /// byte range, and the zero vector under cosine; the message is OpenSearch's.
    pub fn check(&self, vector: &[f32]) -> std::result::Result<(), VectorError> {
        if vector.len() != self.dimension {
            return Err(VectorError::new(format!(
                "Vector dimension mismatch. Expected: {}, Given: {}",
                self.dimension,
                vector.len()
            )));
        }
        for (i, v) in vector.iter().enumerate() {
            if v.is_nan() {
                return Err(VectorError::at(i, "KNN vector values cannot be NaN"));
            }
            if v.is_infinite() {
                return Err(VectorError::at(i, "KNN vector values cannot be infinity"));
            }
            if self.data_type == DataType::Byte {
                if v.fract() != 0.0 {
                    return Err(VectorError::at(i, "[data_type] field was set as [byte] in index mapping. But, KNN vector values are floats instead of byte integers"));
                }
                if !(-128.0..=127.0).contains(v) {
                    return Err(VectorError::at(i, "[data_type] field was set as [byte] in index mapping. But, KNN vector values are not within in the byte range [-128, 127]"));
                }
            }
        }
        if self.space == Space::CosineSimil && vector.iter().all(|v| *v == 0.0) {
            return Err(VectorError::new(
                "zero vector is not supported when space type is [cosinesimil]",
            ));
        }
        Ok(())
    }
}

/// A refused vector: OpenSearch's reason, and the index of the value it refused (the value its
/// error's preview shows) when one value is to blame.
#[derive(Clone, Debug, PartialEq)]
pub struct VectorError {
    pub reason: String,
    pub at: Option<usize>,
}

impl VectorError {
    fn new(reason: impl Into<String>) -> VectorError {
        VectorError {
            reason: reason.into(),
            at: None,
        }
    }

    fn at(i: usize, reason: &str) -> VectorError {
        VectorError {
            reason: reason.to_string(),
            at: Some(i),
        }
    }
}

/// A JSON number or numeric string as `f32` (OpenSearch reads `"1"` and `"NaN"` too); a value
/// too large for `f32` becomes infinite, as Java's parser makes it.
pub fn number(value: &Value) -> Option<f32> {
    match value {
        Value::Number(n) => n.as_f64().map(|f| f as f32),
        Value::String(s) => match s.trim() {
            "NaN" => Some(f32::NAN),
            "Infinity" => Some(f32::INFINITY),
            "-Infinity" => Some(f32::NEG_INFINITY),
            t => t.parse::<f64>().ok().map(|f| f as f32),
        },
        _ => None,
    }
}

fn invalid(reason: impl Into<String>) -> Error {
    Error::mapper_parsing(reason)
}

fn illegal(reason: impl Into<String>) -> Error {
    Error::illegal_argument(reason)
}

/// Validates a `knn_vector` definition's parameters (everything but `type`) and returns them
/// as `GET _mapping` shows them.
pub fn normalise(path: &str, given: &Map<String, Value>) -> Result<Map<String, Value>> {
    let dimension = match given.get("dimension") {
        None | Some(Value::Null) => {
            return Err(illegal(format!(
                "Dimension value missing for vector: {path}"
            )))
        }
        Some(value) => {
            let parsed = match value {
                Value::Number(n) => n.as_i64(),
                Value::String(s) => s.trim().parse::<i64>().ok(),
                _ => None,
            };
            let Some(parsed) = parsed else {
                return Err(illegal(format!(
                    "Unable to parse [dimension] from provided value [{}] for vector [{path}]",
                    plain(value)
                )));
            };
            if parsed <= 0 {
                return Err(illegal(format!(
                    "Dimension value must be greater than 0 for vector: {path}"
                )));
            }
            parsed as u64
        }
    };
    let data_type = match given.get("data_type") {
        None => None,
        Some(value) => match value.as_str().map(str::to_ascii_lowercase).as_deref() {
            Some("float") => Some("FLOAT"),
            Some("byte") => Some("BYTE"),
            Some("binary") => {
                return Err(invalid(format!(
                    "[data_type] [binary] on field [{path}] is not supported by Tessera"
                )))
            }
            _ => {
                return Err(invalid(
                    "Invalid value provided for [data_type] field. Supported values are [binary,byte,float]",
                ))
            }
        },
    };
    let data_type_name = match data_type {
        Some("BYTE") => "byte",
        _ => "float",
    };
    let space_of = |value: &Value| -> Result<Space> {
        let name = value
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| plain(value));
        match Space::parse(&name) {
            Some(space) => Ok(space),
            None if name == "hamming" => Err(invalid(format!(
                "Space type [hamming] is not supported with [{data_type_name}] data type"
            ))),
            None => Err(invalid(format!(
                "Unable to find space: {name} . Valid values are: [l2, cosinesimil, l1, linf, innerproduct, hamming]"
            ))),
        }
    };
    let top_space = given.get("space_type").map(space_of).transpose()?;
    let method = given
        .get("method")
        .map(|m| normalise_method(m, top_space, &space_of))
        .transpose()?;
    let engine = method
        .as_ref()
        .and_then(|m| m.get("engine"))
        .and_then(Value::as_str)
        .unwrap_or(DEFAULT_ENGINE)
        .to_string();
    if dimension > MAX_DIMENSION {
        return Err(invalid(format!(
            "Validation Failed: 1: Dimension value cannot be greater than {MAX_DIMENSION} for vector with engine: {engine};"
        )));
    }
    let mut out = Map::new();
    out.insert("dimension".into(), Value::from(dimension));
    if let Some(data_type) = data_type.filter(|d| *d != "FLOAT") {
        out.insert("data_type".into(), Value::from(data_type));
    }
    if let Some(method) = method {
        out.insert("method".into(), Value::Object(method));
    }
    if let Some(space) = top_space {
        out.insert("space_type".into(), Value::from(space.name()));
    }
    for (key, supported) in [("mode", "in_memory"), ("compression_level", "1x")] {
        if let Some(value) = given.get(key) {
            if value.as_str() != Some(supported) {
                return Err(invalid(format!(
                    "[{key}] [{}] on field [{path}] is not supported by Tessera: vectors are kept as float32 in memory ([{key}] [{supported}])",
                    plain(value)
                )));
            }
            out.insert(key.into(), value.clone());
        }
    }
    if let Some(meta) = given.get("meta") {
        out.insert("meta".into(), meta.clone());
    }
    Ok(out)
}

fn normalise_method(
    method: &Value,
    top_space: Option<Space>,
    space_of: &dyn Fn(&Value) -> Result<Space>,
) -> Result<Map<String, Value>> {
    let Value::Object(method) = method else {
        return Err(invalid(format!(
            "Unable to parse [method] from provided value [{}]",
            plain(method)
        )));
    };
    for key in method.keys() {
        if !["name", "engine", "space_type", "parameters"].contains(&key.as_str()) {
            return Err(invalid(format!("Invalid parameter: {key}")));
        }
    }
    let name = match method.get("name") {
        None | Some(Value::Null) => return Err(invalid("name needs to be set")),
        Some(Value::String(name)) if name == "hnsw" => name.clone(),
        Some(other) => {
            let name = other
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| plain(other));
            return Err(invalid(format!("Invalid method name: {name}")));
        }
    };
    let engine = match method.get("engine") {
        None | Some(Value::Null) => DEFAULT_ENGINE.to_string(),
        Some(Value::String(e)) if ENGINES.contains(&e.as_str()) => e.clone(),
        Some(other) => {
            let name = other
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| plain(other));
            return Err(invalid(format!("Invalid engine: {name}")));
        }
    };
    let method_space = method.get("space_type").map(space_of).transpose()?;
    if let (Some(inner), Some(outer)) = (method_space, top_space) {
        if inner != outer {
            return Err(invalid(format!(
                "Cannot specify conflicting space types: \"[{}]\" \"[{}]\"",
                inner.name(),
                outer.name()
            )));
        }
    }
    let space = method_space.or(top_space).unwrap_or(Space::L2);
    if engine == "lucene" && matches!(space, Space::L1 | Space::LInf) {
        return Err(invalid(format!(
            "Validation Failed: 1: \"hnsw\" with \"lucene\" configuration does not support space type: \"{}\".;",
            space.name()
        )));
    }
    let mut parameters = std::collections::BTreeMap::new();
    match method.get("parameters") {
        None | Some(Value::Null) => {}
        Some(Value::Object(given)) => {
            for (key, value) in given {
                if !["m", "ef_construction"].contains(&key.as_str()) {
                    return Err(invalid(format!(
                        "Validation Failed: 1: Unknown parameter '{key}' found;"
                    )));
                }
                let Some(n) = value.as_i64() else {
                    return Err(invalid(format!(
                        "Validation Failed: 1: value is not an instance of Integer for Integer parameter [{key}].;"
                    )));
                };
                if n <= 0 || (key == "m" && n > 512) || n > 16_000 {
                    return Err(invalid(format!(
                        "Validation Failed: 1: parameter validation failed for Integer parameter [{key}].;"
                    )));
                }
                parameters.insert(key.clone(), Value::from(n));
            }
        }
        Some(other) => {
            return Err(invalid(format!(
                "Unable to parse [parameters] from provided value [{}]",
                plain(other)
            )))
        }
    }
    let mut out = Map::new();
    out.insert("engine".into(), Value::from(engine));
    out.insert("space_type".into(), Value::from(space.name()));
    out.insert("name".into(), Value::from(name));
    out.insert(
        "parameters".into(),
        Value::Object(parameters.into_iter().collect()),
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn norm(v: Value) -> Result<Value> {
        normalise("v", v.as_object().unwrap()).map(Value::Object)
    }

    fn reason(v: Value) -> String {
        norm(v).unwrap_err().reason().to_string()
    }

    #[test]
    fn renders_as_opensearch_shows_it() {
        assert_eq!(
            norm(json!({"dimension": 3, "space_type": "l2", "method": {"name": "hnsw", "engine": "lucene", "parameters": {"m": 16, "ef_construction": 100}}})).unwrap(),
            json!({"dimension": 3, "method": {"engine": "lucene", "space_type": "l2", "name": "hnsw", "parameters": {"ef_construction": 100, "m": 16}}, "space_type": "l2"})
        );
        assert_eq!(
            norm(json!({"dimension": 2, "data_type": "byte", "method": {"name": "hnsw", "engine": "lucene", "space_type": "innerproduct"}})).unwrap(),
            json!({"dimension": 2, "data_type": "BYTE", "method": {"engine": "lucene", "space_type": "innerproduct", "name": "hnsw", "parameters": {}}})
        );
        assert_eq!(
            norm(json!({"dimension": 2, "data_type": "float", "method": {"name": "hnsw"}}))
                .unwrap(),
            json!({"dimension": 2, "method": {"engine": "faiss", "space_type": "l2", "name": "hnsw", "parameters": {}}})
        );
    }

    #[test]
    fn refuses_with_opensearch_messages() {
        assert_eq!(reason(json!({})), "Dimension value missing for vector: v");
        assert_eq!(
            reason(json!({"dimension": 0})),
            "Dimension value must be greater than 0 for vector: v"
        );
        assert_eq!(
            reason(json!({"dimension": "abc"})),
            "Unable to parse [dimension] from provided value [abc] for vector [v]"
        );
        assert_eq!(
            reason(json!({"dimension": 16001})),
            "Validation Failed: 1: Dimension value cannot be greater than 16000 for vector with engine: faiss;"
        );
        assert!(norm(json!({"dimension": 16000})).is_ok());
        assert_eq!(
            reason(json!({"dimension": 2, "space_type": "foo"})),
            "Unable to find space: foo . Valid values are: [l2, cosinesimil, l1, linf, innerproduct, hamming]"
        );
        assert_eq!(
            reason(json!({"dimension": 2, "method": {"name": "ivf"}})),
            "Invalid method name: ivf"
        );
        assert_eq!(
            reason(json!({"dimension": 2, "method": {"name": "hnsw", "engine": "foo"}})),
            "Invalid engine: foo"
        );
        assert_eq!(
            reason(json!({"dimension": 2, "method": {"engine": "lucene"}})),
            "name needs to be set"
        );
        assert_eq!(
            reason(json!({"dimension": 2, "method": {"name": "hnsw", "bar": 1}})),
            "Invalid parameter: bar"
        );
        assert_eq!(
            reason(
                json!({"dimension": 2, "space_type": "l2", "method": {"name": "hnsw", "space_type": "innerproduct"}})
            ),
            "Cannot specify conflicting space types: \"[innerproduct]\" \"[l2]\""
        );
        assert_eq!(
            reason(json!({"dimension": 2, "method": {"name": "hnsw", "parameters": {"m": "x"}}})),
            "Validation Failed: 1: value is not an instance of Integer for Integer parameter [m].;"
        );
        assert_eq!(
            reason(json!({"dimension": 2, "space_type": "l1", "method": {"name": "hnsw", "engine": "lucene"}})),
            "Validation Failed: 1: \"hnsw\" with \"lucene\" configuration does not support space type: \"l1\".;"
        );
        assert!(norm(json!({"dimension": 2, "space_type": "l1", "method": {"name": "hnsw", "engine": "nmslib"}})).is_ok());
        assert_eq!(
            reason(json!({"dimension": 2, "data_type": "half"})),
            "Invalid value provided for [data_type] field. Supported values are [binary,byte,float]"
        );
        assert!(
            reason(json!({"dimension": 2, "mode": "on_disk"})).contains("not supported by Tessera")
        );
        assert!(
            norm(json!({"dimension": 2, "mode": "in_memory", "compression_level": "1x"})).is_ok()
        );
    }

    #[test]
    fn checks_vectors() {
        let spec = KnnSpec::from_params(
            norm(json!({"dimension": 2, "data_type": "byte", "space_type": "cosinesimil"}))
                .unwrap()
                .as_object()
                .unwrap(),
        );
        assert_eq!(spec.data_type, DataType::Byte);
        assert_eq!(spec.space, Space::CosineSimil);
        assert_eq!(
            spec.check(&[1.0]).unwrap_err().reason,
            "Vector dimension mismatch. Expected: 2, Given: 1"
        );
        assert_eq!(spec.check(&[1.5, 1.0]).unwrap_err().at, Some(0));
        assert!(spec
            .check(&[1.0, 128.0])
            .unwrap_err()
            .reason
            .contains("byte range"));
        assert!(spec
            .check(&[0.0, 0.0])
            .unwrap_err()
            .reason
            .starts_with("zero vector"));
        assert!(spec
            .check(&[f32::NAN, 0.0])
            .unwrap_err()
            .reason
            .contains("NaN"));
        assert!(spec.check(&[-128.0, 127.0]).is_ok());
        assert_eq!(number(&json!("NaN")).map(f32::is_nan), Some(true));
        assert_eq!(number(&json!(1e39)), Some(f32::INFINITY));
    }

    #[test]
    fn documents_carry_their_vector_or_opensearch_errors() {
        use crate::document::{parse_document, ParseOutcome};
        use crate::mapping::Mapping;
        use crate::FieldTable;
        let mapping = Mapping::parse(&json!({"properties": {
            "v": {"type": "knn_vector", "dimension": 2},
            "c": {"type": "knn_vector", "dimension": 2, "space_type": "cosinesimil"}}}))
        .unwrap();
        let table = FieldTable::build(&mapping, None).unwrap().0;
        let field = table.leaf("v").unwrap().field.unwrap();
        let parse = |source: Value| parse_document(&mapping, &table, "1", &source);
        let Ok(ParseOutcome::Document(doc)) = parse(json!({"v": [1, "2.5"]})) else {
            panic!("not parsed")
        };
        use tantivy::schema::Value as _;
        let bytes = doc.get_first(field).and_then(|v| v.as_custom()).unwrap();
        assert_eq!(bytes, tessera_knn::segment::encode_vector(&[1.0, 2.5]));
        assert!(matches!(
            parse(json!({"v": null})),
            Ok(ParseOutcome::Document(_))
        ));
        let error = |source: Value| {
            let Err(e) = parse(source) else {
                panic!("accepted")
            };
            (
                e.reason().to_string(),
                e.cause().unwrap().reason().to_string(),
            )
        };
        assert_eq!(
            error(json!({"v": [1, 2, 3]})),
            (
                "failed to parse field [v] of type [knn_vector] in document with id '1'. Preview of field's value: 'null'".into(),
                "Vector dimension mismatch. Expected: 2, Given: 3".into()
            )
        );
        assert!(error(json!({"v": [1, "NaN"]})).0.ends_with("'NaN'"));
        assert!(error(json!({"v": [1, 1e39]})).1.contains("infinity"));
        assert!(error(json!({"v": "abc"})).0.ends_with("'abc'"));
        assert!(error(json!({"c": [0, 0]})).1.starts_with("zero vector"));
        assert!(error(json!({"v": [1, null]})).1.contains("VALUE_NULL"));
    }
}
