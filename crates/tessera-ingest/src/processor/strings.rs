//! String processors: `lowercase`, `uppercase`, `trim` (a string, or each string of a
//! list), `split` (a string into a list on a regex), `join` (a list into a string) and `gsub`
//! (regex replacement). Each reads `field`, writes `target_field` (by default `field`) and
//! has `ignore_missing`.

use regex::Regex;
use serde_json::Value;
use tessera_common::{Error, Result};

use super::{Flow, Outcome, Processor};
use crate::config::Config;
use crate::document::{java_string, java_type, not_a_string, IngestDocument};
use crate::pipeline::Exec;

/// The field options the string processors share.
#[derive(Debug)]
struct Target {
    field: String,
    target: String,
    ignore_missing: bool,
}

impl Target {
    fn parse(config: &mut Config) -> Result<Target> {
        let field = config.required_string("field")?;
        let target = config
            .optional_string("target_field")?
            .unwrap_or_else(|| field.clone());
        Ok(Target {
            field,
            target,
            ignore_missing: config.bool("ignore_missing", false)?,
        })
    }

    /// The field's value; `None` to skip (missing or null with `ignore_missing`).
    fn read(&self, doc: &IngestDocument) -> Result<Option<Value>> {
        Ok(doc
            .non_null_field(&self.field, self.ignore_missing)?
            .cloned())
    }

    /// Rewrites the field's string (or each string of its list) with `apply` into the target
    /// field; any other value is OpenSearch's cast error.
    fn map_strings(&self, doc: &mut IngestDocument, apply: impl Fn(&str) -> String) -> Outcome {
        let Some(value) = self.read(doc)? else {
            return Ok(Flow::Continue);
        };
        let field = &self.field;
        let out = match &value {
            Value::String(s) => Value::String(apply(s)),
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|item| match item {
                        Value::String(s) => Ok(Value::String(apply(s))),
                        other => Err(Error::illegal_argument(format!(
                            "value [{}] of type [{}] in list field [{field}] cannot be cast to [java.lang.String]",
                            java_string(other),
                            java_type(other)
                        ))),
                    })
                    .collect::<Result<_>>()?,
            ),
            other => return Err(not_a_string(field, other).into()),
        };
        doc.set(&self.target, out)?;
        Ok(Flow::Continue)
    }
}

/// `lowercase`, `uppercase`, `trim`.
#[derive(Debug)]
pub struct Case {
    kind: CaseKind,
    target: Target,
}

#[derive(Clone, Copy, Debug)]
enum CaseKind {
    Lower,
    Upper,
    Trim,
}

impl Case {
    pub fn parse(config: &mut Config) -> Result<Case> {
        let kind = match config.kind() {
            "lowercase" => CaseKind::Lower,
            "uppercase" => CaseKind::Upper,
            _ => CaseKind::Trim,
        };
        Ok(Case {
            kind,
            target: Target::parse(config)?,
        })
    }

    fn apply(&self, s: &str) -> String {
        match self.kind {
            CaseKind::Lower => s.to_lowercase(),
            CaseKind::Upper => s.to_uppercase(),
            // Java's trim: code points up to U+0020
            CaseKind::Trim => s.trim_matches(|c: char| c <= ' ').to_string(),
        }
    }
}

impl Processor for Case {
    fn execute(&self, doc: &mut IngestDocument, _: &mut Exec<'_>) -> Outcome {
        self.target.map_strings(doc, |s| self.apply(s))
    }
}

fn compile(config: &Config, property: &str, pattern: &str) -> Result<Regex> {
    Regex::new(pattern)
        .map_err(|e| config.error(property, &format!("Invalid regex pattern [{pattern}]: {e}")))
}

/// `split`: a string into a list on `separator` (a regex); trailing empty strings are
/// dropped unless `preserve_trailing`, as Java's `String.split` does.
#[derive(Debug)]
pub struct Split {
    target: Target,
    separator: Regex,
    preserve_trailing: bool,
}

impl Split {
    pub fn parse(config: &mut Config) -> Result<Split> {
        let target = Target::parse(config)?;
        let separator = config.required_string("separator")?;
        Ok(Split {
            target,
            separator: compile(config, "separator", &separator)?,
            preserve_trailing: config.bool("preserve_trailing", false)?,
        })
    }
}

/// Java's `String.split(regex, limit)` with limit 0 (`trailing: false`) or -1.
pub fn java_split(separator: &Regex, s: &str, trailing: bool) -> Vec<String> {
    if s.is_empty() {
        return vec![String::new()];
    }
    let mut parts = Vec::new();
    let mut last = 0;
    for m in separator.find_iter(s) {
        if m.end() == 0 {
            // a zero-width match at the start splits nothing off
            continue;
        }
        if m.start() == m.end() && m.start() >= s.len() {
            break;
        }
        parts.push(s[last..m.start()].to_string());
        last = m.end();
    }
    parts.push(s[last..].to_string());
    if !trailing {
        while parts.len() > 1 && parts.last().is_some_and(String::is_empty) {
            parts.pop();
        }
        if parts.len() == 1 && parts[0].is_empty() {
            parts.clear();
        }
    }
    parts
}

