//! Aliases across the indices of a node or a cluster: the `_aliases` actions and how they
//! change each index's metadata (one decision over every index they touch, so a change is
//! atomic, as OpenSearch's), the checks a new index's name and aliases must pass, and the
//! [`AliasTable`] that resolves an alias for a search (its indices, filters and search
//! routing), a write (its write index and index routing) or a single-document read.
//!
//! The aliases themselves live in each index's metadata (`tessera_index::aliases`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{json, Value};
use tessera_common::{Error, Result};
use tessera_index::aliases::{validate_alias_name, AliasMetadata, Aliases};
use tessera_index::blocks::BlockLevel;
use tessera_index::IndexMetadata;

use crate::resolve::{select, AliasNames, ResolveOptions};

/// One action of `POST /_aliases`.
#[derive(Clone, Debug, PartialEq)]
pub enum AliasAction {
    Add {
        indices: Vec<String>,
        aliases: Vec<String>,
        alias: AliasMetadata,
    },
    Remove {
        indices: Vec<String>,
        aliases: Vec<String>,
        /// `true`: an alias that is not there fails the change; `false`: it never does; unset:
        /// it does when the change has nothing else to do (OpenSearch's rules).
        must_exist: Option<bool>,
    },
    RemoveIndex {
        indices: Vec<String>,
    },
}

/// The indices by name, as the cluster state (or the single node) holds them now.
pub type IndexView = BTreeMap<String, Arc<IndexMetadata>>;

/// What a set of actions decided: the indices whose aliases changed (their next metadata) and
/// the indices to delete.
#[derive(Debug, Default)]
pub struct AliasChange {
    pub changed: Vec<IndexMetadata>,
    pub removed: Vec<String>,
}

fn parse_error(reason: impl Into<String>) -> Error {
    Error::new("x_content_parse_exception", 400, reason.into())
}

/// `index`/`indices` or `alias`/`aliases` of an action: a string or a list of strings.
fn names(action: &Value, one: &str, many: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for key in [one, many] {
        match action.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => out.push(s.clone()),
            Some(Value::Array(items)) => {
                for item in items {
                    let name = item.as_str().ok_or_else(|| {
                        parse_error(format!("[{key}] must be a string or an array of strings"))
                    })?;
                    out.push(name.to_string());
                }
            }
            Some(_) => {
                return Err(parse_error(format!(
                    "[{key}] must be a string or an array of strings"
                )))
            }
        }
    }
    if out.is_empty() {
        return Err(
            parse_error("[aliases] failed to parse field [actions]").caused_by(
                Error::illegal_argument(format!("One of [{one}] or [{many}] is required")),
            ),
        );
    }
    if out.iter().any(|name| name.is_empty()) {
        return Err(Error::action_request_validation(&[format!(
            "[{one}] may not be empty string"
        )]));
    }
    Ok(out)
}

/// Parses the body of `POST /_aliases`.
pub fn parse_actions(body: &Value) -> Result<Vec<AliasAction>> {
    let actions = match body.get("actions") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(actions)) => actions.clone(),
        Some(Value::Object(one)) => vec![Value::Object(one.clone())],
        Some(_) => return Err(parse_error("[aliases] actions must be an array")),
    };
    if let Some(key) = body
        .as_object()
        .and_then(|o| o.keys().find(|k| *k != "actions"))
    {
        return Err(parse_error(format!("[aliases] unknown field [{key}]")));
    }
    let mut out = Vec::with_capacity(actions.len());
    for action in &actions {
        let Some((kind, spec)) = action.as_object().and_then(|o| o.iter().next()) else {
            return Err(parse_error("[aliases] failed to parse field [actions]"));
        };
        out.push(parse_action(kind, spec)?);
    }
    if out.is_empty() {
        return Err(Error::illegal_argument("No action specified"));
    }
    Ok(out)
}

