//! Alias APIs: `POST /_aliases`, `PUT|POST|DELETE /{index}/_alias/{name}` (and `_aliases`),
//! `GET|HEAD /_alias…`, `_cat/aliases`. Every change becomes `_aliases` actions, which the
//! node decides as one change (`tessera_node::aliases`).

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{json, Map, Value};
use tessera_common::{Error, Result};
use tessera_index::aliases::{AliasMetadata, Aliases};
use tessera_node::{Node, ResolveOptions};

use super::resolve_options;
use crate::cat_table::{col, render, Cell, Column};
use crate::request::RestRequest;
use crate::response::RestResponse;

/// Runs the actions of `body` on the management pool; `{"acknowledged": true}`.
async fn run_actions(node: Arc<Node>, body: Value) -> Result<RestResponse> {
    let updating = node.clone();
    node.pools
        .management
        .run(move || updating.update_aliases(&body))
        .await?;
    Ok(RestResponse::ok(json!({"acknowledged": true})))
}

/// `POST /_aliases`.
pub async fn update(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let body = request.json_body()?.unwrap_or_else(|| json!({}));
    run_actions(node, body).await
}

fn list(text: &str) -> Vec<Value> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| Value::String(s.to_string()))
        .collect()
}

/// `PUT|POST /{index}/_alias/{name}` and `PUT|POST /_alias/{name}` (the indices then in the
/// body): an `add` action with the body's definition.
pub async fn put(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let mut spec = match request.json_body()? {
        None => Map::new(),
        Some(Value::Object(spec)) => spec,
        Some(_) => return Err(Error::parsing("request body must be an object")),
    };
    if let Some(index) = request.path_params.get("index") {
        spec.insert("indices".into(), Value::Array(list(index)));
        spec.remove("index");
    }
    let alias = request.path_param("name");
    spec.insert("aliases".into(), Value::Array(list(alias)));
    spec.remove("alias");
    run_actions(node, json!({"actions": [{"add": spec}]})).await
}

/// `DELETE /{index}/_alias/{name}`: a `remove` action (names may be lists and wildcards).
pub async fn delete(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let spec = json!({
        "indices": list(request.path_param("index")),
        "aliases": list(request.path_param("name")),
    });
    run_actions(node, json!({"actions": [{"remove": spec}]})).await
}

/// The aliases of each index `request` names, limited to the aliases it names; and the names
/// asked for that matched nothing (wildcards never miss).
fn selected(node: &Node, request: &RestRequest) -> Result<(Map<String, Value>, Vec<String>)> {
    let options = ResolveOptions {
        ignore_unavailable: false,
        allow_no_indices: true,
        document_api: false,
    };
    let indices = match request.path_params.get("index") {
        Some(expression) => node.resolve(expression, &resolve_options(request, true)?)?,
        None => node.resolve("_all", &options)?,
    };
    let patterns: Option<Vec<String>> = request
        .path_params
        .get("name")
        .map(|names| names.split(',').map(|n| n.trim().to_string()).collect());
    let matches = |pattern: &str, alias: &str| {
        pattern == "_all" || tessera_mapping::dynamic::simple_match(pattern, alias)
    };
    let mut found: BTreeSet<String> = BTreeSet::new();
    let mut out = Map::new();
    let mut metadata: Vec<_> = indices.iter().map(|index| index.metadata()).collect();
    metadata.sort_by(|a, b| a.name.cmp(&b.name));
    for meta in metadata {
        let aliases: Aliases = meta
            .aliases
            .iter()
            .filter(|(alias, _)| {
                patterns
                    .as_ref()
                    .is_none_or(|p| p.iter().any(|p| matches(p, alias)))
            })
            .map(|(alias, definition)| (alias.clone(), definition.clone()))
            .collect();
        found.extend(aliases.keys().cloned());
        // with alias names asked for, indices with none of them are left out
        if patterns.is_some() && aliases.is_empty() {
            continue;
        }
        out.insert(
            meta.name.clone(),
            json!({"aliases": tessera_index::aliases::aliases_json(&aliases)}),
        );
    }
    let missing = patterns
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p != "_all" && !p.contains('*') && !found.contains(p))
        .collect();
    Ok((out, missing))
}

