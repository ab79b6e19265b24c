//! The write service: what the REST layer calls for document writes (bulk, index, create,
//! update, delete), below HTTP and above the engine. It takes parsed [`Operation`]s and
//! request-level options and gives back one [`ItemResult`] per operation, in order; it chooses
//! the `write` pool itself.
//!
//! - [`operation`]: the plain data in and out (operations, `Refresh`, item results).
//! - [`coordinator`]: routing, auto-create, grouping by shard, answers back in order.
//! - [`primary`]: one shard group as a serialisable [`ShardWriteRequest`] →
//!   [`ShardWriteResponse`], executed by the shard's primary.
//!
//! Dynamic mapping updates happen in the primary's write (`IndexService::write_shard` merges
//! new fields into the index mapping before it takes the shard's lock).

pub mod coordinator;
pub mod operation;
pub mod primary;

use std::sync::{Arc, Weak};

use tessera_common::threadpool::ThreadPool;
use tessera_common::{Error, Result};
use tessera_index::update_script::UpdateScript;
use tessera_script::ScriptSpec;

pub use operation::{
    missing_index, ActiveShards, ItemResponse, ItemResult, Operation, Refresh, ShardInfo,
    WriteOptions,
};
pub use primary::{ShardWriteRequest, ShardWriteResponse};

use crate::node::Node;

/// The node's write service (module docs). REST handlers receive it as an `Arc<WriteService>`.
pub struct WriteService {
    /// The node it writes to (weak: the node holds the service).
    node: Weak<Node>,
    /// The `write` pool: request parsing and rendering, and one task per shard group.
    pool: ThreadPool,
}

impl WriteService {
    pub(crate) fn new(node: Weak<Node>, pool: ThreadPool) -> WriteService {
        WriteService { node, pool }
    }

    fn node(&self) -> Result<Arc<Node>> {
        self.node
            .upgrade()
            .ok_or_else(|| Error::illegal_state("the node has stopped"))
    }

    /// The script an update runs: `spec`'s own source or the stored script its `id` names,
    /// in painless. What fails here fails as OpenSearch fails to run the script.
    pub fn update_script(&self, spec: &ScriptSpec) -> Result<UpdateScript> {
        let resolved = self
            .node()?
            .resolve_script(spec)
            .map_err(tessera_index::update_script::failed)?;
        let source = resolved
            .painless("update")
            .map_err(tessera_index::update_script::failed)?;
        Ok(UpdateScript {
            source: source.to_string(),
            params: Some(serde_json::Value::Object(resolved.params.clone())),
        })
    }

    /// Whether `name` is an alias (`require_alias`).
    pub fn is_alias(&self, name: &str) -> bool {
        self.node()
            .is_ok_and(|node| node.alias_table().contains(name))
    }

    /// Whether the index `name` exists (document APIs check it before their parameters).
    pub fn index_exists(&self, name: &str) -> bool {
        self.node()
            .is_ok_and(|node| node.index_or_alias_exists(name))
    }

    /// Runs the ingest pipelines that apply to an index or create operation (`requested`: the
    /// request's or the bulk item's `pipeline`), before it is routed: see
    /// [`Node::ingest`](crate::node::Node::ingest).
    pub async fn ingest(
        &self,
        operation: Operation,
        requested: Option<String>,
    ) -> Result<crate::ingest::Ingested> {
        let node = self.node()?;
        if !node.ingest_applies(&operation, requested.as_deref()) {
            return Ok(crate::ingest::Ingested::Write(operation));
        }
        self.pool
            .run(move || node.ingest(operation, requested.as_deref()))
            .await
    }

    /// [`WriteService::ingest`] for the operations of a bulk request, on the calling thread
    /// (the bulk's parsing runs on the `write` pool already).
    pub fn ingest_all(
        &self,
        items: Vec<(Operation, Option<String>)>,
    ) -> Result<crate::ingest::IngestBatch> {
        Ok(self.node()?.ingest_all(items))
    }

    /// Runs operations (any indices, any shards) and returns their results in order; each
    /// fails alone.
    pub async fn execute(
        &self,
        operations: Vec<Operation>,
        options: impl Into<WriteOptions>,
    ) -> Vec<ItemResult> {
        let options = options.into();
        match self.node() {
            Ok(node) => coordinator::execute(&node, &self.pool, operations, options).await,
            Err(e) => operations.iter().map(|_| Err(e.clone())).collect(),
        }
    }

    /// Runs one operation.
    pub async fn execute_one(
        &self,
        operation: Operation,
        options: impl Into<WriteOptions>,
    ) -> ItemResult {
        self.execute(vec![operation], options)
            .await
            .pop()
            .unwrap_or_else(|| Err(Error::illegal_state("no write result")))
    }

