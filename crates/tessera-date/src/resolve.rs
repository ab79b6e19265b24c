//! Turns raw parsed fields into an instant (UTC epoch milliseconds).
//!
//! This is the combination of `java.time`'s STRICT resolver (range checks,
//! cross-checks between redundant fields such as a day-of-week that must match
//! the date) and OpenSearch's `DateFormatters.from`, which fills in what a
//! format does not carry: a missing year falls back to 1970, a missing month or
//! day to 1, missing time fields to 0 — or, for the round-up parser used by
//! range queries (`lte`, `gt`), missing time fields to their maximum
//! (23:59:59.999). Inputs without an offset are read in the caller's zone.

use crate::civil::{self, MAX_YEAR, MIN_YEAR};
use crate::engine::Parsed;
use crate::items::Field;
use crate::zone::TimeZone;

/// A parsed value that is out of range or contradicts another one.
#[derive(Debug)]
pub(crate) struct Invalid;

type Res<T> = Result<T, Invalid>;

fn in_range(v: i64, lo: i64, hi: i64) -> Res<i64> {
    if (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(Invalid)
    }
}

fn checked(p: &Parsed, f: Field, lo: i64, hi: i64) -> Res<Option<i64>> {
    p.get(f).map(|v| in_range(v, lo, hi)).transpose()
}

/// Stores `v` in `slot` unless it already holds a different value.
fn merge(slot: &mut Option<i64>, v: i64) -> Res<()> {
    match slot {
        Some(old) if *old != v => Err(Invalid),
        _ => {
            *slot = Some(v);
            Ok(())
        }
    }
}

/// The instant of `p`; `zone` applies when the input carried no offset or zone.
pub(crate) fn resolve(p: &Parsed, zone: Option<&TimeZone>, round_up: bool) -> Res<i64> {
    if let Some(epoch) = p.epoch {
        let mut nanos = epoch.nanos;
        if round_up && epoch.whole_seconds {
            nanos += 999_999_999;
        }
        return i64::try_from(nanos.div_euclid(1_000_000)).map_err(|_| Invalid);
    }
    let days = resolve_date(p)?;
    let millis_of_day = resolve_time(p, round_up)?;
    let local = civil::millis_from_parts(days, millis_of_day).ok_or(Invalid)?;
    if let Some(offset) = p.offset {
        return local.checked_sub(offset * 1000).ok_or(Invalid);
    }
    Ok(match p.zone.as_ref().or(zone) {
        Some(z) => z.local_to_utc(local),
        None => local,
    })
}

fn resolve_year(p: &Parsed) -> Res<Option<i64>> {
    let mut year = p.get(Field::Year);
    if let Some(yoe) = p.get(Field::YearOfEra) {
        in_range(yoe, 1, i64::MAX)?;
        let y = match checked(p, Field::Era, 0, 1)? {
            Some(0) => 1 - yoe,
            _ => yoe,
        };
        merge(&mut year, y)?;
    }
    if let Some(y) = year {
        in_range(y, MIN_YEAR, MAX_YEAR)?;
    }
    Ok(year)
}

