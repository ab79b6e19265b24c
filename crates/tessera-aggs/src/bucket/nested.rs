//! `nested` and `reverse_nested`: single-bucket aggregations that move between the levels of
//! a document block (see `tessera_query::nested`).
//!
//! `nested` hands its sub-aggregations, for each document it collects, the nested children of
//! its path in that document's block (those after the last document of the collecting level or
//! a level above it); `reverse_nested` hands them, for each nested document, its parent on the
//! target level (the root documents by default), each parent once per bucket. Both count what
//! they hand down. A path that is not mapped counts nothing, as in OpenSearch.

use std::sync::Arc;

use serde_json::Value;
use tantivy::{DocId, SegmentReader, TERMINATED};
use tessera_common::{Error, Result};
use tessera_mapping::{FieldTable, NestedMarkers};
use tessera_query::nested::{level_bits, DocBits, Level};

use crate::bucket::filter::InternalSingleBucket;
use crate::collector::{Collector, SegmentContext, SubCollectors};
use crate::internal::InternalAgg;
use crate::ords::slot;
use crate::prepare::Factory;

/// `nested`: `path`.
#[derive(Clone, Debug, PartialEq)]
pub struct NestedRequest {
    pub path: String,
}

/// `reverse_nested`: an optional `path` (the root documents without one).
#[derive(Clone, Debug, PartialEq)]
pub struct ReverseNestedRequest {
    pub path: Option<String>,
}

fn unexpected(name: &str, value: &Value) -> Error {
    Error::parsing(format!(
        "Unexpected token {} in [{name}].",
        tessera_common::error::json_token(value)
    ))
}

impl NestedRequest {
    pub fn parse(name: &str, body: &Value) -> Result<NestedRequest> {
        let mut path = None;
        let Value::Object(options) = body else {
            return Err(unexpected(name, body));
        };
        for (key, value) in options {
            match (key.as_str(), value) {
                ("path", Value::String(p)) => path = Some(p.clone()),
                _ => return Err(unexpected(name, value)),
            }
        }
        let path = path.ok_or_else(|| {
            Error::parsing(format!(
                "Missing [path] field for nested aggregation [{name}]"
            ))
        })?;
        Ok(NestedRequest { path })
    }
}

impl ReverseNestedRequest {
    pub fn parse(name: &str, body: &Value) -> Result<ReverseNestedRequest> {
        let mut path = None;
        let Value::Object(options) = body else {
            return Err(unexpected(name, body));
        };
        for (key, value) in options {
            match (key.as_str(), value) {
                ("path", Value::String(p)) => path = Some(p.clone()),
                _ => return Err(unexpected(name, value)),
            }
        }
        Ok(ReverseNestedRequest { path })
    }
}

/// The levels a block boundary is made of for documents collected at `scope`: that level and
/// every level above it.
fn levels_from(table: &FieldTable, scope: Option<&str>) -> Vec<Level> {
    let mut levels = vec![Level::Root];
    let mut current = scope.map(String::from);
    while let Some(path) = current {
        current = table.nested_path(&path).and_then(|n| n.parent.clone());
        levels.push(Level::Path(path));
    }
    levels
}

/// The `nested` aggregation's factory; `scope` is the nested path of the documents it
/// collects (`None`: root documents).
pub fn nested_factory(
    name: &str,
    request: &NestedRequest,
    table: &FieldTable,
    scope: Option<&str>,
) -> Result<Box<dyn Factory>> {
    let target = match (table.nested_path(&request.path), table.meta.nested) {
        (Some(_), Some(markers)) => Some((markers, Level::Path(request.path.clone()))),
        _ => {
            let is_object = table.leaves().any(|leaf| {
                leaf.path.starts_with(&request.path)
                    && leaf.path.as_bytes().get(request.path.len()) == Some(&b'.')
            });
            if is_object {
                return Err(Error::new(
                    "aggregation_execution_exception",
                    400,
                    format!("[nested] nested path [{}] is not nested", request.path),
                ));
            }
            None
        }
    };
    let _ = name;
    Ok(Box::new(NestedFactory {
        target,
        boundary: levels_from(table, scope),
    }))
}

struct NestedFactory {
    /// The markers and the children's level; `None` for an unmapped path.
    target: Option<(NestedMarkers, Level)>,
    boundary: Vec<Level>,
}

impl Factory for NestedFactory {
    fn collector(&self, subs: SubCollectors, _single_parent: bool) -> Result<Box<dyn Collector>> {
        Ok(Box::new(NestedCollector {
            target: self.target.clone(),
            boundary_levels: self.boundary.clone(),
            children: None,
            boundary: Vec::new(),
            counts: Vec::new(),
            subs,
        }))
    }
}

