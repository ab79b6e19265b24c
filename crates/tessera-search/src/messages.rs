//! The shard-level protocol: what a coordinator sends to a shard copy and what comes back, as
//! plain data. A local shard and a remote one take the same messages; only a transport sits
//! between them (see [`crate::transport`]), which is why nothing here holds a handle that
//! cannot cross a wire: the search travels as its body and URL parameters, the time budget as
//! the milliseconds left, the reader a query ran on as a [`ReaderContextId`].
//!
//! In-process extras (the parsed request, the cancel flag) ride along in fields the encoding
//! skips, so the local path never parses a request twice.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use tessera_aggs::InternalAggregations;
use tessera_common::{Error, Result};

use crate::concurrent::ConcurrencySettings;
use crate::fetch::FetchedDoc;
use crate::hits::{QueryResult, ShardHit};
use crate::reader_context::{PinKind, PitGroup};
use crate::request::SearchRequest;
use crate::shard::ShardProfile;

/// A search as the client sent it, with what the coordinator resolved for every shard.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchSource {
    /// The JSON body (or the `source` parameter), as text.
    pub body: Option<String>,
    /// The URL parameters (`q`, `size`, `sort`, …: see [`crate::url_params`]).
    pub params: BTreeMap<String, String>,
    /// `search.max_buckets` on the coordinator.
    pub max_buckets: usize,
    /// The cluster-level concurrent segment search settings on the coordinator.
    pub concurrency: ConcurrencySettings,
}

impl SearchSource {
    /// A source with a body and no URL parameters.
    pub fn from_body(body: &serde_json::Value) -> SearchSource {
        SearchSource {
            body: Some(body.to_string()),
            max_buckets: tessera_aggs::DEFAULT_MAX_BUCKETS,
            ..SearchSource::default()
        }
    }

    /// The search request: the body parsed, the URL parameters applied over it.
    pub fn parse(&self) -> Result<SearchRequest> {
        self.parse_with(|e| e)
    }

    /// [`parse`](Self::parse), with `locate` applied to an error of the body (the REST layer
    /// adds where in the body it is).
    pub fn parse_with(&self, locate: impl FnOnce(Error) -> Error) -> Result<SearchRequest> {
        let body = match &self.body {
            Some(text) => Some(
                serde_json::from_str(text)
                    .map_err(|e| Error::parsing(format!("failed to parse the search body: {e}")))?,
            ),
            None => None,
        };
        self.parse_body(body.as_ref(), locate)
    }

    /// [`parse_with`](Self::parse_with) for a caller that holds the body already parsed
    /// (`body` must be this source's body).
    pub fn parse_body(
        &self,
        body: Option<&serde_json::Value>,
        locate: impl FnOnce(Error) -> Error,
    ) -> Result<SearchRequest> {
        let mut search = match body {
            Some(body) => SearchRequest::parse(body).map_err(locate)?,
            None => SearchRequest::default(),
        };
        crate::url_params::apply(&self.params, &mut search)?;
        search.max_buckets = self.max_buckets;
        search.concurrency = self.concurrency;
        Ok(search)
    }
}

/// One shard's part of a search (the query phase, and the can_match probe before it).
#[derive(Clone, Serialize, Deserialize)]
pub struct ShardSearchRequest {
    /// Shared by the requests of every shard of the search.
    #[serde(with = "shared_source")]
    pub source: Arc<SearchSource>,
    /// The copy this request is for (checked by the shard that receives it).
    pub index_uuid: String,
    pub shard_id: u32,
    /// Position of this shard in the request (the hit tie-breaker).
    pub shard_index: u32,
    /// How many shards the request searches (terms aggregations size their shard lists by it).
    pub total_shards: u32,
    /// "now" for date math, the same on every shard.
    pub now_millis: i64,
    /// When the whole request must end; on the wire, the milliseconds left when it was sent.
    #[serde(with = "deadline_as_millis_left")]
    pub deadline: Option<Instant>,
    /// `(from, k)`: fetch this page of the shard's hits in the same call, for a search that
    /// has a single shard (OpenSearch's "query and fetch"), sparing a round trip.
    pub fetch_page: Option<(u32, u32)>,
    /// The parsed request, when the coordinator is on the same node (never encoded).
    #[serde(skip)]
    pub parsed: Option<Arc<SearchRequest>>,
    /// Set when the request was abandoned (the client went away): slices not yet started are
    /// skipped, running ones stop at their next deadline check. A transport sets its own on
    /// the receiving side.
    #[serde(skip)]
    pub cancelled: Option<Arc<AtomicBool>>,
    /// The node that sent the request, set by the receiving side of a transport (none: this
    /// node coordinates it). Adaptive replica selection counts a node's coordinators.
    #[serde(skip)]
    pub coordinator: Option<String>,
    /// Set by the receiving side of a transport, whose thread is about to wait for the answer
    /// anyway: the shard runs the request on that thread when the `search` pool has an idle
    /// thread (see [`crate::shard::LocalShard`]), sparing the hand-over to the pool and back.
    #[serde(skip)]
    pub run_on_receiving_thread: bool,
    /// The reader to run on: the shard's current one (none), or a pinned one (a scroll, a
    /// point in time).
    pub reader: Option<ReaderUse>,
    /// The filter (JSON) of the aliases the index was reached through: the shard searches
    /// `query AND filter` (see [`crate::coordinator::ShardGroup::alias_filter`]).
    pub alias_filter: Option<String>,
    /// What the shard multiplies its documents' scores by (`indices_boost`; 1: none).
    pub index_boost: f32,
    /// `dfs_query_then_fetch`'s part (see [`tessera_query::dfs`]); none for a plain search.
    pub dfs: Option<DfsPhase>,
}

