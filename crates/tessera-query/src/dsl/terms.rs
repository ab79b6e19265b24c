//! `terms`: any of several exact values.

use serde_json::Value;
use tessera_common::{Error, Result};

use super::{as_f32, as_scalar, object};
use crate::ast::QueryAst;

pub fn parse(body: &Value) -> Result<QueryAst> {
    let mut boost = 1.0;
    let mut found: Option<(String, Vec<Value>)> = None;
    for (key, value) in object("terms", body)? {
        match key.as_str() {
            "boost" => boost = as_f32("terms", key, value)?,
            "_name" => {}
            field => {
                let Value::Array(items) = value else {
                    if value.is_object() {
                        return Err(Error::not_supported("[terms] lookup"));
                    }
                    return Err(Error::parsing(format!(
                        "[terms] query does not support [{field}]"
                    )));
                };
                if let Some((first, _)) = &found {
                    return Err(Error::parsing(format!(
                        "[terms] query does not support multiple fields, found [{first}] and [{field}]"
                    )));
                }
                let values = items
                    .iter()
                    .map(|v| as_scalar("terms", field, v))
                    .collect::<Result<Vec<_>>>()?;
                found = Some((field.to_string(), values));
            }
        }
    }
    let (field, values) = found
        .ok_or_else(|| Error::parsing("[terms] query requires a field with an array of values"))?;
    Ok(QueryAst::Terms {
        field,
        values,
        boost,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_values_and_rejects_lookup() {
        let q = parse(&json!({"tags": ["a", "b"], "boost": 2})).unwrap();
        assert_eq!(
            q,
            QueryAst::Terms {
                field: "tags".into(),
                values: vec![json!("a"), json!("b")],
                boost: 2.0
            }
        );
        assert!(parse(&json!({"tags": {"index": "x", "id": "1", "path": "p"}})).is_err());
        assert!(parse(&json!({"a": ["x"], "b": ["y"]})).is_err());
        assert!(parse(&json!({})).is_err());
    }
}
