//! The compiled form of a date format: a sequence of printer/parser items.
//!
//! Both custom `java.time` patterns ([`crate::pattern`]) and OpenSearch's
//! named formats ([`crate::named`]) compile to the same [`Item`] list, so a
//! single engine ([`crate::engine`]) parses and prints all of them. The items
//! mirror `java.time.format.DateTimeFormatterBuilder`'s printer-parsers
//! closely enough that OpenSearch's strictness rules (digit counts, sign
//! handling, optional sections, "adjacent value parsing" for patterns like
//! `yyyyMMdd`) carry over.

/// A date-time field an item reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Field {
    /// 0 = BC, 1 = AD.
    Era,
    /// Year within the era (`y`), 1 and up.
    YearOfEra,
    /// Proleptic year (`u`), may be zero or negative.
    Year,
    /// Quarter of year 1..=4.
    Quarter,
    /// Month 1..=12.
    Month,
    /// Day of year 1..=366.
    DayOfYear,
    /// Day of month 1..=31.
    DayOfMonth,
    /// ISO day of week, 1 = Monday.
    DayOfWeek,
    /// 0 = AM, 1 = PM.
    AmPm,
    /// Hour 0..=23 (`H`).
    HourOfDay,
    /// Hour 1..=24 (`k`).
    ClockHourOfDay,
    /// Hour 0..=11 (`K`).
    HourOfAmPm,
    /// Hour 1..=12 (`h`).
    ClockHourOfAmPm,
    /// Minute 0..=59.
    Minute,
    /// Second 0..=59.
    Second,
    /// Nanosecond of second (`S`, `n`).
    NanoOfSecond,
    /// Millisecond of day (`A`).
    MilliOfDay,
    /// Nanosecond of day (`N`).
    NanoOfDay,
    /// ISO week-based year (`Y`, `x`-style named formats).
    WeekBasedYear,
    /// ISO week of week-based year (`w`).
    WeekOfWeekBasedYear,
    /// Week of month (`W`), printed only; ignored when parsing.
    WeekOfMonth,
    /// Aligned day of week in month (`F`), printed only; ignored when parsing.
    AlignedDayOfWeekInMonth,
    /// Modified Julian day (`g`).
    ModifiedJulianDay,
}

/// Number of [`Field`] variants (size of the parsed-field table).
pub(crate) const FIELD_COUNT: usize = 23;

impl Field {
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// How a number's sign is printed and parsed (`java.time.format.SignStyle`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sign {
    /// `-` for negatives only; `+` is rejected when parsing.
    Normal,
    /// No sign at all; negative values cannot be parsed.
    NotNegative,
    /// `+` when the value has more digits than the minimum width, `-` for negatives.
    ExceedsPad,
}

/// Width of a text field (`MMM` short, `MMMM` full, `MMMMM` narrow).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TextStyle {
    Short,
    Full,
    Narrow,
}

/// Whether an offset component is absent, printed only when non-zero, or always present.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    Absent,
    Optional,
    Required,
}

/// An offset layout such as `+HH:MM` or `+HHmm` (`java.time`'s offset patterns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OffsetPattern {
    pub minutes: Part,
    pub seconds: Part,
    pub colon: bool,
}

impl OffsetPattern {
    /// Looks up one of `java.time`'s offset patterns by its text.
    pub(crate) fn from_java(p: &str) -> OffsetPattern {
        let (minutes, seconds) = match p.trim_start_matches('+').replace(':', "").as_str() {
            "HH" => (Part::Absent, Part::Absent),
            "HHmm" => (Part::Optional, Part::Absent),
            "HHMM" => (Part::Required, Part::Absent),
            "HHMMss" => (Part::Required, Part::Optional),
            "HHMMSS" => (Part::Required, Part::Required),
            "HHmmss" => (Part::Optional, Part::Optional),
            _ => (Part::Required, Part::Absent),
        };
        OffsetPattern {
            minutes,
            seconds,
            colon: p.contains(':'),
        }
    }
}

/// One printer/parser element.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Item {
    /// Literal text, matched exactly.
    Literal(String),
    /// A decimal number.
    Number {
        field: Field,
        min: u8,
        max: u8,
        sign: Sign,
        /// Digits reserved for the fixed-width numbers that directly follow
        /// ("adjacent value parsing": `yyyyMMdd` reads the year as 4 digits).
        subsequent: u8,
    },
    /// Two-digit year (`yy`, `YY`): 00..=99 mapped onto 2000..=2099.
    Reduced { field: Field, subsequent: u8 },
    /// Fraction of second, `min..=max` digits, optionally preceded by `.`.
    Fraction { min: u8, max: u8, point: bool },
    /// A field printed as English text (month/day names, AM/PM, era, quarter).
    Text { field: Field, style: TextStyle },
    /// A UTC offset; `no_offset` is printed for zero (`Z`, `+0000`, `+00`…).
    Offset {
        pattern: OffsetPattern,
        no_offset: String,
    },
    /// `O`/`ZZZZ`: `GMT+1` (short) or `GMT+01:00` (full).
    LocalizedOffset { full: bool },
    /// Zone id or offset (`VV`, OpenSearch's `appendZoneOrOffsetId`).
    ZoneId,
    /// Zone name (`z`): abbreviation when printing, ids/abbreviations when parsing.
    ZoneText,
    /// Milliseconds since the epoch, optionally with up to 6 fraction digits (`epoch_millis`).
    EpochMillis,
    /// Seconds since the epoch, optionally with up to 9 fraction digits (`epoch_second`).
    EpochSecond,
    /// An optional section: parsed if possible, always printed.
    Optional(Vec<Item>),
}