/// A shard's part in `dfs_query_then_fetch`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum DfsPhase {
    /// Only build the query's weight and return the statistics it read.
    Collect,
    /// Score with these statistics (every shard's, summed).
    Apply(tessera_query::dfs::DfsStats),
}

/// Which pinned reader a query runs on (see [`crate::reader_context`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ReaderUse {
    /// Pin the shard's current reader (a new scroll or PIT) for `keep_alive_millis`, unless
    /// the node holds `max_open` of the kind already, and run on it.
    Pin {
        kind: PinKind,
        keep_alive_millis: u64,
        max_open: usize,
        /// The point in time being opened.
        pit: Option<PitGroup>,
    },
    /// Run on the reader pinned as `id`, renewing its keep-alive (with this one when given).
    /// `after` is a scroll's position: only hits after it in the request's full order (sort
    /// keys, then shard, segment and doc) are collected.
    Pinned {
        id: ReaderContextId,
        keep_alive_millis: Option<u64>,
        after: Option<ShardHit>,
    },
}

/// Names a reader context kept on a shard's node between the query and the fetch phase. The
/// session tells one registry's ids from another's (a restarted node forgets its contexts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ReaderContextId {
    pub session: u64,
    pub id: u64,
}

/// What a shard's query phase returns.
#[derive(Default, Serialize, Deserialize)]
pub struct QuerySearchResult {
    pub result: QueryResult,
    /// The shard's aggregation results (slices reduced and trimmed), when requested.
    pub aggregations: Option<InternalAggregations>,
    /// How each sort field's values render.
    pub sort_formats: Vec<crate::sort::SortFormat>,
    /// Timings for `"profile": true`.
    pub profile: Option<ShardProfile>,
    /// The reader the query ran on, kept for the fetch phase: set when the shard has hits the
    /// coordinator may fetch (the coordinator frees it when none of them make the page).
    pub context_id: Option<ReaderContextId>,
    /// The page asked for with `fetch_page`.
    pub fetched: Option<FetchedPage>,
    /// The node's search load, for adaptive replica selection (set by the copy that ran it).
    pub load: Option<crate::search_load::ShardLoad>,
    /// The pinned reader the query ran on (asked for with [`ReaderUse`]).
    pub pinned: Option<ReaderContextId>,
    /// The shard's suggestions, when the request asks for some.
    pub suggest: Option<crate::suggest::ShardSuggest>,
    /// The statistics a `DfsPhase::Collect` request asked for.
    pub dfs: Option<tessera_query::dfs::DfsStats>,
}

/// Hits loaded with their query, keyed by `(segment, doc)`.
pub type FetchedPage = Vec<((u32, u32), FetchedDoc)>;

/// The fetch phase on one shard: load these hits from the reader the query ran on. The
/// context is released once they are loaded.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ShardFetchRequest {
    pub context_id: ReaderContextId,
    /// `(segment, doc)` of each hit, in page order.
    pub docs: Vec<(u32, u32)>,
}

/// `Option<Instant>` on the wire: the milliseconds left (clocks of two nodes are not
/// comparable; a remaining budget is).
mod deadline_as_millis_left {
    use super::*;

