//! `match_all` and `match_none`.

use serde_json::Value;
use tessera_common::Result;

use super::{as_f32, object, unknown};
use crate::ast::QueryAst;

pub fn parse_match_all(body: &Value) -> Result<QueryAst> {
    let mut boost = 1.0;
    for (key, value) in object("match_all", body)? {
        match key.as_str() {
            "boost" => boost = as_f32("match_all", key, value)?,
            "_name" => {}
            _ => return Err(unknown("match_all", key)),
        }
    }
    Ok(QueryAst::MatchAll { boost })
}

pub fn parse_match_none(body: &Value) -> Result<QueryAst> {
    for (key, _) in object("match_none", body)? {
        if key != "boost" && key != "_name" {
            return Err(unknown("match_none", key));
        }
    }
    Ok(QueryAst::MatchNone)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses() {
        assert_eq!(
            parse_match_all(&json!({"boost": 2})).unwrap(),
            QueryAst::MatchAll { boost: 2.0 }
        );
        assert!(parse_match_all(&json!({"x": 1})).is_err());
        assert!(parse_match_all(&json!(1)).is_err());
        assert_eq!(parse_match_none(&json!({})).unwrap(), QueryAst::MatchNone);
    }
}
