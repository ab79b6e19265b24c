//! Runs compiled items: parses text into raw fields, and prints an instant.
//!
//! Parsing is `java.time`'s strict mode: every item must match exactly (digit
//! counts, signs, case of literals), an optional section either matches as a
//! whole or is skipped with its fields discarded, and the caller checks that
//! the whole input was consumed. The result is a bag of raw field values
//! ([`Parsed`]); turning those into an instant is [`crate::resolve`]'s job.
//! Two deliberate leniencies: month/day/AM-PM texts match case-insensitively,
//! and every offset item also accepts `Z` for zero.
//!
//! Printing works from the wall-clock fields of the instant in the requested
//! zone; optional sections are always printed, as every field is available.

use crate::civil::{self, DateTimeFields};
use crate::items::{Field, Item, OffsetPattern, Part, Sign, FIELD_COUNT};
use crate::text;
use crate::zone::TimeZone;

/// An epoch value parsed by `epoch_millis` / `epoch_second`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Epoch {
    /// Nanoseconds since the epoch.
    pub nanos: i128,
    /// Parsed by `epoch_second` without a fraction (round-up then adds 999ms).
    pub whole_seconds: bool,
}

/// Raw field values collected while parsing.
#[derive(Clone, Debug, Default)]
pub(crate) struct Parsed {
    fields: [Option<i64>; FIELD_COUNT],
    /// Offset in seconds east of UTC, from an offset item or a fixed zone id.
    pub offset: Option<i64>,
    /// A region zone parsed from the input.
    pub zone: Option<TimeZone>,
    /// An absolute instant (epoch formats).
    pub epoch: Option<Epoch>,
}

impl Parsed {
    pub(crate) fn get(&self, f: Field) -> Option<i64> {
        self.fields[f.index()]
    }

    /// Records a value; `false` when the field already holds a different one.
    pub(crate) fn set(&mut self, f: Field, v: i64) -> bool {
        let slot = &mut self.fields[f.index()];
        match slot {
            Some(old) if *old != v => false,
            _ => {
                *slot = Some(v);
                true
            }
        }
    }

    fn set_offset(&mut self, secs: i64) -> bool {
        match self.offset {
            Some(old) if old != secs => false,
            _ => {
                self.offset = Some(secs);
                true
            }
        }
    }
}

/// Parses the whole of `input`; `None` if it does not match or has leftovers.
pub(crate) fn parse(items: &[Item], input: &str) -> Option<Parsed> {
    let mut parsed = Parsed::default();
    let end = parse_seq(items, input.as_bytes(), 0, &mut parsed)?;
    (end == input.len()).then_some(parsed)
}

fn parse_seq(items: &[Item], s: &[u8], mut pos: usize, p: &mut Parsed) -> Option<usize> {
    for item in items {
        pos = parse_item(item, s, pos, p)?;
    }
    Some(pos)
}

