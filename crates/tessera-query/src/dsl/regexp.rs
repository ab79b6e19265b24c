//! `regexp`: a regular expression over whole terms.

use serde_json::Value;
use tessera_common::{Error, Result};

use super::prefix::parse_pattern;
use crate::ast::QueryAst;

pub fn parse(body: &Value) -> Result<QueryAst> {
    let p = parse_pattern(
        "regexp",
        body,
        &["value"],
        &["flags", "flags_value", "max_determinized_states"],
    )?;
    for (key, value) in &p.extra {
        if key == "flags" && value.as_str().is_some_and(|f| f != "ALL" && f != "NONE") {
            return Err(Error::not_supported("[regexp] flags other than ALL"));
        }
    }
    Ok(QueryAst::Regexp {
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
    fn parses() {
        assert!(matches!(
            parse(&json!({"f": {"value": "k.*y", "flags": "ALL"}})).unwrap(),
            QueryAst::Regexp { .. }
        ));
        assert!(parse(&json!({"f": {"value": "k.*y", "flags": "INTERSECTION"}})).is_err());
    }
}
