//! Converting JSON values to a field's type, with OpenSearch's coercion rules and messages.
//!
//! Numbers may arrive as strings (`"42"`), integers as floats (`1.9` → 1 when `coerce` is on),
//! and each numeric type has its range. `float` and `half_float` values are rounded to their
//! precision when indexed, so that range queries and aggregations see what OpenSearch sees.

use std::net::{IpAddr, Ipv6Addr};

use serde_json::Value;
use tessera_common::{Error, Result};

use crate::field_type::FieldType;

/// A JSON scalar as a finite f64 (numbers and numeric strings).
pub fn to_f64(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    }
    .filter(|f| f.is_finite())
}

pub fn to_bool(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(*b),
        Value::String(s) if s == "true" => Some(true),
        Value::String(s) if s == "false" || s.is_empty() => Some(false),
        _ => None,
    }
}

fn integer_range(field_type: FieldType) -> (i64, i64) {
    match field_type {
        FieldType::Byte => (i8::MIN as i64, i8::MAX as i64),
        FieldType::Short => (i16::MIN as i64, i16::MAX as i64),
        FieldType::Integer => (i32::MIN as i64, i32::MAX as i64),
        _ => (i64::MIN, i64::MAX),
    }
}

/// Converts a value for an integer field (long/integer/short/byte).
pub fn to_integer(value: &Value, field_type: FieldType, coerce: bool) -> Result<i64> {
    let name = field_type.name();
    let (min, max) = integer_range(field_type);
    let out_of_range = |shown: &str| {
        Error::illegal_argument(format!(
            "Value [{shown}] is out of range for {} {name}",
            article(name)
        ))
    };
    let parsed: i64 = match value {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                // JSON integers are read as Java ints for integer/short/byte (Jackson's error
                // beyond that), as longs for long
                if field_type != FieldType::Long && (i < i32::MIN as i64 || i > i32::MAX as i64) {
                    return Err(Error::new(
                        "input_coercion_exception",
                        400,
                        format!(
                            "Numeric value ({i}) out of range of int (-2147483648 - 2147483647)"
                        ),
                    ));
                }
                i
            } else if n.is_u64() {
                return Err(Error::new(
                    "input_coercion_exception",
                    400,
                    format!("Numeric value ({n}) out of range of long (-9223372036854775808 - 9223372036854775807)"),
                ));
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                if !coerce && f.fract() != 0.0 {
                    return Err(Error::illegal_argument(format!(
                        "Value [{f}] has a decimal part"
                    )));
                }
                float_to_integer(f, &n.to_string(), name)?
            }
        }
        Value::String(s) if coerce => {
            let s = s.trim();
            match s.parse::<i64>() {
                Ok(i) => i,
                Err(_) => match s.parse::<f64>() {
                    Ok(f) if f.is_finite() => float_to_integer(f, s, name)?,
                    _ => {
                        if s.chars()
                            .all(|c| c.is_ascii_digit() || c == '-' || c == '+')
                            && !s.is_empty()
                        {
                            return Err(out_of_range(s));
                        }
                        // NumberFormatException, which OpenSearch reports as its parent type
                        return Err(Error::illegal_argument(format!(
                            "For input string: \"{s}\""
                        )));
                    }
                },
            }
        }
        Value::String(s) => {
            return Err(Error::illegal_argument(format!(
                "Value [{s}] is not a number and [coerce] is disabled"
            )))
        }
        Value::Bool(_) | Value::Object(_) | Value::Array(_) | Value::Null => {
            return Err(Error::illegal_argument(format!(
                "Current token ({}) not numeric, can not use numeric value accessors",
                token_name(value)
            )))
        }
    };
    if parsed < min || parsed > max {
        return Err(out_of_range(&parsed.to_string()));
    }
    Ok(parsed)
}

fn float_to_integer(f: f64, shown: &str, name: &str) -> Result<i64> {
    if !f.is_finite() || !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) {
        return Err(Error::illegal_argument(format!(
            "Value [{shown}] is out of range for {} {name}",
            article(name)
        )));
    }
    Ok(f.trunc() as i64)
}

fn article(name: &str) -> &'static str {
    if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

