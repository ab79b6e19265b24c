//! The `format` of pipeline results: a Java DecimalFormat pattern such as `0.00`, `#.##` or
//! `#,##0.0`. The digit patterns that people write for numbers are supported (minimum and
//! maximum fraction digits, minimum integer digits, grouping); prefixes, suffixes, percent,
//! exponents and sub-patterns are refused rather than approximated.

use tessera_common::{Error, Result};

#[derive(Clone, Debug, PartialEq)]
pub struct DecimalFormat {
    pattern: String,
    min_int: usize,
    min_frac: usize,
    max_frac: usize,
    /// Digits per group (`#,##0` → 3), when grouping.
    grouping: Option<usize>,
}

impl DecimalFormat {
    pub fn parse(pattern: &str) -> Result<DecimalFormat> {
        let unsupported = || {
            Error::not_supported(&format!(
                "the [format] pattern [{pattern}] (only digit patterns such as 0.00, #.## or #,##0.0)"
            ))
        };
        let (int_part, frac_part) = match pattern.split_once('.') {
            Some((i, f)) => (i, f),
            None => (pattern, ""),
        };
        if pattern.is_empty()
            || !int_part.chars().all(|c| matches!(c, '#' | '0' | ','))
            || !frac_part.chars().all(|c| matches!(c, '#' | '0'))
            || int_part.starts_with(',')
            || int_part.ends_with(',')
        {
            return Err(unsupported());
        }
        let grouping = int_part
            .rfind(',')
            .map(|i| int_part[i + 1..].chars().count())
            .filter(|n| *n > 0);
        // zeros must follow the hashes: `0#` is not a DecimalFormat pattern
        let digits: String = int_part.chars().filter(|c| *c != ',').collect();
        if digits.contains("0#") || frac_part.contains("#0") {
            return Err(unsupported());
        }
        Ok(DecimalFormat {
            pattern: pattern.to_string(),
            min_int: digits.chars().filter(|c| *c == '0').count(),
            min_frac: frac_part.chars().filter(|c| *c == '0').count(),
            max_frac: frac_part.len(),
            grouping,
        })
    }

    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Formats a finite value, rounding half-even on its exact binary value.
    pub fn format(&self, value: f64) -> String {
        let text = format!("{:.*}", self.max_frac, value.abs());
        let (int_digits, frac_digits) = match text.split_once('.') {
            Some((i, f)) => (i.to_string(), f.to_string()),
            None => (text, String::new()),
        };
        let frac = frac_digits.trim_end_matches('0');
        let mut frac = frac.to_string();
        while frac.len() < self.min_frac {
            frac.push('0');
        }
        let mut int = int_digits.trim_start_matches('0').to_string();
        while int.len() < self.min_int {
            int.insert(0, '0');
        }
        if let Some(size) = self.grouping {
            let chars: Vec<char> = int.chars().collect();
            let mut grouped = String::new();
            for (i, c) in chars.iter().enumerate() {
                if i > 0 && (chars.len() - i).is_multiple_of(size) {
                    grouped.push(',');
                }
                grouped.push(*c);
            }
            int = grouped;
        }
        let negative = value < 0.0;
        let mut out = String::new();
        if negative {
            out.push('-');
        }
        out.push_str(&int);
        if !frac.is_empty() {
            out.push('.');
            out.push_str(&frac);
        }
        if out.is_empty() || out == "-" {
            out.push('0');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(pattern: &str, v: f64) -> String {
        DecimalFormat::parse(pattern).unwrap().format(v)
    }

    #[test]
    fn digit_patterns() {
        assert_eq!(fmt("0.0", -10.0), "-10.0");
        assert_eq!(fmt("0.0", 15.833333333333332), "15.8");
        assert_eq!(fmt("0.0", -44.375), "-44.4");
        assert_eq!(fmt("0.00", 1.5), "1.50");
        assert_eq!(fmt("#.##", 0.5), ".5");
        assert_eq!(fmt("#.##", 2.0), "2");
        assert_eq!(fmt("#,##0.00", 1234567.891), "1,234,567.89");
        assert_eq!(fmt("000", 7.0), "007");
        assert_eq!(fmt("0", 2.5), "2");
        assert_eq!(fmt("0", 3.5), "4");
        assert_eq!(fmt("0.0", -0.01), "-0.0");
        assert!(DecimalFormat::parse("0.0%").is_err());
        assert!(DecimalFormat::parse("$#").is_err());
    }
}
