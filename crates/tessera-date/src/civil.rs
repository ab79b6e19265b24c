//! Proleptic Gregorian calendar arithmetic on plain integers.
//!
//! Everything else in the crate reduces dates to "days since 1970-01-01" and
//! "milliseconds of the day", so the conversions between those and civil
//! (year, month, day) triples live here, in one place, with no time zones
//! involved. The two core conversions follow Howard Hinnant's well-known
//! `days_from_civil` / `civil_from_days` algorithms, which are exact for the
//! whole range of `i64` days we use (years roughly ±290 million, the span of
//! `i64` epoch milliseconds).
//!
//! Weeks follow ISO-8601 (weeks start on Monday; week 1 is the week that
//! contains the year's first Thursday), which is what OpenSearch's `Locale.ROOT`
//! week definition amounts to.

/// Milliseconds in a (civil) day.
pub const MILLIS_PER_DAY: i64 = 86_400_000;
/// Milliseconds in an hour.
pub const MILLIS_PER_HOUR: i64 = 3_600_000;
/// Milliseconds in a minute.
pub const MILLIS_PER_MINUTE: i64 = 60_000;
/// Milliseconds in a second.
pub const MILLIS_PER_SECOND: i64 = 1_000;

/// Smallest year whose dates are guaranteed to fit in `i64` epoch milliseconds.
pub const MIN_YEAR: i64 = -290_000_000;
/// Largest year whose dates are guaranteed to fit in `i64` epoch milliseconds.
pub const MAX_YEAR: i64 = 290_000_000;

/// Days since 1970-01-01 of the proleptic Gregorian date `y-m-d`.
///
/// `m` must be 1..=12 and `d` 1..=31 (not checked against the month length:
/// callers validate with [`days_in_month`] first when that matters). Years far
/// outside [`MIN_YEAR`]..=[`MAX_YEAR`] may overflow; callers keep to that range.
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let m = i64::from(m);
    let d = i64::from(d);
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400); // [0, 399]
    let mp = if m > 2 { m - 3 } else { m + 9 }; // March = 0
    let doy = (153 * mp + 2) / 5 + d - 1; // [0, 365]
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; // [0, 146096]
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian date `(year, month, day)` that is `z` days after 1970-01-01.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11]
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32; // [1, 31]
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32; // [1, 12]
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Whether `y` is a leap year in the proleptic Gregorian calendar.
pub fn is_leap(y: i64) -> bool {
    y.rem_euclid(4) == 0 && (y.rem_euclid(100) != 0 || y.rem_euclid(400) == 0)
}

/// Number of days in month `m` (1..=12) of year `y`; 0 for an invalid month.
pub fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(y) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Number of days in year `y`.
pub fn days_in_year(y: i64) -> u32 {
    if is_leap(y) {
        366
    } else {
        365
    }
}

/// ISO day of week of an epoch day: 1 = Monday … 7 = Sunday.
pub fn day_of_week(days: i64) -> u32 {
    // 1970-01-01 was a Thursday (4).
    ((days + 3).rem_euclid(7) + 1) as u32
}

/// Day of year (1-based) of `y-m-d`.
pub fn day_of_year(y: i64, m: u32, d: u32) -> u32 {
    (days_from_civil(y, m, d) - days_from_civil(y, 1, 1) + 1) as u32
}

/// Epoch day of the `doy`-th day (1-based) of year `y`, if `doy` exists in that year.
pub fn days_from_ordinal(y: i64, doy: u32) -> Option<i64> {
    if doy == 0 || doy > days_in_year(y) {
        return None;
    }
    Some(days_from_civil(y, 1, 1) + i64::from(doy) - 1)
}

/// Epoch day of the Monday starting ISO week 1 of week-based year `wby`.
fn iso_week1_monday(wby: i64) -> i64 {
    let jan4 = days_from_civil(wby, 1, 4);
    jan4 - i64::from(day_of_week(jan4)) + 1
}

/// Number of ISO weeks (52 or 53) in week-based year `wby`.
pub fn iso_weeks_in_year(wby: i64) -> u32 {
    ((iso_week1_monday(wby + 1) - iso_week1_monday(wby)) / 7) as u32
}

