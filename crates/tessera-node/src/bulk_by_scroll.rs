//! What `_delete_by_query`, `_update_by_query` and `_reindex` share (OpenSearch's "bulk by
//! scroll"): read the matching documents in batches through a scroll (pinned readers, so any
//! node may coordinate and the documents are read as of one moment), turn each hit into a
//! write, send each batch through the write service as a `_bulk` would, and count what
//! happened. A write carries the hit's `_seq_no`/`_primary_term` when the caller asks for it,
//! so that a document changed since it was read is a version conflict, as in OpenSearch.
//!
//! Slices run one after another (each a scroll with `slice`), and are reported as OpenSearch
//! reports them. The loop stops between batches when its task is cancelled, on the first
//! failure, or at `max_docs`; `requests_per_second` waits between batches.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use tessera_common::{Error, Result};
use tessera_index::WriteOutcome;
use tessera_search::coordinator::Hit;
use tessera_search::pinned::read_total;
use tessera_search::{ResponseOptions, SearchResponse};

use crate::search_service::SearchTarget;
use crate::tasks::Task;
use crate::write::{Operation, WriteOptions};
use crate::Node;

/// Which of the three APIs runs: its task action and the counters its answer shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    DeleteByQuery,
    UpdateByQuery,
    Reindex,
}

impl Kind {
    /// The task's action, as OpenSearch names it.
    pub fn action(self) -> &'static str {
        match self {
            Kind::DeleteByQuery => "indices:data/write/delete/byquery",
            Kind::UpdateByQuery => "indices:data/write/update/byquery",
            Kind::Reindex => "indices:data/write/reindex",
        }
    }

    /// The REST answer of a delete-by-query has no `updated` (nor `created`), an
    /// update-by-query no `created`; a task's status has all of them.
    fn shows(self, counter: &str) -> bool {
        !matches!(
            (self, counter),
            (Kind::DeleteByQuery, "updated" | "created") | (Kind::UpdateByQuery, "created")
        )
    }
}

/// `conflicts`: what a version conflict does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conflicts {
    /// Fails the request (the conflicts are its failures).
    Abort,
    /// Counted, and the request goes on.
    Proceed,
}

impl Conflicts {
    pub fn parse(text: &str) -> Result<Conflicts> {
        match text {
            "abort" => Ok(Conflicts::Abort),
            "proceed" => Ok(Conflicts::Proceed),
            other => Err(Error::illegal_argument(format!(
                "conflicts may only be \"proceed\" or \"abort\" but was [{other}]"
            ))),
        }
    }
}

/// `slices`: a count, or `auto` (one per shard of the source, the fewest of its indices').
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slices {
    Auto,
    Count(u32),
}

impl Slices {
    pub fn parse(text: &str) -> Result<Slices> {
        if text == "auto" {
            return Ok(Slices::Auto);
        }
        match text.parse::<i64>() {
            Ok(n) if n > 0 => Ok(Slices::Count(n.min(u32::MAX as i64) as u32)),
            _ => Err(Error::illegal_argument(format!(
                "[slices] must be a positive integer or the string \"auto\", but was [{text}]"
            ))),
        }
    }
}

/// `requests_per_second`: `-1` (or unset) is no limit; anything else must be positive.
pub fn parse_requests_per_second(text: &str) -> Result<Option<f64>> {
    let invalid = || {
        Error::illegal_argument(
            "[requests_per_second] must be a float greater than 0. Use -1 to disable throttling.",
        )
    };
    let value: f64 = text.parse().map_err(|_| {
        invalid().caused_by(Error::new(
            "number_format_exception",
            400,
            format!("For input string: \"{text}\""),
        ))
    })?;
    if value == -1.0 {
        return Ok(None);
    }
    if value <= 0.0 || !value.is_finite() {
        return Err(invalid());
    }
    Ok(Some(value))
}

/// Turns a hit into its write: `None` counts as a noop; an error fails the whole request (as
/// a script's failure does in OpenSearch).
pub type ToWrite = Arc<dyn Fn(&Hit) -> Result<Option<Operation>> + Send + Sync>;

