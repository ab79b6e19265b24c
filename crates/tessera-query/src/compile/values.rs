//! Turning query values (JSON scalars) into the exact values a field stores.

use std::net::Ipv6Addr;

use serde_json::Value;
use tessera_common::{Error, Result};
use tessera_date::{parse_date_math, DateFormat, TimeZone};
use tessera_mapping::values as coerce;
use tessera_mapping::{FieldType, LeafField, LeafKind};

use super::CompileContext;

/// One value to match exactly, in the field's stored form.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Exact {
    Str(String),
    I64(i64),
    F64(f64),
    Bool(bool),
    Ip(Ipv6Addr),
    /// Dates match the whole precision of the given value (`2015-01-01` is a day).
    I64Range(i64, i64),
    /// An IP prefix (`10.0.0.0/8`).
    IpRange(Ipv6Addr, Ipv6Addr),
    /// For a range field: the ranges holding the value (the bounds of a date's precision).
    Range(tessera_mapping::range::RangeBounds),
    /// The value cannot occur in this field (e.g. `5.5` for a `long`).
    Impossible,
}

pub(crate) fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn failed(ctx: &CompileContext, cause: Error) -> Error {
    ctx.error(format!("failed to create query: {}", cause.reason()))
        .caused_by(cause)
}

/// The exact stored value for `value` in `leaf`, with OpenSearch's coercions.
pub(crate) fn exact(ctx: &CompileContext, leaf: &LeafField, value: &Value) -> Result<Exact> {
    Ok(match &leaf.kind {
        LeafKind::Text { .. } => Exact::Str(text_of(value)),
        LeafKind::Keyword { lowercase, .. } => {
            let text = text_of(value);
            Exact::Str(if *lowercase {
                text.to_lowercase()
            } else {
                text
            })
        }
        LeafKind::Integer => {
            let f = coerce::to_f64(value).ok_or_else(|| failed(ctx, number_error(value)))?;
            if f.fract() != 0.0 {
                return Ok(Exact::Impossible);
            }
            let n = match value {
                Value::Number(n) if n.is_i64() => n.as_i64().unwrap_or_default(),
                Value::String(s) => s.trim().parse::<i64>().unwrap_or(f as i64),
                _ => f as i64,
            };
            coerce::to_integer(&Value::from(n), leaf.field_type, true)
                .map_err(|e| failed(ctx, e))?;
            Exact::I64(n)
        }
        LeafKind::Float => {
            let f = coerce::to_f64(value).ok_or_else(|| failed(ctx, number_error(value)))?;
            let rounded = coerce::round_to_type(f, leaf.field_type).map_err(|e| failed(ctx, e))?;
            Exact::F64(rounded)
        }
        LeafKind::ScaledFloat { factor } => {
            let f = coerce::to_f64(value).ok_or_else(|| failed(ctx, number_error(value)))?;
            Exact::I64((f * factor + 0.5).floor() as i64)
        }
        LeafKind::Date { format } => {
            let bounds = DateBoundContext {
                format,
                zone: None,
                now: ctx.now_millis,
            };
            let low = parse_date_bound(&bounds, value, false).map_err(|e| failed(ctx, e))?;
            let high = parse_date_bound(&bounds, value, true).map_err(|e| failed(ctx, e))?;
            Exact::I64Range(low, high)
        }
        LeafKind::Boolean => match coerce::to_bool(value) {
            Some(b) => Exact::Bool(b),
            None => {
                return Err(failed(
                    ctx,
                    Error::illegal_argument(format!(
                        "Can't parse boolean value [{}], expected [true] or [false]",
                        text_of(value)
                    )),
                ))
            }
        },
        LeafKind::Ip => {
            let text = text_of(value);
            match text.split_once('/') {
                Some((addr, prefix)) => {
                    let (low, high) = cidr(&text, addr, prefix).map_err(|e| failed(ctx, e))?;
                    Exact::IpRange(low, high)
                }
                None => Exact::Ip(coerce::parse_ip(&text).map_err(|e| failed(ctx, e))?),
            }
        }
        LeafKind::GeoPoint { .. } => {
            return Err(ctx.error(format!(
            "Geo fields do not support exact searching, use dedicated geo queries instead: [{}]",
            leaf.path
        )))
        }
        LeafKind::KnnVector(_) => {
            return Err(ctx.error(format!(
                "KNN vector do not support exact searching, use KNN queries instead: [{}]",
                leaf.path
            )))
        }
        LeafKind::Completion(_) | LeafKind::Percolator => {
            return Err(super::term_level::unsearchable_field(ctx, leaf))
        }
        LeafKind::Range { .. } => Exact::Range(super::range_field::value_bounds(ctx, leaf, value)?),
    })
}

fn number_error(value: &Value) -> Error {
    Error::new(
        "number_format_exception",
        400,
        format!("For input string: \"{}\"", text_of(value)),
    )
}

fn cidr(text: &str, addr: &str, prefix: &str) -> Result<(Ipv6Addr, Ipv6Addr)> {
    let ip = coerce::parse_ip(addr)?;
    let is_v4 = ip.to_ipv4_mapped().is_some() && addr.contains('.');
    let bits: u32 = prefix
        .parse()
        .ok()
        .filter(|b| *b <= if is_v4 { 32 } else { 128 })
        .ok_or_else(|| {
            Error::illegal_argument(format!("invalid IP address with prefix length [{text}]"))
        })?;
    let bits = if is_v4 { bits + 96 } else { bits };
    let value = u128::from(ip);
    let mask = if bits == 0 {
        0
    } else {
        u128::MAX << (128 - bits)
    };
    Ok((Ipv6Addr::from(value & mask), Ipv6Addr::from(value | !mask)))
}

