//! `POST /_snapshot/{repo}/{snapshot}/_restore`: indices of a snapshot made again.
//!
//! A restored index is created as any index is (the manager decides it, its shards allocated
//! as usual) from the metadata the snapshot kept, under a new uuid, carrying where its data is
//! (`IndexMetadata::restore`): each primary fills its empty directory from the repository as it
//! opens (`tessera_index::snapshot_files::restore_shard`), and replicas then recover from it as
//! from any primary.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tessera_common::settings::Settings;
use tessera_common::{Error, Result};
use tessera_index::aliases::{parse_aliases, Aliases};
use tessera_index::index_settings::PRIVATE;
use tessera_index::snapshot_files::RestoreSource;
use tessera_mapping::Mapping;

use super::create::repository_location;
use super::store::{self, SnapshotIndex, SnapshotInfo};
use crate::node::Node;

/// How long a restore waiting for completion waits for its primaries.
const WAIT: Duration = Duration::from_secs(60);

/// The body of a restore request.
#[derive(Clone, Debug, Default)]
pub struct RestoreRequest {
    pub indices: Option<String>,
    pub ignore_unavailable: bool,
    pub rename: Option<(regex::Regex, String)>,
    pub include_aliases: bool,
    pub index_settings: Settings,
    pub ignore_index_settings: Vec<String>,
}

const KNOWN: &[&str] = &[
    "indices",
    "ignore_unavailable",
    "allow_no_indices",
    "expand_wildcards",
    "rename_pattern",
    "rename_replacement",
    "include_aliases",
    "index_settings",
    "ignore_index_settings",
    "include_global_state",
    "partial",
];

fn strings(value: &Value, key: &str) -> Result<Vec<String>> {
    match value {
        Value::String(s) => Ok(s.split(',').map(|p| p.trim().to_string()).collect()),
        Value::Array(items) => items
            .iter()
            .map(|v| {
                v.as_str().map(String::from).ok_or_else(|| {
                    Error::illegal_argument(format!(
                        "malformed {key} section, should be an array of strings"
                    ))
                })
            })
            .collect(),
        _ => Err(Error::illegal_argument(format!(
            "malformed {key} section, should be an array of strings"
        ))),
    }
}

impl RestoreRequest {
    pub fn parse(body: Option<&Value>) -> Result<RestoreRequest> {
        let empty = Value::Object(Default::default());
        let body = body.unwrap_or(&empty);
        let Some(object) = body.as_object() else {
            return Err(Error::parsing("request body must be an object"));
        };
        if let Some(unknown) = object.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(Error::illegal_argument(format!(
                "Unknown parameter {unknown}"
            )));
        }
        let flag = |key: &str, default: bool| super::body_flag(body, key, default);
        if flag("include_global_state", false)? {
            return Err(Error::not_supported(
                "[include_global_state] on restore is not supported by Tessera: snapshots hold indices only",
            ));
        }
        let indices = match &body["indices"] {
            Value::Null => None,
            other => Some(strings(other, "indices")?.join(",")),
        };
        let rename = match (&body["rename_pattern"], &body["rename_replacement"]) {
            (Value::Null, _) => None,
            (Value::String(pattern), replacement) => {
                let regex = regex::Regex::new(pattern).map_err(|e| {
                    Error::illegal_argument(format!("invalid rename_pattern [{pattern}]: {e}"))
                })?;
                let replacement = replacement.as_str().unwrap_or("");
                Some((
                    regex,
                    tessera_common::java_replacement::to_rust(replacement),
                ))
            }
            _ => return Err(Error::illegal_argument("malformed rename_pattern")),
        };
        let index_settings = match &body["index_settings"] {
            Value::Null => Settings::new(),
            v @ Value::Object(_) => Settings::from_json(v)?.with_prefix("index."),
            _ => return Err(Error::illegal_argument("malformed index_settings section")),
        };
        let ignore_index_settings = match &body["ignore_index_settings"] {
            Value::Null => Vec::new(),
            other => strings(other, "ignore_index_settings")?,
        };
        for key in [
            "index.number_of_shards",
            "index.version.created",
            "index.uuid",
        ] {
            if index_settings.contains(key) || ignore_index_settings.iter().any(|k| k == key) {
                return Err(Error::new(
                    "snapshot_restore_exception",
                    500,
                    format!("cannot modify setting [{key}] on restore"),
                ));
            }
        }
        Ok(RestoreRequest {
            indices,
            ignore_unavailable: flag("ignore_unavailable", false)?,
            rename,
            include_aliases: flag("include_aliases", true)?,
            index_settings,
            ignore_index_settings,
        })
    }

    fn renamed(&self, name: &str) -> String {
        match &self.rename {
            Some((regex, replacement)) => {
                regex.replace_all(name, replacement.as_str()).into_owned()
            }
            None => name.to_string(),
        }
    }
}

