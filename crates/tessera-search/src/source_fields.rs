//! The `fields` option of a search: values read from `_source` and returned the way the
//! mapping types them (numbers as numbers, dates formatted, geo points as GeoJSON), as
//! OpenSearch's fields API does. Unlike `docvalue_fields` it also works for `text` fields.

use serde_json::{json, Map, Value};
use tessera_date::DateFormat;
use tessera_mapping::range::RangeKind;
use tessera_mapping::values as coerce;
use tessera_mapping::{FieldTable, FieldType, LeafField, LeafKind};

/// One `docvalue_fields` or `fields` entry of a request: a field name or pattern and an
/// optional format. Defined here, below the request, so that the request's parsing
/// (`request` → `highlight` → `source_fields`) does not lead back to it.
#[derive(Clone, Debug, PartialEq)]
pub struct DocValueField {
    pub field: String,
    pub format: Option<String>,
}

/// Every value at a dotted `path` of `source` (through objects, arrays and dotted keys).
pub fn values_at<'a>(source: &'a Value, path: &str, out: &mut Vec<&'a Value>) {
    match source {
        Value::Array(items) => {
            for item in items {
                values_at(item, path, out);
            }
        }
        Value::Object(map) => {
            if path.is_empty() {
                return;
            }
            // a key may itself contain dots: try every split point
            for (i, _) in path
                .match_indices('.')
                .chain(std::iter::once((path.len(), "")))
            {
                let (head, rest) = (&path[..i], path.get(i + 1..).unwrap_or(""));
                if let Some(child) = map.get(head) {
                    if rest.is_empty() {
                        match child {
                            Value::Array(items) => {
                                out.extend(items.iter().filter(|v| !v.is_null()))
                            }
                            Value::Null => {}
                            other => out.push(other),
                        }
                    } else {
                        values_at(child, rest, out);
                    }
                }
            }
        }
        _ => {}
    }
}