/// ISO week-based year and week number (1..=53) of an epoch day.
pub fn iso_week(days: i64) -> (i64, u32) {
    let (y, _, _) = civil_from_days(days);
    let mut wby = y;
    let mut start = iso_week1_monday(y);
    if days < start {
        wby = y - 1;
        start = iso_week1_monday(wby);
    } else {
        let next = iso_week1_monday(y + 1);
        if days >= next {
            wby = y + 1;
            start = next;
        }
    }
    (wby, ((days - start) / 7 + 1) as u32)
}

/// Epoch day of ISO week date `wby-Www-dow` (dow 1 = Monday), if the week exists.
pub fn days_from_iso_week(wby: i64, week: u32, dow: u32) -> Option<i64> {
    if week == 0 || week > iso_weeks_in_year(wby) || !(1..=7).contains(&dow) {
        return None;
    }
    Some(iso_week1_monday(wby) + i64::from(week - 1) * 7 + i64::from(dow) - 1)
}

/// Adds `months` calendar months to `y-m-d`, clamping the day to the end of the
/// target month (2015-01-31 + 1 month = 2015-02-28), like `java.time`.
/// `None` when the result leaves [`MIN_YEAR`]..=[`MAX_YEAR`].
pub fn add_months(y: i64, m: u32, d: u32, months: i64) -> Option<(i64, u32, u32)> {
    let total = y
        .checked_mul(12)?
        .checked_add(i64::from(m) - 1)?
        .checked_add(months)?;
    let ny = total.div_euclid(12);
    if !(MIN_YEAR..=MAX_YEAR).contains(&ny) {
        return None;
    }
    let nm = (total.rem_euclid(12) + 1) as u32;
    let nd = d.min(days_in_month(ny, nm));
    Some((ny, nm, nd))
}

/// Splits epoch milliseconds into (epoch day, millisecond of day).
pub fn split_millis(millis: i64) -> (i64, i64) {
    (
        millis.div_euclid(MILLIS_PER_DAY),
        millis.rem_euclid(MILLIS_PER_DAY),
    )
}

/// Epoch milliseconds of a local date-time given as epoch day and millisecond of day,
/// or `None` on overflow.
pub fn millis_from_parts(days: i64, millis_of_day: i64) -> Option<i64> {
    days.checked_mul(MILLIS_PER_DAY)?.checked_add(millis_of_day)
}

/// A broken-down date-time (no zone): the fields formatting needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DateTimeFields {
    /// Proleptic year (0 = 1 BC).
    pub year: i64,
    /// Month 1..=12.
    pub month: u32,
    /// Day of month 1..=31.
    pub day: u32,
    /// Hour 0..=23.
    pub hour: u32,
    /// Minute 0..=59.
    pub minute: u32,
    /// Second 0..=59.
    pub second: u32,
    /// Millisecond 0..=999.
    pub millis: u32,
    /// Days since 1970-01-01.
    pub epoch_day: i64,
}

impl DateTimeFields {
    /// Breaks local epoch milliseconds into calendar fields.
    pub fn from_millis(millis: i64) -> DateTimeFields {
        let (days, ms) = split_millis(millis);
        let (year, month, day) = civil_from_days(days);
        DateTimeFields {
            year,
            month,
            day,
            hour: (ms / MILLIS_PER_HOUR) as u32,
            minute: (ms / MILLIS_PER_MINUTE % 60) as u32,
            second: (ms / MILLIS_PER_SECOND % 60) as u32,
            millis: (ms % 1000) as u32,
            epoch_day: days,
        }
    }

