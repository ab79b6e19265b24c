//! `collapse`: one hit per value of a keyword or numeric field (documents without a value
//! make one group of their own), the best hit of each group by the request's sort.
//!
//! Each slice keeps its best `from + size` groups ([`TopGroups`]: a heap of groups with a
//! map from group key to heap slot, so a better hit of a kept group replaces its head in
//! place); slices and shards then merge with the one hit reduce, which keeps the first hit
//! of each key (see [`crate::hits::reduce`]). A group in the request's top `n` is in the top
//! `n` of the shard holding its best hit, so keeping `n` groups per slice and shard loses
//! nothing. The total counts documents, not groups, as OpenSearch's does.

use std::cmp::Ordering;
use std::collections::hash_map::Entry;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tantivy::columnar::{Column, StrColumn};
use tantivy::{DocId, SegmentReader};
use tessera_common::error::json_token as token;
use tessera_common::{Error, Result};
use tessera_mapping::{FieldTable, LeafKind};

use crate::hits::{HitSort, ShardHit};

/// The body's `collapse`.
#[derive(Clone, Debug, PartialEq)]
pub struct CollapseSpec {
    pub field: String,
    /// `inner_hits`: searches of each group the coordinator runs after the page is known.
    pub inner_hits: Vec<InnerHits>,
}

/// One `inner_hits` of `collapse`: its name, and the search options of its group searches
/// (a search body without `query`).
#[derive(Clone, Debug, PartialEq)]
pub struct InnerHits {
    pub name: String,
    pub options: serde_json::Map<String, Value>,
}

/// The options an `inner_hits` may give, as OpenSearch's inner hit builder reads them.
const INNER_HITS_OPTIONS: &[&str] = &[
    "from",
    "size",
    "sort",
    "_source",
    "explain",
    "version",
    "seq_no_primary_term",
    "track_scores",
    "stored_fields",
    "docvalue_fields",
    "fields",
    "highlight",
    "collapse",
];

fn parse_inner_hits(value: &Value) -> Result<Vec<InnerHits>> {
    let one = |value: &Value| -> Result<InnerHits> {
        let Value::Object(map) = value else {
            return Err(Error::parsing(format!(
                "Unknown key for a {} in [inner_hits].",
                token(value)
            )));
        };
        let mut name = None;
        let mut options = serde_json::Map::new();
        for (key, value) in map {
            match key.as_str() {
                "name" => name = value.as_str().map(String::from),
                "ignore_unmapped" => {}
                "script_fields" => {
                    return Err(Error::not_supported("[script_fields] in [inner_hits]"))
                }
                key if INNER_HITS_OPTIONS.contains(&key) => {
                    options.insert(key.to_string(), value.clone());
                }
                other => {
                    return Err(Error::x_content_parse(
                        "[collapse] failed to parse field [inner_hits]",
                    )
                    .caused_by(Error::x_content_parse(format!(
                        "[inner_hits] unknown field [{other}]"
                    ))))
                }
            }
        }
        let name = name.ok_or_else(|| Error::illegal_argument("Field name cannot be null"))?;
        Ok(InnerHits { name, options })
    };
    match value {
        Value::Array(items) => items.iter().map(one).collect(),
        other => Ok(vec![one(other)?]),
    }
}

/// The body of the search of one group's inner hits: the request's query limited to the
/// group (its `value`, or no value), with the inner hits' options.
pub fn group_search_body(
    query: Option<&Value>,
    field: &str,
    value: Option<&Value>,
    inner: &InnerHits,
) -> Value {
    let group = match value {
        Some(value) => serde_json::json!({"term": {field: value}}),
        None => serde_json::json!({"bool": {"must_not": {"exists": {"field": field}}}}),
    };
    let mut bool_query = serde_json::Map::new();
    if let Some(query) = query {
        bool_query.insert("must".into(), query.clone());
    }
    bool_query.insert("filter".into(), group);
    let mut body = inner.options.clone();
    body.insert("query".into(), serde_json::json!({"bool": bool_query}));
    if !body.contains_key("size") {
        body.insert("size".into(), Value::from(3));
    }
    Value::Object(body)
}

