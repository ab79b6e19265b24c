//! `adjacency_matrix`: a bucket per named filter and per pair of filters (`a&b`: documents
//! matching both), for graphs of how groups overlap.
//!
//! The collector tests each filter once per document (bit sets per segment, as `filters`) and
//! counts the filter's bucket and the pair buckets of every two filters that match; the
//! intermediate result is `filters`' (`n + n(n−1)/2` buckets in a fixed order), and rendering
//! drops the empty buckets and sorts by key, as OpenSearch does.

use std::sync::Arc;

use serde_json::{Map, Value};
use tantivy::query::Weight;
use tantivy::DocId;
use tessera_common::{Error, Result};
use tessera_query::{parse_query, QueryAst};

use crate::bucket::filter::{filter_weight, InternalFilters, InternalSingleBucket, SegmentFilter};
use crate::bucket::token;
use crate::collector::{Collector, SegmentContext, SubCollectors};
use crate::internal::{InternalAgg, RenderContext};
use crate::ords::slot;
use crate::prepare::{AggContext, Factory};
use crate::request::{string_param, unknown_field, AggRequest};

const AGG: &str = "adjacency_matrix";
/// `index.max_adjacency_matrix_filters`' default.
pub const MAX_FILTERS: usize = 100;

#[derive(Clone, Debug, PartialEq)]
pub struct AdjacencyMatrixRequest {
    /// `(name, query)`, sorted by name.
    pub filters: Vec<(String, QueryAst)>,
    pub separator: String,
}

impl AdjacencyMatrixRequest {
    pub fn parse(name: &str, body: &Map<String, Value>) -> Result<AdjacencyMatrixRequest> {
        let mut filters = None;
        let mut separator = "&".to_string();
        for (key, value) in body {
            match key.as_str() {
                "filters" => match value {
                    Value::Object(named) => {
                        let mut list = named
                            .iter()
                            .map(|(k, q)| Ok((k.clone(), parse_query(q)?)))
                            .collect::<Result<Vec<_>>>()?;
                        list.sort_by(|a, b| a.0.cmp(&b.0));
                        filters = Some(list);
                    }
                    Value::Array(_) => {
                        return Err(Error::x_content_parse(format!(
                            "[{AGG}] failed to parse field [filters]"
                        ))
                        .caused_by(Error::illegal_argument(
                            "[filters] doesn't support arrays. Use a single object with multiple fields.",
                        )))
                    }
                    other => {
                        return Err(Error::x_content_parse(format!(
                            "[{AGG}] filters doesn't support values of type: {}",
                            token(other)
                        )))
                    }
                },
                "separator" => separator = string_param(AGG, key, value)?,
                _ => return Err(unknown_field(AGG, key)),
            }
        }
        // OpenSearch answers this with a 500 (an illegal state); it is the request's fault
        let filters = filters.ok_or_else(|| {
            Error::illegal_argument(format!("[{name}] is missing : filters parameter"))
        })?;
        if filters.len() > MAX_FILTERS {
            return Err(Error::illegal_argument(format!(
                "Number of filters is too large, must be less than or equal to: [{MAX_FILTERS}] but was [{}].This limit can be set by changing the [index.max_adjacency_matrix_filters] index level setting.",
                filters.len()
            )));
        }
        Ok(AdjacencyMatrixRequest { filters, separator })
    }

    /// Bucket count: every filter, then every pair.
    fn buckets(&self) -> usize {
        let n = self.filters.len();
        n + n * n.saturating_sub(1) / 2
    }

    /// The keys of the buckets in their fixed order: `a`, `a&b`, `a&c`, ..., `b`, `b&c`, ...
    fn keys(&self) -> Vec<String> {
        let mut keys = Vec::with_capacity(self.buckets());
        for (i, (a, _)) in self.filters.iter().enumerate() {
            keys.push(a.clone());
            for (b, _) in &self.filters[i + 1..] {
                keys.push(format!("{a}{}{b}", self.separator));
            }
        }
        keys
    }

    pub fn empty(&self, subs: &[AggRequest]) -> InternalFilters {
        InternalFilters {
            buckets: (0..self.buckets())
                .map(|_| InternalSingleBucket::empty(subs))
                .collect(),
        }
    }

    /// The non-empty buckets, sorted by key.
    pub fn render(
        &self,
        result: InternalFilters,
        request: &AggRequest,
        ctx: &mut RenderContext,
    ) -> Result<Map<String, Value>> {
        let mut buckets: Vec<(String, InternalSingleBucket)> = self
            .keys()
            .into_iter()
            .zip(result.buckets)
            .filter(|(_, bucket)| bucket.doc_count > 0)
            .collect();
        buckets.sort_by(|a, b| a.0.cmp(&b.0));
        let mut rendered = Vec::with_capacity(buckets.len());
        for (key, bucket) in buckets {
            let mut out = Map::new();
            out.insert("key".into(), Value::String(key));
            out.extend(bucket.render(request, ctx)?);
            rendered.push(Value::Object(out));
        }
        let mut out = Map::new();
        out.insert("buckets".into(), Value::Array(rendered));
        Ok(out)
    }
}

