//! Bucket boundaries for `date_histogram`: calendar units and fixed intervals.
//!
//! Calendar intervals (`1d`, `1M`, …) are rounded on the local wall clock of
//! the aggregation's `time_zone`, as OpenSearch's `Rounding` does: a day bucket
//! starts at local midnight (or, on a day whose midnight falls in a DST gap, at
//! the first instant of that day), weeks start on Monday, and `next` steps by
//! calendar amounts so that month buckets follow month lengths and day buckets
//! are 23 or 25 hours long across DST changes. Sub-day units stay aligned with
//! local hour/minute boundaries, also in zones with half-hour offsets.
//! Fixed intervals are plain durations in milliseconds.

use crate::civil::{self, MILLIS_PER_DAY, MILLIS_PER_HOUR, MILLIS_PER_MINUTE, MILLIS_PER_SECOND};
use crate::zone::TimeZone;

/// Calendar units for `date_histogram`'s `calendar_interval`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CalendarUnit {
    Second,
    Minute,
    Hour,
    Day,
    /// ISO week, starting on Monday.
    Week,
    Month,
    Quarter,
    Year,
}

impl CalendarUnit {
    /// Parses `1s`/`second`, `1m`/`minute`, `1h`/`hour`, `1d`/`day`, `1w`/`week`,
    /// `1M`/`month`, `1q`/`quarter`, `1y`/`year` (case-sensitive, as in OpenSearch).
    pub fn parse(s: &str) -> Option<CalendarUnit> {
        Some(match s {
            "1s" | "second" => CalendarUnit::Second,
            "1m" | "minute" => CalendarUnit::Minute,
            "1h" | "hour" => CalendarUnit::Hour,
            "1d" | "day" => CalendarUnit::Day,
            "1w" | "week" => CalendarUnit::Week,
            "1M" | "month" => CalendarUnit::Month,
            "1q" | "quarter" => CalendarUnit::Quarter,
            "1y" | "year" => CalendarUnit::Year,
            _ => return None,
        })
    }

    /// The unit's length when it is a fixed duration (second, minute, hour).
    fn fixed_millis(self) -> Option<i64> {
        match self {
            CalendarUnit::Second => Some(MILLIS_PER_SECOND),
            CalendarUnit::Minute => Some(MILLIS_PER_MINUTE),
            CalendarUnit::Hour => Some(MILLIS_PER_HOUR),
            _ => None,
        }
    }

    /// Start of the unit containing `utc_millis`, computed on the local wall clock
    /// of `zone`, returned as UTC millis.
    pub fn round_down(self, utc_millis: i64, zone: &TimeZone) -> i64 {
        if let Some(unit) = self.fixed_millis() {
            return match zone.fixed_offset() {
                Some(off) => floor_to(utc_millis.saturating_add(off), unit).saturating_sub(off),
                None => round_sub_day(utc_millis, zone, unit),
            };
        }
        let local = zone.utc_to_local(utc_millis);
        let start_days = self.truncate_days(civil::split_millis(local).0);
        local_day_start(start_days, zone)
    }

    /// The start of the unit after the one starting at `bucket_start_utc` (e.g.
    /// the next month), in UTC millis, zone-aware.
    pub fn next(self, bucket_start_utc: i64, zone: &TimeZone) -> i64 {
        if let Some(unit) = self.fixed_millis() {
            let step = bucket_start_utc.saturating_add(unit);
            if zone.fixed_offset().is_some() {
                return step;
            }
            let next = self.round_down(step, zone);
            return if next > bucket_start_utc { next } else { step };
        }
        let local = zone.utc_to_local(bucket_start_utc);
        let days = self.truncate_days(civil::split_millis(local).0);
        let next_days = match self {
            CalendarUnit::Day => days.saturating_add(1),
            CalendarUnit::Week => days.saturating_add(7),
            CalendarUnit::Month | CalendarUnit::Quarter | CalendarUnit::Year => {
                let months = match self {
                    CalendarUnit::Month => 1,
                    CalendarUnit::Quarter => 3,
                    _ => 12,
                };
                let (y, m, d) = civil::civil_from_days(days);
                match civil::add_months(y, m, d, months) {
                    Some((y, m, d)) => civil::days_from_civil(y, m, d),
                    None => return i64::MAX,
                }
            }
            _ => days.saturating_add(1),
        };
        let next = local_day_start(next_days, zone);
        if next > bucket_start_utc {
            next
        } else {
            bucket_start_utc.saturating_add(1)
        }
    }

