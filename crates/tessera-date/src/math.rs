//! Date math for range queries: `now-1d/d`, `2015-01-01||+1M/d`.
//!
//! Mirrors OpenSearch's `JavaDateMathParser`: an anchor (`now`, or a date
//! followed by `||`), then any number of `+N<unit>`, `-N<unit>` and `/<unit>`
//! operations applied left to right in the given time zone. Calendar units
//! (`y M w d`) and rounding work on the local wall clock and are re-resolved
//! like `ZonedDateTime` (keeping the current offset across an overlap, moving
//! forward across a gap); `h m s` additions work on the instant. With
//! `round_up`, `/unit` goes to the last millisecond of the unit. A date
//! without `||` is parsed with the round-up parser, while an anchor before
//! `||` is not (as in OpenSearch).

use crate::civil::{self, DateTimeFields, MILLIS_PER_HOUR, MILLIS_PER_MINUTE};
use crate::format::DateFormat;
use crate::zone::TimeZone;
use crate::{DateError, Result};

/// Evaluates a date math expression to UTC epoch milliseconds.
///
/// `format` parses the anchor date; `now_millis` is the value of `now`; `zone`
/// (UTC if `None`) applies to dates without an offset and to calendar
/// arithmetic and rounding; `round_up` selects the end of the unit for `/unit`
/// and maximal time fields for a bare date (used for `lte` and `gt` bounds).
pub fn parse_date_math(
    expr: &str,
    format: &DateFormat,
    now_millis: i64,
    zone: Option<&TimeZone>,
    round_up: bool,
) -> Result<i64> {
    let (anchor, math) = if let Some(rest) = expr.strip_prefix("now") {
        (now_millis, rest)
    } else {
        match expr.find("||") {
            None => return parse_anchor(expr, format, zone, round_up),
            Some(i) => (
                parse_anchor(&expr[..i], format, zone, false)?,
                &expr[i + 2..],
            ),
        }
    };
    apply_math(math, anchor, zone, round_up)
}

fn parse_anchor(
    text: &str,
    format: &DateFormat,
    zone: Option<&TimeZone>,
    round_up: bool,
) -> Result<i64> {
    if text.is_empty() {
        return Err(DateError::new("cannot parse empty date"));
    }
    format.parse_millis(text, zone, round_up).map_err(|e| {
        DateError::new(format!(
            "failed to parse date field [{text}] with format [{}]: [{}]",
            format.spec(),
            e.message
        ))
    })
}

/// A zoned date-time: an instant plus the offset it is currently shown with.
struct Zoned<'a> {
    utc: i64,
    offset: i64,
    zone: Option<&'a TimeZone>,
}

impl Zoned<'_> {
    fn offset_at(&self, utc: i64) -> i64 {
        self.zone.map_or(0, |z| z.offset_at_utc(utc))
    }

    fn fields(&self) -> DateTimeFields {
        DateTimeFields::from_millis(self.utc.saturating_add(self.offset))
    }

    /// Moves to a new wall-clock time, keeping the current offset if still valid.
    fn set_local(&mut self, local: i64) {
        self.utc = match self.zone {
            Some(z) => z.local_to_utc_preferring(local, Some(self.offset)),
            None => local,
        };
        self.offset = self.offset_at(self.utc);
    }

    fn set_date_time(&mut self, y: i64, m: u32, d: u32, millis_of_day: i64) -> Result<()> {
        if !(civil::MIN_YEAR..=civil::MAX_YEAR).contains(&y) {
            return Err(out_of_range());
        }
        let local = civil::millis_from_parts(civil::days_from_civil(y, m, d), millis_of_day)
            .ok_or_else(out_of_range)?;
        self.set_local(local);
        Ok(())
    }

    fn set_instant(&mut self, utc: i64) {
        self.utc = utc;
        self.offset = self.offset_at(utc);
    }

    fn add_months(&mut self, months: i64) -> Result<()> {
        let f = self.fields();
        let (y, m, d) =
            civil::add_months(f.year, f.month, f.day, months).ok_or_else(out_of_range)?;
        self.set_date_time(y, m, d, f.millis_of_day())
    }

    fn add_days(&mut self, days: i64) -> Result<()> {
        let f = self.fields();
        let (y, m, d) =
            civil::civil_from_days(f.epoch_day.checked_add(days).ok_or_else(out_of_range)?);
        self.set_date_time(y, m, d, f.millis_of_day())
    }

    fn add_millis(&mut self, millis: i64) -> Result<()> {
        let utc = self.utc.checked_add(millis).ok_or_else(out_of_range)?;
        self.set_instant(utc);
        Ok(())
    }
}

