//! Ingest pipelines on a node: their definitions are cluster metadata (the `ingest/<id>` keys
//! of the metadata store, in every node's `ClusterState`; a single node writes its own store,
//! a cluster member asks the elected manager), compiled once per definition when first used,
//! and run on the coordinating node before a document is routed (`?pipeline=`,
//! `index.default_pipeline`, `index.final_pipeline`), as OpenSearch runs them on its ingest
//! node before the write. The processors themselves are `tessera_ingest`'s.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use serde_json::{Map, Value};
use tessera_cluster::ClusterState;
use tessera_common::settings::Settings;
use tessera_common::{Error, Result};
use tessera_index::aliases::Aliases;
use tessera_index::DocWrite;
use tessera_ingest::pipeline::Outcome;
use tessera_ingest::{IngestDocument, Pipeline, PipelineLookup};
use tessera_mapping::Mapping;

use crate::node::{ClusterMode, Node};
use crate::write::Operation;

/// `_none`: no pipeline (a request's or an index setting's).
pub const NONE: &str = "_none";

/// The compiled pipelines, by id, each with the definition it was compiled from, and what
/// this node ran through them (`_nodes/stats`' `ingest`).
#[derive(Default)]
pub struct PipelineCache {
    compiled: Mutex<HashMap<String, (String, Arc<Pipeline>)>>,
    total: Counters,
    by_pipeline: Mutex<BTreeMap<String, Arc<Counters>>>,
}

/// Documents run through pipelines: OpenSearch's `count`, `time_in_millis`, `current`,
/// `failed`.
#[derive(Default)]
pub struct Counters {
    count: AtomicU64,
    nanos: AtomicU64,
    current: AtomicU64,
    failed: AtomicU64,
}

impl Counters {
    fn start(&self) {
        self.current.fetch_add(1, Ordering::Relaxed);
    }