impl Processor for Split {
    fn execute(&self, doc: &mut IngestDocument, _: &mut Exec<'_>) -> Outcome {
        let Some(value) = self.target.read(doc)? else {
            return Ok(Flow::Continue);
        };
        let Value::String(s) = &value else {
            return Err(not_a_string(&self.target.field, &value).into());
        };
        let parts = java_split(&self.separator, s, self.preserve_trailing);
        doc.set(
            &self.target.target,
            Value::Array(parts.into_iter().map(Value::String).collect()),
        )?;
        Ok(Flow::Continue)
    }
}

/// `join`: a list into one string with `separator`.
#[derive(Debug)]
pub struct Join {
    field: String,
    target: String,
    separator: String,
}

impl Join {
    pub fn parse(config: &mut Config) -> Result<Join> {
        let field = config.required_string("field")?;
        let separator = config.required_string("separator")?;
        let target = config
            .optional_string("target_field")?
            .unwrap_or_else(|| field.clone());
        Ok(Join {
            field,
            target,
            separator,
        })
    }
}

impl Processor for Join {
    fn execute(&self, doc: &mut IngestDocument, _: &mut Exec<'_>) -> Outcome {
        let value = doc.get(&self.field)?;
        let Value::Array(items) = value else {
            return Err(Error::illegal_argument(format!(
                "field [{}] of type [{}] cannot be cast to [java.util.List]",
                self.field,
                java_type(value)
            ))
            .into());
        };
        let joined: Vec<String> = items.iter().map(java_string).collect();
        let joined = joined.join(&self.separator);
        doc.set(&self.target, Value::String(joined))?;
        Ok(Flow::Continue)
    }
}

/// `gsub`: every match of `pattern` replaced (Java's `$1` group references).
#[derive(Debug)]
pub struct Gsub {
    target: Target,
    pattern: Regex,
    replacement: String,
}

impl Gsub {
    pub fn parse(config: &mut Config) -> Result<Gsub> {
        let target = Target::parse(config)?;
        let pattern = config.required_string("pattern")?;
        let replacement = config.required_string("replacement")?;
        Ok(Gsub {
            target,
            pattern: compile(config, "pattern", &pattern)?,
            replacement: tessera_common::java_replacement::to_rust(&replacement),
        })
    }

    fn apply(&self, s: &str) -> String {
        self.pattern
            .replace_all(s, self.replacement.as_str())
            .into_owned()
    }
}

impl Processor for Gsub {
    fn execute(&self, doc: &mut IngestDocument, _: &mut Exec<'_>) -> Outcome {
        self.target.map_strings(doc, |s| self.apply(s))
    }
}

#[cfg(test)]
mod tests {
    use crate::processor::tests::run;
    use serde_json::json;

    #[test]
    fn case_and_trim_work_on_strings_and_lists() {
        let out = run(
            json!({"lowercase": {"field": "a"}}),
            json!({"a": ["X", "Y"]}),
        )
        .unwrap();
        assert_eq!(out["a"], json!(["x", "y"]));
        let out = run(
            json!({"uppercase": {"field": "a", "target_field": "b"}}),
            json!({"a": "x"}),
        )
        .unwrap();
        assert_eq!(out, json!({"a": "x", "b": "X"}));
        let out = run(json!({"trim": {"field": "a"}}), json!({"a": "  x "})).unwrap();
        assert_eq!(out["a"], "x");
        let e = run(json!({"lowercase": {"field": "n"}}), json!({"n": 1})).unwrap_err();
        assert_eq!(
            e.reason(),
            "field [n] of type [java.lang.Integer] cannot be cast to [java.lang.String]"
        );
        let e = run(json!({"lowercase": {"field": "n"}}), json!({"n": [1, "A"]})).unwrap_err();
        assert_eq!(
            e.reason(),
            "value [1] of type [java.lang.Integer] in list field [n] cannot be cast to [java.lang.String]"
        );
        assert!(run(
            json!({"trim": {"field": "zz", "ignore_missing": true}}),
            json!({})
        )
        .is_ok());
    }

    #[test]
    fn split_join_and_gsub() {
        let out = run(
            json!({"split": {"field": "s", "separator": ","}}),
            json!({"s": "a,b,,"}),
        )
        .unwrap();
        assert_eq!(out["s"], json!(["a", "b"]));
        let out = run(
            json!({"split": {"field": "s", "separator": ",", "preserve_trailing": true}}),
            json!({"s": "a,b,,"}),
        )
        .unwrap();
        assert_eq!(out["s"], json!(["a", "b", "", ""]));
        let out = run(
            json!({"join": {"field": "j", "separator": "-"}}),
            json!({"j": [1, "x"]}),
        )
        .unwrap();
        assert_eq!(out["j"], "1-x");
        let out = run(
            json!({"gsub": {"field": "g", "pattern": "(\\d)", "replacement": "<$1>"}}),
            json!({"g": "a1b22"}),
        )
        .unwrap();
        assert_eq!(out["g"], "a<1>b<2><2>");
    }
}
