//! Time zones as OpenSearch accepts them: UTC, fixed offsets and IANA region ids.
//!
//! Parsing follows `java.time.ZoneId.of` followed by `normalized()` (what
//! OpenSearch's `DateUtils.of` does): `Z`, `+01:00`, `-0800`, `UTC`, `GMT+2`
//! become fixed offsets; anything else is looked up as a region in the system
//! tz database ([`crate::tzif`]), falling back to a short built-in table
//! ([`crate::fallback`]) when the database is absent. Loaded rules are cached
//! per id for the life of the process, so repeated requests with the same
//! `time_zone` cost one hash lookup.
//!
//! The two conversions everything else needs are [`TimeZone::offset_at_utc`]
//! (instant → wall clock) and [`TimeZone::local_to_utc`] (wall clock → instant,
//! resolving overlaps and gaps the way `java.time.ZonedDateTime` does).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use crate::civil::{MILLIS_PER_HOUR, MILLIS_PER_SECOND};
use crate::fallback;
use crate::tzif::TzRules;
use crate::{DateError, Result};

/// A time zone: a fixed UTC offset or the rules of a tz database region.
#[derive(Clone)]
pub struct TimeZone {
    id: String,
    kind: Kind,
}

#[derive(Clone, Debug)]
enum Kind {
    /// Offset in milliseconds east of UTC.
    Fixed(i64),
    Region(Arc<TzRules>),
}

impl PartialEq for TimeZone {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for TimeZone {}

impl std::hash::Hash for TimeZone {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

impl fmt::Debug for TimeZone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The rules can be thousands of transitions; the id identifies them.
        f.debug_tuple("TimeZone").field(&self.id).finish()
    }
}

impl fmt::Display for TimeZone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.id)
    }
}

/// Largest offset `java.time` allows: ±18:00.
const MAX_OFFSET_SECS: i64 = 18 * 3600;

impl TimeZone {
    /// UTC (id `Z`, as `java.time.ZoneOffset.UTC`).
    pub fn utc() -> TimeZone {
        TimeZone {
            id: "Z".to_string(),
            kind: Kind::Fixed(0),
        }
    }

    /// A fixed offset in seconds east of UTC (must be within ±18:00).
    pub fn fixed(offset_secs: i64) -> Result<TimeZone> {
        if offset_secs.abs() > MAX_OFFSET_SECS {
            return Err(DateError::new(format!(
                "Zone offset not in valid range: -18:00 to +18:00 [{offset_secs}s]"
            )));
        }
        Ok(TimeZone {
            id: offset_id(offset_secs),
            kind: Kind::Fixed(offset_secs * MILLIS_PER_SECOND),
        })
    }

    /// Parses a zone id: `Z`, `UTC`, `GMT`, `UT`, an offset (`+01:00`, `-0800`,
    /// `+5`), a prefixed offset (`UTC+01:00`, `GMT-3`), or a region (`Europe/Paris`,
    /// also the old three-letter ids such as `PST` that OpenSearch still maps).
    pub fn parse(id: &str) -> Result<TimeZone> {
        let id = short_id_alias(id).unwrap_or(id);
        if id == "Z" {
            return Ok(TimeZone::utc());
        }
        if id.starts_with('+') || id.starts_with('-') {
            return TimeZone::fixed(parse_offset_id(id)?);
        }
        if matches!(id, "UTC" | "GMT" | "UT") {
            return Ok(TimeZone::utc());
        }
        for prefix in ["UTC", "GMT", "UT"] {
            if let Some(rest) = id.strip_prefix(prefix) {
                if rest.starts_with('+') || rest.starts_with('-') {
                    return TimeZone::fixed(parse_offset_id(rest).map_err(|_| {
                        DateError::new(format!("Invalid ID for offset-based ZoneId: {id}"))
                    })?);
                }
            }
        }
        TimeZone::parse_region(id).ok_or_else(|| unknown(id))
    }

    /// A region id only (no offsets, prefixes or aliases), normalized to a fixed
    /// offset when the region never changed its offset.
    pub(crate) fn parse_region(id: &str) -> Option<TimeZone> {
        if !is_valid_region_id(id) {
            return None;
        }
        let rules = load_rules(id)?;
        if let Some(offset) = rules.fixed_offset() {
            return TimeZone::fixed(offset).ok();
        }
        Some(TimeZone {
            id: id.to_string(),
            kind: Kind::Region(rules),
        })
    }