fn parse_item(item: &Item, s: &[u8], pos: usize, p: &mut Parsed) -> Option<usize> {
    let rest = s.get(pos..)?;
    match item {
        Item::Literal(t) => rest.starts_with(t.as_bytes()).then(|| pos + t.len()),
        Item::Number {
            field,
            min,
            max,
            sign,
            subsequent,
        } => {
            let (v, end) = parse_number(s, pos, *min, *max, *sign, *subsequent)?;
            p.set(*field, v).then_some(end)
        }
        Item::Reduced { field, subsequent } => {
            let (v, end) = parse_number(s, pos, 2, 2, Sign::NotNegative, *subsequent)?;
            p.set(*field, 2000 + v).then_some(end)
        }
        Item::Fraction { min, max, point } => {
            let (nanos, end) = parse_fraction(s, pos, *min, *max, *point)?;
            match nanos {
                Some(n) => p.set(Field::NanoOfSecond, n).then_some(end),
                None => Some(end),
            }
        }
        Item::Text { field, style } => {
            let (v, len) = text::match_text(*field, *style, rest)?;
            p.set(*field, v).then_some(pos + len)
        }
        Item::Offset { pattern, no_offset } => {
            let (secs, end) = parse_offset(s, pos, *pattern, no_offset)?;
            p.set_offset(secs).then_some(end)
        }
        Item::LocalizedOffset { .. } => {
            let (secs, end) = parse_localized_offset(s, pos)?;
            p.set_offset(secs).then_some(end)
        }
        Item::ZoneId => parse_zone(s, pos, p, false),
        Item::ZoneText => parse_zone(s, pos, p, true),
        Item::EpochMillis | Item::EpochSecond => {
            let (epoch, end) = parse_epoch(s, pos, matches!(item, Item::EpochSecond))?;
            if p.epoch.is_some() {
                return None;
            }
            p.epoch = Some(epoch);
            Some(end)
        }
        Item::Optional(inner) => {
            let saved = p.clone();
            match parse_seq(inner, s, pos, p) {
                Some(end) => Some(end),
                None => {
                    *p = saved;
                    Some(pos)
                }
            }
        }
    }
}

/// Number of ASCII digits at the start of `s`, at most `max`.
fn digit_run(s: &[u8], max: usize) -> usize {
    s.iter()
        .take(max)
        .take_while(|b| b.is_ascii_digit())
        .count()
}

fn digits_value(s: &[u8]) -> Option<i64> {
    s.iter().try_fold(0i64, |acc, d| {
        acc.checked_mul(10)?.checked_add(i64::from(d - b'0'))
    })
}

/// `java.time`'s strict `NumberPrinterParser`, including adjacent value parsing:
/// `subsequent` digits are left for the fixed-width numbers that follow.
fn parse_number(
    s: &[u8],
    pos: usize,
    min: u8,
    max: u8,
    sign: Sign,
    subsequent: u8,
) -> Option<(i64, usize)> {
    let mut p = pos;
    let (mut negative, mut positive) = (false, false);
    match s.get(p) {
        Some(b'+') => {
            if sign != Sign::ExceedsPad {
                return None;
            }
            positive = true;
            p += 1;
        }
        Some(b'-') => {
            if sign == Sign::NotNegative {
                return None;
            }
            negative = true;
            p += 1;
        }
        _ => {}
    }
    let min = usize::from(min);
    let subsequent = usize::from(subsequent);
    let avail = digit_run(s.get(p..)?, usize::from(max) + subsequent);
    if avail < min {
        return None;
    }
    let n = if subsequent > 0 {
        avail.saturating_sub(subsequent).max(min)
    } else {
        avail
    };
    let mut v = digits_value(&s[p..p + n])?;
    if negative {
        if v == 0 {
            return None; // "-0" is rejected in strict mode
        }
        v = -v;
    } else if sign == Sign::ExceedsPad && ((positive && n <= min) || (!positive && n > min)) {
        // With EXCEEDS_PAD, '+' is required exactly when the width is exceeded.
        return None;
    }
    Some((v, p + n))
}

/// Fraction of second: returns nanoseconds (or `None` when an optional fraction
/// is absent) and the end position.
fn parse_fraction(
    s: &[u8],
    pos: usize,
    min: u8,
    max: u8,
    point: bool,
) -> Option<(Option<i64>, usize)> {
    let mut p = pos;
    if p >= s.len() || (point && s[p] != b'.') {
        return if min > 0 { None } else { Some((None, pos)) };
    }
    if point {
        p += 1;
    }
    let n = digit_run(&s[p..], usize::from(max).min(9));
    if n < usize::from(min) {
        return None;
    }
    let v = digits_value(&s[p..p + n])?;
    Some((Some(v * 10i64.pow(9 - n as u32)), p + n))
}

