//! Real engine pieces for unit tests: an index on a temporary directory.

use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};
use tessera_common::settings::Settings;
use tessera_index::{Conditions, DocWrite, IndexService, NodeResources, ShardSnapshot};
use tessera_mapping::Mapping;

/// A one-shard index `i` with a keyword field `k`, under `dir`.
pub fn test_index(dir: &Path) -> Arc<IndexService> {
    index_with(dir, json!({"properties": {"k": {"type": "keyword"}}}), &[])
}

/// A one-shard index `i` with `mapping`, under `dir`, holding `docs` (ids "0", "1", …),
/// refreshed.
pub fn index_with(dir: &Path, mapping: Value, docs: &[Value]) -> Arc<IndexService> {
    let settings =
        json!({"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"});
    let index = IndexService::create(
        &dir.join("i"),
        "i",
        "i-uuid",
        Settings::from_json(&settings)
            .expect("settings")
            .with_prefix("index."),
        Mapping::parse(&mapping).expect("mapping"),
        &NodeResources {
            indexing_threads: 1,
            indexing_buffer_bytes: 16 << 20,
            merge_threads: 1,
            scripts: Default::default(),
        },
    )
    .expect("create the index");
    let writes = docs
        .iter()
        .enumerate()
        .map(|(i, doc)| DocWrite::Index {
            id: Some(i.to_string()),
            auto_generated_id: false,
            source: serde_json::to_vec(doc).expect("source").into(),
            routing: None,
            conditions: Conditions::default(),
        })
        .collect();
    if !docs.is_empty() {
        for result in index.write_shard(0, writes, false).expect("write") {
            result.expect("indexed");
        }
        index.refresh().expect("refresh");
    }
    Arc::new(index)
}

/// The reader of an empty one-shard index.
pub fn empty_snapshot(dir: &Path) -> Arc<ShardSnapshot> {
    test_index(dir).shard(0).expect("shard 0").snapshot()
}
