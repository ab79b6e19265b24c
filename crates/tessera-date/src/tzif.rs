//! Time zone rules read from the system tz database (TZif files) and POSIX TZ strings.
//!
//! Region time zones (`Europe/Paris`) need the history of their UTC offsets.
//! There is no tz data compiled into this crate, so the rules come from the
//! operating system's `/usr/share/zoneinfo/<id>` files, in the TZif format of
//! RFC 8536: a table of transition instants plus, in version 2+ files, a POSIX
//! TZ string ("footer") describing the recurring rule after the last
//! transition. "Slim" TZif files stop their table at the last rule change and
//! rely on the footer entirely for later dates, so both halves are needed.
//!
//! Everything here works in whole seconds (tz data has no finer resolution);
//! [`crate::zone`] converts to milliseconds.

use crate::civil;

/// One local time type of a zone: its UTC offset and abbreviation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LocalType {
    /// Seconds east of UTC.
    pub offset: i64,
    /// Whether this is daylight saving time.
    pub is_dst: bool,
    /// Abbreviation such as "CET", "CEST" or "-03".
    pub abbr: String,
}

/// The complete offset history of one zone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TzRules {
    /// Transition instants, UTC seconds, strictly ascending.
    transitions: Vec<i64>,
    /// For each transition, the index into `types` in force from then on.
    trans_types: Vec<usize>,
    /// Local time types; `types[0]` applies before the first transition.
    types: Vec<LocalType>,
    /// Rule for instants after the last transition (or for all instants
    /// when there are no transitions).
    footer: Option<PosixTz>,
}