/// The indices of `info` that `expression` selects (all when `None`), in the snapshot's order.
fn select<'a>(
    info: &'a SnapshotInfo,
    expression: Option<&str>,
    ignore_unavailable: bool,
) -> Result<Vec<&'a SnapshotIndex>> {
    let Some(expression) = expression.filter(|e| !e.is_empty() && *e != "_all" && *e != "*") else {
        return Ok(info.indices.iter().collect());
    };
    let mut chosen: Vec<&SnapshotIndex> = Vec::new();
    for part in expression
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        let (exclude, pattern) = match part.strip_prefix('-') {
            Some(p) => (true, p),
            None => (false, part),
        };
        let matched: Vec<&SnapshotIndex> = info
            .indices
            .iter()
            .filter(|i| tessera_mapping::dynamic::simple_match(pattern, &i.name))
            .collect();
        if exclude {
            chosen.retain(|i| !matched.iter().any(|m| m.name == i.name));
            continue;
        }
        if matched.is_empty() && !pattern.contains('*') && !ignore_unavailable {
            return Err(Error::index_not_found(pattern));
        }
        for index in matched {
            if !chosen.iter().any(|c| c.name == index.name) {
                chosen.push(index);
            }
        }
    }
    Ok(chosen)
}

fn restore_exception(repository: &str, info: &SnapshotInfo, reason: &str) -> Error {
    Error::new(
        "snapshot_restore_exception",
        500,
        format!("[{repository}:{}/{}] {reason}", info.snapshot, info.uuid),
    )
}

/// What a restore answers: the restored indices and their shard counts, or that it goes on.
pub enum Restored {
    Done {
        snapshot: String,
        indices: Vec<String>,
        total: usize,
        failed: usize,
    },
    Accepted,
}

/// One index to create: its new name, settings, mapping, aliases and source.
struct Plan {
    name: String,
    settings: Settings,
    mapping: Mapping,
    aliases: Aliases,
    source: RestoreSource,
    shards: usize,
}

impl Node {
    /// `POST /_snapshot/{repo}/{snapshot}/_restore`: with `wait`, returns once every restored
    /// primary has opened (or failed to).
    pub fn restore_snapshot(
        &self,
        repository: &str,
        snapshot: &str,
        request: RestoreRequest,
        wait: bool,
    ) -> Result<Restored> {
        let (_, location) = repository_location(self, repository)?;
        let info = store::read(&location, snapshot)?.ok_or_else(|| {
            Error::new(
                "snapshot_restore_exception",
                500,
                format!("[{repository}:{snapshot}] snapshot does not exist"),
            )
        })?;
        if info.state() == "FAILED" {
            return Err(restore_exception(
                repository,
                &info,
                "unsupported snapshot state [FAILED]",
            ));
        }
        let selected = select(
            &info,
            request.indices.as_deref(),
            request.ignore_unavailable,
        )?;
        let mut plans = Vec::new();
        for index in selected {
            if let Some(failed) = index.shards.iter().find(|s| s.failure.is_some()) {
                return Err(restore_exception(
                    repository,
                    &info,
                    &format!(
                        "index [{}] wasn't fully snapshotted - cannot restore (shard [{}] failed)",
                        index.name, failed.shard
                    ),
                ));
            }
            let name = request.renamed(&index.name);
            crate::resolve::validate_index_name(&name)?;
            if let Some(existing) = self.index(&name) {
                let reason = if existing.metadata().closed {
                    format!("cannot restore index [{name}]: an index with the same name exists, closed; restoring over a closed index is not supported by Tessera, delete it first")
                } else {
                    format!("cannot restore index [{name}] because an open index with same name already exists in the cluster. Either close or delete the existing index or restore the index under a different name by providing a rename pattern and replacement name")
                };
                return Err(restore_exception(repository, &info, &reason));
            }
            if plans.iter().any(|p: &Plan| p.name == name) {
                return Err(restore_exception(
                    repository,
                    &info,
                    &format!(
                        "indices [{}] and another index are renamed into the same index [{name}]",
                        index.name
                    ),
                ));
            }
            let mut settings = Settings::from_json(&index.metadata["settings"])?;
            for key in PRIVATE {
                settings.remove(key);
            }
            settings.remove("index.verified_before_close");
            for ignored in &request.ignore_index_settings {
                let keys: Vec<String> = settings
                    .keys()
                    .filter(|k| tessera_mapping::dynamic::simple_match(ignored, k))
                    .map(String::from)
                    .collect();
                for key in keys {
                    settings.remove(&key);
                }
            }
            settings.merge(&request.index_settings);
            let mapping = Mapping::parse(&index.metadata["mappings"])?;
            let aliases = if request.include_aliases {
                parse_aliases(&index.metadata["aliases"])?
            } else {
                Aliases::new()
            };
            plans.push(Plan {
                name,
                settings,
                mapping,
                aliases,
                source: RestoreSource {
                    repository: repository.to_string(),
                    snapshot: info.snapshot.clone(),
                    location: location.to_string_lossy().into_owned(),
                    snapshot_uuid: info.uuid.clone(),
                    index: index.name.clone(),
                    index_uuid: index.uuid.clone(),
                },
                shards: index.shards.len(),
            });
        }
        let mut created = Vec::new();
        for plan in plans {
            let index = self.create_index_restored(
                &plan.name,
                plan.settings,
                plan.mapping,
                plan.aliases,
                plan.source,
            )?;
            created.push((index, plan.shards));
        }
        if !wait {
            return Ok(Restored::Accepted);
        }
        let deadline = Instant::now() + WAIT;
        let (mut total, mut failed) = (0, 0);
        for (index, shards) in &created {
            total += shards;
            failed += self.wait_for_restored_primaries(index, deadline);
        }
        Ok(Restored::Done {
            snapshot: info.snapshot.clone(),
            indices: created.iter().map(|(i, _)| i.name()).collect(),
            total,
            failed,
        })
    }

