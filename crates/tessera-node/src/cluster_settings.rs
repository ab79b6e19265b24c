//! Cluster settings: the registry (with OpenSearch's names and messages), persistent and
//! transient values, and their persistence under `_state/` in the data directory. In a cluster
//! they live in the cluster's metadata (the `settings` key), which the elected manager writes
//! and every node applies ([`ClusterSettings::apply_stored`]).

use std::path::{Path, PathBuf};
use std::sync::RwLock;

use serde_json::{json, Value};
use tessera_common::settings::{Kind, Registry, Scope, SettingDef, Settings};
use tessera_common::{Error, Result};
use tessera_index::translog::write_atomic;
use tessera_script::cache::{CompilationRate, CompileLimits};

const fn def(key: &'static str, kind: Kind, default: &'static str) -> SettingDef {
    SettingDef {
        key,
        scope: Scope::Cluster,
        dynamic: true,
        kind,
        default,
    }
}

const INT: Kind = Kind::Int {
    min: 0,
    max: i32::MAX as i64,
};

static DEFS: &[SettingDef] = &[
    def(
        "search.concurrent_segment_search.mode",
        Kind::OneOf(&["all", "none", "auto"]),
        "auto",
    ),
    def(
        "search.concurrent_segment_search.enabled",
        Kind::Bool,
        "true",
    ),
    def("search.concurrent.max_slice_count", INT, "0"),
    def("search.max_buckets", INT, "65535"),
    def(
        "indices.breaker.request.limit",
        Kind::Check(check_memory_size),
        tessera_common::breaker::DEFAULT_REQUEST_LIMIT,
    ),
    def(
        "indices.breaker.total.limit",
        Kind::Check(check_memory_size),
        tessera_common::breaker::DEFAULT_TOTAL_LIMIT,
    ),
    def("search.default_search_timeout", Kind::Time, "-1"),
    def("search.default_keep_alive", Kind::Time, "5m"),
    // the longest keep-alive a scroll or a point in time may ask for, and how many of each a
    // node keeps open (`pinned_search`)
    def("search.max_keep_alive", Kind::Time, "24h"),
    def("search.max_open_scroll_context", INT, "500"),
    def("search.max_open_pit_context", INT, "300"),
    def("search.allow_expensive_queries", Kind::Bool, "true"),
    def("search.default_allow_partial_results", Kind::Bool, "true"),
    def(
        "cluster.routing.use_adaptive_replica_selection",
        Kind::Bool,
        "true",
    ),
    def("cluster.max_shards_per_node", INT, "1000"),
    def("cluster.blocks.read_only", Kind::Bool, "false"),
    def("cluster.blocks.read_only_allow_delete", Kind::Bool, "false"),
    def("action.auto_create_index", Kind::Str, "true"),
    def("action.destructive_requires_name", Kind::Bool, "false"),
    def(
        crate::disk::LOW,
        Kind::Check(crate::disk::check_watermark),
        "85%",
    ),
    def(
        crate::disk::HIGH,
        Kind::Check(crate::disk::check_watermark),
        "90%",
    ),
    def(
        crate::disk::FLOOD_STAGE,
        Kind::Check(crate::disk::check_watermark),
        "95%",
    ),
    def(crate::disk::THRESHOLD_ENABLED, Kind::Bool, "true"),
    def(
        "cluster.routing.allocation.enable",
        Kind::Enum(&["all", "primaries", "new_primaries", "none"]),
        "all",
    ),
    // compiling scripts (`tessera_script::cache`)
    def("script.max_size_in_bytes", INT, "65535"),
    def(
        "script.max_compilations_rate",
        Kind::Check(check_general_rate),
        "use-context",
    ),
    def(
        "script.context.score.max_compilations_rate",
        Kind::Check(check_rate),
        "75/5m",
    ),
    def(
        "script.context.filter.max_compilations_rate",
        Kind::Check(check_rate),
        "75/5m",
    ),
    def(
        "script.context.aggs.max_compilations_rate",
        Kind::Check(check_rate),
        "75/5m",
    ),
    def(
        "script.context.update.max_compilations_rate",
        Kind::Check(check_rate),
        "75/5m",
    ),
    def(
        "script.context.ingest.max_compilations_rate",
        Kind::Check(check_rate),
        "75/5m",
    ),
    def(
        "script.context.number_sort.max_compilations_rate",
        Kind::Check(check_rate),
        "75/5m",
    ),
    def(
        "script.context.string_sort.max_compilations_rate",
        Kind::Check(check_rate),
        "75/5m",
    ),
    def(
        "script.context.field.max_compilations_rate",
        Kind::Check(check_rate),
        "75/5m",
    ),
    def(
        "script.context.painless_test.max_compilations_rate",
        Kind::Check(check_rate),
        "75/5m",
    ),
    def(
        "script.context.bucket_aggregation.max_compilations_rate",
        Kind::Check(check_rate),
        "75/5m",
    ),
    def(
        "script.context.aggregation_selector.max_compilations_rate",
        Kind::Check(check_rate),
        "75/5m",
    ),
    def(
        "script.context.aggs_init.max_compilations_rate",
        Kind::Check(check_rate),
        "75/5m",
    ),
    def(
        "script.context.aggs_map.max_compilations_rate",
        Kind::Check(check_rate),
        "75/5m",
    ),
    def(
        "script.context.aggs_combine.max_compilations_rate",
        Kind::Check(check_rate),
        "75/5m",
    ),
    def(
        "script.context.aggs_reduce.max_compilations_rate",
        Kind::Check(check_rate),
        "75/5m",
    ),
    def(
        "script.context.template.max_compilations_rate",
        Kind::Check(check_rate),
        "75/5m",
    ),
    def(
        "script.context.terms_set.max_compilations_rate",
        Kind::Check(check_rate),
        "75/5m",
    ),
];

