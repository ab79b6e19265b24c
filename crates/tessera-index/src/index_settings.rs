//! The index settings Tessera knows, with OpenSearch's names, defaults and dynamic flags.
//!
//! Settings that only tune OpenSearch internals (caches, codecs, merge scheduling) are accepted
//! and stored so that existing index templates and workloads work unchanged; settings whose
//! feature Tessera lacks (index sorting, routing partitions) are rejected with
//! a clear error instead of being silently ignored.
//!
//! Settings that only tune Lucene internals — `index.codec` (stored-fields compression),
//! `index.merge.policy` and its `index.merge.policy.*` / `index.merge.log_byte_size_policy.*`
//! knobs, `index.compound_format` — have no effect in Tessera: tantivy has its own document
//! store compression and merge policy. They are validated exactly as OpenSearch validates them
//! (same accepted values, same messages), so an index body is accepted here if and only if it
//! is accepted there. `index.merge.enabled: false` (OpenSearch's test switch) does take effect:
//! it turns background merges off, for benchmarks that need many segments.

use tessera_common::settings::{
    java_double, parse_byte_size, Kind, Registry, Scope, SettingDef, Settings,
};
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

/// `index.shard.check_on_startup`: OpenSearch's values and message.
fn check_on_startup(key: &str, value: &str) -> Result<()> {
    match value {
        "true" | "false" | "checksum" => Ok(()),
        _ => Err(Error::illegal_argument(format!(
            "unknown value for [{key}] must be one of [true, false, checksum] but was: {value}"
        ))),
    }
}

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
    // k-NN (OpenSearch's k-NN plugin): Tessera serves knn_vector fields whether or not
    // `index.knn` is set; ef_search is the graph's default beam width; the threshold is the
    // segment size below which no graph is built (0, the default: always; -1: never)
    def("index.knn", false, Kind::Bool, "false"),
    def(
        "index.knn.algo_param.ef_search",
        true,
        Kind::Int {
            min: 2,
            max: i32::MAX as i64,
        },
        "100",
    ),
    def(
        "index.knn.advanced.approximate_threshold",
        true,
        Kind::Int {
            min: -1,
            max: i32::MAX as i64,
        },
        "0",
    ),
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
        Kind::Check(check_durability),
        "REQUEST",
    ),
    def(
        "index.translog.sync_interval",
        true,
        Kind::Check(check_sync_interval),
        "5s",
    ),
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
    // Lucene internals, no effect in Tessera (see the module comment)
    def("index.codec", false, Kind::Check(check_codec), "default"),
    def(
        "index.codec.compression_level",
        false,
        Kind::Int { min: 1, max: 6 },
        "",
    ),
    // OpenSearch's test-only switch (registered by its test framework), a real one here
    def("index.merge.enabled", false, Kind::Bool, "true"),
    def(
        "index.merge.policy",
        false,
        Kind::Check(check_merge_policy),
        "default",
    ),
    def(
        "index.merge.policy.expunge_deletes_allowed",
        true,
        Kind::Double {
            min: 0.0,
            max: f64::MAX,
        },
        "10.0",
    ),
    def(
        "index.merge.policy.floor_segment",
        true,
        Kind::Check(check_floor_segment),
        "2097152b",
    ),
    def(
        "index.merge.policy.max_merge_at_once",
        true,
        Kind::Int {
            min: 2,
            max: i32::MAX as i64,
        },
        "10",
    ),
    def(
        "index.merge.policy.max_merged_segment",
        true,
        Kind::Check(check_max_merged_segment),
        "5368709120b",
    ),
    def(
        "index.merge.policy.segments_per_tier",
        true,
        Kind::Double {
            min: 2.0,
            max: f64::MAX,
        },
        "10.0",
    ),
    def(
        "index.merge.policy.reclaim_deletes_weight",
        true,
        Kind::Double {
            min: 0.0,
            max: f64::MAX,
        },
        "2.0",
    ),
    def(
        "index.merge.policy.deletes_pct_allowed",
        true,
        Kind::Double {
            min: 5.0,
            max: 50.0,
        },
        "20.0",
    ),
    def(
        "index.merge.log_byte_size_policy.merge_factor",
        true,
        Kind::Int {
            min: 2,
            max: i32::MAX as i64,
        },
        "10",
    ),
    def(
        "index.merge.log_byte_size_policy.min_merge",
        true,
        Kind::ByteSize,
        "2097152b",
    ),
    def(
        "index.merge.log_byte_size_policy.max_merge_segment",
        true,
        Kind::ByteSize,
        "5368709120b",
    ),
    def(
        "index.merge.log_byte_size_policy.max_merge_segment_forced_merge",
        true,
        Kind::ByteSize,
        "9223372036854775807b",
    ),
    def(
        "index.merge.log_byte_size_policy.max_merged_docs",
        true,
        Kind::Int {
            min: i32::MIN as i64,
            max: i32::MAX as i64,
        },
        "2147483647",
    ),
    def(
        "index.merge.log_byte_size_policy.no_cfs_ratio",
        true,
        Kind::Check(check_no_cfs_ratio),
        "0.1",
    ),
    def(
        "index.compound_format",
        true,
        Kind::Check(check_no_cfs_ratio),
        "0.1",
    ),
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
    // Tessera verifies every segment file's checksum when a shard opens unless told `false`
    // (OpenSearch defaults to `false`): a flipped byte then fails the shard with
    // `corrupt_index_exception` instead of giving wrong answers
    def(
        "index.shard.check_on_startup",
        false,
        Kind::Check(check_on_startup),
        "checksum",
    ),
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
        "SEGMENT",
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

