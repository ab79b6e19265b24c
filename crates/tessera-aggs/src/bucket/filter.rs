//! Single-bucket and query-defined buckets: `filter`, `filters` and `global`.
//!
//! A filter's matches in a segment are computed once into a bit set, the first time the slice
//! sends that segment's documents: membership is then a bit test whatever order documents
//! arrive in. `global` ignores the query: it walks every live document of its slice's part of
//! each segment itself (it only exists at the top level).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use tantivy::query::{EnableScoring, Weight};
use tantivy::BitSet;
use tantivy::{DocId, DocSet, SegmentReader, TERMINATED};
use tessera_common::{Error, Result};
use tessera_query::{compile, parse_query, CompileContext, QueryAst};

use crate::bucket::histogram::bucket_list;
use crate::collector::{Collector, SegmentContext, SubCollectors};
use crate::internal::{render_subs, InternalAgg, InternalAggregations, RenderContext};
use crate::ords::slot;
use crate::prepare::{AggContext, Factory};
use crate::request::{bool_param, string_param, AggKind, AggRequest};

#[derive(Clone, Debug, PartialEq)]
pub struct FilterRequest {
    pub query: QueryAst,
}

impl FilterRequest {
    pub fn parse(body: &Value) -> Result<FilterRequest> {
        Ok(FilterRequest {
            query: parse_query(body)?,
        })
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct FiltersRequest {
    /// `(key, query)`; keys are `None` for the anonymous (array) form. Keyed filters are
    /// sorted by key, as OpenSearch does.
    pub filters: Vec<(Option<String>, QueryAst)>,
    pub keyed: bool,
    pub other_bucket_key: Option<String>,
}

impl FiltersRequest {
    pub fn parse(name: &str, body: &Map<String, Value>) -> Result<FiltersRequest> {
        let mut filters = None;
        let mut other_bucket = false;
        let mut other_bucket_key = None;
        for (key, value) in body {
            match key.as_str() {
                "filters" => {
                    filters = Some(match value {
                        Value::Object(named) => {
                            let mut list = named
                                .iter()
                                .map(|(k, q)| Ok((Some(k.clone()), parse_query(q)?)))
                                .collect::<Result<Vec<_>>>()?;
                            list.sort_by(|a, b| a.0.cmp(&b.0));
                            list
                        }
                        Value::Array(items) => items
                            .iter()
                            .map(|q| Ok((None, parse_query(q)?)))
                            .collect::<Result<Vec<_>>>()?,
                        _ => {
                            return Err(Error::parsing(format!(
                                "Unknown key for a {} in [{name}]: [filters].",
                                crate::bucket::token(value)
                            )))
                        }
                    })
                }
                "other_bucket" => other_bucket = bool_param("filters", key, value)?,
                "other_bucket_key" => other_bucket_key = Some(string_param("filters", key, value)?),
                _ => {
                    return Err(Error::parsing(format!(
                        "Unknown key for a {} in [{name}]: [{key}].",
                        crate::bucket::token(value)
                    ))
                    .at_body_key(key.as_str()))
                }
            }
        }
        let Some(filters) = filters else {
            return Err(Error::parsing(format!(
                "Missing [filters] in filters aggregation [{name}]"
            )));
        };
        let keyed = filters.first().is_some_and(|(k, _)| k.is_some());
        let other_bucket_key = match (other_bucket, other_bucket_key) {
            (_, Some(key)) => Some(key),
            (true, None) => Some("_other_".to_string()),
            (false, None) => None,
        };
        Ok(FiltersRequest {
            filters,
            keyed,
            other_bucket_key,
        })
    }
}

/// Compiles a filter query into a weight for this shard.
pub(crate) fn filter_weight(query: &QueryAst, ctx: &AggContext) -> Result<Option<Arc<dyn Weight>>> {
    if matches!(query, QueryAst::MatchAll { .. }) {
        return Ok(None);
    }
    let compile_ctx = CompileContext {
        searcher: Some(ctx.searcher),
        table: ctx.table,
        index: ctx.index,
        default_fields: ctx.default_fields,
        now_millis: ctx.now_millis,
        max_terms_count: ctx.max_terms_count,
        clauses: Default::default(),
        knn: Default::default(),
        nested_scope: Default::default(),
        deadline: None,
        failures: None,
        mapping: None,
        legacy_bm25: true,
        shard_id: 0,
    };
    let compiled = compile(query, &compile_ctx)?;
    let weight = compiled
        .weight(EnableScoring::disabled_from_searcher(ctx.searcher))
        .map_err(|e| Error::internal("create a filter aggregation weight", e))?;
    Ok(Some(Arc::from(weight)))
}

/// A filter's matches in the current segment, computed on first use.
pub(crate) struct SegmentFilter {
    weight: Option<Arc<dyn Weight>>,
    matches: Option<BitSet>,
    reader: Option<SegmentReader>,
}

impl SegmentFilter {
    pub(crate) fn new(weight: Option<Arc<dyn Weight>>) -> SegmentFilter {
        SegmentFilter {
            weight,
            matches: None,
            reader: None,
        }
    }

    pub(crate) fn set_segment(&mut self, reader: &SegmentReader) {
        self.matches = None;
        self.reader = Some(reader.clone());
    }

    #[inline]
    pub(crate) fn contains(&mut self, doc: DocId) -> bool {
        let Some(weight) = &self.weight else {
            return true;
        };
        if self.matches.is_none() {
            let reader = self.reader.as_ref().expect("set_segment before collect");
            let mut bits = BitSet::with_max_value(reader.max_doc().max(1));
            // a failing scorer leaves the set empty: the filter then matches nothing here
            if let Ok(mut scorer) = weight.scorer(reader, 1.0) {
                let mut d = scorer.doc();
                while d != TERMINATED {
                    bits.insert(d);
                    d = scorer.advance();
                }
            }
            self.matches = Some(bits);
        }
        self.matches.as_ref().is_some_and(|m| m.contains(doc))
    }
}

// ---- filter ----

struct FilterFactory {
    weight: Option<Arc<dyn Weight>>,
}

pub fn filter_factory(filter: &FilterRequest, ctx: &AggContext) -> Result<Box<dyn Factory>> {
    Ok(Box::new(FilterFactory {
        weight: filter_weight(&filter.query, ctx)?,
    }))
}

impl Factory for FilterFactory {
    fn collector(&self, subs: SubCollectors, _single_parent: bool) -> Result<Box<dyn Collector>> {
        Ok(Box::new(FilterCollector {
            filter: SegmentFilter::new(self.weight.clone()),
            counts: Vec::new(),
            subs,
        }))
    }
}

struct FilterCollector {
    filter: SegmentFilter,
    counts: Vec<u64>,
    subs: SubCollectors,
}

impl Collector for FilterCollector {
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        self.filter.set_segment(segment.reader);
        self.subs.set_segment(segment)
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        for (&doc, &parent) in docs.iter().zip(parents) {
            if self.filter.contains(doc) {
                *slot(&mut self.counts, parent) += 1;
                if !self.subs.is_empty() {
                    self.subs.push(doc, parent);
                }
            }
        }
        self.subs.flush();
    }

    fn finish_segment(&mut self) -> Result<()> {
        self.subs.finish_segment()
    }

    fn build(&mut self, parent: u32) -> Result<InternalAgg> {
        Ok(InternalAgg::SingleBucket(InternalSingleBucket {
            doc_count: self.counts.get(parent as usize).copied().unwrap_or(0),
            subs: self.subs.build(parent)?,
        }))
    }
}

// ---- global ----

/// `nested`: the markers of an index with nested fields, whose child documents `global`
/// leaves out as every search does.
struct GlobalFactory {
    nested: Option<tessera_mapping::NestedMarkers>,
}

pub fn global_factory(ctx: &AggContext) -> Box<dyn Factory> {
    Box::new(GlobalFactory {
        nested: ctx.table.meta.nested,
    })
}

impl Factory for GlobalFactory {
    fn collector(&self, subs: SubCollectors, _single_parent: bool) -> Result<Box<dyn Collector>> {
        Ok(Box::new(GlobalCollector {
            doc_count: 0,
            subs,
            nested: self.nested,
        }))
    }
}

struct GlobalCollector {
    doc_count: u64,
    subs: SubCollectors,
    nested: Option<tessera_mapping::NestedMarkers>,
}

impl Collector for GlobalCollector {
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        self.subs.set_segment(segment)?;
        let alive = segment.reader.alive_bitset();
        let roots = match self.nested {
            Some(markers) => Some(
                tessera_query::nested::level_bits(
                    segment.reader,
                    markers,
                    &tessera_query::nested::Level::Root,
                )
                .map_err(|e| Error::internal("read the root documents", e))?,
            ),
            None => None,
        };
        let mut block = Vec::with_capacity(1024);
        let end = segment.docs.end.min(segment.reader.max_doc());
        for doc in segment.docs.start..end {
            if alive.is_none_or(|a| a.is_alive(doc))
                && roots.as_ref().is_none_or(|r| r.contains(doc))
            {
                block.push(doc);
                if block.len() == block.capacity() {
                    self.doc_count += block.len() as u64;
                    if !self.subs.is_empty() {
                        block.iter().for_each(|d| self.subs.push(*d, 0));
                        self.subs.flush();
                    }
                    block.clear();
                }
            }
        }
        self.doc_count += block.len() as u64;
        if !self.subs.is_empty() && !block.is_empty() {
            block.iter().for_each(|d| self.subs.push(*d, 0));
            self.subs.flush();
        }
        Ok(())
    }

