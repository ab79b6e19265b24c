//! Dynamic mapping: the type OpenSearch gives a field it has never seen, and dynamic templates.
//!
//! The rules follow OpenSearch: strings become `text` with a `keyword` sub-field (ignore_above
//! 256) unless date detection (or numeric detection) recognises them, integers become `long`,
//! other numbers `float`, objects `object`; a matching dynamic template wins over all of that.

use serde_json::{Map, Value};
use tessera_common::{Error, Result};
use tessera_date::DateFormat;

use crate::field_type::FieldType;
use crate::mapping::{plain, FieldMapping, Mapping, DEFAULT_DYNAMIC_DATE_FORMATS};

/// The JSON kind of a new value, as `match_mapping_type` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DetectedType {
    String,
    Long,
    Double,
    Boolean,
    Date,
    Object,
}

impl DetectedType {
    pub fn name(self) -> &'static str {
        match self {
            DetectedType::String => "string",
            DetectedType::Long => "long",
            DetectedType::Double => "double",
            DetectedType::Boolean => "boolean",
            DetectedType::Date => "date",
            DetectedType::Object => "object",
        }
    }

    /// The mapping type used when a template does not say (`{dynamic_type}` also expands to it).
    fn default_type(self) -> &'static str {
        match self {
            DetectedType::String => "text",
            DetectedType::Long => "long",
            DetectedType::Double => "float",
            DetectedType::Boolean => "boolean",
            DetectedType::Date => "date",
            DetectedType::Object => "object",
        }
    }
}

/// One entry of `dynamic_templates`.
#[derive(Clone, Debug, PartialEq)]
pub struct DynamicTemplate {
    pub name: String,
    pub match_mapping_type: Option<String>,
    pub match_name: Option<String>,
    pub unmatch: Option<String>,
    pub path_match: Option<String>,
    pub path_unmatch: Option<String>,
    pub mapping: Map<String, Value>,
}

impl DynamicTemplate {
    pub fn parse_list(value: &Value) -> Result<Vec<DynamicTemplate>> {
        let Value::Array(items) = value else {
            return Err(Error::mapper_parsing(
                "Dynamic template syntax error. An array of named objects is expected.",
            ));
        };
        let mut out = Vec::new();
        for item in items {
            let Some((name, body)) = item
                .as_object()
                .filter(|o| o.len() == 1)
                .and_then(|o| o.iter().next())
            else {
                return Err(Error::mapper_parsing(
                    "Dynamic template syntax error. An array of named objects is expected.",
                ));
            };
            let Value::Object(body) = body else {
                return Err(Error::mapper_parsing(format!(
                    "Dynamic template [{name}] must be an object"
                )));
            };
            let mut template = DynamicTemplate {
                name: name.clone(),
                match_mapping_type: None,
                match_name: None,
                unmatch: None,
                path_match: None,
                path_unmatch: None,
                mapping: Map::new(),
            };
            for (key, value) in body {
                let text = || plain(value);
                match key.as_str() {
                    "match_mapping_type" => {
                        let t = text();
                        if !["string", "long", "double", "boolean", "date", "object", "*"]
                            .contains(&t.as_str())
                        {
                            return Err(Error::mapper_parsing(format!(
                                "No mapper found for type [{t}] in dynamic template [{name}]"
                            )));
                        }
                        template.match_mapping_type = Some(t);
                    }
                    "match" => template.match_name = Some(text()),
                    "unmatch" => template.unmatch = Some(text()),
                    "path_match" => template.path_match = Some(text()),
                    "path_unmatch" => template.path_unmatch = Some(text()),
                    "match_pattern" => {
                        if text() != "simple" {
                            return Err(Error::mapper_parsing(format!(
                                "[match_pattern: {}] in dynamic template [{name}] is not supported by Tessera: use simple patterns",
                                text()
                            )));
                        }
                    }
                    "mapping" => match value {
                        Value::Object(m) => template.mapping = m.clone(),
                        _ => {
                            return Err(Error::mapper_parsing(format!(
                                "[mapping] of dynamic template [{name}] must be an object"
                            )))
                        }
                    },
                    other => {
                        return Err(Error::mapper_parsing(format!(
                            "Illegal dynamic template parameter: [{other}]"
                        )))
                    }
                }
            }
            out.push(template);
        }
        Ok(out)
    }

