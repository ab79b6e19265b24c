//! Rewriting data: `_delete_by_query`, `_update_by_query` and `_reindex`. This module reads
//! their URL parameters and bodies as OpenSearch does and renders the answer (the counters,
//! or `{"task": id}` with `wait_for_completion=false`); the node reads and writes
//! (`tessera_node::bulk_by_scroll`, `by_query`, `reindex`).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Map, Value};
use tessera_common::{Error, Result};
use tessera_node::bulk_by_scroll::{
    self, parse_requests_per_second, BulkByScroll, Conflicts, Options, Slices, Started,
};
use tessera_node::by_query::parse_max_docs;
use tessera_node::{by_query, reindex as reindex_request, Node};

use super::{write_options, Refresh};
use crate::handlers::scroll::keep_alive;
use crate::request::RestRequest;
use crate::response::RestResponse;

/// The URL parameters of the search a by-query request runs.
const SEARCH_PARAMS: &[&str] = &[
    "q",
    "df",
    "analyzer",
    "analyze_wildcard",
    "default_operator",
    "lenient",
];

/// The options every one of the three reads from the URL.
fn options(request: &RestRequest) -> Result<Options> {
    let mut options = Options::default();
    if let Some(conflicts) = request.param("conflicts") {
        options.conflicts = Conflicts::parse(conflicts)?;
    }
    if let Some(max_docs) = request.param("max_docs") {
        options.max_docs = Some(parse_max_docs(&json!(max_docs))?);
    }
    if let Some(size) = request.param("scroll_size") {
        options.batch_size = by_query::parse_batch_size(&json!(size))?;
    }
    // the legacy `size` parameter of a by-query request is `max_docs`
    if let (None, Some(size)) = (options.max_docs, request.param("size")) {
        options.max_docs = Some(parse_max_docs(&json!(size))?);
    }
    if let Some(slices) = request.param("slices") {
        options.slices = Slices::parse(slices)?;
    }
    if let Some(rps) = request.param("requests_per_second") {
        options.requests_per_second = parse_requests_per_second(rps)?;
    }
    if let Some(scroll) = request.param("scroll") {
        options.keep_alive = keep_alive(scroll, "scroll")?;
    }
    let mut write = write_options(request)?;
    // the batches are written as they come; `refresh` refreshes once at the end
    options.refresh = write.refresh != Refresh::None;
    write.refresh = Refresh::None;
    options.write_options = write;
    Ok(options)
}

/// The body as an object (none: an empty one).
fn body_object(request: &RestRequest) -> Result<Map<String, Value>> {
    match request.json_body()? {
        None => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map),
        Some(_) => Err(Error::parsing("request body must be an object")),
    }
}

/// Runs the request, or starts it as a task.
async fn execute(
    node: &Arc<Node>,
    request: &RestRequest,
    parsed: BulkByScroll,
) -> Result<RestResponse> {
    let wait = request.param_bool("wait_for_completion", true)?;
    match bulk_by_scroll::execute(node, parsed, wait).await? {
        Started::Done(outcome) => Ok(RestResponse::json(outcome.status(), outcome.response())),
        Started::Task(id) => Ok(RestResponse::ok(json!({"task": id.render()}))),
    }
}

type ByQuery = fn(
    &Node,
    tessera_node::SearchTarget,
    Map<String, Value>,
    BTreeMap<String, String>,
    Options,
    Vec<String>,
) -> Result<BulkByScroll>;

async fn by_query(node: Arc<Node>, request: RestRequest, build: ByQuery) -> Result<RestResponse> {
    let target = super::search::target(&request)?;
    let options = options(&request)?;
    let body = body_object(&request)?;
    let resolved: Vec<String> = node
        .resolve(&target.expression, &target.options)?
        .iter()
        .map(|index| index.name())
        .collect();
    let search_params = SEARCH_PARAMS
        .iter()
        .filter_map(|name| {
            request
                .param(name)
                .map(|v| (name.to_string(), v.to_string()))
        })
        .collect();
    let parsed = build(&node, target, body, search_params, options, resolved)?;
    execute(&node, &request, parsed).await
}

/// `POST /{index}/_delete_by_query`.
pub async fn delete_by_query(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    by_query(node, request, by_query::delete_by_query).await
}

/// `POST /{index}/_update_by_query`.
pub async fn update_by_query(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    by_query(node, request, by_query::update_by_query).await
}

/// `POST /_reindex`.
pub async fn reindex(node: Arc<Node>, request: RestRequest) -> Result<RestResponse> {
    let options = options(&request)?;
    let body = request.required_json_body()?;
    let parsed = reindex_request::reindex(&node, &body, options)?;
    execute(&node, &request, parsed).await
}

/// The URL parameters of `_delete_by_query` and `_update_by_query`.
pub const BY_QUERY_PARAMS: &[&str] = &[
    "conflicts",
    "max_docs",
    "size",
    "refresh",
    "scroll_size",
    "slices",
    "requests_per_second",
    "scroll",
    "timeout",
    "wait_for_active_shards",
    "wait_for_completion",
    "routing",
    "preference",
    "expand_wildcards",
    "ignore_unavailable",
    "allow_no_indices",
    "q",
    "df",
    "analyzer",
    "analyze_wildcard",
    "default_operator",
    "lenient",
];

/// The URL parameters of `_reindex`.
pub const REINDEX_PARAMS: &[&str] = &[
    "refresh",
    "slices",
    "requests_per_second",
    "scroll",
    "max_docs",
    "timeout",
    "wait_for_active_shards",
    "wait_for_completion",
];

#[cfg(test)]
mod tests {
    use axum::body::Bytes;
    use axum::http::Method;

    use super::*;

    fn request(query: &str) -> RestRequest {
        RestRequest {
            method: Method::POST,
            path: "/i/_delete_by_query".into(),
            path_params: BTreeMap::new(),
            params: crate::request::parse_query_string(Some(query)).unwrap(),
            body: Bytes::new(),
        }
    }

    #[test]
    fn url_options_are_read_as_opensearch_reads_them() {
        let options = options(&request(
            "conflicts=proceed&max_docs=3&scroll_size=2&slices=auto&refresh=true&requests_per_second=10",
        ))
        .unwrap();
        assert_eq!(options.conflicts, Conflicts::Proceed);
        assert_eq!(options.max_docs, Some(3));
        assert_eq!(options.batch_size, 2);
        assert_eq!(options.slices, Slices::Auto);
        assert!(options.refresh);
        assert_eq!(options.write_options.refresh, Refresh::None);
        assert_eq!(options.requests_per_second, Some(10.0));
        let e = options_error("conflicts=foo");
        assert_eq!(
            e.reason(),
            "conflicts may only be \"proceed\" or \"abort\" but was [foo]"
        );
        assert_eq!(options_error("scroll_size=0").status(), 400);
        assert_eq!(options_error("slices=-1").status(), 400);
    }

    fn options_error(query: &str) -> Error {
        options(&request(query)).unwrap_err()
    }
}