fn two_digits(s: &[u8], p: usize) -> Option<i64> {
    match (s.get(p), s.get(p + 1)) {
        (Some(a), Some(b)) if a.is_ascii_digit() && b.is_ascii_digit() => {
            Some(i64::from(a - b'0') * 10 + i64::from(b - b'0'))
        }
        _ => None,
    }
}

/// A minutes or seconds component of an offset, with its colon if the layout has one.
fn offset_component(s: &[u8], p: usize, colon: bool) -> Option<(i64, usize)> {
    let p = if colon {
        if s.get(p) != Some(&b':') {
            return None;
        }
        p + 1
    } else {
        p
    };
    let v = two_digits(s, p)?;
    (v <= 59).then_some((v, p + 2))
}

/// `+HH[:MM[:SS]]` per the layout; seconds east of UTC.
fn parse_signed_offset(s: &[u8], pos: usize, pat: OffsetPattern) -> Option<(i64, usize)> {
    let sign = match s.get(pos) {
        Some(b'+') => 1,
        Some(b'-') => -1,
        _ => return None,
    };
    let hours = two_digits(s, pos + 1)?;
    let mut p = pos + 3;
    let (mut minutes, mut seconds) = (0, 0);
    if pat.minutes != Part::Absent {
        match offset_component(s, p, pat.colon) {
            Some((m, end)) => {
                minutes = m;
                p = end;
                if pat.seconds != Part::Absent {
                    match offset_component(s, p, pat.colon) {
                        Some((sec, end)) => {
                            seconds = sec;
                            p = end;
                        }
                        None if pat.seconds == Part::Required => return None,
                        None => {}
                    }
                }
            }
            None if pat.minutes == Part::Required => return None,
            None => {}
        }
    }
    let total = hours * 3600 + minutes * 60 + seconds;
    (total <= 18 * 3600).then_some((sign * total, p))
}

fn parse_offset(s: &[u8], pos: usize, pat: OffsetPattern, no_offset: &str) -> Option<(i64, usize)> {
    if let Some(found) = parse_signed_offset(s, pos, pat) {
        return Some(found);
    }
    let rest = s.get(pos..)?;
    if !no_offset.is_empty() && rest.starts_with(no_offset.as_bytes()) {
        return Some((0, pos + no_offset.len()));
    }
    (rest.first() == Some(&b'Z')).then_some((0, pos + 1))
}

/// `GMT`, `GMT+8`, `GMT+08:00`, `GMT-5:30:15`.
fn parse_localized_offset(s: &[u8], pos: usize) -> Option<(i64, usize)> {
    if !s.get(pos..)?.starts_with(b"GMT") {
        return None;
    }
    let p = pos + 3;
    let sign = match s.get(p) {
        Some(b'+') => 1,
        Some(b'-') => -1,
        _ => return Some((0, p)),
    };
    let hlen = digit_run(&s[p + 1..], 2);
    if hlen == 0 {
        return Some((0, p));
    }
    let hours = digits_value(&s[p + 1..p + 1 + hlen])?;
    let mut end = p + 1 + hlen;
    let mut total = hours * 3600;
    if let Some((m, e)) = offset_component(s, end, true) {
        total += m * 60;
        end = e;
        if let Some((sec, e)) = offset_component(s, end, true) {
            total += sec;
            end = e;
        }
    }
    (total <= 18 * 3600).then_some((sign * total, end))
}

const ID_OFFSET: OffsetPattern = OffsetPattern {
    minutes: Part::Required,
    seconds: Part::Optional,
    colon: true,
};