/// The codecs of OpenSearch 2.19 without the custom-codecs plugin.
const CODECS: [&str; 4] = ["default", "lz4", "best_compression", "zlib"];

fn check_codec(key: &str, value: &str) -> Result<()> {
    if CODECS.contains(&value) {
        Ok(())
    } else {
        Err(Error::illegal_argument(format!(
            "unknown value for [{key}] must be one of [{}] but was: {value}",
            CODECS.join(", ")
        )))
    }
}

fn check_merge_policy(_: &str, value: &str) -> Result<()> {
    if ["tiered", "log_byte_size", "default"].contains(&value) {
        Ok(())
    } else {
        Err(Error::illegal_argument(format!(
            "The setting has unsupported policy specified: {value}. Please use one of: tiered, log_byte_size, default"
        )))
    }
}

/// OpenSearch reads the value with `Durability.valueOf(value.toUpperCase())`.
fn check_durability(_: &str, value: &str) -> Result<()> {
    let upper = value.to_uppercase();
    if upper == "REQUEST" || upper == "ASYNC" {
        Ok(())
    } else {
        Err(Error::illegal_argument(format!(
            "No enum constant org.opensearch.index.translog.Translog.Durability.{upper}"
        )))
    }
}

fn check_sync_interval(key: &str, value: &str) -> Result<()> {
    match tessera_common::time::parse_time_value(value, key)? {
        Some(millis) if millis >= 100 => Ok(()),
        _ => Err(Error::illegal_argument(format!(
            "failed to parse value [{value}] for setting [{key}], must be >= [100ms]"
        ))),
    }
}

/// A byte size in megabytes as Lucene's merge policies take it; `-1` is a valid byte size.
fn size_mb(key: &str, value: &str) -> Result<f64> {
    if value.trim() == "-1" {
        return Ok(-1.0 / 1_048_576.0);
    }
    Ok(parse_byte_size(value, key)? as f64 / 1_048_576.0)
}

fn check_floor_segment(key: &str, value: &str) -> Result<()> {
    let mb = size_mb(key, value)?;
    if mb > 0.0 {
        Ok(())
    } else {
        Err(Error::illegal_argument(format!(
            "floorSegmentMB must be > 0.0 (got {})",
            java_double(mb)
        )))
    }
}

fn check_max_merged_segment(key: &str, value: &str) -> Result<()> {
    let mb = size_mb(key, value)?;
    if mb >= 0.0 {
        Ok(())
    } else {
        Err(Error::illegal_argument(format!(
            "maxMergedSegmentMB must be >=0 (got {})",
            java_double(mb)
        )))
    }
}

