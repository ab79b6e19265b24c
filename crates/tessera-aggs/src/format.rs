//! How keys and values are shown: `key_as_string` / `value_as_string` for dates, booleans and
//! ips, decided on the shard (which knows the field) and carried in the intermediate result.

use serde::{Deserialize, Serialize};
use tessera_common::{Error, Result};
use tessera_date::{DateFormat, TimeZone};

use crate::values::{NumericKind, ValueSource};

/// The display format of a numeric value.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum ValueFormat {
    /// Plain numbers, no `*_as_string`.
    #[default]
    Raw,
    /// Epoch millis shown with a date format in a time zone.
    Date {
        format: String,
        zone: Option<String>,
    },
    /// 0/1 shown as `false`/`true`.
    Boolean,
}

impl ValueFormat {
    /// The format for values of `source`, honouring the aggregation's `format` and
    /// `time_zone` parameters.
    pub fn for_source(
        source: &ValueSource,
        format: Option<&str>,
        zone: Option<&str>,
    ) -> Result<ValueFormat> {
        match source.shown_as() {
            Some(NumericKind::Date(field_format)) => {
                let spec = match format {
                    Some(spec) => {
                        DateFormat::parse(spec).map_err(|e| {
                            Error::illegal_argument(format!(
                                "Invalid format: [{spec}]: {}",
                                e.message
                            ))
                        })?;
                        spec.to_string()
                    }
                    None => field_format.spec().to_string(),
                };
                Ok(ValueFormat::Date {
                    format: spec,
                    zone: zone.map(String::from),
                })
            }
            Some(NumericKind::Boolean) if format.is_none() => Ok(ValueFormat::Boolean),
            _ => match format {
                None => Ok(ValueFormat::Raw),
                Some(spec) => Err(Error::not_supported(&format!(
                    "a numeric [format] ([{spec}]) in aggregations"
                ))),
            },
        }
    }

    /// The string form of `value`, when this format has one.
    pub fn as_string(&self, value: f64) -> Option<String> {
        match self {
            ValueFormat::Raw => None,
            ValueFormat::Boolean => Some(if value != 0.0 { "true" } else { "false" }.to_string()),
            ValueFormat::Date { format, zone } => {
                let format = DateFormat::parse(format).ok()?;
                let zone = zone.as_deref().and_then(|z| TimeZone::parse(z).ok());
                Some(format.format_millis(value as i64, zone.as_ref()))
            }
        }
    }

    /// A formatter that parses the date format once, for rendering many keys.
    pub fn formatter(&self) -> Formatter {
        match self {
            ValueFormat::Raw => Formatter::Raw,
            ValueFormat::Boolean => Formatter::Boolean,
            ValueFormat::Date { format, zone } => match DateFormat::parse(format) {
                Ok(format) => Formatter::Date(
                    format,
                    zone.as_deref().and_then(|z| TimeZone::parse(z).ok()),
                ),
                Err(_) => Formatter::Raw,
            },
        }
    }

    /// The first non-raw format of several partial results (unmapped shards report raw).
    pub fn merge<'a>(formats: impl IntoIterator<Item = &'a ValueFormat>) -> ValueFormat {
        formats
            .into_iter()
            .find(|f| **f != ValueFormat::Raw)
            .cloned()
            .unwrap_or_default()
    }
}

/// A [`ValueFormat`] ready to format many values.
pub enum Formatter {
    Raw,
    Boolean,
    Date(DateFormat, Option<TimeZone>),
}

impl Formatter {
    /// The `*_as_string` of a value that OpenSearch renders with `DocValueFormat.format(double)`
    /// (stats-style multi-value metrics): booleans come out as JSON booleans there, not text.
    pub fn as_json(&self, value: f64) -> Option<serde_json::Value> {
        match self {
            Formatter::Boolean => Some(serde_json::Value::Bool(value != 0.0)),
            other => other.as_string(value).map(serde_json::Value::String),
        }
    }

    pub fn as_string(&self, value: f64) -> Option<String> {
        match self {
            Formatter::Raw => None,
            Formatter::Boolean => Some(if value != 0.0 { "true" } else { "false" }.to_string()),
            Formatter::Date(format, zone) => {
                Some(format.format_millis(value as i64, zone.as_ref()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_booleans_and_numbers() {
        let date = ValueSource::Numeric {
            path: "d".into(),
            kind: NumericKind::Date(DateFormat::default_format()),
        };
        let f = ValueFormat::for_source(&date, None, None).unwrap();
        assert_eq!(
            f.as_string(1_420_070_400_000.0).unwrap(),
            "2015-01-01T00:00:00.000Z"
        );
        let f = ValueFormat::for_source(&date, Some("yyyy-MM-dd"), None).unwrap();
        assert_eq!(
            f.formatter().as_string(1_420_070_400_000.0).unwrap(),
            "2015-01-01"
        );
        let b = ValueSource::Numeric {
            path: "b".into(),
            kind: NumericKind::Boolean,
        };
        assert_eq!(
            ValueFormat::for_source(&b, None, None)
                .unwrap()
                .as_string(1.0),
            Some("true".into())
        );
        let n = ValueSource::Numeric {
            path: "n".into(),
            kind: NumericKind::Long,
        };
        assert_eq!(
            ValueFormat::for_source(&n, None, None).unwrap(),
            ValueFormat::Raw
        );
        assert!(ValueFormat::for_source(&n, Some("0.00"), None).is_err());
        assert_eq!(
            ValueFormat::merge([&ValueFormat::Raw, &ValueFormat::Boolean]),
            ValueFormat::Boolean
        );
    }
}
