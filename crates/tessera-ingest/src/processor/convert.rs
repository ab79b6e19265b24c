//! `convert`: a field's value (or each value of a list) to `integer`, `long`, `float`,
//! `double`, `boolean`, `string`, `ip` (checked, kept as a string) or `auto` (the first of
//! integer, long, double, boolean that reads the string; else the string). Values are read
//! through their Java string form, so `1.5` does not convert to an integer.

use std::net::IpAddr;

use serde_json::{Number, Value};
use tessera_common::{Error, Result};

use super::{Flow, Outcome, Processor};
use crate::config::Config;
use crate::document::{java_string, IngestDocument};
use crate::pipeline::Exec;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Type {
    Integer,
    Long,
    Float,
    Double,
    Boolean,
    String,
    Ip,
    Auto,
}

impl Type {
    fn name(self) -> &'static str {
        match self {
            Type::Integer => "integer",
            Type::Long => "long",
            Type::Float => "float",
            Type::Double => "double",
            Type::Boolean => "boolean",
            Type::String => "string",
            Type::Ip => "ip",
            Type::Auto => "auto",
        }
    }
}

#[derive(Debug)]
pub struct Convert {
    field: String,
    target: String,
    kind: Type,
    ignore_missing: bool,
}

impl Convert {
    pub fn parse(config: &mut Config) -> Result<Convert> {
        let field = config.required_string("field")?;
        let type_name = config.required_string("type")?;
        let kind = match type_name.to_ascii_lowercase().as_str() {
            "integer" => Type::Integer,
            "long" => Type::Long,
            "float" => Type::Float,
            "double" => Type::Double,
            "boolean" => Type::Boolean,
            "string" => Type::String,
            "ip" => Type::Ip,
            "auto" => Type::Auto,
            _ => {
                return Err(config.error(
                    "type",
                    &format!("type [{type_name}] not supported, cannot convert field."),
                ))
            }
        };
        let target = config
            .optional_string("target_field")?
            .unwrap_or_else(|| field.clone());
        Ok(Convert {
            field,
            target,
            kind,
            ignore_missing: config.bool("ignore_missing", false)?,
        })
    }
}

fn number_format(text: &str) -> Error {
    Error::new(
        "number_format_exception",
        400,
        format!("For input string: \"{text}\""),
    )
}

/// Java's `Integer.parseInt` / `Long.parseLong`, and `decode` for `0x` prefixes.
fn parse_integer(text: &str) -> Option<i64> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let magnitude = if let Some(hex) = digits.strip_prefix("0x").or(digits.strip_prefix("0X")) {
        i64::from_str_radix(hex, 16).ok()?
    } else {
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse::<i64>().ok()?
    };
    Some(if negative { -magnitude } else { magnitude })
}

fn parse_float(text: &str) -> Option<f64> {
    let trimmed = text.trim();
    let valid = !trimmed.is_empty()
        && trimmed
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'));
    valid.then(|| trimmed.parse::<f64>().ok()).flatten()
}

/// A Java `float` as JSON: its shortest decimal form (`1.1`, not `1.100000023841858`).
pub fn float32_value(f: f32) -> Option<Value> {
    f.to_string().parse::<f64>().ok().and_then(float_value)
}

fn float_value(f: f64) -> Option<Value> {
    Number::from_f64(f).map(Value::Number)
}