fn out_of_range() -> DateError {
    DateError::new("date math result is out of the supported range")
}

fn apply_math(math: &str, anchor: i64, zone: Option<&TimeZone>, round_up: bool) -> Result<i64> {
    let mut dt = Zoned {
        utc: anchor,
        offset: 0,
        zone,
    };
    dt.offset = dt.offset_at(anchor);
    let bytes = math.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let op = bytes[i];
        i += 1;
        let (round, sign) = match op {
            b'/' => (true, 1i64),
            b'+' => (false, 1),
            b'-' => (false, -1),
            _ => {
                return Err(DateError::new(format!(
                    "operator not supported for date math [{math}]"
                )))
            }
        };
        if i >= bytes.len() {
            return Err(DateError::new(format!("truncated date math [{math}]")));
        }
        let num: i64 = if !bytes[i].is_ascii_digit() {
            1
        } else {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            if i >= bytes.len() {
                return Err(DateError::new(format!("truncated date math [{math}]")));
            }
            // Java parses the amount as an int.
            let n: i32 = math[start..i].parse().map_err(|_| {
                DateError::new(format!(
                    "failed to parse date math [{math}]: number [{}] is too large",
                    &math[start..i]
                ))
            })?;
            i64::from(n)
        };
        if round && num != 1 {
            return Err(DateError::new(format!(
                "rounding `/` can only be used on single unit types [{math}]"
            )));
        }
        let unit = bytes[i];
        i += 1;
        let amount = sign * num;
        match unit {
            b'y' => {
                if round {
                    let f = dt.fields();
                    dt.set_date_time(f.year, 1, 1, f.millis_of_day())?;
                    let f = dt.fields();
                    dt.set_date_time(f.year, f.month, f.day, 0)?;
                    if round_up {
                        dt.add_months(12)?;
                    }
                } else {
                    dt.add_months(amount.checked_mul(12).ok_or_else(out_of_range)?)?;
                }
            }
            b'M' => {
                if round {
                    let f = dt.fields();
                    dt.set_date_time(f.year, f.month, 1, f.millis_of_day())?;
                    let f = dt.fields();
                    dt.set_date_time(f.year, f.month, f.day, 0)?;
                    if round_up {
                        dt.add_months(1)?;
                    }
                } else {
                    dt.add_months(amount)?;
                }
            }
            b'w' => {
                if round {
                    let f = dt.fields();
                    dt.add_days(1 - i64::from(civil::day_of_week(f.epoch_day)))?;
                    let f = dt.fields();
                    dt.set_date_time(f.year, f.month, f.day, 0)?;
                    if round_up {
                        dt.add_days(7)?;
                    }
                } else {
                    dt.add_days(amount * 7)?;
                }
            }
            b'd' => {
                if round {
                    let f = dt.fields();
                    dt.set_date_time(f.year, f.month, f.day, 0)?;
                    if round_up {
                        dt.add_days(1)?;
                    }
                } else {
                    dt.add_days(amount)?;
                }
            }
            b'h' | b'H' => {
                if round {
                    let f = dt.fields();
                    let hour_start = i64::from(f.hour) * MILLIS_PER_HOUR;
                    dt.set_date_time(f.year, f.month, f.day, hour_start)?;
                    if round_up {
                        dt.add_millis(MILLIS_PER_HOUR)?;
                    }
                } else {
                    dt.add_millis(amount * MILLIS_PER_HOUR)?;
                }
            }
            b'm' => {
                if round {
                    let f = dt.fields();
                    let minute_start = i64::from(f.hour) * MILLIS_PER_HOUR
                        + i64::from(f.minute) * MILLIS_PER_MINUTE;
                    dt.set_date_time(f.year, f.month, f.day, minute_start)?;
                    if round_up {
                        dt.add_millis(MILLIS_PER_MINUTE)?;
                    }
                } else {
                    dt.add_millis(amount * MILLIS_PER_MINUTE)?;
                }
            }
            b's' => {
                if round {
                    let f = dt.fields();
                    dt.set_date_time(
                        f.year,
                        f.month,
                        f.day,
                        f.millis_of_day() - i64::from(f.millis),
                    )?;
                    if round_up {
                        dt.add_millis(1000)?;
                    }
                } else {
                    dt.add_millis(amount * 1000)?;
                }
            }
            _ => {
                return Err(DateError::new(format!(
                    "unit [{}] not supported for date math [{math}]",
                    char::from(unit)
                )))
            }
        }
        if round && round_up {
            dt.add_millis(-1)?;
        }
    }
    Ok(dt.utc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::civil::MILLIS_PER_DAY;

    const JAN_1_2015: i64 = 1_420_070_400_000;
    const JAN_21_2015: i64 = 1_421_798_400_000;
    const H: i64 = MILLIS_PER_HOUR;
    const D: i64 = MILLIS_PER_DAY;

    fn math(expr: &str, now: i64, round_up: bool) -> i64 {
        parse_date_math(expr, &DateFormat::default_format(), now, None, round_up)
            .unwrap_or_else(|e| panic!("{expr}: {e}"))
    }

    fn err(expr: &str) -> String {
        parse_date_math(expr, &DateFormat::default_format(), 0, None, false)
            .unwrap_err()
            .message
    }

    #[test]
    fn now_expressions() {
        let now = JAN_21_2015 + 10 * H + 30 * 60_000 + 15_500;
        assert_eq!(math("now", now, false), now);
        assert_eq!(math("now", now, true), now);
        assert_eq!(math("now-1d", now, false), now - D);
        assert_eq!(math("now-1d/d", now, false), JAN_21_2015 - D);
        assert_eq!(math("now-1d/d", now, true), JAN_21_2015 - 1);
        assert_eq!(math("now+1h", now, false), now + H);
        assert_eq!(math("now+2H", now, false), now + 2 * H);
        assert_eq!(math("now/h", now, false), JAN_21_2015 + 10 * H);
        assert_eq!(
            math("now/m", now, false),
            JAN_21_2015 + 10 * H + 30 * 60_000
        );
        assert_eq!(
            math("now/s", now, true),
            JAN_21_2015 + 10 * H + 30 * 60_000 + 15_999
        );
        assert_eq!(math("now/w", now, false), JAN_21_2015 - 2 * D); // Monday 2015-01-19
        assert_eq!(math("now/w", now, true), JAN_21_2015 + 5 * D - 1);
        assert_eq!(math("now/M", now, false), JAN_1_2015);
        assert_eq!(math("now/M", now, true), JAN_1_2015 + 31 * D - 1);
        assert_eq!(math("now/y", now, false), JAN_1_2015);
        assert_eq!(math("now/y", now, true), JAN_1_2015 + 365 * D - 1);
        assert_eq!(math("now+1y-1M+1w/d", now, false), 1_451_260_800_000);
        assert_eq!(math("now-10m+1s", now, false), now - 600_000 + 1000);
        assert_eq!(math("now+d", now, false), now + D);
    }

    #[test]
    fn anchored_expressions() {
        assert_eq!(math("2015-01-01||+1M/d", 0, false), JAN_1_2015 + 31 * D);
        assert_eq!(math("2015-01-01||+1M/d", 0, true), JAN_1_2015 + 32 * D - 1);
        assert_eq!(math("2015-01-21||/M", 0, false), JAN_1_2015);
        assert_eq!(math("2015-01-21||/M", 0, true), JAN_1_2015 + 31 * D - 1);
        assert_eq!(math("2015-01-31||+1M", 0, false), JAN_1_2015 + 58 * D); // Feb 28
        assert_eq!(math("2016-02-29||+1y", 0, false), 1_488_240_000_000); // 2017-02-28
        assert_eq!(math("2015-01-21||", 0, false), JAN_21_2015);
        // The anchor before || is never rounded up; a bare date is.
        assert_eq!(math("2015-01-21||", 0, true), JAN_21_2015);
        assert_eq!(math("2015-01-21", 0, true), JAN_21_2015 + D - 1);
        assert_eq!(math("1421798400000||+1d", 0, false), JAN_21_2015 + D);
    }

    #[test]
    fn zoned_math() {
        let paris = TimeZone::parse("Europe/Paris").unwrap();
        let f = DateFormat::default_format();
        // 2015-03-29 is the spring-forward day in Paris (23 hours long).
        let mar29_local_midnight = 1_427_583_600_000; // 2015-03-28T23:00:00Z
        let now = mar29_local_midnight + 12 * H;
        assert_eq!(
            parse_date_math("now/d", &f, now, Some(&paris), false).unwrap(),
            mar29_local_midnight
        );
        assert_eq!(
            parse_date_math("now/d", &f, now, Some(&paris), true).unwrap(),
            mar29_local_midnight + 23 * H - 1
        );
        // Adding a day keeps the wall clock (23 real hours on that day).
        let before = mar29_local_midnight - 12 * H; // 2015-03-28T12:00 local
        assert_eq!(
            parse_date_math("now+1d", &f, before, Some(&paris), false).unwrap(),
            before + 23 * H
        );
        assert_eq!(
            parse_date_math("now+24h", &f, before, Some(&paris), false).unwrap(),
            before + 24 * H
        );
        // An anchor without offset is read in the zone.
        assert_eq!(
            parse_date_math("2015-01-21||/d", &f, 0, Some(&paris), false).unwrap(),
            JAN_21_2015 - H
        );
        let plus2 = TimeZone::parse("+02:00").unwrap();
        assert_eq!(
            parse_date_math("now/d", &f, JAN_21_2015 + H, Some(&plus2), false).unwrap(),
            JAN_21_2015 - 2 * H
        );
    }

    #[test]
    fn errors() {
        assert_eq!(err("now*1d"), "operator not supported for date math [*1d]");
        assert_eq!(err("now+"), "truncated date math [+]");
        assert_eq!(err("now+1"), "truncated date math [+1]");
        assert_eq!(
            err("now/2d"),
            "rounding `/` can only be used on single unit types [/2d]"
        );
        assert_eq!(err("now+1x"), "unit [x] not supported for date math [+1x]");
        assert_eq!(err("nowx"), "operator not supported for date math [x]");
        assert_eq!(err(""), "cannot parse empty date");
        assert_eq!(err("||+1d"), "cannot parse empty date");
        assert_eq!(
            err("foo||+1d"),
            "failed to parse date field [foo] with format [strict_date_optional_time||epoch_millis]: \
             [failed to parse date field [foo] with format [strict_date_optional_time||epoch_millis]]"
        );
        assert!(err("now+99999999999d").contains("too large"));
        assert!(parse_date_math(
            "now+2147483647y",
            &DateFormat::default_format(),
            0,
            None,
            false
        )
        .is_err());
        assert!(parse_date_math(
            "now+2147483647d",
            &DateFormat::default_format(),
            0,
            None,
            false
        )
        .is_ok());
        assert!(parse_date_math(
            "now+2147483647h",
            &DateFormat::default_format(),
            i64::MAX - 10,
            None,
            false
        )
        .is_err());
        assert!(parse_date_math(
            "now/y",
            &DateFormat::default_format(),
            i64::MIN,
            None,
            false
        )
        .is_err());
        assert!(parse_date_math("now+é", &DateFormat::default_format(), 0, None, false).is_err());
    }
}