fn resolve_date(p: &Parsed) -> Res<i64> {
    let year = resolve_year(p)?;
    let month = checked(p, Field::Month, 1, 12)?;
    let dom = checked(p, Field::DayOfMonth, 1, 31)?;
    let doy = checked(p, Field::DayOfYear, 1, 366)?;
    let dow = checked(p, Field::DayOfWeek, 1, 7)?;
    let quarter = checked(p, Field::Quarter, 1, 4)?;
    let wby = checked(p, Field::WeekBasedYear, MIN_YEAR, MAX_YEAR)?;
    let week = checked(p, Field::WeekOfWeekBasedYear, 1, 53)?;

    let civil_date = |y: i64, m: i64, d: i64| -> Res<i64> {
        let (m, d) = (m as u32, d as u32);
        if d > civil::days_in_month(y, m) {
            return Err(Invalid);
        }
        Ok(civil::days_from_civil(y, m, d))
    };
    let ordinal = |y: i64, doy: i64| civil::days_from_ordinal(y, doy as u32).ok_or(Invalid);

    // Like OpenSearch, a week-based date ignores calendar month/day fields.
    let mut week_based = false;
    let days = if let Some(mjd) = p.get(Field::ModifiedJulianDay) {
        let days = mjd.checked_sub(40_587).ok_or(Invalid)?;
        let (y, _, _) = civil::civil_from_days(days.clamp(-(1 << 40), 1 << 40));
        in_range(y, MIN_YEAR, MAX_YEAR)?;
        days
    } else if let Some(y) = year {
        match (month, doy) {
            (Some(m), _) => civil_date(y, m, dom.unwrap_or(1))?,
            (None, Some(doy)) => ordinal(y, doy)?,
            (None, None) => civil::days_from_civil(y, 1, 1),
        }
    } else if let Some(wby) = wby {
        week_based = true;
        let week = week.unwrap_or(1) as u32;
        let dow = dow.unwrap_or(1) as u32;
        civil::days_from_iso_week(wby, week, dow).ok_or(Invalid)?
    } else if let Some(m) = month {
        civil_date(1970, m, dom.unwrap_or(1))?
    } else if let Some(doy) = doy {
        ordinal(1970, doy)?
    } else {
        0
    };

    // Cross-checks between redundant fields, as java.time's STRICT resolver does.
    let (y, m, d) = civil::civil_from_days(days);
    let m = i64::from(m);
    let d = i64::from(d);
    if year.is_some_and(|v| v != y) {
        return Err(Invalid);
    }
    if !week_based {
        if month.is_some_and(|v| v != m) || (month.is_some() && dom.is_some_and(|v| v != d)) {
            return Err(Invalid);
        }
        if quarter.is_some_and(|q| q != (m - 1) / 3 + 1) {
            return Err(Invalid);
        }
        if wby.is_some() || week.is_some() {
            let (wy, ww) = civil::iso_week(days);
            if wby.is_some_and(|v| v != wy) || week.is_some_and(|v| v != i64::from(ww)) {
                return Err(Invalid);
            }
        }
    }
    if doy.is_some_and(|v| v != i64::from(civil::day_of_year(y, m as u32, d as u32))) {
        return Err(Invalid);
    }
    if dow.is_some_and(|v| v != i64::from(civil::day_of_week(days))) {
        return Err(Invalid);
    }
    Ok(days)
}