    /// A bulk request: `parse` (the body into operations, and what `render` needs besides their
    /// results) runs on the `write` pool, the operations run as [`WriteService::execute`] runs
    /// them, and `render` (thousands of items: CPU work too) runs on the `write` pool.
    pub async fn bulk<C, T, P, R>(
        &self,
        parse: P,
        options: impl Into<WriteOptions>,
        render: R,
    ) -> Result<T>
    where
        C: Send + 'static,
        T: Send + 'static,
        P: FnOnce() -> Result<(Vec<Operation>, C)> + Send + 'static,
        R: FnOnce(C, Vec<ItemResult>) -> Result<T> + Send + 'static,
    {
        let options = options.into();
        let (operations, context) = self.pool.run(parse).await?;
        let results = self.execute(operations, options).await;
        self.pool.run(move || render(context, results)).await
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::path::Path;

    use bytes::Bytes;
    use serde_json::{json, Value};
    use tessera_common::settings::Settings;
    use tessera_index::index_service::UpdateRequest;
    use tessera_index::{Conditions, DocWrite, WriteOutcome};
    use tessera_mapping::Mapping;

    use super::*;

    /// A node on `dir`, its shards open.
    pub(crate) fn start(dir: &Path) -> Arc<Node> {
        crate::node::test_node(dir)
    }

    /// Creates `name` with `shards` shards and no replicas.
    pub(crate) fn create(node: &Node, name: &str, shards: u32) {
        let settings = Settings::from_json(&json!({
            "index.number_of_shards": shards,
            "index.number_of_replicas": 0
        }))
        .unwrap();
        node.create_index(name, settings, Mapping::default())
            .unwrap();
    }

    pub(crate) fn block_on<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(future)
    }

    pub(crate) fn index_op(
        index: &str,
        id: Option<&str>,
        routing: Option<&str>,
        doc: Value,
    ) -> Operation {
        Operation {
            index: index.into(),
            write: DocWrite::Index {
                id: id.map(String::from),
                auto_generated_id: false,
                source: Bytes::from(doc.to_string()),
                routing: routing.map(String::from),
                conditions: Conditions::default(),
            },
        }
    }

    fn delete_op(index: &str, id: &str) -> Operation {
        Operation {
            index: index.into(),
            write: DocWrite::Delete {
                id: id.into(),
                routing: None,
                conditions: Conditions::default(),
            },
        }
    }

    fn update_op(index: &str, id: &str, doc: Value) -> Operation {
        Operation {
            index: index.into(),
            write: DocWrite::Update(Box::new(UpdateRequest {
                id: id.into(),
                doc: Some(doc),
                detect_noop: true,
                ..UpdateRequest::default()
            })),
        }
    }

    #[test]
    fn operations_go_to_the_shard_their_id_or_routing_names() {
        let dir = tempfile::tempdir().unwrap();
        let node = start(dir.path());
        create(&node, "r", 4);
        let service = node.write_service();
        let mut operations = Vec::new();
        for i in 0..20 {
            operations.push(index_op("r", Some(&format!("{i}")), None, json!({"n": i})));
        }
        for i in 0..10 {
            let id = format!("k{i}");
            operations.push(index_op("r", Some(&id), Some("key"), json!({"n": i})));
        }
        let results = block_on(service.execute(operations, Refresh::None));
        let index = node.index("r").unwrap();
        let mut by_id = std::collections::BTreeSet::new();
        let mut by_routing = std::collections::BTreeSet::new();
        for (i, result) in results.iter().enumerate() {
            let item = result.as_ref().unwrap();
            assert_eq!((item.status(), &*item.index), (201, "r"));
            assert_eq!(
                item.shards,
                ShardInfo {
                    total: 1,
                    successful: 1,
                    failed: 0
                }
            );
            let routing = (i >= 20).then_some("key");
            let id = &item.result.id;
            assert_eq!(item.result.shard, index.shard_for(id, routing), "{id}");
            // a get routed the same way finds the document where the write put it
            assert!(index.get(id, routing, true).unwrap().is_some(), "{id}");
            if routing.is_some() {
                by_routing.insert(item.result.shard);
            } else {
                by_id.insert(item.result.shard);
            }
        }
        assert!(by_id.len() > 1, "ids spread over the shards: {by_id:?}");
        assert_eq!(by_routing.len(), 1, "one routing value, one shard");
    }

    #[test]
    fn indices_are_created_as_action_auto_create_index_allows() {
        let dir = tempfile::tempdir().unwrap();
        let node = start(dir.path());
        let service = node.write_service();
        let write = |index: &str| {
            block_on(
                service.execute_one(index_op(index, Some("1"), None, json!({})), Refresh::None),
            )
        };
        assert_eq!(write("auto-1").unwrap().status(), 201);
        assert!(service.index_exists("auto-1"));
        // a delete never creates an index
        let e = block_on(service.execute_one(delete_op("gone", "1"), Refresh::None)).unwrap_err();
        assert_eq!(e.to_body(), missing_index("gone").to_body());
        assert!(!service.index_exists("gone"));
        let set = |value: &str| {
            let settings =
                Settings::from_json(&json!({ "action.auto_create_index": value })).unwrap();
            node.cluster_settings
                .update(&settings, &Settings::new())
                .unwrap();
        };
        set("+logs-*,-*");
        assert_eq!(write("logs-a").unwrap().status(), 201);
        let refused = write("metrics-a").unwrap_err();
        assert_eq!(refused.kind(), "index_not_found_exception");
        assert_eq!(
            refused.cause().map(Error::reason),
            Some("no such index and [action.auto_create_index] is [false]")
        );
        set("false");
        assert_eq!(
            write("logs-b").unwrap_err().kind(),
            "index_not_found_exception"
        );
        assert_eq!(
            write("logs-a").unwrap().status(),
            200,
            "existing indices take writes"
        );
        assert_eq!(node.index_names(), ["auto-1", "logs-a"]);
    }