    /// The query's matches are ignored: every document was collected in `set_segment`.
    fn collect(&mut self, _docs: &[DocId], _parents: &[u32]) {}

    fn finish_segment(&mut self) -> Result<()> {
        self.subs.finish_segment()
    }

    fn build(&mut self, _parent: u32) -> Result<InternalAgg> {
        Ok(InternalAgg::SingleBucket(InternalSingleBucket {
            doc_count: self.doc_count,
            subs: self.subs.build(0)?,
        }))
    }
}

// ---- filters ----

struct FiltersFactory {
    weights: Vec<Option<Arc<dyn Weight>>>,
    other: bool,
}

pub fn filters_factory(filters: &FiltersRequest, ctx: &AggContext) -> Result<Box<dyn Factory>> {
    Ok(Box::new(FiltersFactory {
        weights: filters
            .filters
            .iter()
            .map(|(_, q)| filter_weight(q, ctx))
            .collect::<Result<Vec<_>>>()?,
        other: filters.other_bucket_key.is_some(),
    }))
}

impl Factory for FiltersFactory {
    fn collector(&self, subs: SubCollectors, _single_parent: bool) -> Result<Box<dyn Collector>> {
        Ok(Box::new(FiltersCollector {
            filters: self
                .weights
                .iter()
                .cloned()
                .map(SegmentFilter::new)
                .collect(),
            other: self.other,
            counts: Vec::new(),
            subs,
        }))
    }
}