/// One action: `add`, `remove` or `remove_index` with its definition.
pub fn parse_action(kind: &str, spec: &Value) -> Result<AliasAction> {
    match kind {
        "add" => {
            if spec.get("must_exist").is_some() {
                return Err(parse_error("[aliases] failed to parse field [actions]")
                    .caused_by(parse_error("[add] unknown field [must_exist]")));
            }
            let aliases = names(spec, "alias", "aliases")?;
            let indices = names(spec, "index", "indices")?;
            let alias = AliasMetadata::parse(&aliases[0], spec)?;
            if let Some(filter) = &alias.filter {
                check_filter(&aliases[0], filter)?;
            }
            Ok(AliasAction::Add {
                indices,
                aliases,
                alias,
            })
        }
        "remove" => Ok(AliasAction::Remove {
            aliases: names(spec, "alias", "aliases")?,
            indices: names(spec, "index", "indices")?,
            must_exist: spec["must_exist"].as_bool(),
        }),
        "remove_index" => Ok(AliasAction::RemoveIndex {
            indices: names(spec, "index", "indices")?,
        }),
        other => Err(
            parse_error("[aliases] failed to parse field [actions]").caused_by(parse_error(
                format!("[alias_action] unknown field [{other}]"),
            )),
        ),
    }
}

/// An alias's filter must be a query Tessera can parse.
pub fn check_filter(alias: &str, filter: &Value) -> Result<()> {
    let parsed = tessera_query::dsl::parse_query(filter)
        .and_then(|_| tessera_query::lookup::doc_refs(filter, None));
    match parsed {
        Ok(docs) if docs.is_empty() => Ok(()),
        // the coordinator reads the documents a request's query names; an alias filter is
        // applied on each shard, where none is read
        Ok(_) => Err(Error::not_supported(
            "a [terms] lookup, a [percolate] of an indexed document or a [more_like_this] item in an alias filter",
        )),
        Err(e) => Err(Error::illegal_argument(format!(
            "failed to parse filter for alias [{alias}]"
        ))
        .caused_by(e)),
    }
}

/// The alias-to-indices map of `indices`.
pub fn alias_names(indices: &IndexView) -> AliasNames {
    let mut out = AliasNames::new();
    for (name, meta) in indices {
        for alias in meta.aliases.keys() {
            out.entry(alias.clone()).or_default().push(name.clone());
        }
    }
    out
}

fn alias_matches(pattern: &str, alias: &str) -> bool {
    pattern == "_all" || tessera_mapping::dynamic::simple_match(pattern, alias)
}

fn invalid_alias_name(alias: &str, index: &IndexMetadata) -> Error {
    Error::new(
        "invalid_alias_name_exception",
        400,
        format!("Invalid alias name [{alias}], an index exists with the same name as the alias"),
    )
    .with_meta("index", alias)
    .with_meta("index_uuid", index.uuid.clone())
}

/// Applies `actions` to `indices`, in order, as one change.
pub fn apply_actions(actions: &[AliasAction], indices: &IndexView) -> Result<AliasChange> {
    let existing: Vec<String> = indices.keys().cloned().collect();
    let aliases = alias_names(indices);
    let options = ResolveOptions::default();
    // the next aliases of each index touched, and the indices to delete
    let mut next: BTreeMap<String, Aliases> = BTreeMap::new();
    let mut removed: Vec<String> = Vec::new();
    // whether any action does something, and the aliases removes did not find
    let mut effective = false;
    let mut not_found: Vec<String> = Vec::new();
    let concrete = |expressions: &[String]| -> Result<Vec<String>> {
        let mut out = Vec::new();
        for expression in expressions {
            for name in select(expression, &existing, &aliases, &options)?.indices {
                if !out.contains(&name) {
                    out.push(name);
                }
            }
        }
        Ok(out)
    };
    for action in actions {
        match action {
            AliasAction::Add {
                indices: expressions,
                aliases: names,
                alias,
            } => {
                effective = true;
                for target in concrete(expressions)? {
                    let current = next
                        .entry(target.clone())
                        .or_insert_with(|| indices[&target].aliases.clone());
                    for name in names {
                        validate_alias_name(name)?;
                        if let Some(index) = indices.get(name) {
                            return Err(invalid_alias_name(name, index));
                        }
                        current.insert(name.clone(), alias.clone());
                    }
                }
            }
            AliasAction::Remove {
                indices: expressions,
                aliases: patterns,
                must_exist,
            } => {
                let mut any = false;
                for target in concrete(expressions)? {
                    let current = next
                        .entry(target.clone())
                        .or_insert_with(|| indices[&target].aliases.clone());
                    let before = current.len();
                    current.retain(|alias, _| !patterns.iter().any(|p| alias_matches(p, alias)));
                    any |= current.len() < before;
                }
                let wildcards = patterns.iter().any(|p| p == "_all" || p.contains('*'));
                effective |= any;
                if !any && !wildcards {
                    match must_exist {
                        Some(true) => return Err(aliases_missing(patterns)),
                        Some(false) => {}
                        None => not_found.extend(patterns.iter().cloned()),
                    }
                }
            }
            AliasAction::RemoveIndex {
                indices: expressions,
            } => {
                effective = true;
                for expression in expressions {
                    if aliases.contains_key(expression) {
                        return Err(Error::illegal_argument(format!(
                            "The provided expression [{expression}] matches an alias, specify the corresponding concrete indices instead."
                        )));
                    }
                    let selected = select(expression, &existing, &AliasNames::new(), &options)?;
                    for name in selected.indices {
                        if !removed.contains(&name) {
                            removed.push(name);
                        }
                    }
                }
            }
        }
    }
    if !effective && !not_found.is_empty() {
        return Err(aliases_missing(&not_found));
    }
    let mut change = AliasChange {
        removed,
        ..AliasChange::default()
    };
    for (name, aliases) in next {
        if change.removed.contains(&name) {
            continue;
        }
        let current = &indices[&name];
        if let Some(meta) = current.with_aliases(aliases) {
            tessera_index::blocks::check(current, BlockLevel::MetadataWrite)?;
            change.changed.push(meta);
        }
    }
    let mut after: IndexView = indices
        .iter()
        .filter(|(name, _)| !change.removed.contains(name))
        .map(|(name, meta)| (name.clone(), meta.clone()))
        .collect();
    for meta in &change.changed {
        after.insert(meta.name.clone(), Arc::new(meta.clone()));
    }
    check_write_indices(&after)?;
    Ok(change)
}

