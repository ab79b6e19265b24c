//! Where a nested document sits in its root document: per nested level, the field and the
//! object's offset among its siblings (OpenSearch's `_nested` identity of a nested hit), found
//! from the document's place in its block (see [`crate::nested`]), and the object itself in
//! the root's `_source`. Inner hits and `top_hits` under a `nested` aggregation show both.

use serde_json::{json, Value};
use tantivy::{DocId, SegmentReader};
use tessera_common::{Error, Result};
use tessera_mapping::{FieldTable, NestedMarkers, SourceFilter};

use crate::nested::{level_bits, DocBits, Level};

/// Where a nested document sits: per nested level from the outermost, the field (relative to
/// the level above) and the object's offset among its siblings.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NestedIdentity(pub Vec<(String, usize)>);

impl NestedIdentity {
    /// `{"field": "a", "offset": 0, "_nested": {"field": "b", "offset": 1}}`.
    pub fn render(&self) -> Value {
        let mut rendered: Option<Value> = None;
        for (field, offset) in self.0.iter().rev() {
            let mut level = json!({"field": field, "offset": offset});
            if let Some(inner) = rendered.take() {
                level["_nested"] = inner;
            }
            rendered = Some(level);
        }
        rendered.unwrap_or(Value::Null)
    }

    /// The nested path of the object (`a.b`), its fields joined.
    pub fn path(&self) -> String {
        let fields: Vec<&str> = self.0.iter().map(|(field, _)| field.as_str()).collect();
        fields.join(".")
    }

    /// The nested object in the root document's `source`, filtered by `filter` as OpenSearch
    /// filters a nested hit's source: by full path (`includes: ["c.x"]` keeps `x` of an
    /// object of `c`; `["x"]` keeps nothing). `path` is the nested path of the object.
    pub fn filtered_object(
        &self,
        source: &Value,
        path: &str,
        filter: &SourceFilter,
    ) -> Option<Value> {
        let object = self.object_in(source)?;
        if filter.is_noop() {
            return Some(object.clone());
        }
        let mut wrapped = object.clone();
        for part in path.rsplit('.') {
            wrapped = json!({ part: wrapped });
        }
        let filtered = filter.apply(&wrapped);
        let mut current = &filtered;
        for part in path.split('.') {
            match current.get(part) {
                Some(inner) => current = inner,
                None => return Some(json!({})),
            }
        }
        Some(current.clone())
    }

    /// The nested object in the root document's `source`.
    pub fn object_in<'v>(&self, source: &'v Value) -> Option<&'v Value> {
        let mut current = source;
        for (field, offset) in &self.0 {
            let value = lookup(current, field)?;
            let items = nested_items(value);
            current = items.get(*offset)?;
        }
        Some(current)
    }
}

/// The value at a dotted path of an object (keys may be dotted themselves).
fn lookup<'v>(object: &'v Value, path: &str) -> Option<&'v Value> {
    let map = object.as_object()?;
    if let Some(v) = map.get(path) {
        return Some(v);
    }
    let mut split = path.len();
    while let Some(dot) = path[..split].rfind('.') {
        if let Some(v) = map.get(&path[..dot]) {
            if let Some(found) = lookup(v, &path[dot + 1..]) {
                return Some(found);
            }
        }
        split = dot;
    }
    None
}

