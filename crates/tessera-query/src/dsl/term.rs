//! `term`: one exact value, not analyzed.

use serde_json::Value;
use tessera_common::Result;

use super::{as_bool, as_f32, as_scalar, single_field, unknown};
use crate::ast::QueryAst;

pub fn parse(body: &Value) -> Result<QueryAst> {
    let (field, spec, outer_boost) = single_field("term", body)?;
    let mut boost = outer_boost.unwrap_or(1.0);
    let mut case_insensitive = false;
    let value = match spec {
        Value::Object(options) => {
            let mut value = None;
            for (key, v) in options {
                match key.as_str() {
                    "value" => value = Some(as_scalar("term", key, v)?),
                    "boost" => boost = as_f32("term", key, v)?,
                    "case_insensitive" => case_insensitive = as_bool("term", key, v)?,
                    "_name" => {}
                    _ => return Err(unknown("term", key)),
                }
            }
            value
                .ok_or_else(|| tessera_common::Error::parsing("[term] query requires a [value]"))?
        }
        other => as_scalar("term", field, other)?,
    };
    Ok(QueryAst::Term {
        field: field.clone(),
        value,
        boost,
        case_insensitive,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn short_and_long_forms() {
        let short = parse(&json!({"status": "active"})).unwrap();
        let long = parse(&json!({"status": {"value": "active", "boost": 1.0}})).unwrap();
        assert_eq!(short, long);
        assert!(matches!(
            parse(&json!({"n": {"value": 5, "case_insensitive": true}})).unwrap(),
            QueryAst::Term {
                case_insensitive: true,
                ..
            }
        ));
        assert_eq!(
            parse(&json!({"s": {"value": "a", "bogus": 1}}))
                .unwrap_err()
                .reason(),
            "[term] query does not support [bogus]"
        );
        assert!(parse(&json!({"a": 1, "b": 2}))
            .unwrap_err()
            .reason()
            .contains("doesn't support multiple fields"));
        assert!(parse(&json!({"a": {"boost": 2}})).is_err());
        assert!(parse(&json!({"a": [1, 2]})).is_err());
    }
}