/// A POSIX TZ rule such as `CET-1CEST,M3.5.0,M10.5.0/3`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PosixTz {
    std: LocalType,
    dst: Option<DstRule>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct DstRule {
    local: LocalType,
    start: RuleDay,
    /// Seconds after local (standard time) midnight of the start day.
    start_time: i64,
    end: RuleDay,
    /// Seconds after local (daylight time) midnight of the end day.
    end_time: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RuleDay {
    /// `Jn`: day 1..=365, February 29 is never counted.
    JulianNoLeap(u32),
    /// `n`: day 0..=365, February 29 counted in leap years.
    ZeroBased(u32),
    /// `Mm.w.d`: day `d` (0 = Sunday) of week `w` (1..=5, 5 = last) of month `m`.
    MonthWeekDay { month: u32, week: u32, weekday: u32 },
}

const SECS_PER_DAY: i64 = 86_400;

impl TzRules {
    /// Parses a TZif file (versions 1 to 4).
    pub(crate) fn parse_tzif(data: &[u8]) -> Result<TzRules, String> {
        let mut r = Reader { data, pos: 0 };
        let header = Header::read(&mut r)?;
        if header.version == 0 {
            let block = read_block(&mut r, &header, 4)?;
            return TzRules::from_block(block, None);
        }
        // Skip the version 1 block and read the 64-bit one that follows.
        r.skip(header.block_len(4)?)?;
        let header2 = Header::read(&mut r)?;
        let block = read_block(&mut r, &header2, 8)?;
        let footer = read_footer(&mut r);
        TzRules::from_block(block, footer)
    }

    /// Rules consisting of a POSIX TZ string alone (used for built-in fallbacks).
    pub(crate) fn from_posix(tz: &str) -> Result<TzRules, String> {
        let footer = PosixTz::parse(tz)?;
        Ok(TzRules {
            transitions: Vec::new(),
            trans_types: Vec::new(),
            types: vec![footer.std.clone()],
            footer: Some(footer),
        })
    }

    fn from_block(block: Block, footer: Option<PosixTz>) -> Result<TzRules, String> {
        if block.types.is_empty() {
            return Err("TZif file has no local time types".to_string());
        }
        for (i, w) in block.transitions.windows(2).enumerate() {
            if w[0] >= w[1] {
                return Err(format!("TZif transitions not ascending at {i}"));
            }
        }
        if block.trans_types.iter().any(|&t| t >= block.types.len()) {
            return Err("TZif transition refers to an unknown type".to_string());
        }
        Ok(TzRules {
            transitions: block.transitions,
            trans_types: block.trans_types,
            types: block.types,
            footer,
        })
    }

    /// Offset (seconds east of UTC) and abbreviation in force at UTC second `t`.
    pub(crate) fn lookup(&self, t: i64) -> (i64, &str) {
        let n = self.transitions.partition_point(|&x| x <= t);
        if n == 0 {
            if self.transitions.is_empty() {
                if let Some(f) = &self.footer {
                    return f.lookup(t);
                }
            }
            let ty = &self.types[0];
            return (ty.offset, &ty.abbr);
        }
        let last = n - 1;
        if last + 1 == self.transitions.len() && t > self.transitions[last] {
            if let Some(f) = &self.footer {
                return f.lookup(t);
            }
        }
        let ty = &self.types[self.trans_types[last]];
        (ty.offset, &ty.abbr)
    }

    /// Offset in seconds east of UTC at UTC second `t`.
    pub(crate) fn offset_at(&self, t: i64) -> i64 {
        self.lookup(t).0
    }

    /// `Some(offset)` when the zone has had one single offset forever (e.g. `Etc/UTC`).
    pub(crate) fn fixed_offset(&self) -> Option<i64> {
        let first = self.types[0].offset;
        if self
            .trans_types
            .iter()
            .any(|&t| self.types[t].offset != first)
        {
            return None;
        }
        match &self.footer {
            None => Some(first),
            Some(f) if f.dst.is_none() && f.std.offset == first => Some(first),
            Some(_) => None,
        }
    }
}

impl PosixTz {
    /// Parses a POSIX TZ string: `std offset [dst [offset] [,start[/time],end[/time]]]`.
    pub(crate) fn parse(s: &str) -> Result<PosixTz, String> {
        let mut c = Cursor {
            s: s.as_bytes(),
            pos: 0,
        };
        let std_abbr = c.abbr()?;
        let std_offset = -c.hms(24)?;
        let std = LocalType {
            offset: std_offset,
            is_dst: false,
            abbr: std_abbr,
        };
        if c.at_end() {
            return Ok(PosixTz { std, dst: None });
        }
        let dst_abbr = c.abbr()?;
        let dst_offset = match c.peek() {
            Some(b) if b.is_ascii_digit() || b == b'+' || b == b'-' => -c.hms(24)?,
            _ => std_offset + 3600,
        };
        let (start, start_time, end, end_time) = if c.at_end() {
            // POSIX leaves the default rule to the implementation; use the
            // current US rule like most C libraries do.
            (
                RuleDay::MonthWeekDay {
                    month: 3,
                    week: 2,
                    weekday: 0,
                },
                7200,
                RuleDay::MonthWeekDay {
                    month: 11,
                    week: 1,
                    weekday: 0,
                },
                7200,
            )
        } else {
            c.expect(b',')?;
            let start = c.rule_day()?;
            let start_time = c.rule_time()?;
            c.expect(b',')?;
            let end = c.rule_day()?;
            let end_time = c.rule_time()?;
            (start, start_time, end, end_time)
        };
        if !c.at_end() {
            return Err(format!("trailing characters in TZ string [{s}]"));
        }
        Ok(PosixTz {
            std,
            dst: Some(DstRule {
                local: LocalType {
                    offset: dst_offset,
                    is_dst: true,
                    abbr: dst_abbr,
                },
                start,
                start_time,
                end,
                end_time,
            }),
        })
    }

    fn lookup(&self, t: i64) -> (i64, &str) {
        let Some(dst) = &self.dst else {
            return (self.std.offset, &self.std.abbr);
        };
        let days = (t.saturating_add(self.std.offset)).div_euclid(SECS_PER_DAY);
        let (y, _, _) = civil::civil_from_days(days.clamp(-(1 << 40), 1 << 40));
        // The last transition at or before `t`, looking at the neighbouring years
        // too so that instants near New Year see the right state. On a tie the
        // start of DST wins (a rule that keeps DST all year ends one year exactly
        // when it starts the next).
        let mut best: Option<(i64, u8, bool)> = None;
        for yy in [y - 1, y, y + 1] {
            let start = dst.start.epoch_day(yy) * SECS_PER_DAY + dst.start_time - self.std.offset;
            let end = dst.end.epoch_day(yy) * SECS_PER_DAY + dst.end_time - dst.local.offset;
            for cand in [(start, 1u8, true), (end, 0u8, false)] {
                if cand.0 <= t && best.is_none_or(|b| (cand.0, cand.1) > (b.0, b.1)) {
                    best = Some(cand);
                }
            }
        }
        match best {
            Some((_, _, true)) => (dst.local.offset, &dst.local.abbr),
            _ => (self.std.offset, &self.std.abbr),
        }
    }
}

impl RuleDay {
    fn epoch_day(self, y: i64) -> i64 {
        let jan1 = civil::days_from_civil(y, 1, 1);
        match self {
            RuleDay::JulianNoLeap(n) => {
                let mut doy0 = i64::from(n) - 1;
                if civil::is_leap(y) && n >= 60 {
                    doy0 += 1;
                }
                jan1 + doy0
            }
            RuleDay::ZeroBased(n) => jan1 + i64::from(n),
            RuleDay::MonthWeekDay {
                month,
                week,
                weekday,
            } => {
                let first = civil::days_from_civil(y, month, 1);
                let first_wd = i64::from(civil::day_of_week(first) % 7); // 0 = Sunday
                let mut day =
                    first + (i64::from(weekday) - first_wd).rem_euclid(7) + i64::from(week - 1) * 7;
                let next_month = first + i64::from(civil::days_in_month(y, month));
                while day >= next_month {
                    day -= 7;
                }
                day
            }
        }
    }
}

/// Byte cursor over a POSIX TZ string.
struct Cursor<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn at_end(&self) -> bool {
        self.pos >= self.s.len()
    }

    fn expect(&mut self, b: u8) -> Result<(), String> {
        if self.peek() == Some(b) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!("expected '{}' in TZ string", b as char))
        }
    }

    fn abbr(&mut self) -> Result<String, String> {
        let start = self.pos;
        let text = if self.peek() == Some(b'<') {
            self.pos += 1;
            let inner = self.pos;
            while let Some(b) = self.peek() {
                if b == b'>' {
                    break;
                }
                if !(b.is_ascii_alphanumeric() || b == b'+' || b == b'-') {
                    return Err("invalid quoted abbreviation in TZ string".to_string());
                }
                self.pos += 1;
            }
            let text = &self.s[inner..self.pos];
            self.expect(b'>')?;
            text
        } else {
            while self.peek().is_some_and(|b| b.is_ascii_alphabetic()) {
                self.pos += 1;
            }
            if self.pos - start < 3 {
                return Err("abbreviation too short in TZ string".to_string());
            }
            &self.s[start..self.pos]
        };
        if text.is_empty() {
            return Err("missing abbreviation in TZ string".to_string());
        }
        Ok(String::from_utf8_lossy(text).into_owned())
    }

    fn number(&mut self, max_digits: usize) -> Result<i64, String> {
        let start = self.pos;
        let mut v = 0i64;
        while let Some(b) = self.peek() {
            if !b.is_ascii_digit() || self.pos - start >= max_digits {
                break;
            }
            v = v * 10 + i64::from(b - b'0');
            self.pos += 1;
        }
        if self.pos == start {
            return Err("expected a number in TZ string".to_string());
        }
        Ok(v)
    }

    /// `[+-]hh[:mm[:ss]]` in seconds, hours at most `max_hours`.
    fn hms(&mut self, max_hours: i64) -> Result<i64, String> {
        let sign = match self.peek() {
            Some(b'-') => {
                self.pos += 1;
                -1
            }
            Some(b'+') => {
                self.pos += 1;
                1
            }
            _ => 1,
        };
        let h = self.number(3)?;
        if h > max_hours {
            return Err("hour out of range in TZ string".to_string());
        }
        let mut secs = h * 3600;
        if self.peek() == Some(b':') {
            self.pos += 1;
            let m = self.number(2)?;
            if m > 59 {
                return Err("minute out of range in TZ string".to_string());
            }
            secs += m * 60;
            if self.peek() == Some(b':') {
                self.pos += 1;
                let s = self.number(2)?;
                if s > 59 {
                    return Err("second out of range in TZ string".to_string());
                }
                secs += s;
            }
        }
        Ok(sign * secs)
    }

    fn rule_day(&mut self) -> Result<RuleDay, String> {
        match self.peek() {
            Some(b'J') => {
                self.pos += 1;
                let n = self.number(3)?;
                if !(1..=365).contains(&n) {
                    return Err("Julian day out of range in TZ string".to_string());
                }
                Ok(RuleDay::JulianNoLeap(n as u32))
            }
            Some(b'M') => {
                self.pos += 1;
                let month = self.number(2)?;
                self.expect(b'.')?;
                let week = self.number(1)?;
                self.expect(b'.')?;
                let weekday = self.number(1)?;
                if !(1..=12).contains(&month) || !(1..=5).contains(&week) || weekday > 6 {
                    return Err("month rule out of range in TZ string".to_string());
                }
                Ok(RuleDay::MonthWeekDay {
                    month: month as u32,
                    week: week as u32,
                    weekday: weekday as u32,
                })
            }
            _ => {
                let n = self.number(3)?;
                if n > 365 {
                    return Err("day out of range in TZ string".to_string());
                }
                Ok(RuleDay::ZeroBased(n as u32))
            }
        }
    }

    fn rule_time(&mut self) -> Result<i64, String> {
        if self.peek() == Some(b'/') {
            self.pos += 1;
            self.hms(167)
        } else {
            Ok(7200)
        }
    }
}