/// The options the three APIs share (URL parameters, and `conflicts`/`max_docs` of the body).
#[derive(Clone, Debug)]
pub struct Options {
    /// Documents per batch (`scroll_size`, reindex's `source.size`).
    pub batch_size: u64,
    pub max_docs: Option<u64>,
    pub conflicts: Conflicts,
    pub slices: Slices,
    /// `refresh`: refresh what was written once done.
    pub refresh: bool,
    pub requests_per_second: Option<f64>,
    /// `scroll`: how long each batch's readers stay pinned.
    pub keep_alive: Duration,
    pub write_options: WriteOptions,
}

/// OpenSearch's default batch size.
pub const DEFAULT_BATCH_SIZE: u64 = 1000;
/// OpenSearch's default scroll keep-alive of a bulk-by-scroll request.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(300);

impl Default for Options {
    fn default() -> Self {
        Options {
            batch_size: DEFAULT_BATCH_SIZE,
            max_docs: None,
            conflicts: Conflicts::Abort,
            slices: Slices::Count(1),
            refresh: false,
            requests_per_second: None,
            keep_alive: DEFAULT_KEEP_ALIVE,
            write_options: crate::write::Refresh::None.into(),
        }
    }
}

/// One request, parsed.
pub struct BulkByScroll {
    pub kind: Kind,
    /// The task's description (`_tasks?detailed`).
    pub description: String,
    /// The documents to read: the source indices (and `routing`).
    pub source: SearchTarget,
    /// The search body of each batch: `query`, `_source`… (`size`, `slice`, `sort` and the
    /// hit metadata are set here).
    pub search: Map<String, Value>,
    /// URL parameters of the search (`q`, `df`, …).
    pub search_params: BTreeMap<String, String>,
    pub options: Options,
    /// The indices `refresh` refreshes (by name: a reindex creates its destination), with
    /// those the writes went to (a reindex script may choose another index).
    pub refresh_targets: Vec<String>,
    pub written_to: Mutex<BTreeSet<String>>,
    pub to_write: ToWrite,
}

/// What [`execute`] did: finished (the client waited), or started as a task.
pub enum Started {
    Done(Outcome),
    Task(crate::tasks::TaskId),
}

/// Runs `request` as a task of this node, in the background: with `wait_for_completion` the
/// answer waits for its end (a client that leaves does not stop it, as in OpenSearch), else it
/// is the task's id, and the task keeps its result for `GET _tasks/{id}`.
pub async fn execute(
    node: &Arc<Node>,
    request: BulkByScroll,
    wait_for_completion: bool,
) -> Result<Started> {
    check(node, &request)?;
    let guard = node
        .tasks
        .register(request.kind.action(), request.description.clone(), true);
    guard
        .task()
        .set_requests_per_second(request.options.requests_per_second);
    let id = node.tasks.task_id(guard.id());
    let node = node.clone();
    let running = tokio::spawn(async move {
        let result = run(&node, request, guard.task()).await;
        let keep = !wait_for_completion;
        guard.finish(
            &result.as_ref().map(Outcome::stored).map_err(Clone::clone),
            keep,
        );
        result
    });
    if !wait_for_completion {
        return Ok(Started::Task(id));
    }
    running
        .await
        .map_err(|e| Error::internal("run a bulk-by-scroll task", e))?
        .map(Started::Done)
}

/// The counters of a slice, or of the whole request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Progress {
    pub total: u64,
    pub updated: u64,
    pub created: u64,
    pub deleted: u64,
    pub batches: u64,
    pub version_conflicts: u64,
    pub noops: u64,
    pub throttled_millis: u64,
    pub canceled: bool,
}

impl Progress {
    fn add(&mut self, other: &Progress) {
        self.total += other.total;
        self.updated += other.updated;
        self.created += other.created;
        self.deleted += other.deleted;
        self.batches += other.batches;
        self.version_conflicts += other.version_conflicts;
        self.noops += other.noops;
        self.throttled_millis += other.throttled_millis;
        self.canceled |= other.canceled;
    }