/// Parses `collapse`.
pub fn parse_collapse(value: &Value) -> Result<CollapseSpec> {
    let Value::Object(map) = value else {
        return Err(Error::parsing(format!(
            "Unknown key for a {} in [collapse].",
            token(value)
        )));
    };
    let mut field = None;
    let mut inner_hits = Vec::new();
    for (key, value) in map {
        match key.as_str() {
            "field" => match value {
                Value::String(name) => field = Some(name.clone()),
                other => {
                    return Err(Error::x_content_parse(format!(
                        "[collapse] field doesn't support values of type: {}",
                        token(other)
                    )))
                }
            },
            "max_concurrent_group_searches" => match value.as_i64() {
                Some(n) if n >= 0 => {}
                _ => {
                    return Err(Error::illegal_argument(format!(
                        "maxConcurrentGroupRequests must be positive, was: {value}"
                    )))
                }
            },
            "inner_hits" => inner_hits = parse_inner_hits(value)?,
            other => {
                return Err(Error::x_content_parse(format!(
                    "[collapse] unknown field [{other}]"
                )))
            }
        }
    }
    let field = field.ok_or_else(|| Error::illegal_argument("field name is null or empty"))?;
    if field.is_empty() {
        return Err(Error::illegal_argument("field name is null or empty"));
    }
    Ok(CollapseSpec { field, inner_hits })
}

/// What else of the request a shard refuses with `collapse`, as OpenSearch does (OpenSearch
/// answers these with a 500; they are the client's mistakes, so Tessera says 400).
pub fn check_request(spec: Option<&CollapseSpec>, rescore: bool, search_after: bool) -> Result<()> {
    if spec.is_none() {
        return Ok(());
    }
    let refuse = |what: &str| Err(Error::new("search_exception", 400, what.to_string()));
    if rescore {
        return refuse("cannot use `collapse` in conjunction with `rescore`");
    }
    if search_after {
        return refuse("cannot use `collapse` in conjunction with `search_after`");
    }
    Ok(())
}

/// How the collapse field's column is read in a shard.
#[derive(Clone, Debug, PartialEq)]
pub struct CollapseField {
    pub field: String,
    kind: KeyKind,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum KeyKind {
    Keyword,
    Integer,
    Float,
}

impl CollapseField {
    /// Resolves the field in a shard's mapping, with OpenSearch's errors.
    pub fn resolve(table: &FieldTable, spec: &CollapseSpec) -> Result<CollapseField> {
        let field = &spec.field;
        let Some(leaf) = table.leaf(field) else {
            return Err(Error::illegal_argument(format!(
                "no mapping found for `{field}` in order to collapse on"
            )));
        };
        let kind = match leaf.kind {
            LeafKind::Keyword { .. } => KeyKind::Keyword,
            // `scaled_float` lives in a module of OpenSearch's whose type collapse rejects
            LeafKind::Integer => KeyKind::Integer,
            LeafKind::Float => KeyKind::Float,
            _ => {
                return Err(Error::illegal_argument(format!(
                "unknown type for collapse field `{field}`, only keywords and numbers are accepted"
            )))
            }
        };
        if !leaf.fast {
            return Err(Error::illegal_argument(format!(
                "cannot collapse on field `{field}` without `doc_values`"
            )));
        }
        Ok(CollapseField {
            field: field.clone(),
            kind,
        })
    }

