//! Settings: the registry of what Tessera knows, validation with OpenSearch's messages, and the
//! flat/nested JSON forms.
//!
//! Settings travel as JSON in either form (`{"index": {"number_of_shards": 1}}` or
//! `{"index.number_of_shards": "1"}`); internally they are a flat, sorted map of dotted keys to
//! strings (or lists of strings), which is also how OpenSearch stores them. Every key is checked
//! against the registry: unknown keys, malformed values and updates of static settings are
//! rejected, never silently ignored.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// One setting's value: a scalar kept as its string form, or a list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SettingValue {
    Str(String),
    List(Vec<String>),
}

impl SettingValue {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            SettingValue::Str(s) => Some(s),
            SettingValue::List(_) => None,
        }
    }

    /// The value as a list (a scalar becomes a one-element list; a comma list is split).
    pub fn as_list(&self) -> Vec<String> {
        match self {
            SettingValue::Str(s) => s
                .split(',')
                .map(|p| p.trim().to_string())
                .filter(|p| !p.is_empty())
                .collect(),
            SettingValue::List(l) => l.clone(),
        }
    }

    fn to_json(&self) -> Value {
        match self {
            SettingValue::Str(s) => Value::String(s.clone()),
            SettingValue::List(l) => Value::Array(l.iter().cloned().map(Value::String).collect()),
        }
    }
}

/// A flat, sorted map of settings. `None` values mean "reset to default" in an update.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    values: BTreeMap<String, Option<SettingValue>>,
}

impl Settings {
    pub fn new() -> Self {
        Settings::default()
    }

    /// Parses settings from either JSON form. `null` values are kept as resets.
    pub fn from_json(value: &Value) -> Result<Settings> {
        let mut settings = Settings::new();
        match value {
            Value::Object(map) => flatten_into("", map, &mut settings)?,
            Value::Null => {}
            other => {
                return Err(Error::illegal_argument(format!(
                    "settings must be an object, found [{other}]"
                )))
            }
        }
        Ok(settings)
    }

    pub fn get(&self, key: &str) -> Option<&SettingValue> {
        self.values.get(key).and_then(|v| v.as_ref())
    }

    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(|v| v.as_str())
    }

    pub fn contains(&self, key: &str) -> bool {
        self.values.contains_key(key)
    }

    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.values
            .insert(key.into(), Some(SettingValue::Str(value.into())));
    }

    pub fn set_value(&mut self, key: impl Into<String>, value: Option<SettingValue>) {
        self.values.insert(key.into(), value);
    }

    pub fn remove(&mut self, key: &str) -> Option<SettingValue> {
        self.values.remove(key).flatten()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.values.keys().map(|k| k.as_str())
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, Option<&SettingValue>)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_ref()))
    }

    /// Adds `prefix` to every key that does not already start with it (`number_of_shards` →
    /// `index.number_of_shards`), as OpenSearch does for index settings.
    pub fn with_prefix(self, prefix: &str) -> Settings {
        let values = self
            .values
            .into_iter()
            .map(|(k, v)| {
                if k.starts_with(prefix) {
                    (k, v)
                } else {
                    (format!("{prefix}{k}"), v)
                }
            })
            .collect();
        Settings { values }
    }

    /// Applies `update` on top of these settings; `None` values remove keys.
    pub fn merge(&mut self, update: &Settings) {
        for (key, value) in &update.values {
            match value {
                Some(v) => {
                    self.values.insert(key.clone(), Some(v.clone()));
                }
                None => {
                    self.values.remove(key);
                    // a reset of `a.*` removes the whole group
                    if let Some(group) = key.strip_suffix('*') {
                        self.values.retain(|k, _| !k.starts_with(group));
                    }
                }
            }
        }
    }

    /// `{"index.number_of_shards": "1"}`.
    pub fn to_flat_json(&self) -> Value {
        let mut map = Map::new();
        for (key, value) in &self.values {
            map.insert(
                key.clone(),
                value.as_ref().map(|v| v.to_json()).unwrap_or(Value::Null),
            );
        }
        Value::Object(map)
    }

    /// `{"index": {"number_of_shards": "1"}}`.
    pub fn to_nested_json(&self) -> Value {
        let mut root = Map::new();
        for (key, value) in &self.values {
            let leaf = value.as_ref().map(|v| v.to_json()).unwrap_or(Value::Null);
            insert_nested(&mut root, key, leaf);
        }
        Value::Object(root)
    }
}