    /// The counters in OpenSearch's order; `all` for a task's status, else only those `kind`
    /// shows; `human` adds the `throttled`/`throttled_until` texts of a stored result.
    fn render(
        &self,
        kind: Kind,
        all: bool,
        human: bool,
        requests_per_second: Option<f64>,
    ) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("total".into(), json!(self.total));
        for (name, value) in [("updated", self.updated), ("created", self.created)] {
            if all || kind.shows(name) {
                out.insert(name.into(), json!(value));
            }
        }
        out.insert("deleted".into(), json!(self.deleted));
        out.insert("batches".into(), json!(self.batches));
        out.insert("version_conflicts".into(), json!(self.version_conflicts));
        out.insert("noops".into(), json!(self.noops));
        out.insert("retries".into(), json!({"bulk": 0, "search": 0}));
        if human {
            out.insert(
                "throttled".into(),
                json!(tessera_common::time::format_time_value(
                    self.throttled_millis
                )),
            );
        }
        out.insert("throttled_millis".into(), json!(self.throttled_millis));
        out.insert(
            "requests_per_second".into(),
            json!(requests_per_second.unwrap_or(-1.0)),
        );
        if self.canceled {
            out.insert("canceled".into(), json!("by user request"));
        }
        if human {
            out.insert("throttled_until".into(), json!("0s"));
        }
        out.insert("throttled_until_millis".into(), json!(0));
        out
    }
}

/// What the request did: its counters (each slice's when sliced) and failures.
pub struct Outcome {
    pub kind: Kind,
    pub took_millis: u64,
    pub slices: Vec<Progress>,
    /// More than one slice was asked for (the answer lists them).
    pub sliced: bool,
    pub failures: Vec<Value>,
    pub requests_per_second: Option<f64>,
}

impl Outcome {
    fn sum(&self) -> Progress {
        let mut sum = Progress::default();
        for slice in &self.slices {
            sum.add(slice);
        }
        sum
    }

    fn body(&self, all: bool, human: bool) -> Value {
        let mut out = Map::new();
        out.insert("took".into(), json!(self.took_millis));
        out.insert("timed_out".into(), json!(false));
        out.extend(
            self.sum()
                .render(self.kind, all, human, self.requests_per_second),
        );
        if self.sliced {
            let slices = self
                .slices
                .iter()
                .enumerate()
                .map(|(id, slice)| {
                    let mut body = Map::new();
                    body.insert("slice_id".into(), json!(id));
                    body.extend(slice.render(self.kind, all, human, self.requests_per_second));
                    Value::Object(body)
                })
                .collect();
            out.insert("slices".into(), Value::Array(slices));
        }
        out.insert("failures".into(), Value::Array(self.failures.clone()));
        Value::Object(out)
    }

    /// The REST answer.
    pub fn response(&self) -> Value {
        self.body(false, false)
    }

    /// The answer kept for `GET _tasks/{id}` (every counter, and the human-readable times,
    /// as OpenSearch stores it).
    pub fn stored(&self) -> Value {
        self.body(true, true)
    }

    /// The HTTP status: that of the worst failure, 200 without any.
    pub fn status(&self) -> u16 {
        self.failures
            .iter()
            .filter_map(|f| f["status"].as_u64())
            .max()
            .map_or(200, |s| s as u16)
    }
}

/// A task's `status` while it runs.
fn task_status(
    kind: Kind,
    done: &[Progress],
    current: &Progress,
    sliced: bool,
    rps: Option<f64>,
) -> Value {
    let mut sum = current.clone();
    for slice in done {
        sum.add(slice);
    }
    let mut status = sum.render(kind, true, false, rps);
    if sliced {
        let slices: Vec<Value> = done
            .iter()
            .chain(std::iter::once(current))
            .enumerate()
            .map(|(id, slice)| {
                let mut body = Map::new();
                body.insert("slice_id".into(), json!(id));
                body.extend(slice.render(kind, true, false, rps));
                Value::Object(body)
            })
            .collect();
        status.insert("slices".into(), Value::Array(slices));
    }
    Value::Object(status)
}