    /// Waits until every primary of a restored index has opened or failed (or `deadline`);
    /// returns how many are not started. In a cluster, the state that shows them started is
    /// then waited for on every node (as an acknowledged change is), so that a search any
    /// node coordinates right after the restore finds every shard.
    fn wait_for_restored_primaries(
        &self,
        index: &Arc<tessera_index::IndexService>,
        deadline: Instant,
    ) -> usize {
        if self.coordination().is_none() {
            // a single node opened them as it created the index
            return index
                .shard_slots()
                .iter()
                .filter(|slot| !matches!(slot, tessera_index::index_service::ShardSlot::Started(_)))
                .count();
        }
        loop {
            let health = self.health(Some(std::slice::from_ref(index)));
            // read after the health: a state at least as new as the one it saw
            let seen = self.cluster_state().version;
            let shards = index.metadata().number_of_shards as usize;
            let active = health.active_primary_shards as usize;
            if active >= shards || Instant::now() >= deadline {
                if let Some(coordination) = self.coordination() {
                    coordination.wait_acknowledged(seen);
                }
                return shards.saturating_sub(active);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn java_replacements() {
        let request = RestoreRequest::parse(Some(&json!({
            "rename_pattern": "i(.+)", "rename_replacement": "r$1"
        })))
        .unwrap();
        assert_eq!(request.renamed("i1"), "r1");
        assert_eq!(request.renamed("other"), "other");
    }

    #[test]
    fn restore_bodies() {
        let unknown = RestoreRequest::parse(Some(&json!({"bogus": 1}))).unwrap_err();
        assert_eq!(unknown.reason(), "Unknown parameter bogus");
        let request = RestoreRequest::parse(Some(&json!({
            "indices": "a,b", "include_aliases": false,
            "index_settings": {"number_of_replicas": 0},
            "ignore_index_settings": ["index.refresh_interval"]
        })))
        .unwrap();
        assert_eq!(request.indices.as_deref(), Some("a,b"));
        assert!(!request.include_aliases);
        assert!(request.index_settings.contains("index.number_of_replicas"));
        let shards = RestoreRequest::parse(Some(
            &json!({"index_settings": {"index.number_of_shards": 2}}),
        ));
        assert_eq!(shards.unwrap_err().kind(), "snapshot_restore_exception");
        assert!(RestoreRequest::parse(Some(&json!({"include_global_state": true}))).is_err());
    }

    #[test]
    fn selection_in_a_snapshot() {
        let index = |name: &str| SnapshotIndex {
            name: name.into(),
            uuid: format!("{name}-u"),
            metadata: Value::Null,
            shards: vec![],
        };
        let info = SnapshotInfo {
            snapshot: "s".into(),
            uuid: "u".into(),
            indices: vec![index("logs-1"), index("logs-2"), index("other")],
            include_global_state: false,
            metadata: None,
            start_time_millis: 0,
            end_time_millis: 0,
        };
        let names = |e: Option<&str>| -> Vec<String> {
            select(&info, e, false)
                .unwrap()
                .into_iter()
                .map(|i| i.name.clone())
                .collect()
        };
        assert_eq!(names(None).len(), 3);
        assert_eq!(names(Some("logs-*,-logs-2")), vec!["logs-1"]);
        assert_eq!(select(&info, Some("zz"), false).unwrap_err().status(), 404);
        assert!(select(&info, Some("zz"), true).unwrap().is_empty());
    }
}