/// A compilation rate (`75/5m`, `unlimited`).
fn check_rate(_key: &str, value: &str) -> Result<()> {
    CompilationRate::parse(value)
        .map(drop)
        .map_err(Error::illegal_argument)
}

/// `script.max_compilations_rate`: a rate, or `use-context` (each context's own).
fn check_general_rate(key: &str, value: &str) -> Result<()> {
    match value {
        "use-context" => Ok(()),
        _ => check_rate(key, value),
    }
}

/// A percentage of the memory base or a byte size (the breakers' limits).
fn check_memory_size(key: &str, value: &str) -> Result<()> {
    tessera_common::breaker::parse_memory_size(value, 1 << 30, key).map(|_| ())
}

static OPEN_PREFIXES: &[&str] = &[
    "cluster.routing.allocation.",
    "cluster.routing.rebalance.",
    "indices.recovery.",
    "indices.breaker.",
    "indices.memory.",
    "logger.",
    "cluster.info.",
    "cluster.metadata.",
    "plugins.",
    "opensearch.",
];

pub static REGISTRY: Registry = Registry::new(Scope::Cluster, DEFS, OPEN_PREFIXES);

/// The node's cluster settings (persistent ones survive restarts).
pub struct ClusterSettings {
    path: PathBuf,
    persistent: RwLock<Settings>,
    transient: RwLock<Settings>,
    /// The node configuration's values, in place of the registry's defaults.
    node_defaults: Settings,
}

