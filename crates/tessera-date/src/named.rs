//! OpenSearch's built-in named formats (`strict_date_optional_time`, `epoch_millis`, …).
//!
//! Each named format has one printer and one or more parsers, defined to
//! match OpenSearch 2.x's `DateFormatters` element by element: strict formats
//! demand exact digit counts, the lenient ones accept 1–2 digit months and
//! hours, most accept an offset either as a zone id / `+01:00` or as `+0100`,
//! and printers always write milliseconds and an offset (`Z` for UTC). Names
//! are case-sensitive; the deprecated camelCase spellings
//! (`strictDateOptionalTime`) are accepted too, as OpenSearch still does.

use crate::items::Field::{
    DayOfMonth, DayOfWeek, DayOfYear, HourOfDay, Minute, Month, Second, WeekBasedYear,
    WeekOfWeekBasedYear, Year, YearOfEra,
};
use crate::items::Sign::{ExceedsPad, Normal, NotNegative};
use crate::items::{Builder, Item};

/// A named format: how it prints, and the parsers tried in order.
pub(crate) struct Named {
    pub printer: Vec<Item>,
    pub parsers: Vec<Vec<Item>>,
}

impl Named {
    fn new(printer: Vec<Item>, parsers: Vec<Vec<Item>>) -> Named {
        Named { printer, parsers }
    }

    fn same(items: Vec<Item>) -> Named {
        Named {
            printer: items.clone(),
            parsers: vec![items],
        }
    }
}

/// All snake_case names, in OpenSearch's `FormatNames` order.
const NAMES: &[&str] = &[
    "iso8601",
    "basic_date",
    "basic_date_time",
    "basic_date_time_no_millis",
    "basic_ordinal_date",
    "basic_ordinal_date_time",
    "basic_ordinal_date_time_no_millis",
    "basic_time",
    "basic_time_no_millis",
    "basic_t_time",
    "basic_t_time_no_millis",
    "basic_week_date",
    "basic_week_date_time",
    "basic_week_date_time_no_millis",
    "date",
    "date_hour",
    "date_hour_minute",
    "date_hour_minute_second",
    "date_hour_minute_second_fraction",
    "date_hour_minute_second_millis",
    "date_optional_time",
    "date_time",
    "date_time_no_millis",
    "hour",
    "hour_minute",
    "hour_minute_second",
    "hour_minute_second_fraction",
    "hour_minute_second_millis",
    "ordinal_date",
    "ordinal_date_time",
    "ordinal_date_time_no_millis",
    "time",
    "time_no_millis",
    "t_time",
    "t_time_no_millis",
    "week_date",
    "week_date_time",
    "week_date_time_no_millis",
    "week_year",
    "weekyear",
    "weekyear_week",
    "weekyear_week_day",
    "year",
    "year_month",
    "year_month_day",
    "epoch_second",
    "epoch_millis",
    "strict_basic_week_date",
    "strict_basic_week_date_time",
    "strict_basic_week_date_time_no_millis",
    "strict_date",
    "strict_date_hour",
    "strict_date_hour_minute",
    "strict_date_hour_minute_second",
    "strict_date_hour_minute_second_fraction",
    "strict_date_hour_minute_second_millis",
    "strict_date_optional_time",
    "strict_date_optional_time_nanos",
    "strict_date_time",
    "strict_date_time_no_millis",
    "strict_hour",
    "strict_hour_minute",
    "strict_hour_minute_second",
    "strict_hour_minute_second_fraction",
    "strict_hour_minute_second_millis",
    "strict_ordinal_date",
    "strict_ordinal_date_time",
    "strict_ordinal_date_time_no_millis",
    "strict_time",
    "strict_time_no_millis",
    "strict_t_time",
    "strict_t_time_no_millis",
    "strict_week_date",
    "strict_week_date_time",
    "strict_week_date_time_no_millis",
    "strict_weekyear",
    "strict_weekyear_week",
    "strict_weekyear_week_day",
    "strict_year",
    "strict_year_month",
    "strict_year_month_day",
    "rfc3339_lenient",
];