    /// The normalized id: `Z`, `+01:00`, or the region id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// `Some(offset in ms)` when the offset never changes.
    pub fn fixed_offset(&self) -> Option<i64> {
        match self.kind {
            Kind::Fixed(o) => Some(o),
            Kind::Region(_) => None,
        }
    }

    /// Whether this is UTC (offset zero forever).
    pub fn is_utc(&self) -> bool {
        self.fixed_offset() == Some(0)
    }

    /// Offset from UTC in ms at the given UTC instant.
    pub fn offset_at_utc(&self, utc_millis: i64) -> i64 {
        match &self.kind {
            Kind::Fixed(o) => *o,
            Kind::Region(r) => {
                r.offset_at(utc_millis.div_euclid(MILLIS_PER_SECOND)) * MILLIS_PER_SECOND
            }
        }
    }

    /// The local wall-clock time (ms since epoch as if the zone were UTC) of a UTC instant.
    pub fn utc_to_local(&self, utc_millis: i64) -> i64 {
        utc_millis.saturating_add(self.offset_at_utc(utc_millis))
    }

    /// For a local wall-clock time (ms since epoch as if the zone were UTC), the UTC
    /// instant. On an overlap (clocks going back) the earlier instant is chosen; in a
    /// gap (clocks going forward) the time is shifted forward by the gap length, like
    /// `java.time.ZonedDateTime.ofLocal`.
    pub fn local_to_utc(&self, local_millis: i64) -> i64 {
        self.local_to_utc_preferring(local_millis, None)
    }

    /// Like [`TimeZone::local_to_utc`], but on an overlap keeps `preferred_offset`
    /// (ms) when it is one of the two valid offsets, as `ZonedDateTime` arithmetic does.
    pub fn local_to_utc_preferring(&self, local_millis: i64, preferred_offset: Option<i64>) -> i64 {
        match &self.kind {
            Kind::Fixed(o) => local_millis.saturating_sub(*o),
            Kind::Region(_) => {
                let local = local_millis;
                let window = 30 * MILLIS_PER_HOUR;
                let candidates = [
                    self.offset_at_utc(local.saturating_sub(window)),
                    self.offset_at_utc(local.saturating_add(window)),
                    self.offset_at_utc(local.saturating_sub(self.offset_at_utc(local))),
                ];
                let mut best_valid: Option<i64> = None;
                for &o in &candidates {
                    if self.offset_at_utc(local.saturating_sub(o)) == o {
                        if preferred_offset == Some(o) {
                            return local.saturating_sub(o);
                        }
                        best_valid = Some(best_valid.map_or(o, |b: i64| b.max(o)));
                    }
                }
                match best_valid {
                    Some(o) => local.saturating_sub(o),
                    None => {
                        // In a gap: use the offset from before the transition, which
                        // moves the wall-clock time forward by the gap's length.
                        let max = candidates.iter().copied().max().unwrap_or(0);
                        let before = self.offset_at_utc(local.saturating_sub(max));
                        local.saturating_sub(before)
                    }
                }
            }
        }
    }

    /// The short name printed by the `z` pattern letter: the tz abbreviation
    /// ("CET", "EST") for regions, the id for fixed offsets.
    pub(crate) fn short_name_at(&self, utc_millis: i64) -> String {
        match &self.kind {
            Kind::Fixed(_) => self.id.clone(),
            Kind::Region(r) => r
                .lookup(utc_millis.div_euclid(MILLIS_PER_SECOND))
                .1
                .to_string(),
        }
    }
}

fn unknown(id: &str) -> DateError {
    DateError::new(format!("Unknown time-zone ID: {id}"))
}

/// `Z` for zero, else `±HH:MM` or `±HH:MM:SS`.
pub(crate) fn offset_id(offset_secs: i64) -> String {
    if offset_secs == 0 {
        return "Z".to_string();
    }
    let sign = if offset_secs < 0 { '-' } else { '+' };
    let a = offset_secs.abs();
    let (h, m, s) = (a / 3600, a / 60 % 60, a % 60);
    if s == 0 {
        format!("{sign}{h:02}:{m:02}")
    } else {
        format!("{sign}{h:02}:{m:02}:{s:02}")
    }
}