    /// The field's column in one segment.
    pub fn segment_keys(&self, reader: &SegmentReader) -> Result<SegmentCollapseKeys> {
        let fast = reader.fast_fields();
        let open_err = |e: tantivy::TantivyError| Error::internal("open the collapse column", e);
        let column = match self.kind {
            KeyKind::Keyword => KeyColumn::Str(fast.str(&self.field).map_err(open_err)?),
            KeyKind::Integer => {
                KeyColumn::I64(fast.column_opt::<i64>(&self.field).map_err(open_err)?)
            }
            KeyKind::Float => {
                KeyColumn::F64(fast.column_opt::<f64>(&self.field).map_err(open_err)?)
            }
        };
        Ok(SegmentCollapseKeys {
            column,
            words: HashMap::new(),
            current: CollapseKey::Missing,
        })
    }
}

/// A group: the collapse field's value, or none.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CollapseKey {
    Missing,
    Str(String),
    I64(i64),
    /// A float's bits (`-0.0` and `0.0` are one value, as Lucene's doc values compare them).
    F64(u64),
}

enum KeyColumn {
    Str(Option<StrColumn>),
    I64(Option<Column<i64>>),
    F64(Option<Column<f64>>),
}

/// Reads documents' group keys in one segment.
pub struct SegmentCollapseKeys {
    column: KeyColumn,
    /// Term ordinals already turned into keys in this segment (a word is read once).
    words: HashMap<u64, CollapseKey>,
    /// The last numeric (or missing) key read.
    current: CollapseKey,
}

impl SegmentCollapseKeys {
    /// The group of `doc`; more than one value is OpenSearch's error.
    pub fn key(&mut self, doc: DocId) -> Result<&CollapseKey> {
        let several = || {
            Error::illegal_state(format!(
                "failed to collapse {doc}, the collapse field must be single valued"
            ))
        };
        fn single<T>(
            mut values: impl Iterator<Item = T>,
            several: impl Fn() -> Error,
        ) -> Result<Option<T>> {
            let first = values.next();
            if values.next().is_some() {
                return Err(several());
            }
            Ok(first)
        }
        self.current = match &self.column {
            KeyColumn::Str(None) | KeyColumn::I64(None) | KeyColumn::F64(None) => {
                CollapseKey::Missing
            }
            KeyColumn::I64(Some(column)) => match single(column.values_for_doc(doc), several)? {
                Some(v) => CollapseKey::I64(v),
                None => CollapseKey::Missing,
            },
            KeyColumn::F64(Some(column)) => match single(column.values_for_doc(doc), several)? {
                Some(v) => CollapseKey::F64(if v == 0.0 { 0 } else { v.to_bits() }),
                None => CollapseKey::Missing,
            },
            KeyColumn::Str(Some(column)) => match single(column.term_ords(doc), several)? {
                None => CollapseKey::Missing,
                Some(ord) => {
                    return Ok(match self.words.entry(ord) {
                        Entry::Occupied(known) => known.into_mut(),
                        Entry::Vacant(new) => {
                            let mut word = String::new();
                            column
                                .ord_to_str(ord, &mut word)
                                .map_err(|e| Error::internal("read a collapse value", e))?;
                            new.insert(CollapseKey::Str(word))
                        }
                    });
                }
            },
        };
        Ok(&self.current)
    }
}

/// The best `k` groups seen so far: a heap of each group's best hit, worst on top, with each
/// group's slot, so that a better hit of a kept group takes its place.
pub struct TopGroups<'a> {
    k: usize,
    sort: &'a HitSort,
    heap: Vec<ShardHit>,
    slots: HashMap<CollapseKey, usize>,
}