    fn matches(&self, name: &str, path: &str, detected: DetectedType) -> bool {
        if let Some(t) = &self.match_mapping_type {
            if t != "*" && t != detected.name() {
                return false;
            }
        }
        let check = |pattern: &Option<String>, value: &str, want: bool| {
            pattern
                .as_ref()
                .is_none_or(|p| simple_match(p, value) == want)
        };
        check(&self.match_name, name, true)
            && check(&self.unmatch, name, false)
            && check(&self.path_match, path, true)
            && check(&self.path_unmatch, path, false)
    }

    fn render(&self, path: &str, name: &str, detected: DetectedType) -> Result<FieldMapping> {
        let mut mapping = substitute(&Value::Object(self.mapping.clone()), name, detected);
        if let Value::Object(object) = &mut mapping {
            if !object.contains_key("type") && detected != DetectedType::Object {
                object.insert("type".into(), Value::String(detected.default_type().into()));
            }
        }
        FieldMapping::parse(path, &mapping)
    }
}

fn substitute(value: &Value, name: &str, detected: DetectedType) -> Value {
    match value {
        Value::String(s) => Value::String(
            s.replace("{name}", name)
                .replace("{dynamic_type}", detected.default_type()),
        ),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), substitute(v, name, detected)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|v| substitute(v, name, detected)).collect()),
        other => other.clone(),
    }
}

