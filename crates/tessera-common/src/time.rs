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
    let value = value.trim();
    if value == "-1" {
        return Ok(None);
    }
    let units: [(&str, u64); 8] = [
        ("nanos", 0),
        ("micros", 0),
        ("ms", 1),
        ("s", 1_000),
        ("m", 60_000),
        ("h", 3_600_000),
        ("d", 86_400_000),
        ("", 1),
    ];
    for (suffix, factor) in units {
        if let Some(number) = value.strip_suffix(suffix) {
            if suffix.is_empty() && value != "0" && !value.chars().all(|c| c.is_ascii_digit()) {
                break;
            }
            if let Ok(n) = number.trim().parse::<f64>() {
                if n < 0.0 {
                    break;
                }
                let millis = if factor == 0 {
                    (n / if suffix == "nanos" { 1e6 } else { 1e3 }) as u64
                } else {
                    (n * factor as f64) as u64
                };
                return Ok(Some(millis));
            }
            if !suffix.is_empty() {
                continue;
            }
        }
    }
    Err(crate::Error::illegal_argument(format!(
        "failed to parse setting [{setting}] with value [{value}] as a time value: unit is missing or unrecognized"
    )))
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
    }
}
