//! The `format` of a date field: `||`-separated alternatives, parsed and printed.
//!
//! A [`DateFormat`] is what a mapping's `format` parameter (or a query's
//! `format`) compiles to. Parsing tries every parser of every alternative in
//! order and takes the first that consumes the whole input and resolves to a
//! valid date; printing always uses the first alternative, as OpenSearch does
//! for `docvalue_fields`, sort values and aggregation keys.

use crate::engine;
use crate::items::Item;
use crate::named;
use crate::pattern;
use crate::resolve;
use crate::zone::TimeZone;
use crate::{DateError, Result};

/// A parsed `format` mapping parameter: one or more alternatives separated by `||`.
#[derive(Clone, Debug, PartialEq)]
pub struct DateFormat {
    spec: String,
    alternatives: Vec<Alternative>,
}

#[derive(Clone, Debug, PartialEq)]
struct Alternative {
    printer: Vec<Item>,
    parsers: Vec<Vec<Item>>,
}

/// OpenSearch's default `format` for `date` fields.
pub const DEFAULT_FORMAT: &str = "strict_date_optional_time||epoch_millis";

impl DateFormat {
    /// Compiles a format: named formats (`strict_date_optional_time`, `epoch_millis`,
    /// camelCase spellings too) and `java.time` patterns, separated by `||`.
    ///
    /// Errors read like OpenSearch's: `Invalid format: [foo]: Unknown pattern letter: f`.
    pub fn parse(spec: &str) -> Result<DateFormat> {
        if spec.is_empty() {
            return Err(DateError::new("No date pattern provided"));
        }
        // OpenSearch still strips the 6.x "8" prefix that selected java-time formats.
        let body = spec.strip_prefix('8').unwrap_or(spec);
        let mut alternatives = Vec::new();
        for part in body.split("||") {
            if part.is_empty() {
                return Err(DateError::new(format!(
                    "Cannot have empty element in multi date format pattern: {spec}"
                )));
            }
            let part = part.trim();
            if part.is_empty() {
                return Err(DateError::new("No date pattern provided"));
            }
            alternatives.push(compile_alternative(part)?);
        }
        Ok(DateFormat {
            spec: spec.to_string(),
            alternatives,
        })
    }

    /// `strict_date_optional_time||epoch_millis`, OpenSearch's default for date fields.
    pub fn default_format() -> DateFormat {
        match DateFormat::parse(DEFAULT_FORMAT) {
            Ok(f) => f,
            // The default spec is a constant made of built-in names; it always compiles.
            Err(_) => DateFormat {
                spec: DEFAULT_FORMAT.to_string(),
                alternatives: vec![Alternative {
                    printer: vec![Item::EpochMillis],
                    parsers: vec![vec![Item::EpochMillis]],
                }],
            },
        }
    }

    /// The original format text.
    pub fn spec(&self) -> &str {
        &self.spec
    }

    /// Parses `input` trying each alternative in order. Missing fields default to
    /// their minimum (month/day 1, time 0) — or, with `round_up`, the time fields to
    /// their maximum (`2015-01-21` → `2015-01-21T23:59:59.999`; month and day still
    /// default to 1, as in OpenSearch), which range queries use for `lte`/`gt`.
    /// Inputs without an offset are read in `zone` (UTC if `None`); epoch values
    /// are absolute.
    pub fn parse_millis(
        &self,
        input: &str,
        zone: Option<&TimeZone>,
        round_up: bool,
    ) -> Result<i64> {
        if input.is_empty() {
            return Err(DateError::new("cannot parse empty date"));
        }
        for alt in &self.alternatives {
            for parser in &alt.parsers {
                if let Some(parsed) = engine::parse(parser, input) {
                    if let Ok(millis) = resolve::resolve(&parsed, zone, round_up) {
                        return Ok(millis);
                    }
                }
            }
        }
        Err(DateError::new(format!(
            "failed to parse date field [{input}] with format [{}]",
            self.spec
        )))
    }

