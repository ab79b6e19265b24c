//! One module per API family. Handlers parse parameters and bodies, call the node, and shape
//! the answer as OpenSearch does; CPU work goes to the node's thread pools. Document writes
//! (`bulk`, and index, create, update, delete in `documents`) call the node's write service
//! instead (`tessera_node::write`), which chooses its pool itself.

pub mod aliases;
pub mod allocation;
pub mod bulk;
pub mod by_query;
pub mod cat;
pub mod cluster;
pub mod cluster_stats;
pub mod data_streams;
pub mod documents;
pub mod indices;
pub mod ingest;
pub mod jvm_stats;
pub mod knn;
pub mod msearch;
pub mod nodes;
pub mod pending_tasks;
pub mod recovery;
pub mod reports;
pub mod resize;
pub mod resolve;
pub mod root;
pub mod scripts;
pub mod scroll;
pub mod search;
pub mod search_template;
pub mod segments;
pub mod snapshots;
pub mod stats;
pub mod tasks;
pub mod templates;

use tessera_common::{Error, Result};
use tessera_node::ResolveOptions;

use crate::request::RestRequest;

/// `ignore_unavailable`, `allow_no_indices` (and `expand_wildcards`, accepted).
pub const RESOLVE_PARAMS: &[&str] = &["ignore_unavailable", "allow_no_indices", "expand_wildcards"];

pub fn resolve_options(
    request: &RestRequest,
    allow_no_indices_default: bool,
) -> Result<ResolveOptions> {
    Ok(ResolveOptions {
        ignore_unavailable: request.param_bool("ignore_unavailable", false)?,
        allow_no_indices: request.param_bool("allow_no_indices", allow_no_indices_default)?,
        document_api: false,
    })
}

pub use tessera_node::write::{ActiveShards, Refresh, WriteOptions};

/// Checks the write parameters as OpenSearch parses them (`timeout`,
/// `wait_for_active_shards`, `version_type`), so that a malformed value is the same 400 there
/// and here; [`write_options`] reads the ones a write acts on.
pub fn check_write_params(request: &RestRequest) -> Result<()> {
    request.param_time("timeout")?;
    if let Some(count) = request.param("wait_for_active_shards") {
        ActiveShards::parse(count)?;
    }
    if let Some(kind) = request.param("version_type") {
        if !matches!(kind, "internal" | "external" | "external_gte" | "force") {
            return Err(Error::illegal_argument(format!(
                "No version type match [{kind}]"
            )));
        }
    }
    Ok(())
}

/// A write's options: `refresh`, `wait_for_active_shards`, `timeout` (how long the primary
/// waits for those copies, 1m by default).
pub fn write_options(request: &RestRequest) -> Result<WriteOptions> {
    Ok(WriteOptions {
        refresh: refresh_param(request)?,
        active_shards: request
            .param("wait_for_active_shards")
            .map(ActiveShards::parse)
            .transpose()?,
        timeout_millis: request.param_time("timeout")?.map_or(
            tessera_node::write::operation::DEFAULT_WRITE_TIMEOUT_MILLIS,
            |timeout| timeout.as_millis() as u64,
        ),
    })
}

/// `refresh`: `true` (or a bare flag), `wait_for`, `false`.
pub fn refresh_param(request: &RestRequest) -> Result<Refresh> {
    match request.param("refresh") {
        None | Some("false") => Ok(Refresh::None),
        Some("" | "true") => Ok(Refresh::Immediate),
        Some("wait_for") => Ok(Refresh::WaitFor),
        Some(other) => Err(Error::illegal_argument(format!(
            "Unknown value for refresh: [{other}]."
        ))),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use axum::body::Bytes;
    use axum::http::Method;

    use super::*;

    fn request(query: &str) -> RestRequest {
        RestRequest {
            method: Method::PUT,
            path: "/i/_doc/1".into(),
            path_params: BTreeMap::new(),
            params: crate::request::parse_query_string(Some(query)).unwrap(),
            body: Bytes::new(),
        }
    }

    #[test]
    fn write_parameters_are_checked_as_opensearch_parses_them() {
        for ok in [
            "timeout=1m",
            "wait_for_active_shards=all",
            "wait_for_active_shards=1",
            "version_type=external",
            "",
        ] {
            check_write_params(&request(ok)).unwrap();
        }
        for (query, reason) in [
            ("timeout=", "failed to parse setting [timeout] with value [] as a time value: unit is missing or unrecognized"),
            ("wait_for_active_shards=", "cannot parse ActiveShardCount[]"),
            ("wait_for_active_shards=abc", "cannot parse ActiveShardCount[abc]"),
            ("version_type=abc", "No version type match [abc]"),
        ] {
            let e = check_write_params(&request(query)).unwrap_err();
            assert_eq!((e.status(), e.reason()), (400, reason));
        }
    }
}
