//! Reading a processor's configuration object as OpenSearch's `ConfigurationUtils` does:
//! every option taken out by name, type errors and missing options as `parse_exception`s
//! naming the processor type, its tag and the property, and options left over at the end
//! refused ("doesn't support one or more provided configuration parameters").

use serde_json::{Map, Value};
use tessera_common::{Error, Result};

use crate::document::java_type;
use crate::template::{Template, ValueSource};

/// A `parse_exception` about one property of a processor.
pub fn property_error(
    kind: &str,
    tag: Option<&str>,
    property: Option<&str>,
    reason: &str,
) -> Error {
    let reason = match property {
        Some(property) => format!("[{property}] {reason}"),
        None => reason.to_string(),
    };
    let mut error = Error::new("parse_exception", 400, reason).with_meta("processor_type", kind);
    if let Some(tag) = tag {
        error = error.with_meta("processor_tag", tag);
    }
    if let Some(property) = property {
        error = error.with_meta("property_name", property);
    }
    error
}

/// One processor's configuration being read.
pub struct Config {
    kind: String,
    tag: Option<String>,
    map: Map<String, Value>,
}

impl Config {
    pub fn new(kind: &str, map: Map<String, Value>) -> Config {
        let tag = map.get("tag").and_then(Value::as_str).map(String::from);
        Config::with_tag(kind, map, tag)
    }

    /// The options of a processor whose `tag` was taken out already.
    pub fn with_tag(kind: &str, map: Map<String, Value>, tag: Option<String>) -> Config {
        Config {
            kind: kind.to_string(),
            tag,
            map,
        }
    }

    pub fn kind(&self) -> &str {
        &self.kind
    }

    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// An error about `property`.
    pub fn error(&self, property: &str, reason: &str) -> Error {
        property_error(&self.kind, self.tag.as_deref(), Some(property), reason)
    }

    /// Takes an option out, whatever its type.
    pub fn take(&mut self, key: &str) -> Option<Value> {
        self.map.shift_remove(key).filter(|v| !v.is_null())
    }

    pub fn required(&mut self, key: &str) -> Result<Value> {
        self.take(key)
            .ok_or_else(|| self.error(key, "required property is missing"))
    }

    fn as_string(&self, key: &str, value: Value) -> Result<String> {
        match value {
            Value::String(s) => Ok(s),
            other => Err(self.error(
                key,
                &format!(
                    "property isn't a string, but of type [{}]",
                    java_type(&other)
                ),
            )),
        }
    }

    pub fn required_string(&mut self, key: &str) -> Result<String> {
        let value = self.required(key)?;
        self.as_string(key, value)
    }

    pub fn optional_string(&mut self, key: &str) -> Result<Option<String>> {
        match self.take(key) {
            Some(value) => self.as_string(key, value).map(Some),
            None => Ok(None),
        }
    }

    /// A boolean; `"true"` and `"false"` as strings too, as OpenSearch reads them.
    pub fn bool(&mut self, key: &str, default: bool) -> Result<bool> {
        match self.take(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(b),
            Some(Value::String(s)) if s == "true" || s == "false" => Ok(s == "true"),
            Some(other) => Err(self.error(
                key,
                &format!(
                    "property isn't a boolean, but of type [{}]",
                    java_type(&other)
                ),
            )),
        }
    }

    /// A list of strings.
    pub fn optional_strings(&mut self, key: &str) -> Result<Option<Vec<String>>> {
        let Some(value) = self.take(key) else {
            return Ok(None);
        };
        let Value::Array(items) = value else {
            return Err(self.error(
                key,
                &format!("property isn't a list, but of type [{}]", java_type(&value)),
            ));
        };
        items
            .into_iter()
            .map(|item| self.as_string(key, item))
            .collect::<Result<Vec<_>>>()
            .map(Some)
    }

    pub fn required_strings(&mut self, key: &str) -> Result<Vec<String>> {
        self.optional_strings(key)?
            .ok_or_else(|| self.error(key, "required property is missing"))
    }

    /// A string or a list of strings (`remove`'s `field`).
    pub fn optional_string_or_strings(&mut self, key: &str) -> Result<Option<Vec<String>>> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .into_iter()
                .map(|item| self.as_string(key, item))
                .collect::<Result<Vec<_>>>()
                .map(Some),
            Some(other) => Ok(Some(vec![self.as_string(key, other)?])),
        }
    }

    /// An object of strings (`grok`'s `pattern_definitions`).
    pub fn optional_string_map(&mut self, key: &str) -> Result<Vec<(String, String)>> {
        match self.take(key) {
            None => Ok(Vec::new()),
            Some(Value::Object(map)) => map
                .into_iter()
                .map(|(k, v)| Ok((k, self.as_string(key, v)?)))
                .collect(),
            Some(other) => Err(self.error(
                key,
                &format!("property isn't a map, but of type [{}]", java_type(&other)),
            )),
        }
    }

    /// A template option.
    pub fn template(&mut self, key: &str) -> Result<Template> {
        let text = self.required_string(key)?;
        self.compile(key, &text)
    }

    pub fn compile(&self, key: &str, text: &str) -> Result<Template> {
        Template::parse(text).map_err(|reason| self.error(key, &reason))
    }

    /// A value option whose strings are templates.
    pub fn value_source(&mut self, key: &str) -> Result<ValueSource> {
        let value = self.required(key)?;
        ValueSource::parse(&value).map_err(|reason| self.error(key, &reason))
    }

    /// Refuses the options nobody took.
    pub fn finish(self) -> Result<()> {
        if self.map.is_empty() {
            return Ok(());
        }
        let keys: Vec<&str> = self.map.keys().map(String::as_str).collect();
        Err(property_error(
            &self.kind,
            self.tag.as_deref(),
            None,
            &format!(
                "processor [{}] doesn't support one or more provided configuration parameters {}",
                self.kind,
                format_args!("[{}]", keys.join(", "))
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(value: Value) -> Config {
        let Value::Object(map) = value else { panic!() };
        Config::new("set", map)
    }

    #[test]
    fn errors_name_the_processor_its_tag_and_the_property() {
        let mut c = config(json!({"tag": "t", "field": 1}));
        let e = c.required_string("field").unwrap_err();
        assert_eq!(
            e.to_json(),
            json!({"type": "parse_exception",
                "reason": "[field] property isn't a string, but of type [java.lang.Integer]",
                "processor_type": "set", "processor_tag": "t", "property_name": "field"})
        );
        let e = c.required_string("value").unwrap_err();
        assert_eq!(e.reason(), "[value] required property is missing");
    }

    #[test]
    fn leftover_options_are_refused() {
        let mut c = config(json!({"field": "a", "bogus": 1}));
        c.required_string("field").unwrap();
        assert_eq!(
            c.finish().unwrap_err().reason(),
            "processor [set] doesn't support one or more provided configuration parameters [bogus]"
        );
        let mut c = config(json!({"ignore_missing": "true"}));
        assert!(c.bool("ignore_missing", false).unwrap());
    }
}
