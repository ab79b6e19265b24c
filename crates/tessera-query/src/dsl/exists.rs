//! `exists`: documents with at least one indexed value for a field.

use serde_json::Value;
use tessera_common::{Error, Result};

use super::{as_f32, as_string, object, unknown};
use crate::ast::QueryAst;

pub fn parse(body: &Value) -> Result<QueryAst> {
    let mut field = None;
    let mut boost = 1.0;
    for (key, value) in object("exists", body)? {
        match key.as_str() {
            "field" => field = Some(as_string("exists", key, value)?),
            "boost" => boost = as_f32("exists", key, value)?,
            "_name" => {}
            _ => return Err(unknown("exists", key)),
        }
    }
    let field = field.ok_or_else(|| Error::parsing("[exists] must be provided with a [field]"))?;
    Ok(QueryAst::Exists { field, boost })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses() {
        assert_eq!(
            parse(&json!({"field": "a"})).unwrap(),
            QueryAst::Exists {
                field: "a".into(),
                boost: 1.0
            }
        );
        assert!(parse(&json!({})).is_err());
        assert!(parse(&json!({"field": "a", "x": 1})).is_err());
    }
}
