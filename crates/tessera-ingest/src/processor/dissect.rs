//! `dissect`: splits a string on the literal delimiters between `%{key}`s of a pattern, no
//! regex. Key modifiers as OpenSearch has them: `%{}` and `%{?name}` skip, `%{+name}` appends
//! (joined by `append_separator`, ordered by `%{+name/2}`), `%{*name}` / `%{&name}` make a
//! field named by one value holding another, and a `->` suffix skips repeats of the following
//! delimiter (padding).

use std::collections::BTreeMap;

use serde_json::Value;
use tessera_common::{Error, Result};

use super::{Flow, Outcome, Processor};
use crate::config::Config;
use crate::document::IngestDocument;
use crate::pipeline::Exec;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Modifier {
    None,
    Skip,
    Append,
    ReferenceName,
    ReferenceValue,
}

#[derive(Clone, Debug)]
struct Key {
    name: String,
    modifier: Modifier,
    order: u32,
    right_padding: bool,
    /// The literal that follows the key (empty for the last one: the rest of the input).
    delimiter: String,
}

#[derive(Debug)]
pub struct Dissect {
    field: String,
    pattern: String,
    leading: String,
    keys: Vec<Key>,
    append_separator: String,
    ignore_missing: bool,
}

fn parse_key(text: &str, position: u32) -> Key {
    let (text, right_padding) = match text.strip_suffix("->") {
        Some(rest) => (rest, true),
        None => (text, false),
    };
    let (modifier, rest) = match text.chars().next() {
        Some('+') => (Modifier::Append, &text[1..]),
        Some('?') => (Modifier::Skip, &text[1..]),
        Some('*') => (Modifier::ReferenceName, &text[1..]),
        Some('&') => (Modifier::ReferenceValue, &text[1..]),
        _ if text.is_empty() => (Modifier::Skip, text),
        _ => (Modifier::None, text),
    };
    let (name, order) = match (modifier, rest.rsplit_once('/')) {
        (Modifier::Append, Some((name, order))) if order.parse::<u32>().is_ok() => {
            (name, order.parse().unwrap_or(position))
        }
        _ => (rest, position),
    };
    Key {
        name: name.to_string(),
        modifier,
        order,
        right_padding,
        delimiter: String::new(),
    }
}

impl Dissect {
    pub fn parse(config: &mut Config) -> Result<Dissect> {
        let field = config.required_string("field")?;
        let pattern = config.required_string("pattern")?;
        let append_separator = config
            .optional_string("append_separator")?
            .unwrap_or_default();
        let ignore_missing = config.bool("ignore_missing", false)?;
        let mut keys: Vec<Key> = Vec::new();
        let mut leading = String::new();
        let mut rest = pattern.as_str();
        while let Some(start) = rest.find("%{") {
            let literal = &rest[..start];
            match keys.last_mut() {
                Some(key) => key.delimiter = literal.to_string(),
                None => leading = literal.to_string(),
            }
            let Some(end) = rest[start..].find('}') else {
                return Err(config.error(
                    "pattern",
                    &format!("Unable to parse pattern [{pattern}]: an unclosed key"),
                ));
            };
            keys.push(parse_key(&rest[start + 2..start + end], keys.len() as u32));
            rest = &rest[start + end + 1..];
        }
        match keys.last_mut() {
            Some(key) => key.delimiter = rest.to_string(),
            None => return Err(config.error("pattern", "Unable to find any keys or delimiters.")),
        }
        if keys
            .iter()
            .zip(keys.iter().skip(1))
            .any(|(key, _)| key.delimiter.is_empty())
        {
            return Err(config.error(
                "pattern",
                &format!(
                    "Unable to parse pattern [{pattern}]: keys must be separated by a delimiter"
                ),
            ));
        }
        Ok(Dissect {
            field,
            pattern,
            leading,
            keys,
            append_separator,
            ignore_missing,
        })
    }

