//! `prefix`: terms starting with a value.

use serde_json::Value;
use tessera_common::{Error, Result};

use super::{as_bool, as_f32, as_string, parse_rewrite, plain, single_field, unknown, Rewrite};
use crate::ast::QueryAst;

/// Shared by `prefix`, `wildcard` and `regexp`: `{"field": "v"}` or `{"field": {"value": …}}`.
pub(crate) struct TermPattern {
    pub field: String,
    pub value: String,
    pub boost: f32,
    pub case_insensitive: bool,
    pub extra: Vec<(String, Value)>,
}

pub(crate) fn parse_pattern(
    query: &str,
    body: &Value,
    value_keys: &[&str],
    extra_keys: &[&str],
) -> Result<TermPattern> {
    let (field, spec, outer_boost) = single_field(query, body)?;
    let mut pattern = TermPattern {
        field: field.clone(),
        value: String::new(),
        boost: outer_boost.unwrap_or(1.0),
        case_insensitive: false,
        extra: Vec::new(),
    };
    match spec {
        Value::Object(options) => {
            let mut value = None;
            for (key, v) in options {
                match key.as_str() {
                    k if value_keys.contains(&k) => value = Some(as_string(query, key, v)?),
                    "boost" => pattern.boost = as_f32(query, key, v)?,
                    "case_insensitive" => pattern.case_insensitive = as_bool(query, key, v)?,
                    "rewrite" => {
                        // these queries score a constant, as OpenSearch's default method does
                        if parse_rewrite(query, key, v)? != Rewrite::Constant {
                            return Err(Error::not_supported(&format!(
                                "[rewrite] [{}] in the [{query}] query",
                                plain(v)
                            )));
                        }
                    }
                    "_name" => {}
                    k if extra_keys.contains(&k) => pattern.extra.push((key.clone(), v.clone())),
                    _ => return Err(unknown(query, key)),
                }
            }
            pattern.value = value
                .ok_or_else(|| Error::parsing(format!("[{query}] query requires a [value]")))?;
        }
        other => pattern.value = as_string(query, field, other)?,
    }
    Ok(pattern)
}

pub fn parse(body: &Value) -> Result<QueryAst> {
    let p = parse_pattern("prefix", body, &["value", "prefix"], &[])?;
    Ok(QueryAst::Prefix {
        field: p.field,
        value: p.value,
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
        assert_eq!(
            parse(&json!({"user": {"value": "ki", "case_insensitive": true}})).unwrap(),
            QueryAst::Prefix {
                field: "user".into(),
                value: "ki".into(),
                case_insensitive: true,
                boost: 1.0
            }
        );
        assert_eq!(
            parse(&json!({"user": "ki"})).unwrap(),
            QueryAst::Prefix {
                field: "user".into(),
                value: "ki".into(),
                case_insensitive: false,
                boost: 1.0
            }
        );
        assert!(parse(&json!({"user": {"value": "ki", "x": 1}})).is_err());
    }
}
