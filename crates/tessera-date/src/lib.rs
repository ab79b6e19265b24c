//! Dates as OpenSearch (2.x, `java.time` based) handles them, on `i64` epoch milliseconds.
//!
//! Tessera has to accept and print dates exactly like OpenSearch: the same
//! `format` strings in mappings (named formats such as
//! `strict_date_optional_time`, and `java.time` patterns such as
//! `yyyy/MM/dd HH:mm:ss`), the same date math in range queries (`now-1d/d`,
//! `2015-01-01||+1M/d`, with round-up for `lte`/`gt`), the same strings in
//! `docvalue_fields` and aggregation keys, and the same calendar bucketing with
//! a `time_zone` in `date_histogram`. This crate does all of that with no
//! dependencies: calendar arithmetic is implemented directly ([`civil`]) and
//! region time zones are read from the system tz database.
//!
//! Entry points:
//! - [`DateFormat`]: compile a `format`, [`DateFormat::parse_millis`] and
//!   [`DateFormat::format_millis`].
//! - [`parse_date_math`]: range-query bounds.
//! - [`TimeZone`]: UTC, fixed offsets, IANA regions.
//! - [`CalendarUnit`] and [`parse_fixed_interval`]: `date_histogram` buckets.

use std::fmt;

mod calendar;
pub mod civil;
mod engine;
mod fallback;
mod format;
mod items;
mod math;
mod named;
mod pattern;
mod resolve;
mod text;
mod tzif;
mod zone;

pub use calendar::{parse_fixed_interval, CalendarUnit};
pub use format::{DateFormat, DEFAULT_FORMAT};
pub use math::parse_date_math;
pub use zone::{system_tzdata_available, TimeZone};

/// A date could not be parsed, a format or zone is invalid, or date math failed.
/// The message follows OpenSearch's wording where there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DateError {
    /// Human-readable reason.
    pub message: String,
}

impl DateError {
    /// An error with the given message.
    pub fn new(message: impl Into<String>) -> DateError {
        DateError {
            message: message.into(),
        }
    }
}

impl fmt::Display for DateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DateError {}

/// Result with a [`DateError`].
pub type Result<T> = std::result::Result<T, DateError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_api_smoke() {
        let f = DateFormat::default_format();
        let t = f.parse_millis("2015-01-01T00:00:00Z", None, false).unwrap();
        assert_eq!(t, 1_420_070_400_000);
        assert_eq!(f.format_millis(t, None), "2015-01-01T00:00:00.000Z");
        let paris = TimeZone::parse("Europe/Paris").unwrap();
        assert_eq!(CalendarUnit::Day.round_down(t, &paris), t - 3_600_000);
        assert_eq!(parse_date_math("now/d", &f, t + 5, None, false).unwrap(), t);
        assert_eq!(parse_fixed_interval("1h"), Some(3_600_000));
        let e = DateError::new("boom");
        assert_eq!(e.to_string(), "boom");
        let _: &dyn std::error::Error = &e;
    }
}