/// Parses `±h`, `±hh`, `±hh:mm`, `±hhmm`, `±hh:mm:ss`, `±hhmmss` into seconds
/// (the forms `java.time.ZoneOffset.of` accepts).
fn parse_offset_id(id: &str) -> Result<i64> {
    let bad = || DateError::new(format!("Invalid ID for ZoneOffset, invalid format: {id}"));
    let b = id.as_bytes();
    let sign = match b.first() {
        Some(b'+') => 1,
        Some(b'-') => -1,
        _ => return Err(bad()),
    };
    let digits = |from: usize| -> Result<i64> {
        match (b.get(from), b.get(from + 1)) {
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                Ok(i64::from(x - b'0') * 10 + i64::from(y - b'0'))
            }
            _ => Err(bad()),
        }
    };
    let colon = |at: usize| -> Result<()> {
        if b.get(at) == Some(&b':') {
            Ok(())
        } else {
            Err(bad())
        }
    };
    let (h, m, s) = match b.len() {
        2 if b[1].is_ascii_digit() => (i64::from(b[1] - b'0'), 0, 0),
        3 => (digits(1)?, 0, 0),
        5 => (digits(1)?, digits(3)?, 0),
        6 => {
            colon(3)?;
            (digits(1)?, digits(4)?, 0)
        }
        7 => (digits(1)?, digits(3)?, digits(5)?),
        9 => {
            colon(3)?;
            colon(6)?;
            (digits(1)?, digits(4)?, digits(7)?)
        }
        _ => return Err(bad()),
    };
    if h > 18 || m > 59 || s > 59 {
        return Err(DateError::new(format!(
            "Zone offset not in valid range: -18:00 to +18:00 [{id}]"
        )));
    }
    let total = sign * (h * 3600 + m * 60 + s);
    if total.abs() > MAX_OFFSET_SECS {
        return Err(DateError::new(format!(
            "Zone offset not in valid range: -18:00 to +18:00 [{id}]"
        )));
    }
    Ok(total)
}

/// The old three-letter ids (`java.time.ZoneId.SHORT_IDS`) that OpenSearch maps
/// to real zones with a deprecation warning.
fn short_id_alias(id: &str) -> Option<&'static str> {
    Some(match id {
        "ACT" => "Australia/Darwin",
        "AET" => "Australia/Sydney",
        "AGT" => "America/Argentina/Buenos_Aires",
        "ART" => "Africa/Cairo",
        "AST" => "America/Anchorage",
        "BET" => "America/Sao_Paulo",
        "BST" => "Asia/Dhaka",
        "CAT" => "Africa/Harare",
        "CNT" => "America/St_Johns",
        "CST" => "America/Chicago",
        "CTT" => "Asia/Shanghai",
        "EAT" => "Africa/Addis_Ababa",
        "ECT" => "Europe/Paris",
        "IET" => "America/Indiana/Indianapolis",
        "IST" => "Asia/Kolkata",
        "JST" => "Asia/Tokyo",
        "MIT" => "Pacific/Apia",
        "NET" => "Asia/Yerevan",
        "NST" => "Pacific/Auckland",
        "PLT" => "Asia/Karachi",
        "PNT" => "America/Phoenix",
        "PRT" => "America/Puerto_Rico",
        "PST" => "America/Los_Angeles",
        "SST" => "Pacific/Guadalcanal",
        "VST" => "Asia/Ho_Chi_Minh",
        "EST" => "-05:00",
        "MST" => "-07:00",
        "HST" => "-10:00",
        _ => return None,
    })
}

/// Region ids as `java.time` accepts them (`[A-Za-z][A-Za-z0-9~/._+-]+`), minus
/// anything that could escape the zoneinfo directory or name a non-zone file.
fn is_valid_region_id(id: &str) -> bool {
    let b = id.as_bytes();
    if b.len() < 2 || b.len() > 64 || !b[0].is_ascii_alphabetic() {
        return false;
    }
    if !b
        .iter()
        .all(|&c| c.is_ascii_alphanumeric() || b"~/._+-".contains(&c))
    {
        return false;
    }
    if id
        .split('/')
        .any(|part| part.is_empty() || part.starts_with('.'))
    {
        return false;
    }
    !(id.starts_with("posix/")
        || id.starts_with("right/")
        || matches!(id, "posixrules" | "localtime" | "Factory"))
}