fn insert_nested(root: &mut Map<String, Value>, key: &str, leaf: Value) {
    let parts: Vec<&str> = key.split('.').collect();
    let mut node = root;
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            node.insert(part.to_string(), leaf);
            return;
        }
        let is_group = node
            .entry(part.to_string())
            .or_insert_with(|| Value::Object(Map::new()))
            .is_object();
        if !is_group {
            // a key that is both a leaf and a group (rare): keep the leaf under its full name
            node.insert(parts[i..].join("."), leaf);
            return;
        }
        node = node
            .get_mut(*part)
            .and_then(Value::as_object_mut)
            .expect("group is an object");
    }
}

fn flatten_into(prefix: &str, map: &Map<String, Value>, out: &mut Settings) -> Result<()> {
    for (key, value) in map {
        let full = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            Value::Object(inner) => flatten_into(&full, inner, out)?,
            Value::Null => out.set_value(full, None),
            Value::Array(items) => {
                let mut list = Vec::with_capacity(items.len());
                for item in items {
                    list.push(scalar_to_string(&full, item)?);
                }
                out.set_value(full, Some(SettingValue::List(list)));
            }
            scalar => out.set_value(
                full.clone(),
                Some(SettingValue::Str(scalar_to_string(&full, scalar)?)),
            ),
        }
    }
    Ok(())
}

fn scalar_to_string(key: &str, value: &Value) -> Result<String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        other => Err(Error::illegal_argument(format!(
            "failed to parse setting [{key}]: unexpected value [{other}]"
        ))),
    }
}

/// What a setting's value must look like.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Int {
        min: i64,
        max: i64,
    },
    /// A Java double with inclusive bounds (`Setting.doubleSetting`).
    Double {
        min: f64,
        max: f64,
    },
    Bool,
    Time,
    ByteSize,
    Enum(&'static [&'static str]),
    /// Like `Enum`, validated with OpenSearch's terser message ("Setting value must be one of
    /// [...]") that settings such as the concurrent search mode use.
    OneOf(&'static [&'static str]),
    Str,
    List,
    /// Checked by a function of (key, value) that returns OpenSearch's own error, for settings
    /// whose validation is specific to them (`index.codec`, `index.merge.policy`, …).
    Check(fn(&str, &str) -> Result<()>),
}

/// Where a setting lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Cluster,
    Index,
}

/// One known setting.
#[derive(Clone, Copy, Debug)]
pub struct SettingDef {
    pub key: &'static str,
    pub scope: Scope,
    pub dynamic: bool,
    pub kind: Kind,
    /// The default, as OpenSearch renders it with `include_defaults`.
    pub default: &'static str,
}

