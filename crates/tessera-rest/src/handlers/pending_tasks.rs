//! `GET /_cluster/pending_tasks` and `GET /_cat/pending_tasks`: the cluster-state updates the
//! elected manager has queued ([`tessera_node::pending_tasks`]), asked of the manager.

use std::sync::Arc;

use serde_json::{json, Value};
use tessera_common::{Error, Result};
use tessera_node::pending_tasks::{PendingTask, LIST};
use tessera_node::Node;

use super::recovery::{duration, time_value};
use crate::cat_table::{col, render, Cell, Column};
use crate::request::RestRequest;
use crate::response::RestResponse;

/// The elected manager's queue.
async fn manager_queue(node: &Arc<Node>) -> Result<Vec<PendingTask>> {
    let state = node.cluster_state();
    let manager = state
        .cluster_manager
        .as_ref()
        .and_then(|id| state.nodes.get(id))
        .cloned()
        .ok_or_else(tessera_node::coordination::manager_not_discovered)?;
    let answer = node
        .fan_out_to(vec![manager], LIST, json!({}))
        .await
        .into_iter()
        .next()
        .map(|(_, answer)| answer)
        .ok_or_else(tessera_node::coordination::manager_not_discovered)??;
    serde_json::from_value(answer).map_err(|e| Error::internal("read the pending tasks", e))
}

/// `GET /_cluster/pending_tasks`.
pub async fn list(node: Arc<Node>, _request: RestRequest) -> Result<RestResponse> {
    let tasks: Vec<Value> = manager_queue(&node)
        .await?
        .into_iter()
        .map(|task| {
            json!({
                "insert_order": task.insert_order,
                "priority": task.priority.as_str(),
                "source": task.source,
                "executing": task.executing,
                "time_in_queue_millis": task.time_in_queue_millis,
                "time_in_queue": time_value(task.time_in_queue_millis),
            })
        })
        .collect();
    Ok(RestResponse::ok(json!({ "tasks": tasks })))
}

static PENDING_TASKS: &[Column] = &[
    col("insertOrder", "o", "task insertion order", true, true),
    col(
        "timeInQueue",
        "t",
        "how long task has been in queue",
        true,
        true,
    ),
    col("priority", "p", "task priority", false, true),
    col("source", "s", "task source", false, true),
];

/// `GET /_cat/pending_tasks`.
pub async fn cat(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let rows = manager_queue(&node)
        .await?
        .into_iter()
        .map(|task| {
            Ok(vec![
                Cell::from(task.insert_order),
                duration(&request, task.time_in_queue_millis)?,
                Cell::from(task.priority.as_str()),
                Cell::from(task.source),
            ])
        })
        .collect::<Result<Vec<_>>>()?;
    render(&request, PENDING_TASKS, rows)
}
