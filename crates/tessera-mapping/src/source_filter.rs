//! `_source` filtering: `includes`/`excludes` with `*` wildcards on full dotted paths.
//!
//! Used by search and get responses (`_source: ["a.*"]`) and by the mapping's `_source`
//! options. Including an object includes everything below it; excluding wins over including.

use serde_json::{Map, Value};

use crate::dynamic::simple_match;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceFilter {
    pub includes: Vec<String>,
    pub excludes: Vec<String>,
}

impl SourceFilter {
    pub fn new(includes: Vec<String>, excludes: Vec<String>) -> SourceFilter {
        SourceFilter { includes, excludes }
    }

    pub fn is_noop(&self) -> bool {
        (self.includes.is_empty() || self.includes.iter().any(|p| p == "*"))
            && self.excludes.is_empty()
    }

    pub fn apply(&self, source: &Value) -> Value {
        match source {
            Value::Object(map) => {
                Value::Object(self.filter_object(map, "", self.includes.is_empty()))
            }
            other => other.clone(),
        }
    }

    fn excluded(&self, path: &str) -> bool {
        self.excludes.iter().any(|p| simple_match(p, path))
    }

    fn included(&self, path: &str) -> bool {
        self.includes.iter().any(|p| simple_match(p, path))
    }

    fn may_include_below(&self, path: &str) -> bool {
        self.includes
            .iter()
            .any(|p| prefix_possible(p, &format!("{path}.")))
    }

    fn filter_object(
        &self,
        map: &Map<String, Value>,
        prefix: &str,
        all: bool,
    ) -> Map<String, Value> {
        let mut out = Map::new();
        for (key, value) in map {
            let path = if prefix.is_empty() {
                key.clone()
            } else {
                format!("{prefix}.{key}")
            };
            if self.excluded(&path) {
                continue;
            }
            let fully = all || self.included(&path);
            if let Some(kept) = self.filter_value(value, &path, fully) {
                out.insert(key.clone(), kept);
            }
        }
        out
    }

    fn filter_value(&self, value: &Value, path: &str, fully: bool) -> Option<Value> {
        match value {
            Value::Object(inner) => {
                if !fully && !self.may_include_below(path) {
                    return None;
                }
                let filtered = self.filter_object(inner, path, fully);
                if filtered.is_empty() && !fully {
                    None
                } else {
                    Some(Value::Object(filtered))
                }
            }
            Value::Array(items) => {
                if !fully && !self.may_include_below(path) {
                    return None;
                }
                let kept: Vec<Value> = items
                    .iter()
                    .filter_map(|item| self.filter_value(item, path, fully))
                    .collect();
                if kept.is_empty() && !fully {
                    None
                } else {
                    Some(Value::Array(kept))
                }
            }
            scalar => fully.then(|| scalar.clone()),
        }
    }
}

/// Whether some string starting with `prefix` could match the `*` pattern.
fn prefix_possible(pattern: &str, prefix: &str) -> bool {
    let mut p = pattern.chars();
    for c in prefix.chars() {
        match p.next() {
            Some('*') => return true,
            Some(pc) if pc == c => {}
            Some(_) => return false,
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn filter(includes: &[&str], excludes: &[&str], source: Value) -> Value {
        SourceFilter::new(
            includes.iter().map(|s| s.to_string()).collect(),
            excludes.iter().map(|s| s.to_string()).collect(),
        )
        .apply(&source)
    }

    #[test]
    fn includes_and_excludes() {
        let doc = json!({"a": 1, "b": {"c": 2, "d": 3}, "e": [{"f": 1, "g": 2}], "h": "x"});
        assert_eq!(filter(&["a"], &[], doc.clone()), json!({"a": 1}));
        assert_eq!(
            filter(&["b"], &[], doc.clone()),
            json!({"b": {"c": 2, "d": 3}})
        );
        assert_eq!(filter(&["b.c"], &[], doc.clone()), json!({"b": {"c": 2}}));
        assert_eq!(
            filter(&["b.*"], &["b.d"], doc.clone()),
            json!({"b": {"c": 2}})
        );
        assert_eq!(filter(&["e.f"], &[], doc.clone()), json!({"e": [{"f": 1}]}));
        assert_eq!(
            filter(&[], &["b", "e"], doc.clone()),
            json!({"a": 1, "h": "x"})
        );
        assert_eq!(
            filter(&["*"], &["h"], doc.clone()),
            json!({"a": 1, "b": {"c": 2, "d": 3}, "e": [{"f": 1, "g": 2}]})
        );
        assert_eq!(filter(&["zzz"], &[], doc.clone()), json!({}));
        assert_eq!(filter(&["*.c"], &[], doc), json!({"b": {"c": 2}}));
    }

    #[test]
    fn noop_detection() {
        assert!(SourceFilter::default().is_noop());
        assert!(SourceFilter::new(vec!["*".into()], vec![]).is_noop());
        assert!(!SourceFilter::new(vec!["a".into()], vec![]).is_noop());
    }
}