    fn end(&self, started: Instant, failed: bool) {
        self.current.fetch_sub(1, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.nanos
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        if failed {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn render(&self) -> Value {
        serde_json::json!({
            "count": self.count.load(Ordering::Relaxed),
            "time_in_millis": self.nanos.load(Ordering::Relaxed) / 1_000_000,
            "current": self.current.load(Ordering::Relaxed),
            "failed": self.failed.load(Ordering::Relaxed),
        })
    }
}

impl PipelineCache {
    /// The pipeline `id` of `state`, compiled; `None` when the state has no such pipeline.
    pub fn get(&self, state: &ClusterState, id: &str) -> Result<Option<Arc<Pipeline>>> {
        let Some(definition) = state.pipelines.get(id) else {
            return Ok(None);
        };
        if let Some((text, pipeline)) = self.compiled.lock().unwrap().get(id) {
            if text == definition {
                return Ok(Some(pipeline.clone()));
            }
        }
        let pipeline = Arc::new(compile(id, definition)?);
        let mut compiled = self.compiled.lock().unwrap();
        compiled.retain(|id, _| state.pipelines.contains_key(id));
        compiled.insert(id.to_string(), (definition.clone(), pipeline.clone()));
        Ok(Some(pipeline))
    }

    fn counters(&self, id: &str) -> Arc<Counters> {
        self.by_pipeline
            .lock()
            .unwrap()
            .entry(id.to_string())
            .or_default()
            .clone()
    }

    /// `_nodes/stats`' `ingest` section: documents through pipelines on this node, in all
    /// and per pipeline of `state` (those that ran here since the node started).
    pub fn stats(&self, state: &ClusterState) -> Value {
        let compiled = self.compiled.lock().unwrap();
        let pipelines: Map<String, Value> = self
            .by_pipeline
            .lock()
            .unwrap()
            .iter()
            .filter(|(id, _)| state.pipelines.contains_key(*id))
            .map(|(id, counters)| {
                let mut rendered = counters.render();
                // the processors of the current definition (a new definition starts at 0)
                if let Some((text, pipeline)) = compiled.get(id) {
                    if state.pipelines.get(id) == Some(text) {
                        rendered["processors"] = pipeline.processor_stats();
                    }
                }
                (id.clone(), rendered)
            })
            .collect();
        serde_json::json!({ "total": self.total.render(), "pipelines": pipelines })
    }
}

fn compile(id: &str, definition: &str) -> Result<Pipeline> {
    let value: Value = serde_json::from_str(definition)
        .map_err(|e| Error::internal(format!("read the pipeline [{id}]"), e))?;
    Pipeline::parse(id, &value)
}

/// The pipelines of one cluster state, for the `pipeline` processor.
pub struct StateLookup<'a> {
    node: &'a Node,
    state: Arc<ClusterState>,
}

impl PipelineLookup for StateLookup<'_> {
    fn pipeline(&self, id: &str) -> Option<Arc<Pipeline>> {
        self.node.pipelines.get(&self.state, id).ok().flatten()
    }
}

/// `pipeline with id [x] does not exist`, OpenSearch's error for a write naming a pipeline
/// that is not there.
pub fn missing_pipeline(id: &str) -> Error {
    Error::illegal_argument(format!("pipeline with id [{id}] does not exist"))
}

/// The ids of `state`'s pipelines that `pattern` names (`*` wildcards; a comma-separated
/// list too when `list`: GET takes one, DELETE a single id or pattern, as in OpenSearch).
pub fn matching_ids(state: &ClusterState, pattern: &str, list: bool) -> Vec<String> {
    let patterns: Vec<&str> = if list {
        pattern.split(',').map(str::trim).collect()
    } else {
        vec![pattern]
    };
    state
        .pipelines
        .keys()
        .filter(|id| {
            patterns
                .iter()
                .any(|p| tessera_mapping::dynamic::simple_match(p, id))
        })
        .cloned()
        .collect()
}

/// What became of a write after its pipelines.
// `Write` is what nearly every operation of a bulk becomes: boxing it would allocate per item
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Ingested {
    /// To be written (its index, id, routing and source as the pipelines left them).
    Write(Operation),
    /// A `drop` processor dropped it: answered as a noop, nothing written.
    Dropped {
        index: String,
        id: Option<String>,
        create: bool,
    },
}

/// The pipelines an index's settings name.
#[derive(Clone, Debug, Default)]
struct IndexPipelines {
    default: Option<String>,
    last: Option<String>,
}

/// The outcome of [`Node::ingest_all`].
#[derive(Debug)]
pub struct IngestBatch {
    /// One per operation, in order.
    pub results: Vec<Result<Ingested>>,
    /// How long the pipelines took, when any applied (a bulk response's `ingest_took`).
    pub took_millis: Option<u64>,
}

impl Node {
    /// `PUT _ingest/pipeline/{id}`: validated here (an invalid definition is the 400 of its
    /// first problem), then stored as cluster metadata.
    pub fn put_pipeline(&self, id: &str, definition: &Value) -> Result<()> {
        Pipeline::parse(id, definition)?;
        let text = definition.to_string();
        match &self.cluster {
            ClusterMode::Single(cluster) => cluster.put_pipeline(id, text),
            ClusterMode::Member(coordination) => coordination.put_pipeline(id, text),
        }
    }

    /// `DELETE _ingest/pipeline/{id}` (wildcards allowed): 404 when nothing matches.
    pub fn delete_pipelines(&self, pattern: &str) -> Result<()> {
        let ids = matching_ids(&self.cluster_state(), pattern, false);
        if ids.is_empty() {
            return Err(Error::new(
                "resource_not_found_exception",
                404,
                format!("pipeline [{pattern}] is missing"),
            ));
        }
        match &self.cluster {
            ClusterMode::Single(cluster) => cluster.delete_pipelines(&ids),
            ClusterMode::Member(coordination) => coordination.delete_pipelines(&ids),
        }
    }

