//! The search service: what the REST layer asks of a node to search. It completes a search
//! with the node's settings (max buckets, concurrency, the request breaker), resolves the index
//! expression into shard groups, and runs the coordinator's phases; the REST layer only parses
//! the HTTP request and renders the answer, and never sees the node's pools or shards.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::{json, Map, Value};
use tessera_common::{Error, Result};
use tessera_search::collapse::{group_search_body, CollapseSpec};
use tessera_search::coordinator::ShardsSummary;
use tessera_search::request::SearchRequest;
use tessera_search::{ResponseOptions, Search, SearchResponse, SearchSource, ShardGroup};

use crate::{Node, ResolveOptions};

/// The request's query as JSON: the body's `query`, or the `q` URL parameter as the
/// `query_string` query it stands for; none for a match-all.
fn request_query(source: &SearchSource) -> Option<Value> {
    if let Some(q) = source.params.get("q") {
        let mut query = Map::new();
        query.insert("query".into(), json!(q));
        for (param, key) in [
            ("df", "default_field"),
            ("default_operator", "default_operator"),
            ("analyzer", "analyzer"),
            ("lenient", "lenient"),
            ("analyze_wildcard", "analyze_wildcard"),
        ] {
            if let Some(value) = source.params.get(param) {
                query.insert(key.into(), json!(value));
            }
        }
        return Some(json!({ "query_string": query }));
    }
    let body: Value = serde_json::from_str(source.body.as_deref()?).ok()?;
    body.get("query").cloned()
}

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
        // stored scripts become inline ones here, where the cluster state is at hand
        let mut source = source;
        let mut inlined = None;
        if source.body.as_deref().is_some_and(|b| b.contains("\"id\"")) {
            let parsed = match body {
                Some(body) => Some(body.clone()),
                None => serde_json::from_str(source.body.as_deref().unwrap_or_default()).ok(),
            };
            if let Some(mut parsed) = parsed {
                let state = self.node.cluster_state();
                if crate::scripts::inline_stored_scripts(&state, &mut parsed) {
                    source.body = Some(parsed.to_string());
                    inlined = Some(parsed);
                }
            }
        }
        let body = inlined.as_ref().or(body);
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
        let expand = search
            .request
            .collapse
            .clone()
            .filter(|collapse| !collapse.inner_hits.is_empty());
        let query = expand.as_ref().and_then(|_| request_query(&search.source));
        let mut response = self.run(target, search, options).await?;
        if let Some(collapse) = expand {
            self.expand(target, &collapse, query.as_ref(), &mut response, options)
                .await?;
        }
        Ok(response)
    }

    /// `collapse`'s `inner_hits`: for each hit of the page and each inner hits, a search of
    /// the hit's group (the request's query limited to the group's value), as OpenSearch's
    /// expand phase runs them once the page is known.
    async fn expand(
        &self,
        target: &SearchTarget,
        collapse: &CollapseSpec,
        query: Option<&Value>,
        response: &mut SearchResponse,
        options: ResponseOptions,
    ) -> Result<()> {
        for hit in &mut response.hits.hits {
            let value = hit
                .fields
                .as_ref()
                .and_then(|fields| fields.get(&collapse.field))
                .and_then(|values| values.get(0))
                .cloned();
            let mut found = Map::new();
            for inner in &collapse.inner_hits {
                let body = group_search_body(query, &collapse.field, value.as_ref(), inner);
                let source = self.source(Some(body.to_string()), BTreeMap::new());
                let search = self.prepare(source, Some(&body), |e| e)?;
                let group = self.run(target, search, options).await?;
                // through text: scores keep the float's shortest form, as in any hit
                let hits: Value = serde_json::to_string(&group.hits)
                    .and_then(|text| serde_json::from_str(&text))
                    .map_err(|e| Error::internal("render inner hits", e))?;
                found.insert(inner.name.clone(), json!({ "hits": hits }));
            }
            hit.inner_hits = Some(found);
        }
        Ok(())
    }

    /// Runs `search` over the shards of `target` (a scroll's first page included).
    pub(crate) async fn run(
        &self,
        target: &SearchTarget,
        search: Search,
        options: ResponseOptions,
    ) -> Result<SearchResponse> {
        let mut groups = self.groups(target)?;
        let search = self
            .resolve_lookups(search, lone_index(&groups).as_deref())
            .await?;
        if groups.is_empty() {
            return SearchResponse::empty(&search.request, options);
        }
        self.apply_index_boosts(&mut groups, &search.request)?;
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
        let search = self
            .resolve_lookups(search, lone_index(&groups).as_deref())
            .await?;
        if groups.is_empty() {
            return Ok((0, ShardsSummary::default(), None));
        }
        tessera_search::count(&self.node.pools.search, groups, search).await
    }

    /// Sets each shard group's `indices_boost` factor: the first entry whose expression
    /// names the group's index applies (an expression naming a missing index is a 404, as in
    /// OpenSearch).
    pub(crate) fn apply_index_boosts(
        &self,
        groups: &mut [ShardGroup],
        request: &SearchRequest,
    ) -> Result<()> {
        if request.indices_boost.is_empty() {
            return Ok(());
        }
        let mut boosts: HashMap<String, f32> = HashMap::new();
        for (expression, boost) in &request.indices_boost {
            let options = ResolveOptions::default();
            for (index, _) in self.node.resolve_search(expression, &options, None)? {
                boosts
                    .entry(index.metadata().name.clone())
                    .or_insert(*boost);
            }
        }
        for group in groups {
            let boost = group
                .copies
                .first()
                .and_then(|copy| boosts.get(&copy.index_name()));
            if let Some(boost) = boost {
                group.index_boost = *boost;
            }
        }
        Ok(())
    }

    /// `_msearch`'s default `max_concurrent_searches`, as OpenSearch computes it: the data
    /// nodes times the search pool's size (at most 10 per node, leaving room for other
    /// searches), at least 1.
    /// Renders a search template: see [`Node::render_template`].
    pub fn render_template(
        &self,
        source: Option<&str>,
        id: Option<&str>,
        params: &serde_json::Value,
    ) -> Result<String> {
        self.node.render_template(source, id, params)
    }

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
    pub(crate) fn groups(&self, target: &SearchTarget) -> Result<Vec<ShardGroup>> {
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

/// The one index `groups` search, if they search one.
pub(crate) fn lone_index(groups: &[ShardGroup]) -> Option<String> {
    let mut names = groups
        .iter()
        .filter_map(|g| g.copies.first().map(|c| c.index_name()));
    let first = names.next()?;
    names.all(|n| n == first).then_some(first)
}
