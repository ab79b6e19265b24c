//! `missing`: one bucket of the documents that have no value for a field.

use serde_json::{Map, Value};
use tantivy::DocId;
use tessera_common::Result;

use crate::bucket::filter::InternalSingleBucket;
use crate::collector::{Collector, SegmentContext, SubCollectors};
use crate::internal::InternalAgg;
use crate::ords::slot;
use crate::prepare::{AggContext, Factory};
use crate::request::{unknown_field, AggRequest, ValuesSourceParams};
use crate::values::{Accepts, AnyValues, ValueSource};

#[derive(Clone, Debug, PartialEq)]
pub struct MissingRequest {
    pub source: ValuesSourceParams,
}

impl MissingRequest {
    pub fn parse(body: &Map<String, Value>) -> Result<MissingRequest> {
        let mut source = ValuesSourceParams::default();
        for (key, value) in body {
            if !source.accept("missing", key, value)? {
                return Err(unknown_field("missing", key));
            }
        }
        source.require_field_at_parse()?;
        Ok(MissingRequest { source })
    }
}

struct MissingFactory {
    source: ValueSource,
}

pub fn factory(
    _request: &AggRequest,
    missing: &MissingRequest,
    ctx: &AggContext,
) -> Result<Box<dyn Factory>> {
    Ok(Box::new(MissingFactory {
        source: ValueSource::resolve_params(ctx, &missing.source, "missing", Accepts::Counted)?,
    }))
}

impl Factory for MissingFactory {
    fn collector(&self, subs: SubCollectors, _single_parent: bool) -> Result<Box<dyn Collector>> {
        Ok(Box::new(MissingCollector {
            source: self.source.clone(),
            values: AnyValues::Unmapped,
            counts: Vec::new(),
            subs,
            has_value: Vec::new(),
        }))
    }
}

struct MissingCollector {
    source: ValueSource,
    values: AnyValues,
    counts: Vec<u64>,
    subs: SubCollectors,
    has_value: Vec<bool>,
}

impl Collector for MissingCollector {
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        self.values = AnyValues::open(&self.source, segment.reader)?;
        self.subs.set_segment(segment)
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        let has_value = &mut self.has_value;
        has_value.clear();
        has_value.resize(docs.len(), false);
        self.values.for_each_value(docs, |p| has_value[p] = true);
        for (position, (&doc, &parent)) in docs.iter().zip(parents).enumerate() {
            if !self.has_value[position] {
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