/// How many slices `slices` means for `source`.
fn slice_count(node: &Arc<Node>, request: &BulkByScroll) -> Result<u32> {
    match request.options.slices {
        Slices::Count(n) => Ok(n),
        Slices::Auto => {
            let indices = node.resolve(&request.source.expression, &request.source.options)?;
            Ok(indices
                .iter()
                .map(|index| index.metadata().number_of_shards)
                .min()
                .unwrap_or(1)
                .max(1))
        }
    }
}

/// The checks that fail a request before it starts (a client that does not wait learns of
/// them in its answer, not in the task's): the slices, `max_docs`, and the search itself.
fn check(node: &Arc<Node>, request: &BulkByScroll) -> Result<u32> {
    let slices = slice_count(node, request)?;
    if let Some(max_docs) = request.options.max_docs {
        if max_docs < slices as u64 {
            return Err(Error::illegal_argument("[max_docs] should be >= [slices]"));
        }
    }
    let service = node.search_service();
    let body = batch_search(request, None, request.options.max_docs);
    service.prepare(
        service.source(Some(body), request.search_params.clone()),
        None,
        |e| e,
    )?;
    Ok(slices)
}

/// Runs `request` under `task`.
pub async fn run(node: &Arc<Node>, request: BulkByScroll, task: &Task) -> Result<Outcome> {
    let started = Instant::now();
    let slices = check(node, &request)?;
    let sliced = slices > 1;
    let mut done: Vec<Progress> = Vec::new();
    let mut failures = Vec::new();
    for slice in 0..slices {
        let max_docs = request.options.max_docs.map(|max| {
            let share = max / slices as u64;
            share + u64::from((slice as u64) < max % slices as u64)
        });
        let slice_spec = sliced.then_some((slice, slices));
        let mut progress = Progress::default();
        let result = run_slice(
            node,
            &request,
            task,
            slice_spec,
            max_docs,
            &done,
            &mut progress,
            &mut failures,
        )
        .await;
        done.push(progress);
        result?;
        if !failures.is_empty() || task.is_cancelled() {
            break;
        }
    }
    if sliced {
        // slices not started (a failure or a cancellation) are reported empty
        while done.len() < slices as usize {
            done.push(Progress {
                canceled: task.is_cancelled(),
                ..Progress::default()
            });
        }
    }
    let mut refresh_targets: BTreeSet<String> = request.refresh_targets.iter().cloned().collect();
    refresh_targets.extend(request.written_to.lock().unwrap().iter().cloned());
    if request.options.refresh && !refresh_targets.is_empty() {
        let indices = refresh_targets
            .iter()
            .filter_map(|name| node.index(name))
            .collect();
        node.refresh_indices(indices).await?;
    }
    Ok(Outcome {
        kind: request.kind,
        took_millis: started.elapsed().as_millis() as u64,
        slices: done,
        sliced,
        failures,
        requests_per_second: task.requests_per_second(),
    })
}

/// The search of one slice's batches.
fn batch_search(
    request: &BulkByScroll,
    slice: Option<(u32, u32)>,
    max_docs: Option<u64>,
) -> String {
    let mut body = request.search.clone();
    let size = max_docs.map_or(request.options.batch_size, |max| {
        max.min(request.options.batch_size)
    });
    body.insert("size".into(), json!(size));
    if !body.contains_key("sort") {
        body.insert("sort".into(), json!(["_doc"]));
    }
    body.insert("seq_no_primary_term".into(), json!(true));
    body.insert("version".into(), json!(true));
    body.insert("track_total_hits".into(), json!(true));
    if let Some((id, max)) = slice {
        body.insert("slice".into(), json!({"id": id, "max": max}));
    }
    Value::Object(body).to_string()
}