/// `aliases [a,b] missing` (404).
pub fn aliases_missing(names: &[String]) -> Error {
    let list = names.join(",");
    Error::new(
        "aliases_not_found_exception",
        404,
        format!("aliases [{list}] missing"),
    )
    .with_meta("resource.id", list)
    .with_meta("resource.type", "aliases")
}

/// An alias has at most one write index. OpenSearch answers a 500 (an `IllegalStateException`
/// thrown while it builds the metadata); Tessera answers 400, since the request is at fault.
fn check_write_indices(indices: &IndexView) -> Result<()> {
    let mut writers: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (name, meta) in indices {
        for (alias, definition) in &meta.aliases {
            if definition.is_write_index == Some(true) {
                writers.entry(alias).or_default().push(name);
            }
        }
    }
    for (alias, names) in writers {
        if names.len() > 1 {
            return Err(Error::new(
                "illegal_state_exception",
                400,
                format!(
                    "alias [{alias}] has more than one write index [{}]",
                    names.join(",")
                ),
            ));
        }
    }
    Ok(())
}

/// Checks a new index against the others: its name must not be an alias, its aliases must
/// be valid and not index names, and it may not add a second write index to an alias.
pub fn check_new_index(name: &str, aliases: &Aliases, indices: &IndexView) -> Result<()> {
    let names = alias_names(indices);
    if names.contains_key(name) {
        return Err(Error::invalid_index_name(name, "already exists as alias"));
    }
    for (alias, definition) in aliases {
        validate_alias_name(alias)?;
        if let Some(index) = indices.get(alias) {
            return Err(invalid_alias_name(alias, index));
        }
        if alias == name {
            return Err(Error::new(
                "invalid_alias_name_exception",
                400,
                format!(
                    "Invalid alias name [{alias}]: an alias cannot have the same name as its index"
                ),
            ));
        }
        if let Some(filter) = &definition.filter {
            check_filter(alias, filter)?;
        }
        if definition.is_write_index == Some(true) {
            let other = indices.iter().find(|(_, meta)| {
                meta.aliases
                    .get(alias)
                    .is_some_and(|a| a.is_write_index == Some(true))
            });
            if let Some((other, _)) = other {
                return Err(Error::new(
                    "illegal_state_exception",
                    400,
                    format!("alias [{alias}] has more than one write index [{other},{name}]"),
                ));
            }
        }
    }
    Ok(())
}

/// The aliases of a node's indices, for resolving requests.
#[derive(Default)]
pub struct AliasTable {
    /// Each alias with its indices and their definitions of it.
    by_alias: BTreeMap<String, Vec<(String, AliasMetadata)>>,
}

/// How a search reads one index it reached: through which filter, on which routing values.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IndexScope {
    /// The aliases' filter (JSON), or none: the whole index.
    pub filter: Option<Value>,
    /// The routing values to search, or none: every shard.
    pub routing: Option<Vec<String>>,
}

