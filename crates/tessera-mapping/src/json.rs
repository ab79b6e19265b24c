//! A borrowed JSON tree for parsing documents on the write path.
//!
//! `serde_json::Value` (with insertion-ordered maps) hashes every key and allocates every
//! string; a document is walked once, in order, so a tree of `Vec`s that borrows its strings
//! from the request body (escaped strings excepted) does the same job for a fraction of the
//! cost. Leaves are turned into `Value`s only where the value coercions need one.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::hash::BuildHasher;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// The start of the error for a member that appears twice in one object.
pub const DUPLICATE_FIELD: &str = "Duplicate field";

/// A JSON value whose strings borrow from the parsed bytes where possible.
#[derive(Clone, Debug, PartialEq)]
pub enum Json<'a> {
    Null,
    Bool(bool),
    Number(Number),
    Str(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    /// Members in document order (duplicates kept; the last one wins on conversion).
    Object(Vec<(Cow<'a, str>, Json<'a>)>),
}

impl<'a> Json<'a> {
    /// Parses a JSON document, borrowing from `bytes`.
    pub fn parse(bytes: &'a [u8]) -> serde_json::Result<Json<'a>> {
        serde_json::from_slice(bytes)
    }

    pub fn is_number(&self) -> bool {
        matches!(self, Json::Number(_))
    }

    pub fn is_object(&self) -> bool {
        matches!(self, Json::Object(_))
    }

    /// The tree of a `serde_json::Value` (owning its strings).
    pub fn from_value(value: &Value) -> Json<'static> {
        match value {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => Json::Number(n.clone()),
            Value::String(s) => Json::Str(Cow::Owned(s.clone())),
            Value::Array(items) => Json::Array(items.iter().map(Json::from_value).collect()),
            Value::Object(map) => Json::Object(
                map.iter()
                    .map(|(k, v)| (Cow::Owned(k.clone()), Json::from_value(v)))
                    .collect(),
            ),
        }
    }

    /// The equivalent `serde_json::Value`.
    pub fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => Value::Number(n.clone()),
            Json::Str(s) => Value::String(s.to_string()),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(members) => {
                let mut map = Map::with_capacity(members.len());
                for (key, value) in members {
                    map.insert(key.to_string(), value.to_value());
                }
                Value::Object(map)
            }
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Json<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Json<'a>, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_none<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Json<'de>, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Json<'de>, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Json<'de>, E> {
        Ok(Number::from_f64(v).map_or(Json::Null, Json::Number))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Json<'de>, E> {
        Ok(Json::Str(Cow::Owned(v.to_string())))
    }

    fn visit_string<E>(self, v: String) -> Result<Json<'de>, E> {
        Ok(Json::Str(Cow::Owned(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        // serde_json gives no size hint; documents commonly have tens of members, and
        // regrowing from a small list cost ~5% of a bulk load's CPU (the list lives only
        // while the document is parsed)
        let mut members: Vec<(Cow<'de, str>, Json<'de>)> =
            Vec::with_capacity(map.size_hint().unwrap_or(32));
        let mut seen: Option<HashSet<Cow<'de, str>>> = None;
        // the first members' name hashes, so that the scan compares names only on a match
        let mut hashes = [0u64; SCAN_LIMIT];
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            // OpenSearch's parser rejects duplicate members; small objects are scanned,
            // large ones hashed
            let duplicate = match &mut seen {
                Some(set) => !set.insert(key.clone()),
                None if members.len() < SCAN_LIMIT => {
                    let hash = rustc_hash::FxBuildHasher.hash_one(key.as_bytes());
                    let count = members.len();
                    hashes[count] = hash;
                    hashes[..count]
                        .iter()
                        .zip(&members)
                        .any(|(seen_hash, (k, _))| *seen_hash == hash && *k == key)
                }
                None => {
                    let mut set: HashSet<Cow<'de, str>> =
                        members.iter().map(|(k, _)| k.clone()).collect();
                    let duplicate = !set.insert(key.clone());
                    seen = Some(set);
                    duplicate
                }
            };
            if duplicate {
                return Err(serde::de::Error::custom(format!(
                    "{DUPLICATE_FIELD} '{key}'"
                )));
            }
            members.push((key, map.next_value()?));
        }
        Ok(Json::Object(members))
    }
}

/// Objects with fewer members than this are checked for duplicates by a scan.
const SCAN_LIMIT: usize = 32;

/// A member name, borrowed when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Key<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key<'a>, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_parse_to_the_nearest_double_as_java_parses_them() {
        // serde_json's default parsing is off by one ulp for this one; a document's double
        // (and a request's bound or sort value) must be the value Java would read
        for text in ["3644.6287993839837", "0.1", "5865461.490515818", "1e-300"] {
            let parsed = Json::parse(text.as_bytes()).unwrap().to_value();
            let exact: f64 = text.parse().unwrap();
            assert_eq!(parsed.as_f64(), Some(exact), "{text}");
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(value.as_f64(), Some(exact), "{text}");
        }
    }

    #[test]
    fn parses_and_converts_like_serde_json() {
        let text = br#"{"a": 1, "b": [true, null, 2.5, "x\ny"], "c": {"d": "e", "f": -3}}"#;
        let parsed = Json::parse(text).unwrap();
        let value: Value = serde_json::from_slice(text).unwrap();
        assert_eq!(parsed.to_value(), value);
        let Json::Object(members) = &parsed else {
            panic!()
        };
        assert!(matches!(members[0].0, Cow::Borrowed("a")));
        let Json::Array(items) = &members[1].1 else {
            panic!()
        };
        // escaped strings are owned, plain ones borrowed
        assert!(matches!(&items[3], Json::Str(Cow::Owned(s)) if s == "x\ny"));
        let Json::Object(inner) = &members[2].1 else {
            panic!()
        };
        assert!(matches!(&inner[0].1, Json::Str(Cow::Borrowed("e"))));
        let e = Json::parse(br#"{"k": 1, "k": 2}"#).unwrap_err();
        assert!(e.to_string().starts_with("Duplicate field 'k'"), "{e}");
        let many: Vec<String> = (0..40).map(|i| format!("\"f{i}\": {i}")).collect();
        let text = format!("{{{}, \"f3\": 0}}", many.join(", "));
        assert!(Json::parse(text.as_bytes()).is_err());
        assert!(Json::parse(format!("{{{}}}", many.join(", ")).as_bytes()).is_ok());
        let _ = json!(null);
        assert!(Json::parse(b"{\"a\": }").is_err());
    }
}
