//! Document reads by id (`GET _doc`, `_source`, `HEAD`, the reads of `_mget`): run on the
//! `search` pool of the node holding the shard's primary — this node, or in a cluster the one
//! the routing names, over the transport ([`GET_DOC`]).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tessera_common::{Error, Result};
use tessera_index::shard::{DocVersion, StoredDoc};
use tessera_index::IndexService;

use crate::node::{Node, PrimaryTarget};

/// A document read sent to the node holding the primary.
pub const GET_DOC: &str = "indices:data/read/get[s]";

/// One read by id.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GetRequest {
    pub index: String,
    pub index_uuid: String,
    pub id: String,
    pub routing: Option<String>,
    /// Read the latest write, refreshed or not (`realtime`, the default).
    pub realtime: bool,
    /// Refresh the shard before reading (`refresh=true`).
    pub refresh: bool,
}

/// A [`StoredDoc`] on the wire.
#[derive(Serialize, Deserialize)]
struct WireDoc {
    id: String,
    version: DocVersion,
    source: Option<Vec<u8>>,
    routing: Option<String>,
}

/// Reads a document of `index` where its primary is.
pub async fn get_document(
    node: &Arc<Node>,
    index: &Arc<IndexService>,
    request: GetRequest,
) -> Result<Option<StoredDoc>> {
    tessera_index::blocks::check(&index.metadata(), tessera_index::blocks::BlockLevel::Read)?;
    let shard = index.shard_for(&request.id, request.routing.as_deref());
    match node.primary_target(&request.index, &request.index_uuid, shard) {
        PrimaryTarget::Local => {
            let reader = index.clone();
            node.pools.search.run(move || read(&reader, &request)).await
        }
        PrimaryTarget::Remote(target) => {
            let coordination = node
                .coordination()
                .ok_or_else(|| Error::illegal_state("a single node has no remote primaries"))?;
            let doc: Option<WireDoc> = coordination.send(&target, GET_DOC, &request).await?;
            Ok(doc.map(|doc| StoredDoc {
                id: doc.id,
                version: doc.version,
                source: doc.source.map(Into::into),
                routing: doc.routing,
            }))
        }
        PrimaryTarget::Unavailable(error) | PrimaryTarget::Moving(error) => Err(error),
    }
}

/// The receiving side of [`GET_DOC`]: the read on this node's copy.
pub(crate) fn get_here(node: &Node, request: GetRequest) -> Result<Vec<u8>> {
    let index = node
        .index_by_uuid(&request.index_uuid)
        .ok_or_else(|| Error::index_not_found(&request.index))?;
    let doc = read(&index, &request)?.map(|doc| WireDoc {
        id: doc.id,
        version: doc.version,
        source: doc.source.map(|source| source.to_vec()),
        routing: doc.routing,
    });
    tessera_search::messages::encode(&doc)
}

fn read(index: &IndexService, request: &GetRequest) -> Result<Option<StoredDoc>> {
    if request.refresh {
        index.refresh()?;
    }
    index.get(&request.id, request.routing.as_deref(), request.realtime)
}