/// Assembles items, tracking adjacent value parsing like `DateTimeFormatterBuilder`.
#[derive(Default)]
pub(crate) struct Builder {
    items: Vec<Item>,
    /// Index of the variable-width number that following fixed-width numbers reserve digits from.
    active: Option<usize>,
}

impl Builder {
    pub(crate) fn new() -> Builder {
        Builder::default()
    }

    /// A number; fixed-width unsigned numbers after another number reserve their width from it.
    pub(crate) fn value(mut self, field: Field, min: u8, max: u8, sign: Sign) -> Builder {
        self.push_value(Item::Number {
            field,
            min,
            max,
            sign,
            subsequent: 0,
        });
        self
    }

    /// `appendValue(field, width)`: exactly `width` digits, no sign.
    pub(crate) fn fixed(self, field: Field, width: u8) -> Builder {
        self.value(field, width, width, Sign::NotNegative)
    }

    /// Two-digit reduced year.
    pub(crate) fn reduced(mut self, field: Field) -> Builder {
        self.push_value(Item::Reduced {
            field,
            subsequent: 0,
        });
        self
    }

    /// Fraction of second.
    pub(crate) fn fraction(mut self, min: u8, max: u8, point: bool) -> Builder {
        let item = Item::Fraction { min, max, point };
        if min == max && !point {
            self.push_value(item);
        } else {
            self.push_other(item);
        }
        self
    }

    /// Literal text.
    pub(crate) fn lit(mut self, text: &str) -> Builder {
        if let Some(Item::Literal(prev)) = self.items.last_mut() {
            if self.active.is_none() {
                prev.push_str(text);
                return self;
            }
        }
        self.push_other(Item::Literal(text.to_string()));
        self
    }

    /// Any non-numeric item.
    pub(crate) fn item(mut self, item: Item) -> Builder {
        self.push_other(item);
        self
    }

    /// An optional section built by `f`.
    pub(crate) fn optional(mut self, f: impl FnOnce(Builder) -> Builder) -> Builder {
        let inner = f(Builder::new()).build();
        self.push_other(Item::Optional(inner));
        self
    }

    /// Appends already-built items (like appending a whole sub-formatter).
    pub(crate) fn append(mut self, items: Vec<Item>) -> Builder {
        self.items.extend(items);
        self.active = None;
        self
    }

    /// Offset in a `java.time` pattern such as `+HH:MM`, printing `no_offset` for zero.
    pub(crate) fn offset(self, pattern: &str, no_offset: &str) -> Builder {
        self.item(Item::Offset {
            pattern: OffsetPattern::from_java(pattern),
            no_offset: no_offset.to_string(),
        })
    }

    pub(crate) fn build(self) -> Vec<Item> {
        self.items
    }

    pub(crate) fn push_other(&mut self, item: Item) {
        self.items.push(item);
        self.active = None;
    }

    pub(crate) fn push_value(&mut self, item: Item) {
        let fixed_width = match &item {
            Item::Number { min, max, sign, .. } => {
                (min == max && *sign == Sign::NotNegative).then_some(*max)
            }
            Item::Reduced { .. } => Some(2),
            Item::Fraction { min, max, .. } => (min == max).then_some(*max),
            _ => None,
        };
        match (self.active, fixed_width) {
            (Some(idx), Some(width)) => {
                if let Some(Item::Number { subsequent, .. } | Item::Reduced { subsequent, .. }) =
                    self.items.get_mut(idx)
                {
                    *subsequent = subsequent.saturating_add(width);
                }
                self.items.push(item);
            }
            _ => {
                self.items.push(item);
                self.active = Some(self.items.len() - 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjacent_value_widths_accumulate() {
        let items = Builder::new()
            .value(Field::Year, 4, 19, Sign::ExceedsPad)
            .fixed(Field::Month, 2)
            .fixed(Field::DayOfMonth, 2)
            .build();
        match &items[0] {
            Item::Number { subsequent, .. } => assert_eq!(*subsequent, 4),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn literals_break_adjacency_and_merge() {
        let items = Builder::new()
            .value(Field::Year, 4, 19, Sign::ExceedsPad)
            .lit("-")
            .lit("-")
            .fixed(Field::Month, 2)
            .build();
        assert_eq!(items.len(), 3);
        assert_eq!(items[1], Item::Literal("--".to_string()));
        match &items[0] {
            Item::Number { subsequent, .. } => assert_eq!(*subsequent, 0),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn offset_patterns() {
        let p = OffsetPattern::from_java("+HH:MM");
        assert_eq!(
            (p.minutes, p.seconds, p.colon),
            (Part::Required, Part::Absent, true)
        );
        let p = OffsetPattern::from_java("+HHmm");
        assert_eq!(
            (p.minutes, p.seconds, p.colon),
            (Part::Optional, Part::Absent, false)
        );
        let p = OffsetPattern::from_java("+HH:MM:ss");
        assert_eq!(
            (p.minutes, p.seconds, p.colon),
            (Part::Required, Part::Optional, true)
        );
    }
}