fn resolve_time(p: &Parsed, round_up: bool) -> Res<i64> {
    let mut hour = checked(p, Field::HourOfDay, 0, 23)?;
    if let Some(k) = checked(p, Field::ClockHourOfDay, 1, 24)? {
        merge(&mut hour, k % 24)?;
    }
    let ampm = checked(p, Field::AmPm, 0, 1)?;
    let mut half = checked(p, Field::ClockHourOfAmPm, 1, 12)?.map(|h| h % 12);
    if let Some(k) = checked(p, Field::HourOfAmPm, 0, 11)? {
        merge(&mut half, k)?;
    }
    match (half, ampm) {
        (Some(h), ap) => merge(&mut hour, ap.unwrap_or(0) * 12 + h)?,
        (None, Some(ap)) => {
            if hour.is_some_and(|h| h / 12 != ap) {
                return Err(Invalid);
            }
        }
        (None, None) => {}
    }
    let mut minute = checked(p, Field::Minute, 0, 59)?;
    let mut second = checked(p, Field::Second, 0, 59)?;
    let mut nano = checked(p, Field::NanoOfSecond, 0, 999_999_999)?;
    let mut of_day = |nanos_of_day: i64| -> Res<()> {
        let secs = nanos_of_day / 1_000_000_000;
        merge(&mut hour, secs / 3600)?;
        merge(&mut minute, secs / 60 % 60)?;
        merge(&mut second, secs % 60)?;
        merge(&mut nano, nanos_of_day % 1_000_000_000)
    };
    if let Some(ms) = checked(p, Field::MilliOfDay, 0, 86_399_999)? {
        of_day(ms * 1_000_000)?;
    }
    if let Some(ns) = checked(p, Field::NanoOfDay, 0, 86_399_999_999_999)? {
        of_day(ns)?;
    }
    let (h, mi, s, n) = if round_up {
        (
            hour.unwrap_or(23),
            minute.unwrap_or(59),
            second.unwrap_or(59),
            nano.unwrap_or(999_999_999),
        )
    } else {
        (
            hour.unwrap_or(0),
            minute.unwrap_or(0),
            second.unwrap_or(0),
            nano.unwrap_or(0),
        )
    };
    Ok(h * 3_600_000 + mi * 60_000 + s * 1000 + n / 1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(fields: &[(Field, i64)]) -> Parsed {
        let mut p = Parsed::default();
        for &(f, v) in fields {
            assert!(p.set(f, v));
        }
        p
    }

    const JAN_21_2015: i64 = 1_421_798_400_000;

    #[test]
    fn dates_and_defaults() {
        let p = parsed(&[
            (Field::Year, 2015),
            (Field::Month, 1),
            (Field::DayOfMonth, 21),
        ]);
        assert_eq!(resolve(&p, None, false).unwrap(), JAN_21_2015);
        assert_eq!(
            resolve(&p, None, true).unwrap(),
            JAN_21_2015 + 86_400_000 - 1
        );
        let p = parsed(&[(Field::YearOfEra, 2015)]);
        assert_eq!(resolve(&p, None, false).unwrap(), 1_420_070_400_000);
        let p = parsed(&[(Field::HourOfDay, 10)]);
        assert_eq!(resolve(&p, None, false).unwrap(), 36_000_000);
        assert_eq!(resolve(&p, None, true).unwrap(), 36_000_000 + 3_599_999);
    }

    #[test]
    fn strict_checks() {
        let p = parsed(&[
            (Field::Year, 2015),
            (Field::Month, 2),
            (Field::DayOfMonth, 29),
        ]);
        assert!(resolve(&p, None, false).is_err());
        let p = parsed(&[
            (Field::Year, 2016),
            (Field::Month, 2),
            (Field::DayOfMonth, 29),
        ]);
        assert!(resolve(&p, None, false).is_ok());
        let p = parsed(&[(Field::Year, 2015), (Field::Month, 13)]);
        assert!(resolve(&p, None, false).is_err());
        // 2015-01-21 was a Wednesday (3).
        let p = parsed(&[
            (Field::Year, 2015),
            (Field::Month, 1),
            (Field::DayOfMonth, 21),
            (Field::DayOfWeek, 4),
        ]);
        assert!(resolve(&p, None, false).is_err());
        let p = parsed(&[(Field::YearOfEra, 0)]);
        assert!(resolve(&p, None, false).is_err());
        let p = parsed(&[(Field::Year, 1_000_000_000)]);
        assert!(resolve(&p, None, false).is_err());
        let p = parsed(&[(Field::HourOfDay, 13), (Field::AmPm, 0)]);
        assert!(resolve(&p, None, false).is_err());
    }

    #[test]
    fn am_pm_and_clock_hours() {
        let p = parsed(&[(Field::ClockHourOfAmPm, 12), (Field::AmPm, 0)]);
        assert_eq!(resolve(&p, None, false).unwrap(), 0);
        let p = parsed(&[(Field::ClockHourOfAmPm, 12), (Field::AmPm, 1)]);
        assert_eq!(resolve(&p, None, false).unwrap(), 12 * 3_600_000);
        let p = parsed(&[(Field::ClockHourOfDay, 24)]);
        assert_eq!(resolve(&p, None, false).unwrap(), 0);
    }

    #[test]
    fn eras_weeks_and_ordinals() {
        let p = parsed(&[(Field::YearOfEra, 1), (Field::Era, 0)]);
        assert_eq!(
            resolve(&p, None, false).unwrap(),
            civil::days_from_civil(0, 1, 1) * 86_400_000
        );
        let p = parsed(&[
            (Field::WeekBasedYear, 2015),
            (Field::WeekOfWeekBasedYear, 1),
        ]);
        assert_eq!(
            resolve(&p, None, false).unwrap(),
            civil::days_from_civil(2014, 12, 29) * 86_400_000
        );
        let p = parsed(&[(Field::Year, 2015), (Field::DayOfYear, 21)]);
        assert_eq!(resolve(&p, None, false).unwrap(), JAN_21_2015);
    }

    #[test]
    fn offsets_and_zones() {
        let mut p = parsed(&[
            (Field::Year, 2015),
            (Field::Month, 1),
            (Field::DayOfMonth, 21),
        ]);
        let plus_one = TimeZone::parse("+01:00").unwrap();
        assert_eq!(
            resolve(&p, Some(&plus_one), false).unwrap(),
            JAN_21_2015 - 3_600_000
        );
        p.offset = Some(-3600);
        assert_eq!(
            resolve(&p, Some(&plus_one), false).unwrap(),
            JAN_21_2015 + 3_600_000
        );
    }
}
