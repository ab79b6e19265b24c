//! The index settings Tessera knows, with OpenSearch's names, defaults and dynamic flags.
//!
//! Settings that only tune OpenSearch internals (caches, codecs, merge scheduling) are accepted
//! and stored so that existing index templates and workloads work unchanged; settings whose
//! feature Tessera lacks (index sorting, ingest pipelines, routing partitions) are rejected with
//! a clear error instead of being silently ignored.

use tessera_common::settings::{Kind, Registry, Scope, SettingDef, Settings};
use tessera_common::{Error, Result};

const fn def(key: &'static str, dynamic: bool, kind: Kind, default: &'static str) -> SettingDef {
    SettingDef {
        key,
        scope: Scope::Index,
        dynamic,
        kind,
        default,
    }
}

const INT: Kind = Kind::Int {
    min: 0,
    max: i32::MAX as i64,
};
const POSITIVE: Kind = Kind::Int {
    min: 1,
    max: i32::MAX as i64,
};

static DEFS: &[SettingDef] = &[
    def(
        "index.number_of_shards",
        false,
        Kind::Int { min: 1, max: 1024 },
        "1",
    ),
    def(
        "index.number_of_replicas",
        true,
        Kind::Int { min: 0, max: 1024 },
        "1",
    ),
    def(
        "index.number_of_routing_shards",
        false,
        Kind::Int { min: 1, max: 1024 },
        "",
    ),
    def("index.refresh_interval", true, Kind::Time, "1s"),
    def("index.query.default_field", true, Kind::List, "*"),
    def("index.max_result_window", true, POSITIVE, "10000"),
    def("index.max_inner_result_window", true, POSITIVE, "100"),
    def("index.max_docvalue_fields_search", true, INT, "100"),
    def("index.max_terms_count", true, INT, "65536"),
    def("index.max_regex_length", true, INT, "1000"),
    def("index.max_script_fields", true, INT, "32"),
    def("index.max_ngram_diff", true, INT, "1"),
    def("index.max_shingle_diff", true, INT, "3"),
    def("index.max_rescore_window", true, INT, "10000"),
    def("index.max_refresh_listeners", true, INT, "1000"),
    def("index.max_slices_per_scroll", true, INT, "1024"),
    def("index.max_adjacency_matrix_filters", true, INT, "100"),
    def("index.highlight.max_analyzed_offset", true, INT, "1000000"),
    def(
        "index.translog.durability",
        true,
        Kind::Enum(&["request", "async", "REQUEST", "ASYNC"]),
        "request",
    ),
    def("index.translog.sync_interval", false, Kind::Time, "5s"),
    def(
        "index.translog.flush_threshold_size",
        true,
        Kind::ByteSize,
        "512mb",
    ),
    def(
        "index.translog.generation_threshold_size",
        true,
        Kind::ByteSize,
        "64mb",
    ),
    def(
        "index.translog.retention.size",
        true,
        Kind::ByteSize,
        "512mb",
    ),
    def("index.translog.retention.age", true, Kind::Time, "12h"),
    def("index.mapping.total_fields.limit", true, INT, "1000"),
    def("index.mapping.depth.limit", true, POSITIVE, "20"),
    def("index.mapping.nested_fields.limit", true, INT, "50"),
    def("index.mapping.nested_objects.limit", true, INT, "10000"),
    def(
        "index.mapping.field_name_length.limit",
        true,
        POSITIVE,
        "50000",
    ),
    def("index.mapping.coerce", true, Kind::Bool, "true"),
    def("index.mapping.ignore_malformed", true, Kind::Bool, "false"),
    def("index.queries.cache.enabled", false, Kind::Bool, "true"),
    def("index.requests.cache.enable", true, Kind::Bool, "true"),
    def("index.codec", false, Kind::Str, "default"),
    def(
        "index.search.concurrent_segment_search.mode",
        true,
        Kind::OneOf(&["all", "none", "auto"]),
        "auto",
    ),
    def(
        "index.search.concurrent_segment_search.enabled",
        true,
        Kind::Bool,
        "true",
    ),
    def("index.search.concurrent.max_slice_count", true, INT, "0"),
    def("index.auto_expand_replicas", true, Kind::Str, "false"),
    def("index.hidden", true, Kind::Bool, "false"),
    def("index.blocks.read_only", true, Kind::Bool, "false"),
    def(
        "index.blocks.read_only_allow_delete",
        true,
        Kind::Bool,
        "false",
    ),
    def("index.blocks.read", true, Kind::Bool, "false"),
    def("index.blocks.write", true, Kind::Bool, "false"),
    def("index.blocks.metadata", true, Kind::Bool, "false"),
    def("index.priority", true, INT, "1"),
    def("index.shard.check_on_startup", false, Kind::Str, "false"),
    def("index.store.type", false, Kind::Str, ""),
    def("index.store.preload", false, Kind::List, ""),
    def("index.soft_deletes.enabled", false, Kind::Bool, "true"),
    def(
        "index.soft_deletes.retention_lease.period",
        true,
        Kind::Time,
        "12h",
    ),
    def("index.gc_deletes", true, Kind::Time, "60s"),
    def(
        "index.unassigned.node_left.delayed_timeout",
        true,
        Kind::Time,
        "1m",
    ),
    def("index.write.wait_for_active_shards", true, Kind::Str, "1"),
    def(
        "index.load_fixed_bitset_filters_eagerly",
        false,
        Kind::Bool,
        "true",
    ),
    def(
        "index.replication.type",
        false,
        Kind::Enum(&["DOCUMENT", "SEGMENT"]),
        "DOCUMENT",
    ),
    def("index.default_pipeline", true, Kind::Str, "_none"),
    def("index.final_pipeline", true, Kind::Str, "_none"),
    def(
        "index.routing_partition_size",
        false,
        Kind::Int { min: 1, max: 1 },
        "1",
    ),
    def(
        "index.optimize_auto_generated_id",
        false,
        Kind::Bool,
        "true",
    ),
    def(
        "index.merge.scheduler.max_thread_count",
        true,
        POSITIVE,
        "1",
    ),
    def("index.merge.scheduler.max_merge_count", true, POSITIVE, "6"),
    def(
        "index.merge.scheduler.auto_throttle",
        true,
        Kind::Bool,
        "true",
    ),
    def("index.creation_date", false, Kind::Str, ""),
    def("index.uuid", false, Kind::Str, ""),
    def("index.version.created", false, Kind::Str, ""),
    def("index.provided_name", false, Kind::Str, ""),
];