type RulesCache = Mutex<HashMap<String, Option<Arc<TzRules>>>>;

fn cache() -> &'static RulesCache {
    static CACHE: OnceLock<RulesCache> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Rules for a region id: cached, else from the system database, else built in.
fn load_rules(id: &str) -> Option<Arc<TzRules>> {
    {
        let guard = cache().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(hit) = guard.get(id) {
            return hit.clone();
        }
    }
    let loaded = read_system_rules(id)
        .or_else(|| fallback::posix_rule(id).and_then(|rule| TzRules::from_posix(rule).ok()))
        .or_else(|| {
            fallback::etc_gmt_offset(id).and_then(|secs| {
                let sign = if secs > 0 { '-' } else { '+' };
                TzRules::from_posix(&format!("<X>{sign}{}", secs.abs() / 3600)).ok()
            })
        })
        .map(Arc::new);
    let mut guard = cache().lock().unwrap_or_else(|e| e.into_inner());
    // Unknown ids are remembered too (bounded, so junk input cannot grow it forever).
    if loaded.is_some() || guard.len() < 4096 {
        guard.insert(id.to_string(), loaded.clone());
    }
    loaded
}

/// Directories searched for TZif files, `$TZDIR` first.
fn zoneinfo_dirs() -> Vec<String> {
    let mut dirs = Vec::new();
    if let Ok(dir) = std::env::var("TZDIR") {
        if !dir.is_empty() {
            dirs.push(dir);
        }
    }
    for d in [
        "/usr/share/zoneinfo",
        "/usr/lib/zoneinfo",
        "/usr/share/lib/zoneinfo",
        "/etc/zoneinfo",
    ] {
        dirs.push(d.to_string());
    }
    dirs
}

fn read_system_rules(id: &str) -> Option<TzRules> {
    for dir in zoneinfo_dirs() {
        let path = std::path::Path::new(&dir).join(id);
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if !meta.is_file() || meta.len() > 1 << 20 {
            continue;
        }
        if let Ok(data) = std::fs::read(&path) {
            if let Ok(rules) = TzRules::parse_tzif(&data) {
                return Some(rules);
            }
        }
    }
    None
}

