//! `json`: parses a string field as JSON into `target_field` (by default the field itself),
//! or merges an object into the document's root with `add_to_root`.

use serde_json::Value;
use tessera_common::{Error, Result};

use super::{Flow, Outcome, Processor};
use crate::config::Config;
use crate::document::IngestDocument;
use crate::pipeline::Exec;

#[derive(Debug)]
pub struct JsonProcessor {
    field: String,
    target: Option<String>,
    add_to_root: bool,
}

impl JsonProcessor {
    pub fn parse(config: &mut Config) -> Result<JsonProcessor> {
        let field = config.required_string("field")?;
        let target = config.optional_string("target_field")?;
        let add_to_root = config.bool("add_to_root", false)?;
        if add_to_root && target.is_some() {
            return Err(config.error(
                "target_field",
                "Cannot set a target field while also setting `add_to_root` to true",
            ));
        }
        Ok(JsonProcessor {
            field,
            target,
            add_to_root,
        })
    }
}

impl Processor for JsonProcessor {
    fn execute(&self, doc: &mut IngestDocument, _: &mut Exec<'_>) -> Outcome {
        let value = doc.get(&self.field)?;
        let parsed = match value {
            Value::String(text) => serde_json::from_str::<Value>(text).map_err(|e| {
                Error::illegal_argument(format!("Unrecognized token or malformed JSON: {e}"))
            })?,
            // a value that is not a string is kept as it is, as OpenSearch's parser reads it
            other => other.clone(),
        };
        if self.add_to_root {
            let Value::Object(map) = parsed else {
                return Err(Error::illegal_argument(
                    "cannot add non-map fields to root of document",
                )
                .into());
            };
            for (key, value) in map {
                doc.ctx.insert(key, value);
            }
        } else {
            let target = self.target.as_deref().unwrap_or(&self.field);
            doc.set(target, parsed)?;
        }
        Ok(Flow::Continue)
    }
}

#[cfg(test)]
mod tests {
    use crate::processor::tests::run;
    use serde_json::json;

    #[test]
    fn strings_parse_into_a_field_or_the_root() {
        let out = run(
            json!({"json": {"field": "j"}}),
            json!({"j": "{\"k\":[1,2]}"}),
        )
        .unwrap();
        assert_eq!(out["j"], json!({"k": [1, 2]}));
        let out = run(
            json!({"json": {"field": "j", "add_to_root": true}}),
            json!({"j": "{\"r\":1}"}),
        )
        .unwrap();
        assert_eq!(out["r"], 1);
        assert!(run(json!({"json": {"field": "j"}}), json!({"j": "{nope"})).is_err());
    }
}