    /// The definitions of the pipelines `pattern` names (all without one), by id.
    pub fn pipeline_definitions(&self, pattern: Option<&str>) -> BTreeMap<String, Value> {
        let state = self.cluster_state();
        let ids = match pattern {
            Some(pattern) => matching_ids(&state, pattern, true),
            None => state.pipelines.keys().cloned().collect(),
        };
        ids.into_iter()
            .filter_map(|id| {
                let value = serde_json::from_str(state.pipelines.get(&id)?).ok()?;
                Some((id, value))
            })
            .collect()
    }

    /// `_nodes/stats`' `ingest` section for this node.
    pub fn ingest_stats(&self) -> Value {
        self.pipelines.stats(&self.cluster_state())
    }

    /// The stored pipeline `id`, compiled.
    pub fn pipeline(&self, id: &str) -> Result<Option<Arc<Pipeline>>> {
        self.pipelines.get(&self.cluster_state(), id)
    }

    /// A lookup of the pipelines as the cluster state has them now.
    pub fn pipeline_lookup(&self) -> StateLookup<'_> {
        StateLookup {
            node: self,
            state: self.cluster_state(),
        }
    }

    /// Runs the pipelines a write asks for (`requested`: the request's `pipeline`, else the
    /// index's `index.default_pipeline`; then its `index.final_pipeline`) on an index or create
    /// operation. Other operations, and writes no pipeline applies to, pass unchanged.
    pub fn ingest(&self, operation: Operation, requested: Option<&str>) -> Result<Ingested> {
        let batch = self.ingest_all(vec![(operation, requested.map(String::from))]);
        batch
            .results
            .into_iter()
            .next()
            .unwrap_or_else(|| Err(Error::illegal_state("no ingest result")))
    }

    /// [`Node::ingest`] for each operation of a bulk request, in order; each index's
    /// pipeline settings are read once.
    pub fn ingest_all(&self, items: Vec<(Operation, Option<String>)>) -> IngestBatch {
        let started = std::time::Instant::now();
        let mut settings: HashMap<String, IndexPipelines> = HashMap::new();
        let mut lookup: Option<StateLookup<'_>> = None;
        let mut ran = false;
        let results = items
            .into_iter()
            .map(|(operation, requested)| {
                if !matches!(operation.write, DocWrite::Index { .. }) {
                    return Ok(Ingested::Write(operation));
                }
                // looked up before inserting: a bulk's items mostly share a few indices, and
                // the name is cloned once per index rather than per item
                if !settings.contains_key(&operation.index) {
                    let pipelines = self.index_pipelines(&operation.index);
                    settings.insert(operation.index.clone(), pipelines);
                }
                let defaults = &settings[&operation.index];
                let first = match requested.as_deref() {
                    Some(NONE) => None,
                    Some(id) => Some(id.to_string()),
                    None => defaults.default.clone(),
                };
                let last = defaults.last.clone();
                if first.is_none() && last.is_none() {
                    return Ok(Ingested::Write(operation));
                }
                ran = true;
                let lookup = lookup.get_or_insert_with(|| self.pipeline_lookup());
                self.run_pipelines(operation, first, last, lookup)
            })
            .collect();
        IngestBatch {
            results,
            took_millis: ran.then(|| started.elapsed().as_millis() as u64),
        }
    }

    /// Whether any pipeline applies to `operation` (what [`Node::ingest`] would run), cheaply:
    /// a write none applies to need not go to a pool for it.
    pub fn ingest_applies(&self, operation: &Operation, requested: Option<&str>) -> bool {
        if !matches!(operation.write, DocWrite::Index { .. }) {
            return false;
        }
        let pipelines = self.index_pipelines(&operation.index);
        pipelines.last.is_some()
            || match requested {
                Some(NONE) => false,
                Some(_) => true,
                None => pipelines.default.is_some(),
            }
    }

