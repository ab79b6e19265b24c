//! Scroll and point in time on the search service: searches that pin each shard's reader and
//! later searches on those readers, on whichever nodes hold them.
//!
//! Opening a scroll is a search whose shards pin the reader they ran on; its `_scroll_id`
//! names those readers, the search and the position its page reached (see
//! `tessera_search::pinned`), so any node continues it. Opening a point in time is a search
//! that matches nothing and pins its readers; a search with `pit` runs on them. Clearing and
//! listing ask every node (`Node::fan_out`: the node reports [`FREE_PINNED`] and
//! [`LIST_PITS`], run here by [`free_here`] and [`pits_here`]), since readers live where
//! their shards were searched.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};
use tessera_common::{Error, Result};
use tessera_search::coordinator::Readers;
use tessera_search::messages::ReaderContextId;
use tessera_search::pinned::{continuation, read_total, PinnedShard, PitId, ScrollId};
use tessera_search::reader_context::{PinKind, PitGroup};
use tessera_search::sort::SortField;
use tessera_search::{ResponseOptions, Search, SearchRequest, SearchResponse, ShardGroup};

use crate::search_service::{SearchService, SearchTarget};
use crate::Node;

/// The node report that frees pinned readers: params `{"kind": "scroll"|"pit", "all": true}`
/// or `{"kind", "contexts": [[session, id], ...]}`; answers `{"freed": n}`.
pub const FREE_PINNED: &str = "search/free_pinned";
/// The node report that lists the readers of this node's points in time.
pub const LIST_PITS: &str = "search/list_pits";

/// What a point in time opens its readers with: a query that matches nothing.
const OPEN_PIT_BODY: &str =
    r#"{"size": 0, "track_total_hits": false, "query": {"match_none": {}}}"#;

impl SearchService {
    /// `search.max_keep_alive`: a longer keep-alive is OpenSearch's `illegal_argument_exception`.
    fn check_keep_alive(&self, keep_alive: Duration) -> Result<()> {
        let limit_text = self.node.cluster_settings.get("search.max_keep_alive");
        let limit = tessera_common::time::parse_time_value(&limit_text, "search.max_keep_alive")?
            .unwrap_or(u64::MAX);
        let requested = keep_alive.as_millis() as u64;
        if requested > limit {
            return Err(Error::illegal_argument(format!(
                "Keep alive for request ({}) is too large. It must be less than ({}). This limit can be set by changing the [search.max_keep_alive] cluster level setting.",
                tessera_common::time::format_time_value(requested),
                tessera_common::time::format_time_value(limit)
            )));
        }
        Ok(())
    }

    fn max_open(&self, kind: PinKind) -> usize {
        self.node.cluster_settings.get_usize(match kind {
            PinKind::Scroll => "search.max_open_scroll_context",
            PinKind::PointInTime => "search.max_open_pit_context",
        })
    }

    /// A search with `scroll=<keep_alive>`: its first page, and the `_scroll_id` of the next.
    pub async fn open_scroll(
        &self,
        target: &SearchTarget,
        search: Search,
        keep_alive: Duration,
        options: ResponseOptions,
    ) -> Result<SearchResponse> {
        check_scroll(&search.request)?;
        self.check_keep_alive(keep_alive)?;
        // later pages re-run the source the id carries: it must name no document
        let lone = crate::search_service::lone_index(&self.groups(target)?);
        let mut search = self.resolve_lookups(search, lone.as_deref()).await?;
        let source = (*search.source).clone();
        search.readers = Readers::Pin {
            kind: PinKind::Scroll,
            keep_alive,
            max_open: self.max_open(PinKind::Scroll),
            pit: None,
        };
        let mut response = self.run(target, search, options).await?;
        let pinned = response.pinned.take().unwrap_or_default();
        response._scroll_id = Some(
            ScrollId {
                source,
                shards: pinned.shards,
                after: pinned.last,
                total: response.hits.total.as_ref().and_then(read_total),
            }
            .encode(),
        );
        Ok(response)
    }

