//! `GET /`: who this node is.

use std::sync::Arc;

use serde_json::json;
use tessera_common::Result;
use tessera_node::Node;

use crate::request::RestRequest;
use crate::response::RestResponse;

/// The OpenSearch version Tessera's API follows; clients check `version.number`.
pub const COMPATIBLE_VERSION: &str = "2.19.0";

pub async fn info(node: Arc<Node>, _request: RestRequest) -> Result<RestResponse> {
    Ok(RestResponse::ok(json!({
        "name": node.config.name,
        "cluster_name": node.config.cluster_name,
        "cluster_uuid": node.cluster_state().cluster_uuid,
        "version": {
            "distribution": "tessera",
            "number": COMPATIBLE_VERSION,
            "build_type": "tessera",
            "build_hash": env!("CARGO_PKG_VERSION"),
            "build_date": "unknown",
            "build_snapshot": false,
            "lucene_version": "tantivy-0.27",
            "minimum_wire_compatibility_version": "7.10.0",
            "minimum_index_compatibility_version": "7.0.0",
            "tessera_version": env!("CARGO_PKG_VERSION")
        },
        "tagline": "The OpenSearch Project: https://opensearch.org/"
    })))
}
