//! The node's task manager: the long-running requests it coordinates (`_reindex`,
//! `_delete_by_query`, `_update_by_query`) registered under OpenSearch's task ids
//! (`<node id>:<number>`), so that `_tasks` can list them, report their progress, cancel or
//! rethrottle them and, for those started with `wait_for_completion=false`, give back their
//! result.
//!
//! OpenSearch stores finished results in its `.tasks` index; Tessera keeps the last
//! [`KEPT_RESULTS`] (at most [`KEPT_BYTES`]) in memory on the node that ran them, in the shape
//! `GET _tasks/{id}` renders. A task lives on the node that coordinates it, so the cluster-wide
//! calls ask other nodes (`Node::fan_out` runs [`LIST`], [`GET`], [`CANCEL`] and
//! [`RETHROTTLE`], answered there by [`run_report`]).

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tessera_common::params::json_strings;
use tessera_common::{Error, Result};

use crate::Node;

/// The node report listing this node's running tasks; params `{"actions": [...], "detailed"}`.
pub const LIST: &str = "tasks/list";
/// The node report that answers one task of this node; params `{"id": n}`.
pub const GET: &str = "tasks/get";
/// The node report that cancels this node's tasks; params `{"id": n}` or `{"actions": [...]}`.
pub const CANCEL: &str = "tasks/cancel";
/// The node report that changes a task's `requests_per_second`; params `{"id": n,
/// "requests_per_second": x}` (`-1`: no limit).
pub const RETHROTTLE: &str = "tasks/rethrottle";

/// How many finished results a node keeps (the oldest go first).
pub const KEPT_RESULTS: usize = 1000;
/// How many bytes of finished results (as JSON text) a node keeps at most: a result lists its
/// failures, up to a batch of them each.
pub const KEPT_BYTES: usize = 16 << 20;

/// A task id as OpenSearch writes it: `<node id>:<number>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskId {
    pub node: String,
    pub id: u64,
}

impl TaskId {
    /// Parses `node:id`, with OpenSearch's error for anything else.
    pub fn parse(text: &str) -> Result<TaskId> {
        let malformed = || Error::illegal_argument(format!("malformed task id {text}"));
        let (node, id) = text.split_once(':').ok_or_else(malformed)?;
        if node.is_empty() {
            return Err(malformed());
        }
        let id = id.parse::<u64>().map_err(|_| malformed())?;
        Ok(TaskId {
            node: node.to_string(),
            id,
        })
    }

    pub fn render(&self) -> String {
        format!("{}:{}", self.node, self.id)
    }

    /// OpenSearch's 404 for a task that is neither running nor kept.
    pub fn not_found(&self) -> Error {
        Error::new(
            "resource_not_found_exception",
            404,
            format!(
                "task [{}] isn't running and hasn't stored its results",
                self.render()
            ),
        )
    }
}

/// One running task.
pub struct Task {
    pub id: u64,
    pub action: &'static str,
    pub description: String,
    pub cancellable: bool,
    start_millis: i64,
    started: Instant,
    /// `requests_per_second` as f64 bits; [`UNLIMITED`] for none.
    requests_per_second: AtomicU64,
    /// When the task was cancelled (epoch millis); 0 while it is not.
    cancelled_at: AtomicI64,
    /// The progress `_tasks` shows (`status`), updated by the task as it goes.
    status: Mutex<Value>,
}

impl Task {
    pub fn is_cancelled(&self) -> bool {
        self.cancelled_at.load(Ordering::Relaxed) != 0
    }

