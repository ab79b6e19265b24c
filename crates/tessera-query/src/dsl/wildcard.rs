//! `wildcard`: `*` and `?` patterns over terms.

use serde_json::Value;
use tessera_common::Result;

use super::prefix::parse_pattern;
use crate::ast::QueryAst;

pub fn parse(body: &Value) -> Result<QueryAst> {
    let p = parse_pattern("wildcard", body, &["value", "wildcard"], &[])?;
    Ok(QueryAst::Wildcard {
        field: p.field,
        pattern: p.value,
        case_insensitive: p.case_insensitive,
        boost: p.boost,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_both_value_keys() {
        let a = parse(&json!({"f": {"value": "ki*y"}})).unwrap();
        let b = parse(&json!({"f": {"wildcard": "ki*y"}})).unwrap();
        assert_eq!(a, b);
    }
}