/// Names that have no camelCase spelling in OpenSearch.
const NO_CAMEL_CASE: &[&str] = &[
    "iso8601",
    "date",
    "hour",
    "time",
    "week_year",
    "weekyear",
    "year",
    "epoch_second",
    "epoch_millis",
    "rfc3339_lenient",
];

fn camel_case(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The snake_case name a (snake or camelCase) format name stands for.
pub(crate) fn canonical_name(name: &str) -> Option<&'static str> {
    if let Some(n) = NAMES.iter().find(|n| **n == name) {
        return Some(n);
    }
    if !name.bytes().any(|b| b.is_ascii_uppercase()) {
        return None;
    }
    NAMES
        .iter()
        .find(|n| !NO_CAMEL_CASE.contains(n) && camel_case(n) == name)
        .copied()
}

/// Looks up a named format (snake_case or camelCase).
pub(crate) fn lookup(name: &str) -> Option<Named> {
    define(canonical_name(name)?)
}

fn b() -> Builder {
    Builder::new()
}

// ----- shared pieces -------------------------------------------------------

/// `uuuu[-MM[-dd]]` with a 4-digit year (OpenSearch's STRICT_YEAR_MONTH_DAY).
fn strict_ymd() -> Vec<Item> {
    b().value(Year, 4, 4, ExceedsPad)
        .optional(|o| {
            o.lit("-")
                .fixed(Month, 2)
                .optional(|o| o.lit("-").fixed(DayOfMonth, 2))
        })
        .build()
}

/// `uuuu-MM-dd` with a 4 to 10 digit year (ISO_LOCAL_DATE).
fn iso_local_date() -> Vec<Item> {
    b().value(Year, 4, 10, ExceedsPad)
        .lit("-")
        .fixed(Month, 2)
        .lit("-")
        .fixed(DayOfMonth, 2)
        .build()
}

/// `uuuu-MM-dd` with a 4 to 19 digit year (what `ofPattern("uuuu-MM-dd")` gives).
fn pattern_ymd() -> Builder {
    b().value(Year, 4, 19, ExceedsPad)
        .lit("-")
        .fixed(Month, 2)
        .lit("-")
        .fixed(DayOfMonth, 2)
}

/// Lenient `y[-M[-d]]` (OpenSearch's DATE_FORMATTER).
fn lenient_date() -> Vec<Item> {
    b().value(Year, 1, 5, Normal)
        .optional(|o| {
            o.lit("-")
                .value(Month, 1, 2, NotNegative)
                .optional(|o| o.lit("-").value(DayOfMonth, 1, 2, NotNegative))
        })
        .build()
}

/// `HH:mm:ss`, two digits each.
fn strict_hms() -> Vec<Item> {
    b().fixed(HourOfDay, 2)
        .lit(":")
        .fixed(Minute, 2)
        .lit(":")
        .fixed(Second, 2)
        .build()
}

/// `H:m:s`, one or two digits each.
fn lenient_hms() -> Vec<Item> {
    b().value(HourOfDay, 1, 2, NotNegative)
        .lit(":")
        .value(Minute, 1, 2, NotNegative)
        .lit(":")
        .value(Second, 1, 2, NotNegative)
        .build()
}

/// `H:m`, one or two digits each.
fn lenient_hm() -> Vec<Item> {
    b().value(HourOfDay, 1, 2, NotNegative)
        .lit(":")
        .value(Minute, 1, 2, NotNegative)
        .build()
}

/// `HHmmss` without separators.
fn basic_hms() -> Vec<Item> {
    b().fixed(HourOfDay, 2)
        .fixed(Minute, 2)
        .fixed(Second, 2)
        .build()
}

/// `uuuuMMdd` with exactly four year digits.
fn basic_ymd() -> Vec<Item> {
    b().value(Year, 4, 4, Normal)
        .fixed(Month, 2)
        .fixed(DayOfMonth, 2)
        .build()
}