/// `*`-wildcard matching as in dynamic templates and source filtering.
pub fn simple_match(pattern: &str, value: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let v: Vec<char> = value.chars().collect();
    let (mut pi, mut vi) = (0usize, 0usize);
    let (mut star, mut mark) = (None::<usize>, 0usize);
    while vi < v.len() {
        if pi < p.len() && p[pi] != '*' && p[pi] == v[vi] {
            pi += 1;
            vi += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            pi += 1;
            mark = vi;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            vi = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// The mapping OpenSearch would add for a new field `name` at `path` holding `value` (the first
/// non-null element when `value` is an array). `None` for values that add no mapping (null).
pub fn infer_field(
    mapping: &Mapping,
    path: &str,
    name: &str,
    value: &Value,
) -> Result<Option<FieldMapping>> {
    let value = match value {
        Value::Array(items) => match items.iter().find(|v| !v.is_null()) {
            Some(first) => first,
            None => return Ok(None),
        },
        other => other,
    };
    let (detected, date_format) = match value {
        Value::Null => return Ok(None),
        Value::Bool(_) => (DetectedType::Boolean, None),
        Value::Number(n) if n.is_i64() || n.is_u64() => (DetectedType::Long, None),
        Value::Number(_) => (DetectedType::Double, None),
        Value::Object(_) => (DetectedType::Object, None),
        Value::String(s) => detect_string(mapping, s),
        Value::Array(_) => return Ok(None),
    };
    for template in &mapping.dynamic_templates {
        if template.matches(name, path, detected) {
            return template.render(path, name, detected).map(Some);
        }
    }
    let field = match detected {
        DetectedType::String => {
            if mapping.numeric_detection {
                if let Value::String(s) = value {
                    if s.parse::<i64>().is_ok() {
                        return Ok(Some(FieldMapping::leaf(FieldType::Long)));
                    }
                    if s.parse::<f64>().is_ok_and(f64::is_finite) {
                        return Ok(Some(FieldMapping::leaf(FieldType::Float)));
                    }
                }
            }
            let mut text = FieldMapping::leaf(FieldType::Text);
            text.fields.insert(
                "keyword".into(),
                FieldMapping::leaf(FieldType::Keyword).with_param("ignore_above", Value::from(256)),
            );
            text
        }
        DetectedType::Long => FieldMapping::leaf(FieldType::Long),
        DetectedType::Double => FieldMapping::leaf(FieldType::Float),
        DetectedType::Boolean => FieldMapping::leaf(FieldType::Boolean),
        DetectedType::Object => FieldMapping::object(),
        DetectedType::Date => {
            let mut date = FieldMapping::leaf(FieldType::Date);
            if let Some(format) = date_format {
                date = date.with_param("format", Value::String(format));
            }
            date
        }
    };
    Ok(Some(field))
}

/// Date detection: the first `dynamic_date_formats` entry that parses the string. The mapping
/// gets an explicit `format` unless it was the default one.
fn detect_string(mapping: &Mapping, s: &str) -> (DetectedType, Option<String>) {
    if !mapping.date_detection {
        return (DetectedType::String, None);
    }
    for spec in &mapping.dynamic_date_formats {
        let Ok(format) = DateFormat::parse(spec) else {
            continue;
        };
        if format.parse_millis(s, None, false).is_ok() {
            let explicit = if spec == DEFAULT_DYNAMIC_DATE_FORMATS[0] {
                None
            } else {
                Some(
                    format!("{spec}||epoch_millis")
                        .replace("||epoch_millis||epoch_millis", "||epoch_millis"),
                )
            };
            return (DetectedType::Date, explicit);
        }
    }
    (DetectedType::String, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn infer(mapping: &Mapping, value: Value) -> Value {
        infer_field(mapping, "f", "f", &value)
            .unwrap()
            .map(|f| f.to_json())
            .unwrap_or(Value::Null)
    }

    #[test]
    fn default_inference() {
        let m = Mapping::default();
        assert_eq!(
            infer(&m, json!("hello")),
            json!({"type": "text", "fields": {"keyword": {"type": "keyword", "ignore_above": 256}}})
        );
        assert_eq!(infer(&m, json!(5)), json!({"type": "long"}));
        assert_eq!(infer(&m, json!(5.5)), json!({"type": "float"}));
        assert_eq!(infer(&m, json!(true)), json!({"type": "boolean"}));
        assert_eq!(
            infer(&m, json!("2015-01-01T12:00:00Z")),
            json!({"type": "date"})
        );
        // the object itself, before its fields are added
        assert_eq!(infer(&m, json!({"a": 1})), json!({"type": "object"}));
        assert_eq!(infer(&m, json!([null, 3])), json!({"type": "long"}));
        assert_eq!(infer(&m, json!(null)), Value::Null);
        assert_eq!(infer(&m, json!([])), Value::Null);
    }

    #[test]
    fn date_and_numeric_detection_switches() {
        let m =
            Mapping::parse(&json!({"date_detection": false, "numeric_detection": true})).unwrap();
        assert_eq!(
            infer(&m, json!("2015-01-01")),
            json!({"type": "text", "fields": {"keyword": {"type": "keyword", "ignore_above": 256}}})
        );
        assert_eq!(infer(&m, json!("42")), json!({"type": "long"}));
        assert_eq!(infer(&m, json!("4.2")), json!({"type": "float"}));
    }

    #[test]
    fn templates_win() {
        let m = Mapping::parse(&json!({"dynamic_templates": [
            {"strings_as_keywords": {"match_mapping_type": "string", "unmatch": "*_text", "mapping": {"type": "keyword"}}},
            {"longs": {"path_match": "metrics.*", "mapping": {"type": "{dynamic_type}", "index": false}}}
        ]})).unwrap();
        assert_eq!(infer(&m, json!("x")), json!({"type": "keyword"}));
        assert_eq!(
            infer_field(&m, "body_text", "body_text", &json!("x"))
                .unwrap()
                .unwrap()
                .field_type,
            FieldType::Text
        );
        let metric = infer_field(&m, "metrics.size", "size", &json!(3))
            .unwrap()
            .unwrap();
        assert_eq!(metric.to_json(), json!({"type": "long", "index": false}));
    }

    #[test]
    fn wildcard_matching() {
        assert!(simple_match("*", "anything"));
        assert!(simple_match("a*c", "abbbc"));
        assert!(simple_match("metrics.*", "metrics.size"));
        assert!(!simple_match("a*c", "abd"));
        assert!(simple_match("*_text", "body_text"));
        assert!(!simple_match("x", "xy"));
    }
}