/// `GET /_alias[/{name}]`, `GET /{index}/_alias[/{name}]`, `GET /_aliases`: each index with
/// its aliases; names that match no alias make it a 404 that still lists what was found,
/// as OpenSearch answers.
pub async fn get(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let (mut out, missing) = selected(&node, &request)?;
    if missing.is_empty() {
        return Ok(RestResponse::ok(Value::Object(out)));
    }
    let message = match missing.as_slice() {
        [one] => format!("alias [{one}] missing"),
        many => format!("aliases [{}] missing", many.join(",")),
    };
    let mut body = Map::new();
    body.insert("error".into(), Value::String(message));
    body.insert("status".into(), json!(404));
    body.append(&mut out);
    Ok(RestResponse::json(404, Value::Object(body)))
}

/// `HEAD /_alias/{name}`, `HEAD /{index}/_alias[/{name}]`: 200 when every name matched.
pub async fn exists(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let (out, missing) = selected(&node, &request)?;
    let any = out.values().any(|index| {
        index["aliases"]
            .as_object()
            .is_some_and(|aliases| !aliases.is_empty())
    });
    let status = if missing.is_empty() && any { 200 } else { 404 };
    Ok(RestResponse::status_only(status))
}

static CAT_ALIASES: &[Column] = &[
    col("alias", "a", "alias name", false, true),
    col("index", "i,idx", "index alias points to", false, true),
    col("filter", "f,fi", "filter", false, true),
    col(
        "routing.index",
        "ri,routingIndex",
        "index routing",
        false,
        true,
    ),
    col(
        "routing.search",
        "rs,routingSearch",
        "search routing",
        false,
        true,
    ),
    col(
        "is_write_index",
        "w,isWriteIndex",
        "write index",
        false,
        true,
    ),
];

fn cat_row(alias: &str, index: &str, definition: &AliasMetadata) -> Vec<Cell> {
    let or_dash = |value: Option<String>| Cell::from(value.unwrap_or_else(|| "-".to_string()));
    vec![
        Cell::from(alias),
        Cell::from(index),
        Cell::from(if definition.filter.is_some() {
            "*"
        } else {
            "-"
        }),
        or_dash(definition.index_routing.clone()),
        or_dash(definition.search_routing.clone()),
        or_dash(definition.is_write_index.map(|w| w.to_string())),
    ]
}

/// `GET /_cat/aliases[/{name}]`.
pub async fn cat(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let (selected, _) = selected(&node, &request)?;
    let view = node.index_view();
    let mut rows = Vec::new();
    for (index, entry) in &selected {
        let Some(meta) = view.get(index) else {
            continue;
        };
        for alias in entry["aliases"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(a, _)| a)
        {
            if let Some(definition) = meta.aliases.get(alias) {
                rows.push(cat_row(alias, index, definition));
            }
        }
    }
    render(&request, CAT_ALIASES, rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cat_rows_show_dashes_for_what_is_unset() {
        let plain = cat_row("al", "a1", &AliasMetadata::default());
        let texts: Vec<String> = plain
            .iter()
            .map(|cell| match cell {
                Cell::Text(t) => t.clone(),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(texts, ["al", "a1", "-", "-", "-", "-"]);
        let full = AliasMetadata::parse(
            "f",
            &json!({"filter": {"term": {"x": 1}}, "routing": "1", "is_write_index": false}),
        )
        .unwrap();
        let texts: Vec<String> = cat_row("f", "a1", &full)
            .iter()
            .map(|cell| match cell {
                Cell::Text(t) => t.clone(),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(texts, ["f", "a1", "*", "1", "1", "false"]);
    }

    #[test]
    fn lists_split_on_commas() {
        assert_eq!(list("a, b,,c"), vec![json!("a"), json!("b"), json!("c")]);
    }
}