    fn cancel(&self) {
        let now = tessera_common::time::now_millis().max(1);
        let _ = self
            .cancelled_at
            .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// The rate the task throttles itself to (documents a second); `None`: unlimited.
    pub fn requests_per_second(&self) -> Option<f64> {
        let bits = self.requests_per_second.load(Ordering::Relaxed);
        (bits != UNLIMITED).then(|| f64::from_bits(bits))
    }

    pub fn set_requests_per_second(&self, rate: Option<f64>) {
        let bits = rate.map_or(UNLIMITED, f64::to_bits);
        self.requests_per_second.store(bits, Ordering::Relaxed);
    }

    pub fn set_status(&self, status: Value) {
        *self.status.lock().unwrap() = status;
    }

    /// The task as `_tasks` renders it; `detailed` adds its description and status.
    pub fn info(&self, node_id: &str, detailed: bool) -> Value {
        let mut info = json!({
            "node": node_id,
            "id": self.id,
            "type": "transport",
            "action": self.action,
        });
        if detailed {
            info["status"] = self.status.lock().unwrap().clone();
            info["description"] = Value::String(self.description.clone());
        }
        info["start_time_in_millis"] = json!(self.start_millis);
        info["running_time_in_nanos"] = json!(self.started.elapsed().as_nanos() as u64);
        info["cancellable"] = json!(self.cancellable);
        info["cancelled"] = json!(self.is_cancelled());
        info["headers"] = json!({});
        let cancelled_at = self.cancelled_at.load(Ordering::Relaxed);
        if cancelled_at != 0 {
            info["cancellation_time_millis"] = json!(cancelled_at);
        }
        info
    }
}

/// No `requests_per_second` limit (never the bits of a positive rate).
const UNLIMITED: u64 = u64::MAX;

/// A finished task's `GET _tasks/{id}` answer.
struct Finished {
    id: u64,
    answer: Value,
    /// The answer's size as JSON text.
    bytes: usize,
}

/// The registry of one node's tasks.
pub struct TaskManager {
    node_id: String,
    next: AtomicU64,
    running: Mutex<BTreeMap<u64, Arc<Task>>>,
    finished: Mutex<VecDeque<Finished>>,
}

impl TaskManager {
    pub fn new(node_id: String) -> Arc<TaskManager> {
        Arc::new(TaskManager {
            node_id,
            next: AtomicU64::new(1),
            running: Mutex::new(BTreeMap::new()),
            finished: Mutex::new(VecDeque::new()),
        })
    }

    /// Registers a running task; it is unregistered when the guard is dropped (or finished).
    pub fn register(
        self: &Arc<Self>,
        action: &'static str,
        description: String,
        cancellable: bool,
    ) -> TaskGuard {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let task = Arc::new(Task {
            id,
            action,
            description,
            cancellable,
            start_millis: tessera_common::time::now_millis(),
            started: Instant::now(),
            requests_per_second: AtomicU64::new(UNLIMITED),
            cancelled_at: AtomicI64::new(0),
            status: Mutex::new(json!({})),
        });
        self.running.lock().unwrap().insert(id, task.clone());
        TaskGuard {
            manager: Arc::downgrade(self),
            task,
            done: false,
        }
    }

    pub fn task_id(&self, id: u64) -> TaskId {
        TaskId {
            node: self.node_id.clone(),
            id,
        }
    }

    /// The running tasks whose action matches one of `actions` (all with none).
    pub fn list(&self, actions: &[String], detailed: bool) -> Vec<Value> {
        self.matching(actions)
            .iter()
            .map(|task| task.info(&self.node_id, detailed))
            .collect()
    }

    fn matching(&self, actions: &[String]) -> Vec<Arc<Task>> {
        self.running
            .lock()
            .unwrap()
            .values()
            .filter(|task| action_matches(actions, task.action))
            .cloned()
            .collect()
    }

    /// `GET _tasks/{id}` on this node: running (`completed: false`) or a kept result.
    pub fn get(&self, id: u64) -> Result<Value> {
        if let Some(task) = self.running.lock().unwrap().get(&id) {
            return Ok(json!({
                "completed": false,
                "task": task.info(&self.node_id, true),
            }));
        }
        let finished = self.finished.lock().unwrap();
        finished
            .iter()
            .find(|f| f.id == id)
            .map(|f| f.answer.clone())
            .ok_or_else(|| self.task_id(id).not_found())
    }

    /// Cancels one task; its info, or OpenSearch's errors for a task that is not running or
    /// cannot be cancelled.
    pub fn cancel(&self, id: u64) -> Result<Value> {
        let task = self.running.lock().unwrap().get(&id).cloned();
        let Some(task) = task else {
            return Err(Error::new(
                "resource_not_found_exception",
                404,
                format!("task [{}] is not found", self.task_id(id).render()),
            ));
        };
        if !task.cancellable {
            return Err(Error::illegal_argument(format!(
                "task [{}] doesn't support cancellation",
                self.task_id(id).render()
            )));
        }
        task.cancel();
        Ok(task.info(&self.node_id, false))
    }

