//! Scroll ids and point-in-time ids: what a client hands back to continue reading from the
//! readers a search pinned.
//!
//! Both name the pinned reader of every shard (its node, index and context id), so that any
//! node can coordinate the next request. A scroll id also carries the search itself and the
//! position reached — the last hit returned, in the request's full order (sort keys, then
//! shard, segment and doc) — so a scroll page is "the next `size` hits after that position on
//! the same readers": the shards keep no cursor, and the id of every page is complete. A PIT
//! id carries only the readers and its creation time; the client pages with `search_after`.
//!
//! Ids are postcard in URL-safe base64 (they appear in URL paths), as opaque to a client as
//! OpenSearch's. A text that does not decode is OpenSearch's `illegal_argument_exception`.

use base64::Engine;
use serde::{Deserialize, Serialize};
use tessera_common::{Error, Result};

use crate::hits::ShardHit;
use crate::messages::{ReaderContextId, SearchSource};

/// The reader a scroll or PIT pinned on one shard.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PinnedShard {
    pub node_id: String,
    pub index: String,
    pub index_uuid: String,
    pub shard_id: u32,
    pub context: ReaderContextId,
    /// The alias filter the search applied on this shard, applied again on each page.
    pub alias_filter: Option<String>,
}

/// What a search on pinned readers leaves for the next request: the readers of the shards
/// that answered, in the order that breaks ties, and the position its page reached (with the
/// shard numbered as in `shards`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PinnedSearch {
    pub shards: Vec<PinnedShard>,
    pub last: Option<ShardHit>,
}

/// A scroll: the search, its readers, and the position reached.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScrollId {
    /// The search as first sent (body and URL parameters).
    pub source: SearchSource,
    pub shards: Vec<PinnedShard>,
    pub after: Option<ShardHit>,
    /// The first page's hit total (value, lower bound): every page reports it.
    pub total: Option<(u64, bool)>,
}

/// A point in time: its readers and when it was opened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PitId {
    pub shards: Vec<PinnedShard>,
    pub created_millis: i64,
}

/// A leading byte that tells the two kinds of id apart (a PIT id given as a scroll id).
const SCROLL_TAG: u8 = 1;
const PIT_TAG: u8 = 2;

impl ScrollId {
    pub fn encode(&self) -> String {
        encode(SCROLL_TAG, self)
    }

    pub fn decode(text: &str) -> Result<ScrollId> {
        decode(SCROLL_TAG, text).ok_or_else(|| {
            Error::illegal_argument("Cannot parse scroll id").caused_by(Error::illegal_argument(
                format!("invalid scroll id: [{text}]"),
            ))
        })
    }
}

impl PitId {
    pub fn encode(&self) -> String {
        encode(PIT_TAG, self)
    }

    pub fn decode(text: &str) -> Result<PitId> {
        decode(PIT_TAG, text)
            .ok_or_else(|| Error::illegal_argument(format!("invalid id: [{text}]")))
    }
}

fn encode<T: Serialize>(tag: u8, value: &T) -> String {
    let mut bytes = vec![tag];
    bytes.extend(postcard::to_stdvec(value).unwrap_or_default());
    base64::engine::general_purpose::URL_SAFE.encode(bytes)
}

fn decode<T: for<'de> Deserialize<'de>>(tag: u8, text: &str) -> Option<T> {
    let bytes = base64::engine::general_purpose::URL_SAFE
        .decode(text.trim())
        .ok()?;
    match bytes.split_first() {
        Some((&first, rest)) if first == tag => postcard::from_bytes(rest).ok(),
        _ => None,
    }
}

