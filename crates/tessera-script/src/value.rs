//! The values a script computes with, and the Java behaviour OpenSearch shows for them:
//! `toString` (`2.0`, `1.0E20`, `[1, 2]`, `{a=1}`), `equals` and `hashCode`, and the iteration
//! order of a `java.util.HashMap` (what `[:]`, `new HashMap()` and `params` are), which
//! `toString` and `for (k : map.keySet())` show.
//!
//! Numbers, booleans and null are plain data, so numeric work never allocates; strings are
//! shared (`Arc<str>`), lists and maps are shared and mutable as in Java.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard};

use indexmap::IndexMap;
use tessera_common::settings::java_double;

use crate::doc::GeoPoint;

pub type List = Arc<Mutex<Vec<Value>>>;
pub type Map = Arc<Mutex<JavaMap>>;

#[derive(Debug, Clone, Default)]
pub enum Value {
    #[default]
    Null,
    Bool(bool),
    Int(i32),
    Long(i64),
    Float(f32),
    Double(f64),
    Str(Arc<str>),
    List(List),
    Map(Map),
    /// A `ZonedDateTime` in UTC, as epoch milliseconds (what date doc values hold).
    Date(i64),
    Geo(GeoPoint),
    /// `doc['field']`: the field's values of the current document, by compiled slot.
    DocField(u32),
    /// A regex literal (`java.util.regex.Pattern`).
    Pattern(Arc<crate::regex::Pattern>),
    /// `java.util.regex.Matcher`: stateful, and shared as Java objects are.
    Matcher(Arc<Mutex<crate::regex::Matcher>>),
}

/// Locks a shared list or map (a script runs on one thread; the lock is never contended).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poison| poison.into_inner())
}

impl Value {
    pub fn str(s: &str) -> Value {
        Value::Str(Arc::from(s))
    }

    pub fn new_list(items: Vec<Value>) -> Value {
        Value::List(Arc::new(Mutex::new(items)))
    }