impl ClusterSettings {
    /// The settings persisted under `state_dir`, with `node_defaults` (from the node's
    /// configuration, validated: [`ClusterSettings::validate_node_defaults`]) in place of the
    /// registry's defaults.
    pub fn open(state_dir: &Path, node_defaults: Settings) -> Result<ClusterSettings> {
        let path = state_dir.join("cluster_settings.json");
        let persistent = match std::fs::read(&path) {
            Ok(bytes) => {
                let value: Value = serde_json::from_slice(&bytes)
                    .map_err(|e| Error::internal("read cluster settings", e))?;
                Settings::from_json(&value)?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Settings::new(),
            Err(e) => return Err(Error::internal("read cluster settings", e)),
        };
        let settings = ClusterSettings {
            path,
            persistent: RwLock::new(persistent),
            transient: RwLock::new(Settings::new()),
            node_defaults,
        };
        settings.apply_script_limits();
        Ok(settings)
    }

    /// The limits on compiling scripts these settings give.
    pub fn script_limits(&self) -> CompileLimits {
        let rate = |key: &str| CompilationRate::parse(&self.get(key)).ok();
        CompileLimits {
            max_size_in_bytes: self.get_usize("script.max_size_in_bytes"),
            general: rate("script.max_compilations_rate"),
            // the contexts are those with a `script.context.<name>.max_compilations_rate`
            contexts: DEFS
                .iter()
                .filter_map(|def| {
                    let name = def
                        .key
                        .strip_prefix("script.context.")?
                        .strip_suffix(".max_compilations_rate")?;
                    Some((name.to_string(), rate(def.key)?))
                })
                .collect(),
        }
    }

    /// Hands the script limits to the process's script cache (it compiles for every node of
    /// the process: the last settings applied win).
    fn apply_script_limits(&self) {
        tessera_script::cache::shared().set_limits(self.script_limits());
    }

    /// Whether `key` is a dynamic cluster setting (one a node's configuration may give).
    pub fn is_setting(key: &str) -> bool {
        REGISTRY.def(key).is_some()
    }

    /// Checks cluster settings given in a node's configuration.
    pub fn validate_node_defaults(defaults: &Settings) -> Result<()> {
        REGISTRY.validate(defaults, false, "node")
    }

    /// The value without an explicit one: the node's configuration's, else the registry's.
    fn default_of(&self, key: &str) -> String {
        if let Some(v) = self.node_defaults.get_str(key) {
            return v.to_string();
        }
        REGISTRY
            .def(key)
            .map(|d| d.default.to_string())
            .unwrap_or_default()
    }

    /// The value set explicitly (transient, then persistent), if any.
    pub fn explicit(&self, key: &str) -> Option<String> {
        if let Some(v) = self.transient.read().unwrap().get_str(key) {
            return Some(v.to_string());
        }
        self.persistent
            .read()
            .unwrap()
            .get_str(key)
            .map(String::from)
    }

    /// The effective value: transient, then persistent, then the default (the node
    /// configuration's, else the registry's).
    pub fn get(&self, key: &str) -> String {
        match self.explicit(key) {
            Some(v) => v,
            None => self.default_of(key),
        }
    }

    pub fn get_bool(&self, key: &str) -> bool {
        self.get(key) == "true"
    }

    pub fn get_usize(&self, key: &str) -> usize {
        self.get(key).parse().unwrap_or(0)
    }

    /// `PUT _cluster/settings`; returns the applied (persistent, transient) updates.
    pub fn update(
        &self,
        persistent: &Settings,
        transient: &Settings,
    ) -> Result<(Settings, Settings)> {
        REGISTRY.validate(persistent, false, "persistent")?;
        REGISTRY.validate(transient, false, "transient")?;
        {
            let mut current = self.persistent.write().unwrap();
            let mut next = current.clone();
            next.merge(persistent);
            if next != *current {
                let bytes = serde_json::to_vec_pretty(&next.to_flat_json())
                    .map_err(|e| Error::internal("write cluster settings", e))?;
                write_atomic(&self.path, &bytes)?;
                *current = next;
            }
        }
        self.transient.write().unwrap().merge(transient);
        self.apply_script_limits();
        Ok((persistent.clone(), transient.clone()))
    }

    /// Checks an update against the registry (what `update` checks first).
    pub fn validate(persistent: &Settings, transient: &Settings) -> Result<()> {
        REGISTRY.validate(persistent, false, "persistent")?;
        REGISTRY.validate(transient, false, "transient")
    }

    /// The settings after `update` would apply, as stored in a cluster's metadata (flat JSON
    /// `{"persistent": …, "transient": …}`), from the stored form `current`.
    pub fn merged_stored(
        current: Option<&[u8]>,
        persistent: &Settings,
        transient: &Settings,
    ) -> Result<Vec<u8>> {
        let (mut next_persistent, mut next_transient) = parse_stored(current)?;
        next_persistent.merge(persistent);
        next_transient.merge(transient);
        serde_json::to_vec(&json!({
            "persistent": next_persistent.to_flat_json(),
            "transient": next_transient.to_flat_json(),
        }))
        .map_err(|e| Error::internal("write cluster settings", e))
    }

    /// Installs the cluster's settings as its metadata stores them (a member applies them
    /// from the cluster state); the persistent ones are kept in `_state/` too.
    pub fn apply_stored(&self, stored: Option<&[u8]>) -> Result<()> {
        let (persistent, transient) = parse_stored(stored)?;
        {
            let mut current = self.persistent.write().unwrap();
            if *current != persistent {
                let bytes = serde_json::to_vec_pretty(&persistent.to_flat_json())
                    .map_err(|e| Error::internal("write cluster settings", e))?;
                write_atomic(&self.path, &bytes)?;
                *current = persistent;
            }
        }
        *self.transient.write().unwrap() = transient;
        self.apply_script_limits();
        Ok(())
    }

    /// `GET _cluster/settings`.
    pub fn render(&self, flat: bool, include_defaults: bool) -> Value {
        let render = |s: &Settings| {
            if flat {
                s.to_flat_json()
            } else {
                s.to_nested_json()
            }
        };
        let mut body = json!({
            "persistent": render(&self.persistent.read().unwrap()),
            "transient": render(&self.transient.read().unwrap()),
        });
        if include_defaults {
            let mut defaults = Settings::new();
            for d in REGISTRY.defs() {
                defaults.set(d.key, self.default_of(d.key));
            }
            body["defaults"] = render(&defaults);
        }
        body
    }
}

/// The (persistent, transient) settings of their stored form; none stored: both empty.
fn parse_stored(stored: Option<&[u8]>) -> Result<(Settings, Settings)> {
    let Some(bytes) = stored else {
        return Ok((Settings::new(), Settings::new()));
    };
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| Error::internal("read cluster settings", e))?;
    Ok((
        Settings::from_json(&value["persistent"])?,
        Settings::from_json(&value["transient"])?,
    ))
}