/// Printed offset: `Z` or `+01:00`.
fn offset_print(bb: Builder) -> Builder {
    bb.offset("+HH:MM", "Z")
}

/// The two parser variants OpenSearch uses for most zoned formats: a zone id /
/// `+01:00` offset, or a `+0100` offset.
fn zoned(base: Vec<Item>) -> Vec<Vec<Item>> {
    vec![
        b().append(base.clone()).item(Item::ZoneId).build(),
        b().append(base).offset("+HHmm", "Z").build(),
    ]
}

/// Like [`zoned`], but wraps a printer base with `+01:00` and returns a full `Named`.
fn zoned_named(printer_base: Vec<Item>, parser_base: Vec<Item>) -> Named {
    Named::new(
        offset_print(b().append(printer_base)).build(),
        zoned(parser_base),
    )
}

/// OpenSearch's STRICT_DATE_OPTIONAL_TIME_PRINTER (`max_fraction` 3, or 9 for nanos).
fn date_optional_time_printer(max_fraction: u8) -> Vec<Item> {
    b().append(strict_ymd())
        .lit("T")
        .optional(|h| {
            h.fixed(HourOfDay, 2).optional(|m| {
                m.lit(":")
                    .fixed(Minute, 2)
                    .optional(|s| {
                        s.lit(":")
                            .fixed(Second, 2)
                            .optional(|f| f.fraction(3, max_fraction, true))
                    })
                    .optional(offset_print)
            })
        })
        .build()
}

/// Optional `.fraction` (1–9 digits) followed by optional `,fraction`.
fn fractions(bb: Builder) -> Builder {
    bb.optional(|f| f.fraction(1, 9, true))
        .optional(|f| f.lit(",").fraction(1, 9, false))
}

/// Optional zone id / offset, then optional `+HHmm` offset.
fn optional_zones(bb: Builder) -> Builder {
    bb.optional(|z| z.item(Item::ZoneId))
        .optional(|z| z.offset("+HHmm", "Z"))
}

fn strict_date_optional_time_parser() -> Vec<Item> {
    b().append(strict_ymd())
        .optional(|t| {
            t.lit("T").optional(|h| {
                optional_zones(h.fixed(HourOfDay, 2).optional(|m| {
                    m.lit(":")
                        .fixed(Minute, 2)
                        .optional(|s| fractions(s.lit(":").fixed(Second, 2)))
                }))
            })
        })
        .build()
}

fn iso8601_parser() -> Vec<Item> {
    b().append(strict_ymd())
        .optional(|t| {
            optional_zones(t.lit("T").optional(|h| {
                h.fixed(HourOfDay, 2).optional(|m| {
                    m.lit(":")
                        .fixed(Minute, 2)
                        .optional(|s| fractions(s.lit(":").fixed(Second, 2)))
                })
            }))
        })
        .build()
}

fn date_optional_time_parser() -> Vec<Item> {
    b().append(lenient_date())
        .optional(|t| {
            t.lit("T").optional(|h| {
                h.value(HourOfDay, 1, 2, NotNegative).optional(|m| {
                    optional_zones(fractions(
                        m.lit(":")
                            .value(Minute, 1, 2, NotNegative)
                            .optional(|s| s.lit(":").value(Second, 1, 2, NotNegative)),
                    ))
                })
            })
        })
        .build()
}

fn rfc3339_lenient_parser() -> Vec<Item> {
    b().append(lenient_date())
        .optional(|t| {
            t.lit("T").append(lenient_hm()).optional(|s| {
                fractions(s.lit(":").value(Second, 1, 2, NotNegative))
                    .optional(|z| z.offset("+HH:MM:ss", "Z"))
            })
        })
        .build()
}

/// ISO week date `xxxx-'W'ww-e` (4 to 10 digit week-based year).
fn iso_week_date() -> Vec<Item> {
    b().value(WeekBasedYear, 4, 10, ExceedsPad)
        .lit("-W")
        .fixed(WeekOfWeekBasedYear, 2)
        .lit("-")
        .fixed(DayOfWeek, 1)
        .build()
}