    #[test]
    fn a_mixed_bulk_answers_in_request_order_and_a_bad_item_fails_alone() {
        let dir = tempfile::tempdir().unwrap();
        let node = start(dir.path());
        create(&node, "a", 3);
        create(&node, "b", 1);
        let service = node.write_service();
        let operations = vec![
            index_op("a", Some("1"), None, json!({"x": 1})),
            index_op("b", Some("1"), None, json!({"x": "text"})),
            delete_op("a", "missing"),
            update_op("a", "1", json!({"x": 2})),
            Operation {
                index: "b".into(),
                write: DocWrite::Index {
                    id: Some("1".into()),
                    auto_generated_id: false,
                    source: Bytes::from_static(b"{}"),
                    routing: None,
                    conditions: Conditions {
                        create_only: true,
                        ..Conditions::default()
                    },
                },
            },
            delete_op("nope", "1"),
            // `x` of `b` is text (item 1, same shard, earlier): an object cannot go there
            index_op("b", Some("3"), None, json!({"x": {"y": 1}})),
            index_op("a", None, None, json!({"x": 3})),
            update_op("a", "1", json!({"x": 2})),
            index_op("b", Some("2"), None, json!({"x": "more"})),
        ];
        let results = block_on(service.execute(operations, Refresh::WaitFor));
        assert_eq!(results.len(), 10);
        let ok = |i: usize| results[i].as_ref().unwrap_or_else(|e| panic!("{i}: {e}"));
        let err = |i: usize| {
            results[i]
                .as_ref()
                .err()
                .unwrap_or_else(|| panic!("{i} wrote"))
        };
        assert_eq!(
            (&*ok(0).index, ok(0).result.id.as_str(), ok(0).status()),
            ("a", "1", 201)
        );
        assert_eq!(
            (&*ok(1).index, ok(1).result.id.as_str(), ok(1).status()),
            ("b", "1", 201)
        );
        assert_eq!(
            (ok(2).result.written.outcome, ok(2).status()),
            (WriteOutcome::NotFound, 404)
        );
        assert_eq!(ok(3).result.written.outcome, WriteOutcome::Updated);
        assert_eq!(ok(3).result.written.version.version, 2);
        let conflict = err(4);
        assert_eq!(
            (conflict.kind(), conflict.status()),
            ("version_conflict_engine_exception", 409)
        );
        assert_eq!(
            conflict.meta("index_uuid"),
            Some(&Value::String(
                node.index("b").unwrap().metadata().uuid.clone()
            )),
            "shard-level document errors name the index uuid"
        );
        assert_eq!(err(5).to_body(), missing_index("nope").to_body());
        assert_eq!(err(6).status(), 400, "{}", err(6));
        assert_eq!(ok(7).status(), 201);
        assert!(!ok(7).result.id.is_empty(), "a generated id");
        // the same partial document again changes nothing: a noop reaches no copy
        assert_eq!(ok(8).result.written.outcome, WriteOutcome::Noop);
        assert_eq!((ok(8).status(), ok(8).shards), (200, ShardInfo::default()));
        assert_eq!(ok(9).result.id, "2");
        // `wait_for` refreshes without saying it forced one
        assert!(results
            .iter()
            .flatten()
            .all(|item| !item.result.forced_refresh));
        let forced = block_on(service.execute_one(
            index_op("a", Some("3"), None, json!({"x": 4})),
            Refresh::Immediate,
        ))
        .unwrap();
        assert!(forced.result.forced_refresh);
    }

    #[test]
    fn a_bulk_parses_and_renders_on_the_write_pool() {
        let dir = tempfile::tempdir().unwrap();
        let node = start(dir.path());
        let service = node.write_service();
        let on_pool = || {
            std::thread::current()
                .name()
                .unwrap_or_default()
                .starts_with("write[")
        };
        let rendered = block_on(service.bulk(
            move || {
                let operations = vec![index_op("p", Some("1"), None, json!({}))];
                Ok((operations, on_pool()))
            },
            Refresh::None,
            move |parsed_on_pool, results: Vec<ItemResult>| {
                Ok((parsed_on_pool, on_pool(), results.len()))
            },
        ))
        .unwrap();
        assert_eq!(rendered, (true, true, 1));
        let failed: Result<()> = block_on(service.bulk(
            || Err::<(Vec<Operation>, ()), _>(Error::parsing("bad body")),
            Refresh::None,
            |_, _| Ok(()),
        ));
        assert_eq!(failed.unwrap_err().reason(), "bad body");
    }
}