impl SettingDef {
    /// Checks one value against this definition, with OpenSearch's messages.
    pub fn validate(&self, value: &SettingValue) -> Result<()> {
        let key = self.key;
        let text = match (value, self.kind) {
            (SettingValue::List(_), Kind::List) => return Ok(()),
            (SettingValue::Str(_), Kind::List) => return Ok(()),
            (SettingValue::List(items), _) => {
                return Err(Error::illegal_argument(format!(
                    "Failed to parse value [{}] for setting [{key}]: a list is not allowed",
                    items.join(",")
                )))
            }
            (SettingValue::Str(s), _) => s.as_str(),
        };
        match self.kind {
            Kind::Int { min, max } => {
                let n: i64 = text.trim().parse().map_err(|_| {
                    Error::illegal_argument(format!(
                        "Failed to parse value [{text}] for setting [{key}]"
                    ))
                    .caused_by(Error::new(
                        "number_format_exception",
                        400,
                        format!("For input string: \"{text}\""),
                    ))
                })?;
                if n < min {
                    return Err(Error::illegal_argument(format!(
                        "Failed to parse value [{text}] for setting [{key}] must be >= {min}"
                    )));
                }
                if n > max {
                    return Err(Error::illegal_argument(format!(
                        "Failed to parse value [{text}] for setting [{key}] must be <= {max}"
                    )));
                }
            }
            Kind::Double { min, max } => {
                let n: f64 = text.trim().parse().map_err(|_| {
                    Error::illegal_argument(format!(
                        "Failed to parse value [{text}] for setting [{key}]"
                    ))
                    .caused_by(Error::new(
                        "number_format_exception",
                        400,
                        format!("For input string: \"{text}\""),
                    ))
                })?;
                if n < min {
                    return Err(Error::illegal_argument(format!(
                        "Failed to parse value [{text}] for setting [{key}] must be >= {}",
                        java_double(min)
                    )));
                }
                if n > max {
                    return Err(Error::illegal_argument(format!(
                        "Failed to parse value [{text}] for setting [{key}] must be <= {}",
                        java_double(max)
                    )));
                }
            }
            Kind::Check(check) => check(key, text)?,
            Kind::Bool => {
                if text != "true" && text != "false" {
                    return Err(Error::illegal_argument(format!(
                        "Failed to parse value [{text}] as only [true] or [false] are allowed."
                    )));
                }
            }
            Kind::Time => {
                crate::time::parse_time_value(text, key)?;
            }
            Kind::ByteSize => {
                parse_byte_size(text, key)?;
            }
            Kind::Enum(allowed) => {
                if !allowed.contains(&text) {
                    return Err(Error::illegal_argument(format!(
                        "Failed to parse value [{text}] for setting [{key}]: must be one of [{}]",
                        allowed.join(", ")
                    )));
                }
            }
            Kind::OneOf(allowed) => {
                if !allowed.contains(&text) {
                    return Err(Error::illegal_argument(format!(
                        "Setting value must be one of [{}]",
                        allowed.join(", ")
                    )));
                }
            }
            Kind::Str | Kind::List => {}
        }
        Ok(())
    }
}

/// A double as Java's `Double.toString` writes it in OpenSearch's messages: `2.0`, `0.5`,
/// `-9.5367431640625E-7`, `1.0E7`.
pub fn java_double(value: f64) -> String {
    if value == 0.0 || value.is_nan() || value.is_infinite() {
        return match value {
            v if v.is_nan() => "NaN".to_string(),
            v if v == f64::INFINITY => "Infinity".to_string(),
            v if v == f64::NEG_INFINITY => "-Infinity".to_string(),
            v if v.is_sign_negative() => "-0.0".to_string(),
            _ => "0.0".to_string(),
        };
    }
    let magnitude = value.abs();
    if (1e-3..1e7).contains(&magnitude) {
        // `{:?}` is the shortest representation that reads back, with a `.0` for integers
        return format!("{value:?}");
    }
    let text = format!("{value:e}");
    let (mantissa, exponent) = text.split_once('e').expect("exponent form");
    let mantissa = if mantissa.contains('.') {
        mantissa.to_string()
    } else {
        format!("{mantissa}.0")
    };
    format!("{mantissa}E{exponent}")
}