/// Lenient week date: 1–2 digit week.
fn week_date_lenient() -> Vec<Item> {
    b().value(WeekBasedYear, 4, 10, ExceedsPad)
        .lit("-W")
        .value(WeekOfWeekBasedYear, 1, 2, NotNegative)
        .lit("-")
        .fixed(DayOfWeek, 1)
        .build()
}

/// `xxxx'W'wwe` printer (exactly 4 digit week-based year, 2 digit week).
fn basic_week_date_printer() -> Vec<Item> {
    b().fixed(WeekBasedYear, 4)
        .lit("W")
        .fixed(WeekOfWeekBasedYear, 2)
        .value(DayOfWeek, 1, 19, Normal)
        .build()
}

fn basic_week_date_parser(strict: bool) -> Vec<Item> {
    let bb = if strict {
        b().fixed(WeekBasedYear, 4)
    } else {
        b().value(WeekBasedYear, 1, 19, Normal)
    };
    bb.lit("W")
        .value(WeekOfWeekBasedYear, 1, 2, NotNegative)
        .value(DayOfWeek, 1, 19, Normal)
        .build()
}

/// `'T'HHmmss[.SSS]X` printer tail of the basic week formats.
fn basic_week_time_printer(millis: bool) -> Vec<Item> {
    let bb = b().lit("T").append(basic_hms());
    let bb = if millis {
        bb.lit(".").fraction(3, 3, false)
    } else {
        bb
    };
    bb.offset("+HHmm", "Z").build()
}

fn ordinal_strict_base() -> Builder {
    b().value(Year, 4, 10, ExceedsPad)
        .lit("-")
        .fixed(DayOfYear, 3)
}

fn ordinal_lenient_base() -> Builder {
    b().value(Year, 4, 10, ExceedsPad)
        .lit("-")
        .value(DayOfYear, 1, 3, NotNegative)
}

fn seq(parts: Vec<Vec<Item>>) -> Vec<Item> {
    parts.into_iter().flatten().collect()
}

fn lit(text: &str) -> Vec<Item> {
    vec![Item::Literal(text.to_string())]
}

fn fraction(min: u8, max: u8) -> Vec<Item> {
    vec![Item::Fraction {
        min,
        max,
        point: true,
    }]
}

