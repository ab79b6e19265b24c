//! `buckets_path`: which number of a bucket a pipeline reads (`sales`, `_count`, `_key`,
//! `stats.avg`, `percentiles[99.0]`, `filtered>sales`), and how gaps are treated.
//!
//! Paths are read from the rendered buckets, so every aggregation type that renders a number
//! can be read without a per-type accessor: a single-value result's `value`, a multi-value
//! result's named field, percentiles by their key.

use serde_json::{Map, Value};
use tessera_common::{Error, Result};

use super::{execution_error, find_key};

/// One `name`, `name.key` or `name[key]` step of a path.
#[derive(Clone, Debug, PartialEq)]
pub struct PathElement {
    pub name: String,
    pub key: Option<String>,
}

/// A parsed `buckets_path`.
#[derive(Clone, Debug, PartialEq)]
pub struct BucketsPath {
    /// As written, for error messages.
    pub text: String,
    pub elements: Vec<PathElement>,
}

/// What a pipeline does with a bucket whose value is missing (an empty bucket, or a metric
/// without a value). OpenSearch 2.19 accepts only these two (`keep_values` came later), and
/// so does Tessera.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GapPolicy {
    #[default]
    Skip,
    InsertZeros,
}

impl GapPolicy {
    pub fn parse(text: &str) -> Result<GapPolicy> {
        match text {
            "skip" => Ok(GapPolicy::Skip),
            "insert_zeros" => Ok(GapPolicy::InsertZeros),
            other => Err(Error::parsing(format!(
                "Invalid gap policy: [{other}], accepted values: [insert_zeros, skip]"
            ))),
        }
    }
}

/// `_count`, `_key` and `_bucket_count` name properties of buckets, not aggregations.
pub(crate) fn is_special(name: &str) -> bool {
    matches!(name, "_count" | "_key" | "_bucket_count")
}

impl BucketsPath {
    /// Parses `a>b>c.metric` / `a>b[key]`.
    pub fn parse(text: &str) -> Result<BucketsPath> {
        let invalid = || Error::illegal_argument(format!("Invalid path element [{text}]"));
        if text.is_empty() {
            return Err(Error::illegal_argument(format!("Invalid path [{text}]")));
        }
        let mut elements = Vec::new();
        let parts: Vec<&str> = text.split('>').collect();
        let last = parts.len() - 1;
        for (i, part) in parts.into_iter().enumerate() {
            if part.is_empty() {
                return Err(invalid());
            }
            let element = if let Some(open) = part.find('[') {
                let Some(inner) = part[open + 1..].strip_suffix(']') else {
                    return Err(invalid());
                };
                PathElement {
                    name: part[..open].to_string(),
                    key: Some(inner.to_string()),
                }
            } else if let (true, Some((name, key))) = (i == last, part.split_once('.')) {
                PathElement {
                    name: name.to_string(),
                    key: Some(key.to_string()),
                }
            } else {
                PathElement {
                    name: part.to_string(),
                    key: None,
                }
            };
            if element.name.is_empty() || element.key.as_deref() == Some("") {
                return Err(invalid());
            }
            elements.push(element);
        }
        Ok(BucketsPath {
            text: text.to_string(),
            elements,
        })
    }

    /// Whether the path is exactly `_count` (a bucket's doc count is never a gap).
    fn is_doc_count(&self) -> bool {
        self.elements.len() == 1 && self.elements[0].name == "_count"
    }
}

/// The buckets of a rendered multi-bucket result, whether a list or keyed.
pub(crate) fn buckets_mut(result: &mut Map<String, Value>) -> Vec<&mut Map<String, Value>> {
    match result.get_mut("buckets") {
        Some(Value::Array(list)) => list.iter_mut().filter_map(Value::as_object_mut).collect(),
        Some(Value::Object(keyed)) => keyed
            .values_mut()
            .filter_map(Value::as_object_mut)
            .collect(),
        _ => Vec::new(),
    }
}

/// The buckets of a rendered result, read-only, with their keyed names when keyed.
pub(crate) fn buckets(result: &Map<String, Value>) -> Vec<(Option<&str>, &Map<String, Value>)> {
    match result.get("buckets") {
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(Value::as_object)
            .map(|b| (None, b))
            .collect(),
        Some(Value::Object(keyed)) => keyed
            .iter()
            .filter_map(|(k, b)| b.as_object().map(|b| (Some(k.as_str()), b)))
            .collect(),
        _ => Vec::new(),
    }
}