/// Whether a system tz database was found (for diagnostics and tests).
pub fn system_tzdata_available() -> bool {
    read_system_rules("Europe/Paris").is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::civil::days_from_civil;

    const H: i64 = MILLIS_PER_HOUR;

    fn ms(y: i64, m: u32, d: u32, h: i64, mi: i64) -> i64 {
        days_from_civil(y, m, d) * 86_400_000 + h * H + mi * 60_000
    }

    #[test]
    fn fixed_offsets() {
        for (id, secs, norm) in [
            ("+01:00", 3600, "+01:00"),
            ("-0800", -8 * 3600, "-08:00"),
            ("+5", 5 * 3600, "+05:00"),
            ("+05", 5 * 3600, "+05:00"),
            ("+05:30:15", 5 * 3600 + 30 * 60 + 15, "+05:30:15"),
            ("+053015", 5 * 3600 + 30 * 60 + 15, "+05:30:15"),
            ("-00:00", 0, "Z"),
            ("Z", 0, "Z"),
            ("UTC", 0, "Z"),
            ("GMT", 0, "Z"),
            ("UT", 0, "Z"),
            ("UTC+01:00", 3600, "+01:00"),
            ("GMT-3", -3 * 3600, "-03:00"),
            ("EST", -5 * 3600, "-05:00"),
        ] {
            let z = TimeZone::parse(id).unwrap_or_else(|e| panic!("{id}: {e}"));
            assert_eq!(z.offset_at_utc(0), secs * 1000, "{id}");
            assert_eq!(z.id(), norm, "{id}");
            assert_eq!(z.local_to_utc(1000), 1000 - secs * 1000);
        }
    }

    #[test]
    fn bad_ids() {
        for id in [
            "",
            "+",
            "+1:00",
            "+19:00",
            "+18:01",
            "01:00",
            "Mars/Phobos",
            "europe/paris?",
            "../etc/passwd",
            "Europe/../../etc/passwd",
            "/etc/passwd",
            "UTC+x",
            "posixrules",
            "Europe//Paris",
            "a",
        ] {
            assert!(TimeZone::parse(id).is_err(), "{id}");
        }
        assert_eq!(
            TimeZone::parse("Mars/Phobos").unwrap_err().message,
            "Unknown time-zone ID: Mars/Phobos"
        );
    }

    #[test]
    fn region_paris_offsets_and_dst() {
        let z = TimeZone::parse("Europe/Paris").unwrap();
        assert_eq!(z.id(), "Europe/Paris");
        assert_eq!(z.offset_at_utc(ms(2015, 1, 1, 0, 0)), H);
        assert_eq!(z.offset_at_utc(ms(2015, 7, 1, 0, 0)), 2 * H);
        // Gap: 2015-03-29 02:30 local does not exist; shifted to 03:30 CEST = 01:30Z.
        assert_eq!(
            z.local_to_utc(ms(2015, 3, 29, 2, 30)),
            ms(2015, 3, 29, 1, 30)
        );
        assert_eq!(z.local_to_utc(ms(2015, 3, 29, 2, 0)), ms(2015, 3, 29, 1, 0));
        // Overlap: 2015-10-25 02:30 local happens twice; earlier is 00:30Z.
        assert_eq!(
            z.local_to_utc(ms(2015, 10, 25, 2, 30)),
            ms(2015, 10, 25, 0, 30)
        );
        assert_eq!(
            z.local_to_utc_preferring(ms(2015, 10, 25, 2, 30), Some(H)),
            ms(2015, 10, 25, 1, 30)
        );
        // Plain times.
        assert_eq!(
            z.local_to_utc(ms(2015, 1, 1, 0, 0)),
            ms(2014, 12, 31, 23, 0)
        );
        assert_eq!(z.local_to_utc(ms(2015, 7, 1, 0, 0)), ms(2015, 6, 30, 22, 0));
        // Far future uses the rule.
        assert_eq!(z.offset_at_utc(ms(2200, 7, 1, 0, 0)), 2 * H);
        assert_eq!(z.short_name_at(ms(2015, 7, 1, 0, 0)), "CEST");
    }

    #[test]
    fn region_new_york_kolkata_sydney() {
        let ny = TimeZone::parse("America/New_York").unwrap();
        assert_eq!(ny.offset_at_utc(ms(2015, 1, 15, 0, 0)), -5 * H);
        assert_eq!(ny.offset_at_utc(ms(2015, 7, 15, 0, 0)), -4 * H);
        let k = TimeZone::parse("Asia/Kolkata").unwrap();
        assert_eq!(k.offset_at_utc(ms(2015, 7, 15, 0, 0)), 5 * H + 30 * 60_000);
        let s = TimeZone::parse("Australia/Sydney").unwrap();
        assert_eq!(s.offset_at_utc(ms(2015, 1, 15, 0, 0)), 11 * H);
        assert_eq!(s.offset_at_utc(ms(2015, 7, 15, 0, 0)), 10 * H);
        let pst = TimeZone::parse("PST").unwrap();
        assert_eq!(pst.id(), "America/Los_Angeles");
    }

    #[test]
    fn etc_zones_normalize_to_offsets() {
        let z = TimeZone::parse("Etc/GMT+3").unwrap();
        assert_eq!(z.offset_at_utc(0), -3 * H);
        assert_eq!(z.id(), "-03:00");
        assert!(TimeZone::parse("Etc/UTC").unwrap().is_utc());
    }

    #[test]
    fn extreme_instants_do_not_panic() {
        let z = TimeZone::parse("Europe/Paris").unwrap();
        for t in [i64::MIN, i64::MIN + 1, -1, 0, i64::MAX - 1, i64::MAX] {
            let _ = z.offset_at_utc(t);
            let _ = z.utc_to_local(t);
            let _ = z.local_to_utc(t);
            let _ = z.short_name_at(t);
        }
    }
}