/// Reads and writes one slice; its counters go into `progress`, its failures into `failures`.
#[allow(clippy::too_many_arguments)]
async fn run_slice(
    node: &Arc<Node>,
    request: &BulkByScroll,
    task: &Task,
    slice: Option<(u32, u32)>,
    max_docs: Option<u64>,
    done: &[Progress],
    progress: &mut Progress,
    failures: &mut Vec<Value>,
) -> Result<()> {
    let service = node.search_service();
    let body = batch_search(request, slice, max_docs);
    let source = service.source(Some(body), request.search_params.clone());
    let search = service.prepare(source, None, |e| e)?;
    let options = ResponseOptions::default();
    let mut page = service
        .open_scroll(&request.source, search, request.options.keep_alive, options)
        .await?;
    let mut remaining = max_docs.unwrap_or(u64::MAX);
    let total = page
        .hits
        .total
        .as_ref()
        .and_then(read_total)
        .map_or(0, |(value, _)| value);
    progress.total = total.min(remaining);
    let status = |progress: &Progress| {
        task_status(
            request.kind,
            done,
            progress,
            slice.is_some(),
            task.requests_per_second(),
        )
    };
    task.set_status(status(progress));
    let result = loop {
        if task.is_cancelled() {
            progress.canceled = true;
            break Ok(());
        }
        if let Some(search_failures) = search_failures(&page) {
            failures.extend(search_failures);
            break Ok(());
        }
        let mut hits = std::mem::take(&mut page.hits.hits);
        hits.truncate(remaining.min(usize::MAX as u64) as usize);
        if hits.is_empty() {
            break Ok(());
        }
        let hit_count = hits.len();
        let batch_started = Instant::now();
        let conflicts_before = progress.version_conflicts;
        if let Err(e) = write_batch(node, request, hits, progress, failures).await {
            break Err(e);
        }
        progress.batches += 1;
        // with conflicts=proceed, max_docs counts the documents written, as in OpenSearch: a
        // conflict leaves room for another document
        let skipped = match request.options.conflicts {
            Conflicts::Proceed => progress.version_conflicts - conflicts_before,
            Conflicts::Abort => 0,
        };
        remaining -= hit_count as u64 - skipped;
        task.set_status(status(progress));
        throttle(task, batch_started, hit_count, progress).await;
        task.set_status(status(progress));
        if !failures.is_empty() || remaining == 0 {
            break Ok(());
        }
        if task.is_cancelled() {
            progress.canceled = true;
            break Ok(());
        }
        let Some(id) = page._scroll_id.clone() else {
            break Ok(());
        };
        page = match service
            .scroll(&id, Some(request.options.keep_alive), options)
            .await
        {
            Ok(page) => page,
            Err(e) => break Err(e),
        };
    };
    task.set_status(status(progress));
    if let Some(id) = page._scroll_id.as_deref() {
        let _ = service.clear_scroll(Some(&[id.to_string()])).await;
    }
    result
}

/// The shard failures of a page, as OpenSearch lists search failures.
fn search_failures(page: &SearchResponse) -> Option<Vec<Value>> {
    if page._shards.failures.is_empty() {
        return None;
    }
    Some(
        page._shards
            .failures
            .iter()
            .map(|failure| {
                let mut failure = failure.clone();
                if let Some(map) = failure.as_object_mut() {
                    let status = map
                        .get("reason")
                        .and_then(|r| r.get("status"))
                        .cloned()
                        .unwrap_or(json!(500));
                    map.entry("status").or_insert(status);
                }
                failure
            })
            .collect(),
    )
}

/// Writes one batch through the write service and counts each item's outcome. The hits
/// become writes on the `write` pool (a script may run for each).
async fn write_batch(
    node: &Arc<Node>,
    request: &BulkByScroll,
    hits: Vec<Hit>,
    progress: &mut Progress,
    failures: &mut Vec<Value>,
) -> Result<()> {
    let to_write = request.to_write.clone();
    let writes = node
        .pools
        .write
        .run(move || hits.iter().map(&*to_write).collect::<Result<Vec<_>>>())
        .await?;
    let mut operations = Vec::with_capacity(writes.len());
    for write in writes {
        match write {
            Some(operation) => operations.push(operation),
            None => progress.noops += 1,
        }
    }
    {
        let mut written_to = request.written_to.lock().unwrap();
        for operation in &operations {
            if !written_to.contains(&operation.index) {
                written_to.insert(operation.index.clone());
            }
        }
    }
    let targets: Vec<(String, Option<String>)> = operations
        .iter()
        .map(|op| (op.index.clone(), op.write.id().map(String::from)))
        .collect();
    let results = node
        .write_service()
        .execute(operations, request.options.write_options)
        .await;
    for ((index, id), result) in targets.iter().zip(results) {
        match result {
            Ok(item) => match item.result.written.outcome {
                WriteOutcome::Created => progress.created += 1,
                WriteOutcome::Updated => progress.updated += 1,
                // a delete counts as deleted even when there was nothing to delete (a reindex
                // script's `ctx.op = "delete"` in a new index), as OpenSearch counts it
                WriteOutcome::Deleted | WriteOutcome::NotFound => progress.deleted += 1,
                WriteOutcome::Noop => progress.noops += 1,
            },
            Err(e) if e.kind() == "version_conflict_engine_exception" => {
                progress.version_conflicts += 1;
                if request.options.conflicts == Conflicts::Abort {
                    failures.push(failure(index, id.as_deref(), &e));
                }
            }
            Err(e) => failures.push(failure(index, id.as_deref(), &e)),
        }
    }
    Ok(())
}