fn convert(kind: Type, value: &Value) -> Result<Value> {
    let text = java_string(value);
    let fail = |cause: Option<Error>| {
        let error =
            Error::illegal_argument(format!("unable to convert [{text}] to {}", kind.name()));
        match cause {
            Some(cause) => error.caused_by(cause),
            None => error,
        }
    };
    match kind {
        Type::Integer => parse_integer(&text)
            .filter(|i| i32::try_from(*i).is_ok())
            .map(Value::from)
            .ok_or_else(|| fail(Some(number_format(&text)))),
        Type::Long => parse_integer(&text)
            .map(Value::from)
            .ok_or_else(|| fail(Some(number_format(&text)))),
        Type::Float => parse_float(&text)
            .and_then(|f| float32_value(f as f32))
            .ok_or_else(|| fail(Some(number_format(&text)))),
        Type::Double => parse_float(&text)
            .and_then(float_value)
            .ok_or_else(|| fail(Some(number_format(&text)))),
        Type::Boolean => match text.to_ascii_lowercase().as_str() {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err(Error::illegal_argument(format!(
                "[{text}] is not a boolean value, cannot convert to boolean"
            ))),
        },
        Type::String => Ok(Value::String(text)),
        Type::Ip => match text.parse::<IpAddr>() {
            Ok(_) => Ok(Value::String(text)),
            Err(_) => Err(fail(Some(Error::illegal_argument(format!(
                "'{text}' is not an IP string literal."
            ))))),
        },
        Type::Auto => {
            let Value::String(s) = value else {
                return Ok(value.clone());
            };
            if let Some(i) = parse_integer(s) {
                return Ok(Value::from(i));
            }
            if let Some(f) = parse_float(s).and_then(float_value) {
                return Ok(f);
            }
            Ok(match s.to_ascii_lowercase().as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => value.clone(),
            })
        }
    }
}

impl Processor for Convert {
    fn execute(&self, doc: &mut IngestDocument, _: &mut Exec<'_>) -> Outcome {
        let value = match doc.get(&self.field) {
            Err(_) | Ok(Value::Null) if self.ignore_missing => return Ok(Flow::Continue),
            Err(e) => return Err(e.into()),
            Ok(Value::Null) => {
                return Err(Error::illegal_argument(format!(
                    "Field [{}] is null, cannot be converted to type [{}]",
                    self.field,
                    self.kind.name()
                ))
                .into())
            }
            Ok(value) => value,
        };
        let converted = match value {
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|item| convert(self.kind, item))
                    .collect::<Result<_>>()?,
            ),
            single => convert(self.kind, single)?,
        };
        doc.set(&self.target, converted)?;
        Ok(Flow::Continue)
    }
}

#[cfg(test)]
mod tests {
    use crate::processor::tests::{parse_error, run};
    use serde_json::json;

    fn convert(kind: &str, value: serde_json::Value) -> Result<serde_json::Value, String> {
        run(
            json!({"convert": {"field": "a", "type": kind}}),
            json!({ "a": value }),
        )
        .map(|out| out["a"].clone())
        .map_err(|e| e.reason().to_string())
    }

    #[test]
    fn values_convert_as_opensearch_converts_them() {
        assert_eq!(
            convert("integer", json!(["1", "0x1F"])).unwrap(),
            json!([1, 31])
        );
        assert_eq!(convert("long", json!("7")).unwrap(), json!(7));
        assert_eq!(convert("float", json!("1")).unwrap(), json!(1.0));
        assert_eq!(convert("float", json!("1.1")).unwrap(), json!(1.1));
        assert_eq!(convert("double", json!("2.5")).unwrap(), json!(2.5));
        assert_eq!(convert("boolean", json!("TRUE")).unwrap(), json!(true));
        assert_eq!(convert("string", json!(1.0)).unwrap(), json!("1.0"));
        assert_eq!(convert("auto", json!("12.5")).unwrap(), json!(12.5));
        assert_eq!(convert("auto", json!("x")).unwrap(), json!("x"));
        assert_eq!(convert("ip", json!("::1")).unwrap(), json!("::1"));
        assert_eq!(
            convert("integer", json!("x")).unwrap_err(),
            "unable to convert [x] to integer"
        );
        assert_eq!(
            convert("boolean", json!("yes")).unwrap_err(),
            "[yes] is not a boolean value, cannot convert to boolean"
        );
        let e = parse_error(json!({"convert": {"field": "a", "type": "bogus"}}));
        assert_eq!(
            e.reason(),
            "[type] type [bogus] not supported, cannot convert field."
        );
    }
}
