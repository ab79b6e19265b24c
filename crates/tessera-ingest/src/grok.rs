//! Grok: `%{PATTERN:field:type}` expressions expanded from a pattern bank into one `regex`
//! (each captured field a numbered group, mapped back to its field name and type).
//!
//! The bank holds the standard grok patterns (the names logs and OpenSearch's documentation
//! use), written for the `regex` crate: it has no look-around, atomic groups or
//! backreferences, so the few standard patterns that use them are written without (the
//! boundary checks around numbers are dropped, quoted strings are matched with plain
//! alternation). `GET _ingest/processor/grok` lists this bank.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use regex::{Regex, RegexBuilder};
use serde_json::Value;

/// How many expansions deep a pattern may nest before it counts as circular.
const MAX_NESTING: usize = 64;

const IPV4_OCTET: &str = "(?:25[0-5]|2[0-4][0-9]|[01]?[0-9]{1,2})";

/// The standard patterns that do not depend on IPv6's long definition.
const PATTERNS: &[(&str, &str)] = &[
    ("USERNAME", r"[a-zA-Z0-9._-]+"),
    ("USER", r"%{USERNAME}"),
    ("EMAILLOCALPART", r"[a-zA-Z][a-zA-Z0-9_.+-=:]+"),
    ("EMAILADDRESS", r"%{EMAILLOCALPART}@%{HOSTNAME}"),
    ("INT", r"(?:[+-]?(?:[0-9]+))"),
    (
        "BASE10NUM",
        r"(?:[+-]?(?:(?:[0-9]+(?:\.[0-9]+)?)|(?:\.[0-9]+)))",
    ),
    ("NUMBER", r"(?:%{BASE10NUM})"),
    ("BASE16NUM", r"(?:[+-]?(?:0x)?(?:[0-9A-Fa-f]+))"),
    (
        "BASE16FLOAT",
        r"\b(?:[+-]?(?:0x)?(?:(?:[0-9A-Fa-f]+(?:\.[0-9A-Fa-f]*)?)|(?:\.[0-9A-Fa-f]+)))\b",
    ),
    ("POSINT", r"\b(?:[1-9][0-9]*)\b"),
    ("NONNEGINT", r"\b(?:[0-9]+)\b"),
    ("WORD", r"\b\w+\b"),
    ("NOTSPACE", r"\S+"),
    ("SPACE", r"\s*"),
    ("DATA", r".*?"),
    ("GREEDYDATA", r".*"),
    (
        "QUOTEDSTRING",
        r#"(?:"(?:\\.|[^\\"]+)*"|'(?:\\.|[^\\']+)*'|`(?:\\.|[^\\`]+)*`)"#,
    ),
    ("QS", r"%{QUOTEDSTRING}"),
    (
        "UUID",
        r"[A-Fa-f0-9]{8}-(?:[A-Fa-f0-9]{4}-){3}[A-Fa-f0-9]{12}",
    ),
    (
        "URN",
        r"urn:[0-9A-Za-z][0-9A-Za-z-]{0,31}:(?:%[0-9a-fA-F]{2}|[0-9A-Za-z()+,.:=@;$_!*'/?#-])+",
    ),
    ("MAC", r"(?:%{CISCOMAC}|%{WINDOWSMAC}|%{COMMONMAC})"),
    ("CISCOMAC", r"(?:(?:[A-Fa-f0-9]{4}\.){2}[A-Fa-f0-9]{4})"),
    ("WINDOWSMAC", r"(?:(?:[A-Fa-f0-9]{2}-){5}[A-Fa-f0-9]{2})"),
    ("COMMONMAC", r"(?:(?:[A-Fa-f0-9]{2}:){5}[A-Fa-f0-9]{2})"),
    ("IP", r"(?:%{IPV6}|%{IPV4})"),
    (
        "HOSTNAME",
        r"\b(?:[0-9A-Za-z][0-9A-Za-z-]{0,62})(?:\.(?:[0-9A-Za-z][0-9A-Za-z-]{0,62}))*(?:\.?|\b)",
    ),
    ("IPORHOST", r"(?:%{IP}|%{HOSTNAME})"),
    ("HOSTPORT", r"%{IPORHOST}:%{POSINT}"),
    ("PATH", r"(?:%{UNIXPATH}|%{WINPATH})"),
    ("UNIXPATH", r"(?:/[\w_%!$@:.,+~-]*)+"),
    ("TTY", r"(?:/dev/(?:pts|tty(?:[pq])?)(?:\w+)?/?(?:[0-9]+))"),
    ("WINPATH", r"(?:[A-Za-z]+:|\\)(?:\\[^\\?*]*)+"),
    ("URIPROTO", r"[A-Za-z](?:[A-Za-z0-9+\-.]+)+"),
    ("URIHOST", r"%{IPORHOST}(?::%{POSINT:port})?"),
    ("URIPATH", r"(?:/[A-Za-z0-9$.+!*'(){},~:;=@#%&_\-]*)+"),
    ("URIPARAM", r"\?[A-Za-z0-9$.+!*'|(){},~@#%&/=:;_?\-\[\]<>]*"),
    ("URIPATHPARAM", r"%{URIPATH}(?:%{URIPARAM})?"),
    (
        "URI",
        r"%{URIPROTO}://(?:%{USER}(?::[^@]*)?@)?(?:%{URIHOST})?(?:%{URIPATHPARAM})?",
    ),
    (
        "MONTH",
        r"\b(?:[Jj]an(?:uary|uar)?|[Ff]eb(?:ruary|ruar)?|[Mm](?:a|ä)?r(?:ch|z)?|[Aa]pr(?:il)?|[Mm]a(?:y|i)?|[Jj]un(?:e|i)?|[Jj]ul(?:y|i)?|[Aa]ug(?:ust)?|[Ss]ep(?:tember)?|[Oo](?:c|k)?t(?:ober)?|[Nn]ov(?:ember)?|[Dd]e(?:c|z)(?:ember)?)\b",
    ),
    ("MONTHNUM", r"(?:0?[1-9]|1[0-2])"),
    ("MONTHNUM2", r"(?:0[1-9]|1[0-2])"),
    ("MONTHDAY", r"(?:(?:0[1-9])|(?:[12][0-9])|(?:3[01])|[1-9])"),
    (
        "DAY",
        r"(?:Mon(?:day)?|Tue(?:sday)?|Wed(?:nesday)?|Thu(?:rsday)?|Fri(?:day)?|Sat(?:urday)?|Sun(?:day)?)",
    ),
    ("YEAR", r"(?:\d\d){1,2}"),
    ("HOUR", r"(?:2[0123]|[01]?[0-9])"),
    ("MINUTE", r"(?:[0-5][0-9])"),
    ("SECOND", r"(?:(?:[0-5]?[0-9]|60)(?:[:.,][0-9]+)?)"),
    ("TIME", r"%{HOUR}:%{MINUTE}(?::%{SECOND})"),
    ("DATE_US", r"%{MONTHNUM}[/-]%{MONTHDAY}[/-]%{YEAR}"),
    ("DATE_EU", r"%{MONTHDAY}[./-]%{MONTHNUM}[./-]%{YEAR}"),
    ("ISO8601_TIMEZONE", r"(?:Z|[+-]%{HOUR}(?::?%{MINUTE}))"),
    ("ISO8601_SECOND", r"(?:%{SECOND}|60)"),
    (
        "TIMESTAMP_ISO8601",
        r"%{YEAR}-%{MONTHNUM}-%{MONTHDAY}[T ]%{HOUR}:?%{MINUTE}(?::?%{SECOND})?%{ISO8601_TIMEZONE}?",
    ),
    ("DATE", r"%{DATE_US}|%{DATE_EU}"),
    ("DATESTAMP", r"%{DATE}[- ]%{TIME}"),
    ("TZ", r"(?:[APMCE][SD]T|UTC)"),
    (
        "DATESTAMP_RFC822",
        r"%{DAY} %{MONTH} %{MONTHDAY} %{YEAR} %{TIME} %{TZ}",
    ),
    (
        "DATESTAMP_RFC2822",
        r"%{DAY}, %{MONTHDAY} %{MONTH} %{YEAR} %{TIME} %{ISO8601_TIMEZONE}",
    ),
    (
        "DATESTAMP_OTHER",
        r"%{DAY} %{MONTH} %{MONTHDAY} %{TIME} %{TZ} %{YEAR}",
    ),
    (
        "DATESTAMP_EVENTLOG",
        r"%{YEAR}%{MONTHNUM2}%{MONTHDAY}%{HOUR}%{MINUTE}%{SECOND}",
    ),
    (
        "HTTPDERROR_DATE",
        r"%{DAY} %{MONTH} %{MONTHDAY} %{TIME} %{YEAR}",
    ),
    ("SYSLOGTIMESTAMP", r"%{MONTH} +%{MONTHDAY} %{TIME}"),
    ("PROG", r"[\x21-\x5a\x5c\x5e-\x7e]+"),
    ("SYSLOGPROG", r"%{PROG:program}(?:\[%{POSINT:pid}\])?"),
    ("SYSLOGHOST", r"%{IPORHOST}"),
    (
        "SYSLOGFACILITY",
        r"<%{NONNEGINT:facility}.%{NONNEGINT:priority}>",
    ),
    ("HTTPDATE", r"%{MONTHDAY}/%{MONTH}/%{YEAR}:%{TIME} %{INT}"),
    ("QUOTEDSTRING_SINGLE", r"'(?:\\.|[^\\']+)*'"),
    (
        "LOGLEVEL",
        r"(?:[Aa]lert|ALERT|[Tt]race|TRACE|[Dd]ebug|DEBUG|[Nn]otice|NOTICE|[Ii]nfo?(?:rmation)?|INFO?(?:RMATION)?|[Ww]arn?(?:ing)?|WARN?(?:ING)?|[Ee]rr?(?:or)?|ERR?(?:OR)?|[Cc]rit?(?:ical)?|CRIT?(?:ICAL)?|[Ff]atal|FATAL|[Ss]evere|SEVERE|EMERG(?:ENCY)?|[Ee]merg(?:ency)?)",
    ),
    (
        "SYSLOGBASE",
        r"%{SYSLOGTIMESTAMP:timestamp} (?:%{SYSLOGFACILITY} )?%{SYSLOGHOST:logsource} %{SYSLOGPROG}:",
    ),
    ("SYSLOGLINE", r"%{SYSLOGBASE} %{GREEDYDATA:message}"),
    ("HTTPDUSER", r"%{EMAILADDRESS}|%{USER}"),
    (
        "COMMONAPACHELOG",
        r#"%{IPORHOST:clientip} %{HTTPDUSER:ident} %{USER:auth} \[%{HTTPDATE:timestamp}\] "(?:%{WORD:verb} %{NOTSPACE:request}(?: HTTP/%{NUMBER:httpversion})?|%{DATA:rawrequest})" %{NUMBER:response} (?:%{NUMBER:bytes}|-)"#,
    ),
    (
        "COMBINEDAPACHELOG",
        r"%{COMMONAPACHELOG} %{QS:referrer} %{QS:agent}",
    ),
    (
        "HTTPD20_ERRORLOG",
        r"\[%{HTTPDERROR_DATE:timestamp}\] \[%{LOGLEVEL:loglevel}\] (?:\[client %{IPORHOST:clientip}\] ){0,1}%{GREEDYDATA:message}",
    ),
    (
        "HTTPD24_ERRORLOG",
        r"\[%{HTTPDERROR_DATE:timestamp}\] \[%{WORD:module}:%{LOGLEVEL:loglevel}\] \[pid %{POSINT:pid}(?::tid %{NUMBER:tid})?\]( \(%{POSINT:proxy_errorcode}\)%{DATA:proxy_message}:)?( \[client %{IPORHOST:clientip}:%{POSINT:clientport}\])?( %{DATA:errorcode}:)? %{GREEDYDATA:message}",
    ),
    ("HTTPD_ERRORLOG", r"%{HTTPD20_ERRORLOG}|%{HTTPD24_ERRORLOG}"),
];

