//! The templates of processor options (`"value": "{{user.name}}"`), as OpenSearch renders
//! them with mustache: `{{path}}` substitutes a field JSON-escaped (OpenSearch's ingest
//! templates escape for JSON), `{{{path}}}` substitutes it raw, a missing field renders as
//! nothing, objects and lists as Java prints them. Sections, inverted sections, partials,
//! comments and delimiter changes are refused when the pipeline is created rather than
//! rendered wrongly (the full engine, `tessera_script::mustache`, renders search templates
//! against JSON params, not a document's fields).

use serde_json::Value;

use crate::document::{java_string, IngestDocument};

#[derive(Clone, Debug, PartialEq)]
enum Part {
    Text(String),
    Field { path: String, escape: bool },
}

/// A parsed template; see the module documentation.
#[derive(Clone, Debug, PartialEq)]
pub struct Template {
    parts: Vec<Part>,
}

/// The tags Tessera renders; anything else is this error's message.
fn unsupported(tag: &str) -> String {
    format!(
        "the mustache tag [{{{{{tag}}}}}] is not supported by Tessera: ingest templates support only {{{{field.path}}}} and {{{{{{field.path}}}}}}"
    )
}

impl Template {
    /// Parses `text`; the error is a message for the caller to place.
    pub fn parse(text: &str) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find("{{") {
            if start > 0 {
                parts.push(Part::Text(rest[..start].to_string()));
            }
            let after = &rest[start..];
            let (raw, open, close) = if after.starts_with("{{{") {
                (true, 3, "}}}")
            } else {
                (false, 2, "}}")
            };
            let Some(end) = after[open..].find(close) else {
                return Err(format!("unclosed mustache tag in [{text}]"));
            };
            let inner = after[open..open + end].trim();
            let valid = !inner.is_empty()
                && !inner.starts_with(['#', '^', '/', '!', '>', '&', '=', '.'])
                && !inner.contains(char::is_whitespace)
                && !inner.contains(['{', '}']);
            if !valid {
                return Err(unsupported(inner));
            }
            parts.push(Part::Field {
                path: inner.to_string(),
                escape: !raw,
            });
            rest = &after[open + end + close.len()..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_string()));
        }
        Ok(Template { parts })
    }

    /// Whether the template substitutes nothing.
    pub fn is_static(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Text(_)))
    }

    /// The template rendered against `doc`.
    pub fn render(&self, doc: &IngestDocument) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Field { path, escape } => {
                    let value = match doc.get(path) {
                        Ok(Value::Null) | Err(_) => continue,
                        Ok(value) => java_string(value),
                    };
                    if *escape {
                        tessera_script::mustache::escape_json(&value, &mut out);
                    } else {
                        out.push_str(&value);
                    }
                }
            }
        }
        out
    }
}

/// A configured value (`set`'s and `append`'s `value`): strings are templates, inside lists
/// and objects too; other values are kept as they are.
#[derive(Clone, Debug, PartialEq)]
pub enum ValueSource {
    Literal(Value),
    Template(Template),
    List(Vec<ValueSource>),
    Object(Vec<(String, ValueSource)>),
}

impl ValueSource {
    pub fn parse(value: &Value) -> Result<ValueSource, String> {
        Ok(match value {
            Value::String(text) => {
                let template = Template::parse(text)?;
                if template.is_static() {
                    ValueSource::Literal(value.clone())
                } else {
                    ValueSource::Template(template)
                }
            }
            Value::Array(items) => ValueSource::List(
                items
                    .iter()
                    .map(ValueSource::parse)
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(map) => ValueSource::Object(
                map.iter()
                    .map(|(k, v)| Ok((k.clone(), ValueSource::parse(v)?)))
                    .collect::<Result<_, String>>()?,
            ),
            other => ValueSource::Literal(other.clone()),
        })
    }

    pub fn render(&self, doc: &IngestDocument) -> Value {
        match self {
            ValueSource::Literal(value) => value.clone(),
            ValueSource::Template(template) => Value::String(template.render(doc)),
            ValueSource::List(items) => Value::Array(items.iter().map(|i| i.render(doc)).collect()),
            ValueSource::Object(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.render(doc)))
                    .collect(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc() -> IngestDocument {
        let Value::Object(map) = json!({"b": "q\"<&>", "num": 1.5, "obj": {"x": 1, "y": [1, 2]}})
        else {
            panic!()
        };
        IngestDocument::new(map, "i", None, None, "2020-01-01T00:00:00Z".into())
    }

    #[test]
    fn fields_are_substituted_escaped_or_raw() {
        let d = doc();
        let render = |t: &str| Template::parse(t).unwrap().render(&d);
        assert_eq!(render("{{b}}"), "q\\\"<&>");
        assert_eq!(render("{{{b}}}"), "q\"<&>");
        assert_eq!(render("n={{ num }}"), "n=1.5");
        assert_eq!(render("{{obj}}"), "{x=1, y=[1, 2]}");
        assert_eq!(render("[{{missing}}]"), "[]");
        assert_eq!(render("{{_ingest.timestamp}}"), "2020-01-01T00:00:00Z");
        assert_eq!(render("{{_index}}/{{obj.y.1}}"), "i/2");
        assert!(Template::parse("plain").unwrap().is_static());
    }

    #[test]
    fn other_mustache_tags_are_refused() {
        for t in [
            "{{#b}}x{{/b}}",
            "{{^b}}x{{/b}}",
            "{{! note }}",
            "{{> partial}}",
            "{{a",
            "{{a b}}",
        ] {
            assert!(Template::parse(t).is_err(), "{t}");
        }
    }

    #[test]
    fn value_sources_template_strings_inside_structures() {
        let d = doc();
        let source = ValueSource::parse(&json!({"k": ["{{num}}", 3], "t": true})).unwrap();
        assert_eq!(source.render(&d), json!({"k": ["1.5", 3], "t": true}));
    }
}