fn token_name(value: &Value) -> &'static str {
    match value {
        Value::Bool(true) => "VALUE_TRUE",
        Value::Bool(false) => "VALUE_FALSE",
        Value::Object(_) => "START_OBJECT",
        Value::Array(_) => "START_ARRAY",
        Value::Null => "VALUE_NULL",
        Value::String(_) => "VALUE_STRING",
        Value::Number(_) => "VALUE_NUMBER",
    }
}

/// Converts a value for a floating-point field, rounded to the type's precision.
pub fn to_float(value: &Value, field_type: FieldType, coerce: bool) -> Result<f64> {
    let name = field_type.name();
    let f = match value {
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Value::String(s) if coerce => s
            .trim()
            .parse::<f64>()
            .map_err(|_| Error::illegal_argument(format!("For input string: \"{s}\"")))?,
        Value::String(s) => {
            return Err(Error::illegal_argument(format!(
                "Value [{s}] is not a number and [coerce] is disabled"
            )))
        }
        other => {
            return Err(Error::illegal_argument(format!(
                "Current token ({}) not numeric, can not use numeric value accessors",
                token_name(other)
            )))
        }
    };
    if !f.is_finite() {
        return Err(Error::illegal_argument(format!(
            "[{name}] supports only finite values, but got [{f}]"
        )));
    }
    round_to_type(f, field_type)
}

/// Rounds to what the type stores: f32 for `float`, IEEE half precision for `half_float`.
pub fn round_to_type(f: f64, field_type: FieldType) -> Result<f64> {
    match field_type {
        FieldType::Float => {
            let r = f as f32;
            if r.is_infinite() {
                return Err(Error::illegal_argument(format!(
                    "[float] supports only finite values, but got [{r}]"
                )));
            }
            Ok(r as f64)
        }
        FieldType::HalfFloat => {
            let r = round_half(f as f32);
            if r.is_infinite() {
                return Err(Error::illegal_argument(format!(
                    "[half_float] supports only finite values, but got [{r}]"
                )));
            }
            Ok(r as f64)
        }
        _ => Ok(f),
    }
}

/// Rounds an f32 to the nearest IEEE 754 half-precision value (ties to even).
pub fn round_half(value: f32) -> f32 {
    if !value.is_finite() || value == 0.0 {
        return value;
    }
    let abs = value.abs();
    if abs >= 65520.0 {
        return f32::INFINITY.copysign(value);
    }
    // spacing of half floats around `abs`: 2^(e-10) for normals, 2^-24 for subnormals
    let exponent = abs.log2().floor() as i32;
    let quantum = 2f32.powi((exponent.max(-14)) - 10);
    let scaled = abs / quantum;
    let rounded = scaled.round_ties_even() * quantum;
    rounded.copysign(value)
}

/// `scaled_float`: OpenSearch stores `Math.round(value * scaling_factor)` as a long.
pub fn to_scaled(value: &Value, factor: f64, coerce: bool) -> Result<i64> {
    let f = to_float(value, FieldType::Double, coerce)?;
    let scaled = (f * factor + 0.5).floor();
    if !scaled.is_finite() || scaled.abs() >= 9.2e18 {
        return Err(Error::illegal_argument(format!(
            "[scaled_float] value [{f}] is out of range"
        )));
    }
    Ok(scaled as i64)
}

pub fn to_boolean(value: &Value) -> Result<bool> {
    to_bool(value).ok_or_else(|| {
        Error::illegal_argument(format!(
            "Failed to parse value [{}] as only [true] or [false] are allowed.",
            crate::mapping::plain(value)
        ))
    })
}

/// Parses an IPv4 or IPv6 address; IPv4 addresses are stored v4-mapped.
pub fn to_ip(value: &Value) -> Result<Ipv6Addr> {
    let text = match value {
        Value::String(s) => s.as_str(),
        other => {
            return Err(Error::illegal_argument(format!(
                "'{}' is not an IP string literal.",
                crate::mapping::plain(other)
            )))
        }
    };
    parse_ip(text)
}