/// How date bounds are read: the format (the query's or the field's), the zone, and "now".
pub struct DateBoundContext<'a> {
    pub format: &'a DateFormat,
    pub zone: Option<&'a TimeZone>,
    pub now: i64,
}

/// Parses one date bound (date, date math, or epoch millis), rounding up when asked.
pub fn parse_date_bound(ctx: &DateBoundContext, value: &Value, round_up: bool) -> Result<i64> {
    let text = text_of(value);
    match parse_date_math(&text, ctx.format, ctx.now, ctx.zone, round_up) {
        Ok(millis) => Ok(millis),
        Err(e) => match value {
            Value::Number(n) if n.is_i64() => Ok(n.as_i64().unwrap_or_default()),
            _ => {
                // `e` reads "failed to parse date field [..] with format [..]: [<cause>]", as
                // OpenSearch's parse_exception around its illegal_argument_exception does.
                let cause = e
                    .message
                    .split_once(": [")
                    .and_then(|(_, inner)| inner.strip_suffix(']'))
                    .map(|inner| Error::illegal_argument(inner.to_string()));
                let error = Error::new("parse_exception", 400, e.message.clone());
                Err(match cause {
                    Some(cause) => error.caused_by(cause),
                    None => error,
                })
            }
        },
    }
}

/// A numeric value for a range bound (numbers or numeric strings).
pub(crate) fn bound_f64(ctx: &CompileContext, value: &Value) -> Result<f64> {
    coerce::to_f64(value).ok_or_else(|| failed(ctx, number_error(value)))
}

/// Integer bounds as Lucene computes them: `gte 1.5` starts at 2, `lt 3` ends at 2.
pub(crate) fn integer_bounds(
    ctx: &CompileContext,
    lower: Option<(&Value, bool)>,
    upper: Option<(&Value, bool)>,
    field_type: FieldType,
) -> Result<Option<(i64, i64)>> {
    let (min, max) = match field_type {
        FieldType::Byte => (i8::MIN as i64, i8::MAX as i64),
        FieldType::Short => (i16::MIN as i64, i16::MAX as i64),
        FieldType::Integer => (i32::MIN as i64, i32::MAX as i64),
        _ => (i64::MIN, i64::MAX),
    };
    let exact_i64 = |value: &Value| -> Option<i64> {
        match value {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.trim().parse::<i64>().ok(),
            _ => None,
        }
    };
    let low = match lower {
        None => min,
        Some((value, inclusive)) => match exact_i64(value) {
            Some(n) if inclusive => n,
            Some(n) if n == i64::MAX => return Ok(None),
            Some(n) => n + 1,
            None => {
                let f = bound_f64(ctx, value)?;
                if f.fract() == 0.0 && !inclusive {
                    f + 1.0
                } else {
                    f.ceil()
                }
                .clamp(i64::MIN as f64, i64::MAX as f64) as i64
            }
        },
    };
    let high = match upper {
        None => max,
        Some((value, inclusive)) => match exact_i64(value) {
            Some(n) if inclusive => n,
            Some(n) if n == i64::MIN => return Ok(None),
            Some(n) => n - 1,
            None => {
                let f = bound_f64(ctx, value)?;
                if f.fract() == 0.0 && !inclusive {
                    f - 1.0
                } else {
                    f.floor()
                }
                .clamp(i64::MIN as f64, i64::MAX as f64) as i64
            }
        },
    };
    Ok((low <= high).then_some((low, high)))
}

/// `scaled_float` bounds: OpenSearch scales the bound, then rounds inward.
pub(crate) fn scaled_bounds(
    ctx: &CompileContext,
    lower: Option<(&Value, bool)>,
    upper: Option<(&Value, bool)>,
    factor: f64,
) -> Result<Option<(i64, i64)>> {
    let low = match lower {
        None => i64::MIN,
        Some((value, inclusive)) => {
            let scaled = bound_f64(ctx, value)? * factor;
            let scaled = if inclusive { scaled } else { scaled.next_up() };
            scaled.ceil() as i64
        }
    };
    let high = match upper {
        None => i64::MAX,
        Some((value, inclusive)) => {
            let scaled = bound_f64(ctx, value)? * factor;
            let scaled = if inclusive {
                scaled
            } else {
                scaled.next_down()
            };
            scaled.floor() as i64
        }
    };
    Ok((low <= high).then_some((low, high)))
}

/// Resolves the date format and zone of a range: the query's, else the field's.
pub(crate) fn date_format_for(
    ctx: &CompileContext,
    field_format: &DateFormat,
    query_format: Option<&str>,
) -> Result<DateFormat> {
    match query_format {
        Some(spec) => DateFormat::parse(spec).map_err(|e| {
            ctx.error(format!(
                "failed to create query: Invalid format: [{spec}]: {}",
                e.message
            ))
        }),
        None => Ok(field_format.clone()),
    }
}

pub(crate) fn time_zone(ctx: &CompileContext, zone: Option<&str>) -> Result<Option<TimeZone>> {
    zone.map(|id| {
        TimeZone::parse(id).map_err(|e| ctx.error(format!("failed to create query: {}", e.message)))
    })
    .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cidr_ranges() {
        let (low, high) = cidr("10.1.0.0/16", "10.1.0.0", "16").unwrap();
        assert_eq!(coerce::format_ip(low), "10.1.0.0");
        assert_eq!(coerce::format_ip(high), "10.1.255.255");
        assert!(cidr("10.0.0.0/40", "10.0.0.0", "40").is_err());
        let _ = json!(null);
    }
}