/// IPv4: four octets.
fn ipv4() -> String {
    format!("(?:{o}\\.{o}\\.{o}\\.{o})", o = IPV4_OCTET)
}

/// IPv6 in all its compressed forms, an embedded IPv4 address and a zone index included,
/// built from its parts (eight groups, one `::` standing for the missing ones).
fn ipv6() -> String {
    let h = "[0-9A-Fa-f]{1,4}";
    let v4 = ipv4();
    let mut forms = vec![format!("(?:{h}:){{7}}(?:{h}|:)")];
    // n groups before `::` (n from 6 down to 1), the rest after it, or an IPv4 tail
    for before in (1..=6usize).rev() {
        let after = 7 - before;
        let tail_v4 = after.saturating_sub(2);
        let v4_form = if tail_v4 == 0 {
            format!(":{v4}")
        } else {
            format!("(?::{h}){{0,{tail_v4}}}:{v4}")
        };
        let v4_form = if before == 6 { v4.clone() } else { v4_form };
        forms.push(format!(
            "(?:{h}:){{{before}}}(?:(?::{h}){{1,{after}}}|{v4_form}|:)"
        ));
    }
    forms.push(format!("(?::(?:(?::{h}){{1,7}}|(?::{h}){{0,5}}:{v4}|:))"));
    format!("(?:{})(?:%.+)?", forms.join("|"))
}