/// Zone id or offset (`VV`, `appendZoneOrOffsetId`), or with `names` also zone
/// abbreviations (`z`). Fixed offsets go to `Parsed::offset`, regions to `Parsed::zone`.
fn parse_zone(s: &[u8], pos: usize, p: &mut Parsed, names: bool) -> Option<usize> {
    let rest = s.get(pos..)?;
    let first = *rest.first()?;
    if first == b'+' || first == b'-' {
        let (secs, end) = parse_signed_offset(s, pos, ID_OFFSET)?;
        return p.set_offset(secs).then_some(end);
    }
    for prefix in ["UTC", "GMT", "UT"] {
        if rest.starts_with(prefix.as_bytes()) {
            let after = pos + prefix.len();
            if prefix == "GMT" && s.get(after) == Some(&b'0') {
                return p.set_offset(0).then_some(after + 1);
            }
            if let Some((secs, end)) = parse_signed_offset(s, after, ID_OFFSET) {
                return p.set_offset(secs).then_some(end);
            }
            return p.set_offset(0).then_some(after);
        }
    }
    if names {
        let alpha = rest
            .iter()
            .take(5)
            .take_while(|b| b.is_ascii_uppercase())
            .count();
        for len in (2..=alpha).rev() {
            let abbr = std::str::from_utf8(&rest[..len]).ok()?;
            if let Some(region) = text::zone_for_abbreviation(abbr) {
                if let Some(zone) = TimeZone::parse_region(region) {
                    return set_zone(p, zone).then_some(pos + len);
                }
            }
        }
    }
    // Region ids: the longest known id among the prefixes of the id-character run.
    if first.is_ascii_alphabetic() {
        let run = rest
            .iter()
            .take(64)
            .take_while(|&&b| b.is_ascii_alphanumeric() || b"~/._+-".contains(&b))
            .count();
        for len in (2..=run).rev() {
            if matches!(rest[len - 1], b'/' | b'-' | b'+' | b'_' | b'.' | b'~') {
                continue;
            }
            let Ok(id) = std::str::from_utf8(&rest[..len]) else {
                continue;
            };
            if let Some(zone) = TimeZone::parse_region(id) {
                return set_zone(p, zone).then_some(pos + len);
            }
        }
    }
    if first == b'Z' {
        return p.set_offset(0).then_some(pos + 1);
    }
    None
}

fn set_zone(p: &mut Parsed, zone: TimeZone) -> bool {
    if let Some(offset) = zone.fixed_offset() {
        return p.set_offset(offset / 1000);
    }
    if p.zone.as_ref().is_some_and(|z| *z != zone) {
        return false;
    }
    p.zone = Some(zone);
    true
}

/// `-?digits[.fraction]` with up to 6 (millis) or 9 (seconds) fraction digits.
fn parse_epoch(s: &[u8], pos: usize, seconds: bool) -> Option<(Epoch, usize)> {
    let mut p = pos;
    let negative = s.get(p) == Some(&b'-');
    if negative {
        p += 1;
    }
    let n = digit_run(s.get(p..)?, 19);
    if n == 0 {
        return None;
    }
    let whole = digits_value(&s[p..p + n])?;
    p += n;
    let (unit, frac_digits): (i128, usize) = if seconds {
        (1_000_000_000, 9)
    } else {
        (1_000_000, 6)
    };
    let mut frac_nanos: i128 = 0;
    let mut has_fraction = false;
    if s.get(p) == Some(&b'.') {
        p += 1;
        let f = digit_run(&s[p..], frac_digits);
        if f > 0 {
            has_fraction = true;
            let v = i128::from(digits_value(&s[p..p + f])?);
            frac_nanos =
                v * 10i128.pow((frac_digits - f) as u32) * (unit / 10i128.pow(frac_digits as u32));
            p += f;
        }
    }
    let mut nanos = i128::from(whole) * unit + frac_nanos;
    if negative {
        nanos = -nanos;
    }
    Some((
        Epoch {
            nanos,
            whole_seconds: seconds && !has_fraction,
        },
        p,
    ))
}

/// What printing needs to know about the instant.
struct PrintCtx<'a> {
    f: DateTimeFields,
    utc: i64,
    offset_secs: i64,
    zone: Option<&'a TimeZone>,
}

