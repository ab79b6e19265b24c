//! `date`: parses a field with the first of `formats` that reads it (`ISO8601`, `UNIX`
//! seconds, `UNIX_MS`, or a `java.time` pattern, through `tessera-date`) and writes it to
//! `target_field` (`@timestamp`) in `output_format`, in `timezone` (UTC).

use serde_json::Value;
use tessera_common::{Error, Result};
use tessera_date::{DateFormat, TimeZone};

use super::{Flow, Outcome, Processor};
use crate::config::Config;
use crate::document::{java_string, IngestDocument};
use crate::pipeline::Exec;

const DEFAULT_OUTPUT: &str = "yyyy-MM-dd'T'HH:mm:ss.SSSXXX";

#[derive(Debug)]
enum Format {
    Unix,
    UnixMs,
    Pattern(DateFormat),
}

#[derive(Debug)]
pub struct DateProcessor {
    field: String,
    target: String,
    formats: Vec<Format>,
    zone: TimeZone,
    output: DateFormat,
}

impl DateProcessor {
    pub fn parse(config: &mut Config) -> Result<DateProcessor> {
        let field = config.required_string("field")?;
        let target = config
            .optional_string("target_field")?
            .unwrap_or_else(|| "@timestamp".to_string());
        let names = config.required_strings("formats")?;
        let zone = match config.optional_string("timezone")? {
            Some(name) => {
                if name.contains("{{") {
                    return Err(config.error(
                        "timezone",
                        "templated time zones are not supported by Tessera",
                    ));
                }
                TimeZone::parse(&name).map_err(|e| config.error("timezone", &e.message))?
            }
            None => TimeZone::utc(),
        };
        if let Some(locale) = config.optional_string("locale")? {
            let lower = locale.to_ascii_lowercase();
            if !(lower.starts_with("en") || lower == "root" || lower.is_empty()) {
                return Err(config.error(
                    "locale",
                    &format!("the locale [{locale}] is not supported by Tessera, which reads and prints English names only"),
                ));
            }
        }
        let output = config
            .optional_string("output_format")?
            .unwrap_or_else(|| DEFAULT_OUTPUT.to_string());
        let output =
            DateFormat::parse(&output).map_err(|e| config.error("output_format", &e.message))?;
        let mut formats = Vec::new();
        for name in &names {
            formats.push(match name.as_str() {
                "UNIX" => Format::Unix,
                "UNIX_MS" => Format::UnixMs,
                "ISO8601" => Format::Pattern(
                    DateFormat::parse("date_optional_time")
                        .map_err(|e| config.error("formats", &e.message))?,
                ),
                "TAI64N" => {
                    return Err(
                        config.error("formats", "the TAI64N format is not supported by Tessera")
                    )
                }
                pattern => Format::Pattern(
                    DateFormat::parse(pattern).map_err(|e| config.error("formats", &e.message))?,
                ),
            });
        }
        Ok(DateProcessor {
            field,
            target,
            formats,
            zone,
            output,
        })
    }

    fn parse_value(&self, text: &str) -> std::result::Result<i64, Error> {
        let mut last = None;
        for format in &self.formats {
            let parsed = match format {
                Format::Unix => text
                    .parse::<f64>()
                    .ok()
                    .filter(|f| f.is_finite())
                    .map(|f| (f * 1000.0) as i64)
                    .ok_or_else(|| {
                        Error::new(
                            "number_format_exception",
                            400,
                            format!("For input string: \"{text}\""),
                        )
                    }),
                Format::UnixMs => text.parse::<i64>().map_err(|_| {
                    Error::new(
                        "number_format_exception",
                        400,
                        format!("For input string: \"{text}\""),
                    )
                }),
                Format::Pattern(format) => format
                    .parse_millis(text, Some(&self.zone), false)
                    .map_err(|e| Error::illegal_argument(e.message)),
            };
            match parsed {
                Ok(millis) => return Ok(millis),
                Err(e) => last = Some(e),
            }
        }
        let error = Error::illegal_argument(format!("unable to parse date [{text}]"));
        Err(match last {
            Some(cause) => error.caused_by(cause),
            None => error,
        })
    }
}

impl Processor for DateProcessor {
    fn execute(&self, doc: &mut IngestDocument, _: &mut Exec<'_>) -> Outcome {
        let value = doc.get(&self.field)?;
        if value.is_null() {
            return Err(Error::illegal_argument(format!(
                "field [{}] is null, cannot parse date.",
                self.field
            ))
            .into());
        }
        let text = java_string(value);
        let millis = self.parse_value(&text)?;
        let printed = self.output.format_millis(millis, Some(&self.zone));
        doc.set(&self.target, Value::String(printed))?;
        Ok(Flow::Continue)
    }
}

#[cfg(test)]
mod tests {
    use crate::processor::tests::{parse_error, run};
    use serde_json::json;

    #[test]
    fn dates_parse_with_the_first_matching_format() {
        let out = run(
            json!({"date": {"field": "d", "formats": ["ISO8601", "UNIX", "dd/MM/yyyy"]}}),
            json!({"d": "12/06/2016"}),
        )
        .unwrap();
        assert_eq!(out["@timestamp"], "2016-06-12T00:00:00.000Z");
        let out = run(
            json!({"date": {"field": "d", "formats": ["UNIX_MS"], "target_field": "t"}}),
            json!({"d": 1465689600123i64}),
        )
        .unwrap();
        assert_eq!(out["t"], "2016-06-12T00:00:00.123Z");
        let out = run(
            json!({"date": {"field": "d", "formats": ["UNIX"], "timezone": "+02:00",
                "output_format": "yyyy-MM-dd HH:mm"}}),
            json!({"d": "1465689600.5"}),
        )
        .unwrap();
        assert_eq!(out["@timestamp"], "2016-06-12 02:00");
        let out = run(
            json!({"date": {"field": "d", "formats": ["ISO8601"]}}),
            json!({"d": "2016-06-12T10:00:00+01:00"}),
        )
        .unwrap();
        assert_eq!(out["@timestamp"], "2016-06-12T09:00:00.000Z");
        let e = run(
            json!({"date": {"field": "d", "formats": ["yyyy"]}}),
            json!({"d": "x"}),
        )
        .unwrap_err();
        assert_eq!(e.reason(), "unable to parse date [x]");
        let e = parse_error(json!({"date": {"field": "d", "formats": ["TAI64N"]}}));
        assert_eq!(e.meta("property_name"), Some(&json!("formats")));
    }
}
