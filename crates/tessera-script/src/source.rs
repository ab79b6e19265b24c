//! A stored document as a script sees it and what the script leaves of it: OpenSearch reads a
//! document's `_source` for `ctx._source` into `LinkedHashMap`s (key order kept), while maps a
//! script makes (`[:]`, `params`) are `HashMap`s. [`Document`] converts the JSON into values
//! and remembers which maps came from it, so that writing the result back keeps the stored
//! keys' order where OpenSearch keeps it and uses Java's hash order elsewhere.

use std::collections::HashSet;
use std::sync::Arc;

use crate::value::{lock, JavaMap, Map, Value};

/// The maps read from one JSON document (kept alive, so their addresses stay theirs).
#[derive(Default)]
pub struct Document {
    linked: Vec<Map>,
    addresses: HashSet<usize>,
}

impl Document {
    /// `json` as script values; its objects are remembered as linked (insertion-ordered) maps.
    pub fn read(&mut self, json: &serde_json::Value) -> Value {
        match json {
            serde_json::Value::Object(fields) => {
                let mut map = JavaMap::default();
                for (key, value) in fields {
                    map.insert(Value::str(key), self.read(value));
                }
                let value = Value::new_map(map);
                if let Value::Map(map) = &value {
                    self.addresses.insert(Arc::as_ptr(map) as usize);
                    self.linked.push(map.clone());
                }
                value
            }
            serde_json::Value::Array(items) => {
                Value::new_list(items.iter().map(|item| self.read(item)).collect())
            }
            other => Value::from_json(other),
        }
    }

    /// `value` as JSON: maps read by [`Document::read`] in insertion order, others in Java's
    /// `HashMap` order.
    pub fn write(&self, value: &Value) -> serde_json::Value {
        match value {
            Value::Map(map) => {
                let linked = self.addresses.contains(&(Arc::as_ptr(map) as usize));
                let entries: Vec<(Value, Value)> = if linked {
                    lock(map)
                        .entries
                        .iter()
                        .map(|(k, v)| (k.0.clone(), v.clone()))
                        .collect()
                } else {
                    lock(map).java_order()
                };
                serde_json::Value::Object(
                    entries
                        .into_iter()
                        .map(|(k, v)| (k.to_java_string(), self.write(&v)))
                        .collect(),
                )
            }
            Value::List(items) => {
                let items: Vec<Value> = lock(items).clone();
                serde_json::Value::Array(items.iter().map(|item| self.write(item)).collect())
            }
            other => other.to_json(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn stored_maps_keep_their_order_and_new_maps_take_javas() {
        let mut document = Document::default();
        let source =
            document.read(&json!({"b": 1, "a": {"y": 1, "x": 2}, "c": [{"z": 1, "d": 2}]}));
        let Value::Map(map) = &source else { panic!() };
        let mut fresh = JavaMap::default();
        for (k, v) in [("b", 1), ("a", 2), ("zz", 3)] {
            fresh.insert(Value::str(k), Value::Int(v));
        }
        lock(map).insert(Value::str("new"), Value::new_map(fresh));
        lock(map).remove(&Value::str("b"));
        lock(map).insert(Value::str("b"), Value::Long(5));
        assert_eq!(
            serde_json::to_string(&document.write(&source)).unwrap(),
            r#"{"a":{"y":1,"x":2},"c":[{"z":1,"d":2}],"new":{"zz":3,"a":2,"b":1},"b":5}"#
        );
    }
}