/// Parses a byte size (`100mb`, `1gb`, `512b`, a bare number of bytes).
/// OpenSearch's human byte sizes (`ByteSizeValue`): `3.3kb`, `379b` (one decimal, truncated, `.0` dropped).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [(&str, u64); 5] = [
        ("pb", 1 << 50),
        ("tb", 1 << 40),
        ("gb", 1 << 30),
        ("mb", 1 << 20),
        ("kb", 1 << 10),
    ];
    for (suffix, size) in UNITS {
        if bytes >= size {
            let tenths = ((bytes as u128 * 10) / size as u128) as u64;
            return if tenths.is_multiple_of(10) {
                format!("{}{suffix}", tenths / 10)
            } else {
                format!("{}.{}{suffix}", tenths / 10, tenths % 10)
            };
        }
    }
    format!("{bytes}b")
}

/// Parses a byte size as OpenSearch's `ByteSizeValue.parseBytesSizeValue` does: the units
/// `b`, `k`/`kb`, `m`/`mb`, `g`/`gb`, `t`/`tb`, `p`/`pb` in any case (the public nyc_taxis index
/// body sets `"4g"`), whole numbers only (a fraction is OpenSearch's error). A bare number of
/// bytes is accepted too, more leniently than OpenSearch, which only takes `0` and `-1` bare.
pub fn parse_byte_size(value: &str, setting: &str) -> Result<u64> {
    let lower = value.trim().to_ascii_lowercase();
    const UNITS: [(&str, u64); 11] = [
        ("pb", 1u64 << 50),
        ("p", 1 << 50),
        ("tb", 1 << 40),
        ("t", 1 << 40),
        ("gb", 1 << 30),
        ("g", 1 << 30),
        ("mb", 1 << 20),
        ("m", 1 << 20),
        ("kb", 1 << 10),
        ("k", 1 << 10),
        ("b", 1),
    ];
    let (number, factor) = match UNITS.iter().find(|(suffix, _)| lower.ends_with(suffix)) {
        Some((suffix, factor)) => (lower[..lower.len() - suffix.len()].trim(), *factor),
        None if !lower.is_empty() && lower.bytes().all(|b| b.is_ascii_digit()) => {
            (lower.as_str(), 1)
        }
        None => {
            return Err(Error::illegal_argument(format!(
                "failed to parse setting [{setting}] with value [{value}] as a size in bytes: unit is missing or unrecognized"
            )))
        }
    };
    let number_error = || {
        Error::new(
            "number_format_exception",
            400,
            format!("For input string: \"{number}\""),
        )
    };
    let n: i64 = match number.parse() {
        Ok(n) => n,
        Err(_) if number.parse::<f64>().is_ok() => {
            let reason = format!(
                "Failed to parse bytes value [{value}]. Fractional bytes values have been deprecated since Legacy 6.2. Use non-fractional bytes values instead: found for setting [{setting}]"
            );
            return Err(Error::illegal_argument(reason.clone())
                .caused_by(Error::new("parse_exception", 400, reason).caused_by(number_error())));
        }
        Err(_) => {
            return Err(Error::illegal_argument(format!(
                "Failed to parse value [{value}] for setting [{setting}]"
            ))
            .caused_by(number_error()))
        }
    };
    if n < 0 {
        return Err(Error::illegal_argument(format!(
            "Values less than -1 bytes are not supported: {value}"
        )));
    }
    Ok((n as u64).saturating_mul(factor))
}

/// The registry: a fixed table of settings plus prefixes whose keys are accepted as given.
pub struct Registry {
    defs: &'static [SettingDef],
    open_prefixes: &'static [&'static str],
    scope: Scope,
}

