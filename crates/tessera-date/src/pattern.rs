//! Compiles `java.time.format.DateTimeFormatter` pattern strings (`yyyy-MM-dd'T'HH:mm`).
//!
//! OpenSearch hands custom `format` strings to `DateTimeFormatterBuilder.appendPattern`,
//! so the accepted letters, counts and error messages follow that method:
//! letters map to fields with count-dependent widths, `'…'` quotes literal
//! text (`''` is a quote), `[` `]` delimit (nestable) optional sections, other
//! non-letter characters are literals, and `{`, `}`, `#` are reserved. Letters
//! are ISO/`Locale.ROOT` flavoured: weeks start on Monday (`Y`, `w`, `e`).

use crate::items::{Builder, Field, Item, Sign, TextStyle};

/// Deepest `[` nesting accepted (keeps parsing and dropping the items shallow).
const MAX_NESTING: usize = 32;

/// Compiles a pattern; the error is the bare `java.time` message
/// (e.g. `Unknown pattern letter: f`).
pub(crate) fn compile(pattern: &str) -> Result<Vec<Item>, String> {
    let chars: Vec<char> = pattern.chars().collect();
    // Stack of builders: the bottom is the whole pattern, the others open `[` sections.
    let mut stack: Vec<Builder> = vec![Builder::new()];
    let mut pos = 0;
    while pos < chars.len() {
        let cur = chars[pos];
        if cur.is_ascii_alphabetic() {
            let start = pos;
            while pos < chars.len() && chars[pos] == cur {
                pos += 1;
            }
            let count = pos - start;
            let top = stack.pop().ok_or("internal pattern state")?;
            stack.push(letter(top, cur, count)?);
            continue;
        }
        match cur {
            '\'' => {
                let start = pos;
                pos += 1;
                let mut text = String::new();
                loop {
                    if pos >= chars.len() {
                        return Err(format!(
                            "Pattern ends with an incomplete string literal: {pattern}"
                        ));
                    }
                    if chars[pos] == '\'' {
                        if pos + 1 < chars.len() && chars[pos + 1] == '\'' {
                            text.push('\'');
                            pos += 2;
                            continue;
                        }
                        break;
                    }
                    text.push(chars[pos]);
                    pos += 1;
                }
                pos += 1; // closing quote
                if pos - start == 2 {
                    // `''` on its own is a single quote.
                    text.push('\'');
                }
                let top = stack.pop().ok_or("internal pattern state")?;
                stack.push(top.lit(&text));
            }
            '[' => {
                if stack.len() > MAX_NESTING {
                    return Err("Pattern has too many nested optional sections".to_string());
                }
                stack.push(Builder::new());
                pos += 1;
            }
            ']' => {
                if stack.len() < 2 {
                    return Err("Pattern invalid as it contains ] without previous [".to_string());
                }
                let inner = stack.pop().ok_or("internal pattern state")?.build();
                let parent = stack.pop().ok_or("internal pattern state")?;
                stack.push(parent.item(Item::Optional(inner)));
                pos += 1;
            }
            '{' | '}' | '#' => {
                return Err(format!("Pattern includes reserved character: '{cur}'"));
            }
            _ => {
                let top = stack.pop().ok_or("internal pattern state")?;
                let mut buf = [0u8; 4];
                stack.push(top.lit(cur.encode_utf8(&mut buf)));
                pos += 1;
            }
        }
    }
    // Unclosed `[` sections are closed implicitly, as java.time does.
    while stack.len() > 1 {
        let inner = stack.pop().ok_or("internal pattern state")?.build();
        let parent = stack.pop().ok_or("internal pattern state")?;
        stack.push(parent.item(Item::Optional(inner)));
    }
    Ok(stack.pop().ok_or("internal pattern state")?.build())
}

fn too_many(cur: char) -> String {
    format!("Too many pattern letters: {cur}")
}

fn text_style(count: usize, cur: char) -> Result<TextStyle, String> {
    match count {
        1..=3 => Ok(TextStyle::Short),
        4 => Ok(TextStyle::Full),
        5 => Ok(TextStyle::Narrow),
        _ => Err(too_many(cur)),
    }
}