impl<'a> TopGroups<'a> {
    pub fn new(k: usize, sort: &'a HitSort) -> TopGroups<'a> {
        TopGroups {
            k,
            sort,
            heap: Vec::with_capacity(k.min(1024)),
            slots: HashMap::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// The best hit kept of the group `key`, when the group is kept.
    pub fn head(&self, key: &CollapseKey) -> Option<&ShardHit> {
        self.slots.get(key).map(|&slot| &self.heap[slot])
    }

    /// The worst group's hit, when `k` groups are kept.
    pub fn worst(&self) -> Option<&ShardHit> {
        (self.heap.len() >= self.k)
            .then(|| self.heap.first())
            .flatten()
    }

    /// True when a hit may change the kept groups: a hit no better than the worst kept
    /// group is no better than its own group's best either.
    pub fn accepts(&self, hit: &ShardHit) -> bool {
        match self.worst() {
            Some(worst) => self.sort.compare(hit, worst) == Ordering::Less,
            None => self.k > 0,
        }
    }

    /// Offers a hit whose `collapse` key is set.
    pub fn push(&mut self, hit: ShardHit) {
        if self.k == 0 {
            return;
        }
        let key = hit.collapse.clone().unwrap_or(CollapseKey::Missing);
        if let Some(&slot) = self.slots.get(&key) {
            if self.sort.compare(&hit, &self.heap[slot]) == Ordering::Less {
                // better than its group's best: the group moves away from the top
                self.heap[slot] = hit;
                self.sift_down(slot);
            }
            return;
        }
        if self.heap.len() < self.k {
            self.heap.push(hit);
            let last = self.heap.len() - 1;
            self.slots.insert(key, last);
            self.sift_up(last);
        } else if self.sort.compare(&hit, &self.heap[0]) == Ordering::Less {
            let evicted = std::mem::replace(&mut self.heap[0], hit);
            self.slots
                .remove(&evicted.collapse.unwrap_or(CollapseKey::Missing));
            self.slots.insert(key, 0);
            self.sift_down(0);
        }
    }

    fn worse(&self, a: usize, b: usize) -> bool {
        self.sort.compare(&self.heap[a], &self.heap[b]) == Ordering::Greater
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.heap.swap(a, b);
        for i in [a, b] {
            let key = self.heap[i]
                .collapse
                .clone()
                .unwrap_or(CollapseKey::Missing);
            self.slots.insert(key, i);
        }
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if !self.worse(i, parent) {
                break;
            }
            self.swap(i, parent);
            i = parent;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        loop {
            let (left, right) = (2 * i + 1, 2 * i + 2);
            let mut worst = i;
            if left < self.heap.len() && self.worse(left, worst) {
                worst = left;
            }
            if right < self.heap.len() && self.worse(right, worst) {
                worst = right;
            }
            if worst == i {
                break;
            }
            self.swap(i, worst);
            i = worst;
        }
    }

    /// The kept groups' hits, best first.
    pub fn into_sorted(self) -> Vec<ShardHit> {
        let sort = self.sort;
        let mut hits = self.heap;
        hits.sort_by(|a, b| sort.compare(a, b));
        hits
    }
}

/// Keeps the first hit of each collapse key of hits in their order (hits without a key are
/// all kept).
pub fn first_of_each_group(hits: &mut Vec<ShardHit>) {
    if hits.iter().all(|hit| hit.collapse.is_none()) {
        return;
    }
    let mut seen = std::collections::HashSet::new();
    hits.retain(|hit| match &hit.collapse {
        Some(key) => seen.insert(key.clone()),
        None => true,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hit(doc: u32, score: f32, key: Option<&str>) -> ShardHit {
        ShardHit {
            shard_index: 0,
            segment_ord: 0,
            segment_rank: 0,
            doc,
            score,
            sort: vec![],
            collapse: Some(key.map_or(CollapseKey::Missing, |k| CollapseKey::Str(k.into()))),
        }
    }

    #[test]
    fn parses_a_field_and_refuses_what_it_cannot_do() {
        assert_eq!(
            parse_collapse(&json!({"field": "k", "max_concurrent_group_searches": 4})).unwrap(),
            CollapseSpec {
                field: "k".into(),
                inner_hits: vec![]
            }
        );
        let unknown = parse_collapse(&json!({"field": "k", "bogus": 1})).unwrap_err();
        assert_eq!(unknown.reason(), "[collapse] unknown field [bogus]");
        let inner = parse_collapse(
            &json!({"field": "k", "inner_hits": [{"name": "x", "size": 2}, {"name": "y"}]}),
        )
        .unwrap();
        assert_eq!(inner.inner_hits.len(), 2);
        assert_eq!(inner.inner_hits[0].options["size"], 2);
        let nameless = parse_collapse(&json!({"field": "k", "inner_hits": {}})).unwrap_err();
        assert_eq!(nameless.reason(), "Field name cannot be null");
        let bogus = parse_collapse(&json!({"field": "k", "inner_hits": {"name": "x", "bogus": 1}}))
            .unwrap_err();
        assert_eq!(
            bogus.cause().unwrap().reason(),
            "[inner_hits] unknown field [bogus]"
        );
        assert!(parse_collapse(&json!({})).is_err());
        assert!(parse_collapse(&json!("k")).is_err());
        let spec = CollapseSpec {
            field: "k".into(),
            inner_hits: vec![],
        };
        assert!(check_request(Some(&spec), false, false).is_ok());
        assert_eq!(
            check_request(Some(&spec), true, false)
                .unwrap_err()
                .reason(),
            "cannot use `collapse` in conjunction with `rescore`"
        );
        assert_eq!(
            check_request(Some(&spec), false, true)
                .unwrap_err()
                .status(),
            400
        );
        assert!(check_request(None, true, true).is_ok());
    }

    #[test]
    fn top_groups_keep_the_best_hit_of_the_best_groups() {
        let sort = HitSort::Score;
        let mut top = TopGroups::new(2, &sort);
        for h in [
            hit(0, 1.0, Some("a")),
            hit(1, 2.0, Some("b")),
            hit(2, 3.0, Some("a")), // a's best improves
            hit(3, 0.5, None),      // not competitive
            hit(4, 2.5, None),      // evicts b
            hit(5, 1.5, Some("b")), // b is gone and this one loses to the worst kept
            hit(6, 4.0, None),      // the missing group's best improves
        ] {
            if top.accepts(&h) {
                top.push(h);
            }
        }
        let kept: Vec<(u32, f32)> = top.into_sorted().iter().map(|h| (h.doc, h.score)).collect();
        assert_eq!(kept, [(6, 4.0), (2, 3.0)]);
    }

    #[test]
    fn top_groups_agree_with_grouping_everything() {
        // a property check over pseudo-random streams: the kept groups are the best k groups
        // of all hits, each with its best hit
        let sort = HitSort::Score;
        let mut seed = 7u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..200 {
            let k = (next() % 6) as usize;
            let hits: Vec<ShardHit> = (0..(next() % 40) as u32)
                .map(|doc| {
                    let key = ["a", "b", "c", "d", "e", "f", "g"][(next() % 7) as usize];
                    hit(doc, (next() % 10) as f32, (key != "g").then_some(key))
                })
                .collect();
            let mut top = TopGroups::new(k, &sort);
            for h in hits.clone() {
                if top.accepts(&h) {
                    top.push(h);
                }
            }
            let mut expected = hits.clone();
            expected.sort_by(|a, b| sort.compare(a, b));
            first_of_each_group(&mut expected);
            expected.truncate(k);
            assert_eq!(top.into_sorted(), expected, "round {round}");
        }
    }

    #[test]
    fn a_group_search_is_the_query_limited_to_the_group() {
        let inner = InnerHits {
            name: "x".into(),
            options: json!({"sort": ["n"]}).as_object().unwrap().clone(),
        };
        let query = json!({"match": {"t": "fox"}});
        assert_eq!(
            group_search_body(Some(&query), "k", Some(&json!("a")), &inner),
            json!({"sort": ["n"], "size": 3, "query": {"bool": {"must": query, "filter": {"term": {"k": "a"}}}}})
        );
        assert_eq!(
            group_search_body(None, "k", None, &inner)["query"],
            json!({"bool": {"filter": {"bool": {"must_not": {"exists": {"field": "k"}}}}}})
        );
    }
}