    /// Changes the rate of a running task; its info with the status showing the new rate.
    pub fn rethrottle(&self, id: u64, rate: Option<f64>) -> Result<Value> {
        let task = self.running.lock().unwrap().get(&id).cloned();
        let task = task.ok_or_else(|| {
            Error::new(
                "resource_not_found_exception",
                404,
                format!("task [{}] is missing", self.task_id(id).render()),
            )
        })?;
        task.set_requests_per_second(rate);
        let mut status = task.status.lock().unwrap();
        if let Some(map) = status.as_object_mut() {
            map.insert("requests_per_second".into(), json!(rate.unwrap_or(-1.0)));
        }
        drop(status);
        Ok(task.info(&self.node_id, true))
    }

    /// Cancels every cancellable running task matching `actions`; their infos.
    pub fn cancel_matching(&self, actions: &[String]) -> Vec<Value> {
        self.matching(actions)
            .into_iter()
            .filter(|task| task.cancellable)
            .map(|task| {
                task.cancel();
                task.info(&self.node_id, false)
            })
            .collect()
    }

    fn keep(&self, id: u64, answer: Value) {
        let bytes = answer.to_string().len();
        let mut finished = self.finished.lock().unwrap();
        let mut kept: usize = finished.iter().map(|f| f.bytes).sum();
        while finished.len() >= KEPT_RESULTS || (kept + bytes > KEPT_BYTES && !finished.is_empty())
        {
            if let Some(oldest) = finished.pop_front() {
                kept -= oldest.bytes;
            }
        }
        finished.push_back(Finished { id, answer, bytes });
    }
}

/// `actions=` as OpenSearch matches it: any of the comma-separated `*` patterns.
pub fn action_matches(actions: &[String], action: &str) -> bool {
    actions.is_empty()
        || actions
            .iter()
            .any(|pattern| tessera_mapping::dynamic::simple_match(pattern, action))
}

/// A registered task; dropping it unregisters the task (a request whose client left).
pub struct TaskGuard {
    manager: Weak<TaskManager>,
    task: Arc<Task>,
    done: bool,
}

impl TaskGuard {
    pub fn task(&self) -> &Arc<Task> {
        &self.task
    }

    pub fn id(&self) -> u64 {
        self.task.id
    }

