//! `_tasks`: list the running tasks of every node (`actions`, `detailed`, `group_by`), get one
//! task (running, or the result a finished one left), and cancel tasks. Tasks live on the node
//! that coordinates them (`tessera_node::tasks`); this module asks the nodes and renders the
//! answers in OpenSearch's shapes.

use std::sync::Arc;

use serde_json::{json, Map, Value};
use tessera_cluster::DiscoveryNode;
use tessera_common::{Error, Result};
use tessera_node::tasks::{self, TaskId};
use tessera_node::Node;

use crate::request::RestRequest;
use crate::response::RestResponse;

/// `actions=a,b*`.
fn actions(request: &RestRequest) -> Vec<String> {
    request
        .param("actions")
        .map(|text| {
            text.split(',')
                .map(str::trim)
                .filter(|a| !a.is_empty())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum GroupBy {
    Nodes,
    Parents,
    None,
}

fn group_by(request: &RestRequest) -> Result<GroupBy> {
    match request.param("group_by") {
        None | Some("nodes") => Ok(GroupBy::Nodes),
        Some("parents") => Ok(GroupBy::Parents),
        Some("none") => Ok(GroupBy::None),
        Some(other) => Err(Error::illegal_argument(format!(
            "[group_by] must be one of [nodes], [parents] or [none] but was [{other}]"
        ))),
    }
}

/// A node's heading in a task list, as OpenSearch writes it.
fn node_heading(node: &DiscoveryNode) -> Map<String, Value> {
    let host = node
        .transport_address
        .rsplit_once(':')
        .map_or(node.transport_address.as_str(), |(host, _)| host);
    let mut heading = Map::new();
    heading.insert("name".into(), json!(node.name));
    heading.insert("transport_address".into(), json!(node.transport_address));
    heading.insert("host".into(), json!(host));
    heading.insert("ip".into(), json!(node.transport_address));
    heading.insert("roles".into(), json!(node.roles));
    heading.insert("attributes".into(), json!({}));
    heading
}

/// A node's failure in `node_failures`.
fn node_failure(node_id: &str, error: &Error) -> Value {
    let mut failure = Error::new(
        "failed_node_exception",
        500,
        format!("Failed node [{node_id}]"),
    )
    .with_meta("node_id", node_id.to_string())
    .caused_by(error.clone())
    .to_json();
    // OpenSearch lists the failure itself, not wrapped in a root cause
    if let Some(map) = failure.as_object_mut() {
        map.remove("root_cause");
    }
    failure
}

/// Renders each node's tasks (or failure) grouped as asked.
fn render(answers: Vec<(DiscoveryNode, Result<Value>)>, group: GroupBy) -> Value {
    let mut failures = Vec::new();
    let mut nodes = Map::new();
    let mut flat = Vec::new();
    for (node, answer) in answers {
        match answer {
            Ok(Value::Array(tasks)) if !tasks.is_empty() => {
                let mut by_id = Map::new();
                for task in &tasks {
                    let id = format!("{}:{}", node.id, task["id"]);
                    by_id.insert(id, task.clone());
                }
                flat.extend(tasks);
                let mut heading = node_heading(&node);
                heading.insert("tasks".into(), Value::Object(by_id));
                nodes.insert(node.id.clone(), Value::Object(heading));
            }
            Ok(_) => {}
            Err(e) => failures.push(node_failure(&node.id, &e)),
        }
    }
    let mut out = Map::new();
    if !failures.is_empty() {
        out.insert("node_failures".into(), Value::Array(failures));
    }
    match group {
        GroupBy::Nodes => {
            out.insert("nodes".into(), Value::Object(nodes));
        }
        GroupBy::Parents => {
            let by_id = flat
                .into_iter()
                .map(|task| {
                    (
                        format!("{}:{}", task["node"].as_str().unwrap_or(""), task["id"]),
                        task,
                    )
                })
                .collect();
            out.insert("tasks".into(), Value::Object(by_id));
        }
        GroupBy::None => {
            out.insert("tasks".into(), Value::Array(flat));
        }
    }
    Value::Object(out)
}

/// `parent_task_id`: Tessera's tasks have no parents, so a filter on one (other than `-1`,
/// OpenSearch's "none") matches nothing; a malformed one is OpenSearch's error.
fn parent_filter_excludes_all(request: &RestRequest) -> Result<bool> {
    match request.param("parent_task_id") {
        None | Some("-1") | Some("") => Ok(false),
        Some(id) => TaskId::parse(id).map(|_| true),
    }
}

/// `GET /_tasks`.
pub async fn list(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let group = group_by(&request)?;
    let detailed = request.param_bool("detailed", false)?;
    let answers = if parent_filter_excludes_all(&request)? {
        Vec::new()
    } else {
        tasks::on_every_node(
            &node,
            tasks::LIST,
            &actions(&request),
            detailed,
            request.param("nodes"),
        )
        .await?
    };
    Ok(RestResponse::ok(render(answers, group)))
}

/// `GET /_tasks/{task_id}`: `wait_for_completion` waits up to `timeout` (30s by default).
pub async fn get(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let id = TaskId::parse(request.path_param("task_id"))?;
    let wait = if request.param_bool("wait_for_completion", false)? {
        Some(
            request
                .param_time("timeout")?
                .unwrap_or(std::time::Duration::from_secs(30)),
        )
    } else {
        None
    };
    Ok(RestResponse::ok(tasks::get(&node, &id, wait).await?))
}

/// `POST /_tasks/_cancel` and `POST /_tasks/{task_id}/_cancel`.
pub async fn cancel(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let group = group_by(&request)?;
    let answers = match request.path_params.get("task_id") {
        Some(id) => tasks::cancel_one(&node, &TaskId::parse(id)?).await?,
        None if parent_filter_excludes_all(&request)? => Vec::new(),
        None => {
            tasks::on_every_node(
                &node,
                tasks::CANCEL,
                &actions(&request),
                false,
                request.param("nodes"),
            )
            .await?
        }
    };
    if request.param_bool("wait_for_completion", false)? {
        let cancelled: Vec<TaskId> = answers
            .iter()
            .filter_map(|(_, answer)| answer.as_ref().ok()?.as_array().cloned())
            .flatten()
            .filter_map(|task| {
                Some(TaskId {
                    node: task["node"].as_str()?.to_string(),
                    id: task["id"].as_u64()?,
                })
            })
            .collect();
        let wait = request
            .param_time("timeout")?
            .unwrap_or(std::time::Duration::from_secs(30));
        tasks::wait_until_done(&node, &cancelled, wait).await?;
    }
    Ok(RestResponse::ok(render(answers, group)))
}

/// `POST /_reindex/{task_id}/_rethrottle` (and `_update_by_query`, `_delete_by_query`):
/// `requests_per_second` (required; `-1` lifts the limit) applies to the running task at once.
pub async fn rethrottle(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let rate = request
        .param("requests_per_second")
        .ok_or_else(|| Error::illegal_argument("requests_per_second is a required parameter"))?;
    let rate = tessera_node::bulk_by_scroll::parse_requests_per_second(rate)?;
    let id = TaskId::parse(request.path_param("task_id"))?;
    let answers = tasks::rethrottle(&node, &id, rate).await?;
    Ok(RestResponse::ok(render(answers, group_by(&request)?)))
}

/// The URL parameters of `GET /_tasks`.
pub const LIST_PARAMS: &[&str] = &["actions", "detailed", "group_by", "nodes", "parent_task_id"];
/// The URL parameters of `GET /_tasks/{task_id}`.
pub const GET_PARAMS: &[&str] = &["wait_for_completion", "timeout"];
/// The URL parameters of the rethrottle calls.
pub const RETHROTTLE_PARAMS: &[&str] = &["requests_per_second", "group_by"];
/// The URL parameters of the cancel calls.
pub const CANCEL_PARAMS: &[&str] = &[
    "actions",
    "nodes",
    "parent_task_id",
    "wait_for_completion",
    "timeout",
    "group_by",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: &str) -> DiscoveryNode {
        DiscoveryNode {
            id: id.into(),
            name: format!("name-{id}"),
            ephemeral_id: String::new(),
            transport_address: "127.0.0.1:9300".into(),
            http_address: "127.0.0.1:9200".into(),
            roles: vec!["data".into()],
        }
    }

    #[test]
    fn lists_group_by_nodes_or_not_at_all() {
        let answers = || {
            vec![
                (
                    node("a"),
                    Ok(json!([{"node": "a", "id": 7, "action": "x"}])),
                ),
                (node("b"), Ok(json!([]))),
                (
                    node("c"),
                    Err(Error::new("resource_not_found_exception", 404, "gone")),
                ),
            ]
        };
        let by_nodes = render(answers(), GroupBy::Nodes);
        assert_eq!(by_nodes["nodes"]["a"]["tasks"]["a:7"]["id"], 7);
        assert_eq!(by_nodes["nodes"]["a"]["host"], "127.0.0.1");
        assert!(by_nodes["nodes"].get("b").is_none());
        assert_eq!(by_nodes["node_failures"][0]["reason"], "Failed node [c]");
        assert_eq!(by_nodes["node_failures"][0]["caused_by"]["reason"], "gone");
        let flat = render(answers(), GroupBy::None);
        assert_eq!(flat["tasks"][0]["id"], 7);
        let parents = render(answers(), GroupBy::Parents);
        assert_eq!(parents["tasks"]["a:7"]["action"], "x");
    }
}
