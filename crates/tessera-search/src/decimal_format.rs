//! Java's `DecimalFormat` patterns (`0.00`, `#,##0.###`, `0.0%`, `0.00E0`, `'#'0;(#)`), the
//! numeric `format` of `docvalue_fields`. OpenSearch formats numeric doc values with a
//! `DecimalFormat` in the root locale, rounding half to even on the double's exact value, so
//! `0.015` (stored as 0.01499…) shows as `0.01`.
//!
//! Supported: a positive and an optional negative subpattern; literal prefixes and suffixes,
//! quoted with `'` where they hold special characters; `%` (×100) and `‰` (×1000); `¤` (the
//! root locale's currency sign, shown as is); grouping with `,`; minimum and maximum fraction
//! digits; a decimal point always shown (`0.`); scientific notation with a fixed number of
//! integer digits (`0.00E0`, `00.###E00`). Engineering notation (`##0.##E0`) is refused.

use tessera_common::{Error, Result};

/// A parsed pattern.
#[derive(Clone, Debug, PartialEq)]
pub struct DecimalFormat {
    positive_prefix: String,
    positive_suffix: String,
    /// `None`: `-` and the positive prefix and suffix.
    negative: Option<(String, String)>,
    min_integer: usize,
    min_fraction: usize,
    max_fraction: usize,
    /// Digits per group (`#,##0`: 3); 0 without grouping.
    grouping: usize,
    decimal_always: bool,
    /// ×100 (`%`) or ×1000 (`‰`).
    multiplier: u32,
    /// Minimum exponent digits, for scientific notation.
    exponent_digits: Option<usize>,
}

/// One subpattern: prefix, number part, suffix.
struct Subpattern {
    prefix: String,
    number: String,
    suffix: String,
    multiplier: u32,
}

fn invalid(pattern: &str, why: &str) -> Error {
    Error::illegal_argument(format!("{why} in pattern \"{pattern}\""))
}

fn is_number_char(c: char) -> bool {
    matches!(c, '0' | '#' | ',' | '.' | 'E')
}

/// Splits `text` (from `start`) into prefix, number part and suffix; `;` ends the subpattern.
fn subpattern(pattern: &str, chars: &[char], start: &mut usize) -> Result<Subpattern> {
    let mut parts = [String::new(), String::new(), String::new()];
    let mut phase = 0;
    let mut multiplier = 1;
    let mut i = *start;
    while i < chars.len() {
        let c = chars[i];
        if c == ';' {
            i += 1;
            break;
        }
        if phase == 1 && !is_number_char(c) {
            phase = 2;
        }
        if phase == 0 && is_number_char(c) && c != 'E' {
            phase = 1;
        }
        if phase == 1 {
            parts[1].push(c);
            i += 1;
            continue;
        }
        let affix = &mut parts[phase];
        match c {
            '\'' => {
                // '' is a quote; 'text' is literal text
                if chars.get(i + 1) == Some(&'\'') {
                    affix.push('\'');
                    i += 2;
                    continue;
                }
                let mut j = i + 1;
                loop {
                    match chars.get(j) {
                        None => return Err(invalid(pattern, "Unterminated quote")),
                        Some('\'') if chars.get(j + 1) == Some(&'\'') => {
                            affix.push('\'');
                            j += 2;
                        }
                        Some('\'') => break,
                        Some(&q) => {
                            affix.push(q);
                            j += 1;
                        }
                    }
                }
                i = j + 1;
            }
            '%' => {
                multiplier = 100;
                affix.push('%');
                i += 1;
            }
            '\u{2030}' => {
                multiplier = 1000;
                affix.push('\u{2030}');
                i += 1;
            }
            _ => {
                affix.push(c);
                i += 1;
            }
        }
    }
    *start = i;
    let [prefix, number, suffix] = parts;
    Ok(Subpattern {
        prefix,
        number,
        suffix,
        multiplier,
    })
}

