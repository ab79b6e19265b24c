//! URL parameters as OpenSearch reads them (`true`/`false`/bare flags, integers, time values),
//! with its error messages. They live here rather than in the REST layer because a search's
//! parameters travel with its shard requests and are read again where the shard runs.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::{Error, Result};

/// Typed reads of a parameter map.
pub trait ParamMap {
    fn param(&self, name: &str) -> Option<&str>;

    /// A boolean parameter: a bare flag or `true` is true; OpenSearch rejects other values.
    fn param_bool(&self, name: &str, default: bool) -> Result<bool> {
        match self.param(name) {
            None => Ok(default),
            Some("" | "true") => Ok(true),
            Some("false") => Ok(false),
            Some(other) => Err(Error::illegal_argument(format!(
                "Failed to parse value [{other}] as only [true] or [false] are allowed."
            ))),
        }
    }

    fn param_i64(&self, name: &str) -> Result<Option<i64>> {
        match self.param(name) {
            None => Ok(None),
            Some(text) => text.trim().parse::<i64>().map(Some).map_err(|_| {
                Error::illegal_argument(format!(
                    "Failed to parse int parameter [{name}] with value [{text}]"
                ))
                .caused_by(Error::new(
                    "number_format_exception",
                    400,
                    format!("For input string: \"{text}\""),
                ))
            }),
        }
    }

    fn param_time(&self, name: &str) -> Result<Option<Duration>> {
        match self.param(name) {
            None => Ok(None),
            Some(text) => Ok(crate::time::parse_time_value(text, name)?.map(Duration::from_millis)),
        }
    }
}

impl ParamMap for BTreeMap<String, String> {
    fn param(&self, name: &str) -> Option<&str> {
        self.get(name).map(String::as_str)
    }
}

/// The strings of a JSON array (anything else, and non-string elements, are left out): how a
/// node report reads the lists its parameters carry.
pub fn json_strings(value: &serde_json::Value) -> Vec<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn booleans_accept_bare_flags_and_reject_other_words() {
        let p = params(&[("a", ""), ("b", "false"), ("c", "yes")]);
        assert!(p.param_bool("a", false).unwrap());
        assert!(!p.param_bool("b", true).unwrap());
        assert!(p.param_bool("missing", true).unwrap());
        assert_eq!(
            p.param_bool("c", false).unwrap_err().reason(),
            "Failed to parse value [yes] as only [true] or [false] are allowed."
        );
    }

    #[test]
    fn integers_and_times_fail_with_opensearch_messages() {
        let p = params(&[("n", "12"), ("bad", "x1"), ("t", "2s")]);
        assert_eq!(p.param_i64("n").unwrap(), Some(12));
        let e = p.param_i64("bad").unwrap_err();
        assert_eq!(
            e.reason(),
            "Failed to parse int parameter [bad] with value [x1]"
        );
        assert_eq!(p.param_time("t").unwrap(), Some(Duration::from_secs(2)));
        assert_eq!(p.param_time("none").unwrap(), None);
    }

    #[test]
    fn json_strings_keeps_the_strings_of_an_array() {
        let value = serde_json::json!(["a", 1, "b", null]);
        assert_eq!(json_strings(&value), ["a", "b"]);
        assert!(json_strings(&serde_json::json!("a")).is_empty());
    }
}
