//! Wall-clock helpers: epoch milliseconds as OpenSearch reports them.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, now.
pub fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A duration in milliseconds as OpenSearch's `TimeValue` prints it: `1m`, `30s`, `250ms`.
pub fn format_time_value(millis: u64) -> String {
    match millis {
        0 => "0s".to_string(),
        m if m % 3_600_000 == 0 => format!("{}h", m / 3_600_000),
        m if m % 60_000 == 0 => format!("{}m", m / 60_000),
        m if m % 1000 == 0 => format!("{}s", m / 1000),
        m => format!("{m}ms"),
    }
}

/// Parses an OpenSearch time value (`500ms`, `1s`, `2m`, `1h`, `1d`, `-1`, a bare number of ms)
/// into milliseconds; `-1` means "disabled" and is returned as `None`.
pub fn parse_time_value(value: &str, setting: &str) -> crate::Result<Option<u64>> {
    // OpenSearch's `TimeValue.parseTimeValue`: units in any case (`1S`, `2D`), whole numbers
    let lower = value.trim().to_ascii_lowercase();
    if lower == "-1" {
        return Ok(None);
    }
    // (suffix, nanoseconds per unit); `nanos`/`micros` before `s`, `ms` before `m` and `s`
    let units: [(&str, u128); 7] = [
        ("nanos", 1),
        ("micros", 1_000),
        ("ms", 1_000_000),
        ("s", 1_000_000_000),
        ("m", 60_000_000_000),
        ("h", 3_600_000_000_000),
        ("d", 86_400_000_000_000),
    ];
    let unit = units.iter().find(|(suffix, _)| lower.ends_with(suffix));
    let (number, nanos) = match unit {
        Some((suffix, nanos)) => (lower[..lower.len() - suffix.len()].trim(), *nanos),
        // a bare number of milliseconds, more leniently than OpenSearch (only `0` there)
        None if !lower.is_empty() && lower.bytes().all(|b| b.is_ascii_digit()) => {
            (lower.as_str(), 1_000_000)
        }
        None => return Err(unit_missing(value, setting)),
    };
    let n: i64 = match number.parse() {
        Ok(n) => n,
        Err(_) if number.parse::<f64>().is_ok() => {
            return Err(crate::Error::illegal_argument(format!(
                "failed to parse [{value}], fractional time values are not supported"
            ))
            .caused_by(crate::Error::new(
                "number_format_exception",
                400,
                format!("For input string: \"{number}\""),
            )))
        }
        Err(_) => return Err(unit_missing(value, setting)),
    };
    if n < 0 {
        return Err(crate::Error::illegal_argument(format!(
            "failed to parse setting [{setting}] with value [{value}] as a time value: negative durations are not supported"
        )));
    }
    Ok(Some(
        (n as u128 * nanos / 1_000_000).min(u64::MAX as u128) as u64
    ))
}

fn unit_missing(value: &str, setting: &str) -> crate::Error {
    crate::Error::illegal_argument(format!(
        "failed to parse setting [{setting}] with value [{value}] as a time value: unit is missing or unrecognized"
    ))
}

#[cfg(test)]
mod tests {

    #[test]
    fn durations_print_as_opensearch_prints_them() {
        assert_eq!(super::format_time_value(60_000), "1m");
        assert_eq!(super::format_time_value(30_000), "30s");
        assert_eq!(super::format_time_value(250), "250ms");
        assert_eq!(super::format_time_value(7_200_000), "2h");
    }
    use super::*;

    #[test]
    fn parses_time_values() {
        assert_eq!(parse_time_value("1s", "x").unwrap(), Some(1000));
        assert_eq!(parse_time_value("500ms", "x").unwrap(), Some(500));
        assert_eq!(parse_time_value("2m", "x").unwrap(), Some(120_000));
        assert_eq!(parse_time_value("1h", "x").unwrap(), Some(3_600_000));
        assert_eq!(parse_time_value("-1", "x").unwrap(), None);
        assert_eq!(parse_time_value("0", "x").unwrap(), Some(0));
        assert_eq!(parse_time_value("30", "x").unwrap(), Some(30));
        assert!(parse_time_value("abc", "x").is_err());
        assert!(parse_time_value("1y", "x").is_err());
        // units in any case, as OpenSearch 2.19.6 takes them
        assert_eq!(parse_time_value("1S", "x").unwrap(), Some(1000));
        assert_eq!(parse_time_value("2D", "x").unwrap(), Some(172_800_000));
        assert_eq!(parse_time_value("3MS", "x").unwrap(), Some(3));
        assert_eq!(parse_time_value("1H", "x").unwrap(), Some(3_600_000));
        assert_eq!(parse_time_value("5000000nanos", "x").unwrap(), Some(5));
        assert_eq!(parse_time_value("7000micros", "x").unwrap(), Some(7));
        let reason = |text: &str| {
            parse_time_value(text, "x")
                .unwrap_err()
                .reason()
                .to_string()
        };
        assert_eq!(
            reason("1.5s"),
            "failed to parse [1.5s], fractional time values are not supported"
        );
        assert_eq!(
            reason("-5s"),
            "failed to parse setting [x] with value [-5s] as a time value: negative durations are not supported"
        );
        assert_eq!(
            reason("1w"),
            "failed to parse setting [x] with value [1w] as a time value: unit is missing or unrecognized"
        );
    }
}
