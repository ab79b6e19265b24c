//! `rare_terms`: the terms that occur in at most `max_doc_count` documents, rarest first.
//!
//! The collection is `terms`' (the same collectors, include/exclude and `missing`), keeping
//! every term; the result then splits into the rare buckets and the keys of the *frequent*
//! terms, those seen in more than `max_doc_count` documents. A term frequent anywhere can never
//! be rare, so every reduce (slices, shards) unions the frequent keys, drops the buckets whose
//! key is among them, and moves buckets that grew past `max_doc_count` there. OpenSearch keeps
//! the frequent terms in an approximate cuckoo filter whose false positives can drop a rare
//! term (`precision`); Tessera keeps the keys themselves, so the answer is exact and
//! `precision` has nothing to tune (it is validated and accepted).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tantivy::{DocId, SegmentReader};
use tessera_common::{Error, Result};

use crate::bucket::order::{BucketOrder, OrderKey};
use crate::bucket::terms::{
    factory as terms_factory, parse_include, InternalTerms, TermFilterSpec, TermKey, TermsRequest,
    TermsValueType,
};
use crate::collector::{Collector, SegmentContext, SortedSegment, SubCollectors};
use crate::internal::{InternalAgg, RenderContext, ShardFinish};
use crate::prepare::{AggContext, Factory};
use crate::request::{
    f64_param, int_param, unknown_field, AggKind, AggRequest, ValuesSourceParams,
};
use crate::values::{Accepts, NumericKind, ValueSource};

const AGG: &str = "rare_terms";
/// OpenSearch's largest `max_doc_count`.
const MAX_MAX_DOC_COUNT: i64 = 100;

#[derive(Clone, Debug, PartialEq)]
pub struct RareTermsRequest {
    /// The collection: every term, ordered by count then key.
    pub terms: TermsRequest,
    pub max_doc_count: u64,
}

fn field_error(key: &str, cause: Error) -> Error {
    Error::x_content_parse(format!("[{AGG}] failed to parse field [{key}]")).caused_by(cause)
}

impl RareTermsRequest {
    pub fn parse(name: &str, body: &Map<String, Value>) -> Result<RareTermsRequest> {
        let mut source = ValuesSourceParams::default();
        let mut filter = TermFilterSpec::default();
        let mut max_doc_count = 1;
        for (key, value) in body {
            if source.accept(AGG, key, value)? {
                continue;
            }
            match key.as_str() {
                "include" => parse_include(AGG, &mut filter, value, true)?,
                "exclude" => parse_include(AGG, &mut filter, value, false)?,
                "max_doc_count" => {
                    let n = int_param(AGG, key, value)?;
                    if n <= 0 {
                        return Err(field_error(
                            key,
                            Error::illegal_argument(format!(
                                "[max_doc_count] must be greater than 0. Found [{n}] in [{name}]"
                            )),
                        ));
                    }
                    if n > MAX_MAX_DOC_COUNT {
                        // OpenSearch's message, spacing included
                        return Err(field_error(
                            key,
                            Error::illegal_argument(format!(
                                "[max_doc_count] must be smallerthan {MAX_MAX_DOC_COUNT}in [{name}]"
                            )),
                        ));
                    }
                    max_doc_count = n as u64;
                }
                "precision" => {
                    let p = f64_param(AGG, key, value)?;
                    if p.is_nan() || p < 0.00001 {
                        return Err(field_error(
                            key,
                            Error::illegal_argument(format!(
                                "[precision] must be greater than 0.00001. Found [{p}] in [{name}]"
                            )),
                        ));
                    }
                }
                _ => return Err(unknown_field(AGG, key)),
            }
        }
        source.require_field_at_parse()?;
        Ok(RareTermsRequest {
            terms: TermsRequest {
                source,
                size: usize::MAX,
                shard_size: Some(usize::MAX),
                min_doc_count: 1,
                shard_min_doc_count: 0,
                order: BucketOrder {
                    criteria: vec![(OrderKey::Count, true), (OrderKey::Key, true)],
                },
                filter,
                show_term_doc_count_error: false,
            },
            max_doc_count,
        })
    }
}