/// A write's failure as OpenSearch lists it: index, id, cause, status.
fn failure(index: &str, id: Option<&str>, error: &Error) -> Value {
    json!({
        "index": index,
        "id": id,
        "cause": error.to_json(),
        "status": error.status(),
    })
}

/// Waits until a batch of `count` writes has taken `count / rps` seconds (the task's current
/// `requests_per_second`), watching for a cancellation meanwhile.
async fn throttle(task: &Task, started: Instant, count: usize, progress: &mut Progress) {
    let waiting_since = Instant::now();
    // the rate is read again while waiting: a rethrottle applies at once
    while let Some(rps) = task.requests_per_second() {
        let wanted = Duration::from_secs_f64(count as f64 / rps);
        if started.elapsed() >= wanted || task.is_cancelled() {
            break;
        }
        let left = wanted.saturating_sub(started.elapsed());
        tokio::time::sleep(left.min(Duration::from_millis(50))).await;
    }
    progress.throttled_millis += waiting_since.elapsed().as_millis() as u64;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_parse_with_opensearch_errors() {
        assert_eq!(Conflicts::parse("proceed").unwrap(), Conflicts::Proceed);
        assert_eq!(
            Conflicts::parse("foo").unwrap_err().reason(),
            "conflicts may only be \"proceed\" or \"abort\" but was [foo]"
        );
        assert_eq!(Slices::parse("auto").unwrap(), Slices::Auto);
        assert_eq!(Slices::parse("3").unwrap(), Slices::Count(3));
        assert_eq!(
            Slices::parse("0").unwrap_err().reason(),
            "[slices] must be a positive integer or the string \"auto\", but was [0]"
        );
        assert_eq!(parse_requests_per_second("-1").unwrap(), None);
        assert_eq!(parse_requests_per_second("2.5").unwrap(), Some(2.5));
        assert!(parse_requests_per_second("0").is_err());
        assert!(parse_requests_per_second("x").is_err());
    }

    #[test]
    fn answers_show_the_counters_of_their_api() {
        let outcome = |kind| Outcome {
            kind,
            took_millis: 5,
            slices: vec![
                Progress {
                    total: 2,
                    deleted: 2,
                    batches: 1,
                    ..Progress::default()
                },
                Progress::default(),
            ],
            sliced: true,
            failures: vec![],
            requests_per_second: None,
        };
        let delete = outcome(Kind::DeleteByQuery).response();
        assert!(delete.get("updated").is_none() && delete.get("created").is_none());
        assert_eq!(delete["deleted"], 2);
        assert_eq!(delete["slices"][1]["slice_id"], 1);
        assert_eq!(delete["requests_per_second"], json!(-1.0));
        let update = outcome(Kind::UpdateByQuery).response();
        assert!(update.get("updated").is_some() && update.get("created").is_none());
        let reindex = outcome(Kind::Reindex).response();
        assert!(reindex.get("created").is_some());
        let stored = outcome(Kind::DeleteByQuery).stored();
        assert_eq!(stored["updated"], 0);
        assert_eq!(stored["throttled"], "0s");
        assert_eq!(outcome(Kind::Reindex).status(), 200);
    }

    /// A node with `docs` (2 shards) holding `{"n": i}` for i in 0..10, refreshed.
    fn node_with_docs(dir: &std::path::Path) -> Arc<Node> {
        use crate::write::tests::{block_on, create, index_op, start};
        let node = start(dir);
        create(&node, "docs", 2);
        let operations = (0..10)
            .map(|i| index_op("docs", Some(&i.to_string()), None, json!({"n": i})))
            .collect();
        let results = block_on(
            node.write_service()
                .execute(operations, crate::write::Refresh::Immediate),
        );
        assert!(results.iter().all(|r| r.is_ok()));
        node
    }

    fn target() -> SearchTarget {
        SearchTarget {
            expression: "docs".into(),
            options: crate::ResolveOptions::default(),
            routing: None,
            preference: crate::preference::Preference::none(),
        }
    }

    fn done(started: Result<Started>) -> Outcome {
        match started.ok().unwrap() {
            Started::Done(outcome) => outcome,
            Started::Task(_) => panic!("the request did not wait"),
        }
    }

    #[test]
    fn a_delete_by_query_deletes_what_it_matches_in_batches_and_slices() {
        use crate::write::tests::block_on;
        let dir = tempfile::tempdir().unwrap();
        let node = node_with_docs(dir.path());
        let options = Options {
            batch_size: 2,
            refresh: true,
            ..Options::default()
        };
        let query = json!({"query": {"range": {"n": {"gte": 5}}}});
        let request = crate::by_query::delete_by_query(
            &node,
            target(),
            query.as_object().unwrap().clone(),
            BTreeMap::new(),
            options.clone(),
            vec!["docs".into()],
        )
        .ok()
        .unwrap();
        let outcome = done(block_on(execute(&node, request, true)));
        let response = outcome.response();
        assert_eq!(response["total"], 5, "{response}");
        assert_eq!(response["deleted"], 5, "{response}");
        assert!(response["batches"].as_u64().unwrap() >= 3, "{response}");
        // sliced by shard, max_docs shared between the slices
        let request = crate::by_query::delete_by_query(
            &node,
            target(),
            json!({"query": {"match_all": {}}})
                .as_object()
                .unwrap()
                .clone(),
            BTreeMap::new(),
            Options {
                slices: Slices::Auto,
                max_docs: Some(4),
                ..options
            },
            vec!["docs".into()],
        )
        .ok()
        .unwrap();
        let outcome = done(block_on(execute(&node, request, true)));
        let response = outcome.response();
        assert_eq!(
            response["slices"].as_array().unwrap().len(),
            2,
            "{response}"
        );
        assert_eq!(response["deleted"], 4, "{response}");
        // what is left
        let index = node.index("docs").unwrap();
        let left: u64 = index.shards().iter().map(|s| s.doc_counts().0).sum();
        assert_eq!(left, 1);
    }

    #[test]
    fn a_task_that_did_not_wait_keeps_its_result() {
        use crate::write::tests::block_on;
        let dir = tempfile::tempdir().unwrap();
        let node = node_with_docs(dir.path());
        let request = crate::by_query::update_by_query(
            &node,
            target(),
            Map::new(),
            BTreeMap::new(),
            Options::default(),
            vec!["docs".into()],
        )
        .ok()
        .unwrap();
        let answer = block_on(async {
            let Ok(Started::Task(id)) = execute(&node, request, false).await else {
                panic!("no task");
            };
            crate::tasks::get(&node, &id, Some(Duration::from_secs(30))).await
        })
        .unwrap();
        assert_eq!(answer["completed"], true, "{answer}");
        assert_eq!(answer["response"]["updated"], 10, "{answer}");
        assert_eq!(answer["task"]["action"], Kind::UpdateByQuery.action());
    }

    #[test]
    fn the_worst_failure_is_the_status() {
        let outcome = Outcome {
            kind: Kind::Reindex,
            took_millis: 0,
            slices: vec![Progress::default()],
            sliced: false,
            failures: vec![json!({"status": 409}), json!({"status": 400})],
            requests_per_second: None,
        };
        assert_eq!(outcome.status(), 409);
        assert!(outcome.response().get("slices").is_none());
    }
}