/// A bucket's key as OpenSearch's `getKeyAsString` shows it.
pub(crate) fn key_as_string(keyed_name: Option<&str>, bucket: &Map<String, Value>) -> String {
    if let Some(Value::String(s)) = bucket.get("key_as_string") {
        return s.clone();
    }
    match (bucket.get("key"), keyed_name) {
        (Some(Value::String(s)), _) => s.clone(),
        (Some(Value::Number(n)), _) => n.to_string(),
        (Some(other), _) => other.to_string(),
        (None, Some(name)) => name.to_string(),
        (None, None) => String::new(),
    }
}

pub(crate) fn doc_count(bucket: &Map<String, Value>) -> f64 {
    bucket
        .get("doc_count")
        .and_then(Value::as_f64)
        .unwrap_or(0.0)
}

/// The value `path` reads in `bucket`, gap policy applied. `None` when the aggregation is
/// missing from this bucket (a pipeline result that this bucket did not get): OpenSearch
/// treats that as no value at all, not as a gap.
pub(crate) fn bucket_value(
    bucket: &Map<String, Value>,
    path: &BucketsPath,
    gap: GapPolicy,
    typed_keys: bool,
) -> Result<Option<f64>> {
    let Some(value) = raw_value(bucket, &path.elements, typed_keys)? else {
        return Ok(None);
    };
    let empty = doc_count(bucket) == 0.0 && !path.is_doc_count();
    if !value.is_finite() || empty {
        return Ok(Some(match gap {
            GapPolicy::Skip => f64::NAN,
            GapPolicy::InsertZeros => 0.0,
        }));
    }
    Ok(Some(value))
}

fn not_a_number(what: &str, name: &str) -> Error {
    execution_error(format!(
        "buckets_path must reference either a number value or a single value numeric metric aggregation, got: [{what}] at aggregation [{name}]"
    ))
}

/// Reads `elements` in `bucket` without gap handling (null values are NaN).
fn raw_value(
    bucket: &Map<String, Value>,
    elements: &[PathElement],
    typed_keys: bool,
) -> Result<Option<f64>> {
    let first = &elements[0];
    match first.name.as_str() {
        "_count" => return Ok(Some(doc_count(bucket))),
        "_key" => {
            return match bucket.get("key") {
                Some(Value::Number(n)) => Ok(n.as_f64()),
                _ => Err(not_a_number("String", "_key")),
            }
        }
        _ => {}
    }
    let Some(key) = find_key(bucket, &first.name, typed_keys) else {
        return Ok(None);
    };
    let Some(Value::Object(result)) = bucket.get(&key) else {
        return Ok(None);
    };
    let name = first.name.as_str();
    if result.contains_key("buckets") {
        if first.key.as_deref() == Some("_bucket_count") && elements.len() == 1 {
            return Ok(Some(buckets(result).len() as f64));
        }
        return Err(not_a_number("Bucket", name));
    }
    if result.contains_key("doc_count") && !result.contains_key("value") {
        // a single-bucket aggregation: the path goes on inside it
        return match (&first.key, elements.len()) {
            (None, n) if n > 1 => raw_value(result, &elements[1..], typed_keys),
            (Some(k), 1) if k == "_count" || k == "doc_count" => Ok(Some(doc_count(result))),
            _ => Err(not_a_number("SingleBucket", name)),
        };
    }
    if elements.len() > 1 {
        return Err(execution_error(format!(
            "No bucket aggregation found for path [{}]",
            elements
                .iter()
                .map(|e| e.name.as_str())
                .collect::<Vec<_>>()
                .join(">")
        )));
    }
    if let Some(value) = result.get("value") {
        return match first.key.as_deref() {
            None | Some("value") => Ok(Some(value.as_f64().unwrap_or(f64::NAN))),
            Some(k) => Err(Error::illegal_argument(format!(
                "path not supported for [{name}]: [{k}]"
            ))),
        };
    }
    if let Some(values) = result.get("values") {
        let Some(k) = first.key.as_deref() else {
            return Err(multi_value(name));
        };
        let wanted: f64 = k.parse().map_err(|_| {
            Error::illegal_argument(format!("Invalid percentile key [{k}] in [{name}]"))
        })?;
        let found = match values {
            Value::Object(map) => map
                .iter()
                .find(|(key, _)| key.parse::<f64>().ok() == Some(wanted))
                .map(|(_, v)| v),
            Value::Array(list) => list
                .iter()
                .find(|e| e.get("key").and_then(Value::as_f64) == Some(wanted))
                .and_then(|e| e.get("value")),
            _ => None,
        };
        return match found {
            Some(v) => Ok(Some(v.as_f64().unwrap_or(f64::NAN))),
            None => Err(Error::illegal_argument(format!(
                "Percent requested [{k}] was not one of the computed percentiles in [{name}]"
            ))),
        };
    }
    if result.contains_key("hits") {
        return Err(not_a_number("TopHits", name));
    }
    let Some(k) = first.key.as_deref() else {
        return Err(multi_value(name));
    };
    let bounds = |field: &str| {
        result
            .get("std_deviation_bounds")
            .and_then(|b| b.get(field))
            .cloned()
    };
    let value = match k {
        "std_upper" => bounds("upper"),
        "std_lower" => bounds("lower"),
        "std_upper_population" => bounds("upper_population"),
        "std_lower_population" => bounds("lower_population"),
        "std_upper_sampling" => bounds("upper_sampling"),
        "std_lower_sampling" => bounds("lower_sampling"),
        other => result.get(other).filter(|v| !v.is_object()).cloned(),
    };
    match value {
        Some(v) => Ok(Some(v.as_f64().unwrap_or(f64::NAN))),
        None => {
            let class = if result.contains_key("sum_of_squares") {
                "InternalExtendedStats"
            } else {
                "InternalStats"
            };
            Err(Error::illegal_argument(format!(
                "No enum constant org.opensearch.search.aggregations.metrics.{class}.Metrics.{k}"
            )))
        }
    }
}