pub fn factory(
    request: &AggRequest,
    rare: &RareTermsRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    let source = ValueSource::resolve_params(ctx, &rare.terms.source, AGG, Accepts::Any)?;
    // a value script on a numeric field reads doubles (OpenSearch's numeric script source is
    // always floating point)
    let value_script_on_number =
        matches!(&source, ValueSource::Script(script) if script.field_kind.is_some());
    if value_script_on_number
        || matches!(
            source.numeric_kind(),
            Some(NumericKind::Double | NumericKind::Scaled(_))
        )
    {
        return Err(Error::illegal_argument(
            "RareTerms aggregation does not support floating point fields.",
        ));
    }
    Ok(Box::new(RareTermsFactory {
        terms: terms_factory(request, &rare.terms, ctx)?,
        max_doc_count: rare.max_doc_count,
        unmapped: matches!(source, ValueSource::Unmapped),
    }))
}

struct RareTermsFactory {
    terms: Box<dyn Factory>,
    max_doc_count: u64,
    unmapped: bool,
}

impl Factory for RareTermsFactory {
    fn collector(&self, subs: SubCollectors, single_parent: bool) -> Result<Box<dyn Collector>> {
        Ok(Box::new(RareTermsCollector {
            terms: self.terms.collector(subs, single_parent)?,
            max_doc_count: self.max_doc_count,
            unmapped: self.unmapped,
        }))
    }
}

/// `terms`' collector, its result split into rare buckets and frequent keys.
struct RareTermsCollector {
    terms: Box<dyn Collector>,
    max_doc_count: u64,
    unmapped: bool,
}

impl Collector for RareTermsCollector {
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        self.terms.set_segment(segment)
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        self.terms.collect(docs, parents)
    }

    fn sorted_field(&self) -> Option<&str> {
        self.terms.sorted_field()
    }

    fn collect_sorted(&mut self, segment: &SortedSegment) {
        self.terms.collect_sorted(segment)
    }

    fn dictionary_field(&self) -> Option<&str> {
        self.terms.dictionary_field()
    }

    fn collect_from_dictionary(&mut self, segment: &SegmentReader) -> Result<bool> {
        self.terms.collect_from_dictionary(segment)
    }

    fn finish_segment(&mut self) -> Result<()> {
        self.terms.finish_segment()
    }

    fn build(&mut self, parent: u32) -> Result<InternalAgg> {
        let InternalAgg::Terms(terms) = self.terms.build(parent)? else {
            return Err(Error::illegal_state("rare_terms over a non-terms result"));
        };
        let mut rare = InternalRareTerms {
            terms,
            frequent: BTreeSet::new(),
            unmapped: self.unmapped,
        };
        rare.split(self.max_doc_count);
        Ok(InternalAgg::RareTerms(rare))
    }
}

// ---- intermediate result ----

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InternalRareTerms {
    /// The rare buckets.
    pub terms: InternalTerms,
    /// Keys seen in more than `max_doc_count` documents somewhere.
    pub frequent: BTreeSet<TermKey>,
    /// The field is unmapped everywhere (OpenSearch then names the result `sterms`).
    pub unmapped: bool,
}

fn request_of(request: &AggRequest) -> Result<&RareTermsRequest> {
    match &request.kind {
        AggKind::RareTerms(r) => Ok(r),
        _ => Err(Error::illegal_state(
            "rare_terms result for another request",
        )),
    }
}

impl InternalRareTerms {
    pub fn empty() -> InternalRareTerms {
        InternalRareTerms {
            unmapped: true,
            ..InternalRareTerms::default()
        }
    }

    /// Moves buckets past `max_doc_count` to the frequent keys and drops buckets whose key is
    /// frequent.
    fn split(&mut self, max_doc_count: u64) {
        let frequent = &mut self.frequent;
        self.terms.buckets.retain(|bucket| {
            if bucket.doc_count > max_doc_count {
                frequent.insert(bucket.key.clone());
            }
            !frequent.contains(&bucket.key)
        });
    }

    pub fn reduce(
        parts: Vec<InternalRareTerms>,
        request: &AggRequest,
    ) -> Result<InternalRareTerms> {
        let max_doc_count = request_of(request)?.max_doc_count;
        let unmapped = parts.iter().all(|p| p.unmapped);
        let mut frequent = BTreeSet::new();
        let mut terms = Vec::with_capacity(parts.len());
        for part in parts {
            frequent.extend(part.frequent);
            terms.push(part.terms);
        }
        let mut reduced = InternalRareTerms {
            terms: InternalTerms::reduce(terms, request)?,
            frequent,
            unmapped,
        };
        reduced.split(max_doc_count);
        Ok(reduced)
    }

