//! Built-in rules for common region zones, used only when the system tz database is missing.
//!
//! Minimal container images often ship without `/usr/share/zoneinfo`. Rather
//! than rejecting every `time_zone: "Europe/Paris"` there, the zones people use
//! most resolve to their *current* POSIX rule. That is exact for recent dates
//! but ignores history (e.g. US rules before 2007), so the system database is
//! always preferred when present. `Etc/GMT±N` zones are computed, not listed.

/// The current POSIX TZ rule of a well-known region id, if listed.
pub(crate) fn posix_rule(id: &str) -> Option<&'static str> {
    const CET: &str = "CET-1CEST,M3.5.0,M10.5.0/3";
    const EET: &str = "EET-2EEST,M3.5.0/3,M10.5.0/4";
    const US_EASTERN: &str = "EST5EDT,M3.2.0,M11.1.0";
    const US_CENTRAL: &str = "CST6CDT,M3.2.0,M11.1.0";
    const US_MOUNTAIN: &str = "MST7MDT,M3.2.0,M11.1.0";
    const US_PACIFIC: &str = "PST8PDT,M3.2.0,M11.1.0";
    const AU_EASTERN: &str = "AEST-10AEDT,M10.1.0,M4.1.0/3";
    Some(match id {
        "Europe/London" | "Europe/Belfast" | "GB" => "GMT0BST,M3.5.0/1,M10.5.0",
        "Europe/Dublin" | "Eire" => "IST-1GMT0,M10.5.0,M3.5.0/1",
        "Europe/Lisbon" | "Portugal" | "Atlantic/Canary" | "Atlantic/Madeira" => {
            "WET0WEST,M3.5.0/1,M10.5.0"
        }
        "Europe/Paris"
        | "Europe/Berlin"
        | "Europe/Madrid"
        | "Europe/Rome"
        | "Europe/Amsterdam"
        | "Europe/Brussels"
        | "Europe/Vienna"
        | "Europe/Zurich"
        | "Europe/Stockholm"
        | "Europe/Oslo"
        | "Europe/Copenhagen"
        | "Europe/Warsaw"
        | "Europe/Prague"
        | "Europe/Budapest"
        | "Europe/Luxembourg"
        | "Europe/Monaco"
        | "Europe/Belgrade"
        | "Europe/Zagreb"
        | "Europe/Ljubljana"
        | "Europe/Bratislava"
        | "Europe/Malta"
        | "Europe/Andorra"
        | "Europe/Tirane"
        | "Europe/Sarajevo"
        | "Europe/Skopje"
        | "Europe/Podgorica"
        | "Europe/Gibraltar"
        | "Europe/Vaduz"
        | "Europe/San_Marino"
        | "Europe/Vatican"
        | "Europe/Busingen"
        | "Arctic/Longyearbyen"
        | "Africa/Ceuta"
        | "Poland"
        | "CET"
        | "MET" => CET,
        "Europe/Athens" | "Europe/Helsinki" | "Europe/Kiev" | "Europe/Kyiv"
        | "Europe/Bucharest" | "Europe/Sofia" | "Europe/Riga" | "Europe/Tallinn"
        | "Europe/Vilnius" | "Europe/Mariehamn" | "Asia/Nicosia" | "Europe/Nicosia" | "EET" => EET,
        "Europe/Moscow" | "W-SU" | "Europe/Simferopol" => "MSK-3",
        "Europe/Istanbul" | "Asia/Istanbul" | "Turkey" => "<+03>-3",
        "Europe/Minsk" => "<+03>-3",
        "America/New_York"
        | "America/Toronto"
        | "America/Detroit"
        | "America/Montreal"
        | "America/Nassau"
        | "America/Indiana/Indianapolis"
        | "America/Indianapolis"
        | "America/Kentucky/Louisville"
        | "America/Louisville"
        | "US/Eastern"
        | "Canada/Eastern"
        | "EST5EDT" => US_EASTERN,
        "America/Chicago"
        | "America/Winnipeg"
        | "America/Indiana/Knox"
        | "America/Menominee"
        | "America/North_Dakota/Center"
        | "US/Central"
        | "Canada/Central"
        | "CST6CDT" => US_CENTRAL,
        "America/Denver" | "America/Edmonton" | "America/Boise" | "US/Mountain"
        | "Canada/Mountain" | "MST7MDT" | "Navajo" => US_MOUNTAIN,
        "America/Phoenix" | "US/Arizona" => "MST7",
        "America/Los_Angeles"
        | "America/Vancouver"
        | "America/Tijuana"
        | "US/Pacific"
        | "Canada/Pacific"
        | "PST8PDT" => US_PACIFIC,
        "America/Anchorage" | "US/Alaska" => "AKST9AKDT,M3.2.0,M11.1.0",
        "America/Halifax" | "Canada/Atlantic" | "Atlantic/Bermuda" => "AST4ADT,M3.2.0,M11.1.0",
        "America/St_Johns" | "Canada/Newfoundland" => "NST3:30NDT,M3.2.0,M11.1.0",
        "America/Mexico_City" | "Mexico/General" => "CST6",
        "America/Sao_Paulo"
        | "Brazil/East"
        | "America/Argentina/Buenos_Aires"
        | "America/Buenos_Aires"
        | "America/Montevideo" => "<-03>3",
        "America/Bogota" | "America/Lima" | "America/Guayaquil" => "<-05>5",
        "America/Caracas" | "America/La_Paz" | "America/Puerto_Rico" => "<-04>4",
        "America/Santiago" | "Chile/Continental" => "<-04>4<-03>,M9.1.6/24,M4.1.6/24",
        "Pacific/Honolulu" | "US/Hawaii" | "HST" => "HST10",
        "Asia/Tokyo" | "Japan" => "JST-9",
        "Asia/Seoul" | "ROK" => "KST-9",
        "Asia/Shanghai" | "Asia/Chongqing" | "PRC" | "Asia/Taipei" | "ROC" => "CST-8",
        "Asia/Hong_Kong" | "Hongkong" => "HKT-8",
        "Asia/Singapore" | "Singapore" | "Asia/Kuala_Lumpur" => "<+08>-8",
        "Asia/Manila" => "PST-8",
        "Australia/Perth" | "Australia/West" => "AWST-8",
        "Asia/Kolkata" | "Asia/Calcutta" => "IST-5:30",
        "Asia/Colombo" => "<+0530>-5:30",
        "Asia/Kathmandu" | "Asia/Katmandu" => "<+0545>-5:45",
        "Asia/Dubai" | "Asia/Muscat" => "<+04>-4",
        "Asia/Karachi" => "PKT-5",
        "Asia/Tashkent" | "Asia/Yekaterinburg" => "<+05>-5",
        "Asia/Dhaka" | "Asia/Almaty" => "<+06>-6",
        "Asia/Bangkok" | "Asia/Ho_Chi_Minh" | "Asia/Saigon" | "Asia/Novosibirsk" => "<+07>-7",
        "Asia/Jakarta" => "WIB-7",
        "Asia/Jerusalem" | "Asia/Tel_Aviv" | "Israel" => "IST-2IDT,M3.4.4/26,M10.5.0",
        "Asia/Tehran" | "Iran" => "<+0330>-3:30",
        "Asia/Riyadh" | "Asia/Baghdad" | "Asia/Kuwait" | "Asia/Qatar" => "<+03>-3",
        "Australia/Sydney"
        | "Australia/Melbourne"
        | "Australia/Canberra"
        | "Australia/ACT"
        | "Australia/NSW"
        | "Australia/Victoria"
        | "Australia/Hobart"
        | "Australia/Tasmania" => AU_EASTERN,
        "Australia/Brisbane" | "Australia/Queensland" => "AEST-10",
        "Australia/Adelaide" | "Australia/South" => "ACST-9:30ACDT,M10.1.0,M4.1.0/3",
        "Australia/Darwin" | "Australia/North" => "ACST-9:30",
        "Pacific/Auckland" | "NZ" | "Antarctica/McMurdo" => "NZST-12NZDT,M9.5.0,M4.1.0/3",
        "Africa/Cairo" | "Egypt" => "EET-2EEST,M4.5.5/0,M10.5.4/24",
        "Africa/Johannesburg" => "SAST-2",
        "Africa/Lagos" | "Africa/Algiers" | "Africa/Tunis" => "WAT-1",
        "Africa/Nairobi" | "Africa/Addis_Ababa" => "EAT-3",
        "Africa/Abidjan" | "Africa/Accra" | "Atlantic/Reykjavik" | "Iceland" => "GMT0",
        "EST" => "EST5",
        "MST" => "MST7",
        _ => return None,
    })
}