    pub fn new_map(map: JavaMap) -> Value {
        Value::Map(Arc::new(Mutex::new(map)))
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn is_numeric(&self) -> bool {
        matches!(
            self,
            Value::Int(_) | Value::Long(_) | Value::Float(_) | Value::Double(_)
        )
    }

    /// The number as a double (numbers only).
    pub fn as_f64(&self) -> Option<f64> {
        Some(match *self {
            Value::Int(v) => v as f64,
            Value::Long(v) => v as f64,
            Value::Float(v) => v as f64,
            Value::Double(v) => v,
            _ => return None,
        })
    }

    /// The name Painless gives the value's class in `def` cast errors: primitives by their
    /// primitive name, other classes by their Java name.
    pub fn def_type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "int",
            Value::Long(_) => "long",
            Value::Float(_) => "float",
            Value::Double(_) => "double",
            other => other.java_class(),
        }
    }

    /// The value's Java class name (`java.lang.Integer`), as in `dynamic method` errors.
    pub fn java_class(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "java.lang.Boolean",
            Value::Int(_) => "java.lang.Integer",
            Value::Long(_) => "java.lang.Long",
            Value::Float(_) => "java.lang.Float",
            Value::Double(_) => "java.lang.Double",
            Value::Str(_) => "java.lang.String",
            Value::List(_) => "java.util.ArrayList",
            Value::Map(_) => "java.util.HashMap",
            Value::Date(_) => "org.opensearch.script.JodaCompatibleZonedDateTime",
            Value::Geo(_) => "org.opensearch.common.geo.GeoPoint",
            Value::DocField(_) => "org.opensearch.index.fielddata.ScriptDocValues",
            Value::Pattern(_) => "java.util.regex.Pattern",
            Value::Matcher(_) => "java.util.regex.Matcher",
        }
    }

    /// Java's `equals` (what Painless's `==` calls for objects); numbers of different classes
    /// are not equal here (`Integer.equals(Long)` is false), see `compile` for `==`.
    pub fn java_equals(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Long(a), Value::Long(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => {
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
            }
            (Value::Double(a), Value::Double(b)) => {
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
            }
            (Value::Str(a), Value::Str(b)) => a == b,
            (Value::List(a), Value::List(b)) => {
                if Arc::ptr_eq(a, b) {
                    return true;
                }
                let (a, b) = (lock(a).clone(), lock(b).clone());
                a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| x.java_equals(y))
            }
            (Value::Map(a), Value::Map(b)) => {
                if Arc::ptr_eq(a, b) {
                    return true;
                }
                let (a, b) = (lock(a).clone(), lock(b).clone());
                a.len() == b.len()
                    && a.entries
                        .iter()
                        .all(|(k, v)| b.get(&k.0).is_some_and(|w| v.java_equals(w)))
            }
            (Value::Date(a), Value::Date(b)) => a == b,
            (Value::Geo(a), Value::Geo(b)) => a == b,
            (Value::DocField(a), Value::DocField(b)) => a == b,
            // identity, as these classes do not override `equals`
            (Value::Pattern(a), Value::Pattern(b)) => Arc::ptr_eq(a, b),
            (Value::Matcher(a), Value::Matcher(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// Java's `hashCode`.
    pub fn java_hash(&self) -> i32 {
        match self {
            Value::Null => 0,
            Value::Bool(b) => {
                if *b {
                    1231
                } else {
                    1237
                }
            }
            Value::Int(v) => *v,
            Value::Long(v) => (*v ^ ((*v as u64) >> 32) as i64) as i32,
            Value::Float(v) => {
                let v = if v.is_nan() { f32::NAN } else { *v };
                v.to_bits() as i32
            }
            Value::Double(v) => {
                let bits = if v.is_nan() {
                    f64::NAN.to_bits()
                } else {
                    v.to_bits()
                };
                (bits ^ (bits >> 32)) as i32
            }
            Value::Str(s) => s
                .encode_utf16()
                .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32)),
            Value::List(l) => lock(l)
                .iter()
                .fold(1i32, |h, v| h.wrapping_mul(31).wrapping_add(v.java_hash())),
            Value::Map(m) => lock(m).entries.iter().fold(0i32, |h, (k, v)| {
                h.wrapping_add(k.0.java_hash() ^ v.java_hash())
            }),
            Value::Date(ms) => Value::Long(*ms).java_hash(),
            Value::Geo(g) => Value::Double(g.lat).java_hash() ^ Value::Double(g.lon).java_hash(),
            Value::DocField(slot) => *slot as i32,
            // identity hashes
            Value::Pattern(p) => Arc::as_ptr(p) as usize as i32,
            Value::Matcher(m) => Arc::as_ptr(m) as usize as i32,
        }
    }

    /// Java's `toString` of the value (`String.valueOf`), as string concatenation and
    /// `_execute`'s result show it.
    pub fn to_java_string(&self) -> String {
        let mut out = String::new();
        self.write_java(&mut out);
        out
    }

    pub fn write_java(&self, out: &mut String) {
        match self {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Int(v) => out.push_str(&v.to_string()),
            Value::Long(v) => out.push_str(&v.to_string()),
            Value::Float(v) => out.push_str(&java_float(*v)),
            Value::Double(v) => out.push_str(&java_double(*v)),
            Value::Str(s) => out.push_str(s),
            Value::List(l) => {
                out.push('[');
                for (i, v) in lock(l).clone().iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    v.write_java(out);
                }
                out.push(']');
            }
            Value::Map(m) => {
                out.push('{');
                let entries = lock(m).java_order();
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    k.write_java(out);
                    out.push('=');
                    v.write_java(out);
                }
                out.push('}');
            }
            Value::Date(ms) => out.push_str(&crate::builtins::date_to_string(*ms)),
            Value::Geo(g) => {
                out.push_str(&format!("{}, {}", java_double(g.lat), java_double(g.lon)))
            }
            Value::DocField(slot) => out.push_str(&format!("doc[{slot}]")),
            Value::Pattern(p) => out.push_str(p.source()),
            Value::Matcher(m) => out.push_str(&lock(m).to_java_string()),
        }
    }

    /// A JSON value as OpenSearch's parser hands it to a script: integers as `Integer` when
    /// they fit, else `Long`; other numbers as `Double`; objects as `HashMap`s.
    pub fn from_json(json: &serde_json::Value) -> Value {
        match json {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    match i32::try_from(i) {
                        Ok(v) => Value::Int(v),
                        Err(_) => Value::Long(i),
                    }
                } else if let Some(u) = n.as_u64() {
                    Value::Double(u as f64)
                } else {
                    Value::Double(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            serde_json::Value::String(s) => Value::str(s),
            serde_json::Value::Array(items) => {
                Value::new_list(items.iter().map(Value::from_json).collect())
            }
            serde_json::Value::Object(fields) => {
                let mut map = JavaMap::default();
                for (k, v) in fields {
                    map.insert(Value::str(k), Value::from_json(v));
                }
                Value::new_map(map)
            }
        }
    }

    /// The value as JSON (for `_source` updates and script fields): maps in Java's order.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match self {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(v) => J::from(*v),
            Value::Long(v) | Value::Date(v) => J::from(*v),
            Value::Float(v) => serde_json::Number::from_f64(*v as f64).map_or(J::Null, J::Number),
            Value::Double(v) => serde_json::Number::from_f64(*v).map_or(J::Null, J::Number),
            Value::Str(s) => J::String(s.to_string()),
            Value::List(l) => J::Array(lock(l).iter().map(Value::to_json).collect()),
            Value::Map(m) => J::Object(
                lock(m)
                    .java_order()
                    .into_iter()
                    .map(|(k, v)| (k.to_java_string(), v.to_json()))
                    .collect(),
            ),
            Value::Geo(g) => serde_json::json!({"lat": g.lat, "lon": g.lon}),
            Value::DocField(_) | Value::Pattern(_) | Value::Matcher(_) => J::Null,
        }
    }
}