pub fn factory(matrix: &AdjacencyMatrixRequest, ctx: &AggContext) -> Result<Box<dyn Factory>> {
    Ok(Box::new(AdjacencyFactory {
        weights: matrix
            .filters
            .iter()
            .map(|(_, q)| filter_weight(q, ctx))
            .collect::<Result<Vec<_>>>()?,
    }))
}

struct AdjacencyFactory {
    weights: Vec<Option<Arc<dyn Weight>>>,
}

impl Factory for AdjacencyFactory {
    fn collector(&self, subs: SubCollectors, _single_parent: bool) -> Result<Box<dyn Collector>> {
        let n = self.weights.len() as u32;
        Ok(Box::new(AdjacencyCollector {
            filters: self
                .weights
                .iter()
                .cloned()
                .map(SegmentFilter::new)
                .collect(),
            row_start: (0..n).map(|i| (0..i).map(|r| n - r).sum()).collect(),
            matched: Vec::new(),
            counts: Vec::new(),
            subs,
        }))
    }
}

struct AdjacencyCollector {
    filters: Vec<SegmentFilter>,
    /// The index of each filter's own bucket (its row of pairs follows it).
    row_start: Vec<u32>,
    /// The filters the current document matches.
    matched: Vec<usize>,
    /// Bucket ordinal = parent × buckets + bucket index.
    counts: Vec<u64>,
    subs: SubCollectors,
}

impl AdjacencyCollector {
    fn buckets(&self) -> u32 {
        let n = self.filters.len() as u32;
        n + n * n.saturating_sub(1) / 2
    }

    /// The index of bucket `i` (`j == i`) or of the pair `(i, j)`, `i < j`, in
    /// [`AdjacencyMatrixRequest::keys`]' order: row `i` starts after the rows before it, each
    /// holding its filter and its pairs with the later filters.
    fn index(&self, i: usize, j: usize) -> u32 {
        self.row_start[i] + (j - i) as u32
    }
}

impl Collector for AdjacencyCollector {
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        for filter in &mut self.filters {
            filter.set_segment(segment.reader);
        }
        self.subs.set_segment(segment)
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        let n = self.buckets();
        for (&doc, &parent) in docs.iter().zip(parents) {
            self.matched.clear();
            for (i, filter) in self.filters.iter_mut().enumerate() {
                if filter.contains(doc) {
                    self.matched.push(i);
                }
            }
            for (a, &i) in self.matched.iter().enumerate() {
                for &j in &self.matched[a..] {
                    let ord = parent * n + self.index(i, j);
                    *slot(&mut self.counts, ord) += 1;
                    if !self.subs.is_empty() {
                        self.subs.push(doc, ord);
                    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(body: Value) -> Result<AdjacencyMatrixRequest> {
        AdjacencyMatrixRequest::parse("r", body.as_object().unwrap())
    }

    #[test]
    fn keys_follow_the_bucket_order() {
        let matrix = parse(
            json!({"filters": {"c": {"match_all": {}}, "a": {"match_all": {}},
            "b": {"match_all": {}}}, "separator": "+"}),
        )
        .unwrap();
        assert_eq!(matrix.keys(), ["a", "a+b", "a+c", "b", "b+c", "c"]);
        let collector = AdjacencyCollector {
            filters: (0..3).map(|_| SegmentFilter::new(None)).collect(),
            row_start: vec![0, 3, 5],
            matched: Vec::new(),
            counts: Vec::new(),
            subs: SubCollectors::new(Vec::new()),
        };
        let keys = matrix.keys();
        assert_eq!(keys[collector.index(0, 2) as usize], "a+c");
        assert_eq!(keys[collector.index(1, 1) as usize], "b");
        assert_eq!(keys[collector.index(1, 2) as usize], "b+c");
        assert_eq!(keys[collector.index(2, 2) as usize], "c");
    }

    #[test]
    fn parse_errors() {
        let arrays = parse(json!({"filters": [{"match_all": {}}]})).unwrap_err();
        assert!(format!("{arrays:?}").contains("[filters] doesn't support arrays"));
        let missing = parse(json!({})).unwrap_err();
        assert_eq!(missing.status(), 400);
        let unknown = parse(json!({"filters": {}, "foo": 1})).unwrap_err();
        assert!(format!("{unknown:?}").contains("unknown field [foo]"));
    }
}
