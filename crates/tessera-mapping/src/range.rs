//! Range field types (`integer_range`, `long_range`, `float_range`, `double_range`,
//! `date_range`, `ip_range`): parsing a document's ranges the way OpenSearch's
//! `RangeFieldMapper` does, and the value arithmetic that indexing and queries share.
//!
//! A range is stored as two columns of the same type, `<path>#from` and `<path>#to`, holding
//! the inclusive bounds (`gt`/`lt` are turned into inclusive bounds by stepping to the next
//! representable value, as OpenSearch does before encoding). A document with several ranges
//! has several values in each column, pairwise in the order given (tantivy keeps a document's
//! numeric values in insertion order), so the i-th `from` and the i-th `to` form one range.

use std::net::Ipv6Addr;

use serde_json::Value;
use tessera_common::{Error, Result};
use tessera_date::{parse_date_math, DateFormat};

use crate::field_type::FieldType;
use crate::mapping::plain;
use crate::values;

/// What a range field's bounds are.
#[derive(Clone, Debug, PartialEq)]
pub enum RangeKind {
    Integer,
    Long,
    Float,
    Double,
    /// Epoch milliseconds, parsed with the field's format.
    Date(DateFormat),
    Ip,
}

/// One range with inclusive bounds, in the columns' representation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RangeBounds {
    /// integer, long and date ranges.
    I64(i64, i64),
    /// float (rounded to f32) and double ranges.
    F64(f64, f64),
    Ip(Ipv6Addr, Ipv6Addr),
}

/// The column holding one bound (`from` or `to`) of a range field.
pub fn range_column(path: &str, bound: &str) -> String {
    format!("{path}#{bound}")
}

impl RangeKind {
    pub fn field_type(&self) -> FieldType {
        match self {
            RangeKind::Integer => FieldType::IntegerRange,
            RangeKind::Long => FieldType::LongRange,
            RangeKind::Float => FieldType::FloatRange,
            RangeKind::Double => FieldType::DoubleRange,
            RangeKind::Date(_) => FieldType::DateRange,
            RangeKind::Ip => FieldType::IpRange,
        }
    }

    /// Whether the bounds are i64 (integer, long, date), f64 (float, double) or ips.
    pub fn is_i64(&self) -> bool {
        matches!(
            self,
            RangeKind::Integer | RangeKind::Long | RangeKind::Date(_)
        )
    }

    /// The widest range, what an omitted bound stands for.
    pub fn full(&self) -> RangeBounds {
        match self {
            RangeKind::Integer => RangeBounds::I64(i32::MIN as i64, i32::MAX as i64),
            RangeKind::Long | RangeKind::Date(_) => RangeBounds::I64(i64::MIN, i64::MAX),
            RangeKind::Float | RangeKind::Double => {
                RangeBounds::F64(f64::NEG_INFINITY, f64::INFINITY)
            }
            RangeKind::Ip => RangeBounds::Ip(Ipv6Addr::UNSPECIFIED, Ipv6Addr::from(u128::MAX)),
        }
    }

    /// The next value up (`gt` → inclusive), wrapping like Java's int and long arithmetic.
    pub fn next_up_i64(&self, value: i64) -> i64 {
        match self {
            RangeKind::Integer => (value as i32).wrapping_add(1) as i64,
            _ => value.wrapping_add(1),
        }
    }

    /// The next value down (`lt` → inclusive).
    pub fn next_down_i64(&self, value: i64) -> i64 {
        match self {
            RangeKind::Integer => (value as i32).wrapping_sub(1) as i64,
            _ => value.wrapping_sub(1),
        }
    }

    pub fn next_up_f64(&self, value: f64) -> f64 {
        match self {
            RangeKind::Float => (value as f32).next_up() as f64,
            _ => value.next_up(),
        }
    }

    pub fn next_down_f64(&self, value: f64) -> f64 {
        match self {
            RangeKind::Float => (value as f32).next_down() as f64,
            _ => value.next_down(),
        }
    }

    /// A bound written the way OpenSearch's messages write it (Java's `toString`).
    pub fn display_f64(&self, value: f64) -> String {
        match self {
            RangeKind::Float => java_float(value as f32),
            _ => tessera_common::settings::java_double(value),
        }
    }
}