impl AliasTable {
    pub fn of<'a>(indices: impl IntoIterator<Item = &'a IndexMetadata>) -> AliasTable {
        let mut by_alias: BTreeMap<String, Vec<(String, AliasMetadata)>> = BTreeMap::new();
        for meta in indices {
            for (alias, definition) in &meta.aliases {
                by_alias
                    .entry(alias.clone())
                    .or_default()
                    .push((meta.name.clone(), definition.clone()));
            }
        }
        AliasTable { by_alias }
    }

    pub fn is_empty(&self) -> bool {
        self.by_alias.is_empty()
    }

    pub fn contains(&self, alias: &str) -> bool {
        self.by_alias.contains_key(alias)
    }

    /// Each alias with the names of its indices.
    pub fn names(&self) -> AliasNames {
        self.by_alias
            .iter()
            .map(|(alias, indices)| {
                let names = indices.iter().map(|(name, _)| name.clone()).collect();
                (alias.clone(), names)
            })
            .collect()
    }

    fn definition(&self, alias: &str, index: &str) -> Option<&AliasMetadata> {
        self.by_alias
            .get(alias)?
            .iter()
            .find(|(name, _)| name == index)
            .map(|(_, definition)| definition)
    }

    /// The index a write through `alias` goes to (the one marked `is_write_index`, else its
    /// only index unless that one is marked `false`), with the alias's definition there;
    /// `None` when `alias` is no alias.
    pub fn write_index(&self, alias: &str) -> Result<Option<(&str, &AliasMetadata)>> {
        let Some(indices) = self.by_alias.get(alias) else {
            return Ok(None);
        };
        let marked = indices
            .iter()
            .find(|(_, definition)| definition.is_write_index == Some(true));
        let chosen = match (marked, indices.as_slice()) {
            (Some(found), _) => Some(found),
            (None, [only]) if only.1.is_write_index != Some(false) => Some(only),
            _ => None,
        };
        match chosen {
            Some((index, definition)) => Ok(Some((index.as_str(), definition))),
            None => Err(Error::illegal_argument(format!(
                "no write index is defined for alias [{alias}]. The write index may be explicitly disabled using is_write_index=false or the alias points to multiple indices without one being designated as a write index"
            ))),
        }
    }

    /// The index a single-document read through `alias` reads (an alias of one index only),
    /// with the alias's definition; `None` when `alias` is no alias.
    pub fn single_index(&self, alias: &str) -> Result<Option<(&str, &AliasMetadata)>> {
        let Some(indices) = self.by_alias.get(alias) else {
            return Ok(None);
        };
        match indices.as_slice() {
            [(index, definition)] => Ok(Some((index.as_str(), definition))),
            many => Err(Error::illegal_argument(format!(
                "alias [{alias}] has more than one index associated with it [{}], can't execute a single index op",
                many.iter()
                    .map(|(name, _)| name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// How a search reads `index`, reached through `through` (no aliases: named itself) with
    /// the request's `routing`: the aliases' filters OR-ed (none if one of them has none), and
    /// the request's routing values limited to the aliases' search routing (OpenSearch's
    /// `resolveSearchRouting`).
    pub fn scope(&self, index: &str, through: &[String], routing: Option<&str>) -> IndexScope {
        let requested: Option<BTreeSet<String>> = routing.map(|r| {
            tessera_index::aliases::split_routing(r)
                .into_iter()
                .collect()
        });
        let definitions: Vec<&AliasMetadata> = through
            .iter()
            .filter_map(|alias| self.definition(alias, index))
            .collect();
        if definitions.is_empty() {
            return IndexScope {
                filter: None,
                routing: requested.map(|r| r.into_iter().collect()),
            };
        }
        let filter = if definitions.iter().any(|d| d.filter.is_none()) {
            None
        } else if let [only] = definitions.as_slice() {
            only.filter.clone()
        } else {
            let should: Vec<Value> = definitions
                .iter()
                .filter_map(|d| d.filter.clone())
                .collect();
            Some(json!({"bool": {"should": should, "minimum_should_match": 1}}))
        };
        // an alias without search routing opens every shard
        let alias_routing: Option<BTreeSet<String>> =
            if definitions.iter().any(|d| d.search_routing.is_none()) {
                None
            } else {
                Some(
                    definitions
                        .iter()
                        .flat_map(|d| d.search_routing_values().unwrap_or_default())
                        .collect(),
                )
            };
        let routing = match (alias_routing, requested) {
            (None, requested) => requested,
            (Some(alias), None) => Some(alias),
            (Some(alias), Some(requested)) => {
                Some(alias.intersection(&requested).cloned().collect())
            }
        };
        IndexScope {
            filter,
            routing: routing.map(|r| r.into_iter().collect()),
        }
    }
}

/// The routing a single-document operation through an alias uses: the alias's index routing,
/// which a different routing in the request contradicts (OpenSearch's `resolveIndexRouting`).
pub fn index_routing(
    alias: &str,
    definition: &AliasMetadata,
    requested: Option<&str>,
) -> Result<Option<String>> {
    let Some(routing) = &definition.index_routing else {
        return Ok(requested.map(String::from));
    };
    if routing.contains(',') {
        return Err(Error::illegal_argument(format!(
            "index/alias [{alias}] provided with routing value [{routing}] that resolved to several routing values, rejecting operation"
        )));
    }
    if let Some(requested) = requested.filter(|r| *r != routing) {
        return Err(Error::illegal_argument(format!(
            "Alias [{alias}] has index routing associated with it [{routing}], and was provided with routing value [{requested}], rejecting operation"
        )));
    }
    Ok(Some(routing.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_common::settings::Settings;
    use tessera_mapping::Mapping;

    fn index(name: &str, aliases: Value) -> (String, Arc<IndexMetadata>) {
        let mut meta = tessera_index::IndexService::new_metadata(
            name,
            name,
            Settings::new(),
            Mapping::default(),
        )
        .unwrap();
        meta.aliases = tessera_index::aliases::parse_aliases(&aliases).unwrap();
        (name.to_string(), Arc::new(meta))
    }

    fn view() -> IndexView {
        [
            index(
                "a1",
                json!({"al": {}, "f": {"filter": {"term": {"x": 1}}, "routing": "1"}}),
            ),
            index("a2", json!({"al": {}})),
            index("a3", json!({})),
        ]
        .into_iter()
        .collect()
    }

    fn actions(body: Value) -> Vec<AliasAction> {
        parse_actions(&body).unwrap()
    }

    #[test]
    fn parsing_refuses_what_opensearch_refuses() {
        let no_action = parse_actions(&json!({"actions": []})).unwrap_err();
        assert_eq!(no_action.reason(), "No action specified");
        assert!(parse_actions(&json!({})).is_err());
        let unknown = parse_actions(&json!({"actions": [{"frob": {"index": "a", "alias": "b"}}]}))
            .unwrap_err();
        assert_eq!(unknown.kind(), "x_content_parse_exception");
        let no_alias = parse_actions(&json!({"actions": [{"add": {"index": "a"}}]})).unwrap_err();
        assert_eq!(
            no_alias.to_json()["caused_by"]["reason"],
            "One of [alias] or [aliases] is required"
        );
        let bad_filter = parse_actions(
            &json!({"actions": [{"add": {"index": "a", "alias": "x", "filter": {"bogus": {}}}}]}),
        )
        .unwrap_err();
        assert_eq!(bad_filter.reason(), "failed to parse filter for alias [x]");
    }

    #[test]
    fn add_and_remove_in_one_change() {
        let change = apply_actions(
            &actions(json!({"actions": [
                {"add": {"indices": ["a*"], "alias": "all"}},
                {"remove": {"index": "a1", "alias": "al"}},
                {"add": {"index": "a3", "alias": "w", "is_write_index": true}}
            ]})),
            &view(),
        )
        .unwrap();
        let by_name: BTreeMap<&str, &IndexMetadata> = change
            .changed
            .iter()
            .map(|m| (m.name.as_str(), m))
            .collect();
        assert_eq!(
            by_name["a1"].aliases.keys().collect::<Vec<_>>(),
            ["all", "f"]
        );
        assert_eq!(by_name["a1"].aliases_version, 2);
        assert!(by_name["a3"].aliases.contains_key("w"));
        assert!(change.removed.is_empty());
    }

    #[test]
    fn errors_as_opensearch() {
        let missing = apply_actions(
            &actions(json!({"actions": [{"remove": {"index": "a3", "alias": "al"}}]})),
            &view(),
        )
        .unwrap_err();
        assert_eq!(missing.status(), 404);
        assert_eq!(missing.reason(), "aliases [al] missing");
        let with_an_add = apply_actions(
            &actions(json!({"actions": [
                {"add": {"index": "a3", "alias": "x"}},
                {"remove": {"index": "a3", "alias": "al"}}
            ]})),
            &view(),
        );
        assert_eq!(with_an_add.unwrap().changed.len(), 1);
        let required = apply_actions(
            &actions(json!({"actions": [
                {"add": {"index": "a3", "alias": "x"}},
                {"remove": {"index": "a3", "alias": "al", "must_exist": true}}
            ]})),
            &view(),
        );
        assert_eq!(required.unwrap_err().status(), 404);
        let lenient = apply_actions(
            &actions(
                json!({"actions": [{"remove": {"index": "a3", "alias": "al", "must_exist": false}}]}),
            ),
            &view(),
        );
        assert!(lenient.unwrap().changed.is_empty());
        let clash = apply_actions(
            &actions(json!({"actions": [{"add": {"index": "a1", "alias": "a2"}}]})),
            &view(),
        )
        .unwrap_err();
        assert_eq!(clash.kind(), "invalid_alias_name_exception");
        let two_writers = apply_actions(
            &actions(json!({"actions": [
                {"add": {"index": "a1", "alias": "w", "is_write_index": true}},
                {"add": {"index": "a2", "alias": "w", "is_write_index": true}}
            ]})),
            &view(),
        )
        .unwrap_err();
        assert_eq!(
            two_writers.reason(),
            "alias [w] has more than one write index [a1,a2]"
        );
        let remove_alias = apply_actions(
            &actions(json!({"actions": [{"remove_index": {"index": "al"}}]})),
            &view(),
        )
        .unwrap_err();
        assert!(remove_alias.reason().contains("matches an alias"));
        let unknown_index = apply_actions(
            &actions(json!({"actions": [{"add": {"index": "nope", "alias": "x"}}]})),
            &view(),
        )
        .unwrap_err();
        assert_eq!(unknown_index.status(), 404);
    }

    #[test]
    fn new_indices_are_checked() {
        let view = view();
        assert_eq!(
            check_new_index("al", &Aliases::new(), &view)
                .unwrap_err()
                .reason(),
            "Invalid index name [al], already exists as alias"
        );
        let aliases = tessera_index::aliases::parse_aliases(&json!({"a1": {}})).unwrap();
        assert_eq!(
            check_new_index("a4", &aliases, &view).unwrap_err().kind(),
            "invalid_alias_name_exception"
        );
        let fine = tessera_index::aliases::parse_aliases(&json!({"al": {}})).unwrap();
        assert!(check_new_index("a4", &fine, &view).is_ok());
    }

    #[test]
    fn write_and_read_targets() {
        let view = view();
        let table = AliasTable::of(view.values().map(|m| m.as_ref()));
        assert!(table
            .write_index("al")
            .unwrap_err()
            .reason()
            .starts_with("no write index"));
        let (index, definition) = table.write_index("f").unwrap().unwrap();
        assert_eq!(index, "a1");
        assert_eq!(
            index_routing("f", definition, None).unwrap().as_deref(),
            Some("1")
        );
        assert!(index_routing("f", definition, Some("2")).is_err());
        assert!(table.write_index("a1").unwrap().is_none());
        assert!(table
            .single_index("al")
            .unwrap_err()
            .reason()
            .contains("[a1, a2], can't execute a single index op"));
    }

    #[test]
    fn scopes_of_a_search() {
        let view = view();
        let table = AliasTable::of(view.values().map(|m| m.as_ref()));
        let f = table.scope("a1", &["f".to_string()], None);
        assert_eq!(f.filter, Some(json!({"term": {"x": 1}})));
        assert_eq!(f.routing, Some(vec!["1".to_string()]));
        // an alias without a filter opens the whole index
        let both = table.scope("a1", &["f".to_string(), "al".to_string()], Some("2"));
        assert_eq!(
            both,
            IndexScope {
                filter: None,
                routing: Some(vec!["2".to_string()])
            }
        );
        // the request's routing limited to the alias's
        let none = table.scope("a1", &["f".to_string()], Some("2"));
        assert_eq!(none.routing, Some(Vec::new()));
        let direct = table.scope("a1", &[], None);
        assert_eq!(direct, IndexScope::default());
    }
}
