//! `GET /_resolve/index/{name}`: what names an expression matches, by kind (indices with their
//! aliases and attributes, aliases with their indices, data streams with their backing
//! indices), as OpenSearch answers it. Names that match nothing are left out, not errors.

use std::sync::Arc;

use serde_json::{json, Value};
use tessera_common::Result;
use tessera_node::data_streams::{self, DataStream};
use tessera_node::Node;

use crate::request::RestRequest;
use crate::response::RestResponse;

/// Whether `pattern` (a name or a wildcard) selects `name`; hidden names (a leading `.`) only
/// for a pattern that starts with `.` or with `expand_wildcards` including hidden ones.
fn selects(pattern: &str, name: &str, hidden: bool, show_hidden: bool) -> bool {
    if pattern == name {
        return true;
    }
    let wildcard = pattern == "_all" || pattern.contains('*');
    let visible = !hidden || show_hidden || pattern.starts_with('.');
    wildcard
        && visible
        && (pattern == "_all" || tessera_mapping::dynamic::simple_match(pattern, name))
}

pub async fn resolve_index(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let expression = request.path_param("name");
    let show_hidden = request
        .param("expand_wildcards")
        .is_some_and(|w| w.split(',').any(|w| w == "all" || w == "hidden"));
    let patterns: Vec<&str> = expression.split(',').map(str::trim).collect();
    let matched = |name: &str, hidden: bool| {
        patterns
            .iter()
            .any(|p| selects(p, name, hidden, show_hidden))
    };
    let view = node.index_view();
    let state = node.cluster_state();
    let streams = data_streams::streams(&state);
    let stream_of = |index: &str| -> Option<&DataStream> {
        streams
            .values()
            .find(|s| s.indices.iter().any(|b| b.index_name == index))
    };
    let mut indices = Vec::new();
    for (name, meta) in &view {
        let hidden = name.starts_with('.') || meta.setting("index.hidden") == "true";
        if !matched(name, hidden) {
            continue;
        }
        let mut entry = json!({"name": name});
        if !meta.aliases.is_empty() {
            entry["aliases"] = json!(meta.aliases.keys().collect::<Vec<_>>());
        }
        entry["attributes"] = if hidden {
            json!(["hidden", "open"])
        } else {
            json!(["open"])
        };
        if let Some(stream) = stream_of(name) {
            entry["data_stream"] = json!(stream.name);
        }
        indices.push(entry);
    }
    let aliases: Vec<Value> = node
        .alias_table()
        .names()
        .into_iter()
        .filter(|(alias, _)| matched(alias, alias.starts_with('.')))
        .map(|(alias, indices)| json!({"name": alias, "indices": indices}))
        .collect();
    let streams: Vec<Value> = streams
        .values()
        .filter(|s| matched(&s.name, s.name.starts_with('.')))
        .map(|s| {
            json!({
                "name": s.name,
                "backing_indices": s.indices.iter().map(|b| &b.index_name).collect::<Vec<_>>(),
                "timestamp_field": data_streams::TIMESTAMP_FIELD,
            })
        })
        .collect();
    Ok(RestResponse::ok(json!({
        "indices": indices,
        "aliases": aliases,
        "data_streams": streams,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_names_need_asking_for() {
        assert!(selects("r*", "ri-1", false, false));
        assert!(!selects("*", ".ds-x-000001", true, false));
        assert!(selects("*", ".ds-x-000001", true, true));
        assert!(selects(".ds-*", ".ds-x-000001", true, false));
        assert!(selects("ri", "ri", false, false));
        assert!(!selects("ri", "ri-1", false, false));
    }
}