/// Bounds-checked big-endian reader over the TZif bytes.
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| "truncated TZif data".to_string())?;
        let s = &self.data[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn skip(&mut self, n: usize) -> Result<(), String> {
        self.take(n).map(|_| ())
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn be_u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn be_i32(&mut self) -> Result<i32, String> {
        Ok(self.be_u32()? as i32)
    }

    fn be_i64(&mut self) -> Result<i64, String> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }
}

struct Header {
    /// 0 for version 1, else the version number (2, 3, 4…).
    version: u8,
    isutcnt: usize,
    isstdcnt: usize,
    leapcnt: usize,
    timecnt: usize,
    typecnt: usize,
    charcnt: usize,
}

impl Header {
    fn read(r: &mut Reader) -> Result<Header, String> {
        if r.take(4)? != b"TZif" {
            return Err("not a TZif file".to_string());
        }
        let version = match r.u8()? {
            0 => 0,
            v @ b'2'..=b'9' => v - b'0',
            _ => return Err("unsupported TZif version".to_string()),
        };
        r.skip(15)?;
        let mut counts = [0usize; 6];
        for c in counts.iter_mut() {
            *c = r.be_u32()? as usize;
        }
        let [isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt] = counts;
        Ok(Header {
            version,
            isutcnt,
            isstdcnt,
            leapcnt,
            timecnt,
            typecnt,
            charcnt,
        })
    }

