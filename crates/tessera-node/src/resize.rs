//! `_shrink`, `_split` and `_clone`: a new index made from a write-blocked one, with its
//! mappings and settings, whose shards are built from the source shards' committed segments
//! ([`tessera_index::resize`]) instead of indexing the documents again.
//!
//! The checks and their order are OpenSearch's (`TransportResizeAction`, then
//! `MetadataCreateIndexService`): the request's shard count against the source's, then the
//! target's name and existence, then the source's write block. The target's routing uses the
//! source's `number_of_routing_shards` (a one-shard source's target chooses its own, as a new
//! index does), so every document stays on the target shard that its `_routing` or `_id`
//! routes to, and gets by id find it.
//!
//! In a cluster the manager decides the target ([`crate::coordination::manager`]) and puts each
//! target primary on the node holding the started primaries of its source shards (OpenSearch's
//! `ResizeAllocationDecider`; a shrink needs them all on one node, OpenSearch's error
//! otherwise). That node builds the shard from its local source files when the routing
//! allocates it ([`build_allocated_shard`]); the target's replicas then recover from it as any
//! replica does.

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use tessera_cluster::IndexRouting;
use tessera_cluster::ShardState;
use tessera_common::settings::Settings;
use tessera_common::{Error, Result};
use tessera_index::aliases::Aliases;
use tessera_index::index_settings::{self, PRIVATE};
use tessera_index::resize::{build_shard, Keep, SourceCommit, TargetMapping};
use tessera_index::{IndexMetadata, IndexService};

use crate::node::ClusterMode;
use crate::resolve::validate_index_name;
use crate::Node;

/// Which resize a request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ResizeType {
    Shrink,
    Split,
    Clone,
}

/// A resize request: the body's `settings` (with `index.` keys) and `aliases`.
#[derive(Clone, Debug)]
pub struct ResizeRequest {
    pub kind: ResizeType,
    pub source: String,
    pub target: String,
    pub settings: Settings,
    pub aliases: Aliases,
}

/// Source settings a target never takes from its source: those Tessera sets for every new
/// index, the shard counts, and the record of an earlier resize.
const NOT_COPIED: &[&str] = &[
    "index.number_of_shards",
    "index.number_of_replicas",
    "index.number_of_routing_shards",
    "index.resize.source.name",
    "index.resize.source.uuid",
];

/// The source shards target shard `shard` is built from (OpenSearch's `selectShrinkShards`,
/// `selectSplitShard`, `selectCloneShard`): a shrink's consecutive group, or a split's one
/// source shard.
pub fn source_shards(source_shards: u32, target_shards: u32, shard: u32) -> Range<u32> {
    if source_shards >= target_shards {
        let factor = source_shards / target_shards;
        shard * factor..(shard + 1) * factor
    } else {
        let factor = target_shards / source_shards;
        shard / factor..shard / factor + 1
    }
}

/// OpenSearch's checks of the target's shard count against the source's.
fn check_counts(kind: ResizeType, source: &IndexMetadata, target_shards: u32) -> Result<()> {
    let source_shards = source.number_of_shards;
    match kind {
        ResizeType::Clone if source_shards != target_shards => {
            Err(Error::illegal_argument(format!(
                "the number of target shards ({target_shards}) must be the same as the number of source shards ({source_shards})"
            )))
        }
        ResizeType::Clone => Ok(()),
        ResizeType::Shrink => {
            if source_shards < target_shards {
                return Err(Error::illegal_argument(format!(
                    "the number of target shards [{target_shards}] must be less that the number of source shards [{source_shards}]"
                )));
            }
            if !source_shards.is_multiple_of(target_shards) {
                return Err(Error::illegal_argument(format!(
                    "the number of source shards [{source_shards}] must be a multiple of [{target_shards}]"
                )));
            }
            Ok(())
        }
        ResizeType::Split => {
            if source_shards > target_shards {
                return Err(Error::illegal_argument(format!(
                    "the number of source shards [{source_shards}] must be less that the number of target shards [{target_shards}]"
                )));
            }
            if !target_shards.is_multiple_of(source_shards) {
                return Err(Error::illegal_argument(format!(
                    "the number of source shards [{source_shards}] must be a factor of [{target_shards}]"
                )));
            }
            let routing_shards = if source_shards == 1 {
                target_shards
            } else {
                source.routing_shards
            };
            if !routing_shards.is_multiple_of(target_shards) {
                return Err(Error::illegal_state(format!(
                    "the number of routing shards [{routing_shards}] must be a multiple of the target shards [{target_shards}]"
                )));
            }
            Ok(())
        }
    }
}