    pub fn finish_shard(&mut self, request: &AggRequest, ctx: &ShardFinish) -> Result<()> {
        for bucket in &mut self.terms.buckets {
            bucket.subs.finish_shard(&request.subs, ctx)?;
        }
        Ok(())
    }

    /// `rare_terms` results have only `buckets`, rarest first, then by key.
    pub fn render(
        self,
        request: &AggRequest,
        ctx: &mut RenderContext,
    ) -> Result<Map<String, Value>> {
        let mut out = self.terms.render(request, ctx)?;
        out.remove("doc_count_error_upper_bound");
        out.remove("sum_other_doc_count");
        Ok(out)
    }

    pub fn typed_name(&self) -> &'static str {
        match (self.unmapped, self.terms.value_type) {
            (true, _) => "sterms",
            (false, TermsValueType::Long) => "lrareterms",
            (false, _) => "srareterms",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bucket::terms::TermsBucket;
    use crate::internal::InternalAggregations;
    use crate::request::parse_aggregations;
    use serde_json::json;

    fn request(max_doc_count: u64) -> AggRequest {
        parse_aggregations(
            &json!({"r": {"rare_terms": {"field": "g", "max_doc_count": max_doc_count}}}),
        )
        .unwrap()
        .remove(0)
    }

    fn part(counts: &[(&str, u64)], max_doc_count: u64) -> InternalRareTerms {
        let mut rare = InternalRareTerms {
            terms: InternalTerms {
                buckets: counts
                    .iter()
                    .map(|&(key, doc_count)| TermsBucket {
                        key: TermKey::Str(key.into()),
                        doc_count,
                        doc_count_error: 0,
                        subs: InternalAggregations::default(),
                        first_seen: u64::MAX,
                    })
                    .collect(),
                ..InternalTerms::default()
            },
            frequent: BTreeSet::new(),
            unmapped: false,
        };
        rare.split(max_doc_count);
        rare
    }

    fn keys(rare: &InternalRareTerms) -> Vec<String> {
        rare.terms
            .buckets
            .iter()
            .map(|b| match &b.key {
                TermKey::Str(s) => s.clone(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn a_term_frequent_on_one_shard_is_never_rare() {
        // "a" is frequent on the first shard and rare on the second: it must not come back
        let first = part(&[("a", 3), ("b", 1)], 1);
        let second = part(&[("a", 1), ("c", 1), ("b", 1)], 1);
        assert_eq!(keys(&first), ["b"]);
        let reduced = InternalRareTerms::reduce(vec![first, second], &request(1)).unwrap();
        // "b" became frequent by summing; "c" stays
        assert_eq!(keys(&reduced), ["c"]);
        assert!(reduced.frequent.contains(&TermKey::Str("a".into())));
        assert!(reduced.frequent.contains(&TermKey::Str("b".into())));
    }

    #[test]
    fn renders_only_buckets_rarest_first() {
        let rare = part(&[("z", 1), ("a", 3), ("m", 1), ("q", 2)], 3);
        let mut ctx = RenderContext::new(1000);
        let out = rare.render(&request(3), &mut ctx).unwrap();
        assert_eq!(out.keys().collect::<Vec<_>>(), ["buckets"]);
        let order: Vec<_> = out["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["key"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(order, ["m", "z", "q", "a"]);
    }

    #[test]
    fn parse_errors_are_opensearch_s() {
        let err = |body: Value| {
            let e = RareTermsRequest::parse("r", body.as_object().unwrap()).unwrap_err();
            format!("{e:?}")
        };
        assert!(err(json!({"field": "n", "max_doc_count": 101}))
            .contains("[max_doc_count] must be smallerthan 100in [r]"));
        assert!(err(json!({"field": "n", "max_doc_count": 0}))
            .contains("[max_doc_count] must be greater than 0. Found [0] in [r]"));
        assert!(err(json!({"field": "g", "size": 3})).contains("unknown field [size]"));
    }
}