    /// The fields the pattern extracts from `input`, or `None` when it does not match.
    fn dissect(&self, input: &str) -> Option<Vec<(String, String)>> {
        let mut rest = input.strip_prefix(self.leading.as_str())?;
        let mut values: Vec<(&Key, &str)> = Vec::new();
        for (i, key) in self.keys.iter().enumerate() {
            let last = i + 1 == self.keys.len();
            let value;
            if key.delimiter.is_empty() {
                value = rest;
                rest = "";
            } else if last {
                // the pattern ends with a literal: the value runs up to its last occurrence
                let at = rest.rfind(key.delimiter.as_str())?;
                if at + key.delimiter.len() != rest.len() {
                    return None;
                }
                value = &rest[..at];
                rest = "";
            } else {
                let at = rest.find(key.delimiter.as_str())?;
                value = &rest[..at];
                rest = &rest[at + key.delimiter.len()..];
                if key.right_padding {
                    while let Some(after) = rest.strip_prefix(key.delimiter.as_str()) {
                        rest = after;
                    }
                }
            }
            values.push((key, value));
        }
        let mut out: Vec<(String, String)> = Vec::new();
        let mut appended: BTreeMap<&str, Vec<(u32, &str)>> = BTreeMap::new();
        let mut reference_names: BTreeMap<&str, &str> = BTreeMap::new();
        let mut reference_values: BTreeMap<&str, &str> = BTreeMap::new();
        // a name appended to anywhere is appended to everywhere (`%{a} %{+a}`)
        let appending = |name: &str| {
            self.keys
                .iter()
                .any(|k| k.modifier == Modifier::Append && k.name == name)
        };
        for (key, value) in &values {
            match key.modifier {
                Modifier::Skip => {}
                Modifier::None if !appending(&key.name) => {
                    out.push((key.name.clone(), value.to_string()))
                }
                Modifier::None | Modifier::Append => appended
                    .entry(key.name.as_str())
                    .or_default()
                    .push((key.order, value)),
                Modifier::ReferenceName => {
                    reference_names.insert(key.name.as_str(), value);
                }
                Modifier::ReferenceValue => {
                    reference_values.insert(key.name.as_str(), value);
                }
            }
        }
        for (name, mut parts) in appended {
            parts.sort_by_key(|(order, _)| *order);
            let joined: Vec<&str> = parts.iter().map(|(_, v)| *v).collect();
            out.push((name.to_string(), joined.join(&self.append_separator)));
        }
        for (name, field) in reference_names {
            if let Some(value) = reference_values.get(name) {
                out.push((field.to_string(), value.to_string()));
            }
        }
        Some(out)
    }
}

impl Processor for Dissect {
    fn execute(&self, doc: &mut IngestDocument, _: &mut Exec<'_>) -> Outcome {
        let Some(input) = doc.string_field(&self.field, self.ignore_missing)? else {
            return Ok(Flow::Continue);
        };
        let Some(fields) = self.dissect(&input) else {
            return Err(Error::new(
                "find_match",
                400,
                format!(
                    "Unable to find match for dissect pattern: {} against source: {input}",
                    self.pattern
                ),
            )
            .into());
        };
        for (name, value) in fields {
            doc.set(&name, Value::String(value))?;
        }
        Ok(Flow::Continue)
    }
}

#[cfg(test)]
mod tests {
    use crate::processor::tests::run;
    use serde_json::json;

    fn dissect(pattern: &str, input: &str) -> Result<serde_json::Value, String> {
        run(
            json!({"dissect": {"field": "m", "pattern": pattern, "append_separator": " "}}),
            json!({"m": input}),
        )
        .map(|mut out| {
            out.as_object_mut().unwrap().remove("m");
            out
        })
        .map_err(|e| e.reason().to_string())
    }

    #[test]
    fn keys_and_modifiers() {
        assert_eq!(
            dissect(
                "%{a} %{+a} %{?skip} [%{ts}] %{*k}: %{&k}",
                "x y z [t] key: val"
            )
            .unwrap(),
            json!({"a": "x y", "ts": "t", "key": "val"})
        );
        assert_eq!(
            dissect("%{a->} %{b}", "x     y").unwrap(),
            json!({"a": "x", "b": "y"})
        );
        assert_eq!(
            dissect("%{+n/2} %{+n/1}", "second first").unwrap(),
            json!({"n": "first second"})
        );
        assert_eq!(dissect("[%{a}]", "[x]").unwrap(), json!({"a": "x"}));
        assert_eq!(
            dissect("%{a} - %{b}", "nomatch").unwrap_err(),
            "Unable to find match for dissect pattern: %{a} - %{b} against source: nomatch"
        );
    }

    #[test]
    fn a_null_or_non_string_field_is_opensearchs_error() {
        let reason = |m: serde_json::Value| {
            let config = json!({"dissect": {"field": "m", "pattern": "%{a} %{b}"}});
            run(config, json!({"m": m}))
                .unwrap_err()
                .reason()
                .to_string()
        };
        assert_eq!(reason(json!(null)), "field [m] is null, cannot process it.");
        assert_eq!(
            reason(json!(5)),
            "field [m] of type [java.lang.Integer] cannot be cast to [java.lang.String]"
        );
        let skipped = json!({"dissect": {"field": "m", "pattern": "%{a}", "ignore_missing": true}});
        assert_eq!(
            run(skipped, json!({"m": null})).unwrap(),
            json!({"m": null})
        );
    }
}