/// The objects of a nested field's value in the order the document parser made child
/// documents of them (arrays flattened, nulls and other values skipped).
fn nested_items(value: &Value) -> Vec<&Value> {
    fn push<'v>(value: &'v Value, out: &mut Vec<&'v Value>) {
        match value {
            Value::Object(_) => out.push(value),
            Value::Array(items) => items.iter().for_each(|item| push(item, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    push(value, &mut out);
    out
}

/// The levels of one nested path (the path and those enclosing it), resolved once against a
/// mapping: what finding a nested document's identity and root needs.
#[derive(Clone, Debug)]
pub struct NestedLevels {
    markers: NestedMarkers,
    /// The nested paths, innermost first.
    chain: Vec<String>,
}

impl NestedLevels {
    /// The levels of `path` (`None`: the root level alone).
    pub fn of(table: &FieldTable, path: Option<&str>) -> Result<NestedLevels> {
        let markers = table
            .meta
            .nested
            .ok_or_else(|| Error::illegal_state("no nested markers"))?;
        let mut chain: Vec<String> = path.into_iter().map(String::from).collect();
        while let Some(parent) = chain
            .last()
            .and_then(|last| table.nested_path(last))
            .and_then(|n| n.parent.clone())
        {
            chain.push(parent);
        }
        Ok(NestedLevels { markers, chain })
    }

    fn bits(&self, reader: &SegmentReader, level: Level) -> Result<std::sync::Arc<DocBits>> {
        level_bits(reader, self.markers, &level)
            .map_err(|e| Error::internal("find a nested document's place", e))
    }

    /// The root documents of `reader`'s segment.
    pub fn roots(&self, reader: &SegmentReader) -> Result<std::sync::Arc<DocBits>> {
        self.bits(reader, Level::Root)
    }

    /// The last document before `doc` on the root level or on one of `chain[from..]`.
    fn last_before(
        &self,
        reader: &SegmentReader,
        from: usize,
        doc: DocId,
    ) -> Result<Option<DocId>> {
        let mut last = self.roots(reader)?.prev_set(doc);
        for path in &self.chain[from..] {
            last = last.max(self.bits(reader, Level::Path(path.clone()))?.prev_set(doc));
        }
        Ok(last)
    }

    /// The first of the nested objects of `doc`, a document of the innermost level: they
    /// come right before it, after the last document of its level or of one above.
    pub fn first_child(&self, reader: &SegmentReader, doc: DocId) -> Result<DocId> {
        Ok(self.last_before(reader, 0, doc)?.map_or(0, |d| d + 1))
    }

    /// The identity of the nested document `doc` of the innermost path, from its place in
    /// the block: its offset is the number of documents of its path since the last document
    /// of a level above it.
    pub fn identity(&self, reader: &SegmentReader, doc: DocId) -> Result<NestedIdentity> {
        let chain = &self.chain;
        let mut levels = Vec::new();
        let mut current = doc;
        for (i, level_path) in chain.iter().enumerate() {
            let own = self.bits(reader, Level::Path(level_path.clone()))?;
            // the last document before `current` on a level above this one
            let boundary = self.last_before(reader, i + 1, current)?;
            let mut offset = 0;
            let mut d = own.prev_set(current);
            while let Some(prev) = d {
                if boundary.is_some_and(|b| prev < b) {
                    break;
                }
                offset += 1;
                d = own.prev_set(prev);
            }
            let parent_path = chain.get(i + 1);
            let field = match parent_path {
                Some(p) => level_path[p.len() + 1..].to_string(),
                None => level_path.clone(),
            };
            levels.push((field, offset));
            if let Some(p) = parent_path {
                current = self.bits(reader, Level::Path(p.clone()))?.next_set(current);
            }
        }
        levels.reverse();
        Ok(NestedIdentity(levels))
    }
}

/// The identity of the nested document `doc` of `path` (see [`NestedLevels::identity`]).
pub fn nested_identity(
    table: &FieldTable,
    reader: &SegmentReader,
    doc: DocId,
    path: &str,
) -> Result<NestedIdentity> {
    NestedLevels::of(table, Some(path))?.identity(reader, doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_render_and_find_their_object() {
        let identity = NestedIdentity(vec![("a".into(), 1), ("b".into(), 0)]);
        assert_eq!(
            identity.render(),
            json!({"field": "a", "offset": 1, "_nested": {"field": "b", "offset": 0}})
        );
        let source = json!({"a": [{"b": {"x": 1}}, null, {"b": [{"x": 2}, {"x": 3}]}]});
        assert_eq!(identity.object_in(&source), Some(&json!({"x": 2})));
        let dotted = json!({"a.b": [{"x": 4}]});
        assert_eq!(
            NestedIdentity(vec![("a.b".into(), 0)]).object_in(&dotted),
            Some(&json!({"x": 4}))
        );
    }

    #[test]
    fn a_filter_names_the_full_path() {
        let identity = NestedIdentity(vec![("c".into(), 0)]);
        let source = json!({"c": [{"x": 1, "y": 2}]});
        let filter = |includes: &[&str]| {
            SourceFilter::new(includes.iter().map(|s| s.to_string()).collect(), Vec::new())
        };
        let keep = |includes: &[&str]| identity.filtered_object(&source, "c", &filter(includes));
        assert_eq!(keep(&["c.x"]), Some(json!({"x": 1})));
        assert_eq!(keep(&["x"]), Some(json!({})));
        assert_eq!(keep(&[]), Some(json!({"x": 1, "y": 2})));
    }
}