/// A scroll's next pages: the search as first sent, without what only its first page
/// answers (aggregations and suggestions, as in OpenSearch), and without counting hits: the
/// readers are pinned, so the first page's total stands (see [`ScrollId::total`]).
pub fn continuation(source: &SearchSource) -> SearchSource {
    let body =
        source.body.as_ref().map(
            |text| match serde_json::from_str::<serde_json::Value>(text) {
                Ok(serde_json::Value::Object(mut map)) => {
                    for key in ["aggs", "aggregations", "suggest"] {
                        map.remove(key);
                    }
                    map.insert("track_total_hits".into(), false.into());
                    serde_json::Value::Object(map).to_string()
                }
                _ => text.clone(),
            },
        );
    let mut params = source.params.clone();
    params.remove("track_total_hits");
    SearchSource {
        body: Some(body.unwrap_or_else(|| r#"{"track_total_hits": false}"#.to_string())),
        params,
        ..source.clone()
    }
}

/// A total as a search response renders it (`ResponseOptions::render_total`), read back as
/// (value, whether it is a lower bound).
pub fn read_total(total: &serde_json::Value) -> Option<(u64, bool)> {
    match total {
        serde_json::Value::Number(n) => Some((n.as_u64()?, false)),
        serde_json::Value::Object(map) => Some((
            map.get("value")?.as_u64()?,
            map.get("relation").and_then(|r| r.as_str()) == Some("gte"),
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(n: u32) -> PinnedShard {
        PinnedShard {
            node_id: "node-a".into(),
            index: "logs".into(),
            index_uuid: "u1".into(),
            shard_id: n,
            context: ReaderContextId {
                session: 7,
                id: 40 + n as u64,
            },
            alias_filter: None,
        }
    }

    #[test]
    fn ids_survive_their_text_form() {
        let scroll = ScrollId {
            source: SearchSource::from_body(&serde_json::json!({"size": 2})),
            shards: vec![shard(0), shard(1)],
            after: Some(ShardHit {
                shard_index: 1,
                segment_ord: 0,
                segment_rank: 0,
                doc: 9,
                score: f32::NAN,
                sort: vec![crate::sort::SortValue::I64(3)],
                collapse: None,
            }),
            total: Some((12, false)),
        };
        let text = scroll.encode();
        assert!(text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_=".contains(c)));
        let back = ScrollId::decode(&text).unwrap();
        assert_eq!(back.shards, scroll.shards);
        assert_eq!(back.source, scroll.source);
        assert_eq!(back.total, Some((12, false)));
        let pit = PitId {
            shards: vec![shard(3)],
            created_millis: 5,
        };
        assert_eq!(PitId::decode(&pit.encode()).unwrap(), pit);
    }

    #[test]
    fn later_pages_do_not_count_or_aggregate() {
        let source = SearchSource {
            body: Some(r#"{"size": 5, "aggs": {"a": {"max": {"field": "n"}}}}"#.into()),
            params: [("track_total_hits".to_string(), "true".to_string())].into(),
            ..SearchSource::default()
        };
        let next = continuation(&source);
        let body: serde_json::Value = serde_json::from_str(next.body.as_deref().unwrap()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"size": 5, "track_total_hits": false})
        );
        assert!(next.params.is_empty());
        let bodiless = continuation(&SearchSource::default());
        assert_eq!(
            bodiless.body.as_deref(),
            Some(r#"{"track_total_hits": false}"#)
        );
        for (total, as_int) in [
            ((7, false), false),
            ((10000, true), false),
            ((3, false), true),
        ] {
            let options = crate::ResponseOptions {
                total_hits_as_int: as_int,
                ..Default::default()
            };
            assert_eq!(
                read_total(&options.render_total(total.0, total.1)),
                Some(total)
            );
        }
    }

    #[test]
    fn garbage_and_the_other_kind_are_refused() {
        let pit = PitId {
            shards: vec![shard(0)],
            created_millis: 1,
        }
        .encode();
        let e = ScrollId::decode(&pit).unwrap_err();
        assert_eq!(e.reason(), "Cannot parse scroll id");
        assert_eq!(e.status(), 400);
        assert_eq!(
            PitId::decode("garbage").unwrap_err().reason(),
            "invalid id: [garbage]"
        );
        assert!(ScrollId::decode("").is_err());
    }
}
