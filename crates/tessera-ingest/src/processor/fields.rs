//! Processors that add, move and delete fields: `set`, `remove`, `rename`, `append`. Their
//! field names are templates (`"field": "{{service}}.count"`), as in OpenSearch.

use serde_json::Value;
use tessera_common::Error;

use super::{Flow, Outcome, Processor};
use crate::config::Config;
use crate::document::IngestDocument;
use crate::pipeline::Exec;
use crate::template::{Template, ValueSource};

/// `set`: `field` to `value`; `override: false` keeps a non-null value; `ignore_empty_value`
/// skips a null or empty value.
#[derive(Debug)]
pub struct Set {
    field: Template,
    value: ValueSource,
    override_existing: bool,
    ignore_empty_value: bool,
}

impl Set {
    pub fn parse(config: &mut Config) -> tessera_common::Result<Set> {
        Ok(Set {
            field: config.template("field")?,
            value: config.value_source("value")?,
            override_existing: config.bool("override", true)?,
            ignore_empty_value: config.bool("ignore_empty_value", false)?,
        })
    }
}

impl Processor for Set {
    fn execute(&self, doc: &mut IngestDocument, _: &mut Exec<'_>) -> Outcome {
        let field = self.field.render(doc);
        if !self.override_existing && doc.get(&field).is_ok_and(|v| !v.is_null()) {
            return Ok(Flow::Continue);
        }
        let value = self.value.render(doc);
        // as in OpenSearch, a template rendering nothing is empty; a literal "" is a value
        let empty = value.is_null()
            || (matches!(self.value, ValueSource::Template(_)) && value.as_str() == Some(""));
        if self.ignore_empty_value && empty {
            return Ok(Flow::Continue);
        }
        doc.set(&field, value)?;
        Ok(Flow::Continue)
    }
}

/// `remove`: one field or several, or (`exclude_field`) every source field but those.
#[derive(Debug)]
pub struct Remove {
    fields: Vec<Template>,
    /// The top-level source fields to keep; `None`: remove `fields`.
    keep: Option<Vec<String>>,
    ignore_missing: bool,
}

impl Remove {
    pub fn parse(config: &mut Config) -> tessera_common::Result<Remove> {
        let fields = config.optional_string_or_strings("field")?;
        let keep = config.optional_string_or_strings("exclude_field")?;
        if fields.is_some() == keep.is_some() {
            return Err(config.error("field", "either field or exclude_field must be set"));
        }
        let fields = fields
            .unwrap_or_default()
            .iter()
            .map(|f| config.compile("field", f))
            .collect::<tessera_common::Result<_>>()?;
        Ok(Remove {
            fields,
            keep,
            ignore_missing: config.bool("ignore_missing", false)?,
        })
    }
}

impl Processor for Remove {
    fn execute(&self, doc: &mut IngestDocument, _: &mut Exec<'_>) -> Outcome {
        if let Some(keep) = &self.keep {
            doc.ctx.retain(|key, _| {
                crate::document::METADATA.contains(&key.as_str()) || keep.contains(key)
            });
            return Ok(Flow::Continue);
        }
        for field in &self.fields {
            let field = field.render(doc);
            if field == "_index" {
                return Err(
                    Error::illegal_argument("cannot remove metadata field [_index]").into(),
                );
            }
            if !doc.has(&field) {
                if self.ignore_missing {
                    continue;
                }
                return Err(
                    Error::illegal_argument(format!("field [{field}] doesn't exist")).into(),
                );
            }
            doc.remove(&field)?;
        }
        Ok(Flow::Continue)
    }
}

/// `rename`: `field` to `target_field`, which must not exist unless `override_target`.
#[derive(Debug)]
pub struct Rename {
    field: Template,
    target: Template,
    ignore_missing: bool,
    override_target: bool,
}

impl Rename {
    pub fn parse(config: &mut Config) -> tessera_common::Result<Rename> {
        Ok(Rename {
            field: config.template("field")?,
            target: config.template("target_field")?,
            ignore_missing: config.bool("ignore_missing", false)?,
            override_target: config.bool("override_target", false)?,
        })
    }
}