pub fn parse_ip(text: &str) -> Result<Ipv6Addr> {
    match text.trim().parse::<IpAddr>() {
        Ok(IpAddr::V4(v4)) => Ok(v4.to_ipv6_mapped()),
        Ok(IpAddr::V6(v6)) => Ok(v6),
        Err(_) => Err(Error::illegal_argument(format!(
            "'{text}' is not an IP string literal."
        ))),
    }
}

/// Renders a stored address the way OpenSearch does (dotted quad for v4-mapped ones).
pub fn format_ip(ip: Ipv6Addr) -> String {
    match ip.to_ipv4_mapped() {
        Some(v4) => v4.to_string(),
        None => ip.to_string(),
    }
}

/// A JSON scalar as the text a keyword or text field indexes.
pub fn to_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integers_coerce_and_check_ranges() {
        assert_eq!(to_integer(&json!(42), FieldType::Long, true).unwrap(), 42);
        assert_eq!(to_integer(&json!("42"), FieldType::Long, true).unwrap(), 42);
        assert_eq!(
            to_integer(&json!(1.9), FieldType::Integer, true).unwrap(),
            1
        );
        assert_eq!(
            to_integer(&json!("-3.7"), FieldType::Long, true).unwrap(),
            -3
        );
        let e = to_integer(&json!(300), FieldType::Byte, true).unwrap_err();
        assert_eq!(e.reason(), "Value [300] is out of range for a byte");
        let e = to_integer(&json!(3_000_000_000i64), FieldType::Integer, true).unwrap_err();
        assert_eq!(e.kind(), "input_coercion_exception");
        assert_eq!(
            e.reason(),
            "Numeric value (3000000000) out of range of int (-2147483648 - 2147483647)"
        );
        let e = to_integer(&json!("3000000000"), FieldType::Integer, true).unwrap_err();
        assert_eq!(
            e.reason(),
            "Value [3000000000] is out of range for an integer"
        );
        let e = to_integer(&json!("abc"), FieldType::Long, true).unwrap_err();
        assert_eq!(e.reason(), "For input string: \"abc\"");
        assert!(to_integer(&json!("42"), FieldType::Long, false).is_err());
        assert!(to_integer(&json!(true), FieldType::Long, true).is_err());
        assert!(to_integer(&json!(18446744073709551615u64), FieldType::Long, true).is_err());
    }

    #[test]
    fn floats_round_to_their_precision() {
        assert_eq!(to_float(&json!(0.1), FieldType::Double, true).unwrap(), 0.1);
        assert_eq!(
            to_float(&json!(0.1), FieldType::Float, true).unwrap(),
            0.1f32 as f64
        );
        assert_eq!(
            to_float(&json!(0.1), FieldType::HalfFloat, true).unwrap(),
            0.0999755859375
        );
        assert_eq!(
            to_float(&json!(1.5), FieldType::HalfFloat, true).unwrap(),
            1.5
        );
        assert_eq!(
            to_float(&json!(2049), FieldType::HalfFloat, true).unwrap(),
            2048.0
        );
        assert!(to_float(&json!("NaN"), FieldType::Double, true).is_err());
        assert!(to_float(&json!(70000), FieldType::HalfFloat, true).is_err());
        assert_eq!(round_half(6.0e-8), 5.960_464_5e-8);
    }

    #[test]
    fn scaled_floats_round_like_java() {
        assert_eq!(to_scaled(&json!(6.3), 100.0, true).unwrap(), 630);
        assert_eq!(to_scaled(&json!(0.885), 100.0, true).unwrap(), 89);
        assert_eq!(to_scaled(&json!(-1.005), 100.0, true).unwrap(), -100);
    }

    #[test]
    fn booleans_ips_and_geo_points() {
        assert!(to_boolean(&json!("true")).unwrap());
        assert!(!to_boolean(&json!("")).unwrap());
        assert_eq!(
            to_boolean(&json!("yes")).unwrap_err().reason(),
            "Failed to parse value [yes] as only [true] or [false] are allowed."
        );
        assert_eq!(format_ip(to_ip(&json!("10.1.2.3")).unwrap()), "10.1.2.3");
        assert_eq!(format_ip(to_ip(&json!("::1")).unwrap()), "::1");
        assert!(to_ip(&json!("300.1.1.1")).is_err());
    }
}