/// Prints `utc_millis` in `zone` (UTC when `None`).
pub(crate) fn print(items: &[Item], utc_millis: i64, zone: Option<&TimeZone>) -> String {
    let offset_ms = zone.map_or(0, |z| z.offset_at_utc(utc_millis));
    let ctx = PrintCtx {
        f: DateTimeFields::from_millis(utc_millis.saturating_add(offset_ms)),
        utc: utc_millis,
        offset_secs: offset_ms / 1000,
        zone,
    };
    let mut out = String::with_capacity(32);
    print_seq(items, &ctx, &mut out);
    out
}

fn print_seq(items: &[Item], c: &PrintCtx, out: &mut String) {
    for item in items {
        print_item(item, c, out);
    }
}

fn print_item(item: &Item, c: &PrintCtx, out: &mut String) {
    match item {
        Item::Literal(t) => out.push_str(t),
        Item::Number {
            field,
            min,
            max,
            sign,
            ..
        } => print_number(out, field_value(*field, c), *min, *max, *sign),
        Item::Reduced { field, .. } => {
            let v = (field_value(*field, c) % 100).abs();
            out.push_str(&format!("{v:02}"));
        }
        Item::Fraction { min, max, point } => {
            print_fraction(out, i64::from(c.f.millis) * 1_000_000, *min, *max, *point)
        }
        Item::Text { field, style } => {
            let v = field_value(*field, c);
            match text::text_for(*field, *style, v) {
                Some(t) => out.push_str(t),
                None => out.push_str(&v.to_string()),
            }
        }
        Item::Offset { pattern, no_offset } => {
            print_offset(out, c.offset_secs, *pattern, no_offset)
        }
        Item::LocalizedOffset { full } => print_localized_offset(out, c.offset_secs, *full),
        Item::ZoneId => out.push_str(c.zone.map_or("Z", |z| z.id())),
        Item::ZoneText => match c.zone {
            Some(z) => out.push_str(&z.short_name_at(c.utc)),
            None => out.push('Z'),
        },
        Item::EpochMillis => out.push_str(&c.utc.to_string()),
        Item::EpochSecond => {
            if c.utc < 0 {
                out.push('-');
            }
            let a = c.utc.unsigned_abs();
            out.push_str(&(a / 1000).to_string());
            let frac = a % 1000;
            if frac != 0 {
                let digits = format!("{frac:03}");
                out.push('.');
                out.push_str(digits.trim_end_matches('0'));
            }
        }
        Item::Optional(inner) => print_seq(inner, c, out),
    }
}

/// Value of `field` for the instant being printed.
fn field_value(field: Field, c: &PrintCtx) -> i64 {
    let f = &c.f;
    let hour = i64::from(f.hour);
    match field {
        Field::Era => i64::from(f.year >= 1),
        Field::YearOfEra => {
            if f.year >= 1 {
                f.year
            } else {
                1 - f.year
            }
        }
        Field::Year => f.year,
        Field::Quarter => i64::from((f.month - 1) / 3 + 1),
        Field::Month => i64::from(f.month),
        Field::DayOfYear => i64::from(civil::day_of_year(f.year, f.month, f.day)),
        Field::DayOfMonth => i64::from(f.day),
        Field::DayOfWeek => i64::from(civil::day_of_week(f.epoch_day)),
        Field::AmPm => hour / 12,
        Field::HourOfDay => hour,
        Field::ClockHourOfDay => {
            if hour == 0 {
                24
            } else {
                hour
            }
        }
        Field::HourOfAmPm => hour % 12,
        Field::ClockHourOfAmPm => {
            if hour % 12 == 0 {
                12
            } else {
                hour % 12
            }
        }
        Field::Minute => i64::from(f.minute),
        Field::Second => i64::from(f.second),
        Field::NanoOfSecond => i64::from(f.millis) * 1_000_000,
        Field::MilliOfDay => f.millis_of_day(),
        Field::NanoOfDay => f.millis_of_day() * 1_000_000,
        Field::WeekBasedYear => civil::iso_week(f.epoch_day).0,
        Field::WeekOfWeekBasedYear => i64::from(civil::iso_week(f.epoch_day).1),
        Field::WeekOfMonth => {
            // WeekFields(Monday, 4 minimal days).weekOfMonth()
            let dom = i64::from(f.day);
            let dow = i64::from(civil::day_of_week(f.epoch_day));
            let week_start = (dom - dow).rem_euclid(7);
            let offset = if week_start + 1 > 4 {
                7 - week_start
            } else {
                -week_start
            };
            (7 + offset + dom - 1) / 7
        }
        Field::AlignedDayOfWeekInMonth => (i64::from(f.day) - 1) % 7 + 1,
        Field::ModifiedJulianDay => f.epoch_day + 40_587,
    }
}