impl DecimalFormat {
    pub fn parse(pattern: &str) -> Result<DecimalFormat> {
        let chars: Vec<char> = pattern.chars().collect();
        let mut at = 0;
        let positive = subpattern(pattern, &chars, &mut at)?;
        let negative = if at < chars.len() {
            Some(subpattern(pattern, &chars, &mut at)?)
        } else {
            None
        };
        let number = positive.number.as_str();
        let (mantissa, exponent) = match number.split_once('E') {
            Some((m, e)) => {
                if e.is_empty() || e.chars().any(|c| c != '0') {
                    return Err(invalid(pattern, "Malformed exponential"));
                }
                (m, Some(e.len()))
            }
            None => (number, None),
        };
        let (integer, fraction) = match mantissa.split_once('.') {
            Some((i, f)) => {
                if f.contains('.') {
                    return Err(invalid(pattern, "Multiple decimal separators"));
                }
                (i, Some(f))
            }
            None => (mantissa, None),
        };
        let fraction_text = fraction.unwrap_or("");
        if fraction_text.contains(',') {
            return Err(invalid(pattern, "Malformed pattern"));
        }
        let fraction_zeros = fraction_text.chars().take_while(|c| *c == '0').count();
        if fraction_text[fraction_zeros..].contains('0') {
            return Err(invalid(pattern, "Unexpected '0'"));
        }
        let digits: String = integer.chars().filter(|c| *c != ',').collect();
        let hashes = digits.chars().take_while(|c| *c == '#').count();
        if digits[hashes..].contains('#') {
            return Err(invalid(pattern, "Unexpected '0'"));
        }
        let grouping = match integer.rfind(',') {
            Some(at) => integer.len() - at - 1,
            None => 0,
        };
        let min_integer = digits.len() - hashes;
        if exponent.is_some() && (hashes > 0 || min_integer == 0) {
            return Err(Error::not_supported(&format!(
                "the engineering notation of the [format] [{pattern}]"
            )));
        }
        Ok(DecimalFormat {
            positive_prefix: positive.prefix,
            positive_suffix: positive.suffix,
            negative: negative.map(|n| (n.prefix, n.suffix)),
            // "#" and ".##" keep an integer digit only where the value has one
            min_integer,
            min_fraction: fraction_zeros,
            max_fraction: fraction_text.len(),
            grouping,
            decimal_always: fraction.is_some() && fraction_text.is_empty(),
            multiplier: positive.multiplier,
            exponent_digits: exponent,
        })
    }

    /// A double, as `DecimalFormat.format(double)`.
    pub fn format_f64(&self, value: f64) -> String {
        let negative = value.is_sign_negative() && !value.is_nan();
        if value.is_nan() {
            return "NaN".into();
        }
        let magnitude = value.abs() * self.multiplier as f64;
        if magnitude.is_infinite() {
            return self.affixed(negative, "\u{221e}".into());
        }
        let body = match self.exponent_digits {
            Some(exponent_digits) => self.scientific(magnitude, exponent_digits),
            None => {
                let text = format!("{magnitude:.*}", self.max_fraction);
                let (integer, fraction) = text.split_once('.').unwrap_or((&text, ""));
                self.plain(integer, fraction)
            }
        };
        self.affixed(negative, body)
    }

    /// A long, as `DecimalFormat.format(long)`: exact, whatever its size.
    pub fn format_i64(&self, value: i64) -> String {
        if self.exponent_digits.is_some() {
            return self.format_f64(value as f64);
        }
        let magnitude = value.unsigned_abs() as u128 * self.multiplier as u128;
        self.affixed(value < 0, self.plain(&magnitude.to_string(), ""))
    }

    /// The digits of a non-negative number: `integer` and `fraction` (already rounded to
    /// `max_fraction` digits).
    fn plain(&self, integer: &str, fraction: &str) -> String {
        let fraction = fraction.trim_end_matches('0');
        let fraction = if fraction.len() < self.min_fraction {
            format!("{fraction:0<width$}", width = self.min_fraction)
        } else {
            fraction.to_string()
        };
        let integer = integer.trim_start_matches('0');
        let integer = if integer.len() < self.min_integer {
            format!("{integer:0>width$}", width = self.min_integer)
        } else {
            integer.to_string()
        };
        let mut out = self.grouped(&integer);
        if out.is_empty() && fraction.is_empty() {
            // no digit at all would not parse back: Java prints a zero
            out.push('0');
        }
        if !fraction.is_empty() || self.decimal_always {
            out.push('.');
        }
        out.push_str(&fraction);
        out
    }

    fn grouped(&self, integer: &str) -> String {
        if self.grouping == 0 || integer.len() <= self.grouping {
            return integer.to_string();
        }
        let mut out = String::with_capacity(integer.len() + integer.len() / self.grouping);
        for (i, c) in integer.chars().enumerate() {
            if i > 0 && (integer.len() - i).is_multiple_of(self.grouping) {
                out.push(',');
            }
            out.push(c);
        }
        out
    }