/// Java's `Float.toString`: `1.0`, `1.1000001`, `1.0E-5`.
pub fn java_float(value: f32) -> String {
    if value.is_nan() {
        return "NaN".into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let magnitude = value.abs();
    if value == 0.0 || (1e-3..1e7).contains(&magnitude) {
        return format!("{value:?}");
    }
    let text = format!("{value:e}");
    let (mantissa, exponent) = text.split_once('e').expect("exponent form");
    let mantissa = if mantissa.contains('.') {
        mantissa.to_string()
    } else {
        format!("{mantissa}.0")
    };
    format!("{mantissa}E{exponent}")
}

/// Steps an address up or down by one, as Lucene's `InetAddressPoint.nextUp`/`nextDown`.
pub fn step_ip(ip: Ipv6Addr, up: bool) -> Result<Ipv6Addr> {
    let value = u128::from(ip);
    let stepped = if up {
        value.checked_add(1)
    } else {
        value.checked_sub(1)
    };
    stepped.map(Ipv6Addr::from).ok_or_else(|| {
        Error::new(
            "arithmetic_exception",
            400,
            format!(
                "Overflow: there is no {} InetAddress than {}",
                if up { "greater" } else { "smaller" },
                values::format_ip(ip)
            ),
        )
    })
}

/// `10.0.0.0/8` (or an IPv6 prefix) as an inclusive address range.
pub fn parse_cidr(text: &str) -> Result<(Ipv6Addr, Ipv6Addr)> {
    let Some((address, prefix)) = text.split_once('/') else {
        return Err(Error::illegal_argument(format!(
            "Expected [ip/prefix] but was [{text}]"
        )));
    };
    let ip = values::parse_ip(address)?;
    let is_v4 = !address.contains(':');
    let max = if is_v4 { 32 } else { 128 };
    let bits: u32 = match prefix.parse() {
        Ok(bits) if bits <= max => bits,
        _ => {
            return Err(Error::illegal_argument(format!(
                "Illegal prefix length [{prefix}] in [{text}]. Must be 0-32 for IPv4 ranges, 0-128 for IPv6 ranges"
            )))
        }
    };
    let bits = if is_v4 { bits + 96 } else { bits };
    let mask = if bits == 0 {
        0
    } else {
        u128::MAX << (128 - bits)
    };
    let value = u128::from(ip);
    Ok((Ipv6Addr::from(value & mask), Ipv6Addr::from(value | !mask)))
}

/// A range that could not be parsed: the cause and the value OpenSearch previews in its
/// message (the JSON token the parser stood on; `null` after the closing brace).
pub struct RangeError {
    pub cause: Error,
    pub preview: Value,
}

impl RangeError {
    fn at(preview: &Value, cause: Error) -> RangeError {
        RangeError {
            cause,
            preview: preview.clone(),
        }
    }
}

/// Parses one range of a document: `{"gte"|"gt": from, "lte"|"lt": to}` (either bound may be
/// omitted or null), or a CIDR string for `ip_range`. `name` is the field's own name (the last
/// part of its path), as OpenSearch's messages use it.
pub fn parse_range(
    kind: &RangeKind,
    path: &str,
    name: &str,
    value: &Value,
    coerce: bool,
) -> std::result::Result<RangeBounds, RangeError> {
    let object = match value {
        Value::Object(object) => object,
        Value::String(text) if *kind == RangeKind::Ip => {
            let (from, to) = parse_cidr(text).map_err(|e| RangeError::at(value, e))?;
            return Ok(RangeBounds::Ip(from, to));
        }
        other => {
            return Err(RangeError::at(
                other,
                Error::mapper_parsing(format!(
                    "error parsing field [{path}], expected an object but got {name}"
                )),
            ))
        }
    };
    let mut bounds = kind.full();
    for (key, bound) in object {
        let (lower, inclusive) = match key.as_str() {
            "gt" => (true, false),
            "gte" => (true, true),
            "lt" => (false, false),
            "lte" => (false, true),
            _ => {
                return Err(RangeError::at(
                    bound,
                    Error::mapper_parsing(format!(
                        "error parsing field [{path}], with unknown parameter [{key}]"
                    )),
                ))
            }
        };
        if bound.is_null() {
            // the bound keeps its default (the type's minimum or maximum)
            continue;
        }
        let fail = |cause: Error| RangeError::at(bound, cause);
        match (&mut bounds, kind) {
            (RangeBounds::I64(from, to), _) => {
                let parsed = parse_i64(kind, bound, coerce).map_err(fail)?;
                if lower {
                    *from = if inclusive {
                        parsed
                    } else {
                        kind.next_up_i64(parsed)
                    };
                } else {
                    *to = if inclusive {
                        parsed
                    } else {
                        kind.next_down_i64(parsed)
                    };
                }
            }
            (RangeBounds::F64(from, to), _) => {
                let field_type = if *kind == RangeKind::Float {
                    FieldType::Float
                } else {
                    FieldType::Double
                };
                let parsed = values::to_float(bound, field_type, coerce).map_err(fail)?;
                if lower {
                    *from = if inclusive {
                        parsed
                    } else {
                        kind.next_up_f64(parsed)
                    };
                } else {
                    *to = if inclusive {
                        parsed
                    } else {
                        kind.next_down_f64(parsed)
                    };
                }
            }
            (RangeBounds::Ip(from, to), _) => {
                let parsed = values::parse_ip(&plain(bound)).map_err(fail)?;
                if lower {
                    *from = if inclusive {
                        parsed
                    } else {
                        step_ip(parsed, true).map_err(fail)?
                    };
                } else {
                    *to = if inclusive {
                        parsed
                    } else {
                        step_ip(parsed, false).map_err(fail)?
                    };
                }
            }
        }
    }
    let reversed = match bounds {
        RangeBounds::I64(from, to) if from > to => Some(format!(
            "min value ({from}) is greater than max value ({to})"
        )),
        RangeBounds::F64(from, to) if from > to => Some(format!(
            "min value ({}) is greater than max value ({})",
            kind.display_f64(from),
            kind.display_f64(to)
        )),
        RangeBounds::Ip(from, to) if from > to => {
            Some("min value cannot be greater than max value for InetAddressRange field".into())
        }
        _ => None,
    };
    match reversed {
        Some(message) => Err(RangeError::at(
            &Value::Null,
            Error::illegal_argument(message),
        )),
        None => Ok(bounds),
    }
}

/// One bound of an integer, long or date range in a document.
fn parse_i64(kind: &RangeKind, value: &Value, coerce: bool) -> Result<i64> {
    match kind {
        RangeKind::Integer => values::to_integer(value, FieldType::Integer, coerce),
        RangeKind::Long => values::to_integer(value, FieldType::Long, coerce),
        RangeKind::Date(format) => parse_date(format, &plain(value)),
        RangeKind::Float | RangeKind::Double | RangeKind::Ip => {
            unreachable!("not an i64 range")
        }
    }
}

/// A date bound of a document: the field's format with date math, but no `now`.
pub fn parse_date(format: &DateFormat, text: &str) -> Result<i64> {
    if text.starts_with("now") {
        return Err(Error::new(
            "parse_exception",
            400,
            "could not read the current timestamp",
        )
        .caused_by(Error::illegal_argument("now is not used at indexing time")));
    }
    parse_date_math(text, format, 0, None, false).map_err(|e| date_error(&e.message))
}

/// OpenSearch's `parse_exception` for a date it could not read, around the
/// `illegal_argument_exception` its parser threw.
pub fn date_error(message: &str) -> Error {
    let cause = message
        .split_once(": [")
        .and_then(|(_, inner)| inner.strip_suffix(']'))
        .map(|inner| Error::illegal_argument(inner.to_string()));
    let error = Error::new("parse_exception", 400, message.to_string());
    match cause {
        Some(cause) => error.caused_by(cause),
        None => error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(kind: &RangeKind, value: Value) -> std::result::Result<RangeBounds, String> {
        parse_range(kind, "f", "f", &value, true)
            .map_err(|e| format!("{} | {}", e.cause.reason(), plain(&e.preview)))
    }

    #[test]
    fn numeric_bounds_become_inclusive() {
        let k = RangeKind::Integer;
        assert_eq!(
            parse(&k, json!({"gte": 1, "lte": 5})),
            Ok(RangeBounds::I64(1, 5))
        );
        assert_eq!(
            parse(&k, json!({"gt": 1, "lt": 5})),
            Ok(RangeBounds::I64(2, 4))
        );
        assert_eq!(
            parse(&k, json!({"gte": 1.7, "lte": "3"})),
            Ok(RangeBounds::I64(1, 3))
        );
        assert_eq!(
            parse(&k, json!({})),
            Ok(RangeBounds::I64(i32::MIN as i64, i32::MAX as i64))
        );
        assert_eq!(
            parse(&k, json!({"gte": null, "lte": 4})),
            Ok(RangeBounds::I64(i32::MIN as i64, 4))
        );
        // Java's int arithmetic wraps
        assert_eq!(
            parse(&k, json!({"gt": 2147483647})),
            Ok(RangeBounds::I64(i32::MIN as i64, i32::MAX as i64))
        );
        assert_eq!(
            parse(&RangeKind::Long, json!({"gt": i64::MAX})),
            Ok(RangeBounds::I64(i64::MIN, i64::MAX))
        );
        assert_eq!(
            parse(&RangeKind::Double, json!({"gte": -1.5, "lt": 3})),
            Ok(RangeBounds::F64(-1.5, 3f64.next_down()))
        );
        assert_eq!(
            parse(&RangeKind::Float, json!({"gte": 1.1})),
            Ok(RangeBounds::F64(1.1f32 as f64, f64::INFINITY))
        );
    }

    #[test]
    fn errors_match_opensearch() {
        let k = RangeKind::Integer;
        assert_eq!(
            parse(&k, json!({"gte": 5, "lte": 1})).unwrap_err(),
            "min value (5) is greater than max value (1) | null"
        );
        assert_eq!(
            parse(&k, json!({"gt": 5, "lt": 6})).unwrap_err(),
            "min value (6) is greater than max value (5) | null"
        );
        assert_eq!(
            parse(&k, json!({"from": 1})).unwrap_err(),
            "error parsing field [f], with unknown parameter [from] | 1"
        );
        assert_eq!(
            parse(&k, json!(5)).unwrap_err(),
            "error parsing field [f], expected an object but got f | 5"
        );
        assert_eq!(
            parse(&k, json!({"gte": 3000000000i64})).unwrap_err(),
            "Numeric value (3000000000) out of range of int (-2147483648 - 2147483647) | 3000000000"
        );
        assert_eq!(
            parse(&RangeKind::Float, json!({"gt": 1.1, "lt": 1.1000001})).unwrap_err(),
            "min value (1.1000001) is greater than max value (1.1) | null"
        );
        assert_eq!(
            parse(&RangeKind::Double, json!({"gte": 2.5, "lte": 1})).unwrap_err(),
            "min value (2.5) is greater than max value (1.0) | null"
        );
        assert_eq!(
            parse(&RangeKind::Double, json!({"gte": "NaN"})).unwrap_err(),
            "[double] supports only finite values, but got [NaN] | NaN"
        );
        assert_eq!(
            parse(&RangeKind::Ip, json!("10.0.0.1")).unwrap_err(),
            "Expected [ip/prefix] but was [10.0.0.1] | 10.0.0.1"
        );
        assert_eq!(
            parse(&RangeKind::Ip, json!("10.0.0.0/33")).unwrap_err(),
            "Illegal prefix length [33] in [10.0.0.0/33]. Must be 0-32 for IPv4 ranges, 0-128 for IPv6 ranges | 10.0.0.0/33"
        );
        assert_eq!(
            parse(
                &RangeKind::Ip,
                json!({"gte": "10.0.0.9", "lte": "10.0.0.1"})
            )
            .unwrap_err(),
            "min value cannot be greater than max value for InetAddressRange field | null"
        );
        assert_eq!(
            parse(&RangeKind::Ip, json!({"gte": "x"})).unwrap_err(),
            "'x' is not an IP string literal. | x"
        );
    }

    #[test]
    fn ips_and_dates() {
        let ip = |s: &str| values::parse_ip(s).unwrap();
        assert_eq!(
            parse(&RangeKind::Ip, json!("192.168.0.0/16")),
            Ok(RangeBounds::Ip(ip("192.168.0.0"), ip("192.168.255.255")))
        );
        assert_eq!(
            parse(&RangeKind::Ip, json!({"gte": "::1", "lt": "::3"})),
            Ok(RangeBounds::Ip(ip("::1"), ip("::2")))
        );
        let day = RangeKind::Date(DateFormat::parse("yyyy-MM-dd").unwrap());
        assert_eq!(
            parse(&day, json!({"gte": "2020-01-01", "lte": "2020-01-10"})),
            Ok(RangeBounds::I64(1_577_836_800_000, 1_578_614_400_000))
        );
        // `gt` steps one millisecond past the parsed instant, without rounding
        assert_eq!(
            parse(&day, json!({"gt": "2020-01-01"})),
            Ok(RangeBounds::I64(1_577_836_800_001, i64::MAX))
        );
        let e = parse_range(&day, "t", "t", &json!({"gte": "bad"}), true).unwrap_err();
        assert_eq!(e.cause.kind(), "parse_exception");
        assert_eq!(
            e.cause.reason(),
            "failed to parse date field [bad] with format [yyyy-MM-dd]: [failed to parse date field [bad] with format [yyyy-MM-dd]]"
        );
        let e = parse_range(&day, "t", "t", &json!({"gte": "now"}), true).unwrap_err();
        assert_eq!(e.cause.reason(), "could not read the current timestamp");
        let default =
            RangeKind::Date(DateFormat::parse(crate::mapping::DEFAULT_DATE_FORMAT).unwrap());
        assert_eq!(
            parse(&default, json!({"gte": 1577836800000i64})),
            Ok(RangeBounds::I64(1_577_836_800_000, i64::MAX))
        );
    }

    #[test]
    fn java_number_forms() {
        assert_eq!(java_float(1.0), "1.0");
        assert_eq!(java_float(1.1000001), "1.1000001");
        assert_eq!(java_float(1e-5), "1.0E-5");
        assert_eq!(RangeKind::Double.display_f64(2.5), "2.5");
    }
}