/// Renders an update's echo for the `PUT` response (nested, resets omitted).
pub fn render_update(settings: &Settings) -> Value {
    let mut applied = Settings::new();
    for (key, value) in settings.iter() {
        if let Some(value) = value {
            applied.set_value(key, Some(value.clone()));
        }
    }
    applied.to_nested_json()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_persist_and_transient_wins() {
        let dir = tempfile::tempdir().unwrap();
        {
            let cs = ClusterSettings::open(dir.path(), Settings::new()).unwrap();
            assert_eq!(cs.get("search.concurrent_segment_search.mode"), "auto");
            let p = Settings::from_json(
                &json!({"search": {"concurrent_segment_search": {"mode": "none"}}}),
            )
            .unwrap();
            cs.update(&p, &Settings::new()).unwrap();
            let t = Settings::from_json(&json!({"search.concurrent.max_slice_count": 4})).unwrap();
            cs.update(&Settings::new(), &t).unwrap();
            assert_eq!(cs.get_usize("search.concurrent.max_slice_count"), 4);
        }
        let cs = ClusterSettings::open(dir.path(), Settings::new()).unwrap();
        assert_eq!(cs.get("search.concurrent_segment_search.mode"), "none");
        assert_eq!(
            cs.get_usize("search.concurrent.max_slice_count"),
            0,
            "transient settings do not survive"
        );
        let bad = Settings::from_json(&json!({"bogus.setting": 1})).unwrap();
        assert_eq!(
            cs.update(&bad, &Settings::new()).unwrap_err().reason(),
            "persistent setting [bogus.setting], not recognized"
        );
        let bad_value =
            Settings::from_json(&json!({"search.concurrent_segment_search.mode": "sometimes"}))
                .unwrap();
        assert!(cs.update(&bad_value, &Settings::new()).is_err());
        let reset =
            Settings::from_json(&json!({"search.concurrent_segment_search.mode": null})).unwrap();
        cs.update(&reset, &Settings::new()).unwrap();
        assert_eq!(cs.get("search.concurrent_segment_search.mode"), "auto");
    }

    #[test]
    fn script_limits_come_from_the_script_settings() {
        let dir = tempfile::tempdir().unwrap();
        let defaults =
            Settings::from_json(&json!({"script.context.score.max_compilations_rate": "5000/1m"}))
                .unwrap();
        let cs = ClusterSettings::open(dir.path(), defaults).unwrap();
        let limits = cs.script_limits();
        assert_eq!(limits.max_size_in_bytes, 65_535);
        assert_eq!(limits.general, None);
        assert_eq!(limits.contexts.len(), 17);
        assert_eq!(
            limits.contexts["score"],
            CompilationRate::parse("5000/1m").unwrap()
        );
        assert_eq!(limits.contexts["aggs_reduce"], CompilationRate::DEFAULT);
    }

    #[test]
    fn the_node_configuration_gives_defaults_below_explicit_values() {
        let dir = tempfile::tempdir().unwrap();
        let defaults =
            Settings::from_json(&json!({"cluster.routing.allocation.enable": "primaries"}))
                .unwrap();
        ClusterSettings::validate_node_defaults(&defaults).unwrap();
        let bad =
            Settings::from_json(&json!({"cluster.routing.allocation.enable": "some"})).unwrap();
        assert_eq!(
            ClusterSettings::validate_node_defaults(&bad)
                .unwrap_err()
                .status(),
            400
        );
        assert!(ClusterSettings::is_setting("search.max_buckets"));
        assert!(!ClusterSettings::is_setting("http.port"));
        let cs = ClusterSettings::open(dir.path(), defaults).unwrap();
        assert_eq!(cs.get("cluster.routing.allocation.enable"), "primaries");
        let rendered = cs.render(true, true);
        assert_eq!(rendered["persistent"], json!({}));
        assert_eq!(
            rendered["defaults"]["cluster.routing.allocation.enable"],
            "primaries"
        );
        let all =
            Settings::from_json(&json!({"cluster.routing.allocation.enable": "all"})).unwrap();
        cs.update(&Settings::new(), &all).unwrap();
        assert_eq!(cs.get("cluster.routing.allocation.enable"), "all");
    }

    #[test]
    fn a_cluster_stores_updates_and_every_node_applies_them() {
        let persistent =
            Settings::from_json(&json!({"action.auto_create_index": "false"})).unwrap();
        let transient = Settings::from_json(&json!({"search.max_buckets": 10})).unwrap();
        let stored = ClusterSettings::merged_stored(None, &persistent, &transient).unwrap();
        // a later update merges into what is stored; a null resets
        let reset = Settings::from_json(&json!({"search.max_buckets": null})).unwrap();
        let stored =
            ClusterSettings::merged_stored(Some(&stored), &Settings::new(), &reset).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let cs = ClusterSettings::open(dir.path(), Settings::new()).unwrap();
        cs.apply_stored(Some(&stored)).unwrap();
        assert!(!cs.get_bool("action.auto_create_index"));
        assert_eq!(cs.get_usize("search.max_buckets"), 65535);
        assert_eq!(
            ClusterSettings::open(dir.path(), Settings::new())
                .unwrap()
                .get("action.auto_create_index"),
            "false"
        );
        cs.apply_stored(None).unwrap();
        assert!(
            cs.get_bool("action.auto_create_index"),
            "nothing stored: the defaults"
        );
    }
}
