//! The aliases of an index, as OpenSearch keeps them: in the index's metadata, each a name with
//! an optional filter, routing and write-index flag. An alias is another name for one or more
//! indices: a search through it reads them (through its filter), a write through it goes to its
//! write index. Keeping them per index (not in a table of their own) makes an index carry its
//! aliases wherever its metadata goes: `_state.json`, the cluster state, a snapshot.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use tessera_common::{Error, Result};

/// One alias of an index.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AliasMetadata {
    /// A query (JSON, as given) that limits what a search through the alias sees.
    pub filter: Option<Value>,
    /// The routing a write (or get) through the alias uses.
    pub index_routing: Option<String>,
    /// The routing values a search through the alias is limited to (comma-separated).
    pub search_routing: Option<String>,
    /// `Some(true)`: writes through the alias go to this index; `Some(false)`: never here.
    pub is_write_index: Option<bool>,
    pub is_hidden: Option<bool>,
}

/// An index's aliases by name.
pub type Aliases = BTreeMap<String, AliasMetadata>;

impl AliasMetadata {
    /// Reads an alias's definition: the body of an `add` action, of `PUT /{index}/_alias/{name}`
    /// or an entry of `aliases` in a create-index body. `routing` sets both routings unless
    /// they are given. Unknown keys are ignored, as OpenSearch does.
    pub fn parse(name: &str, value: &Value) -> Result<AliasMetadata> {
        let Some(object) = value.as_object() else {
            if value.is_null() {
                return Ok(AliasMetadata::default());
            }
            return Err(Error::illegal_argument(format!(
                "alias [{name}] must be an object"
            )));
        };
        let routing = |key: &str| -> Result<Option<String>> {
            match object.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(Value::Number(n)) => Ok(Some(n.to_string())),
                Some(other) => Err(Error::illegal_argument(format!(
                    "[{key}] of alias [{name}] must be a string, got [{other}]"
                ))),
            }
        };
        let flag = |key: &str| -> Result<Option<bool>> {
            match object.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Bool(b)) => Ok(Some(*b)),
                Some(Value::String(s)) if s == "true" || s == "false" => Ok(Some(s == "true")),
                Some(other) => Err(Error::illegal_argument(format!(
                    "[{key}] of alias [{name}] must be a boolean, got [{other}]"
                ))),
            }
        };
        let both = routing("routing")?;
        let filter = match object.get("filter") {
            None | Some(Value::Null) => None,
            Some(Value::Object(f)) if f.is_empty() => None,
            Some(f @ Value::Object(_)) => Some(f.clone()),
            Some(other) => {
                return Err(Error::illegal_argument(format!(
                    "failed to parse filter for alias [{name}]: expected an object, got [{other}]"
                )))
            }
        };
        Ok(AliasMetadata {
            filter,
            index_routing: routing("index_routing")?.or_else(|| both.clone()),
            search_routing: routing("search_routing")?.or(both),
            is_write_index: flag("is_write_index")?,
            is_hidden: flag("is_hidden")?,
        })
    }

    /// OpenSearch's rendering (`GET _alias`, the cluster state): only what is set.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        if let Some(filter) = &self.filter {
            out.insert("filter".into(), filter.clone());
        }
        if let Some(routing) = &self.index_routing {
            out.insert("index_routing".into(), Value::String(routing.clone()));
        }
        if let Some(routing) = &self.search_routing {
            out.insert("search_routing".into(), Value::String(routing.clone()));
        }
        if let Some(write) = self.is_write_index {
            out.insert("is_write_index".into(), Value::Bool(write));
        }
        if let Some(hidden) = self.is_hidden {
            out.insert("is_hidden".into(), Value::Bool(hidden));
        }
        Value::Object(out)
    }

    /// The search routing values, split.
    pub fn search_routing_values(&self) -> Option<Vec<String>> {
        self.search_routing.as_deref().map(split_routing)
    }
}