    /// Millisecond of the day.
    pub fn millis_of_day(&self) -> i64 {
        i64::from(self.hour) * MILLIS_PER_HOUR
            + i64::from(self.minute) * MILLIS_PER_MINUTE
            + i64::from(self.second) * MILLIS_PER_SECOND
            + i64::from(self.millis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_days() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2015, 1, 1), 16_436);
        assert_eq!(
            days_from_civil(2015, 1, 1) * MILLIS_PER_DAY,
            1_420_070_400_000
        );
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(1, 1, 1), -719_162);
        assert_eq!(days_from_civil(0, 1, 1), -719_528);
    }

    #[test]
    fn round_trip_wide_range() {
        let mut z = -1_000_000_000i64;
        while z < 1_000_000_000 {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z, "day {z}");
            z += 9_973;
        }
        for z in -800_000..800_000 {
            let (y, m, d) = civil_from_days(z);
            assert!(d >= 1 && d <= days_in_month(y, m));
            assert_eq!(days_from_civil(y, m, d), z);
        }
    }

    #[test]
    fn extremes_do_not_overflow() {
        let (d, _) = split_millis(i64::MAX);
        let (y, m, dd) = civil_from_days(d);
        assert_eq!(days_from_civil(y, m, dd), d);
        let (d, _) = split_millis(i64::MIN);
        let (y, m, dd) = civil_from_days(d);
        assert_eq!(days_from_civil(y, m, dd), d);
        assert!(y >= MIN_YEAR - 3_000_000);
        let _ = days_from_civil(MAX_YEAR, 12, 31) * MILLIS_PER_DAY;
        let _ = days_from_civil(MIN_YEAR, 1, 1) * MILLIS_PER_DAY;
    }

    #[test]
    fn leap_years_and_month_lengths() {
        assert!(is_leap(2000));
        assert!(!is_leap(1900));
        assert!(is_leap(2016));
        assert!(is_leap(0));
        assert!(is_leap(-4));
        assert!(!is_leap(-1));
        assert_eq!(days_in_month(2016, 2), 29);
        assert_eq!(days_in_month(2015, 2), 28);
        assert_eq!(days_in_month(2015, 13), 0);
        assert_eq!(day_of_year(2016, 12, 31), 366);
        assert_eq!(days_from_ordinal(2015, 366), None);
        assert_eq!(
            days_from_ordinal(2016, 366),
            Some(days_from_civil(2016, 12, 31))
        );
    }

    #[test]
    fn weekdays_and_iso_weeks() {
        assert_eq!(day_of_week(0), 4); // Thursday
        assert_eq!(day_of_week(days_from_civil(2015, 1, 5)), 1); // Monday
        assert_eq!(day_of_week(days_from_civil(2015, 1, 4)), 7); // Sunday
        assert_eq!(iso_week(days_from_civil(2015, 1, 1)), (2015, 1));
        assert_eq!(iso_week(days_from_civil(2014, 12, 29)), (2015, 1));
        assert_eq!(iso_week(days_from_civil(2016, 1, 3)), (2015, 53));
        assert_eq!(iso_week(days_from_civil(2021, 1, 1)), (2020, 53));
        assert_eq!(iso_weeks_in_year(2015), 53);
        assert_eq!(iso_weeks_in_year(2016), 52);
        assert_eq!(
            days_from_iso_week(2015, 1, 1),
            Some(days_from_civil(2014, 12, 29))
        );
        assert_eq!(days_from_iso_week(2016, 53, 1), None);
        for z in -5000..5000 {
            let (wby, w) = iso_week(z);
            assert_eq!(days_from_iso_week(wby, w, day_of_week(z)), Some(z));
        }
    }

    #[test]
    fn month_arithmetic_clamps() {
        assert_eq!(add_months(2015, 1, 31, 1), Some((2015, 2, 28)));
        assert_eq!(add_months(2016, 1, 31, 1), Some((2016, 2, 29)));
        assert_eq!(add_months(2015, 3, 15, -3), Some((2014, 12, 15)));
        assert_eq!(add_months(2015, 12, 1, 1), Some((2016, 1, 1)));
        assert_eq!(add_months(2015, 1, 1, i64::MAX), None);
        assert_eq!(add_months(MAX_YEAR, 12, 1, 1), None);
    }

    #[test]
    fn fields_from_millis() {
        let f = DateTimeFields::from_millis(
            1_420_070_400_000 + 12 * MILLIS_PER_HOUR + 10 * 60_000 + 30_500,
        );
        assert_eq!((f.year, f.month, f.day), (2015, 1, 1));
        assert_eq!((f.hour, f.minute, f.second, f.millis), (12, 10, 30, 500));
        let f = DateTimeFields::from_millis(-1);
        assert_eq!((f.year, f.month, f.day), (1969, 12, 31));
        assert_eq!((f.hour, f.minute, f.second, f.millis), (23, 59, 59, 999));
        assert_eq!(f.millis_of_day(), MILLIS_PER_DAY - 1);
    }
}
