//! `ids`: documents by `_id`.

use serde_json::Value;
use tessera_common::{Error, Result};

use super::{as_f32, as_string, object, unknown};
use crate::ast::QueryAst;

pub fn parse(body: &Value) -> Result<QueryAst> {
    let mut values = Vec::new();
    let mut boost = 1.0;
    for (key, value) in object("ids", body)? {
        match key.as_str() {
            "values" => {
                let Value::Array(items) = value else {
                    return Err(Error::parsing(
                        "[ids] failed to parse field [values]: expected an array",
                    ));
                };
                for item in items {
                    values.push(as_string("ids", key, item)?);
                }
            }
            "boost" => boost = as_f32("ids", key, value)?,
            "type" | "_name" => {}
            _ => return Err(unknown("ids", key)),
        }
    }
    Ok(QueryAst::Ids { values, boost })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses() {
        assert_eq!(
            parse(&json!({"values": ["1", 2]})).unwrap(),
            QueryAst::Ids {
                values: vec!["1".into(), "2".into()],
                boost: 1.0
            }
        );
        assert!(parse(&json!({"values": "1"})).is_err());
    }
}