fn width(count: usize) -> u8 {
    count.min(19) as u8
}

/// Appends the item(s) for `count` repetitions of pattern letter `cur`.
fn letter(b: Builder, cur: char, count: usize) -> Result<Builder, String> {
    Ok(match cur {
        'G' => {
            let style = text_style(count, cur)?;
            b.item(Item::Text {
                field: Field::Era,
                style,
            })
        }
        'y' | 'u' | 'Y' => {
            let field = match cur {
                'y' => Field::YearOfEra,
                'u' => Field::Year,
                _ => Field::WeekBasedYear,
            };
            match count {
                2 => b.reduced(field),
                1..=3 => b.value(field, width(count), 19, Sign::Normal),
                _ if count <= 19 => b.value(field, width(count), 19, Sign::ExceedsPad),
                _ => return Err(too_many(cur)),
            }
        }
        'M' | 'L' | 'Q' | 'q' => {
            let field = if matches!(cur, 'M' | 'L') {
                Field::Month
            } else {
                Field::Quarter
            };
            match count {
                1 => b.value(field, 1, 19, Sign::Normal),
                2 => b.fixed(field, 2),
                _ => b.item(Item::Text {
                    field,
                    style: text_style(count, cur)?,
                }),
            }
        }
        'E' => b.item(Item::Text {
            field: Field::DayOfWeek,
            style: text_style(count, cur)?,
        }),
        'e' | 'c' => match count {
            1 => b.value(Field::DayOfWeek, 1, 1, Sign::NotNegative),
            2 if cur == 'e' => b.fixed(Field::DayOfWeek, 2),
            2 => return Err("Invalid pattern \"cc\"".to_string()),
            _ => b.item(Item::Text {
                field: Field::DayOfWeek,
                style: text_style(count, cur)?,
            }),
        },
        'a' => {
            if count != 1 {
                return Err(too_many(cur));
            }
            b.item(Item::Text {
                field: Field::AmPm,
                style: TextStyle::Short,
            })
        }
        'd' | 'h' | 'H' | 'k' | 'K' | 'm' | 's' => {
            let field = match cur {
                'd' => Field::DayOfMonth,
                'h' => Field::ClockHourOfAmPm,
                'H' => Field::HourOfDay,
                'k' => Field::ClockHourOfDay,
                'K' => Field::HourOfAmPm,
                'm' => Field::Minute,
                _ => Field::Second,
            };
            match count {
                1 => b.value(field, 1, 19, Sign::Normal),
                2 => b.fixed(field, 2),
                _ => return Err(too_many(cur)),
            }
        }
        'D' => match count {
            1 => b.value(Field::DayOfYear, 1, 19, Sign::Normal),
            2 | 3 => b.value(Field::DayOfYear, count as u8, 3, Sign::NotNegative),
            _ => return Err(too_many(cur)),
        },
        'F' => {
            if count != 1 {
                return Err(too_many(cur));
            }
            b.value(Field::AlignedDayOfWeekInMonth, 1, 19, Sign::Normal)
        }
        'W' => {
            if count != 1 {
                return Err(too_many(cur));
            }
            b.value(Field::WeekOfMonth, 1, 1, Sign::NotNegative)
        }
        'w' => match count {
            1 => b.value(Field::WeekOfWeekBasedYear, 1, 2, Sign::NotNegative),
            2 => b.fixed(Field::WeekOfWeekBasedYear, 2),
            _ => return Err(too_many(cur)),
        },
        'S' => {
            if count > 9 {
                return Err(too_many(cur));
            }
            b.fraction(count as u8, count as u8, false)
        }
        'n' => b.value(Field::NanoOfSecond, width(count), 19, Sign::NotNegative),
        'N' => b.value(Field::NanoOfDay, width(count), 19, Sign::NotNegative),
        'A' => b.value(Field::MilliOfDay, width(count), 19, Sign::NotNegative),
        'g' => b.value(Field::ModifiedJulianDay, width(count), 19, Sign::Normal),
        'V' => {
            if count != 2 {
                return Err("Pattern letter count must be 2: V".to_string());
            }
            b.item(Item::ZoneId)
        }
        'v' => {
            if count != 1 && count != 4 {
                return Err("Wrong number of pattern letters: v".to_string());
            }
            b.item(Item::ZoneText)
        }
        'z' => {
            if count > 4 {
                return Err(too_many(cur));
            }
            b.item(Item::ZoneText)
        }
        'Z' => match count {
            1..=3 => b.offset("+HHMM", "+0000"),
            4 => b.item(Item::LocalizedOffset { full: true }),
            5 => b.offset("+HH:MM:ss", "Z"),
            _ => return Err(too_many(cur)),
        },
        'O' => match count {
            1 => b.item(Item::LocalizedOffset { full: false }),
            4 => b.item(Item::LocalizedOffset { full: true }),
            _ => return Err("Pattern letter count must be 1 or 4: O".to_string()),
        },
        'X' | 'x' => {
            let pattern = match count {
                1 => "+HHmm",
                2 => "+HHMM",
                3 => "+HH:MM",
                4 => "+HHMMss",
                5 => "+HH:MM:ss",
                _ => return Err(too_many(cur)),
            };
            let zero = match (cur, count) {
                ('X', _) => "Z",
                (_, 1) => "+00",
                (_, c) if c % 2 == 0 => "+0000",
                _ => "+00:00",
            };
            b.offset(pattern, zero)
        }
        _ => return Err(format!("Unknown pattern letter: {cur}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiles_common_patterns() {
        for p in [
            "yyyy-MM-dd HH:mm:ss",
            "dd/MM/yyyy",
            "yyyy/MM/dd HH:mm:ss",
            "yyyy-MM-dd'T'HH:mm:ss.SSSZ",
            "MMM dd, yyyy",
            "yyyy-MM-dd'T'HH:mm:ssXXX",
            "EEE, dd MMM yyyy HH:mm:ss zzz",
            "uuuu-MM-dd['T'HH[:mm[:ss]]]",
            "hh:mm a",
            "yyyyMMddHHmmssSSS",
            "'quoted ''text'''",
            "''",
            "YYYY-'W'ww-e",
            "G y D k K A n N VV O OOOO xxx x Q QQQ qqqq F W g",
        ] {
            assert!(compile(p).is_ok(), "{p}: {:?}", compile(p));
        }
    }

    #[test]
    fn errors_match_java_messages() {
        assert_eq!(compile("foo").unwrap_err(), "Unknown pattern letter: f");
        assert_eq!(compile("yyyy-bb").unwrap_err(), "Unknown pattern letter: b");
        assert_eq!(compile("ddd").unwrap_err(), "Too many pattern letters: d");
        assert_eq!(compile("HHH").unwrap_err(), "Too many pattern letters: H");
        assert_eq!(
            compile("MMMMMM").unwrap_err(),
            "Too many pattern letters: M"
        );
        assert_eq!(compile("aa").unwrap_err(), "Too many pattern letters: a");
        assert_eq!(
            compile("V").unwrap_err(),
            "Pattern letter count must be 2: V"
        );
        assert_eq!(
            compile("yyyy]").unwrap_err(),
            "Pattern invalid as it contains ] without previous ["
        );
        assert_eq!(
            compile("yyyy'T").unwrap_err(),
            "Pattern ends with an incomplete string literal: yyyy'T"
        );
        assert_eq!(
            compile("yyyy{").unwrap_err(),
            "Pattern includes reserved character: '{'"
        );
        assert!(compile("SSSSSSSSSS").is_err());
        assert!(compile(&"[".repeat(100_000)).is_err());
        assert!(compile(&"[y".repeat(32)).is_ok());
    }

    #[test]
    fn quotes_and_optionals() {
        let items = compile("'it''s' [HH]").unwrap();
        assert_eq!(items[0], Item::Literal("it's ".to_string()));
        assert!(matches!(items[1], Item::Optional(_)));
        // Unclosed optional sections close at the end.
        let items = compile("yyyy[-MM").unwrap();
        assert!(matches!(items.last(), Some(Item::Optional(_))));
    }

    #[test]
    fn non_ascii_literals() {
        let items = compile("yyyy年MM月").unwrap();
        assert!(items.contains(&Item::Literal("年".to_string())));
    }
}
