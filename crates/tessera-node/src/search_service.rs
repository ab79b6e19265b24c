//! The search service: what the REST layer asks of a node to search. It completes a search
//! with the node's settings (max buckets, concurrency, the request breaker), resolves the index
//! expression into shard groups, and runs the coordinator's phases; the REST layer only parses
//! the HTTP request and renders the answer, and never sees the node's pools or shards.

use std::collections::BTreeMap;
use std::sync::Arc;

use tessera_common::{Error, Result};
use tessera_search::coordinator::ShardsSummary;
use tessera_search::{ResponseOptions, Search, SearchResponse, SearchSource, ShardGroup};

use crate::{Node, ResolveOptions};

/// Where a search goes: an index expression, how to resolve it, and `routing`.
#[derive(Clone, Debug)]
pub struct SearchTarget {
    pub expression: String,
    pub options: ResolveOptions,
    /// `routing=a,b`: only the shards these values route to.
    pub routing: Option<String>,
    /// `preference`: which copies, and which shards (`_shards:`).
    pub preference: crate::preference::Preference,
}

/// The node's search service (cheap to clone: a handle).
#[derive(Clone)]
pub struct SearchService {
    pub(crate) node: Arc<Node>,
}

impl SearchService {
    pub fn new(node: Arc<Node>) -> SearchService {
        SearchService { node }
    }

    /// A search as the client sent it, completed with the settings the coordinator resolves
    /// for every shard (`search.max_buckets`, the cluster's concurrent search settings).
    pub fn source(&self, body: Option<String>, params: BTreeMap<String, String>) -> SearchSource {
        self.complete(SearchSource {
            body,
            params,
            ..SearchSource::default()
        })
    }

    /// Sets what the coordinator decides on a source built elsewhere (a `_count`).
    pub fn complete(&self, source: SearchSource) -> SearchSource {
        SearchSource {
            max_buckets: self.node.cluster_settings.get_usize("search.max_buckets"),
            concurrency: self.node.concurrency_settings(),
            ..source
        }
    }

    /// Parses the source into a search, charged to a circuit breaker of its own; `locate`
    /// sees an error of the body. `body` is the source's body when the caller parsed it
    /// already (it is not parsed twice).
    pub fn prepare(
        &self,
        source: SearchSource,
        body: Option<&serde_json::Value>,
        locate: impl FnOnce(Error) -> Error,
    ) -> Result<Search> {
        let mut request = match body {
            Some(body) => source.parse_body(Some(body), locate)?,
            None => source.parse_with(locate)?,
        };
        request.breaker = Some(self.node.request_breaker());
        Ok(Search::new(source, request))
    }

    /// Runs `search` over the shards `target` names. No index, or a routing that selects no
    /// shard, is an empty answer, as in OpenSearch.
    pub async fn search(
        &self,
        target: &SearchTarget,
        search: Search,
        options: ResponseOptions,
    ) -> Result<SearchResponse> {
        if search.request.pit.is_some() {
            // a point in time names its own readers (an `_msearch` item may carry one)
            return self.search_pit(search, options).await;
        }
        crate::pinned_search::check_not_pinned(&search.request)?;
        self.run(target, search, options).await
    }

    /// Runs `search` over the shards of `target` (a scroll's first page included).
    pub(crate) async fn run(
        &self,
        target: &SearchTarget,
        search: Search,
        options: ResponseOptions,
    ) -> Result<SearchResponse> {
        let groups = self.groups(target)?;
        if groups.is_empty() {
            return SearchResponse::empty(&search.request, options);
        }
        tessera_search::search(&self.node.pools.search, groups, search, options).await
    }

    /// `_count`: how many documents `search` (see [`tessera_search::coordinator::count_source`])
    /// matches, the shard summary, and `terminated_early` when `terminate_after` was set.
    pub async fn count(
        &self,
        target: &SearchTarget,
        search: Search,
    ) -> Result<(u64, ShardsSummary, Option<bool>)> {
        let groups = self.groups(target)?;
        if groups.is_empty() {
            return Ok((0, ShardsSummary::default(), None));
        }
        tessera_search::count(&self.node.pools.search, groups, search).await
    }

    /// `_msearch`'s default `max_concurrent_searches`, as OpenSearch computes it: the data
    /// nodes times the search pool's size (at most 10 per node, leaving room for other
    /// searches), at least 1.
    pub fn default_max_concurrent_searches(&self) -> usize {
        let data_nodes = self
            .node
            .cluster_state()
            .nodes
            .values()
            .filter(|node| node.roles.iter().any(|role| role == "data"))
            .count();
        (data_nodes * self.node.pools.search.size().min(10)).max(1)
    }

    /// The shard groups `target` names.
    fn groups(&self, target: &SearchTarget) -> Result<Vec<ShardGroup>> {
        let mut indices = self.node.resolve_search(
            &target.expression,
            &target.options,
            target.routing.as_deref(),
        )?;
        // a closed index is left out of what a wildcard (or `ignore_unavailable`) selects; named
        // itself, it refuses the search
        let named: Vec<&str> = target.expression.split(',').map(str::trim).collect();
        indices.retain(|(index, _)| {
            let meta = index.metadata();
            !meta.closed
                || (named.contains(&meta.name.as_str()) && !target.options.ignore_unavailable)
        });
        for (index, _) in &indices {
            tessera_index::blocks::check(
                &index.metadata(),
                tessera_index::blocks::BlockLevel::Read,
            )?;
        }
        Ok(self.node.shard_groups(&indices, &target.preference))
    }
}