    pub fn serialize<S: Serializer>(deadline: &Option<Instant>, s: S) -> Result<S::Ok, S::Error> {
        deadline
            .map(|d| d.saturating_duration_since(Instant::now()).as_millis() as u64)
            .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Instant>, D::Error> {
        let left: Option<u64> = Option::deserialize(d)?;
        Ok(left.map(|millis| Instant::now() + Duration::from_millis(millis)))
    }
}

/// `Arc<SearchSource>` on the wire: the source itself.
mod shared_source {
    use super::*;

    pub fn serialize<S: Serializer>(source: &Arc<SearchSource>, s: S) -> Result<S::Ok, S::Error> {
        source.as_ref().serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<SearchSource>, D::Error> {
        SearchSource::deserialize(d).map(Arc::new)
    }
}

/// Encodes a message (or a result carrying an [`Error`]) in the transport's binary form.
pub fn encode<T: Serialize>(message: &T) -> Result<Vec<u8>> {
    postcard::to_stdvec(message).map_err(|e| Error::internal("encode a shard message", e))
}

/// Decodes what [`encode`] wrote.
pub fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T> {
    postcard::from_bytes(bytes).map_err(|e| Error::internal("decode a shard message", e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hits::ShardHit;
    use crate::sort::{SortFormat, SortValue};
    use serde_json::json;

    #[test]
    fn a_search_source_parses_its_body_and_lets_the_url_win() {
        let mut source =
            SearchSource::from_body(&json!({"size": 3, "query": {"term": {"a": "x"}}}));
        source.params.insert("size".into(), "7".into());
        source.max_buckets = 12;
        let search = source.parse().unwrap();
        assert_eq!((search.size, search.max_buckets), (7, 12));
        let round: SearchSource = decode(&encode(&source).unwrap()).unwrap();
        assert_eq!(round, source);
    }

    #[test]
    fn a_shard_request_round_trips_with_its_budget_and_without_local_handles() {
        let request = ShardSearchRequest {
            source: Arc::new(SearchSource::from_body(
                &json!({"query": {"match_all": {}}}),
            )),
            index_uuid: "u".into(),
            shard_id: 2,
            shard_index: 5,
            total_shards: 6,
            now_millis: 1_700_000_000_000,
            deadline: Some(Instant::now() + Duration::from_secs(60)),
            fetch_page: Some((0, 10)),
            parsed: Some(Arc::new(SearchRequest::default())),
            cancelled: Some(Arc::new(AtomicBool::new(false))),
            coordinator: None,
            run_on_receiving_thread: false,
            reader: None,
            alias_filter: None,
            index_boost: 1.0,
            dfs: None,
        };
        let round: ShardSearchRequest = decode(&encode(&request).unwrap()).unwrap();
        assert_eq!(round.source, request.source);
        assert_eq!(
            (round.shard_id, round.shard_index, round.total_shards),
            (2, 5, 6)
        );
        assert_eq!(round.fetch_page, Some((0, 10)));
        assert!(round.parsed.is_none() && round.cancelled.is_none());
        let left = round.deadline.unwrap() - Instant::now();
        assert!(left > Duration::from_secs(50) && left <= Duration::from_secs(60));
    }

    /// Floats in a fetched hit's JSON (explanations, doc-value fields) come back with the same
    /// bits: an f32 score widened to f64 prints with 17 digits, which serde_json's default
    /// parser (without `float_roundtrip`) can read back one ulp off.
    #[test]
    fn fetched_json_values_cross_the_wire_exactly() {
        let tricky = [
            f64::from(1.022_502_f32),
            f64::from(2.470_388_4_f32),
            0.1 + 0.2,
            123_456.0 * (1.0 / 100.0),
            -1.0e-300,
            f64::MAX,
        ];
        let mut fields = serde_json::Map::new();
        fields.insert("x".into(), json!(tricky));
        fields.insert("n".into(), json!([-3, u64::MAX, i64::MIN]));
        fields.insert("o".into(), json!({"z": null, "b": true, "a": ["s"]}));
        let mut highlight = serde_json::Map::new();
        highlight.insert("body".into(), json!(["<em>alpha</em> bravo"]));
        let explanation = json!({"value": tricky[0], "description": "sum of", "details": [
            {"value": tricky[1], "description": "idf", "details": []}
        ]});
        let doc = FetchedDoc {
            id: Some("d1".into()),
            source: Some(serde_json::value::RawValue::from_string("{\"x\": 1.50}".into()).unwrap()),
            routing: None,
            version: Some(3),
            seq_no: Some(7),
            primary_term: Some(1),
            fields: fields.clone(),
            explanation: Some(explanation.clone()),
            highlight: Some(highlight.clone()),
            matched_queries: vec!["zeta".into(), "alpha".into()],
            inner_hits: Some(serde_json::Map::from_iter([(
                "c".to_string(),
                json!({"hits": {"total": {"value": 1}, "hits": [{"_score": 0.5}]}}),
            )])),
        };
        let round: FetchedDoc = decode(&encode(&doc).unwrap()).unwrap();
        let bits = |v: &serde_json::Value| -> Vec<u64> {
            v.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap().to_bits())
                .collect()
        };
        assert_eq!(bits(&round.fields["x"]), bits(&fields["x"]));
        let round_explanation = round.explanation.unwrap();
        assert_eq!(
            round_explanation["value"].as_f64().unwrap().to_bits(),
            tricky[0].to_bits()
        );
        // the same text, key order included
        assert_eq!(round_explanation.to_string(), explanation.to_string());
        assert_eq!(
            serde_json::Value::Object(round.fields).to_string(),
            serde_json::Value::Object(fields).to_string()
        );
        assert_eq!(round.highlight, Some(highlight));
        assert_eq!(round.matched_queries, ["zeta", "alpha"]);
        assert_eq!(round.source.unwrap().get(), "{\"x\": 1.50}");
        assert_eq!(
            (round.version, round.seq_no, round.primary_term),
            (Some(3), Some(7), Some(1))
        );
    }

    #[test]
    fn query_results_and_errors_cross_the_wire() {
        use crate::suggest::spell::SuggestWord as TermOption;
        use crate::suggest::term::TermEntry;
        use crate::suggest::{ShardSuggest, ShardSuggestion};
        let suggest = ShardSuggest {
            suggestions: vec![
                ShardSuggestion::Term(vec![TermEntry {
                    text: "quikc".into(),
                    offset: 0,
                    length: 5,
                    options: vec![TermOption {
                        text: "quick".into(),
                        score: 0.8,
                        freq: 3,
                    }],
                }]),
                ShardSuggestion::Phrase(crate::suggest::phrase::PhraseEntry {
                    cutoff: 0.25,
                    options: vec![crate::suggest::phrase::PhraseOption {
                        text: "quick brown".into(),
                        highlighted: Some("<em>quick</em> brown".into()),
                        score: 0.5,
                        collate_match: Some(false),
                    }],
                }),
                ShardSuggestion::Completion(vec![crate::suggest::completion::CompletionOption {
                    text: "Nirvana".into(),
                    index: "music".into(),
                    id: "1".into(),
                    score: 34.0,
                    routing: Some("r1".into()),
                    source: Some("{\"x\": 1}".into()),
                    contexts: vec![("genre".into(), vec!["rock".into()])],
                }]),
            ],
        };
        let result = QuerySearchResult {
            result: QueryResult {
                hits: vec![ShardHit {
                    shard_index: 1,
                    segment_ord: 0,
                    segment_rank: 0,
                    doc: 42,
                    score: 1.5,
                    sort: vec![SortValue::Str("k".into()), SortValue::Missing],
                    collapse: None,
                }],
                total: 9,
                ..QueryResult::default()
            },
            aggregations: None,
            sort_formats: vec![SortFormat::Text, SortFormat::Float32],
            profile: None,
            context_id: Some(ReaderContextId { session: 7, id: 3 }),
            fetched: None,
            load: None,
            pinned: Some(ReaderContextId { session: 7, id: 4 }),
            suggest: Some(suggest.clone()),
            dfs: Some(tessera_query::dfs::DfsStats {
                num_docs: 12,
                tokens: vec![("body".into(), 80)],
                doc_freqs: vec![("body".into(), vec![b'f', 0xff], 3)],
            }),
        };
        let ok: Result<QuerySearchResult> = Ok(result);
        let round: Result<QuerySearchResult> = decode(&encode(&ok).unwrap()).unwrap();
        let round = round.unwrap();
        assert_eq!(round.result.hits[0].doc, 42);
        assert_eq!(round.result.total, 9);
        assert_eq!(round.suggest, Some(suggest));
        assert_eq!(
            round.context_id,
            Some(ReaderContextId { session: 7, id: 3 })
        );
        assert_eq!(round.pinned, Some(ReaderContextId { session: 7, id: 4 }));
        // term bytes need not be text
        assert_eq!(round.dfs.unwrap().doc_freqs[0].1, vec![b'f', 0xff]);

        let failed: Result<QuerySearchResult> = Err(Error::search_context_missing(3));
        let round: Result<QuerySearchResult> = decode(&encode(&failed).unwrap()).unwrap();
        let error = round.err().unwrap();
        assert_eq!(error.kind(), "search_context_missing_exception");
        assert_eq!(error.status(), 404);
    }
}