/// Offset in seconds of `Etc/GMT+N` / `Etc/GMT-N` (POSIX sign: `Etc/GMT+3` is UTC-3).
pub(crate) fn etc_gmt_offset(id: &str) -> Option<i64> {
    let rest = id.strip_prefix("Etc/GMT")?;
    if rest.is_empty() || rest == "0" || rest == "+0" || rest == "-0" {
        return Some(0);
    }
    let (sign, digits) = match rest.as_bytes()[0] {
        b'+' => (-1, &rest[1..]),
        b'-' => (1, &rest[1..]),
        _ => return None,
    };
    if digits.is_empty() || digits.len() > 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let hours: i64 = digits.parse().ok()?;
    let max = if sign < 0 { 12 } else { 14 };
    (hours <= max).then_some(sign * hours * 3600)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tzif::PosixTz;

    #[test]
    fn every_listed_rule_parses() {
        for id in [
            "Europe/London",
            "Europe/Dublin",
            "Europe/Paris",
            "Europe/Athens",
            "America/New_York",
            "America/St_Johns",
            "America/Santiago",
            "Asia/Kolkata",
            "Asia/Kathmandu",
            "Asia/Jerusalem",
            "Australia/Sydney",
            "Australia/Adelaide",
            "Pacific/Auckland",
            "Africa/Cairo",
            "America/Sao_Paulo",
        ] {
            let rule = posix_rule(id).unwrap();
            assert!(PosixTz::parse(rule).is_ok(), "{id}: {rule}");
        }
        assert_eq!(posix_rule("Mars/Olympus_Mons"), None);
    }

    #[test]
    fn fallback_rules_follow_current_dst() {
        use crate::tzif::TzRules;
        let utc = |m: u32| crate::civil::days_from_civil(2024, m, 15) * 86_400;
        for (id, winter, summer) in [
            ("Europe/Paris", 3600, 7200),
            ("America/New_York", -5 * 3600, -4 * 3600),
            ("Australia/Sydney", 10 * 3600, 11 * 3600),
            ("Asia/Kolkata", 19_800, 19_800),
        ] {
            let rules = TzRules::from_posix(posix_rule(id).unwrap()).unwrap();
            // "winter" and "summer" of the northern hemisphere.
            let (jan, jul) = (rules.offset_at(utc(1)), rules.offset_at(utc(7)));
            if id.starts_with("Australia") {
                assert_eq!((jan, jul), (summer, winter), "{id}");
            } else {
                assert_eq!((jan, jul), (winter, summer), "{id}");
            }
        }
    }

    #[test]
    fn etc_gmt() {
        assert_eq!(etc_gmt_offset("Etc/GMT+3"), Some(-3 * 3600));
        assert_eq!(etc_gmt_offset("Etc/GMT-14"), Some(14 * 3600));
        assert_eq!(etc_gmt_offset("Etc/GMT"), Some(0));
        assert_eq!(etc_gmt_offset("Etc/GMT-15"), None);
        assert_eq!(etc_gmt_offset("Etc/GMT+"), None);
        assert_eq!(etc_gmt_offset("Etc/GMTx"), None);
    }
}