fn multi_value(name: &str) -> Error {
    execution_error(format!(
        "buckets_path must reference either a number value or a single value numeric metric aggregation, but [{name}] contains multiple values. Please specify which to use."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn path(text: &str) -> BucketsPath {
        BucketsPath::parse(text).unwrap()
    }

    #[test]
    fn parses_elements_and_keys() {
        let p = path("f>sales.avg");
        assert_eq!(p.elements.len(), 2);
        assert_eq!(p.elements[1].key.as_deref(), Some("avg"));
        let p = path("p[99.9]");
        assert_eq!(p.elements[0].name, "p");
        assert_eq!(p.elements[0].key.as_deref(), Some("99.9"));
        assert!(BucketsPath::parse("a>>b").is_err());
        assert!(BucketsPath::parse("").is_err());
    }

    #[test]
    fn reads_rendered_results_with_gap_policies() {
        let bucket = json!({
            "key": 5.0, "doc_count": 3,
            "s": {"value": 7.5},
            "st": {"count": 3, "min": 1.0, "max": 4.0, "avg": 2.0, "sum": 6.0},
            "p": {"values": {"50.0": 2.5, "99.0": 4.0}},
            "f": {"doc_count": 1, "m": {"value": 9.0}}
        });
        let b = bucket.as_object().unwrap();
        let read = |p: &str| bucket_value(b, &path(p), GapPolicy::Skip, false).unwrap();
        assert_eq!(read("s"), Some(7.5));
        assert_eq!(read("_count"), Some(3.0));
        assert_eq!(read("_key"), Some(5.0));
        assert_eq!(read("st.max"), Some(4.0));
        assert_eq!(read("p[99]"), Some(4.0));
        assert_eq!(read("p.50"), Some(2.5));
        assert_eq!(read("f>m"), Some(9.0));
        assert_eq!(read("missing"), None);
        assert!(bucket_value(b, &path("st"), GapPolicy::Skip, false)
            .unwrap_err()
            .reason()
            .contains("contains multiple values"));

        let empty = json!({"key": 1.0, "doc_count": 0, "s": {"value": 0.0}, "a": {"value": null}});
        let e = empty.as_object().unwrap();
        let read = |p: &str, g| bucket_value(e, &path(p), g, false).unwrap().unwrap();
        assert!(read("s", GapPolicy::Skip).is_nan());
        assert_eq!(read("s", GapPolicy::InsertZeros), 0.0);
        assert_eq!(read("a", GapPolicy::InsertZeros), 0.0);
        assert_eq!(read("_count", GapPolicy::Skip), 0.0);
    }

    #[test]
    fn typed_keys_are_found_by_name() {
        let bucket = json!({"doc_count": 1, "sum#s": {"value": 2.0}});
        let v = bucket_value(
            bucket.as_object().unwrap(),
            &path("s"),
            GapPolicy::Skip,
            true,
        )
        .unwrap();
        assert_eq!(v, Some(2.0));
    }
}