    /// Byte length of the data block that follows this header.
    fn block_len(&self, time_size: usize) -> Result<usize, String> {
        let parts = [
            self.timecnt.checked_mul(time_size),
            Some(self.timecnt),
            self.typecnt.checked_mul(6),
            Some(self.charcnt),
            self.leapcnt.checked_mul(time_size + 4),
            Some(self.isstdcnt),
            Some(self.isutcnt),
        ];
        parts
            .into_iter()
            .try_fold(0usize, |acc, p| acc.checked_add(p?))
            .ok_or_else(|| "TZif counts overflow".to_string())
    }
}

struct Block {
    transitions: Vec<i64>,
    trans_types: Vec<usize>,
    types: Vec<LocalType>,
}

fn read_block(r: &mut Reader, h: &Header, time_size: usize) -> Result<Block, String> {
    // Make sure the whole block is present before allocating anything sized by it.
    let len = h.block_len(time_size)?;
    if r.pos.checked_add(len).is_none_or(|e| e > r.data.len()) {
        return Err("truncated TZif data".to_string());
    }
    let mut transitions = Vec::with_capacity(h.timecnt);
    for _ in 0..h.timecnt {
        transitions.push(if time_size == 4 {
            i64::from(r.be_i32()?)
        } else {
            r.be_i64()?
        });
    }
    let mut trans_types = Vec::with_capacity(h.timecnt);
    for _ in 0..h.timecnt {
        trans_types.push(usize::from(r.u8()?));
    }
    let mut raw_types = Vec::with_capacity(h.typecnt);
    for _ in 0..h.typecnt {
        let offset = i64::from(r.be_i32()?);
        let is_dst = r.u8()? != 0;
        let idx = usize::from(r.u8()?);
        raw_types.push((offset, is_dst, idx));
    }
    let chars = r.take(h.charcnt)?;
    r.skip(h.leapcnt * (time_size + 4) + h.isstdcnt + h.isutcnt)?;
    let types = raw_types
        .into_iter()
        .map(|(offset, is_dst, idx)| {
            let tail = chars.get(idx..).unwrap_or(&[]);
            let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
            LocalType {
                offset,
                is_dst,
                abbr: String::from_utf8_lossy(&tail[..end]).into_owned(),
            }
        })
        .collect();
    Ok(Block {
        transitions,
        trans_types,
        types,
    })
}