fn print_number(out: &mut String, v: i64, min: u8, _max: u8, sign: Sign) {
    let digits = v.unsigned_abs().to_string();
    if v < 0 {
        if sign != Sign::NotNegative {
            out.push('-');
        }
    } else if sign == Sign::ExceedsPad && digits.len() > usize::from(min) {
        out.push('+');
    }
    for _ in digits.len()..usize::from(min) {
        out.push('0');
    }
    out.push_str(&digits);
}

fn print_fraction(out: &mut String, nanos: i64, min: u8, max: u8, point: bool) {
    let (min, max) = (usize::from(min), usize::from(max).min(9));
    if nanos == 0 {
        if min > 0 {
            if point {
                out.push('.');
            }
            for _ in 0..min {
                out.push('0');
            }
        }
        return;
    }
    let all = format!("{nanos:09}");
    let significant = all.trim_end_matches('0').len();
    let len = significant.max(min).min(max);
    if point {
        out.push('.');
    }
    out.push_str(&all[..len]);
}

fn print_offset(out: &mut String, secs: i64, pat: OffsetPattern, no_offset: &str) {
    let abs = secs.abs();
    let (h, m, s) = ((abs / 3600) % 100, abs / 60 % 60, abs % 60);
    let start = out.len();
    out.push(if secs < 0 { '-' } else { '+' });
    out.push_str(&format!("{h:02}"));
    let mut printed = h;
    let show_minutes = pat.minutes == Part::Required
        || (pat.minutes != Part::Absent && m > 0)
        || (pat.minutes == Part::Optional && pat.seconds != Part::Absent && s > 0);
    if show_minutes {
        if pat.colon {
            out.push(':');
        }
        out.push_str(&format!("{m:02}"));
        printed += m;
        if pat.seconds == Part::Required || (pat.seconds != Part::Absent && s > 0) {
            if pat.colon {
                out.push(':');
            }
            out.push_str(&format!("{s:02}"));
            printed += s;
        }
    }
    if printed == 0 {
        out.truncate(start);
        out.push_str(no_offset);
    }
}