    /// Formats with the first alternative, in `zone` (UTC if `None`):
    /// `strict_date_optional_time` gives `2015-01-01T12:10:30.000Z` (or `+01:00`
    /// with a zone), `epoch_millis` gives `1420070400000`.
    pub fn format_millis(&self, millis: i64, zone: Option<&TimeZone>) -> String {
        match self.alternatives.first() {
            Some(alt) => engine::print(&alt.printer, millis, zone),
            None => millis.to_string(),
        }
    }

    /// Whether the first (printing) alternative is `epoch_millis` or `epoch_second`,
    /// whose output does not depend on a time zone.
    pub fn prints_epoch(&self) -> bool {
        self.alternatives.first().is_some_and(|a| {
            matches!(
                a.printer.as_slice(),
                [Item::EpochMillis] | [Item::EpochSecond]
            )
        })
    }
}

fn compile_alternative(part: &str) -> Result<Alternative> {
    if let Some(n) = named::lookup(part) {
        return Ok(Alternative {
            printer: n.printer,
            parsers: n.parsers,
        });
    }
    let items = pattern::compile(part)
        .map_err(|msg| DateError::new(format!("Invalid format: [{part}]: {msg}")))?;
    Ok(Alternative {
        printer: items.clone(),
        parsers: vec![items],
    })
}