/// The pattern bank, by name.
pub fn bank() -> &'static BTreeMap<String, String> {
    static BANK: OnceLock<BTreeMap<String, String>> = OnceLock::new();
    BANK.get_or_init(|| {
        let mut bank: BTreeMap<String, String> = PATTERNS
            .iter()
            .map(|(name, definition)| (name.to_string(), definition.to_string()))
            .collect();
        bank.insert("IPV4".into(), ipv4());
        bank.insert("IPV6".into(), ipv6());
        bank
    })
}

/// The type a capture converts to (`%{NUMBER:n:int}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Conversion {
    Int,
    Long,
    Float,
    Double,
    Boolean,
}

#[derive(Clone, Debug)]
struct Capture {
    group: String,
    field: String,
    conversion: Option<Conversion>,
}

/// A compiled grok expression.
#[derive(Debug)]
pub struct Grok {
    regex: Regex,
    captures: Vec<Capture>,
}

struct Expander<'a> {
    definitions: &'a dyn Fn(&str) -> Option<String>,
    captures: Vec<Capture>,
    stack: Vec<String>,
}

impl Expander<'_> {
    fn expand(&mut self, pattern: &str) -> Result<String, String> {
        let mut out = String::new();
        let mut rest = pattern;
        while let Some(start) = rest.find("%{") {
            out.push_str(&rest[..start]);
            let Some(end) = rest[start..].find('}') else {
                return Err(format!(
                    "Invalid grok pattern: an unclosed %{{ in [{pattern}]"
                ));
            };
            let inner = &rest[start + 2..start + end];
            rest = &rest[start + end + 1..];
            let mut parts = inner.splitn(3, ':');
            let name = parts.next().unwrap_or_default();
            let field = parts.next().filter(|f| !f.is_empty());
            let conversion = match parts.next() {
                None => None,
                Some("int") => Some(Conversion::Int),
                Some("long") => Some(Conversion::Long),
                Some("float") => Some(Conversion::Float),
                Some("double") => Some(Conversion::Double),
                Some("boolean") => Some(Conversion::Boolean),
                Some(other) => {
                    return Err(format!(
                        "Unsupported type [{other}] in grok capture [{inner}]"
                    ))
                }
            };
            if self.stack.iter().any(|n| n == name) || self.stack.len() >= MAX_NESTING {
                return Err(format!(
                    "circular reference in pattern [{name}][{}]",
                    self.stack.join("][")
                ));
            }
            let Some(definition) = (self.definitions)(name) else {
                return Err(format!(
                    "Unable to find pattern [{name}] in Grok's pattern dictionary"
                ));
            };
            self.stack.push(name.to_string());
            let expanded = self.expand(&definition)?;
            self.stack.pop();
            match field {
                Some(field) => {
                    let group = format!("g{}", self.captures.len());
                    out.push_str(&format!("(?P<{group}>{expanded})"));
                    self.captures.push(Capture {
                        group,
                        field: field.to_string(),
                        conversion,
                    });
                }
                None => out.push_str(&format!("(?:{expanded})")),
            }
        }
        out.push_str(rest);
        Ok(out)
    }
}