/// Routing values given as `a,b`.
pub fn split_routing(routing: &str) -> Vec<String> {
    routing
        .split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(String::from)
        .collect()
}

/// Renders aliases as `{name: definition}`.
pub fn aliases_json(aliases: &Aliases) -> Value {
    Value::Object(
        aliases
            .iter()
            .map(|(name, alias)| (name.clone(), alias.to_json()))
            .collect(),
    )
}

/// Reads what [`aliases_json`] wrote (and a create-index body's `aliases`).
pub fn parse_aliases(value: &Value) -> Result<Aliases> {
    match value {
        Value::Null => Ok(Aliases::new()),
        Value::Object(object) => object
            .iter()
            .map(|(name, alias)| Ok((name.clone(), AliasMetadata::parse(name, alias)?)))
            .collect(),
        other => Err(Error::illegal_argument(format!(
            "[aliases] must be an object, got [{other}]"
        ))),
    }
}

/// Rejects alias names OpenSearch rejects, with its messages (it allows upper case, unlike
/// index names).
pub fn validate_alias_name(name: &str) -> Result<()> {
    let invalid = |why: &str| {
        Error::new(
            "invalid_alias_name_exception",
            400,
            format!("Invalid alias name [{name}]: {why}"),
        )
    };
    if name.trim().is_empty() {
        return Err(Error::illegal_argument("alias name is required"));
    }
    const FORBIDDEN: &[char] = &['\\', '/', '*', '?', '"', '<', '>', '|', ' ', ',', '#', ':'];
    if name.chars().any(|c| FORBIDDEN.contains(&c)) {
        return Err(invalid(
            "must not contain the following characters [ , \", *, \\, <, |, ,, >, /, ?]",
        ));
    }
    if name.starts_with(['_', '-', '+']) {
        return Err(invalid("must not start with '_', '-', or '+'"));
    }
    if name == "." || name == ".." {
        return Err(invalid("must not be '.' or '..'"));
    }
    if name.len() > 255 {
        return Err(invalid(&format!(
            "alias name is too long, ({} > 255)",
            name.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn routing_sets_both_unless_given() {
        let alias = AliasMetadata::parse(
            "a",
            &json!({"routing": "1", "search_routing": "1,2", "is_write_index": true}),
        )
        .unwrap();
        assert_eq!(alias.index_routing.as_deref(), Some("1"));
        assert_eq!(alias.search_routing.as_deref(), Some("1,2"));
        assert_eq!(
            alias.to_json(),
            json!({"index_routing": "1", "search_routing": "1,2", "is_write_index": true})
        );
        assert_eq!(
            alias.search_routing_values().unwrap(),
            vec!["1".to_string(), "2".to_string()]
        );
    }

    #[test]
    fn round_trip_and_empty_filters() {
        let aliases = parse_aliases(&json!({
            "f": {"filter": {"term": {"x": 1}}},
            "plain": {},
            "empty_filter": {"filter": {}},
            "ignored": {"unknown": 1}
        }))
        .unwrap();
        assert_eq!(
            aliases_json(&aliases),
            json!({"f": {"filter": {"term": {"x": 1}}}, "plain": {}, "empty_filter": {}, "ignored": {}})
        );
        assert_eq!(parse_aliases(&aliases_json(&aliases)).unwrap(), aliases);
        assert!(AliasMetadata::parse("a", &json!({"filter": 3})).is_err());
        assert!(AliasMetadata::parse("a", &json!({"is_write_index": "maybe"})).is_err());
    }

    #[test]
    fn names() {
        assert!(validate_alias_name("Logs-Alias").is_ok());
        assert_eq!(
            validate_alias_name("_x").unwrap_err().reason(),
            "Invalid alias name [_x]: must not start with '_', '-', or '+'"
        );
        assert_eq!(
            validate_alias_name("a*").unwrap_err().kind(),
            "invalid_alias_name_exception"
        );
        assert!(validate_alias_name("").is_err());
    }
}
