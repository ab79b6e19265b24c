//! English field texts (`Locale.ROOT`): month and day names, AM/PM, eras, quarters,
//! and the zone abbreviations the `z` letter accepts when parsing.
//!
//! OpenSearch formats with `Locale.ROOT`, whose texts are the English ones, so
//! there is no locale machinery here: one table per field and width.

use crate::items::{Field, TextStyle};

const MONTHS_FULL: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const MONTHS_SHORT: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
const MONTHS_NARROW: [&str; 12] = ["J", "F", "M", "A", "M", "J", "J", "A", "S", "O", "N", "D"];
const DAYS_FULL: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
const DAYS_SHORT: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const DAYS_NARROW: [&str; 7] = ["M", "T", "W", "T", "F", "S", "S"];
const AMPM: [&str; 2] = ["AM", "PM"];
const ERA_SHORT: [&str; 2] = ["BC", "AD"];
const ERA_FULL: [&str; 2] = ["Before Christ", "Anno Domini"];
const ERA_NARROW: [&str; 2] = ["B", "A"];
const QUARTER_SHORT: [&str; 4] = ["Q1", "Q2", "Q3", "Q4"];
const QUARTER_FULL: [&str; 4] = ["1st quarter", "2nd quarter", "3rd quarter", "4th quarter"];
const QUARTER_NARROW: [&str; 4] = ["1", "2", "3", "4"];

/// The texts of a field in a style, and the value of the first entry.
fn table(field: Field, style: TextStyle) -> Option<(&'static [&'static str], i64)> {
    use TextStyle::*;
    Some(match (field, style) {
        (Field::Month, Full) => (&MONTHS_FULL, 1),
        (Field::Month, Short) => (&MONTHS_SHORT, 1),
        (Field::Month, Narrow) => (&MONTHS_NARROW, 1),
        (Field::DayOfWeek, Full) => (&DAYS_FULL, 1),
        (Field::DayOfWeek, Short) => (&DAYS_SHORT, 1),
        (Field::DayOfWeek, Narrow) => (&DAYS_NARROW, 1),
        (Field::AmPm, _) => (&AMPM, 0),
        (Field::Era, Full) => (&ERA_FULL, 0),
        (Field::Era, Short) => (&ERA_SHORT, 0),
        (Field::Era, Narrow) => (&ERA_NARROW, 0),
        (Field::Quarter, Full) => (&QUARTER_FULL, 1),
        (Field::Quarter, Short) => (&QUARTER_SHORT, 1),
        (Field::Quarter, Narrow) => (&QUARTER_NARROW, 1),
        _ => return None,
    })
}

/// The text for `value` of `field`, if the field has texts and the value is in range.
pub(crate) fn text_for(field: Field, style: TextStyle, value: i64) -> Option<&'static str> {
    let (texts, first) = table(field, style)?;
    let idx = usize::try_from(value - first).ok()?;
    texts.get(idx).copied()
}

/// Matches the longest text of `field` at the start of `input`, ignoring ASCII
/// case; returns the field value and the matched byte length.
pub(crate) fn match_text(field: Field, style: TextStyle, input: &[u8]) -> Option<(i64, usize)> {
    let (texts, first) = table(field, style)?;
    let mut best: Option<(i64, usize)> = None;
    for (i, t) in texts.iter().enumerate() {
        let t = t.as_bytes();
        if input.len() >= t.len()
            && input[..t.len()].eq_ignore_ascii_case(t)
            && best.is_none_or(|(_, len)| t.len() > len)
        {
            best = Some((first + i as i64, t.len()));
        }
    }
    best
}

/// Region a common zone abbreviation stands for when parsing `z` (like
/// `java.time`, the abbreviation selects a region, not a fixed offset).
pub(crate) fn zone_for_abbreviation(abbr: &str) -> Option<&'static str> {
    Some(match abbr {
        "PST" | "PDT" | "PT" => "America/Los_Angeles",
        "MST" | "MDT" | "MT" => "America/Denver",
        "CST" | "CDT" | "CT" => "America/Chicago",
        "EST" | "EDT" | "ET" => "America/New_York",
        "AKST" | "AKDT" => "America/Anchorage",
        "HST" => "Pacific/Honolulu",
        "BST" => "Europe/London",
        "CET" | "CEST" | "MET" | "MEST" => "Europe/Paris",
        "EET" | "EEST" => "Europe/Athens",
        "WET" | "WEST" => "Europe/Lisbon",
        "MSK" => "Europe/Moscow",
        "IST" => "Asia/Kolkata",
        "JST" => "Asia/Tokyo",
        "KST" => "Asia/Seoul",
        "HKT" => "Asia/Hong_Kong",
        "AEST" | "AEDT" => "Australia/Sydney",
        "ACST" | "ACDT" => "Australia/Adelaide",
        "AWST" => "Australia/Perth",
        "NZST" | "NZDT" => "Pacific/Auckland",
        "SAST" => "Africa/Johannesburg",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups() {
        assert_eq!(text_for(Field::Month, TextStyle::Short, 1), Some("Jan"));
        assert_eq!(
            text_for(Field::Month, TextStyle::Full, 12),
            Some("December")
        );
        assert_eq!(text_for(Field::Month, TextStyle::Full, 13), None);
        assert_eq!(text_for(Field::DayOfWeek, TextStyle::Short, 7), Some("Sun"));
        assert_eq!(text_for(Field::AmPm, TextStyle::Short, 1), Some("PM"));
        assert_eq!(text_for(Field::Era, TextStyle::Short, 0), Some("BC"));
        assert_eq!(text_for(Field::Minute, TextStyle::Short, 0), None);
    }

    #[test]
    fn matching_is_case_insensitive_and_longest() {
        assert_eq!(
            match_text(Field::Month, TextStyle::Short, b"jan 01"),
            Some((1, 3))
        );
        assert_eq!(
            match_text(Field::Month, TextStyle::Full, b"JUNE"),
            Some((6, 4))
        );
        assert_eq!(match_text(Field::Month, TextStyle::Full, b"Jun"), None);
        assert_eq!(
            match_text(Field::AmPm, TextStyle::Short, b"pm"),
            Some((1, 2))
        );
        assert_eq!(match_text(Field::DayOfWeek, TextStyle::Full, b""), None);
    }
}