impl Grok {
    /// Compiles `pattern`, resolving names through `definitions` (the processor's
    /// `pattern_definitions` first, then the bank). The error is a message for the caller.
    pub fn compile(
        pattern: &str,
        definitions: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Grok, String> {
        let mut expander = Expander {
            definitions,
            captures: Vec::new(),
            stack: Vec::new(),
        };
        let expanded = expander.expand(pattern)?;
        let regex = RegexBuilder::new(&expanded)
            .size_limit(64 << 20)
            .build()
            .map_err(|e| e.to_string())?;
        let mut captures = expander.captures;
        // named groups written in the pattern itself (`(?<queue_id>...)`) are fields too
        for name in regex.capture_names().flatten() {
            if !captures.iter().any(|c| c.group == name) {
                captures.push(Capture {
                    group: name.to_string(),
                    field: name.to_string(),
                    conversion: None,
                });
            }
        }
        Ok(Grok { regex, captures })
    }

    /// The fields captured from `text`, or `None` when the expression does not match.
    pub fn captures(&self, text: &str) -> Option<Vec<(String, Value)>> {
        let found = self.regex.captures(text)?;
        let mut out: Vec<(String, Value)> = Vec::new();
        for capture in &self.captures {
            let Some(matched) = found.name(&capture.group) else {
                continue;
            };
            if out.iter().any(|(field, _)| *field == capture.field) {
                continue;
            }
            let text = matched.as_str();
            let value = match capture.conversion {
                None => Value::String(text.to_string()),
                Some(Conversion::Int) | Some(Conversion::Long) => text
                    .parse::<i64>()
                    .map(Value::from)
                    .unwrap_or_else(|_| Value::String(text.to_string())),
                Some(Conversion::Float) => text
                    .parse::<f32>()
                    .ok()
                    .and_then(crate::processor::convert::float32_value)
                    .unwrap_or_else(|| Value::String(text.to_string())),
                Some(Conversion::Double) => text
                    .parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                    .map(Value::Number)
                    .unwrap_or_else(|| Value::String(text.to_string())),
                Some(Conversion::Boolean) => Value::Bool(text.eq_ignore_ascii_case("true")),
            };
            out.push((capture.field.clone(), value));
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn grok(pattern: &str) -> Grok {
        Grok::compile(pattern, &|name| bank().get(name).cloned()).unwrap()
    }

    fn fields(pattern: &str, text: &str) -> serde_json::Map<String, Value> {
        grok(pattern).captures(text).unwrap().into_iter().collect()
    }

    #[test]
    fn every_bank_pattern_compiles() {
        for name in bank().keys() {
            grok(&format!("%{{{name}}}"));
        }
    }

    #[test]
    fn apache_logs_parse() {
        let line = r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif?x=1 HTTP/1.0" 200 2326 "http://www.example.com/start.html" "Mozilla/4.08 [en] (Win98; I ;Nav)""#;
        let f = fields("%{COMBINEDAPACHELOG}", line);
        assert_eq!(f["clientip"], "127.0.0.1");
        assert_eq!(f["auth"], "frank");
        assert_eq!(f["timestamp"], "10/Oct/2000:13:55:36 -0700");
        assert_eq!(f["verb"], "GET");
        assert_eq!(f["request"], "/apache_pb.gif?x=1");
        assert_eq!(f["httpversion"], "1.0");
        assert_eq!(f["response"], "200");
        assert_eq!(f["bytes"], "2326");
        assert_eq!(f["referrer"], "\"http://www.example.com/start.html\"");
        assert!(
            !f.contains_key("rawrequest"),
            "unmatched groups are left out"
        );
    }

    #[test]
    fn common_patterns_and_types() {
        let f = fields(
            "%{TIMESTAMP_ISO8601:ts} %{LOGLEVEL:level} %{IP:ip} %{NUMBER:n:int} %{NUMBER:f:float} %{GREEDYDATA:msg}",
            "2024-01-02T03:04:05.678Z WARN 2001:db8::1 42 1.5 all the rest",
        );
        assert_eq!(
            Value::Object(f),
            json!({"ts": "2024-01-02T03:04:05.678Z", "level": "WARN", "ip": "2001:db8::1",
                "n": 42, "f": 1.5, "msg": "all the rest"})
        );
        let f = fields(
            "%{IPV4:a} %{HOSTNAME:h} %{URIPATHPARAM:u} %{USERNAME:user}",
            "10.1.2.3 example.com /a/b?c=d j.doe",
        );
        assert_eq!(f["a"], "10.1.2.3");
        assert_eq!(f["h"], "example.com");
        assert_eq!(f["u"], "/a/b?c=d");
        assert_eq!(f["user"], "j.doe");
        for ip in [
            "::1",
            "fe80::1%eth0",
            "::ffff:1.2.3.4",
            "1:2:3:4:5:6:7:8",
            "1::8",
            "1:2::7:8",
        ] {
            assert_eq!(fields("^%{IPV6:ip}$", ip)["ip"], ip, "{ip}");
        }
        let f = fields("(?<queue>[0-9A-F]{4}): %{WORD:w}", "BEEF: x");
        assert_eq!(f["queue"], "BEEF");
    }

    #[test]
    fn unknown_and_circular_patterns_fail() {
        let e = Grok::compile("%{FOO:x}", &|name| bank().get(name).cloned()).unwrap_err();
        assert_eq!(
            e,
            "Unable to find pattern [FOO] in Grok's pattern dictionary"
        );
        let e = Grok::compile("%{A}", &|name| match name {
            "A" => Some("%{B}".into()),
            "B" => Some("%{A}".into()),
            _ => None,
        })
        .unwrap_err();
        assert!(e.starts_with("circular reference in pattern [A]"), "{e}");
    }
}