    /// `_search/scroll`: the page after the one `id` ends with. With `keep_alive` the readers
    /// are kept that much longer and the answer carries the next id; without, as in
    /// OpenSearch, it carries none.
    pub async fn scroll(
        &self,
        id: &str,
        keep_alive: Option<Duration>,
        options: ResponseOptions,
    ) -> Result<SearchResponse> {
        let scroll = ScrollId::decode(id)?;
        if let Some(keep_alive) = keep_alive {
            self.check_keep_alive(keep_alive)?;
        }
        let source = self.complete(continuation(&scroll.source));
        let mut search = self.prepare(source, None, |e| e)?;
        search.readers = Readers::Pinned {
            ids: scroll.shards.iter().map(|s| s.context).collect(),
            keep_alive,
            after: scroll.after.clone(),
        };
        let mut response = self.on_pinned(&scroll.shards, search, options).await?;
        let after = response.pinned.take().and_then(|p| p.last).or(scroll.after);
        // the pages after the first do not count: the first one's total stands
        response.hits.total = scroll
            .total
            .map(|(value, gte)| options.render_total(value, gte));
        if keep_alive.is_some() {
            response._scroll_id = Some(
                ScrollId {
                    source: scroll.source,
                    shards: scroll.shards,
                    after,
                    total: scroll.total,
                }
                .encode(),
            );
        }
        Ok(response)
    }

    /// `DELETE /_search/scroll`: frees the readers of `ids` (every scroll's with none);
    /// how many were freed.
    pub async fn clear_scroll(&self, ids: Option<&[String]>) -> Result<u64> {
        let params = match ids {
            None => json!({"kind": "scroll", "all": true}),
            Some(ids) => {
                let mut contexts = Vec::new();
                for id in ids {
                    contexts.extend(ScrollId::decode(id)?.shards.iter().map(|s| s.context));
                }
                json!({"kind": "scroll", "contexts": contexts_json(&contexts)})
            }
        };
        Ok(self.free_everywhere(params).await)
    }

    /// `POST /{index}/_search/point_in_time?keep_alive=`: pins a reader on every shard of
    /// `target`; the PIT's id, the shards summary and the creation time.
    pub async fn open_pit(&self, target: &SearchTarget, keep_alive: Duration) -> Result<Value> {
        self.check_keep_alive(keep_alive)?;
        let created_millis = tessera_common::time::now_millis();
        let source = self.source(Some(OPEN_PIT_BODY.to_string()), BTreeMap::new());
        let mut search = self.prepare(source, None, |e| e)?;
        search.readers = Readers::Pin {
            kind: PinKind::PointInTime,
            keep_alive,
            max_open: self.max_open(PinKind::PointInTime),
            pit: Some(PitGroup {
                uuid: tessera_common::ids::random_uuid(),
                created_millis,
            }),
        };
        let mut response = self.run(target, search, ResponseOptions::default()).await?;
        let pinned = response.pinned.take().unwrap_or_default();
        let id = PitId {
            shards: pinned.shards,
            created_millis,
        };
        Ok(json!({
            "pit_id": id.encode(),
            "_shards": response._shards,
            "creation_time": created_millis,
        }))
    }

    /// A search with `pit`: on the point in time's readers, its keep-alive renewed.
    pub async fn search_pit(
        &self,
        search: Search,
        options: ResponseOptions,
    ) -> Result<SearchResponse> {
        let Some(reference) = search.request.pit.clone() else {
            return Err(Error::illegal_state("a point-in-time search without [pit]"));
        };
        let pit = PitId::decode(&reference.id)?;
        if let Some(keep_alive) = reference.keep_alive {
            self.check_keep_alive(keep_alive)?;
        }
        let first = pit.shards.first().map(|s| s.index.clone());
        let lone = first.filter(|name| pit.shards.iter().all(|s| s.index == *name));
        let mut search = self.resolve_lookups(search, lone.as_deref()).await?;
        search.readers = Readers::Pinned {
            ids: pit.shards.iter().map(|s| s.context).collect(),
            keep_alive: reference.keep_alive,
            after: None,
        };
        let mut response = self.on_pinned(&pit.shards, search, options).await?;
        response.pinned = None;
        response.pit_id = Some(reference.id);
        Ok(response)
    }