/// Whether the source refuses document writes (`index.blocks.write`, `read_only`,
/// `read_only_allow_delete`), as a resize needs.
fn write_blocked(source: &IndexMetadata) -> bool {
    [
        "index.blocks.write",
        "index.blocks.read_only",
        "index.blocks.read_only_allow_delete",
    ]
    .iter()
    .any(|key| source.setting(key) == "true")
}

/// The settings of the target: the request's, then every source setting the request did not
/// set (but those of [`NOT_COPIED`] and the private ones).
fn target_settings(source: &IndexMetadata, request: &Settings) -> Settings {
    let mut settings = request.clone();
    for (key, value) in source.settings.iter() {
        if settings.contains(key) || PRIVATE.contains(&key) || NOT_COPIED.contains(&key) {
            continue;
        }
        settings.set_value(key, value.cloned());
    }
    settings
}

/// The checks of the source made when the target is decided: open, and write-blocked.
pub(crate) fn check_source(source: &IndexMetadata) -> Result<()> {
    if source.closed {
        return Err(tessera_index::blocks::index_closed(source));
    }
    if !write_blocked(source) {
        return Err(Error::illegal_state(format!(
            "index {} must block write operations to resize index. use \"index.blocks.write=true\"",
            source.name
        )));
    }
    Ok(())
}

/// The node each target primary goes to: the one holding the started primaries of its source
/// shards (for a shrink, all on one node).
pub(crate) fn primary_nodes(
    kind: ResizeType,
    source: &IndexMetadata,
    routing: &IndexRouting,
    target_shards: u32,
) -> Result<Vec<String>> {
    let holder = |shard: u32| -> Result<String> {
        routing
            .shards
            .get(shard as usize)
            .and_then(|table| table.primary())
            .filter(|primary| primary.state == ShardState::Started)
            .and_then(|primary| primary.node_id.clone())
            .ok_or_else(|| {
                Error::illegal_state(format!(
                    "index {} has no started primary of shard [{shard}] to resize from",
                    source.name
                ))
            })
    };
    (0..target_shards)
        .map(|shard| {
            let mut nodes = source_shards(source.number_of_shards, target_shards, shard)
                .map(holder)
                .collect::<Result<Vec<_>>>()?;
            nodes.dedup();
            match nodes.as_slice() {
                [node] => Ok(node.clone()),
                _ => Err(Error::illegal_state(format!(
                    "index {} must have all shards allocated on the same node to {} index",
                    source.name,
                    if kind == ResizeType::Shrink {
                        "shrink"
                    } else {
                        "resize"
                    }
                ))),
            }
        })
        .collect()
}

/// The target's metadata under `uuid`.
pub(crate) fn target_metadata(
    source: &IndexMetadata,
    request: &ResizeRequest,
    uuid: &str,
) -> Result<IndexMetadata> {
    let settings = target_settings(source, &request.settings);
    let mut meta =
        IndexService::new_metadata(&request.target, uuid, settings, (*source.mapping).clone())?;
    if source.number_of_shards > 1 {
        meta.routing_shards = source.routing_shards;
    }
    meta.settings
        .set("index.resize.source.name", source.name.clone());
    meta.settings
        .set("index.resize.source.uuid", source.uuid.clone());
    Ok(meta)
}

/// Writes the first commit of target shard `shard` at `shard_path` from the commits of its
/// source shards (`commits`, of `source_count` source shards in all).
fn build_target_shard(
    shard_path: &Path,
    target: &IndexMetadata,
    shard: u32,
    source_count: u32,
    commits: &[SourceCommit],
) -> Result<()> {
    let mapping = TargetMapping {
        mapping: &target.mapping,
        mapping_version: target.mapping_version,
    };
    // a split's shard starts with all of its source shard's documents: it keeps its own
    let keep = |id: &str, routing: Option<&str>| target.shard_for(id, routing) == shard;
    let keep: Option<Keep<'_>> = (target.number_of_shards > source_count).then_some(&keep);
    build_shard(shard_path, &mapping, commits, keep)
}