impl Default for DateFormat {
    fn default() -> Self {
        DateFormat::default_format()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JAN_1_2015: i64 = 1_420_070_400_000;
    const JAN_21_2015: i64 = 1_421_798_400_000;
    const H: i64 = 3_600_000;

    fn fmt(spec: &str) -> DateFormat {
        DateFormat::parse(spec).unwrap_or_else(|e| panic!("{spec}: {e}"))
    }

    fn parse(spec: &str, input: &str) -> i64 {
        fmt(spec)
            .parse_millis(input, None, false)
            .unwrap_or_else(|e| panic!("{spec} / {input}: {e}"))
    }

    fn fails(spec: &str, input: &str) -> bool {
        fmt(spec).parse_millis(input, None, false).is_err()
    }

    fn print(spec: &str, millis: i64) -> String {
        fmt(spec).format_millis(millis, None)
    }

    #[test]
    fn default_format_parses_dates_and_epochs() {
        let f = DateFormat::default_format();
        assert_eq!(f.spec(), "strict_date_optional_time||epoch_millis");
        assert_eq!(
            f.parse_millis("2015-01-01", None, false).unwrap(),
            JAN_1_2015
        );
        assert_eq!(
            f.parse_millis("2015-01-01T00:00:00Z", None, false).unwrap(),
            JAN_1_2015
        );
        assert_eq!(
            f.parse_millis("2015-01-01T01:00:00+01:00", None, false)
                .unwrap(),
            JAN_1_2015
        );
        assert_eq!(
            f.parse_millis("2015-01-01T01:00:00+0100", None, false)
                .unwrap(),
            JAN_1_2015
        );
        assert_eq!(
            f.parse_millis("2014-12-31T19:00:00-05", None, false)
                .unwrap(),
            JAN_1_2015
        );
        assert_eq!(
            f.parse_millis("1420070400000", None, false).unwrap(),
            JAN_1_2015
        );
        assert_eq!(f.parse_millis("-1", None, false).unwrap(), -1);
        // A 4-digit number is a year for strict_date_optional_time, as in OpenSearch.
        assert_eq!(f.parse_millis("2015", None, false).unwrap(), JAN_1_2015);
        assert_eq!(
            f.format_millis(JAN_1_2015, None),
            "2015-01-01T00:00:00.000Z"
        );
        let err = f.parse_millis("not a date", None, false).unwrap_err();
        assert_eq!(
            err.message,
            "failed to parse date field [not a date] with format [strict_date_optional_time||epoch_millis]"
        );
        assert_eq!(
            f.parse_millis("", None, false).unwrap_err().message,
            "cannot parse empty date"
        );
    }

    #[test]
    fn strict_date_optional_time_variants() {
        let s = "strict_date_optional_time";
        assert_eq!(parse(s, "2015-01"), JAN_1_2015);
        assert_eq!(parse(s, "2015-01-21T"), JAN_21_2015);
        assert_eq!(parse(s, "2015-01-21T10"), JAN_21_2015 + 10 * H);
        assert_eq!(parse(s, "2015-01-21T10Z"), JAN_21_2015 + 10 * H);
        assert_eq!(
            parse(s, "2015-01-21T10:30"),
            JAN_21_2015 + 10 * H + 30 * 60_000
        );
        assert_eq!(
            parse(s, "2015-01-21T10:30:15.123456789Z"),
            JAN_21_2015 + 10 * H + 1_815_123
        );
        assert_eq!(
            parse(s, "2015-01-21T10:30:15,5"),
            JAN_21_2015 + 10 * H + 1_815_500
        );
        assert_eq!(
            parse(s, "2015-01-21T10:30:15.1"),
            JAN_21_2015 + 10 * H + 1_815_100
        );
        assert_eq!(
            parse(s, "2015-01-21T10:30:15Europe/Paris"),
            JAN_21_2015 + 9 * H + 1_815_000
        );
        assert!(fails(s, "2015-1-21"));
        assert!(fails(s, "2015-01-21 10:30"));
        assert!(fails(s, "2015-01-21T10:30:15.1234567890"));
        assert!(fails(s, "2015-02-30"));
        assert!(fails(s, "2015-01-21T24:00"));
        assert!(fails(s, "15-01-21"));
        assert!(fails(s, "2015-01-21T10:30:15ZX"));
        assert_eq!(parse(s, "0001-01-01"), -62_135_596_800_000);
        assert_eq!(parse(s, "9999-12-31T23:59:59.999Z"), 253_402_300_799_999);
        assert_eq!(parse(s, "1969-12-31T23:59:59.999Z"), -1);
        assert_eq!(parse(s, "-0001-01-01"), -62_198_755_200_000);
    }

    #[test]
    fn date_optional_time_is_lenient() {
        let s = "date_optional_time";
        assert_eq!(parse(s, "2015-1-1"), JAN_1_2015);
        assert_eq!(
            parse(s, "2015-1-21T1:2:3"),
            JAN_21_2015 + H + 2 * 60_000 + 3000
        );
        assert_eq!(parse(s, "2015"), JAN_1_2015);
        assert_eq!(parse(s, "2015-01-21T10:00+01:00"), JAN_21_2015 + 9 * H);
        assert!(fails(s, "2015-01-21T10Z"));
    }

    #[test]
    fn printing_named_formats() {
        let t = JAN_1_2015 + 12 * H + 10 * 60_000 + 30_000;
        assert_eq!(
            print("strict_date_optional_time", t),
            "2015-01-01T12:10:30.000Z"
        );
        assert_eq!(print("date_optional_time", t), "2015-01-01T12:10:30.000Z");
        assert_eq!(
            print("strict_date_optional_time_nanos", t + 5),
            "2015-01-01T12:10:30.005Z"
        );
        assert_eq!(print("epoch_millis", t), "1420114230000");
        assert_eq!(print("epoch_second", t), "1420114230");
        assert_eq!(print("epoch_second", t + 500), "1420114230.5");
        assert_eq!(print("epoch_second", -1500), "-1.5");
        assert_eq!(print("epoch_millis||yyyy", -1500), "-1500");
        assert_eq!(print("basic_date", t), "20150101");
        assert_eq!(print("basic_date_time", t), "20150101T121030.000Z");
        assert_eq!(print("basic_date_time_no_millis", t), "20150101T121030Z");
        assert_eq!(print("basic_time", t), "121030.000Z");
        assert_eq!(print("basic_t_time", t), "T121030.000Z");
        assert_eq!(print("basic_ordinal_date", t), "2015001");
        assert_eq!(print("basic_week_date", t), "2015W014");
        assert_eq!(print("basic_week_date_time", t), "2015W014T121030.000Z");
        assert_eq!(print("date", t), "2015-01-01");
        assert_eq!(print("strict_date", t), "2015-01-01");
        assert_eq!(print("date_hour", t), "2015-01-01T12");
        assert_eq!(print("date_hour_minute", t), "2015-01-01T12:10");
        assert_eq!(print("date_hour_minute_second", t), "2015-01-01T12:10:30");
        assert_eq!(
            print("date_hour_minute_second_millis", t),
            "2015-01-01T12:10:30.000"
        );
        assert_eq!(print("date_time", t), "2015-01-01T12:10:30.000Z");
        assert_eq!(print("strict_date_time", t), "2015-01-01T12:10:30.000Z");
        assert_eq!(print("date_time_no_millis", t), "2015-01-01T12:10:30Z");
        assert_eq!(print("hour", t), "12");
        assert_eq!(print("hour_minute", t), "12:10");
        assert_eq!(print("hour_minute_second", t), "12:10:30");
        assert_eq!(print("hour_minute_second_millis", t), "12:10:30.000");
        assert_eq!(print("ordinal_date", t), "2015-001");
        assert_eq!(print("ordinal_date_time", t), "2015-001T12:10:30.000Z");
        assert_eq!(print("time", t), "12:10:30.000Z");
        assert_eq!(print("t_time_no_millis", t), "T12:10:30Z");
        assert_eq!(print("week_date", t), "2015-W01-4");
        assert_eq!(print("week_date_time", t), "2015-W01-4T12:10:30.000Z");
        assert_eq!(print("weekyear", t), "2015");
        assert_eq!(print("weekyear_week", t), "2015-W01");
        assert_eq!(print("weekyear_week_day", t), "2015-W01-4");
        assert_eq!(print("year", t), "2015");
        assert_eq!(print("year_month", t), "2015-01");
        assert_eq!(print("year_month_day", t), "2015-01-01");
        assert_eq!(print("strict_year_month_day", t), "2015-01-01");
        assert_eq!(print("iso8601", t), "2015-01-01T12:10:30.000Z");
    }

    #[test]
    fn printing_with_zones() {
        let paris = TimeZone::parse("Europe/Paris").unwrap();
        let f = fmt("strict_date_optional_time");
        assert_eq!(
            f.format_millis(JAN_1_2015, Some(&paris)),
            "2015-01-01T01:00:00.000+01:00"
        );
        assert_eq!(
            f.format_millis(JAN_1_2015 + 181 * 86_400_000, Some(&paris)),
            "2015-07-01T02:00:00.000+02:00"
        );
        let minus = TimeZone::parse("-05:30").unwrap();
        assert_eq!(
            f.format_millis(JAN_1_2015, Some(&minus)),
            "2014-12-31T18:30:00.000-05:30"
        );
        // Epoch formats ignore the zone.
        assert_eq!(
            fmt("epoch_millis").format_millis(JAN_1_2015, Some(&paris)),
            "1420070400000"
        );
        assert!(fmt("epoch_millis||yyyy").prints_epoch());
        assert!(!fmt("yyyy||epoch_millis").prints_epoch());
        // date_time_no_millis prints the zone id.
        assert_eq!(
            fmt("date_time_no_millis").format_millis(JAN_1_2015, Some(&paris)),
            "2015-01-01T01:00:00Europe/Paris"
        );
    }

    #[test]
    fn named_formats_parse() {
        let t = JAN_1_2015 + 12 * H + 10 * 60_000 + 30_000;
        for (spec, input) in [
            ("basic_date_time", "20150101T121030.000Z"),
            ("basic_date_time", "20150101T131030.000+0100"),
            ("basic_date_time", "20150101T131030.000+01:00"),
            ("basic_date_time_no_millis", "20150101T121030Z"),
            ("basic_ordinal_date_time", "2015001T121030.000Z"),
            ("basic_ordinal_date_time_no_millis", "2015001T121030Z"),
            ("basic_week_date_time", "2015W014T121030.000Z"),
            ("strict_basic_week_date_time_no_millis", "2015W014T121030Z"),
            ("date_time", "2015-01-01T12:10:30.000Z"),
            ("date_time", "2015-1-1T12:10:30.0+00:00"),
            ("strict_date_time", "2015-01-01T12:10:30Z"),
            ("strict_date_time", "2015-01-01T12:10:30.000000Z"),
            ("strict_date_time_no_millis", "2015-01-01T12:10:30Z"),
            ("date_time_no_millis", "2015-01-01T12:10:30"),
            ("date_time_no_millis", "2015-01-01T12:10:30Z"),
            ("date_hour_minute_second", "2015-01-01T12:10:30"),
            ("strict_date_hour_minute_second", "2015-01-01T12:10:30"),
            ("date_hour_minute_second_millis", "2015-01-01T12:10:30.0"),
            (
                "strict_date_hour_minute_second_fraction",
                "2015-01-01T12:10:30.000",
            ),
            ("ordinal_date_time", "2015-001T12:10:30.000Z"),
            ("ordinal_date_time_no_millis", "2015-1T12:10:30Z"),
            ("strict_ordinal_date_time", "2015-001T12:10:30.000Z"),
            ("week_date_time", "2015-W1-4T12:10:30.000Z"),
            ("strict_week_date_time", "2015-W01-4T12:10:30.000Z"),
            ("week_date_time_no_millis", "2015-W01-4T12:10:30Z"),
            ("iso8601", "2015-01-01T12:10:30Z"),
            ("rfc3339_lenient", "2015-01-01T12:10:30Z"),
            ("rfc3339_lenient", "2015-01-01T13:10:30+01:00"),
            ("strictDateOptionalTime", "2015-01-01T12:10:30Z"),
            ("epoch_second", "1420114230"),
            ("epoch_millis", "1420114230000"),
        ] {
            assert_eq!(parse(spec, input), t, "{spec} / {input}");
        }
        for (spec, input, expect) in [
            ("date", "2015-01-01", JAN_1_2015),
            ("basic_date", "20150101", JAN_1_2015),
            ("basic_date", "2015011", JAN_1_2015),
            ("strict_date", "2015-01-01", JAN_1_2015),
            ("year_month_day", "2015-1-21", JAN_21_2015),
            ("year_month", "2015-1", JAN_1_2015),
            ("strict_year_month", "2015-01", JAN_1_2015),
            ("year", "2015", JAN_1_2015),
            ("strict_year", "2015", JAN_1_2015),
            ("ordinal_date", "2015-21", JAN_21_2015),
            ("strict_ordinal_date", "2015-021", JAN_21_2015),
            ("basic_ordinal_date", "2015021", JAN_21_2015),
            ("week_date", "2015-W04-3", JAN_21_2015),
            ("strict_week_date", "2015-W04-3", JAN_21_2015),
            ("basic_week_date", "2015W043", JAN_21_2015),
            ("weekyear_week_day", "2015-W4-3", JAN_21_2015),
            ("strict_weekyear_week_day", "2015-W04-3", JAN_21_2015),
            ("weekyear_week", "2015-W4", JAN_21_2015 - 2 * 86_400_000),
            ("weekyear", "2015", JAN_1_2015 - 3 * 86_400_000),
            ("hour", "7", 7 * H),
            ("hour_minute", "7:5", 7 * H + 5 * 60_000),
            (
                "strict_hour_minute_second",
                "07:05:03",
                7 * H + 5 * 60_000 + 3000,
            ),
            ("time", "07:05:03.5+01:00", 6 * H + 5 * 60_000 + 3500),
            ("t_time", "T07:05:03.5Z", 7 * H + 5 * 60_000 + 3500),
            (
                "strict_time_no_millis",
                "07:05:03Z",
                7 * H + 5 * 60_000 + 3000,
            ),
            ("basic_time_no_millis", "070503Z", 7 * H + 5 * 60_000 + 3000),
            ("basic_t_time", "T070503.5Z", 7 * H + 5 * 60_000 + 3500),
            ("epoch_millis", "1420070400000.5", JAN_1_2015),
            ("epoch_millis", "-1.5", -2),
            ("epoch_millis", "1420070400000.", JAN_1_2015),
            ("epoch_second", "-1.5", -1500),
            ("epoch_second", "1420070400.123456789", JAN_1_2015 + 123),
        ] {
            assert_eq!(parse(spec, input), expect, "{spec} / {input}");
        }
        for (spec, input) in [
            ("strict_date", "2015-1-01"),
            ("strict_date_time", "2015-01-01T12:10:30"),
            ("date_time", "2015-01-01T12:10:30.000"),
            ("basic_date_time", "20150101T121030Z"),
            ("strict_week_date", "2015-W4-3"),
            ("strict_hour_minute_second", "7:05:03"),
            ("epoch_millis", "abc"),
            ("epoch_millis", "1e10"),
            ("epoch_millis", "+5"),
            ("epoch_second", "1.1234567891"),
            ("strict_date_optional_time_nanos", "2015-01-01T10:00"),
        ] {
            assert!(fails(spec, input), "{spec} / {input} should fail");
        }
    }

    #[test]
    fn custom_patterns() {
        assert_eq!(
            parse("yyyy-MM-dd HH:mm:ss", "2015-01-21 10:30:00"),
            JAN_21_2015 + 10 * H + 30 * 60_000
        );
        assert_eq!(parse("dd/MM/yyyy", "21/01/2015"), JAN_21_2015);
        assert!(fails("dd/MM/yyyy", "21/1/2015"));
        let multi = "yyyy/MM/dd HH:mm:ss||yyyy/MM/dd||epoch_millis";
        assert_eq!(parse(multi, "2015/01/21 10:00:00"), JAN_21_2015 + 10 * H);
        assert_eq!(parse(multi, "2015/01/21"), JAN_21_2015);
        assert_eq!(parse(multi, "1421798400000"), JAN_21_2015);
        assert_eq!(print(multi, JAN_21_2015 + 10 * H), "2015/01/21 10:00:00");
        assert_eq!(
            parse("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "2015-01-21T10:00:00.000+0100"),
            JAN_21_2015 + 9 * H
        );
        assert_eq!(
            parse("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "2015-01-21T10:00:00.000Z"),
            JAN_21_2015 + 10 * H
        );
        assert!(fails(
            "yyyy-MM-dd'T'HH:mm:ss.SSSZ",
            "2015-01-21T10:00:00.000+01:00"
        ));
        assert_eq!(
            print("yyyy-MM-dd'T'HH:mm:ss.SSSZ", JAN_21_2015),
            "2015-01-21T00:00:00.000+0000"
        );
        assert_eq!(parse("MMM dd, yyyy", "Jan 21, 2015"), JAN_21_2015);
        assert_eq!(parse("MMM dd, yyyy", "jan 21, 2015"), JAN_21_2015);
        assert_eq!(print("MMM dd, yyyy", JAN_21_2015), "Jan 21, 2015");
        assert_eq!(parse("MMMM d, yyyy", "January 21, 2015"), JAN_21_2015);
        assert_eq!(
            parse("yyyy-MM-dd'T'HH:mm:ssXXX", "2015-01-21T10:00:00+01:00"),
            JAN_21_2015 + 9 * H
        );
        assert_eq!(
            parse("yyyy-MM-dd'T'HH:mm:ssXXX", "2015-01-21T10:00:00Z"),
            JAN_21_2015 + 10 * H
        );
        assert_eq!(
            print("yyyy-MM-dd'T'HH:mm:ssXXX", JAN_21_2015),
            "2015-01-21T00:00:00Z"
        );
        assert_eq!(
            parse(
                "EEE, dd MMM yyyy HH:mm:ss z",
                "Wed, 21 Jan 2015 10:00:00 GMT"
            ),
            JAN_21_2015 + 10 * H
        );
        assert!(fails("EEE, dd MMM yyyy", "Thu, 21 Jan 2015"));
        assert_eq!(
            print("EEEE, dd MMMM yyyy", JAN_21_2015),
            "Wednesday, 21 January 2015"
        );
        assert_eq!(parse("hh:mm a", "12:30 AM"), 30 * 60_000);
        assert_eq!(parse("hh:mm a", "01:30 pm"), 13 * H + 30 * 60_000);
        assert_eq!(print("hh:mm a", 13 * H), "01:00 PM");
        assert_eq!(parse("yy-MM-dd", "15-01-21"), JAN_21_2015);
        assert_eq!(print("yy", JAN_21_2015), "15");
        assert_eq!(
            parse("yyyyMMddHHmmss", "20150121100000"),
            JAN_21_2015 + 10 * H
        );
        assert_eq!(parse("yyyy-DDD", "2015-021"), JAN_21_2015);
        assert_eq!(
            parse("uuuu-MM-dd['T'HH[:mm]]", "2015-01-21T10"),
            JAN_21_2015 + 10 * H
        );
        assert_eq!(parse("uuuu-MM-dd['T'HH[:mm]]", "2015-01-21"), JAN_21_2015);
        assert_eq!(
            parse(
                "yyyy-MM-dd'T'HH:mm:ss VV",
                "2015-01-21T10:00:00 Europe/Paris"
            ),
            JAN_21_2015 + 9 * H
        );
        assert_eq!(
            parse("yyyy-MM-dd'T'HH:mm:ss X", "2015-01-21T10:00:00 +01"),
            JAN_21_2015 + 9 * H
        );
        assert_eq!(
            parse("yyyy-MM-dd 'at' HH 'o''clock'", "2015-01-21 at 10 o'clock"),
            JAN_21_2015 + 10 * H
        );
        assert_eq!(
            print("yyyy-MM-dd 'at' HH 'o''clock'", JAN_21_2015),
            "2015-01-21 at 00 o'clock"
        );
        assert_eq!(parse("YYYY-'W'ww-e", "2015-W04-3"), JAN_21_2015);
        assert_eq!(print("YYYY-'W'ww-e", JAN_21_2015), "2015-W04-3");
        assert_eq!(parse("G yyyy", "BC 0001"), parse("uuuu", "0000"));
        assert_eq!(print("G yyyy", parse("uuuu", "0000")), "BC 0001");
        assert_eq!(
            parse("dd.MM.yyyy HH:mm", "21.01.2015 10:00"),
            JAN_21_2015 + 10 * H
        );
        assert_eq!(
            parse("yyyy-MM-dd HH:mm:ss.SSSSSS", "2015-01-21 00:00:00.123456"),
            JAN_21_2015 + 123
        );
    }

    #[test]
    fn round_up_fills_missing_fields_with_their_maximum() {
        let f = fmt("dd/MM/yyyy");
        assert_eq!(
            f.parse_millis("21/01/2015", None, true).unwrap(),
            1_421_884_799_999
        );
        let f = DateFormat::default_format();
        assert_eq!(
            f.parse_millis("2015-01-21", None, true).unwrap(),
            1_421_884_799_999
        );
        assert_eq!(
            f.parse_millis("2015-01-21T10", None, true).unwrap(),
            JAN_21_2015 + 11 * H - 1
        );
        assert_eq!(
            f.parse_millis("2015-01-21T10:00:00", None, true).unwrap(),
            JAN_21_2015 + 10 * H + 999
        );
        assert_eq!(
            f.parse_millis("2015-01-21T10:00:00.000", None, true)
                .unwrap(),
            JAN_21_2015 + 10 * H
        );
        // Month and day default to 1 even when rounding up (OpenSearch behaviour).
        assert_eq!(
            f.parse_millis("2015", None, true).unwrap(),
            JAN_1_2015 + 24 * H - 1
        );
        assert_eq!(
            f.parse_millis("1421798400000", None, true).unwrap(),
            JAN_21_2015
        );
        let f = fmt("epoch_second");
        assert_eq!(
            f.parse_millis("1421798400", None, true).unwrap(),
            JAN_21_2015 + 999
        );
        assert_eq!(
            f.parse_millis("1421798400.5", None, true).unwrap(),
            JAN_21_2015 + 500
        );
    }

    #[test]
    fn inputs_in_a_zone() {
        let f = DateFormat::default_format();
        let plus1 = TimeZone::parse("+01:00").unwrap();
        assert_eq!(
            f.parse_millis("2015-01-21", Some(&plus1), false).unwrap(),
            JAN_21_2015 - H
        );
        assert_eq!(
            f.parse_millis("2015-01-21T00:00:00Z", Some(&plus1), false)
                .unwrap(),
            JAN_21_2015
        );
        assert_eq!(
            f.parse_millis("1421798400000", Some(&plus1), false)
                .unwrap(),
            JAN_21_2015
        );
        let paris = TimeZone::parse("Europe/Paris").unwrap();
        assert_eq!(
            f.parse_millis("2015-07-01", Some(&paris), false).unwrap(),
            JAN_1_2015 + 181 * 86_400_000 - 2 * H
        );
    }

    #[test]
    fn invalid_specs() {
        assert_eq!(
            DateFormat::parse("foo").unwrap_err().message,
            "Invalid format: [foo]: Unknown pattern letter: f"
        );
        assert_eq!(
            DateFormat::parse("yyyy||foo").unwrap_err().message,
            "Invalid format: [foo]: Unknown pattern letter: f"
        );
        assert_eq!(
            DateFormat::parse("").unwrap_err().message,
            "No date pattern provided"
        );
        assert!(DateFormat::parse("yyyy||").is_err());
        assert!(DateFormat::parse("||yyyy").is_err());
        assert!(DateFormat::parse("Strict_date").is_err());
        assert!(DateFormat::parse("yyyy-MM-dd'T").is_err());
        assert_eq!(
            fmt("8yyyy").parse_millis("2015", None, false).unwrap(),
            JAN_1_2015
        );
        assert_eq!(
            fmt(" yyyy ").parse_millis("2015", None, false).unwrap(),
            JAN_1_2015
        );
    }

    #[test]
    fn round_trips() {
        let samples = [
            0,
            -1,
            1,
            JAN_1_2015,
            JAN_21_2015 + 12_345_678,
            -62_135_596_800_000,
            253_402_300_799_999,
            951_782_400_000, // 2000-02-29
            -30_610_224_000_000,
        ];
        for spec in [
            "strict_date_optional_time",
            "date_optional_time",
            "strict_date_time",
            "date_time",
            "basic_date_time",
            "epoch_millis",
            "iso8601",
            "yyyy-MM-dd'T'HH:mm:ss.SSSXXX",
            "uuuu-MM-dd HH:mm:ss.SSS",
            "strict_ordinal_date_time",
            "strict_week_date_time",
        ] {
            let f = fmt(spec);
            for &t in &samples {
                let s = f.format_millis(t, None);
                assert_eq!(f.parse_millis(&s, None, false).unwrap(), t, "{spec}: {s}");
            }
        }
        let paris = TimeZone::parse("Europe/Paris").unwrap();
        let f = DateFormat::default_format();
        for &t in &samples[..5] {
            let s = f.format_millis(t, Some(&paris));
            assert_eq!(f.parse_millis(&s, None, false).unwrap(), t, "{s}");
        }
    }

    #[test]
    fn adversarial_inputs_do_not_panic() {
        let specs = [
            DEFAULT_FORMAT,
            "date_optional_time",
            "epoch_second",
            "yyyy-MM-dd'T'HH:mm:ss.SSSZ",
            "EEE, dd MMM yyyy HH:mm:ss zzz",
            "yyyyMMddHHmmss",
            "G y D k K A n N VV O x Q F W g",
            "[[[yyyy]]]",
        ];
        let inputs = [
            "",
            "-",
            "+",
            ".",
            "T",
            "Z",
            "9999999999999999999999999999",
            "-9223372036854775808",
            "9223372036854775807",
            "+999999999-12-31",
            "2015-01-01T00:00:00+99:99",
            "2015-01-01T00:00:00Europe/",
            "2015-01-01T00:00:00../../etc/passwd",
            "\u{0}\u{1}\u{ff}",
            "２０１５-01-01",
            "2015-01-01T00:00:00.\u{e9}",
            "Wed, 21 Jan 2015 10:00:00 \u{1F600}",
            "1e400",
            "99999999999999999999.99999",
            "-99999999999999999999",
            "g 9223372036854775807",
            "AD 999999999 999",
        ];
        for spec in specs {
            let f = fmt(spec);
            for input in inputs {
                let _ = f.parse_millis(input, None, false);
                let _ = f.parse_millis(input, None, true);
            }
            for t in [i64::MIN, i64::MIN + 1, -1, 0, i64::MAX] {
                let _ = f.format_millis(t, None);
                let _ = f.format_millis(t, TimeZone::parse("Europe/Paris").ok().as_ref());
            }
        }
        let long = "9".repeat(10_000);
        assert!(DateFormat::default_format()
            .parse_millis(&long, None, false)
            .is_err());
        let _ = DateFormat::parse(&"[".repeat(1000));
        let _ = DateFormat::parse(&"'".repeat(1001));
    }
}
