//! Calendar arithmetic and the few timestamp formats the bench writes (generated documents,
//! result files), without a date-time dependency.
//!
//! Generators write millions of timestamps, so formatting goes straight into a byte buffer.

use std::time::{SystemTime, UNIX_EPOCH};

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Civil date `(year, month, day)` of days since 1970-01-01.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Epoch seconds of a UTC civil time.
pub fn epoch_seconds(y: i64, m: u32, d: u32, hh: u32, mm: u32, ss: u32) -> i64 {
    days_from_civil(y, m, d) * 86_400 + (hh * 3600 + mm * 60 + ss) as i64
}

fn push2(out: &mut Vec<u8>, v: u32) {
    out.push(b'0' + (v / 10) as u8);
    out.push(b'0' + (v % 10) as u8);
}

fn push_date(out: &mut Vec<u8>, days: i64) {
    let (y, m, d) = civil_from_days(days);
    let y = y as u32;
    push2(out, y / 100);
    push2(out, y % 100);
    out.push(b'-');
    push2(out, m);
    out.push(b'-');
    push2(out, d);
}

fn push_time(out: &mut Vec<u8>, secs_of_day: u32) {
    push2(out, secs_of_day / 3600);
    out.push(b':');
    push2(out, secs_of_day / 60 % 60);
    out.push(b':');
    push2(out, secs_of_day % 60);
}

/// `yyyy-MM-dd HH:mm:ss` (nyc_taxis).
pub fn push_space_datetime(out: &mut Vec<u8>, epoch_secs: i64) {
    push_date(out, epoch_secs.div_euclid(86_400));
    out.push(b' ');
    push_time(out, epoch_secs.rem_euclid(86_400) as u32);
}

/// `yyyy-MM-ddTHH:mm:ss` (noaa).
pub fn push_iso_seconds(out: &mut Vec<u8>, epoch_secs: i64) {
    push_date(out, epoch_secs.div_euclid(86_400));
    out.push(b'T');
    push_time(out, epoch_secs.rem_euclid(86_400) as u32);
}

/// `yyyy-MM-ddTHH:mm:ss.SSSZ` (big5, result files).
pub fn push_iso_millis(out: &mut Vec<u8>, epoch_millis: i64) {
    let secs = epoch_millis.div_euclid(1000);
    push_iso_seconds(out, secs);
    out.push(b'.');
    let ms = epoch_millis.rem_euclid(1000) as u32;
    out.push(b'0' + (ms / 100) as u8);
    push2(out, ms % 100);
    out.push(b'Z');
}

/// `Mmm dd HH:mm:ss` as syslog writes it (day padded with a space).
pub fn push_syslog(out: &mut Vec<u8>, epoch_secs: i64) {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (_, m, d) = civil_from_days(epoch_secs.div_euclid(86_400));
    out.extend_from_slice(MONTHS[(m - 1) as usize].as_bytes());
    out.push(b' ');
    out.push(if d >= 10 { b'0' + (d / 10) as u8 } else { b' ' });
    out.push(b'0' + (d % 10) as u8);
    out.push(b' ');
    push_time(out, epoch_secs.rem_euclid(86_400) as u32);
}

/// Milliseconds since the epoch, now.
pub fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// RFC 3339 UTC timestamp with milliseconds, for result files.
pub fn rfc3339_millis(epoch_millis: i64) -> String {
    let mut out = Vec::with_capacity(24);
    push_iso_millis(&mut out, epoch_millis);
    String::from_utf8(out).expect("ascii")
}

/// `yyyyMMdd-HHmmss`, for default result directory names.
pub fn compact_stamp(epoch_millis: i64) -> String {
    let secs = epoch_millis.div_euclid(1000);
    let mut out = Vec::with_capacity(15);
    push_date(&mut out, secs.div_euclid(86_400));
    push_time(&mut out, secs.rem_euclid(86_400) as u32);
    out.retain(|c| *c != b'-' && *c != b':');
    out.insert(8, b'-');
    String::from_utf8(out).expect("ascii")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(f: impl Fn(&mut Vec<u8>)) -> String {
        let mut v = Vec::new();
        f(&mut v);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn civil_round_trip() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2015, 1, 1), 16_436);
        for z in [-1000, 0, 16_436, 16_800, 20_000, 60_000] {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
        assert_eq!(civil_from_days(days_from_civil(2016, 2, 29)), (2016, 2, 29));
    }

    #[test]
    fn formats() {
        let t = epoch_seconds(2015, 1, 21, 7, 5, 9);
        assert_eq!(s(|o| push_space_datetime(o, t)), "2015-01-21 07:05:09");
        assert_eq!(s(|o| push_iso_seconds(o, t)), "2015-01-21T07:05:09");
        assert_eq!(
            s(|o| push_iso_millis(o, t * 1000 + 7)),
            "2015-01-21T07:05:09.007Z"
        );
        assert_eq!(s(|o| push_syslog(o, t)), "Jan 21 07:05:09");
        let t2 = epoch_seconds(2023, 4, 3, 23, 59, 0);
        assert_eq!(s(|o| push_syslog(o, t2)), "Apr  3 23:59:00");
        assert_eq!(compact_stamp(t * 1000), "20150121-070509");
        assert_eq!(rfc3339_millis(0), "1970-01-01T00:00:00.000Z");
    }
}