fn print_localized_offset(out: &mut String, secs: i64, full: bool) {
    out.push_str("GMT");
    if secs == 0 {
        return;
    }
    let abs = secs.abs();
    let (h, m, s) = (abs / 3600, abs / 60 % 60, abs % 60);
    out.push(if secs < 0 { '-' } else { '+' });
    if full {
        out.push_str(&format!("{h:02}:{m:02}"));
        if s != 0 {
            out.push_str(&format!(":{s:02}"));
        }
    } else {
        out.push_str(&h.to_string());
        if m != 0 || s != 0 {
            out.push_str(&format!(":{m:02}"));
            if s != 0 {
                out.push_str(&format!(":{s:02}"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::compile;

    fn p(pattern: &str, input: &str) -> Option<Parsed> {
        parse(&compile(pattern).unwrap(), input)
    }

    #[test]
    fn numbers_follow_strict_widths() {
        let r = p("yyyy-MM-dd", "2015-01-21").unwrap();
        assert_eq!(r.get(Field::YearOfEra), Some(2015));
        assert_eq!(r.get(Field::Month), Some(1));
        assert_eq!(r.get(Field::DayOfMonth), Some(21));
        assert!(p("yyyy-MM-dd", "2015-1-21").is_none());
        assert!(p("yyyy-MM-dd", "15-01-21").is_none());
        assert!(
            p("yyyy-MM-dd", "20150-01-21").is_none(),
            "exceeds pad needs '+'"
        );
        assert!(p("yyyy-MM-dd", "+20150-01-21").is_some());
        assert!(p("yyyy-MM-dd", "2015-01-21x").is_none());
        assert!(p("d/M/yyyy", "1/1/2015").is_some());
    }

    #[test]
    fn adjacent_value_parsing() {
        let r = p("yyyyMMdd", "20150121").unwrap();
        assert_eq!(r.get(Field::YearOfEra), Some(2015));
        assert_eq!(r.get(Field::DayOfMonth), Some(21));
        let r = p("yyyyMMddHHmmssSSS", "20150121103045123").unwrap();
        assert_eq!(r.get(Field::Second), Some(45));
        assert_eq!(r.get(Field::NanoOfSecond), Some(123_000_000));
        let r = p("yyMMdd", "150121").unwrap();
        assert_eq!(r.get(Field::YearOfEra), Some(2015));
    }

    #[test]
    fn fractions() {
        assert_eq!(
            parse_fraction(b".5", 0, 1, 9, true),
            Some((Some(500_000_000), 2))
        );
        assert_eq!(parse_fraction(b"x", 0, 0, 9, true), Some((None, 0)));
        assert_eq!(parse_fraction(b"x", 0, 1, 9, true), None);
        assert_eq!(parse_fraction(b".", 0, 0, 9, true), Some((Some(0), 1)));
        assert_eq!(
            parse_fraction(b"123456789123", 0, 3, 3, false),
            Some((Some(123_000_000), 3))
        );
    }

    #[test]
    fn offsets() {
        let pat = OffsetPattern::from_java("+HH:MM");
        assert_eq!(parse_offset(b"+01:30", 0, pat, "Z"), Some((5400, 6)));
        assert_eq!(parse_offset(b"-01:30", 0, pat, "Z"), Some((-5400, 6)));
        assert_eq!(parse_offset(b"Z", 0, pat, "Z"), Some((0, 1)));
        assert_eq!(parse_offset(b"+0130", 0, pat, "Z"), None);
        let pat = OffsetPattern::from_java("+HHmm");
        assert_eq!(parse_offset(b"+0130", 0, pat, "Z"), Some((5400, 5)));
        assert_eq!(parse_offset(b"+01", 0, pat, "Z"), Some((3600, 3)));
        assert_eq!(parse_offset(b"+01:30", 0, pat, "Z"), Some((3600, 3)));
        assert_eq!(parse_offset(b"+19", 0, pat, "Z"), None);
        let pat = OffsetPattern::from_java("+HHMM");
        assert_eq!(parse_offset(b"+0000", 0, pat, "+0000"), Some((0, 5)));
        assert_eq!(parse_offset(b"Z", 0, pat, "+0000"), Some((0, 1)));
        assert_eq!(parse_localized_offset(b"GMT+8", 0), Some((8 * 3600, 5)));
        assert_eq!(
            parse_localized_offset(b"GMT-05:30", 0),
            Some((-(5 * 3600 + 1800), 9))
        );
        assert_eq!(parse_localized_offset(b"GMT", 0), Some((0, 3)));
    }

    #[test]
    fn zone_ids() {
        let mut parsed = Parsed::default();
        assert_eq!(parse_zone(b"Z", 0, &mut parsed, false), Some(1));
        assert_eq!(parsed.offset, Some(0));
        let mut parsed = Parsed::default();
        assert_eq!(parse_zone(b"UTC+01:00", 0, &mut parsed, false), Some(9));
        assert_eq!(parsed.offset, Some(3600));
        let mut parsed = Parsed::default();
        assert_eq!(
            parse_zone(b"Europe/Paris!", 0, &mut parsed, false),
            Some(12)
        );
        assert_eq!(
            parsed.zone.map(|z| z.id().to_string()),
            Some("Europe/Paris".to_string())
        );
        let mut parsed = Parsed::default();
        assert_eq!(parse_zone(b"PST", 0, &mut parsed, true), Some(3));
        assert!(parsed.zone.is_some());
        let mut parsed = Parsed::default();
        assert_eq!(parse_zone(b"Nowhere/Land", 0, &mut parsed, false), None);
    }

    #[test]
    fn epoch_values() {
        assert_eq!(
            parse_epoch(b"1420070400000", 0, false),
            Some((
                Epoch {
                    nanos: 1_420_070_400_000_000_000,
                    whole_seconds: false
                },
                13
            ))
        );
        assert_eq!(
            parse_epoch(b"-1.5", 0, false),
            Some((
                Epoch {
                    nanos: -1_500_000,
                    whole_seconds: false
                },
                4
            ))
        );
        assert_eq!(
            parse_epoch(b"1.5", 0, true),
            Some((
                Epoch {
                    nanos: 1_500_000_000,
                    whole_seconds: false
                },
                3
            ))
        );
        assert_eq!(
            parse_epoch(b"12", 0, true),
            Some((
                Epoch {
                    nanos: 12_000_000_000,
                    whole_seconds: true
                },
                2
            ))
        );
        assert_eq!(parse_epoch(b"-", 0, false), None);
        assert_eq!(parse_epoch(b"99999999999999999999", 0, false), None);
        assert_eq!(
            parse_epoch(b"9223372036854775807", 0, false).map(|e| e.1),
            Some(19)
        );
    }

    #[test]
    fn printing() {
        let items = compile("yyyy-MM-dd'T'HH:mm:ss.SSSXXX EEE MMM a h").unwrap();
        assert_eq!(
            print(&items, 1_421_798_400_000 + 13 * 3_600_000 + 5, None),
            "2015-01-21T13:00:00.005Z Wed Jan PM 1"
        );
        let paris = TimeZone::parse("+01:00").unwrap();
        assert_eq!(
            print(&items, 1_421_798_400_000, Some(&paris)),
            "2015-01-21T01:00:00.000+01:00 Wed Jan AM 1"
        );
        let items = compile("uuuu G yy Z x O OOOO").unwrap();
        assert_eq!(print(&items, 0, None), "1970 AD 70 +0000 +00 GMT GMT");
        assert_eq!(
            print(&items, 0, Some(&paris)),
            "1970 AD 70 +0100 +01 GMT+1 GMT+01:00"
        );
    }

    #[test]
    fn print_numbers_and_fractions() {
        let mut s = String::new();
        print_number(&mut s, 10_000, 4, 4, Sign::ExceedsPad);
        assert_eq!(s, "+10000");
        let mut s = String::new();
        print_number(&mut s, -1, 4, 4, Sign::ExceedsPad);
        assert_eq!(s, "-0001");
        let mut s = String::new();
        print_fraction(&mut s, 500_000_000, 0, 9, true);
        assert_eq!(s, ".5");
        let mut s = String::new();
        print_fraction(&mut s, 0, 0, 9, true);
        assert_eq!(s, "");
        let mut s = String::new();
        print_fraction(&mut s, 120_000_000, 3, 9, true);
        assert_eq!(s, ".120");
        let mut s = String::new();
        print_offset(
            &mut s,
            5 * 3600 + 1800,
            OffsetPattern::from_java("+HHmm"),
            "Z",
        );
        assert_eq!(s, "+0530");
        let mut s = String::new();
        print_offset(&mut s, -3600, OffsetPattern::from_java("+HHmm"), "Z");
        assert_eq!(s, "-01");
    }
}