    /// `min_integer` integer digits, up to `max_fraction` fraction digits, then `E` and the
    /// exponent (Java's `0.00E0` gives `-4.20E1` for -42).
    fn scientific(&self, magnitude: f64, exponent_digits: usize) -> String {
        let significant = self.min_integer + self.max_fraction;
        // Rust's `e` format rounds the exact value half to even, as Java does
        let text = format!("{magnitude:.*e}", significant.saturating_sub(1));
        let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
        let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
        let mut exponent: i64 = exponent.parse().unwrap_or(0);
        if magnitude != 0.0 {
            exponent -= self.min_integer as i64 - 1;
        } else {
            exponent = 0;
        }
        let (integer, fraction) = digits.split_at(self.min_integer.min(digits.len()));
        let mut out = self.plain_scientific(integer, fraction);
        out.push('E');
        if exponent < 0 {
            out.push('-');
        }
        out.push_str(&format!(
            "{:0>width$}",
            exponent.unsigned_abs(),
            width = exponent_digits
        ));
        out
    }

    fn plain_scientific(&self, integer: &str, fraction: &str) -> String {
        let fraction = fraction.trim_end_matches('0');
        let mut out = integer.to_string();
        if fraction.len() < self.min_fraction {
            let padded = format!("{fraction:0<width$}", width = self.min_fraction);
            if !padded.is_empty() {
                out.push('.');
                out.push_str(&padded);
            }
        } else if !fraction.is_empty() || self.decimal_always {
            out.push('.');
            out.push_str(fraction);
        }
        out
    }

    fn affixed(&self, negative: bool, body: String) -> String {
        match (negative, &self.negative) {
            (false, _) => format!("{}{body}{}", self.positive_prefix, self.positive_suffix),
            (true, Some((prefix, suffix))) => format!("{prefix}{body}{suffix}"),
            (true, None) => format!("-{}{body}{}", self.positive_prefix, self.positive_suffix),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(pattern: &str, value: f64) -> String {
        DecimalFormat::parse(pattern).unwrap().format_f64(value)
    }

    fn l(pattern: &str, value: i64) -> String {
        DecimalFormat::parse(pattern).unwrap().format_i64(value)
    }

    #[test]
    fn formats_like_opensearch_docvalue_fields() {
        // each expectation is what OpenSearch 2.19 returned for the value and pattern
        assert_eq!(f("0.00", 1234.5678), "1234.57");
        assert_eq!(f("0.00", -0.005), "-0.01");
        assert_eq!(f("0.00", 0.015), "0.01");
        assert_eq!(f("0.00", 2.5), "2.50");
        assert_eq!(f("0.00", 1e20), "100000000000000000000.00");
        assert_eq!(l("#,##0.0", 1_234_567), "1,234,567.0");
        assert_eq!(l("#,##0.0", -3), "-3.0");
        assert_eq!(f("0.###", 2.5), "2.5");
        assert_eq!(f("00.0", 3.16), "03.2");
        assert_eq!(f("#", 0.125), "0");
        assert_eq!(f("0.00E0", -42.0), "-4.20E1");
        assert_eq!(f("\u{a4} #,##0.00;(#)", 1234.5678), "\u{a4} 1,234.57");
        assert_eq!(f("\u{a4} #,##0.00;(#)", -0.005), "(0.01)");
        assert_eq!(
            f("\u{a4} #,##0.00;(#)", 1e20),
            "\u{a4} 100,000,000,000,000,000,000.00"
        );
        assert_eq!(l("0.0%", 1_234_567), "123456700.0%");
        assert_eq!(l("0.0%", -3), "-300.0%");
        assert_eq!(l("'#'0", -42), "-#42");
    }

    #[test]
    fn follows_java_for_the_corner_cases() {
        assert_eq!(f("#.##", 0.5), ".5");
        assert_eq!(f("#.##", 0.0), "0");
        assert_eq!(f("0.", 3.0), "3.");
        assert_eq!(f("00.00E00", 0.00123), "12.30E-04");
        assert_eq!(f("0.0E0", 0.0), "0.0E0");
        assert_eq!(l("#,##0", i64::MIN), "-9,223,372,036,854,775,808");
        assert_eq!(f("'it''s' 0", 1.0), "it's 1");
        assert_eq!(f("0.0\u{2030}", 0.5), "500.0\u{2030}");
    }

    #[test]
    fn refuses_malformed_and_engineering_patterns() {
        assert!(DecimalFormat::parse("0.0.0").is_err());
        assert!(DecimalFormat::parse("0#").is_err());
        assert!(DecimalFormat::parse("'0").is_err());
        assert_eq!(DecimalFormat::parse("##0.##E0").unwrap_err().status(), 400);
    }
}