    /// `index.default_pipeline` and `index.final_pipeline` of the index a write to `name`
    /// goes to: the index itself, an alias's or data stream's write index, or, for an index a
    /// write will create, what the templates that match its name set.
    fn index_pipelines(&self, name: &str) -> IndexPipelines {
        let target = self.index(name).or_else(|| {
            self.write_target(name)
                .ok()
                .flatten()
                .map(|(index, _)| index)
        });
        let settings = match target {
            Some(index) => index.metadata().settings.clone(),
            None => {
                let state = self.cluster_state();
                let creates = match crate::data_streams::template_for(name, &state) {
                    Some(_) => crate::data_streams::backing_index_parts(name, &state).ok(),
                    None => crate::templates::for_new_index(name, &state).and_then(|t| {
                        t.under(Settings::new(), Mapping::default(), Aliases::new())
                            .ok()
                    }),
                };
                match creates {
                    Some((settings, _, _)) => settings,
                    None => return IndexPipelines::default(),
                }
            }
        };
        let setting = |key: &str| {
            settings
                .get_str(key)
                .filter(|value| *value != NONE)
                .map(String::from)
        };
        IndexPipelines {
            default: setting("index.default_pipeline"),
            last: setting("index.final_pipeline"),
        }
    }

    /// Runs the request's (or default) pipeline `first`, then the index's final pipeline
    /// `last`, which may not change the target index (OpenSearch refuses that too).
    fn run_pipelines(
        &self,
        operation: Operation,
        first: Option<String>,
        last: Option<String>,
        lookup: &StateLookup<'_>,
    ) -> Result<Ingested> {
        let resolve = |id: &str| {
            self.pipelines
                .get(&lookup.state, id)?
                .ok_or_else(|| missing_pipeline(id))
        };
        let first = first.as_deref().map(resolve).transpose()?;
        let mut last = last.as_deref().map(resolve).transpose()?;
        let Operation { index, write } = operation;
        let DocWrite::Index {
            id,
            auto_generated_id,
            source,
            routing,
            conditions,
        } = write
        else {
            unreachable!("checked above");
        };
        let create = conditions.create_only;
        // OpenSearch's error for a document its pipeline cannot read as a map
        let unreadable = || Error::new("parse_exception", 400, "Failed to parse content to map");
        let source: Map<String, Value> = match serde_json::from_slice(&source) {
            Ok(Value::Object(map)) => map,
            Ok(_) => return Err(unreadable()),
            Err(e) => {
                return Err(unreadable().caused_by(Error::new(
                    "json_parse_exception",
                    400,
                    e.to_string(),
                )))
            }
        };
        let timestamp = tessera_date::DateFormat::default_format()
            .format_millis(tessera_common::time::now_millis(), None);
        let mut doc =
            IngestDocument::new(source, &index, id.as_deref(), routing.as_deref(), timestamp);
        let started = Instant::now();
        self.pipelines.total.start();
        let run = |pipeline: &Pipeline, doc: IngestDocument| {
            let counters = self.pipelines.counters(&pipeline.id);
            let pipeline_started = Instant::now();
            counters.start();
            let outcome = pipeline.execute(doc, lookup);
            counters.end(pipeline_started, outcome.is_err());
            outcome
        };
        let failed = |e: Error| {
            self.pipelines.total.end(started, true);
            Err(e)
        };
        if let Some(pipeline) = first {
            match run(&pipeline, doc) {
                Ok(Outcome::Indexed(next)) => doc = next,
                Ok(Outcome::Dropped) => {
                    self.pipelines.total.end(started, false);
                    return Ok(Ingested::Dropped { index, id, create });
                }
                Err(e) => return failed(e),
            }
            // the document moved to another index: the final pipeline is that index's, as in
            // OpenSearch
            if let Some(moved) = doc.metadata("_index").filter(|name| *name != index) {
                last = match self.index_pipelines(&moved).last {
                    Some(id) => match resolve(&id) {
                        Ok(pipeline) => Some(pipeline),
                        Err(e) => return failed(e),
                    },
                    None => None,
                };
            }
        }
        if let Some(pipeline) = last {
            let index_before = doc.metadata("_index");
            match run(&pipeline, doc) {
                Ok(Outcome::Indexed(next)) if next.metadata("_index") != index_before => {
                    return failed(
                        Error::illegal_state(format!(
                            "final pipeline [{}] can't change the target index",
                            pipeline.id
                        ))
                        .with_status(400),
                    );
                }
                Ok(Outcome::Indexed(next)) => doc = next,
                Ok(Outcome::Dropped) => {
                    self.pipelines.total.end(started, false);
                    return Ok(Ingested::Dropped { index, id, create });
                }
                Err(e) => return failed(e),
            }
        }
        self.pipelines.total.end(started, false);
        let next_index = doc.metadata("_index").unwrap_or(index);
        let next_id = doc.metadata("_id");
        if let Some(problem) = next_id.as_deref().and_then(|id| {
            tessera_common::ids::index_id_problems(id)
                .into_iter()
                .next()
        }) {
            return Err(Error::illegal_argument(problem));
        }
        let next_routing = doc.metadata("_routing");
        let (source, _) = doc.into_parts();
        let bytes = serde_json::to_vec(&Value::Object(source))
            .map_err(|e| Error::internal("write the ingested document", e))?;
        Ok(Ingested::Write(Operation {
            index: next_index,
            write: DocWrite::Index {
                auto_generated_id: auto_generated_id && next_id == id,
                id: next_id,
                source: Bytes::from(bytes),
                routing: next_routing,
                conditions,
            },
        }))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tessera_common::settings::Settings;

    use super::*;
    use crate::write::tests::{block_on, create, index_op, start};
    use crate::write::Refresh;

    #[test]
    fn pipelines_are_stored_listed_and_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let node = start(dir.path());
        let body = json!({"description": "d", "processors": [{"set": {"field": "a", "value": 1}}]});
        node.put_pipeline("p1", &body).unwrap();
        node.put_pipeline("p2", &json!({"processors": []})).unwrap();
        assert_eq!(node.pipeline_definitions(Some("p1"))["p1"], body);
        assert_eq!(node.pipeline_definitions(Some("p*")).len(), 2);
        assert!(node.pipeline("p1").unwrap().is_some());
        let e = node
            .put_pipeline("bad", &json!({"processors": [{"nope": {}}]}))
            .unwrap_err();
        assert_eq!(e.status(), 400);
        assert!(
            node.delete_pipelines("p1,p2").is_err(),
            "a single id or pattern"
        );
        node.delete_pipelines("p2").unwrap();
        assert_eq!(
            node.delete_pipelines("p2").unwrap_err().kind(),
            "resource_not_found_exception"
        );
        // the single node's store keeps them across a restart
        drop(node);
        let node = start(dir.path());
        assert_eq!(node.pipeline_definitions(None).len(), 1);
    }