/// `TieredMergePolicyProvider.parseNoCFSRatio`: a boolean or a ratio in [0, 1].
fn check_no_cfs_ratio(_: &str, value: &str) -> Result<()> {
    let trimmed = value.trim();
    if trimmed.eq_ignore_ascii_case("true") || trimmed.eq_ignore_ascii_case("false") {
        return Ok(());
    }
    match trimmed.parse::<f64>() {
        Ok(ratio) if (0.0..=1.0).contains(&ratio) => Ok(()),
        Ok(ratio) => Err(Error::illegal_argument(format!(
            "NoCFSRatio must be in the interval [0..1] but was: [{}]",
            java_double(ratio)
        ))),
        Err(_) => Err(Error::illegal_argument(format!(
            "Expected a boolean or a value in the interval [0..1] but was: [{trimmed}]"
        ))
        .caused_by(Error::new(
            "number_format_exception",
            400,
            format!("For input string: \"{trimmed}\""),
        ))),
    }
}

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
    if settings.contains("index.codec.compression_level") {
        // only the zstd codecs of the custom-codecs plugin take a level, and OpenSearch 2.19
        // without that plugin has none of them
        match settings.get_str("index.codec") {
            Some(codec) => {
                return Err(Error::illegal_argument(format!(
                    "Compression level cannot be set for the {codec} codec."
                )))
            }
            None if !updating => {
                return Err(Error::illegal_argument(
                    "missing required setting [index.codec] for setting [index.codec.compression_level]",
                ))
            }
            None => {}
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
    use serde_json::{json, Value};

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

    fn reason(settings: Value) -> String {
        let s = Settings::from_json(&settings).unwrap();
        validate(&s, false, "x").unwrap_err().reason().to_string()
    }

    #[test]
    fn big5_and_noaa_settings_are_accepted() {
        let s = Settings::from_json(&json!({
            "index.number_of_shards": 1, "index.number_of_replicas": 1,
            "index.queries.cache.enabled": false, "index.requests.cache.enable": false,
            "index.merge.policy": "log_byte_size", "index.codec": "best_compression",
            "index.translog.sync_interval": "30s", "index.translog.durability": "async",
            "index.query.default_field": ["message"],
            "index.merge.policy.max_merged_segment": "100GB"
        }))
        .unwrap();
        validate(&s, false, "x").unwrap();
        let s = Settings::from_json(&json!({
            "index.translog.durability": "Async", "index.translog.sync_interval": "100ms",
            "index.merge.policy": "tiered", "index.merge.policy.segments_per_tier": 4,
            "index.merge.log_byte_size_policy.no_cfs_ratio": "true",
            "index.merge.policy.floor_segment": "1kb"
        }))
        .unwrap();
        validate(&s, false, "x").unwrap();
        // the dynamic ones can be updated
        let s = Settings::from_json(&json!({
            "index.translog.sync_interval": "10s",
            "index.merge.policy.max_merged_segment": "1gb"
        }))
        .unwrap();
        validate(&s, true, "[x/u]").unwrap();
    }

    #[test]
    fn lucene_settings_are_validated_like_opensearch() {
        assert_eq!(
            reason(json!({"index.merge.policy": "TIERED"})),
            "The setting has unsupported policy specified: TIERED. Please use one of: tiered, log_byte_size, default"
        );
        assert_eq!(
            reason(json!({"index.codec": "zstd"})),
            "unknown value for [index.codec] must be one of [default, lz4, best_compression, zlib] but was: zstd"
        );
        assert_eq!(
            reason(json!({"index.codec": "best_compression", "index.codec.compression_level": 3})),
            "Compression level cannot be set for the best_compression codec."
        );
        assert_eq!(
            reason(json!({"index.codec.compression_level": 3})),
            "missing required setting [index.codec] for setting [index.codec.compression_level]"
        );
        assert_eq!(
            reason(json!({"index.translog.sync_interval": "10ms"})),
            "failed to parse value [10ms] for setting [index.translog.sync_interval], must be >= [100ms]"
        );
        assert_eq!(
            reason(json!({"index.translog.sync_interval": "-1"})),
            "failed to parse value [-1] for setting [index.translog.sync_interval], must be >= [100ms]"
        );
        assert_eq!(
            reason(json!({"index.translog.sync_interval": "abc"})),
            "failed to parse setting [index.translog.sync_interval] with value [abc] as a time value: unit is missing or unrecognized"
        );
        assert_eq!(
            reason(json!({"index.translog.durability": "bogus"})),
            "No enum constant org.opensearch.index.translog.Translog.Durability.BOGUS"
        );
        assert_eq!(
            reason(json!({"index.merge.policy.max_merged_segment": "bogus"})),
            "failed to parse setting [index.merge.policy.max_merged_segment] with value [bogus] as a size in bytes: unit is missing or unrecognized"
        );
        assert_eq!(
            reason(json!({"index.merge.policy.max_merged_segment": "-1"})),
            "maxMergedSegmentMB must be >=0 (got -9.5367431640625E-7)"
        );
        assert_eq!(
            reason(json!({"index.merge.policy.floor_segment": "0b"})),
            "floorSegmentMB must be > 0.0 (got 0.0)"
        );
        assert_eq!(
            reason(json!({"index.merge.policy.segments_per_tier": "1"})),
            "Failed to parse value [1] for setting [index.merge.policy.segments_per_tier] must be >= 2.0"
        );
        assert_eq!(
            reason(json!({"index.merge.policy.deletes_pct_allowed": "60"})),
            "Failed to parse value [60] for setting [index.merge.policy.deletes_pct_allowed] must be <= 50.0"
        );
        assert_eq!(
            reason(json!({"index.merge.policy.max_merge_at_once": "1"})),
            "Failed to parse value [1] for setting [index.merge.policy.max_merge_at_once] must be >= 2"
        );
        assert_eq!(
            reason(json!({"index.merge.log_byte_size_policy.no_cfs_ratio": "2"})),
            "NoCFSRatio must be in the interval [0..1] but was: [2.0]"
        );
        assert_eq!(
            reason(json!({"index.compound_format": "x"})),
            "Expected a boolean or a value in the interval [0..1] but was: [x]"
        );
        assert!(reason(json!({"index.merge.policy.bogus": "1"}))
            .starts_with("unknown setting [index.merge.policy.bogus]"));
        // static ones cannot be updated on an open index
        let s = Settings::from_json(&json!({"index.merge.policy": "tiered"})).unwrap();
        assert_eq!(
            validate(&s, true, "[x/u]").unwrap_err().reason(),
            "Can't update non dynamic settings [[index.merge.policy]] for open indices [[x/u]]"
        );
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