struct FiltersCollector {
    filters: Vec<SegmentFilter>,
    other: bool,
    /// Bucket ordinal = parent × buckets + filter index (the other bucket last).
    counts: Vec<u64>,
    subs: SubCollectors,
}

impl FiltersCollector {
    fn buckets(&self) -> u32 {
        self.filters.len() as u32 + self.other as u32
    }
}

impl Collector for FiltersCollector {
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        for f in &mut self.filters {
            f.set_segment(segment.reader);
        }
        self.subs.set_segment(segment)
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        let n = self.buckets();
        for (&doc, &parent) in docs.iter().zip(parents) {
            let mut matched = false;
            for i in 0..self.filters.len() {
                if self.filters[i].contains(doc) {
                    matched = true;
                    let ord = parent * n + i as u32;
                    *slot(&mut self.counts, ord) += 1;
                    if !self.subs.is_empty() {
                        self.subs.push(doc, ord);
                    }
                }
            }
            if self.other && !matched {
                let ord = parent * n + n - 1;
                *slot(&mut self.counts, ord) += 1;
                if !self.subs.is_empty() {
                    self.subs.push(doc, ord);
                }
            }
        }
        self.subs.flush();
    }

    fn finish_segment(&mut self) -> Result<()> {
        self.subs.finish_segment()
    }

    fn build(&mut self, parent: u32) -> Result<InternalAgg> {
        let n = self.buckets();
        let mut buckets = Vec::with_capacity(n as usize);
        for i in 0..n {
            let ord = parent.saturating_mul(n).saturating_add(i);
            buckets.push(InternalSingleBucket {
                doc_count: self.counts.get(ord as usize).copied().unwrap_or(0),
                subs: self.subs.build(ord)?,
            });
        }
        Ok(InternalAgg::Filters(InternalFilters { buckets }))
    }
}

// ---- intermediate results ----

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InternalSingleBucket {
    pub doc_count: u64,
    pub subs: InternalAggregations,
}

impl InternalSingleBucket {
    pub fn empty(subs: &[AggRequest]) -> InternalSingleBucket {
        InternalSingleBucket {
            doc_count: 0,
            subs: InternalAggregations::empty(subs),
        }
    }