fn bits(reader: &SegmentReader, markers: NestedMarkers, level: &Level) -> Result<Arc<DocBits>> {
    level_bits(reader, markers, level).map_err(|e| Error::internal("read the nested documents", e))
}

struct NestedCollector {
    target: Option<(NestedMarkers, Level)>,
    boundary_levels: Vec<Level>,
    children: Option<Arc<DocBits>>,
    boundary: Vec<Arc<DocBits>>,
    counts: Vec<u64>,
    subs: SubCollectors,
}

impl Collector for NestedCollector {
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        self.children = None;
        self.boundary.clear();
        if let Some((markers, level)) = &self.target {
            self.children = Some(bits(segment.reader, *markers, level)?);
            for level in &self.boundary_levels {
                self.boundary.push(bits(segment.reader, *markers, level)?);
            }
        }
        self.subs.set_segment(segment)
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        let Some(children) = &self.children else {
            return;
        };
        for (&doc, &parent) in docs.iter().zip(parents) {
            let start = self
                .boundary
                .iter()
                .filter_map(|b| b.prev_set(doc))
                .max()
                .map_or(0, |d| d + 1);
            let mut child = children.next_set(start);
            while child != TERMINATED && child < doc {
                *slot(&mut self.counts, parent) += 1;
                if !self.subs.is_empty() {
                    self.subs.push(child, parent);
                }
                child = children.next_set(child + 1);
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

/// The `reverse_nested` aggregation's factory, under a `nested` aggregation of `scope`.
pub fn reverse_nested_factory(
    name: &str,
    request: &ReverseNestedRequest,
    table: &FieldTable,
    scope: Option<&str>,
) -> Result<Box<dyn Factory>> {
    if scope.is_none() {
        return Err(Error::illegal_argument(format!(
            "Reverse nested aggregation [{name}] can only be used inside a [nested] aggregation"
        )));
    }
    let target = match (&request.path, table.meta.nested) {
        (_, None) => None,
        (None, Some(markers)) => Some((markers, Level::Root)),
        (Some(path), Some(markers)) => table
            .nested_path(path)
            .map(|_| (markers, Level::Path(path.clone()))),
    };
    Ok(Box::new(ReverseNestedFactory { target }))
}

struct ReverseNestedFactory {
    target: Option<(NestedMarkers, Level)>,
}

impl Factory for ReverseNestedFactory {
    fn collector(&self, subs: SubCollectors, _single_parent: bool) -> Result<Box<dyn Collector>> {
        Ok(Box::new(ReverseNestedCollector {
            target: self.target.clone(),
            parents_bits: None,
            last: Vec::new(),
            counts: Vec::new(),
            subs,
        }))
    }
}

struct ReverseNestedCollector {
    target: Option<(NestedMarkers, Level)>,
    parents_bits: Option<Arc<DocBits>>,
    /// Per bucket, the last parent handed down in this segment (each parent counts once).
    last: Vec<DocId>,
    counts: Vec<u64>,
    subs: SubCollectors,
}

impl Collector for ReverseNestedCollector {
    fn set_segment(&mut self, segment: &SegmentContext) -> Result<()> {
        self.parents_bits = match &self.target {
            Some((markers, level)) => Some(bits(segment.reader, *markers, level)?),
            None => None,
        };
        self.last.clear();
        self.subs.set_segment(segment)
    }

    fn collect(&mut self, docs: &[DocId], parents: &[u32]) {
        let Some(targets) = &self.parents_bits else {
            return;
        };
        for (&doc, &bucket) in docs.iter().zip(parents) {
            let parent = targets.next_set(doc);
            if parent == TERMINATED {
                continue;
            }
            let index = bucket as usize;
            if self.last.len() <= index {
                self.last.resize(index + 1, TERMINATED);
            }
            if self.last[index] == parent {
                continue;
            }
            self.last[index] = parent;
            *slot(&mut self.counts, bucket) += 1;
            if !self.subs.is_empty() {
                self.subs.push(parent, bucket);
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_nested_and_reverse_nested() {
        assert_eq!(
            NestedRequest::parse("x", &json!({"path": "c"}))
                .unwrap()
                .path,
            "c"
        );
        assert_eq!(
            NestedRequest::parse("x", &json!({})).unwrap_err().reason(),
            "Missing [path] field for nested aggregation [x]"
        );
        assert_eq!(
            NestedRequest::parse("x", &json!({"path": "c", "bogus": 1}))
                .unwrap_err()
                .reason(),
            "Unexpected token VALUE_NUMBER in [x]."
        );
        assert_eq!(
            ReverseNestedRequest::parse("r", &json!({})).unwrap().path,
            None
        );
    }
}