    /// `DELETE /_search/point_in_time`: frees the readers of `ids` (every PIT's with none);
    /// OpenSearch's answer, which names each id as freed even when it was gone already.
    pub async fn delete_pits(&self, ids: Option<&[String]>) -> Result<Value> {
        let (ids, params) = match ids {
            None => {
                let ids: Vec<String> = self
                    .list_pits()
                    .await
                    .into_iter()
                    .map(|(id, _, _)| id)
                    .collect();
                (ids, json!({"kind": "pit", "all": true}))
            }
            Some(ids) => {
                let mut contexts = Vec::new();
                for id in ids {
                    contexts.extend(PitId::decode(id)?.shards.iter().map(|s| s.context));
                }
                let params = json!({"kind": "pit", "contexts": contexts_json(&contexts)});
                (ids.to_vec(), params)
            }
        };
        self.free_everywhere(params).await;
        let pits: Vec<Value> = ids
            .into_iter()
            .map(|id| json!({"successful": true, "pit_id": id}))
            .collect();
        Ok(json!({ "pits": pits }))
    }

    /// Every point in time open in the cluster: its id, creation time and keep-alive (in
    /// milliseconds), rebuilt from the readers each node holds.
    pub async fn list_pits(&self) -> Vec<(String, i64, u64)> {
        // by PIT uuid: creation time, keep-alive, and the readers with their positions
        type Group = (i64, u64, Vec<(u32, PinnedShard)>);
        let mut groups: BTreeMap<String, Group> = BTreeMap::new();
        for (target, answer) in self.node.fan_out(LIST_PITS, json!({})).await {
            let Ok(Value::Array(readers)) = answer else {
                eprintln!("node [{}] did not list its points in time", target.id);
                continue;
            };
            for reader in readers {
                let Ok(listed) = serde_json::from_value::<ListedReader>(reader) else {
                    continue;
                };
                let group = groups.entry(listed.group.uuid.clone()).or_insert((
                    listed.group.created_millis,
                    listed.keep_alive_millis,
                    vec![],
                ));
                group.2.push((listed.position, listed.shard));
            }
        }
        groups
            .into_values()
            .map(|(created_millis, keep_alive, mut shards)| {
                shards.sort_by_key(|(position, _)| *position);
                let id = PitId {
                    shards: shards.into_iter().map(|(_, shard)| shard).collect(),
                    created_millis,
                };
                (id.encode(), created_millis, keep_alive)
            })
            .collect()
    }

    /// Runs `search` on the readers `shards` pinned, one shard group each, in their order.
    async fn on_pinned(
        &self,
        shards: &[PinnedShard],
        search: Search,
        options: ResponseOptions,
    ) -> Result<SearchResponse> {
        if shards.is_empty() {
            return SearchResponse::empty(&search.request, options);
        }
        let mut groups = shards
            .iter()
            .map(|shard| ShardGroup {
                copies: vec![self.node.pinned_copy(shard)],
                alias_filter: shard.alias_filter.clone(),
                index_boost: 1.0,
            })
            .collect::<Vec<_>>();
        self.apply_index_boosts(&mut groups, &search.request)?;
        tessera_search::search(&self.node.pools.search, groups, search, options).await
    }

    /// Runs [`FREE_PINNED`] on every node; how many readers went.
    async fn free_everywhere(&self, params: Value) -> u64 {
        self.node
            .fan_out(FREE_PINNED, params)
            .await
            .into_iter()
            .filter_map(|(_, answer)| answer.ok()?["freed"].as_u64())
            .sum()
    }
}

/// What OpenSearch refuses in a scroll's first request.
fn check_scroll(request: &SearchRequest) -> Result<()> {
    let invalid = |what: &str| {
        Error::new(
            "action_request_validation_exception",
            400,
            format!("Validation Failed: 1: {what};"),
        )
    };
    if request.from > 0 {
        return Err(invalid("using [from] is not allowed in a scroll context"));
    }
    if request.size == 0 {
        return Err(invalid("[size] cannot be [0] in a scroll context"));
    }
    if request.track_total_hits == tessera_search::request::TrackTotalHits::Disabled {
        return Err(invalid(
            "disabling [track_total_hits] is not allowed in a scroll context",
        ));
    }
    if request.pit.is_some() {
        return Err(invalid(
            "using [point in time] is not allowed in a scroll context",
        ));
    }
    if request.collapse.is_some() {
        return Err(Error::new(
            "search_exception",
            400,
            "cannot use `collapse` in a scroll context",
        ));
    }
    if !request.rescore.is_empty() {
        return Err(invalid(
            "using [rescore] is not allowed in a scroll context",
        ));
    }
    if request.search_after.is_some() {
        return Err(Error::new(
            "search_exception",
            400,
            "`search_after` cannot be used in a scroll context.",
        ));
    }
    Ok(())
}