impl Registry {
    pub const fn new(
        scope: Scope,
        defs: &'static [SettingDef],
        open_prefixes: &'static [&'static str],
    ) -> Self {
        Registry {
            defs,
            open_prefixes,
            scope,
        }
    }

    pub fn def(&self, key: &str) -> Option<&SettingDef> {
        self.defs.iter().find(|d| d.key == key)
    }

    pub fn defs(&self) -> &[SettingDef] {
        self.defs
    }

    fn is_open(&self, key: &str) -> bool {
        self.open_prefixes.iter().any(|p| key.starts_with(p))
    }

    /// Validates every key and value; `updating` also rejects static settings.
    pub fn validate(&self, settings: &Settings, updating: bool, target: &str) -> Result<()> {
        let mut static_keys = Vec::new();
        for (key, value) in settings.iter() {
            let Some(def) = self.def(key) else {
                if self.is_open(key) {
                    continue;
                }
                let reason = match self.scope {
                    Scope::Index => format!(
                        "unknown setting [{key}] please check that any required plugins are installed, or check the breaking changes documentation for removed settings"
                    ),
                    Scope::Cluster => format!("{target} setting [{key}], not recognized"),
                };
                return Err(Error::illegal_argument(reason));
            };
            if let Some(value) = value {
                def.validate(value)?;
            }
            if updating && !def.dynamic {
                static_keys.push(key.to_string());
            }
        }
        if !static_keys.is_empty() {
            return Err(Error::illegal_argument(format!(
                "Can't update non dynamic settings [[{}]] for open indices [{target}]",
                static_keys.join(", ")
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    static DEFS: &[SettingDef] = &[
        SettingDef {
            key: "index.number_of_shards",
            scope: Scope::Index,
            dynamic: false,
            kind: Kind::Int { min: 1, max: 1024 },
            default: "1",
        },
        SettingDef {
            key: "index.refresh_interval",
            scope: Scope::Index,
            dynamic: true,
            kind: Kind::Time,
            default: "1s",
        },
        SettingDef {
            key: "index.hidden",
            scope: Scope::Index,
            dynamic: true,
            kind: Kind::Bool,
            default: "false",
        },
    ];
    static REGISTRY: Registry = Registry::new(Scope::Index, DEFS, &["index.analysis."]);

    #[test]
    fn flattens_nested_and_flat_forms_alike() {
        let nested = Settings::from_json(
            &json!({"index": {"number_of_shards": 3, "refresh_interval": "5s"}}),
        )
        .unwrap();
        let flat = Settings::from_json(
            &json!({"index.number_of_shards": "3", "index.refresh_interval": "5s"}),
        )
        .unwrap();
        assert_eq!(nested, flat);
        assert_eq!(nested.get_str("index.number_of_shards"), Some("3"));
        assert_eq!(
            nested.to_nested_json(),
            json!({"index": {"number_of_shards": "3", "refresh_interval": "5s"}})
        );
    }

    #[test]
    fn prefix_is_added_to_bare_index_settings() {
        let s = Settings::from_json(&json!({"number_of_shards": 2}))
            .unwrap()
            .with_prefix("index.");
        assert_eq!(s.get_str("index.number_of_shards"), Some("2"));
    }

    #[test]
    fn validation_messages_follow_opensearch() {
        let bad = Settings::from_json(&json!({"index.number_of_shards": 0})).unwrap();
        let e = REGISTRY.validate(&bad, false, "x").unwrap_err();
        assert_eq!(
            e.reason(),
            "Failed to parse value [0] for setting [index.number_of_shards] must be >= 1"
        );
        let unknown = Settings::from_json(&json!({"index.bogus": 1})).unwrap();
        assert!(REGISTRY
            .validate(&unknown, false, "x")
            .unwrap_err()
            .reason()
            .starts_with("unknown setting [index.bogus]"));
        let open =
            Settings::from_json(&json!({"index.analysis.analyzer.a.type": "standard"})).unwrap();
        REGISTRY.validate(&open, false, "x").unwrap();
        let static_update = Settings::from_json(&json!({"index.number_of_shards": 2})).unwrap();
        assert!(REGISTRY
            .validate(&static_update, true, "[idx/abc]")
            .unwrap_err()
            .reason()
            .starts_with("Can't update non dynamic settings"));
        let bool_bad = Settings::from_json(&json!({"index.hidden": "maybe"})).unwrap();
        assert_eq!(
            REGISTRY
                .validate(&bool_bad, true, "x")
                .unwrap_err()
                .reason(),
            "Failed to parse value [maybe] as only [true] or [false] are allowed."
        );
    }

    #[test]
    fn merge_applies_resets() {
        let mut base = Settings::from_json(&json!({"a.b": 1, "a.c": 2, "d": 3})).unwrap();
        base.merge(&Settings::from_json(&json!({"a.b": null, "d": 4})).unwrap());
        assert_eq!(base.to_flat_json(), json!({"a.c": "2", "d": "4"}));
        base.merge(&Settings::from_json(&json!({"a.*": null})).unwrap());
        assert_eq!(base.to_flat_json(), json!({"d": "4"}));
    }

    #[test]
    fn byte_sizes() {
        assert_eq!(parse_byte_size("100mb", "x").unwrap(), 100 << 20);
        assert_eq!(parse_byte_size("512", "x").unwrap(), 512);
        assert!(parse_byte_size("lots", "x").is_err());
        // every unit OpenSearch accepts, in any case (nyc_taxis's index body has "4g")
        for (text, bytes) in [
            ("4g", 4u64 << 30),
            ("4G", 4 << 30),
            ("4gb", 4 << 30),
            ("2T", 2 << 40),
            ("1p", 1 << 50),
            ("1PB", 1 << 50),
            ("10KB", 10 << 10),
            ("3k", 3 << 10),
            (" 5m ", 5 << 20),
            ("512b", 512),
        ] {
            assert_eq!(parse_byte_size(text, "x").unwrap(), bytes, "{text}");
        }
        // OpenSearch 2.19.6's errors for a fraction, an unknown unit and a negative size
        let reason = |text: &str| parse_byte_size(text, "x").unwrap_err().reason().to_string();
        assert!(reason("0.5gb").starts_with("Failed to parse bytes value [0.5gb]. Fractional"));
        assert_eq!(
            reason("1kib"),
            "Failed to parse value [1kib] for setting [x]"
        );
        assert_eq!(
            reason("-2b"),
            "Values less than -1 bytes are not supported: -2b"
        );
    }

    #[test]
    fn doubles_and_checks() {
        let def = SettingDef {
            key: "index.merge.policy.deletes_pct_allowed",
            scope: Scope::Index,
            dynamic: true,
            kind: Kind::Double {
                min: 5.0,
                max: 50.0,
            },
            default: "20.0",
        };
        def.validate(&SettingValue::Str("33.5".into())).unwrap();
        assert_eq!(
            def.validate(&SettingValue::Str("60".into()))
                .unwrap_err()
                .reason(),
            "Failed to parse value [60] for setting [index.merge.policy.deletes_pct_allowed] must be <= 50.0"
        );
        let e = def.validate(&SettingValue::Str("abc".into())).unwrap_err();
        assert_eq!(
            e.reason(),
            "Failed to parse value [abc] for setting [index.merge.policy.deletes_pct_allowed]"
        );
        fn only_x(key: &str, value: &str) -> Result<()> {
            if value == "x" {
                Ok(())
            } else {
                Err(Error::illegal_argument(format!(
                    "{key} wants x, not {value}"
                )))
            }
        }
        let def = SettingDef {
            kind: Kind::Check(only_x),
            ..def
        };
        def.validate(&SettingValue::Str("x".into())).unwrap();
        assert_eq!(
            def.validate(&SettingValue::Str("y".into()))
                .unwrap_err()
                .reason(),
            "index.merge.policy.deletes_pct_allowed wants x, not y"
        );
    }

    #[test]
    fn doubles_render_like_java() {
        assert_eq!(java_double(2.0), "2.0");
        assert_eq!(java_double(0.0), "0.0");
        assert_eq!(java_double(0.5), "0.5");
        assert_eq!(java_double(50.0), "50.0");
        assert_eq!(java_double(-1.0 / 1048576.0), "-9.5367431640625E-7");
        assert_eq!(java_double(1e7), "1.0E7");
        assert_eq!(java_double(0.0009765625), "9.765625E-4");
    }
}