/// The POSIX TZ footer of a version 2+ file: `\n<TZ>\n`. Unparseable or empty
/// footers are ignored (the table's last type then applies forever).
fn read_footer(r: &mut Reader) -> Option<PosixTz> {
    let rest = r.data.get(r.pos..)?;
    let rest = rest.strip_prefix(b"\n")?;
    let end = rest.iter().position(|&b| b == b'\n')?;
    let tz = std::str::from_utf8(&rest[..end]).ok()?;
    if tz.is_empty() {
        return None;
    }
    PosixTz::parse(tz).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(y: i64, m: u32, d: u32, h: i64, mi: i64) -> i64 {
        civil::days_from_civil(y, m, d) * SECS_PER_DAY + h * 3600 + mi * 60
    }

    /// Builds a small version-2 TZif file by hand.
    fn build_tzif(transitions: &[(i64, u8)], types: &[(i32, bool, &str)], footer: &str) -> Vec<u8> {
        let mut chars = Vec::new();
        let mut idx = Vec::new();
        for (_, _, a) in types {
            idx.push(chars.len() as u8);
            chars.extend_from_slice(a.as_bytes());
            chars.push(0);
        }
        let header = |out: &mut Vec<u8>, timecnt: usize| {
            out.extend_from_slice(b"TZif2");
            out.extend_from_slice(&[0u8; 15]);
            for c in [0, 0, 0, timecnt, types.len(), chars.len()] {
                out.extend_from_slice(&(c as u32).to_be_bytes());
            }
        };
        let mut out = Vec::new();
        // Version 1 block: no transitions, same types.
        header(&mut out, 0);
        for (i, (off, dst, _)) in types.iter().enumerate() {
            out.extend_from_slice(&off.to_be_bytes());
            out.push(u8::from(*dst));
            out.push(idx[i]);
        }
        out.extend_from_slice(&chars);
        header(&mut out, transitions.len());
        for (t, _) in transitions {
            out.extend_from_slice(&t.to_be_bytes());
        }
        for (_, ty) in transitions {
            out.push(*ty);
        }
        for (i, (off, dst, _)) in types.iter().enumerate() {
            out.extend_from_slice(&off.to_be_bytes());
            out.push(u8::from(*dst));
            out.push(idx[i]);
        }
        out.extend_from_slice(&chars);
        out.push(b'\n');
        out.extend_from_slice(footer.as_bytes());
        out.push(b'\n');
        out
    }

    #[test]
    fn posix_central_europe() {
        let tz = PosixTz::parse("CET-1CEST,M3.5.0,M10.5.0/3").unwrap();
        // 2015: DST from 2015-03-29T01:00Z to 2015-10-25T01:00Z.
        assert_eq!(tz.lookup(utc(2015, 3, 29, 0, 59)).0, 3600);
        assert_eq!(tz.lookup(utc(2015, 3, 29, 1, 0)), (7200, "CEST"));
        assert_eq!(tz.lookup(utc(2015, 10, 25, 0, 59)).0, 7200);
        assert_eq!(tz.lookup(utc(2015, 10, 25, 1, 0)), (3600, "CET"));
        assert_eq!(tz.lookup(utc(2015, 1, 1, 0, 0)).0, 3600);
        assert_eq!(tz.lookup(utc(2015, 12, 31, 23, 30)).0, 3600);
    }

    #[test]
    fn posix_southern_and_fractional() {
        let tz = PosixTz::parse("AEST-10AEDT,M10.1.0,M4.1.0/3").unwrap();
        assert_eq!(tz.lookup(utc(2015, 1, 15, 0, 0)).0, 11 * 3600);
        assert_eq!(tz.lookup(utc(2015, 6, 15, 0, 0)).0, 10 * 3600);
        // 2015-04-05 03:00 AEDT = 2015-04-04T16:00Z.
        assert_eq!(tz.lookup(utc(2015, 4, 4, 15, 59)).0, 11 * 3600);
        assert_eq!(tz.lookup(utc(2015, 4, 4, 16, 0)).0, 10 * 3600);
        let tz = PosixTz::parse("<+0545>-5:45").unwrap();
        assert_eq!(tz.lookup(0), (5 * 3600 + 45 * 60, "+0545"));
        let tz = PosixTz::parse("NST3:30NDT,M3.2.0,M11.1.0").unwrap();
        assert_eq!(tz.lookup(utc(2015, 1, 1, 0, 0)).0, -(3 * 3600 + 1800));
        assert_eq!(tz.lookup(utc(2015, 7, 1, 0, 0)).0, -(2 * 3600 + 1800));
    }

    #[test]
    fn posix_negative_dst_and_all_year_dst() {
        // Europe/Dublin: "standard" is summer time, winter is negative DST.
        let tz = PosixTz::parse("IST-1GMT0,M10.5.0,M3.5.0/1").unwrap();
        assert_eq!(tz.lookup(utc(2015, 7, 1, 0, 0)).0, 3600);
        assert_eq!(tz.lookup(utc(2015, 1, 1, 0, 0)).0, 0);
        // DST all year long.
        let tz = PosixTz::parse("EST5EDT,0/0,J365/25").unwrap();
        for (m, d) in [(1, 1), (6, 1), (12, 31)] {
            assert_eq!(tz.lookup(utc(2015, m, d, 12, 0)).0, -4 * 3600);
        }
        assert_eq!(tz.lookup(utc(2016, 1, 1, 5, 0)).0, -4 * 3600);
    }

    #[test]
    fn posix_julian_days_and_defaults() {
        let tz = PosixTz::parse("XST3XDT,J60/0,300/0").unwrap();
        // J60 is March 1 even in leap years.
        let start = utc(2016, 3, 1, 3, 0);
        assert_eq!(tz.lookup(start - 1).0, -3 * 3600);
        assert_eq!(tz.lookup(start).0, -2 * 3600);
        let tz = PosixTz::parse("EST5EDT").unwrap();
        assert_eq!(tz.lookup(utc(2015, 7, 1, 0, 0)).0, -4 * 3600);
        assert_eq!(tz.lookup(utc(2015, 1, 1, 0, 0)).0, -5 * 3600);
    }

    #[test]
    fn posix_errors() {
        for bad in [
            "",
            "1",
            "CET",
            "CET-1CEST,M13.5.0,M10.5.0",
            "CET-1CEST,M3.5.0",
            "CET-1x",
            "<abc",
        ] {
            assert!(PosixTz::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn tzif_table_then_footer() {
        // A made-up zone: +01 until 2000, then +02 fixed table entry, then a CET rule.
        let t2000 = utc(2000, 1, 1, 0, 0);
        let data = build_tzif(
            &[(t2000, 1)],
            &[(3600, false, "AAA"), (7200, false, "BBB")],
            "CET-1CEST,M3.5.0,M10.5.0/3",
        );
        let rules = TzRules::parse_tzif(&data).unwrap();
        assert_eq!(rules.lookup(t2000 - 1), (3600, "AAA"));
        assert_eq!(rules.lookup(t2000), (7200, "BBB"));
        assert_eq!(rules.lookup(utc(2015, 1, 1, 0, 0)), (3600, "CET"));
        assert_eq!(rules.lookup(utc(2015, 7, 1, 0, 0)), (7200, "CEST"));
        assert_eq!(rules.fixed_offset(), None);
    }

    #[test]
    fn tzif_fixed_zone() {
        let data = build_tzif(&[], &[(0, false, "UTC")], "UTC0");
        let rules = TzRules::parse_tzif(&data).unwrap();
        assert_eq!(rules.fixed_offset(), Some(0));
        assert_eq!(rules.lookup(12345), (0, "UTC"));
    }

    #[test]
    fn tzif_garbage_is_rejected_without_panicking() {
        assert!(TzRules::parse_tzif(b"").is_err());
        assert!(TzRules::parse_tzif(b"TZif").is_err());
        assert!(TzRules::parse_tzif(b"NOPE0000000000000000000000000000000000000000").is_err());
        let good = build_tzif(&[(0, 1)], &[(0, false, "A"), (60, false, "B")], "B-0:01");
        for cut in 0..good.len() - 6 {
            let _ = TzRules::parse_tzif(&good[..cut]);
        }
        // Transition pointing at a missing type.
        let bad = build_tzif(&[(0, 5)], &[(0, false, "A")], "A0");
        assert!(TzRules::parse_tzif(&bad).is_err());
        // Huge counts must not allocate or panic.
        let mut huge = b"TZif2".to_vec();
        huge.extend_from_slice(&[0u8; 15]);
        for _ in 0..6 {
            huge.extend_from_slice(&u32::MAX.to_be_bytes());
        }
        assert!(TzRules::parse_tzif(&huge).is_err());
    }

    #[test]
    fn system_zoneinfo_when_present() {
        let Ok(data) = std::fs::read("/usr/share/zoneinfo/Europe/Paris") else {
            return;
        };
        let rules = TzRules::parse_tzif(&data).unwrap();
        assert_eq!(rules.offset_at(utc(2015, 1, 1, 0, 0)), 3600);
        assert_eq!(rules.offset_at(utc(2015, 7, 1, 0, 0)), 7200);
        assert_eq!(rules.offset_at(utc(2100, 7, 1, 0, 0)), 7200);
        assert_eq!(rules.offset_at(utc(2100, 12, 1, 0, 0)), 3600);
        // In 1900 Paris used Paris Mean Time (+00:09:21).
        assert_eq!(rules.offset_at(utc(1900, 1, 1, 0, 0)), 561);
    }
}