    pub fn reduce(
        parts: Vec<InternalSingleBucket>,
        request: &AggRequest,
    ) -> Result<InternalSingleBucket> {
        let doc_count = parts.iter().map(|p| p.doc_count).sum();
        let subs = InternalAggregations::reduce(
            parts.into_iter().map(|p| p.subs).collect(),
            &request.subs,
        )?;
        Ok(InternalSingleBucket { doc_count, subs })
    }

    pub fn render(
        self,
        request: &AggRequest,
        ctx: &mut RenderContext,
    ) -> Result<Map<String, Value>> {
        ctx.add_buckets(1)?;
        let mut out = Map::new();
        out.insert("doc_count".into(), json!(self.doc_count));
        render_subs(&mut out, self.subs, &request.subs, ctx)?;
        Ok(out)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InternalFilters {
    /// One per filter in request order (keyed filters sorted by key), then the other bucket.
    pub buckets: Vec<InternalSingleBucket>,
}

impl InternalFilters {
    pub fn empty(filters: &FiltersRequest, subs: &[AggRequest]) -> InternalFilters {
        let n = filters.filters.len() + filters.other_bucket_key.is_some() as usize;
        InternalFilters {
            buckets: (0..n).map(|_| InternalSingleBucket::empty(subs)).collect(),
        }
    }

    pub fn reduce(parts: Vec<InternalFilters>, request: &AggRequest) -> Result<InternalFilters> {
        let n = parts.first().map_or(0, |p| p.buckets.len());
        let mut columns: Vec<Vec<InternalSingleBucket>> = (0..n).map(|_| Vec::new()).collect();
        for part in parts {
            if part.buckets.len() != n {
                return Err(Error::illegal_state(
                    "filters results with different bucket counts",
                ));
            }
            for (column, bucket) in columns.iter_mut().zip(part.buckets) {
                column.push(bucket);
            }
        }
        Ok(InternalFilters {
            buckets: columns
                .into_iter()
                .map(|c| InternalSingleBucket::reduce(c, request))
                .collect::<Result<Vec<_>>>()?,
        })
    }

    pub fn for_each_subs(
        &mut self,
        mut f: impl FnMut(&mut InternalAggregations) -> Result<()>,
    ) -> Result<()> {
        self.buckets.iter_mut().try_for_each(|b| f(&mut b.subs))
    }

    pub fn render(
        self,
        request: &AggRequest,
        ctx: &mut RenderContext,
    ) -> Result<Map<String, Value>> {
        let filters = match &request.kind {
            AggKind::Filters(filters) => filters,
            AggKind::AdjacencyMatrix(matrix) => return matrix.render(self, request, ctx),
            _ => return Err(Error::illegal_state("filters result for another request")),
        };
        let mut rendered = Vec::with_capacity(self.buckets.len());
        for (i, bucket) in self.buckets.into_iter().enumerate() {
            let name = match filters.filters.get(i) {
                Some((key, _)) => key.clone().unwrap_or_else(|| i.to_string()),
                None => filters.other_bucket_key.clone().unwrap_or_default(),
            };
            rendered.push((name, Value::Object(bucket.render(request, ctx)?)));
        }
        Ok(bucket_list(rendered, filters.keyed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::parse_aggregations;
    use serde_json::json;

    #[test]
    fn filters_parse_sorted_with_other_bucket() {
        let aggs = parse_aggregations(&json!({"x": {"filters": {
            "filters": {"b": {"match_all": {}}, "a": {"term": {"k": "x"}}},
            "other_bucket": true
        }}}))
        .unwrap();
        let AggKind::Filters(f) = &aggs[0].kind else {
            panic!()
        };
        assert_eq!(f.filters[0].0.as_deref(), Some("a"));
        assert!(f.keyed);
        assert_eq!(f.other_bucket_key.as_deref(), Some("_other_"));
        let empty = InternalFilters::empty(f, &[]);
        let out = empty.render(&aggs[0], &mut RenderContext::new(10)).unwrap();
        let keys: Vec<&String> = out["buckets"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["a", "b", "_other_"]);
    }

    #[test]
    fn filters_errors() {
        let e = parse_aggregations(&json!({"x": {"filters": {"filters": {}, "bogus": 1}}}))
            .unwrap_err();
        assert_eq!(
            e.reason(),
            "Unknown key for a VALUE_NUMBER in [x]: [bogus]."
        );
        let e = parse_aggregations(&json!({"x": {"filter": {"bogus": {}}}})).unwrap_err();
        assert_eq!(e.reason(), "unknown query [bogus]");
    }
}