impl Processor for Rename {
    fn execute(&self, doc: &mut IngestDocument, _: &mut Exec<'_>) -> Outcome {
        let field = self.field.render(doc);
        let target = self.target.render(doc);
        if !doc.has(&field) {
            if self.ignore_missing {
                return Ok(Flow::Continue);
            }
            return Err(Error::illegal_argument(format!("field [{field}] doesn't exist")).into());
        }
        if doc.has(&target) && !self.override_target {
            return Err(Error::illegal_argument(format!("field [{target}] already exists")).into());
        }
        let value = doc.remove(&field)?;
        if let Err(e) = doc.set(&target, value.clone()) {
            // put the field back, as OpenSearch does when the target cannot be set
            let _ = doc.set(&field, value);
            return Err(e.into());
        }
        Ok(Flow::Continue)
    }
}

/// `append`: values added to a field, which becomes a list.
#[derive(Debug)]
pub struct Append {
    field: Template,
    value: ValueSource,
    allow_duplicates: bool,
}

impl Append {
    pub fn parse(config: &mut Config) -> tessera_common::Result<Append> {
        Ok(Append {
            field: config.template("field")?,
            value: config.value_source("value")?,
            allow_duplicates: config.bool("allow_duplicates", true)?,
        })
    }
}

impl Processor for Append {
    fn execute(&self, doc: &mut IngestDocument, _: &mut Exec<'_>) -> Outcome {
        let field = self.field.render(doc);
        let values = match self.value.render(doc) {
            Value::Array(items) => items,
            single => vec![single],
        };
        doc.append(&field, values, self.allow_duplicates)?;
        Ok(Flow::Continue)
    }
}

#[cfg(test)]
mod tests {
    use crate::processor::tests::{parse_error, run};
    use serde_json::json;

    #[test]
    fn set_templates_values_and_respects_override() {
        let out = run(
            json!({"set": {"field": "greeting", "value": "hi {{name}}"}}),
            json!({"name": "bob"}),
        )
        .unwrap();
        assert_eq!(out["greeting"], "hi bob");
        let out = run(
            json!({"set": {"field": "a", "value": 2, "override": false}}),
            json!({"a": 1}),
        )
        .unwrap();
        assert_eq!(out["a"], 1);
        let out = run(
            json!({"set": {"field": "{{k}}.v", "value": [1, "{{k}}"]}}),
            json!({"k": "x"}),
        )
        .unwrap();
        assert_eq!(out["x"], json!({"v": [1, "x"]}));
        let e = parse_error(json!({"set": {"value": 1}}));
        assert_eq!(e.reason(), "[field] required property is missing");
    }

    #[test]
    fn remove_rename_and_append() {
        let out = run(
            json!({"remove": {"field": ["a", "b"]}}),
            json!({"a": 1, "b": 2, "c": 3}),
        )
        .unwrap();
        assert_eq!(out, json!({"c": 3}));
        let e = run(json!({"remove": {"field": "zz"}}), json!({})).unwrap_err();
        assert_eq!(e.reason(), "field [zz] doesn't exist");
        assert!(run(
            json!({"remove": {"field": "zz", "ignore_missing": true}}),
            json!({})
        )
        .is_ok());
        let out = run(
            json!({"remove": {"exclude_field": ["b", "c.d"]}}),
            json!({"a": 1, "b": 2, "c": {"d": 1}}),
        )
        .unwrap();
        assert_eq!(out, json!({"b": 2}));
        let e = parse_error(json!({"remove": {}}));
        assert_eq!(
            e.reason(),
            "[field] either field or exclude_field must be set"
        );
        let out = run(
            json!({"rename": {"field": "a", "target_field": "b.c"}}),
            json!({"a": 1}),
        )
        .unwrap();
        assert_eq!(out, json!({"b": {"c": 1}}));
        let e = run(
            json!({"rename": {"field": "a", "target_field": "b"}}),
            json!({"a": 1, "b": 2}),
        )
        .unwrap_err();
        assert_eq!(e.reason(), "field [b] already exists");
        let out = run(
            json!({"append": {"field": "tags", "value": ["x", "y"], "allow_duplicates": false}}),
            json!({"tags": "x"}),
        )
        .unwrap();
        assert_eq!(out["tags"], json!(["x", "y"]));
    }
}