    /// Unregisters the task; with `keep`, its result (`response` or `error`) stays for
    /// `GET _tasks/{id}`, as OpenSearch stores a result when the request did not wait for it.
    pub fn finish(mut self, result: &Result<Value>, keep: bool) {
        self.done = true;
        let Some(manager) = self.manager.upgrade() else {
            return;
        };
        // the result is kept before the task leaves the running ones: a `GET _tasks/{id}` in
        // between finds one or the other, never neither
        if keep {
            let mut answer = json!({
                "completed": true,
                "task": self.task.info(&manager.node_id, true),
            });
            match result {
                Ok(response) => answer["response"] = response.clone(),
                Err(e) => answer["error"] = e.to_json(),
            }
            manager.keep(self.task.id, answer);
        }
        manager.running.lock().unwrap().remove(&self.task.id);
    }
}

impl Drop for TaskGuard {
    fn drop(&mut self) {
        if !self.done {
            if let Some(manager) = self.manager.upgrade() {
                manager.running.lock().unwrap().remove(&self.task.id);
            }
        }
    }
}

/// Answers the task reports ([`LIST`], [`GET`], [`CANCEL`]) for this node.
pub fn run_report(node: &Node, report: &str, params: &Value) -> Result<Value> {
    let tasks = &node.tasks;
    match report {
        LIST => Ok(Value::Array(tasks.list(
            &json_strings(&params["actions"]),
            params["detailed"].as_bool().unwrap_or(false),
        ))),
        GET => tasks.get(params["id"].as_u64().unwrap_or(0)),
        CANCEL => match params["id"].as_u64() {
            Some(id) => tasks.cancel(id).map(|info| Value::Array(vec![info])),
            None => Ok(Value::Array(
                tasks.cancel_matching(&json_strings(&params["actions"])),
            )),
        },
        RETHROTTLE => {
            let rate = params["requests_per_second"].as_f64().filter(|r| *r > 0.0);
            tasks
                .rethrottle(params["id"].as_u64().unwrap_or(0), rate)
                .map(|info| Value::Array(vec![info]))
        }
        other => Err(Error::illegal_argument(format!(
            "unknown node report [{other}]"
        ))),
    }
}

/// The node a task id names, from the cluster state; OpenSearch's 404 when it is not part of
/// the cluster.
fn task_node(node: &Arc<Node>, id: &TaskId) -> Result<tessera_cluster::DiscoveryNode> {
    if id.node == node.node_id {
        return Ok(node.local_node());
    }
    node.cluster_state()
        .nodes
        .get(&id.node)
        .cloned()
        .ok_or_else(|| {
            Error::new(
                "resource_not_found_exception",
                404,
                format!(
                    "task [{}] belongs to the node [{}] which isn't part of the cluster and there is no record of the task",
                    id.render(),
                    id.node
                ),
            )
            .caused_by(id.not_found())
        })
}

/// Runs a task report on the node that holds task `id` (here directly when it is this one).
async fn on_task_node(
    node: &Arc<Node>,
    id: &TaskId,
    report: &str,
) -> Result<(tessera_cluster::DiscoveryNode, Result<Value>)> {
    let target = task_node(node, id)?;
    let params = json!({"id": id.id});
    if target.id == node.node_id {
        let answer = run_report(node, report, &params);
        return Ok((target, answer));
    }
    node.fan_out_to(vec![target], report, params)
        .await
        .pop()
        .ok_or_else(|| id.not_found())
}

/// `GET _tasks/{id}`; with `wait`, waits up to that long for the task to complete
/// (OpenSearch's `timeout_exception` past it).
pub async fn get(node: &Arc<Node>, id: &TaskId, wait: Option<Duration>) -> Result<Value> {
    let deadline = wait.map(|wait| Instant::now() + wait);
    loop {
        let answer = on_task_node(node, id, GET).await?.1?;
        let Some(deadline) = deadline else {
            return Ok(answer);
        };
        if answer["completed"].as_bool() == Some(true) {
            return Ok(answer);
        }
        if Instant::now() >= deadline {
            return Err(Error::new(
                "timeout_exception",
                408,
                format!("Timed out waiting for completion of task [{}]", id.render()),
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `POST /_reindex/{id}/_rethrottle` (and by query): the task's info with its new rate, by
/// node.
pub async fn rethrottle(
    node: &Arc<Node>,
    id: &TaskId,
    rate: Option<f64>,
) -> Result<Vec<(tessera_cluster::DiscoveryNode, Result<Value>)>> {
    let Ok(target) = task_node(node, id) else {
        // OpenSearch answers a node it does not know among the node failures
        let unknown = tessera_cluster::DiscoveryNode {
            id: id.node.clone(),
            name: String::new(),
            ephemeral_id: String::new(),
            transport_address: String::new(),
            http_address: String::new(),
            roles: Vec::new(),
        };
        let error = Error::new(
            "no_such_node_exception",
            404,
            format!("No such node [{}]", id.node),
        )
        .with_meta("node_id", id.node.clone());
        return Ok(vec![(unknown, Err(error))]);
    };
    let params = json!({"id": id.id, "requests_per_second": rate.unwrap_or(-1.0)});
    if target.id == node.node_id {
        let answer = run_report(node, RETHROTTLE, &params);
        return Ok(vec![(target, answer)]);
    }
    Ok(node.fan_out_to(vec![target], RETHROTTLE, params).await)
}

/// `POST _tasks/{id}/_cancel`: the cancelled task's info, by node.
pub async fn cancel_one(
    node: &Arc<Node>,
    id: &TaskId,
) -> Result<Vec<(tessera_cluster::DiscoveryNode, Result<Value>)>> {
    Ok(vec![on_task_node(node, id, CANCEL).await?])
}

/// Lists (`LIST`) or cancels (`CANCEL`) the matching tasks of every node, or of the nodes
/// a `nodes` filter names: each node's answer.
pub async fn on_every_node(
    node: &Arc<Node>,
    report: &str,
    actions: &[String],
    detailed: bool,
    nodes: Option<&str>,
) -> Result<Vec<(tessera_cluster::DiscoveryNode, Result<Value>)>> {
    let params = json!({"actions": actions, "detailed": detailed});
    Ok(match nodes {
        None => node.fan_out(report, params).await,
        Some(expression) => {
            let targets = node.resolve_nodes(expression)?;
            node.fan_out_to(targets, report, params).await
        }
    })
}

/// Waits until none of `ids` (`node:id`) runs any longer, up to `wait`.
pub async fn wait_until_done(node: &Arc<Node>, ids: &[TaskId], wait: Duration) -> Result<()> {
    for id in ids {
        match get(node, id, Some(wait)).await {
            // a result kept, or none (a task whose client waited keeps none): it is done
            Ok(_) => {}
            Err(e) if e.status() == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ids_parse_as_opensearch_writes_them() {
        let id = TaskId::parse("abc:12").unwrap();
        assert_eq!(id.node, "abc");
        assert_eq!(id.id, 12);
        assert_eq!(id.render(), "abc:12");
        for bad in ["foo", ":1", "a:b", "a:"] {
            let e = TaskId::parse(bad).unwrap_err();
            assert_eq!(e.kind(), "illegal_argument_exception");
            assert_eq!(e.reason(), format!("malformed task id {bad}"));
        }
    }

    #[test]
    fn tasks_are_listed_while_running_and_kept_when_asked() {
        let manager = TaskManager::new("n1".into());
        let kept = manager.register("indices:data/write/reindex", "reindex".into(), true);
        let dropped = manager.register("indices:data/write/delete/byquery", "dbq".into(), true);
        assert_eq!(manager.list(&[], false).len(), 2);
        let only = manager.list(&["*reindex".to_string()], true);
        assert_eq!(only.len(), 1);
        assert_eq!(only[0]["description"], "reindex");
        let (kept_id, dropped_id) = (kept.id(), dropped.id());
        assert_eq!(manager.get(kept_id).unwrap()["completed"], false);
        kept.finish(&Ok(json!({"total": 3})), true);
        drop(dropped);
        assert!(manager.list(&[], false).is_empty());
        let answer = manager.get(kept_id).unwrap();
        assert_eq!(answer["completed"], true);
        assert_eq!(answer["response"]["total"], 3);
        assert_eq!(answer["task"]["id"], kept_id);
        let e = manager.get(dropped_id).unwrap_err();
        assert_eq!(e.status(), 404);
        assert_eq!(
            e.reason(),
            format!("task [n1:{dropped_id}] isn't running and hasn't stored its results")
        );
    }

    #[test]
    fn cancelling_marks_matching_cancellable_tasks() {
        let manager = TaskManager::new("n1".into());
        let a = manager.register("indices:data/write/update/byquery", String::new(), true);
        let b = manager.register("indices:data/write/reindex", String::new(), true);
        let cancelled = manager.cancel_matching(&["*byquery".to_string()]);
        assert_eq!(cancelled.len(), 1);
        assert!(a.task().is_cancelled());
        assert!(!b.task().is_cancelled());
        assert!(manager.cancel(b.id()).is_ok());
        assert!(b.task().is_cancelled());
        assert_eq!(manager.cancel(999).unwrap_err().status(), 404);
    }

    #[test]
    fn a_rethrottle_changes_the_rate_and_the_status() {
        let manager = TaskManager::new("n1".into());
        let task = manager.register("indices:data/write/reindex", String::new(), true);
        assert_eq!(task.task().requests_per_second(), None);
        task.task().set_status(json!({"requests_per_second": -1.0}));
        let info = manager.rethrottle(task.id(), Some(2.5)).unwrap();
        assert_eq!(info["status"]["requests_per_second"], 2.5);
        assert_eq!(task.task().requests_per_second(), Some(2.5));
        manager.rethrottle(task.id(), None).unwrap();
        assert_eq!(task.task().requests_per_second(), None);
        assert_eq!(manager.rethrottle(99, None).unwrap_err().status(), 404);
    }

    #[test]
    fn only_the_latest_results_are_kept() {
        let manager = TaskManager::new("n1".into());
        let first = manager.register("a", String::new(), false);
        let first_id = first.id();
        first.finish(&Ok(json!({})), true);
        for _ in 0..KEPT_RESULTS {
            manager
                .register("a", String::new(), false)
                .finish(&Ok(json!({})), true);
        }
        assert!(manager.get(first_id).is_err());
        assert_eq!(manager.finished.lock().unwrap().len(), KEPT_RESULTS);
        // and at most KEPT_BYTES of them
        let big = json!({"failures": "x".repeat(KEPT_BYTES / 3)});
        for _ in 0..3 {
            manager
                .register("a", String::new(), false)
                .finish(&Ok(big.clone()), true);
        }
        let finished = manager.finished.lock().unwrap();
        assert_eq!(finished.len(), 2);
        assert!(finished.iter().map(|f| f.bytes).sum::<usize>() <= KEPT_BYTES);
    }
}