    #[test]
    fn writes_run_their_pipelines_before_routing() {
        let dir = tempfile::tempdir().unwrap();
        let node = start(dir.path());
        create(&node, "logs", 2);
        node.put_pipeline(
            "route",
            &json!({"processors": [
                {"set": {"field": "_index", "value": "other"}},
                {"set": {"field": "_id", "value": "id-{{n}}"}},
                {"uppercase": {"field": "s"}}]}),
        )
        .unwrap();
        node.put_pipeline(
            "final",
            &json!({"processors": [{"set": {"field": "final", "value": true}}]}),
        )
        .unwrap();
        node.put_pipeline("drop", &json!({"processors": [{"drop": {}}]}))
            .unwrap();
        let update = Settings::from_json(&json!({"index.final_pipeline": "final"})).unwrap();
        node.index("logs")
            .unwrap()
            .update_settings(&update)
            .unwrap();
        let op = index_op("logs", None, None, json!({"n": 7, "s": "x"}));
        let Ingested::Write(op) = node.ingest(op, Some("route")).unwrap() else {
            panic!("dropped")
        };
        assert_eq!(op.index, "other");
        assert_eq!(op.write.id(), Some("id-7"));
        let DocWrite::Index { source, .. } = &op.write else {
            panic!()
        };
        let source: Value = serde_json::from_slice(source).unwrap();
        // `logs`' final pipeline does not run: the document left for `other`, which has none
        assert_eq!(source, json!({"n": 7, "s": "X"}));
        let written = block_on(node.write_service().execute_one(op, Refresh::None)).unwrap();
        assert_eq!(&*written.index, "other");

        let op = index_op("logs", Some("1"), None, json!({}));
        assert!(matches!(
            node.ingest(op, Some("drop")).unwrap(),
            Ingested::Dropped { .. }
        ));
        let op = index_op("logs", Some("1"), None, json!({}));
        assert_eq!(
            node.ingest(op, Some("nope")).unwrap_err().reason(),
            "pipeline with id [nope] does not exist"
        );
        let stats = node.ingest_stats();
        assert_eq!(stats["total"]["count"], 2, "{stats}");
        assert_eq!(stats["pipelines"]["route"]["count"], 1, "{stats}");
        assert_eq!(stats["pipelines"]["drop"]["count"], 1, "{stats}");
        assert_eq!(
            stats["pipelines"]["drop"]["processors"][0]["drop"]["stats"]["count"], 1,
            "{stats}"
        );
        // a final pipeline may not move the document
        let update = Settings::from_json(&json!({"index.final_pipeline": "route"})).unwrap();
        node.index("logs")
            .unwrap()
            .update_settings(&update)
            .unwrap();
        let op = index_op("logs", Some("1"), None, json!({"n": 1, "s": "x"}));
        assert_eq!(
            node.ingest(op, None).unwrap_err().reason(),
            "final pipeline [route] can't change the target index"
        );
        let update = Settings::from_json(&json!({"index.final_pipeline": "final"})).unwrap();
        node.index("logs")
            .unwrap()
            .update_settings(&update)
            .unwrap();
        // a pipeline that moves the document hands it to the new index's final pipeline
        create(&node, "elsewhere", 1);
        node.put_pipeline(
            "mark",
            &json!({"processors": [{"set": {"field": "marked", "value": true}}]}),
        )
        .unwrap();
        node.put_pipeline(
            "away",
            &json!({"processors": [{"set": {"field": "_index", "value": "elsewhere"}}]}),
        )
        .unwrap();
        let update = Settings::from_json(&json!({"index.final_pipeline": "mark"})).unwrap();
        node.index("elsewhere")
            .unwrap()
            .update_settings(&update)
            .unwrap();
        let op = index_op("logs", Some("1"), None, json!({}));
        let Ingested::Write(op) = node.ingest(op, Some("away")).unwrap() else {
            panic!()
        };
        assert_eq!(op.index, "elsewhere");
        let DocWrite::Index { source, .. } = &op.write else {
            panic!()
        };
        assert_eq!(
            serde_json::from_slice::<Value>(source).unwrap(),
            json!({"marked": true}),
            "the new index's final pipeline, not the old one's"
        );
        // `_none` skips the request's pipeline, not the final one
        let op = index_op("logs", Some("1"), None, json!({}));
        let Ingested::Write(op) = node.ingest(op, Some(NONE)).unwrap() else {
            panic!()
        };
        let DocWrite::Index { source, .. } = &op.write else {
            panic!()
        };
        assert_eq!(
            serde_json::from_slice::<Value>(source).unwrap(),
            json!({"final": true})
        );
    }
}