/// Java's `Float.toString`: the shortest digits that read back as the float.
pub fn java_float(v: f32) -> String {
    if v.is_nan() || v.is_infinite() || v == 0.0 {
        return java_double(v as f64);
    }
    let magnitude = v.abs();
    if (1e-3..1e7).contains(&magnitude) {
        return format!("{v:?}");
    }
    let text = format!("{v:e}");
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    if mantissa.contains('.') {
        format!("{mantissa}E{exponent}")
    } else {
        format!("{mantissa}.0E{exponent}")
    }
}

/// A map key: a value hashed and compared as Java's `HashMap` does.
#[derive(Debug, Clone)]
pub struct Key(pub Value);

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.0.java_equals(&other.0)
    }
}

impl Eq for Key {}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_i32(self.0.java_hash());
    }
}

/// A `java.util.HashMap`: entries kept in insertion order, plus the table capacity, from which
/// the Java iteration order (by bucket, then insertion within a bucket) follows.
#[derive(Debug, Clone)]
pub struct JavaMap {
    pub entries: IndexMap<Key, Value>,
    capacity: usize,
}

impl Default for JavaMap {
    fn default() -> Self {
        JavaMap {
            entries: IndexMap::new(),
            capacity: 16,
        }
    }
}

impl JavaMap {
    /// An empty `HashMap` that a `putAll` of `n` entries is about to fill: Java sizes its table
    /// for them at once (the smallest power of two ≥ n / 0.75 + 1), which decides the order in
    /// which those entries and later ones iterate.
    pub fn sized_for_put_all(n: usize) -> JavaMap {
        let capacity = if n == 0 {
            16
        } else {
            ((n as f64 / 0.75) as usize + 1).next_power_of_two()
        };
        JavaMap {
            entries: IndexMap::new(),
            capacity,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&self, key: &Value) -> Option<&Value> {
        self.entries.get(&Key(key.clone()))
    }

    /// `put`: the previous value, or null.
    pub fn insert(&mut self, key: Value, value: Value) -> Value {
        let previous = self.entries.insert(Key(key), value).unwrap_or_default();
        // HashMap doubles its table once it holds more than 3/4 of its capacity
        while self.entries.len() * 4 > self.capacity * 3 {
            self.capacity *= 2;
        }
        previous
    }

    /// `remove`: the removed value, or null (a re-inserted key goes to its bucket's end).
    pub fn remove(&mut self, key: &Value) -> Value {
        self.entries
            .shift_remove(&Key(key.clone()))
            .unwrap_or_default()
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// The entries in the order Java's `HashMap` iterates them.
    pub fn java_order(&self) -> Vec<(Value, Value)> {
        let mask = self.capacity - 1;
        let mut entries: Vec<(usize, Value, Value)> = self
            .entries
            .iter()
            .map(|(k, v)| {
                let h = k.0.java_hash() as u32;
                ((h ^ (h >> 16)) as usize & mask, k.0.clone(), v.clone())
            })
            .collect();
        entries.sort_by_key(|(bucket, _, _)| *bucket);
        entries.into_iter().map(|(_, k, v)| (k, v)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_strings() {
        assert_eq!(Value::Double(1e20).to_java_string(), "1.0E20");
        assert_eq!(Value::Double(2.0).to_java_string(), "2.0");
        assert_eq!(Value::Float(12345678.9).to_java_string(), "1.2345679E7");
        assert_eq!(Value::Float(1.5).to_java_string(), "1.5");
        assert_eq!(
            Value::Double(0.1f32 as f64 + 0.2).to_java_string(),
            "0.30000000149011613"
        );
        let list = Value::new_list(vec![Value::Int(1), Value::Double(2.0), Value::str("x")]);
        assert_eq!(list.to_java_string(), "[1, 2.0, x]");
    }

    #[test]
    fn hash_map_iteration_order_is_javas() {
        let mut map = JavaMap::default();
        for (k, v) in [("b", 1), ("a", 2), ("zz", 3)] {
            map.insert(Value::str(k), Value::Int(v));
        }
        assert_eq!(Value::new_map(map).to_java_string(), "{zz=3, a=2, b=1}");
    }

    #[test]
    fn a_map_filled_by_put_all_has_javas_table_size() {
        // `new HashMap<>(); putAll(3 entries)` has a table of 8, not 16: `_id` (bucket 11 of
        // 16, 3 of 8) then iterates before `_index` (4)
        let mut map = JavaMap::sized_for_put_all(3);
        for k in ["b", "a", "n", "_index", "_id", "_routing"] {
            map.insert(Value::str(k), Value::Int(1));
        }
        let keys: Vec<String> = map
            .java_order()
            .into_iter()
            .map(|(k, _)| k.to_java_string())
            .collect();
        assert_eq!(keys, ["_routing", "a", "b", "_id", "_index", "n"]);
        assert_eq!(JavaMap::sized_for_put_all(12).capacity, 32);
        assert_eq!(JavaMap::sized_for_put_all(0).capacity, 16);
    }

    #[test]
    fn hashes_and_equality() {
        assert_eq!(Value::str("zz").java_hash(), 3904);
        assert_eq!(Value::Long(-1).java_hash(), 0);
        assert_eq!(Value::Bool(true).java_hash(), 1231);
        assert!(!Value::Int(1).java_equals(&Value::Long(1)));
        let a = Value::new_list(vec![Value::Int(1)]);
        let b = Value::new_list(vec![Value::Int(1)]);
        assert!(a.java_equals(&b));
    }

    #[test]
    fn json_numbers_are_integers_longs_or_doubles() {
        let v = Value::from_json(&serde_json::json!({"a": 5, "b": 5000000000i64, "c": 1.5}));
        let Value::Map(m) = v else { panic!() };
        let m = lock(&m);
        assert!(matches!(m.get(&Value::str("a")), Some(Value::Int(5))));
        assert!(matches!(
            m.get(&Value::str("b")),
            Some(Value::Long(5000000000))
        ));
        assert!(matches!(m.get(&Value::str("c")), Some(Value::Double(_))));
    }
}