pub(crate) fn float_value(f: f32) -> Value {
    // Java prints a float with its shortest representation (0.1, not 0.100000001…)
    format!("{f}")
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

/// One source value as the field's type renders it in `fields`; `None` to leave it out.
fn render(leaf: &LeafField, value: &Value, format: Option<&DateFormat>) -> Option<Value> {
    Some(match &leaf.kind {
        LeafKind::Text { .. } => Value::String(coerce::to_text(value)?),
        LeafKind::Keyword {
            ignore_above,
            lowercase,
        } => {
            let text = coerce::to_text(value)?;
            if ignore_above.is_some_and(|limit| text.chars().count() > limit) {
                return None;
            }
            Value::String(if *lowercase {
                text.to_lowercase()
            } else {
                text
            })
        }
        LeafKind::Integer => Value::from(coerce::to_integer(value, leaf.field_type, true).ok()?),
        LeafKind::Float => {
            let number = coerce::to_float(value, leaf.field_type, true).ok()?;
            if leaf.field_type.is_float32() {
                float_value(number as f32)
            } else {
                json!(number)
            }
        }
        LeafKind::ScaledFloat { .. } => json!(coerce::to_f64(value)?),
        LeafKind::Date {
            format: field_format,
        } => {
            let text = coerce::to_text(value)?;
            let millis = field_format.parse_millis(&text, None, false).ok()?;
            Value::String(format.unwrap_or(field_format).format_millis(millis, None))
        }
        LeafKind::Boolean => Value::Bool(coerce::to_bool(value)?),
        LeafKind::Ip => Value::String(coerce::format_ip(coerce::to_ip(value).ok()?)),
        LeafKind::GeoPoint { .. } => {
            let point = tessera_mapping::geo::parse_point(value).ok()?;
            json!({"type": "Point", "coordinates": [point.lon, point.lat]})
        }
        LeafKind::Range { kind, .. } => render_range(kind, value, format)?,
        LeafKind::KnnVector(_) => float_value(coerce::to_f64(value)? as f32),
        // a completion value is an input or an object of them, shown as given
        LeafKind::Completion(_) => value.clone(),
        // a stored query is shown as given
        LeafKind::Percolator => value.clone(),
    })
}

/// A range of `_source` as the fields API shows it: each bound typed (dates formatted), an
/// `ip_range` CIDR string normalized.
fn render_range(kind: &RangeKind, value: &Value, format: Option<&DateFormat>) -> Option<Value> {
    let object = match value {
        Value::Object(object) => object,
        Value::String(cidr) if *kind == RangeKind::Ip => {
            let (address, prefix) = cidr.split_once('/')?;
            let address = coerce::format_ip(coerce::parse_ip(address).ok()?);
            return Some(Value::String(format!("{address}/{prefix}")));
        }
        _ => return None,
    };
    let mut out = Map::new();
    for (key, bound) in object {
        if bound.is_null() {
            continue;
        }
        let rendered = match kind {
            RangeKind::Integer => {
                Value::from(coerce::to_integer(bound, FieldType::Integer, true).ok()?)
            }
            RangeKind::Long => Value::from(coerce::to_integer(bound, FieldType::Long, true).ok()?),
            RangeKind::Float => {
                float_value(coerce::to_float(bound, FieldType::Float, true).ok()? as f32)
            }
            RangeKind::Double => json!(coerce::to_float(bound, FieldType::Double, true).ok()?),
            RangeKind::Date(field_format) => {
                let text = coerce::to_text(bound)?;
                let millis = tessera_mapping::range::parse_date(field_format, &text).ok()?;
                Value::String(format.unwrap_or(field_format).format_millis(millis, None))
            }
            RangeKind::Ip => Value::String(coerce::format_ip(
                coerce::parse_ip(&coerce::to_text(bound)?).ok()?,
            )),
        };
        out.insert(key.clone(), rendered);
    }
    Some(Value::Object(out))
}

/// A request's date `format`; its error reads as OpenSearch's (`Invalid format: [x]: ...`).
pub fn date_format(spec: &str) -> tessera_common::Result<DateFormat> {
    DateFormat::parse(spec).map_err(|e| tessera_common::Error::illegal_argument(e.message))
}

/// Rejects a `format` that the field's values cannot take, before the query runs (a shard
/// failure, as in OpenSearch): only dates, ranges and geo points are formatted by the fields
/// API, and a date format must parse.
pub fn validate_fields(
    table: &FieldTable,
    requested: &[DocValueField],
) -> tessera_common::Result<()> {
    for request in requested {
        let Some(spec) = request.format.as_deref() else {
            continue;
        };
        for path in table.expand(&request.field) {
            let Some(leaf) = table.leaf(&path) else {
                continue;
            };
            match &leaf.kind {
                LeafKind::Date { .. } | LeafKind::Range { .. } => {
                    date_format(spec)?;
                }
                LeafKind::GeoPoint { .. } => {}
                _ => {
                    return Err(tessera_common::Error::illegal_argument(format!(
                        "Field [{path}] of type [{}] doesn't support formats.",
                        leaf.field_type.name()
                    )))
                }
            }
        }
    }
    Ok(())
}

/// Adds the requested `fields` of one document to `out`.
pub fn source_fields(
    table: &FieldTable,
    source: &Value,
    requested: &[DocValueField],
    out: &mut Map<String, Value>,
) {
    for request in requested {
        let format = request
            .format
            .as_deref()
            .and_then(|spec| DateFormat::parse(spec).ok());
        for path in table.expand(&request.field) {
            let Some(leaf) = table.leaf(&path) else {
                continue;
            };
            // a multi-field (`title.keyword`) has no value of its own: it reads its parent's
            let source_path = match path.rsplit_once('.') {
                Some((parent, _)) if !source_has_path(source, &path) => parent.to_string(),
                _ => path.clone(),
            };
            let mut raw = Vec::new();
            values_at(source, &source_path, &mut raw);
            // geo points given as [lon, lat] are one value, not two
            let raw: Vec<&Value> = if matches!(leaf.kind, LeafKind::GeoPoint { .. }) {
                let mut whole = Vec::new();
                collect_geo(source, &source_path, &mut whole);
                whole
            } else {
                raw
            };
            let rendered: Vec<Value> = raw
                .into_iter()
                .filter_map(|v| render(leaf, v, format.as_ref()))
                .collect();
            if rendered.is_empty() {
                continue;
            }
            match out.get_mut(&path) {
                Some(Value::Array(existing)) => existing.extend(rendered),
                _ => {
                    out.insert(path, Value::Array(rendered));
                }
            }
        }
    }
}

fn source_has_path(source: &Value, path: &str) -> bool {
    let mut found = Vec::new();
    values_at(source, path, &mut found);
    !found.is_empty()
}

fn collect_geo<'a>(source: &'a Value, path: &str, out: &mut Vec<&'a Value>) {
    let mut parent = Vec::new();
    let (head, leaf) = match path.rsplit_once('.') {
        Some((head, leaf)) => (Some(head), leaf),
        None => (None, path),
    };
    match head {
        Some(head) => values_at(source, head, &mut parent),
        None => parent.push(source),
    }
    for object in parent {
        if let Some(value) = object.get(leaf) {
            match value {
                Value::Array(items) if items.iter().all(Value::is_number) => out.push(value),
                Value::Array(items) => out.extend(items.iter()),
                Value::Null => {}
                other => out.push(other),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_mapping::Mapping;

    #[test]
    fn reads_typed_values_from_source() {
        let mapping = Mapping::parse(&json!({"properties": {
            "title": {"type": "text", "fields": {"raw": {"type": "keyword"}}},
            "price": {"type": "long"}, "rate": {"type": "float"},
            "ts": {"type": "date"}, "loc": {"type": "geo_point"},
            "o": {"properties": {"n": {"type": "integer"}}}
        }}))
        .unwrap();
        let (table, _) = FieldTable::build(&mapping, None).unwrap();
        let source = json!({"title": "Quick fox", "price": "10", "rate": 0.1, "ts": "2024-01-01T10:00:00Z", "loc": [-73.9, 40.7], "o": [{"n": 1}, {"n": 2}], "o.n": 3});
        let requested = vec![
            DocValueField {
                field: "title*".into(),
                format: None,
            },
            DocValueField {
                field: "price".into(),
                format: None,
            },
            DocValueField {
                field: "rate".into(),
                format: None,
            },
            DocValueField {
                field: "ts".into(),
                format: Some("yyyy-MM-dd".into()),
            },
            DocValueField {
                field: "loc".into(),
                format: None,
            },
            DocValueField {
                field: "o.n".into(),
                format: None,
            },
            DocValueField {
                field: "missing".into(),
                format: None,
            },
        ];
        let mut out = Map::new();
        source_fields(&table, &source, &requested, &mut out);
        assert_eq!(out["title"], json!(["Quick fox"]));
        assert_eq!(out["title.raw"], json!(["Quick fox"]));
        assert_eq!(out["price"], json!([10]));
        assert_eq!(out["rate"], json!([0.1]));
        assert_eq!(out["ts"], json!(["2024-01-01"]));
        assert_eq!(
            out["loc"],
            json!([{"type": "Point", "coordinates": [-73.9, 40.7]}])
        );
        assert_eq!(out["o.n"], json!([1, 2, 3]));
        assert!(!out.contains_key("missing"));
    }
}