/// Writes the first commit of every target shard under `path` from the source commits.
fn build_target_shards(
    path: &Path,
    target: &IndexMetadata,
    commits: &[SourceCommit],
) -> Result<()> {
    let source_count = commits.len() as u32;
    for shard in 0..target.number_of_shards {
        let range = source_shards(source_count, target.number_of_shards, shard);
        let sources = &commits[range.start as usize..range.end as usize];
        build_target_shard(
            &path.join(shard.to_string()),
            target,
            shard,
            source_count,
            sources,
        )?;
    }
    Ok(())
}

/// The source a resized index names (`index.resize.source.*`), if it is one.
pub(crate) fn resize_source(target: &IndexMetadata) -> Option<(&str, &str)> {
    Some((
        target.settings.get_str("index.resize.source.name")?,
        target.settings.get_str("index.resize.source.uuid")?,
    ))
}

/// Builds this node's newly allocated primary `shard` of the resized index `target` at
/// `shard_path` from the source's primaries this node holds (the manager put it here for them).
pub(crate) fn build_allocated_shard(
    node: &Node,
    target: &IndexMetadata,
    shard: u32,
    shard_path: &Path,
) -> Result<()> {
    let (name, uuid) = resize_source(target)
        .ok_or_else(|| Error::illegal_state(format!("[{}] is not a resized index", target.name)))?;
    let source = node
        .index_by_uuid(uuid)
        .ok_or_else(|| Error::index_not_found(name))?;
    let source_count = source.metadata().number_of_shards;
    let commits = source_shards(source_count, target.number_of_shards, shard)
        .map(|id| {
            let copy = source.shard(id)?;
            copy.flush()?;
            copy.pinned_commit()
        })
        .collect::<Result<Vec<_>>>()?;
    build_target_shard(shard_path, target, shard, source_count, &commits)
}