/// Groups whose keys are stored as given.
static OPEN_PREFIXES: &[&str] = &[
    "index.merge.policy.",
    "index.routing.allocation.",
    "index.analysis.",
    "index.similarity.",
    "index.indexing.slowlog.",
    "index.search.slowlog.",
    "index.search.idle.",
    "index.remote_store.",
    "index.warmer.",
    "index.fielddata.",
];

pub static REGISTRY: Registry = Registry::new(Scope::Index, DEFS, OPEN_PREFIXES);

/// Settings set by Tessera itself, which a request may not set.
pub const PRIVATE: &[&str] = &[
    "index.creation_date",
    "index.uuid",
    "index.version.created",
    "index.provided_name",
];

/// The `version.created` Tessera reports (OpenSearch 2.19's id, for client compatibility).
pub const VERSION_CREATED: &str = "136407827";

/// Validates settings given at index creation or update, with OpenSearch's messages.
pub fn validate(settings: &Settings, updating: bool, target: &str) -> Result<()> {
    for key in PRIVATE {
        if settings.contains(key) {
            return Err(Error::illegal_argument(format!(
                "private index setting [{key}] can not be set explicitly"
            )));
        }
    }
    for key in [
        "index.sort.field",
        "index.sort.order",
        "index.sort.mode",
        "index.sort.missing",
    ] {
        if settings.contains(key) {
            return Err(Error::not_supported("[index.sort.*] (index sorting)"));
        }
    }
    REGISTRY.validate(settings, updating, target)?;
    for key in ["index.default_pipeline", "index.final_pipeline"] {
        if let Some(value) = settings.get_str(key) {
            if value != "_none" {
                return Err(Error::not_supported(&format!("[{key}] (ingest pipelines)")));
            }
        }
    }
    Ok(())
}

/// The value of `key`, or its registered default.
pub fn value<'a>(settings: &'a Settings, key: &str) -> &'a str {
    settings
        .get_str(key)
        .or_else(|| REGISTRY.def(key).map(|d| d.default))
        .unwrap_or("")
}

/// OpenSearch's default `number_of_routing_shards` for an index with `shards` shards: the
/// shard count doubled as often as possible up to 1024, so that the index could be split.
pub fn default_routing_shards(shards: u32) -> u32 {
    let log2_shards = 32 - (shards.saturating_sub(1)).leading_zeros();
    let splits = 10i32.saturating_sub(log2_shards as i32).max(1) as u32;
    shards << splits
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn workload_settings_are_accepted() {
        let s = Settings::from_json(&json!({
            "index.number_of_shards": 1, "index.number_of_replicas": 0,
            "index.queries.cache.enabled": false, "index.requests.cache.enable": false,
            "index.merge.policy.max_merged_segment": "5gb"
        }))
        .unwrap();
        validate(&s, false, "x").unwrap();
    }

    #[test]
    fn unsupported_and_private_settings_are_rejected() {
        let s = Settings::from_json(&json!({"index.sort.field": "a"})).unwrap();
        assert!(validate(&s, false, "x")
            .unwrap_err()
            .reason()
            .contains("not supported"));
        let s = Settings::from_json(&json!({"index.uuid": "a"})).unwrap();
        assert_eq!(
            validate(&s, false, "x").unwrap_err().reason(),
            "private index setting [index.uuid] can not be set explicitly"
        );
        let s = Settings::from_json(&json!({"index.number_of_shards": 2})).unwrap();
        assert!(validate(&s, true, "[idx/u]").is_err());
    }

    #[test]
    fn routing_shards_match_opensearch() {
        assert_eq!(default_routing_shards(1), 1024);
        assert_eq!(default_routing_shards(2), 1024);
        assert_eq!(default_routing_shards(3), 768);
        assert_eq!(default_routing_shards(5), 640);
        assert_eq!(default_routing_shards(1024), 2048);
    }
}
