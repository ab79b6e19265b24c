//! The documents a search's queries name — a `terms` lookup, a `percolate` of an indexed
//! document, a `more_like_this` item — read by the coordinating node where their primaries
//! are, before any shard runs, and written into the request (see
//! [`tessera_query::lookup`]), as OpenSearch's coordinator rewrites such queries.

use serde_json::Value;
use tessera_common::{Error, Result};
use tessera_query::ast::DocRef;
use tessera_query::lookup::{self, ReadDoc, ReadDocs};
use tessera_search::{Search, SearchSource};

use crate::read::{get_document, GetRequest};
use crate::search_service::SearchService;

impl SearchService {
    /// Reads the documents the request's queries name (`terms` lookups, a `percolate` of an
    /// indexed document) where their primaries are, and writes them into the request, so that
    /// no shard sees a query naming a document (see [`tessera_query::lookup`]).
    ///
    /// `default_index` is the one index the search targets, if it targets one: a
    /// `more_like_this` item without an `_index` names it.
    pub(crate) async fn resolve_lookups(
        &self,
        search: Search,
        default_index: Option<&str>,
    ) -> Result<Search> {
        let Some(text) = search.source.body.as_deref() else {
            return Ok(search);
        };
        if !text.contains("\"id\"") && !text.contains("\"_id\"") {
            return Ok(search);
        }
        let mut body: Value = serde_json::from_str(text)
            .map_err(|e| Error::parsing(format!("failed to parse the search body: {e}")))?;
        let docs = lookup::doc_refs(&body, default_index)?;
        if docs.is_empty() {
            return Ok(search);
        }
        let optional = lookup::optional_refs(&body, default_index)?;
        let mut read = ReadDocs::new();
        for doc in docs {
            if doc.index.is_empty() {
                return Err(Error::illegal_argument(format!(
                    "[more_like_this] item [{}] needs an [_index]: the search targets several indices",
                    doc.id
                )));
            }
            let found = match self.read_doc(&doc).await {
                Err(e) if e.kind() == "index_not_found_exception" && optional.contains(&doc) => {
                    None
                }
                other => other?,
            };
            read.insert(doc, found);
        }
        lookup::resolve(&mut body, &read, default_index)?;
        let mut source = SearchSource::clone(&search.source);
        source.body = Some(body.to_string());
        let mut request = source.parse_body(Some(&body), |e| e)?;
        request.breaker = search.request.breaker.clone();
        Ok(Search {
            readers: search.readers,
            ..Search::new(source, request)
        })
    }

    /// One document a query names, read where its primary is (`None`: not found).
    async fn read_doc(&self, doc: &DocRef) -> Result<Option<ReadDoc>> {
        let (index, routing) = self
            .node
            .read_target(&doc.index, doc.routing.as_deref())?
            .ok_or_else(|| {
                Error::index_not_found(&doc.index).with_meta("resource.type", "index_expression")
            })?;
        let meta = index.metadata();
        let shard = index.shard_for(&doc.id, routing.as_deref());
        let request = GetRequest {
            index: meta.name.clone(),
            index_uuid: meta.uuid.clone(),
            id: doc.id.clone(),
            routing,
            realtime: true,
            refresh: false,
        };
        let Some(stored) = get_document(&self.node, &index, request).await? else {
            return Ok(None);
        };
        let source = stored
            .source
            .map(|bytes| {
                serde_json::from_slice(&bytes)
                    .map_err(|e| Error::internal("read an indexed document's source", e))
            })
            .transpose()?;
        Ok(Some(ReadDoc {
            source,
            version: stored.version.version,
            index: meta.name.clone(),
            shard,
        }))
    }
}