    /// First epoch day of the unit containing epoch day `days` (day units and up).
    fn truncate_days(self, days: i64) -> i64 {
        let (y, m, _) = civil::civil_from_days(days);
        match self {
            CalendarUnit::Week => days - i64::from(civil::day_of_week(days)) + 1,
            CalendarUnit::Month => civil::days_from_civil(y, m, 1),
            CalendarUnit::Quarter => civil::days_from_civil(y, (m - 1) / 3 * 3 + 1, 1),
            CalendarUnit::Year => civil::days_from_civil(y, 1, 1),
            _ => days,
        }
    }
}

fn floor_to(v: i64, unit: i64) -> i64 {
    v.saturating_sub(v.rem_euclid(unit))
}

/// First instant of local day `days` in `zone` (local midnight, or the end of a
/// DST gap that swallows midnight).
fn local_day_start(days: i64, zone: &TimeZone) -> i64 {
    let local = days.saturating_mul(MILLIS_PER_DAY);
    match zone.fixed_offset() {
        Some(off) => local.saturating_sub(off),
        None => zone.local_to_utc(local),
    }
}

/// Sub-day rounding in a zone with transitions: truncate on the local clock and
/// convert back with the same offset; if an offset change lies between the
/// truncated time and the input, round the instant just before that change
/// instead (OpenSearch's behaviour for such buckets).
fn round_sub_day(utc: i64, zone: &TimeZone, unit: i64) -> i64 {
    let mut t = utc;
    for _ in 0..8 {
        let off = zone.offset_at_utc(t);
        let candidate = floor_to(t.saturating_add(off), unit).saturating_sub(off);
        if zone.offset_at_utc(candidate) == off {
            return candidate;
        }
        // Binary search for the transition into `off` within (candidate, t].
        let (mut lo, mut hi) = (candidate, t);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if zone.offset_at_utc(mid) == off {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        t = hi.saturating_sub(1);
    }
    floor_to(t, unit)
}

/// Parses a fixed interval (`90m`, `1d`, `30s`, `500ms`, `2h`, `1000micros`,
/// `5000000nanos`) into milliseconds, following OpenSearch's `TimeValue`: units
/// are case-insensitive except `m` (minutes) which must be lower-case since `M`
/// means months; values are non-negative integers. `None` for anything else,
/// including intervals that amount to zero milliseconds.
pub fn parse_fixed_interval(s: &str) -> Option<i64> {
    let trimmed = s.trim();
    let lower = trimmed.to_ascii_lowercase();
    let (suffix_len, nanos_per_unit): (usize, i128) = if lower.ends_with("nanos") {
        (5, 1)
    } else if lower.ends_with("micros") {
        (6, 1_000)
    } else if lower.ends_with("ms") {
        (2, 1_000_000)
    } else if lower.ends_with('s') {
        (1, 1_000_000_000)
    } else if trimmed.ends_with('m') {
        (1, 60_000_000_000)
    } else if lower.ends_with('h') {
        (1, 3_600_000_000_000)
    } else if lower.ends_with('d') {
        (1, 86_400_000_000_000)
    } else {
        return None;
    };
    let number = lower[..lower.len() - suffix_len].trim();
    let number = number.strip_prefix('+').unwrap_or(number);
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let value: i64 = number.parse().ok()?;
    let millis = i128::from(value) * nanos_per_unit / 1_000_000;
    i64::try_from(millis).ok().filter(|&ms| ms > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::civil::days_from_civil;

    const H: i64 = MILLIS_PER_HOUR;
    const D: i64 = MILLIS_PER_DAY;

    fn ms(y: i64, m: u32, d: u32, h: i64, mi: i64) -> i64 {
        days_from_civil(y, m, d) * D + h * H + mi * MILLIS_PER_MINUTE
    }

    #[test]
    fn parse_units() {
        assert_eq!(CalendarUnit::parse("1M"), Some(CalendarUnit::Month));
        assert_eq!(CalendarUnit::parse("month"), Some(CalendarUnit::Month));
        assert_eq!(CalendarUnit::parse("1m"), Some(CalendarUnit::Minute));
        assert_eq!(CalendarUnit::parse("1q"), Some(CalendarUnit::Quarter));
        assert_eq!(CalendarUnit::parse("1w"), Some(CalendarUnit::Week));
        assert_eq!(CalendarUnit::parse("1s"), Some(CalendarUnit::Second));
        assert_eq!(CalendarUnit::parse("2d"), None);
        assert_eq!(CalendarUnit::parse("Month"), None);
        assert_eq!(CalendarUnit::parse(""), None);
    }

    #[test]
    fn utc_rounding() {
        let z = TimeZone::utc();
        let t = ms(2015, 5, 20, 13, 45) + 12_345; // Wednesday
        assert_eq!(
            CalendarUnit::Second.round_down(t, &z),
            ms(2015, 5, 20, 13, 45) + 12_000
        );
        assert_eq!(
            CalendarUnit::Minute.round_down(t, &z),
            ms(2015, 5, 20, 13, 45)
        );
        assert_eq!(CalendarUnit::Hour.round_down(t, &z), ms(2015, 5, 20, 13, 0));
        assert_eq!(CalendarUnit::Day.round_down(t, &z), ms(2015, 5, 20, 0, 0));
        assert_eq!(CalendarUnit::Week.round_down(t, &z), ms(2015, 5, 18, 0, 0));
        assert_eq!(CalendarUnit::Month.round_down(t, &z), ms(2015, 5, 1, 0, 0));
        assert_eq!(
            CalendarUnit::Quarter.round_down(t, &z),
            ms(2015, 4, 1, 0, 0)
        );
        assert_eq!(CalendarUnit::Year.round_down(t, &z), ms(2015, 1, 1, 0, 0));
        assert_eq!(
            CalendarUnit::Week.next(ms(2015, 5, 18, 0, 0), &z),
            ms(2015, 5, 25, 0, 0)
        );
        assert_eq!(
            CalendarUnit::Month.next(ms(2015, 1, 1, 0, 0), &z),
            ms(2015, 2, 1, 0, 0)
        );
        assert_eq!(
            CalendarUnit::Month.next(ms(2015, 2, 1, 0, 0), &z),
            ms(2015, 3, 1, 0, 0)
        );
        assert_eq!(
            CalendarUnit::Quarter.next(ms(2015, 10, 1, 0, 0), &z),
            ms(2016, 1, 1, 0, 0)
        );
        assert_eq!(
            CalendarUnit::Year.next(ms(2015, 1, 1, 0, 0), &z),
            ms(2016, 1, 1, 0, 0)
        );
        assert_eq!(
            CalendarUnit::Hour.next(ms(2015, 1, 1, 0, 0), &z),
            ms(2015, 1, 1, 1, 0)
        );
        // Negative instants round towards the past.
        assert_eq!(CalendarUnit::Day.round_down(-1, &z), -D);
        assert_eq!(CalendarUnit::Year.round_down(-1, &z), ms(1969, 1, 1, 0, 0));
        assert_eq!(CalendarUnit::Week.round_down(0, &z), ms(1969, 12, 29, 0, 0));
    }

    #[test]
    fn fixed_offset_rounding() {
        let z = TimeZone::parse("-05:30").unwrap();
        let t = ms(2015, 1, 1, 3, 0); // 2014-12-31T21:30 local
        assert_eq!(CalendarUnit::Day.round_down(t, &z), ms(2014, 12, 31, 5, 30));
        assert_eq!(
            CalendarUnit::Month.round_down(t, &z),
            ms(2014, 12, 1, 5, 30)
        );
        assert_eq!(CalendarUnit::Year.round_down(t, &z), ms(2014, 1, 1, 5, 30));
        assert_eq!(CalendarUnit::Hour.round_down(t, &z), ms(2015, 1, 1, 2, 30));
        assert_eq!(
            CalendarUnit::Day.next(ms(2014, 12, 31, 5, 30), &z),
            ms(2015, 1, 1, 5, 30)
        );
    }

    #[test]
    fn paris_across_dst() {
        let z = TimeZone::parse("Europe/Paris").unwrap();
        // Spring forward on 2015-03-29 at 02:00 local (01:00Z): that day has 23 hours.
        let day = ms(2015, 3, 28, 23, 0); // local midnight of the 29th
        let t = ms(2015, 3, 29, 12, 0);
        assert_eq!(CalendarUnit::Day.round_down(t, &z), day);
        assert_eq!(CalendarUnit::Day.next(day, &z), day + 23 * H);
        // Fall back on 2015-10-25 at 03:00 local (01:00Z): that day has 25 hours.
        let day = ms(2015, 10, 24, 22, 0);
        assert_eq!(
            CalendarUnit::Day.round_down(ms(2015, 10, 25, 12, 0), &z),
            day
        );
        assert_eq!(CalendarUnit::Day.next(day, &z), day + 25 * H);
        // Months and weeks start at local midnight with the offset of that moment.
        assert_eq!(
            CalendarUnit::Month.round_down(t, &z),
            ms(2015, 2, 28, 23, 0)
        );
        assert_eq!(
            CalendarUnit::Month.next(ms(2015, 2, 28, 23, 0), &z),
            ms(2015, 3, 31, 22, 0)
        );
        assert_eq!(CalendarUnit::Week.round_down(t, &z), ms(2015, 3, 22, 23, 0));
        assert_eq!(
            CalendarUnit::Week.next(ms(2015, 3, 22, 23, 0), &z),
            ms(2015, 3, 29, 22, 0)
        );
        assert_eq!(
            CalendarUnit::Quarter.round_down(ms(2015, 5, 1, 0, 0), &z),
            ms(2015, 3, 31, 22, 0)
        );
        assert_eq!(
            CalendarUnit::Quarter.next(ms(2015, 3, 31, 22, 0), &z),
            ms(2015, 6, 30, 22, 0)
        );
        assert_eq!(
            CalendarUnit::Year.round_down(ms(2015, 7, 1, 0, 0), &z),
            ms(2014, 12, 31, 23, 0)
        );
        assert_eq!(
            CalendarUnit::Year.next(ms(2014, 12, 31, 23, 0), &z),
            ms(2015, 12, 31, 23, 0)
        );
        // Hourly buckets through the fall-back hour: 02:00 local happens twice.
        let h0 = ms(2015, 10, 25, 0, 0); // 02:00 CEST
        assert_eq!(
            CalendarUnit::Hour.round_down(h0 + 30 * MILLIS_PER_MINUTE, &z),
            h0
        );
        assert_eq!(CalendarUnit::Hour.next(h0, &z), h0 + H); // 02:00 CET
        assert_eq!(
            CalendarUnit::Hour.round_down(h0 + 90 * MILLIS_PER_MINUTE, &z),
            h0 + H
        );
        assert_eq!(CalendarUnit::Hour.next(h0 + H, &z), h0 + 2 * H);
        // Through the spring-forward hour.
        let h = ms(2015, 3, 29, 0, 0); // 01:00 CET
        assert_eq!(CalendarUnit::Hour.next(h, &z), h + H); // 03:00 CEST
        assert_eq!(CalendarUnit::Minute.round_down(h + H + 59_999, &z), h + H);
    }

    #[test]
    fn half_hour_zones_and_gaps() {
        let k = TimeZone::parse("Asia/Kolkata").unwrap();
        let t = ms(2015, 1, 1, 10, 45);
        assert_eq!(CalendarUnit::Hour.round_down(t, &k), ms(2015, 1, 1, 10, 30));
        assert_eq!(
            CalendarUnit::Hour.next(ms(2015, 1, 1, 10, 30), &k),
            ms(2015, 1, 1, 11, 30)
        );
        assert_eq!(
            CalendarUnit::Day.round_down(t, &k),
            ms(2014, 12, 31, 18, 30)
        );
        // America/Sao_Paulo used to start DST at midnight: 2014-10-19 began at 01:00 local.
        if let Ok(sp) = TimeZone::parse("America/Sao_Paulo") {
            if sp.offset_at_utc(ms(2014, 10, 19, 12, 0)) == -2 * H {
                let start = CalendarUnit::Day.round_down(ms(2014, 10, 19, 12, 0), &sp);
                assert_eq!(start, ms(2014, 10, 19, 3, 0));
                assert_eq!(CalendarUnit::Day.next(ms(2014, 10, 18, 3, 0), &sp), start);
            }
        }
    }

    #[test]
    fn buckets_always_advance() {
        let zones = [
            "Z",
            "+05:45",
            "Europe/Paris",
            "America/New_York",
            "Australia/Sydney",
            "Asia/Kolkata",
        ];
        let units = [
            CalendarUnit::Second,
            CalendarUnit::Minute,
            CalendarUnit::Hour,
            CalendarUnit::Day,
            CalendarUnit::Week,
            CalendarUnit::Month,
            CalendarUnit::Quarter,
            CalendarUnit::Year,
        ];
        for id in zones {
            let z = TimeZone::parse(id).unwrap();
            for unit in units {
                let mut t = ms(2015, 3, 1, 0, 0);
                let end = ms(2015, 11, 30, 0, 0);
                let step = match unit {
                    CalendarUnit::Second | CalendarUnit::Minute => 7 * H + 13,
                    _ => 5 * H + 17,
                };
                while t < end {
                    let start = unit.round_down(t, &z);
                    let next = unit.next(start, &z);
                    assert!(start <= t, "{id} {unit:?} {t}: start {start}");
                    assert!(next > t, "{id} {unit:?} {t}: next {next}");
                    assert_eq!(
                        unit.round_down(start, &z),
                        start,
                        "{id} {unit:?} idempotent"
                    );
                    t += step;
                }
            }
        }
        for t in [i64::MIN, i64::MAX, i64::MIN + 1, i64::MAX - 1] {
            for unit in units {
                let _ = unit.round_down(t, &TimeZone::utc());
                let _ = unit.next(t, &TimeZone::utc());
                let _ = unit.round_down(t, &TimeZone::parse("Europe/Paris").unwrap());
                let _ = unit.next(t, &TimeZone::parse("Europe/Paris").unwrap());
            }
        }
    }

    #[test]
    fn fixed_intervals() {
        assert_eq!(parse_fixed_interval("90m"), Some(90 * MILLIS_PER_MINUTE));
        assert_eq!(parse_fixed_interval("1d"), Some(D));
        assert_eq!(parse_fixed_interval("30s"), Some(30_000));
        assert_eq!(parse_fixed_interval("500ms"), Some(500));
        assert_eq!(parse_fixed_interval("2h"), Some(2 * H));
        assert_eq!(parse_fixed_interval("2H"), Some(2 * H));
        assert_eq!(parse_fixed_interval(" 10s "), Some(10_000));
        assert_eq!(parse_fixed_interval("1000micros"), Some(1));
        assert_eq!(parse_fixed_interval("5000000nanos"), Some(5));
        assert_eq!(parse_fixed_interval("1M"), None);
        assert_eq!(parse_fixed_interval("1w"), None);
        assert_eq!(parse_fixed_interval("1.5h"), None);
        assert_eq!(parse_fixed_interval("-1h"), None);
        assert_eq!(parse_fixed_interval("0s"), None);
        assert_eq!(parse_fixed_interval("h"), None);
        assert_eq!(parse_fixed_interval(""), None);
        assert_eq!(parse_fixed_interval("99999999999999999999d"), None);
        assert_eq!(parse_fixed_interval("9223372036854775807d"), None);
        assert_eq!(parse_fixed_interval("1µs"), None);
    }
}