/// What a search that is neither a scroll nor a PIT search may not use: `_shard_doc`
/// numbers a hit by its shard's place in the request, and `slice` divides the shards of a
/// request: only a scroll or a point in time keeps them from one request to the next.
pub fn check_not_pinned(request: &SearchRequest) -> Result<()> {
    if request.slice.is_some() && request.pit.is_none() {
        return Err(Error::new(
            "search_exception",
            400,
            "`slice` cannot be used outside of a scroll context or PIT context",
        ));
    }
    check_shard_doc(request)
}

fn check_shard_doc(request: &SearchRequest) -> Result<()> {
    let shard_doc = request
        .sort
        .iter()
        .any(|field| matches!(field, SortField::ShardDoc { .. }));
    if shard_doc && request.pit.is_none() {
        return Err(Error::illegal_argument(
            "[_shard_doc] sort field cannot be used without [point in time]",
        ));
    }
    Ok(())
}

fn contexts_json(contexts: &[ReaderContextId]) -> Value {
    Value::Array(contexts.iter().map(|c| json!([c.session, c.id])).collect())
}

fn kind_of(params: &Value) -> Option<PinKind> {
    match params["kind"].as_str()? {
        "scroll" => Some(PinKind::Scroll),
        "pit" => Some(PinKind::PointInTime),
        _ => None,
    }
}

/// [`FREE_PINNED`] on this node.
pub fn free_here(node: &Node, params: &Value) -> Result<Value> {
    let kind = kind_of(params)
        .ok_or_else(|| Error::illegal_argument("[kind] must be [scroll] or [pit]"))?;
    let contexts = &node.shard_services.contexts;
    let freed = if params["all"] == true {
        contexts.free_all(kind)
    } else {
        params["contexts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|pair| {
                Some(ReaderContextId {
                    session: pair[0].as_u64()?,
                    id: pair[1].as_u64()?,
                })
            })
            .filter(|&id| contexts.free(id))
            .count()
    };
    Ok(json!({ "freed": freed }))
}

/// One reader of a point in time, as [`LIST_PITS`] reports it.
#[derive(serde::Serialize, serde::Deserialize)]
struct ListedReader {
    group: PitGroup,
    position: u32,
    keep_alive_millis: u64,
    shard: PinnedShard,
}

/// [`LIST_PITS`] on this node.
pub fn pits_here(node: &Node) -> Value {
    let readers = node.shard_services.contexts.pinned_of(PinKind::PointInTime);
    Value::Array(
        readers
            .into_iter()
            .filter_map(|(id, reader, keep_alive)| {
                let (group, position) = reader.pit.clone()?;
                let listed = ListedReader {
                    group,
                    position,
                    keep_alive_millis: keep_alive.as_millis() as u64,
                    shard: PinnedShard {
                        node_id: node.node_id.clone(),
                        index: reader.index.clone(),
                        index_uuid: reader.index_uuid.clone(),
                        shard_id: reader.shard_id,
                        context: id,
                        alias_filter: None,
                    },
                };
                serde_json::to_value(listed).ok()
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_scroll_refuses_what_opensearch_refuses() {
        let parse = |body: Value| SearchRequest::parse(&body).unwrap();
        assert!(check_scroll(&parse(json!({"size": 5}))).is_ok());
        for (body, message) in [
            (json!({"from": 2}), "using [from] is not allowed"),
            (json!({"size": 0}), "[size] cannot be [0]"),
            (
                json!({"track_total_hits": false}),
                "disabling [track_total_hits]",
            ),
            (
                json!({"sort": ["n"], "search_after": [1]}),
                "`search_after` cannot be used",
            ),
        ] {
            let error = check_scroll(&parse(body)).unwrap_err();
            assert_eq!(error.status(), 400);
            assert!(error.reason().contains(message), "{}", error.reason());
        }
    }

    #[test]
    fn shard_doc_needs_a_point_in_time() {
        let without = SearchRequest::parse(&json!({"sort": ["_shard_doc"]})).unwrap();
        assert_eq!(check_shard_doc(&without).unwrap_err().status(), 400);
        let with =
            SearchRequest::parse(&json!({"sort": ["_shard_doc"], "pit": {"id": "x"}})).unwrap();
        assert!(check_shard_doc(&with).is_ok());
    }
}