/// Builds the definition of a canonical (snake_case) name.
fn define(name: &str) -> Option<Named> {
    let millis3 = || fraction(3, 3);
    let frac9 = || fraction(1, 9);
    Some(match name {
        "iso8601" => Named::new(date_optional_time_printer(3), vec![iso8601_parser()]),
        "strict_date_optional_time" => Named::new(
            date_optional_time_printer(3),
            vec![strict_date_optional_time_parser()],
        ),
        "strict_date_optional_time_nanos" => Named::new(
            date_optional_time_printer(9),
            vec![b()
                .append(strict_ymd())
                .optional(|t| optional_zones(fractions(t.lit("T").append(strict_hms()))))
                .build()],
        ),
        "date_optional_time" => Named::new(
            date_optional_time_printer(3),
            vec![date_optional_time_parser()],
        ),
        "rfc3339_lenient" => Named::new(
            date_optional_time_printer(3),
            vec![rfc3339_lenient_parser()],
        ),
        "epoch_millis" => Named::same(vec![Item::EpochMillis]),
        "epoch_second" => Named::same(vec![Item::EpochSecond]),

        // --- basic (no separators) ---
        "basic_date" => Named::new(
            basic_ymd(),
            vec![b()
                .value(Year, 1, 4, Normal)
                .value(Month, 1, 2, NotNegative)
                .value(DayOfMonth, 1, 2, NotNegative)
                .build()],
        ),
        "basic_time_no_millis" => zoned_named(basic_hms(), basic_hms()),
        "basic_time" => zoned_named(
            seq(vec![basic_hms(), millis3()]),
            seq(vec![basic_hms(), frac9()]),
        ),
        "basic_t_time" => zoned_named(
            seq(vec![lit("T"), basic_hms(), millis3()]),
            seq(vec![lit("T"), basic_hms(), frac9()]),
        ),
        "basic_t_time_no_millis" => zoned_named(
            seq(vec![lit("T"), basic_hms()]),
            seq(vec![lit("T"), basic_hms()]),
        ),
        "basic_date_time" => zoned_named(
            seq(vec![basic_ymd(), lit("T"), basic_hms(), millis3()]),
            seq(vec![basic_ymd(), lit("T"), basic_hms(), frac9()]),
        ),
        "basic_date_time_no_millis" => zoned_named(
            seq(vec![basic_ymd(), lit("T"), basic_hms()]),
            seq(vec![basic_ymd(), lit("T"), basic_hms()]),
        ),
        "basic_ordinal_date" => Named::same(
            b().value(Year, 4, 19, ExceedsPad)
                .fixed(DayOfYear, 3)
                .build(),
        ),
        "basic_ordinal_date_time" => {
            let base = || {
                b().value(YearOfEra, 4, 19, ExceedsPad)
                    .fixed(DayOfYear, 3)
                    .build()
            };
            zoned_named(
                seq(vec![base(), lit("T"), basic_hms(), millis3()]),
                seq(vec![base(), lit("T"), basic_hms(), frac9()]),
            )
        }
        "basic_ordinal_date_time_no_millis" => {
            let base = || {
                b().value(Year, 4, 19, ExceedsPad)
                    .fixed(DayOfYear, 3)
                    .lit("T")
                    .append(basic_hms())
                    .build()
            };
            zoned_named(base(), base())
        }
        "basic_week_date" => Named::new(
            basic_week_date_printer(),
            vec![basic_week_date_parser(false)],
        ),
        "strict_basic_week_date" => Named::new(
            basic_week_date_printer(),
            vec![basic_week_date_parser(true)],
        ),
        "basic_week_date_time" | "strict_basic_week_date_time" => Named::new(
            seq(vec![
                basic_week_date_printer(),
                basic_week_time_printer(true),
            ]),
            zoned(seq(vec![
                basic_week_date_parser(name.starts_with("strict")),
                lit("T"),
                basic_hms(),
                frac9(),
            ])),
        ),
        "basic_week_date_time_no_millis" => Named::new(
            seq(vec![
                basic_week_date_printer(),
                basic_week_time_printer(false),
            ]),
            zoned(seq(vec![
                basic_week_date_parser(false),
                lit("T"),
                basic_hms(),
            ])),
        ),
        "strict_basic_week_date_time_no_millis" => zoned_named(
            seq(vec![basic_week_date_printer(), lit("T"), basic_hms()]),
            seq(vec![basic_week_date_printer(), lit("T"), basic_hms()]),
        ),

        // --- strict, with separators ---
        "strict_date" => Named::same(iso_local_date()),
        "strict_date_hour" => Named::same(pattern_ymd().lit("T").fixed(HourOfDay, 2).build()),
        "strict_date_hour_minute" => Named::same(
            pattern_ymd()
                .lit("T")
                .fixed(HourOfDay, 2)
                .lit(":")
                .fixed(Minute, 2)
                .build(),
        ),
        "strict_date_hour_minute_second" => {
            Named::same(pattern_ymd().lit("T").append(strict_hms()).build())
        }
        "strict_year_month_day" => Named::same(strict_ymd()),
        "strict_year_month" => Named::same(
            b().value(Year, 4, 10, ExceedsPad)
                .lit("-")
                .fixed(Month, 2)
                .build(),
        ),
        "strict_year" => Named::same(b().value(Year, 4, 10, ExceedsPad).build()),
        "strict_hour_minute_second" => Named::same(strict_hms()),
        "strict_hour" => Named::same(b().fixed(HourOfDay, 2).build()),
        "strict_hour_minute" => {
            Named::same(b().fixed(HourOfDay, 2).lit(":").fixed(Minute, 2).build())
        }
        "strict_date_time" => Named::new(
            offset_print(b().append(seq(vec![
                strict_ymd(),
                lit("T"),
                strict_hms(),
                fraction(3, 9),
            ])))
            .build(),
            zoned(
                b().append(strict_ymd())
                    .lit("T")
                    .append(strict_hms())
                    .optional(|f| f.fraction(1, 9, true))
                    .build(),
            ),
        ),
        "strict_date_time_no_millis" => {
            let base = || seq(vec![strict_ymd(), lit("T"), strict_hms()]);
            zoned_named(base(), base())
        }
        "strict_ordinal_date_time_no_millis" => {
            let base = || ordinal_strict_base().lit("T").append(strict_hms()).build();
            zoned_named(base(), base())
        }
        "strict_hour_minute_second_millis" | "strict_hour_minute_second_fraction" => Named::new(
            seq(vec![strict_hms(), millis3()]),
            vec![seq(vec![strict_hms(), frac9()])],
        ),
        "strict_date_hour_minute_second_fraction" | "strict_date_hour_minute_second_millis" => {
            Named::new(
                seq(vec![strict_ymd(), lit("T"), strict_hms(), millis3()]),
                vec![seq(vec![strict_ymd(), lit("T"), strict_hms(), frac9()])],
            )
        }
        "strict_ordinal_date_time" => {
            let base = |max: u8, min: u8| {
                ordinal_strict_base()
                    .lit("T")
                    .fixed(HourOfDay, 2)
                    .lit(":")
                    .fixed(Minute, 2)
                    .optional(|s| s.lit(":").fixed(Second, 2).fraction(min, max, true))
                    .build()
            };
            zoned_named(base(9, 3), base(9, 1))
        }
        "strict_time" => zoned_named(
            seq(vec![strict_hms(), millis3()]),
            seq(vec![strict_hms(), frac9()]),
        ),
        "strict_t_time" => zoned_named(
            seq(vec![lit("T"), strict_hms(), millis3()]),
            seq(vec![lit("T"), strict_hms(), frac9()]),
        ),
        "strict_time_no_millis" => zoned_named(strict_hms(), strict_hms()),
        "strict_t_time_no_millis" => zoned_named(
            seq(vec![lit("T"), strict_hms()]),
            seq(vec![lit("T"), strict_hms()]),
        ),
        "strict_week_date" => Named::same(iso_week_date()),
        "strict_week_date_time_no_millis" => {
            let base = || seq(vec![iso_week_date(), lit("T"), strict_hms()]);
            zoned_named(base(), base())
        }
        "strict_week_date_time" => zoned_named(
            seq(vec![iso_week_date(), lit("T"), strict_hms(), millis3()]),
            seq(vec![iso_week_date(), lit("T"), strict_hms(), frac9()]),
        ),
        "strict_weekyear" => Named::same(b().value(WeekBasedYear, 4, 10, ExceedsPad).build()),
        "strict_weekyear_week" => Named::same(
            b().value(WeekBasedYear, 4, 10, ExceedsPad)
                .lit("-W")
                .fixed(WeekOfWeekBasedYear, 2)
                .build(),
        ),
        "strict_weekyear_week_day" => Named::same(
            b().value(WeekBasedYear, 4, 10, ExceedsPad)
                .lit("-W")
                .fixed(WeekOfWeekBasedYear, 2)
                .lit("-")
                .value(DayOfWeek, 1, 19, Normal)
                .build(),
        ),
        "strict_ordinal_date" => Named::same(ordinal_strict_base().build()),

        // --- lenient, with separators ---
        "date" => Named::new(iso_local_date(), vec![lenient_date()]),
        "date_hour" => Named::new(
            pattern_ymd().lit("T").fixed(HourOfDay, 2).build(),
            vec![b()
                .append(lenient_date())
                .lit("T")
                .value(HourOfDay, 1, 2, NotNegative)
                .build()],
        ),
        "date_hour_minute" => Named::new(
            pattern_ymd()
                .lit("T")
                .fixed(HourOfDay, 2)
                .lit(":")
                .fixed(Minute, 2)
                .build(),
            vec![seq(vec![lenient_date(), lit("T"), lenient_hm()])],
        ),
        "date_hour_minute_second" => Named::new(
            pattern_ymd().lit("T").append(strict_hms()).build(),
            vec![seq(vec![lenient_date(), lit("T"), lenient_hms()])],
        ),
        "date_hour_minute_second_millis" => Named::new(
            seq(vec![strict_ymd(), lit("T"), strict_hms(), millis3()]),
            vec![seq(vec![
                lenient_date(),
                lit("T"),
                lenient_hms(),
                fraction(1, 3),
            ])],
        ),
        "date_hour_minute_second_fraction" => Named::new(
            seq(vec![strict_ymd(), lit("T"), strict_hms(), millis3()]),
            vec![seq(vec![lenient_date(), lit("T"), lenient_hms(), frac9()])],
        ),
        "date_time" => {
            let base = || {
                b().append(lenient_date())
                    .lit("T")
                    .append(lenient_hm())
                    .optional(|s| {
                        s.lit(":")
                            .value(Second, 1, 2, NotNegative)
                            .fraction(1, 9, true)
                    })
                    .build()
            };
            Named::new(
                date_optional_time_printer(3),
                vec![
                    b().append(base()).offset("+HH:MM", "Z").build(),
                    b().append(base()).offset("+HHmm", "Z").build(),
                ],
            )
        }
        "date_time_no_millis" => {
            let base = || {
                b().append(lenient_date())
                    .lit("T")
                    .append(lenient_hm())
                    .optional(|s| s.lit(":").value(Second, 1, 2, NotNegative))
                    .build()
            };
            Named::new(
                b().append(iso_local_date())
                    .lit("T")
                    .append(strict_hms())
                    .item(Item::ZoneId)
                    .build(),
                vec![
                    b().append(base()).offset("+HH:MM", "Z").build(),
                    b().append(base()).offset("+HHmm", "Z").build(),
                    b().append(base())
                        .optional(|z| z.item(Item::ZoneId))
                        .build(),
                    b().append(base())
                        .optional(|z| z.offset("+HHmm", "Z"))
                        .build(),
                ],
            )
        }
        "hour" => Named::new(
            b().fixed(HourOfDay, 2).build(),
            vec![b().value(HourOfDay, 1, 2, NotNegative).build()],
        ),
        "hour_minute" => Named::new(
            b().fixed(HourOfDay, 2).lit(":").fixed(Minute, 2).build(),
            vec![lenient_hm()],
        ),
        "hour_minute_second" => Named::new(strict_hms(), vec![lenient_hms()]),
        "hour_minute_second_millis" => Named::new(
            seq(vec![strict_hms(), millis3()]),
            vec![seq(vec![lenient_hms(), fraction(1, 3)])],
        ),
        "hour_minute_second_fraction" => Named::new(
            seq(vec![strict_hms(), millis3()]),
            vec![seq(vec![lenient_hms(), frac9()])],
        ),
        "ordinal_date" => Named::new(
            ordinal_strict_base().build(),
            vec![ordinal_lenient_base().build()],
        ),
        "ordinal_date_time" => zoned_named(
            ordinal_strict_base()
                .lit("T")
                .fixed(HourOfDay, 2)
                .lit(":")
                .fixed(Minute, 2)
                .optional(|s| s.lit(":").fixed(Second, 2).fraction(3, 9, true))
                .build(),
            ordinal_lenient_base()
                .lit("T")
                .append(lenient_hm())
                .optional(|s| {
                    s.lit(":")
                        .value(Second, 1, 2, NotNegative)
                        .fraction(1, 9, true)
                })
                .build(),
        ),
        "ordinal_date_time_no_millis" => zoned_named(
            ordinal_strict_base().lit("T").append(strict_hms()).build(),
            ordinal_lenient_base()
                .lit("T")
                .append(lenient_hms())
                .build(),
        ),
        "time" => zoned_named(
            seq(vec![strict_hms(), millis3()]),
            seq(vec![lenient_hms(), frac9()]),
        ),
        "time_no_millis" => zoned_named(strict_hms(), lenient_hms()),
        "t_time" => zoned_named(
            seq(vec![lit("T"), strict_hms(), millis3()]),
            seq(vec![lit("T"), lenient_hms(), frac9()]),
        ),
        "t_time_no_millis" => zoned_named(
            seq(vec![lit("T"), strict_hms()]),
            seq(vec![lit("T"), lenient_hms()]),
        ),
        "week_date" => Named::new(iso_week_date(), vec![week_date_lenient()]),
        "week_date_time" => zoned_named(
            seq(vec![iso_week_date(), lit("T"), strict_hms(), millis3()]),
            seq(vec![week_date_lenient(), lit("T"), lenient_hms(), frac9()]),
        ),
        "week_date_time_no_millis" => zoned_named(
            seq(vec![iso_week_date(), lit("T"), strict_hms()]),
            seq(vec![week_date_lenient(), lit("T"), lenient_hms()]),
        ),
        "week_year" | "weekyear" => Named::same(b().value(WeekBasedYear, 1, 19, Normal).build()),
        "weekyear_week" => Named::new(
            b().value(WeekBasedYear, 4, 10, ExceedsPad)
                .lit("-W")
                .fixed(WeekOfWeekBasedYear, 2)
                .build(),
            vec![b()
                .value(WeekBasedYear, 1, 19, Normal)
                .lit("-W")
                .value(WeekOfWeekBasedYear, 1, 19, Normal)
                .build()],
        ),
        "weekyear_week_day" => Named::new(
            b().value(WeekBasedYear, 4, 10, ExceedsPad)
                .lit("-W")
                .fixed(WeekOfWeekBasedYear, 2)
                .lit("-")
                .value(DayOfWeek, 1, 19, Normal)
                .build(),
            vec![b()
                .value(WeekBasedYear, 1, 19, Normal)
                .lit("-W")
                .value(WeekOfWeekBasedYear, 1, 19, Normal)
                .lit("-")
                .value(DayOfWeek, 1, 19, Normal)
                .build()],
        ),
        "year" => Named::same(b().value(Year, 1, 19, Normal).build()),
        "year_month" => Named::new(
            b().value(Year, 4, 10, ExceedsPad)
                .lit("-")
                .fixed(Month, 2)
                .build(),
            vec![b()
                .value(Year, 1, 19, Normal)
                .lit("-")
                .value(Month, 1, 19, Normal)
                .build()],
        ),
        "year_month_day" => Named::new(
            strict_ymd(),
            vec![b()
                .value(Year, 1, 19, Normal)
                .lit("-")
                .value(Month, 1, 19, Normal)
                .lit("-")
                .value(DayOfMonth, 1, 19, Normal)
                .build()],
        ),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_defined() {
        for name in NAMES {
            let named = lookup(name).unwrap_or_else(|| panic!("{name} undefined"));
            assert!(!named.printer.is_empty(), "{name}");
            assert!(!named.parsers.is_empty(), "{name}");
        }
    }

    #[test]
    fn camel_case_aliases() {
        assert_eq!(
            canonical_name("strictDateOptionalTime"),
            Some("strict_date_optional_time")
        );
        assert_eq!(canonical_name("basicTTime"), Some("basic_t_time"));
        assert_eq!(
            canonical_name("dateOptionalTime"),
            Some("date_optional_time")
        );
        assert_eq!(canonical_name("epochMillis"), None);
        assert_eq!(canonical_name("weekYear"), None);
        assert_eq!(canonical_name("Strict_date"), None);
        assert_eq!(canonical_name("yyyy"), None);
    }
}