impl Node {
    /// Resizes `request.source` into the new index `request.target`; answers the target.
    pub fn resize(&self, request: &ResizeRequest) -> Result<Arc<IndexService>> {
        if request.settings.contains("index.number_of_routing_shards") {
            return Err(Error::illegal_argument(
                "cannot provide index.number_of_routing_shards on resize",
            ));
        }
        if request.kind == ResizeType::Split && !request.settings.contains("index.number_of_shards")
        {
            return Err(Error::action_request_validation(&[
                "index.number_of_shards is required for split operations".to_string(),
            ]));
        }
        let source = self
            .index(&request.source)
            .ok_or_else(|| Error::index_not_found(&request.source))?;
        let source_meta = source.metadata();
        index_settings::validate(&request.settings, false, &request.target)?;
        let target_shards = match request.settings.get_str("index.number_of_shards") {
            Some(count) => count.parse().map_err(|_| {
                Error::illegal_argument(format!(
                    "Failed to parse value [{count}] for setting [index.number_of_shards]"
                ))
            })?,
            None if request.kind == ResizeType::Shrink => 1,
            None => source_meta.number_of_shards,
        };
        check_counts(request.kind, &source_meta, target_shards)?;
        validate_index_name(&request.target)?;
        let mut settings = request.settings.clone();
        settings.set("index.number_of_shards", target_shards.to_string());
        let request = ResizeRequest {
            settings,
            ..request.clone()
        };
        let cluster = match &self.cluster {
            ClusterMode::Single(cluster) => cluster.clone(),
            ClusterMode::Member(coordination) => {
                return coordination.resize_index(self, &request, &source_meta.uuid)
            }
        };
        let _guard = self.create_lock.lock().unwrap();
        if let Some(existing) = self.index(&request.target) {
            return Err(Error::resource_already_exists(
                &request.target,
                &existing.metadata().uuid,
            ));
        }
        check_source(&source_meta)?;
        // every acknowledged write into the source's segments, then their commits pinned
        source.flush()?;
        let commits = (0..source_meta.number_of_shards)
            .map(|id| source.shard(id)?.pinned_commit())
            .collect::<Result<Vec<_>>>()?;
        self.create_single(
            &cluster,
            &request.target,
            &request.aliases,
            |uuid| target_metadata(&source_meta, &request, uuid),
            |path, target| build_target_shards(path, target, &commits),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tessera_mapping::Mapping;

    fn metadata(
        shards: u32,
        routing_shards: Option<u32>,
        settings: serde_json::Value,
    ) -> IndexMetadata {
        let mut settings = Settings::from_json(&settings).unwrap();
        settings.set("index.number_of_shards", shards.to_string());
        if let Some(routing) = routing_shards {
            settings.set("index.number_of_routing_shards", routing.to_string());
        }
        IndexService::new_metadata("src", "uuid-src", settings, Mapping::default()).unwrap()
    }

    #[test]
    fn target_shards_take_the_source_shards_that_route_onto_them() {
        assert_eq!(source_shards(4, 2, 0), 0..2);
        assert_eq!(source_shards(4, 2, 1), 2..4);
        assert_eq!(source_shards(4, 1, 0), 0..4);
        assert_eq!(source_shards(2, 4, 3), 1..2);
        assert_eq!(source_shards(1, 4, 2), 0..1);
        assert_eq!(source_shards(3, 3, 2), 2..3);
    }

    #[test]
    fn every_document_of_a_source_shard_routes_to_a_target_built_from_it() {
        for (source, target) in [(2, 4), (4, 2), (4, 1), (2, 8), (3, 3)] {
            let source_meta = metadata(source, None, json!({}));
            let request = ResizeRequest {
                kind: ResizeType::Split,
                source: "src".into(),
                target: "t".into(),
                settings: Settings::from_json(&json!({"index.number_of_shards": target})).unwrap(),
                aliases: Aliases::new(),
            };
            let target_meta = target_metadata(&source_meta, &request, "uuid-t").unwrap();
            for i in 0..2000 {
                let id = format!("doc-{i}");
                let from = source_meta.shard_for(&id, None);
                let to = target_meta.shard_for(&id, None);
                assert!(
                    source_shards(source, target, to).contains(&from),
                    "{source}->{target} {id}"
                );
            }
        }
    }

    #[test]
    fn counts_are_checked_with_opensearchs_messages() {
        let two = metadata(2, None, json!({}));
        let reason = |kind, source: &IndexMetadata, target| {
            check_counts(kind, source, target)
                .unwrap_err()
                .reason()
                .to_string()
        };
        assert_eq!(
            reason(ResizeType::Split, &two, 3),
            "the number of source shards [2] must be a factor of [3]"
        );
        assert_eq!(
            reason(ResizeType::Split, &two, 1),
            "the number of source shards [2] must be less that the number of target shards [1]"
        );
        assert_eq!(
            reason(ResizeType::Shrink, &two, 3),
            "the number of target shards [3] must be less that the number of source shards [2]"
        );
        assert_eq!(
            reason(ResizeType::Clone, &two, 3),
            "the number of target shards (3) must be the same as the number of source shards (2)"
        );
        let four = metadata(4, Some(8), json!({}));
        assert_eq!(
            reason(ResizeType::Shrink, &four, 3),
            "the number of source shards [4] must be a multiple of [3]"
        );
        let error = check_counts(ResizeType::Split, &four, 16).unwrap_err();
        assert_eq!(error.status(), 500);
        assert_eq!(
            error.reason(),
            "the number of routing shards [8] must be a multiple of the target shards [16]"
        );
        assert!(check_counts(ResizeType::Split, &four, 8).is_ok());
        assert!(check_counts(ResizeType::Split, &two, 2).is_ok());
        assert!(check_counts(ResizeType::Shrink, &four, 2).is_ok());
    }

    #[test]
    fn the_target_copies_the_source_settings_the_request_does_not_set() {
        let source = metadata(
            2,
            None,
            json!({"index.refresh_interval": "5s", "index.blocks.write": "true", "index.number_of_replicas": "0"}),
        );
        let request = ResizeRequest {
            kind: ResizeType::Shrink,
            source: "src".into(),
            target: "t".into(),
            settings: Settings::from_json(
                &json!({"index.number_of_shards": "1", "index.refresh_interval": "1s"}),
            )
            .unwrap(),
            aliases: Aliases::new(),
        };
        let target = target_metadata(&source, &request, "uuid-t").unwrap();
        assert_eq!(target.setting("index.refresh_interval"), "1s");
        assert_eq!(target.setting("index.blocks.write"), "true");
        assert_eq!(target.setting("index.number_of_replicas"), "1");
        assert_eq!(target.setting("index.uuid"), "uuid-t");
        assert_eq!(target.setting("index.provided_name"), "t");
        assert_eq!(target.setting("index.resize.source.name"), "src");
        assert_eq!(target.setting("index.resize.source.uuid"), "uuid-src");
        assert_eq!(target.routing_shards, source.routing_shards);
        assert!(write_blocked(&source));
    }
}
