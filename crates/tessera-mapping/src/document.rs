//! Parsing a JSON document into a tantivy document, following the mapping.
//!
//! One walk over the source does two jobs: it converts every mapped value (with coercion and
//! OpenSearch's errors), and it collects the mapping of fields it has never seen when `dynamic`
//! allows them. If it found new fields, the caller merges them into the index mapping (and the
//! shard schemas) and parses again — new fields are rare, so the common path is one walk.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::Value;
use tantivy::TantivyDocument;
use tessera_common::{Error, Result};

use crate::dynamic::infer_field;
use crate::field_table::{FieldTable, LeafField, LeafKind};
use crate::field_type::{Dynamic, FieldType};
use crate::json::Json;
use crate::mapping::{plain, FieldMapping, Mapping};
use crate::range::{self, RangeBounds};
use crate::values;

/// What parsing a document produced.
pub enum ParseOutcome {
    /// The document, ready to index (metadata fields are added by the shard).
    Document(TantivyDocument),
    /// A document with `nested` objects: their hidden child documents (each before its own
    /// parent, see `tessera_query::nested`) and the root document, indexed together in this
    /// order.
    Block {
        nested: Vec<TantivyDocument>,
        doc: TantivyDocument,
    },
    /// The document has fields the mapping lacks: merge these properties, then parse again.
    MappingUpdate(BTreeMap<String, FieldMapping>),
}

impl ParseOutcome {
    /// The document and its nested children (empty without nested objects); `None` for a
    /// mapping update.
    pub fn into_block(self) -> Option<(Vec<TantivyDocument>, TantivyDocument)> {
        match self {
            ParseOutcome::Document(doc) => Some((Vec::new(), doc)),
            ParseOutcome::Block { nested, doc } => Some((nested, doc)),
            ParseOutcome::MappingUpdate(_) => None,
        }
    }
}

const METADATA: &[&str] = &[
    "_id",
    "_index",
    "_source",
    "_routing",
    "_seq_no",
    "_version",
    "_primary_term",
    "_field_names",
    "_ignored",
];

/// Parses `source` (the document body) for the document `id`.
pub fn parse_document(
    mapping: &Mapping,
    table: &FieldTable,
    id: &str,
    source: &Value,
) -> Result<ParseOutcome> {
    parse_json_document(mapping, table, id, &Json::from_value(source))
}

/// [`parse_document`] on a borrowed JSON tree (the write path's form).
pub fn parse_json_document(
    mapping: &Mapping,
    table: &FieldTable,
    id: &str,
    source: &Json,
) -> Result<ParseOutcome> {
    let Json::Object(root) = source else {
        return Err(Error::mapper_parsing("failed to parse, document is empty"));
    };
    let mut walker = Walker::new(mapping, table, id, false);
    if table.completion_paths {
        walker.root = Some(source.to_value());
    }
    walker.object(root, "", Some(&mapping.properties), mapping.dynamic)?;
    if !walker.updates.is_empty() {
        return Ok(ParseOutcome::MappingUpdate(walker.updates));
    }
    if let Some(timestamp) = &mapping.data_stream_timestamp {
        check_data_stream_timestamp(table, &walker.doc, timestamp)?;
    }
    let (nested, doc) = walker.finish();
    if nested.is_empty() {
        Ok(ParseOutcome::Document(doc))
    } else {
        Ok(ParseOutcome::Block { nested, doc })
    }
}

/// Parses a document logged in the translog, for replay: it was acknowledged, so whatever the
/// mapping became since (`dynamic` switched on, a field mapped with another type, a lower
/// limit) it is indexed again without failing. Fields the current mapping cannot take are left
/// out of the index (they stay in `_source`); a document that cannot be walked at all is
/// indexed with its metadata fields only, so it is never lost.
///
/// Answers the nested children (in indexing order) and the root document.
pub fn parse_document_for_replay(
    mapping: &Mapping,
    table: &FieldTable,
    id: &str,
    source: &Json,
) -> (Vec<TantivyDocument>, TantivyDocument) {
    let Json::Object(root) = source else {
        return (Vec::new(), TantivyDocument::new());
    };
    let mut walker = Walker::new(mapping, table, id, true);
    if table.completion_paths {
        walker.root = Some(source.to_value());
    }
    match walker.object(root, "", Some(&mapping.properties), mapping.dynamic) {
        Ok(()) => walker.finish(),
        Err(_) => (Vec::new(), TantivyDocument::new()),
    }
}

impl<'a> Walker<'a> {
    fn new(mapping: &'a Mapping, table: &'a FieldTable, id: &'a str, lenient: bool) -> Self {
        Walker {
            mapping,
            table,
            id,
            doc: TantivyDocument::new(),
            updates: BTreeMap::new(),
            field_names: Vec::new(),
            lenient,
            nested: Vec::new(),
            outer: Vec::new(),
            flattening: 0,
            root: None,
        }
    }

    /// The nested children and the document, each with its `_field_names`.
    fn finish(mut self) -> (Vec<TantivyDocument>, TantivyDocument) {
        let mut doc = std::mem::take(&mut self.doc);
        let field_names = std::mem::take(&mut self.field_names);
        self.add_field_names(&mut doc, field_names);
        (self.nested, doc)
    }

    fn add_field_names(&self, doc: &mut TantivyDocument, mut field_names: Vec<&'a str>) {
        field_names.sort_unstable();
        field_names.dedup();
        for name in field_names {
            doc.add_text(self.table.meta.field_names, name);
        }
    }

    /// A `nested` field's value: each object becomes a child document (its own nested
    /// objects before it), added to `self.nested`; `include_in_parent`/`include_in_root`
    /// index its values again in the enclosing or the root document.
    fn nested_value(
        &mut self,
        path: &str,
        name: &str,
        value: &Json,
        field: &'a FieldMapping,
        dynamic: Dynamic,
    ) -> Result<()> {
        let items: &[Json] = match value {
            Json::Array(items) => items,
            Json::Null => return Ok(()),
            single => std::slice::from_ref(single),
        };
        let Some(markers) = self.table.meta.nested else {
            return Err(Error::illegal_state(format!(
                "nested field [{path}] has no nested metadata fields in the shard schema"
            )));
        };
        let include_in_parent = field.params.get("include_in_parent") == Some(&Value::Bool(true));
        let include_in_root = field.params.get("include_in_root") == Some(&Value::Bool(true));
        for item in items {
            let inner = match item {
                Json::Object(inner) => inner,
                Json::Null => continue,
                Json::Array(_) => {
                    self.nested_value(path, name, item, field, dynamic)?;
                    continue;
                }
                _ if self.lenient => continue,
                _ => {
                    return Err(Error::mapper_parsing(format!(
                        "object mapping for [{path}] tried to parse field [{name}] as object, but found a concrete value"
                    )))
                }
            };
            // the child document
            let outer_doc = std::mem::take(&mut self.doc);
            let outer_names = std::mem::take(&mut self.field_names);
            self.outer.push((outer_doc, outer_names));
            let walked = self.object(inner, path, Some(&field.properties), dynamic);
            let (outer_doc, outer_names) = self.outer.pop().expect("pushed above");
            let mut child = std::mem::replace(&mut self.doc, outer_doc);
            let child_names = std::mem::replace(&mut self.field_names, outer_names);
            walked?;
            self.add_field_names(&mut child, child_names);
            child.add_text(markers.path, path);
            child.add_text(markers.parent_id, self.id);
            self.nested.push(child);
            if self.nested.len() > MAX_NESTED_DOCS {
                return Err(Error::mapper_parsing(format!(
                    "The number of nested documents has exceeded the allowed limit of [{MAX_NESTED_DOCS}]."
                )));
            }
            // the same values, flattened into the enclosing document
            let into_parent = include_in_parent || (include_in_root && self.outer.is_empty());
            if into_parent {
                self.walk_flat(inner, path, field, dynamic)?;
            }
            if include_in_root && !self.outer.is_empty() {
                // the root document is the bottom of the stack of enclosing documents
                std::mem::swap(&mut self.doc, &mut self.outer[0].0);
                std::mem::swap(&mut self.field_names, &mut self.outer[0].1);
                let walked = self.walk_flat(inner, path, field, dynamic);
                std::mem::swap(&mut self.doc, &mut self.outer[0].0);
                std::mem::swap(&mut self.field_names, &mut self.outer[0].1);
                walked?;
            }
        }
        Ok(())
    }

    /// A walk of a nested object's own values into the current document (nested objects
    /// inside it are copied only where they are themselves `include_in_parent`).
    fn walk_flat(
        &mut self,
        inner: &[(Cow<'_, str>, Json<'_>)],
        path: &str,
        field: &'a FieldMapping,
        dynamic: Dynamic,
    ) -> Result<()> {
        let saved = std::mem::take(&mut self.nested);
        self.flattening += 1;
        let walked = self.object(inner, path, Some(&field.properties), dynamic);
        self.flattening -= 1;
        self.nested = saved;
        walked
    }
}

/// The most nested documents one document may hold before `index.mapping.nested_objects.limit`
/// is checked by the caller: a bound on memory for a document that is all nested objects.
const MAX_NESTED_DOCS: usize = 1_000_000;

/// `_data_stream_timestamp`: a document must hold exactly one doc value of the timestamp
/// field, as OpenSearch's `DataStreamFieldMapper.postParse` checks (it counts the field's
/// sorted-numeric doc values, which dates, numbers and booleans with doc values have).
fn check_data_stream_timestamp(
    table: &FieldTable,
    doc: &TantivyDocument,
    timestamp: &str,
) -> Result<()> {
    let values = match table.leaf(timestamp) {
        Some(leaf)
            if leaf.fast
                && (leaf.field_type.is_numeric()
                    || matches!(leaf.field_type, FieldType::Date | FieldType::Boolean)) =>
        {
            leaf.field.map_or(0, |field| doc.get_all(field).count())
        }
        _ => 0,
    };
    if values == 1 {
        Ok(())
    } else {
        Err(
            Error::mapper_parsing("failed to parse").caused_by(Error::illegal_argument(format!(
                "documents must contain a single-valued timestamp field '{timestamp}' of date type"
            ))),
        )
    }
}

struct Walker<'a> {
    mapping: &'a Mapping,
    table: &'a FieldTable,
    id: &'a str,
    doc: TantivyDocument,
    updates: BTreeMap<String, FieldMapping>,
    /// Paths of the leaves seen (for `_field_names`), borrowed from the field table.
    field_names: Vec<&'a str>,
    /// Translog replay: the document was acknowledged under an earlier mapping, so nothing in
    /// it may fail now: unmapped fields are skipped (as with `dynamic: false`) and so are values
    /// the mapping cannot take (as with `ignore_malformed`).
    lenient: bool,
    /// Nested child documents finished so far, in indexing order.
    nested: Vec<TantivyDocument>,
    /// The documents enclosing the one being walked (the root first), while walking a nested
    /// object.
    outer: Vec<(TantivyDocument, Vec<&'a str>)>,
    /// Above 0 while a nested object's values are copied into its parent or root document.
    flattening: usize,
    /// The whole document, for the completion contexts that read another field (`path`);
    /// built only for mappings that have one.
    root: Option<Value>,
}

/// The dotted path of `name` under `prefix`; top-level names (most fields of most documents)
/// are borrowed, not copied.
fn join<'n>(prefix: &str, name: &'n str) -> Cow<'n, str> {
    if prefix.is_empty() {
        Cow::Borrowed(name)
    } else {
        Cow::Owned(format!("{prefix}.{name}"))
    }
}

impl<'a> Walker<'a> {
    fn object(
        &mut self,
        object: &[(Cow<'_, str>, Json<'_>)],
        prefix: &str,
        props: Option<&'a BTreeMap<String, FieldMapping>>,
        dynamic: Dynamic,
    ) -> Result<()> {
        for (key, value) in object {
            let key: &str = key;
            // `key.split('.').any(str::is_empty)`, without splitting every key
            let empty_part =
                key.is_empty() || key.starts_with('.') || key.ends_with('.') || key.contains("..");
            if empty_part {
                return Err(Error::mapper_parsing(format!(
                    "failed to parse: field name cannot be an empty string{}",
                    if key.is_empty() {
                        String::new()
                    } else {
                        format!(" in [{}]", join(prefix, key))
                    }
                )));
            }
            if prefix.is_empty() && key.starts_with('_') && METADATA.contains(&key) {
                let cause = Error::mapper_parsing(format!(
                    "Field [{key}] is a metadata field and cannot be added inside a document. Use the index API request parameters."
                ));
                return Err(Error::mapper_parsing(format!(
                    "failed to parse field [{key}] of type [{key}] in document with id '{}'. Preview of field's value: '{}'",
                    self.id,
                    preview(&value.to_value())
                ))
                .caused_by(cause));
            }
            match key.split_once('.') {
                Some((head, rest)) => {
                    // `"a.b": v` is `"a": {"b": v}`
                    let inner = Json::Object(vec![(Cow::Borrowed(rest), value.clone())]);
                    self.field(head, &inner, prefix, props, dynamic)?;
                }
                None => self.field(key, value, prefix, props, dynamic)?,
            }
        }
        Ok(())
    }

    fn field(
        &mut self,
        name: &str,
        value: &Json,
        prefix: &str,
        props: Option<&'a BTreeMap<String, FieldMapping>>,
        dynamic: Dynamic,
    ) -> Result<()> {
        let path = join(prefix, name);
        // leaves, most of a document, resolve with one hash of their path (the field table
        // is built from the same mapping version); objects walk the sorted properties
        let table: &'a FieldTable = self.table;
        if props.is_some() {
            if let Some(leaf) = table.leaf(&path) {
                return self.leaf(leaf, value);
            }
        }
        match props.and_then(|p| p.get(name)) {
            Some(field) if field.field_type == FieldType::Nested => {
                if !field.enabled() {
                    return Ok(());
                }
                let inner_dynamic = field.dynamic().unwrap_or(dynamic);
                if self.flattening == 0 {
                    return self.nested_value(&path, name, value, field, inner_dynamic);
                }
                // inside a nested object copied into its parent: a nested object in it is
                // copied too only when it is itself `include_in_parent`
                if field.params.get("include_in_parent") == Some(&Value::Bool(true)) {
                    self.object_value(&path, name, value, Some(&field.properties), inner_dynamic)
                } else {
                    Ok(())
                }
            }
            Some(field) if field.field_type == FieldType::Object => {
                if !field.enabled() {
                    return Ok(());
                }
                let inner_dynamic = field.dynamic().unwrap_or(dynamic);
                self.object_value(&path, name, value, Some(&field.properties), inner_dynamic)
            }
            Some(_) => Err(no_shard_field(&path)),
            None => self.unmapped(&path, name, value, dynamic),
        }
    }

    fn object_value(
        &mut self,
        path: &str,
        name: &str,
        value: &Json,
        props: Option<&'a BTreeMap<String, FieldMapping>>,
        dynamic: Dynamic,
    ) -> Result<()> {
        match value {
            Json::Object(inner) => self.object(inner, path, props, dynamic),
            Json::Array(items) => {
                for item in items {
                    self.object_value(path, name, item, props, dynamic)?;
                }
                Ok(())
            }
            Json::Null => Ok(()),
            _ if self.lenient => Ok(()),
            _ => Err(Error::mapper_parsing(format!(
                "object mapping for [{path}] tried to parse field [{name}] as object, but found a concrete value"
            ))),
        }
    }

    fn unmapped(&mut self, path: &str, name: &str, value: &Json, dynamic: Dynamic) -> Result<()> {
        if self.lenient {
            return Ok(());
        }
        match dynamic {
            Dynamic::False => Ok(()),
            Dynamic::Strict => {
                let parent = path.rsplit_once('.').map(|(p, _)| p).unwrap_or("_doc");
                Err(Error::strict_dynamic_mapping(format!(
                    "mapping set to strict, dynamic introduction of [{name}] within [{parent}] is not allowed"
                )))
            }
            Dynamic::True => {
                let Some(field) = infer_field(self.mapping, path, name, &value.to_value())? else {
                    return Ok(());
                };
                let is_object = field.field_type == FieldType::Object;
                let inner_dynamic = field.dynamic().unwrap_or(dynamic);
                self.record_update(path, field);
                if is_object {
                    // every child is new too; walk them to collect their mappings
                    self.object_value(path, name, value, None, inner_dynamic)?;
                }
                Ok(())
            }
        }
    }

    fn record_update(&mut self, path: &str, field: FieldMapping) {
        if self.flattening > 0 {
            // the walk of the nested object itself records it
            return;
        }
        let parts: Vec<&str> = path.split('.').collect();
        let mut node = &mut self.updates;
        // the mapping's objects along the path, one level per part: `Mapping::field` tries
        // every split of a dotted path and is exponential in the depth of an unmapped one
        let mut mapped = Some(&self.mapping.properties);
        for part in &parts[..parts.len() - 1] {
            // an enclosing field the mapping has keeps its type (a nested one stays nested)
            let existing = mapped.and_then(|props| props.get(*part));
            mapped = existing.map(|field| &field.properties);
            let kind = match existing {
                Some(existing) if existing.field_type == FieldType::Nested => FieldType::Nested,
                _ => FieldType::Object,
            };
            node = &mut node
                .entry(part.to_string())
                .or_insert_with(|| FieldMapping::leaf(kind))
                .properties;
        }
        node.entry(parts[parts.len() - 1].to_string())
            .or_insert(field);
    }

    fn leaf(&mut self, leaf: &'a LeafField, value: &Json) -> Result<()> {
        let field = &leaf.mapping;
        if field.field_type == FieldType::GeoPoint {
            return self.geo_points(leaf, value);
        }
        if field.field_type.is_range() {
            return self.ranges(leaf, value);
        }
        if let LeafKind::KnnVector(spec) = &leaf.kind {
            return self.knn_vector(leaf, spec, value);
        }
        if let LeafKind::Completion(spec) = &leaf.kind {
            return self.completion(leaf, spec, value);
        }
        if let LeafKind::Percolator = &leaf.kind {
            return self.percolator(leaf, value);
        }
        match value {
            Json::Array(items) => {
                for item in items {
                    self.leaf(leaf, item)?;
                }
                Ok(())
            }
            Json::Null => match field.null_value() {
                Some(null_value) => {
                    let null_value = Json::from_value(null_value);
                    self.leaf_value(leaf, &null_value)
                }
                None => Ok(()),
            },
            _ => self.leaf_value(leaf, value),
        }
    }

    fn geo_points(&mut self, leaf: &LeafField, value: &Json) -> Result<()> {
        let (path, field) = (leaf.path.as_str(), &leaf.mapping);
        let points: Vec<&Json> = match value {
            Json::Array(items) if items.iter().all(Json::is_number) => vec![value],
            Json::Array(items) => items.iter().collect(),
            Json::Null => return Ok(()),
            other => vec![other],
        };
        let columns = match &leaf.kind {
            LeafKind::GeoPoint {
                lat: Some(lat),
                lon: Some(lon),
            } => Some((*lat, *lon)),
            _ => None,
        };
        for point in points {
            // `[lon, lat]`, the common form, is read without building a `Value`
            let lon_lat = match point {
                Json::Array(items) => crate::geo::from_lon_lat(items, |item| match item {
                    Json::Number(n) => n.as_f64(),
                    _ => None,
                }),
                _ => None,
            };
            let parsed = match lon_lat {
                Some(lon_lat) => crate::geo::checked(lon_lat),
                None => crate::geo::parse_point(&point.to_value()),
            };
            match parsed {
                Ok(parsed) => {
                    if let Some((lat, lon)) = columns {
                        let stored = crate::geo::quantize(parsed);
                        self.doc.add_f64(lat, stored.lat);
                        self.doc.add_f64(lon, stored.lon);
                    }
                }
                Err(cause) if !field.ignore_malformed() && !self.lenient => {
                    return Err(self.field_error(path, field.field_type, &point.to_value(), cause));
                }
                Err(_) => {}
            }
        }
        Ok(())
    }

    /// A `completion` field's value: one key per input and context value (see
    /// [`crate::completion`]); refused with OpenSearch's messages.
    fn completion(
        &mut self,
        leaf: &'a LeafField,
        spec: &crate::completion::CompletionSpec,
        value: &Json,
    ) -> Result<()> {
        let Some(field) = leaf.field else {
            return Ok(());
        };
        let no_root = Value::Null;
        let root = self.root.as_ref().unwrap_or(&no_root);
        let suggestions = match spec.suggestions(&leaf.path, &value.to_value(), root) {
            Ok(suggestions) => suggestions,
            Err(_) if self.lenient => return Ok(()),
            // OpenSearch answers a missing context outside the usual wrapping
            Err(e) if e.reason().starts_with("Contexts are mandatory") => return Err(e),
            Err(e) => return Err(Error::mapper_parsing("failed to parse").caused_by(e)),
        };
        for suggestion in &suggestions {
            let form = spec.form(&spec.analyzer, &suggestion.input);
            if suggestion.contexts.is_empty() {
                let key = crate::completion::encode_key(
                    None,
                    &form,
                    suggestion.weight,
                    &suggestion.input,
                );
                self.doc.add_bytes(field, &key);
            }
            for (index, context) in &suggestion.contexts {
                let key = crate::completion::encode_key(
                    Some((*index, context)),
                    &form,
                    suggestion.weight,
                    &suggestion.input,
                );
                self.doc.add_bytes(field, &key);
            }
        }
        if !suggestions.is_empty() {
            self.field_names.push(&leaf.path);
        }
        Ok(())
    }

    /// A `percolator` field's value: a query object, kept as its JSON (the index checks it
    /// as a query; see `tessera_index`'s writes).
    fn percolator(&mut self, leaf: &'a LeafField, value: &Json) -> Result<()> {
        let Some(field) = leaf.field else {
            return Ok(());
        };
        let query = value.to_value();
        if !query.is_object() {
            if self.lenient {
                return Ok(());
            }
            return Err(
                Error::mapper_parsing("failed to parse").caused_by(Error::parsing(
                    "[_na] query malformed, must start with start_object",
                )),
            );
        }
        self.doc.add_bytes(field, query.to_string().as_bytes());
        self.field_names.push(&leaf.path);
        Ok(())
    }

    /// A `knn_vector`'s value: an array of numbers (or numeric strings) of the field's
    /// dimension, or null; refused with the k-NN plugin's messages (and its preview: the value
    /// at fault, or `null` when the whole vector is).
    fn knn_vector(
        &mut self,
        leaf: &LeafField,
        spec: &crate::knn::KnnSpec,
        value: &Json,
    ) -> Result<()> {
        let fail = |preview: String, cause: Error| {
            Error::mapper_parsing(format!(
                "failed to parse field [{}] of type [knn_vector] in document with id '{}'. Preview of field's value: '{preview}'",
                leaf.path, self.id
            ))
            .caused_by(cause)
        };
        let mut vector = Vec::with_capacity(spec.dimension);
        let mut texts = Vec::new();
        match value {
            Json::Null => return Ok(()),
            Json::Array(items) => {
                for item in items {
                    let item = item.to_value();
                    let Some(v) = crate::knn::number(&item) else {
                        let token = match &item {
                            Value::Null => "VALUE_NULL",
                            Value::Array(_) => "START_ARRAY",
                            Value::Object(_) => "START_OBJECT",
                            Value::Bool(true) => "VALUE_TRUE",
                            Value::Bool(false) => "VALUE_FALSE",
                            _ => "VALUE_STRING",
                        };
                        return Err(fail(
                            preview(&item),
                            Error::new(
                                "json_parse_exception",
                                400,
                                format!("Current token ({token}) not numeric, can not use numeric value accessors"),
                            ),
                        ));
                    };
                    vector.push(v);
                    texts.push(item);
                }
            }
            Json::Number(n) => vector.push(n.as_f64().unwrap_or(f64::NAN) as f32),
            other => {
                // OpenSearch reads no vector from a string or an object
                let other = other.to_value();
                let cause = spec.check(&[]).unwrap_err();
                return Err(fail(preview(&other), Error::illegal_argument(cause.reason)));
            }
        }
        if let Err(cause) = spec.check(&vector) {
            let shown = match cause.at {
                Some(i) if vector[i].is_nan() => "NaN".to_string(),
                Some(i) if vector[i].is_infinite() => if vector[i] > 0.0 {
                    "Infinity"
                } else {
                    "-Infinity"
                }
                .to_string(),
                Some(i) => plain(&texts[i]),
                None => "null".to_string(),
            };
            if self.lenient {
                return Ok(());
            }
            return Err(fail(shown, Error::illegal_argument(cause.reason)));
        }
        if let Some(field) = leaf.field {
            self.doc
                .add_custom(field, &tessera_knn::segment::encode_vector(&vector));
        }
        Ok(())
    }

    /// A range field's value: one range, an array of ranges, or null.
    fn ranges(&mut self, leaf: &LeafField, value: &Json) -> Result<()> {
        let (path, field) = (leaf.path.as_str(), &leaf.mapping);
        let items: Vec<&Json> = match value {
            Json::Array(items) => items.iter().collect(),
            Json::Null => return Ok(()),
            other => vec![other],
        };
        let LeafKind::Range { kind, from, to } = &leaf.kind else {
            return Err(Error::illegal_state(format!(
                "field [{path}] is not a range in the shard schema"
            )));
        };
        let name = path.rsplit('.').next().unwrap_or(path);
        for item in items {
            if matches!(item, Json::Null) {
                continue;
            }
            let item = item.to_value();
            match range::parse_range(kind, path, name, &item, field.coerce()) {
                Ok(bounds) => {
                    let (Some(from), Some(to)) = (*from, *to) else {
                        continue;
                    };
                    match bounds {
                        RangeBounds::I64(low, high) => {
                            self.doc.add_i64(from, low);
                            self.doc.add_i64(to, high);
                        }
                        RangeBounds::F64(low, high) => {
                            self.doc.add_f64(from, low);
                            self.doc.add_f64(to, high);
                        }
                        RangeBounds::Ip(low, high) => {
                            self.doc.add_ip_addr(from, low);
                            self.doc.add_ip_addr(to, high);
                        }
                    }
                }
                Err(_) if field.ignore_malformed() || self.lenient => {}
                Err(e) => {
                    return Err(self.field_error(path, field.field_type, &e.preview, e.cause))
                }
            }
        }
        Ok(())
    }

    /// The field table's leaf at `path` (a mapped leaf always has one).
    fn resolve(&self, path: &str) -> Result<&'a LeafField> {
        let table: &'a FieldTable = self.table;
        table
            .leaf(path)
            .map(|leaf| &**leaf)
            .ok_or_else(|| no_shard_field(path))
    }

    fn leaf_value(&mut self, leaf: &'a LeafField, value: &Json) -> Result<()> {
        let (path, field) = (leaf.path.as_str(), &leaf.mapping);
        match self.add_value(leaf, value) {
            Ok(()) => {}
            Err(_) if field.ignore_malformed() || self.lenient => return Ok(()),
            Err(cause) => {
                return Err(self.field_error(path, field.field_type, &value.to_value(), cause))
            }
        }
        for sub_name in field.fields.keys() {
            let sub_leaf = self.resolve(&format!("{path}.{sub_name}"))?;
            self.leaf_value(sub_leaf, value)?;
        }
        for target in &leaf.copy_to {
            let target = target.as_str();
            match self.mapping.field(target) {
                Some(target_field) if target_field.field_type != FieldType::Object => {
                    let target_leaf = self.resolve(target)?;
                    self.leaf_value(target_leaf, value)?;
                }
                Some(_) => {
                    return Err(Error::mapper_parsing(format!(
                        "Cannot copy to field [{target}] since it is mapped as an object"
                    )))
                }
                None => {
                    let name = target.rsplit('.').next().unwrap_or(target);
                    self.unmapped(target, name, value, self.mapping.dynamic)?;
                }
            }
        }
        Ok(())
    }

    fn add_value(&mut self, leaf: &'a LeafField, value: &Json) -> Result<()> {
        let Some(field) = leaf.field else {
            return Ok(());
        };
        if value.is_object() {
            return Err(Error::illegal_state(
                "Can't get text on a START_OBJECT".to_string(),
            ));
        }
        match &leaf.kind {
            LeafKind::Text { .. } => {
                let text = text_of(value)
                    .ok_or_else(|| Error::illegal_state("Can't get text on a value"))?;
                self.doc.add_text(field, text);
                // `_field_names` serves exists queries on fields without doc values, and the
                // per-field document count that BM25 needs (Lucene's docCount)
                self.field_names.push(&leaf.path);
            }
            LeafKind::Keyword { ignore_above, .. } => {
                let text = text_of(value)
                    .ok_or_else(|| Error::illegal_state("Can't get text on a value"))?;
                if ignore_above.is_some_and(|limit| text.chars().count() > limit) {
                    return Ok(());
                }
                self.doc.add_text(field, text);
                // the column answers exists queries and BM25's document count (see
                // `field_stats`) for keywords with doc values; others need `_field_names`
                if !leaf.fast {
                    self.field_names.push(&leaf.path);
                }
            }
            LeafKind::Integer => {
                let n = values::to_integer(&scalar(value), leaf.field_type, leaf.coerce)?;
                self.doc.add_i64(field, n);
            }
            LeafKind::Float => {
                let f = values::to_float(&scalar(value), leaf.field_type, leaf.coerce)?;
                self.doc.add_f64(field, f);
            }
            LeafKind::ScaledFloat { factor } => {
                let n = values::to_scaled(&scalar(value), *factor, leaf.coerce)?;
                self.doc.add_i64(field, n);
            }
            LeafKind::Date { format } => {
                let number;
                let text: &str = match value {
                    Json::Str(s) => s,
                    Json::Number(n) => {
                        number = n.to_string();
                        &number
                    }
                    other => {
                        return Err(Error::illegal_argument(format!(
                            "failed to parse date field [{}] with format [{}]",
                            plain(&other.to_value()),
                            format.spec()
                        )))
                    }
                };
                let millis = format.parse_millis(text, None, false).map_err(|e| {
                    Error::illegal_argument(format!(
                        "failed to parse date field [{text}] with format [{}]",
                        format.spec()
                    ))
                    .caused_by(Error::new(
                        "date_time_parse_exception",
                        400,
                        e.message,
                    ))
                })?;
                self.doc.add_i64(field, millis);
            }
            LeafKind::Boolean => {
                let b = values::to_boolean(&scalar(value))?;
                self.doc.add_bool(field, b);
            }
            LeafKind::Ip => {
                let ip = values::to_ip(&scalar(value))?;
                self.doc.add_ip_addr(field, ip);
            }
            LeafKind::KnnVector(_) => {
                return Err(Error::mapper_parsing(format!(
                    "[copy_to] into the knn_vector field [{}] is not supported by Tessera",
                    leaf.path
                )))
            }
            LeafKind::Completion(spec) => {
                // a value copied into the field is one input
                return self.completion(leaf, spec, value);
            }
            LeafKind::Percolator => return self.percolator(leaf, value),
            LeafKind::GeoPoint { .. } => {
                crate::geo::parse_point(&value.to_value())?;
            }
            LeafKind::Range { .. } => {
                return Err(Error::illegal_state(format!(
                    "range field [{}] takes its values through its columns",
                    leaf.path
                )))
            }
        }
        Ok(())
    }

    fn field_error(&self, path: &str, field_type: FieldType, value: &Value, cause: Error) -> Error {
        Error::mapper_parsing(format!(
            "failed to parse field [{path}] of type [{}] in document with id '{}'. Preview of field's value: '{}'",
            field_type.name(),
            self.id,
            preview(value)
        ))
        .caused_by(cause)
    }
}

fn no_shard_field(path: &str) -> Error {
    Error::illegal_state(format!("field [{path}] is mapped but has no shard field"))
}

/// A scalar as a `Value`, for the value coercions (numbers and booleans need no allocation).
fn scalar(value: &Json) -> Value {
    match value {
        Json::Number(n) => Value::Number(n.clone()),
        Json::Bool(b) => Value::Bool(*b),
        other => other.to_value(),
    }
}

/// The text of a leaf value (strings as they are, numbers and booleans as JSON prints them).
fn text_of<'j>(value: &'j Json) -> Option<Cow<'j, str>> {
    match value {
        Json::Str(s) => Some(Cow::Borrowed(s)),
        Json::Number(n) => Some(Cow::Owned(n.to_string())),
        Json::Bool(b) => Some(Cow::Owned(b.to_string())),
        _ => None,
    }
}

/// Java's `Map.toString` rendering, which OpenSearch uses to preview a bad value.
fn preview(value: &Value) -> String {
    match value {
        Value::Object(o) => {
            let inner: Vec<String> = o
                .iter()
                .map(|(k, v)| format!("{k}={}", preview(v)))
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(preview).collect();
            format!("[{}]", inner.join(", "))
        }
        other => plain(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tantivy::schema::Value as _;

    fn table(mapping: &Mapping) -> FieldTable {
        FieldTable::build(mapping, None).unwrap().0
    }

    fn parse(mapping: &Mapping, source: Value) -> Result<ParseOutcome> {
        parse_document(mapping, &table(mapping), "1", &source)
    }

    fn doc(mapping: &Mapping, source: Value) -> TantivyDocument {
        match parse(mapping, source).unwrap() {
            ParseOutcome::Document(d) => d,
            ParseOutcome::Block { .. } => panic!("unexpected nested documents"),
            ParseOutcome::MappingUpdate(u) => panic!("unexpected update {u:?}"),
        }
    }

    fn texts(table: &FieldTable, doc: &TantivyDocument, path: &str) -> Vec<String> {
        let field = table.schema().get_field(path).unwrap();
        doc.get_all(field)
            .filter_map(|v| v.as_str().map(String::from))
            .collect()
    }

    #[test]
    fn nested_objects_become_child_documents_before_their_parent() {
        let m = Mapping::parse(&json!({"properties": {
            "title": {"type": "keyword"},
            "c": {"type": "nested", "properties": {
                "who": {"type": "keyword"},
                "r": {"type": "nested", "include_in_root": true,
                      "properties": {"n": {"type": "keyword"}}}
            }},
            "p": {"type": "nested", "include_in_parent": true,
                  "properties": {"k": {"type": "keyword"}}}
        }}))
        .unwrap();
        let t = table(&m);
        let source = json!({"title": "t", "c": [
            {"who": "a", "r": [{"n": "x"}, {"n": "y"}]},
            {"who": "b"}
        ], "p": {"k": "v"}});
        let Ok(ParseOutcome::Block { nested, doc }) = parse(&m, source) else {
            panic!("expected a block");
        };
        let paths: Vec<Vec<String>> = nested
            .iter()
            .map(|d| texts(&t, d, "_nested_path"))
            .collect();
        assert_eq!(paths, [["c.r"], ["c.r"], ["c"], ["c"], ["p"]]);
        assert_eq!(texts(&t, &nested[0], "c.r.n"), ["x"]);
        assert_eq!(texts(&t, &nested[2], "c.who"), ["a"]);
        assert!(
            texts(&t, &nested[2], "title").is_empty(),
            "the parent's fields stay out"
        );
        assert!(nested
            .iter()
            .all(|d| texts(&t, d, "_nested_parent_id") == ["1"]));
        // the root holds its own fields, and those included in it
        assert_eq!(texts(&t, &doc, "title"), ["t"]);
        assert!(texts(&t, &doc, "c.who").is_empty());
        assert_eq!(texts(&t, &doc, "c.r.n"), ["x", "y"]);
        assert_eq!(texts(&t, &doc, "p.k"), ["v"]);
        assert!(texts(&t, &doc, "_nested_path").is_empty());
        // a concrete value where a nested object belongs
        assert!(parse(&m, json!({"c": "text"})).is_err());
        // a new field inside a nested object keeps the enclosing field nested
        let Ok(ParseOutcome::MappingUpdate(update)) = parse(&m, json!({"c": [{"new": 1}]})) else {
            panic!("expected a mapping update");
        };
        assert_eq!(update["c"].field_type, FieldType::Nested);
        let mut merged = m.clone();
        merged.merge_properties(&update).unwrap();
        assert!(merged.field("c.new").is_some());
    }

    fn strict_mapping() -> Mapping {
        Mapping::parse(&json!({"dynamic": "strict", "properties": {
            "title": {"type": "text", "fields": {"raw": {"type": "keyword", "ignore_above": 5}}},
            "n": {"type": "integer"},
            "price": {"type": "scaled_float", "scaling_factor": 100},
            "when": {"type": "date", "format": "yyyy-MM-dd HH:mm:ss"},
            "ok": {"type": "boolean"},
            "ip": {"type": "ip"},
            "loc": {"type": "geo_point"},
            "station": {"properties": {"id": {"type": "keyword"}}}
        }}))
        .unwrap()
    }

    #[test]
    fn converts_every_type() {
        let m = strict_mapping();
        let t = table(&m);
        let d = doc(
            &m,
            json!({
                "title": "Hello World", "n": "7", "price": 6.3, "when": "2015-01-01 00:00:00",
                "ok": "true", "ip": "10.0.0.1", "loc": [-73.9, 40.7], "station": {"id": "S1"}
            }),
        );
        let get = |path: &str| d.get_first(t.leaf(path).unwrap().field.unwrap()).unwrap();
        assert_eq!(get("n").as_i64(), Some(7));
        assert_eq!(get("price").as_i64(), Some(630));
        assert_eq!(get("when").as_i64(), Some(1_420_070_400_000));
        assert_eq!(get("ok").as_bool(), Some(true));
        assert_eq!(get("station.id").as_str(), Some("S1"));
        // "Hello World" is longer than ignore_above 5: not in the keyword sub-field
        assert!(d
            .get_first(t.leaf("title.raw").unwrap().field.unwrap())
            .is_none());
        let names: Vec<&str> = d
            .get_all(t.meta.field_names)
            .filter_map(|v| v.as_str())
            .collect();
        // text needs `_field_names` for BM25's document count; a keyword with a column
        // (station.id) does not
        assert_eq!(names, ["title"]);
    }

    #[test]
    fn data_stream_timestamp_needs_exactly_one_date() {
        let m = Mapping::parse(&json!({
            "_data_stream_timestamp": {"enabled": true},
            "properties": {"@timestamp": {"type": "date"}, "k": {"type": "keyword"}}
        }))
        .unwrap();
        doc(&m, json!({"@timestamp": "2023-01-01T00:00:00Z", "k": "a"}));
        for bad in [
            json!({"k": "a"}),
            json!({"@timestamp": ["2020-01-01", "2020-01-02"]}),
            json!({"@timestamp": null}),
        ] {
            let Err(e) = parse(&m, bad.clone()) else {
                panic!("{bad} was accepted")
            };
            assert_eq!(e.kind(), "mapper_parsing_exception", "{bad}");
            assert_eq!(e.reason(), "failed to parse");
            assert_eq!(
                e.cause().unwrap().reason(),
                "documents must contain a single-valued timestamp field '@timestamp' of date type"
            );
        }
        // a keyword timestamp has no numeric doc values: every document is rejected
        let m = Mapping::parse(&json!({
            "_data_stream_timestamp": {"enabled": true},
            "properties": {"@timestamp": {"type": "keyword"}}
        }))
        .unwrap();
        assert!(parse(&m, json!({"@timestamp": "2020-01-01"})).is_err());
    }

    #[test]
    fn ranges_fill_their_bound_columns() {
        let m = Mapping::parse(&json!({"dynamic": "strict", "properties": {
            "i": {"type": "integer_range"},
            "d": {"type": "double_range", "ignore_malformed": true},
            "o": {"properties": {"ip": {"type": "ip_range"}}}
        }}))
        .unwrap();
        let t = table(&m);
        let d = doc(
            &m,
            json!({"i": [{"gte": 10, "lte": 20}, {"gt": 1, "lt": 5}, null],
                   "d": {"gte": "x"}, "o": {"ip": "10.0.0.0/8"}}),
        );
        let column = |path: &str, bound: usize| {
            let LeafKind::Range { from, to, .. } = &t.leaf(path).unwrap().kind else {
                panic!()
            };
            [from, to][bound].unwrap()
        };
        let from: Vec<i64> = d
            .get_all(column("i", 0))
            .filter_map(|v| v.as_i64())
            .collect();
        let to: Vec<i64> = d
            .get_all(column("i", 1))
            .filter_map(|v| v.as_i64())
            .collect();
        assert_eq!((from, to), (vec![10, 2], vec![20, 4]));
        assert_eq!(
            d.get_all(column("d", 0)).count(),
            0,
            "malformed and ignored"
        );
        assert_eq!(d.get_all(column("o.ip", 0)).count(), 1);
        let Err(e) = parse(&m, json!({"o": {"ip": "10.0.0.1"}})) else {
            panic!("a plain address is not an ip range")
        };
        assert_eq!(
            e.reason(),
            "failed to parse field [o.ip] of type [ip_range] in document with id '1'. Preview of field's value: '10.0.0.1'"
        );
        assert_eq!(
            e.cause().unwrap().reason(),
            "Expected [ip/prefix] but was [10.0.0.1]"
        );
        let Err(e) = parse(&m, json!({"i": {"gte": 5, "lte": 1}})) else {
            panic!("a reversed range is rejected")
        };
        assert!(
            e.reason().ends_with("Preview of field's value: 'null'"),
            "{}",
            e.reason()
        );
    }

    #[test]
    fn replay_takes_what_the_mapping_can_and_never_fails() {
        let m = Mapping::parse(&json!({"dynamic": true, "properties": {
            "n": {"type": "long"},
            "o": {"type": "object", "properties": {"k": {"type": "keyword"}}}
        }}))
        .unwrap();
        let t = table(&m);
        let source = json!({"n": "not a number", "o": "a concrete value", "new": {"deep": 1},
                            "o2": {"k": "x"}});
        // the normal path fails (or asks for a mapping update) on every one of these
        assert!(parse(&m, json!({"n": "not a number"})).is_err());
        assert!(parse(&m, json!({"o": "a concrete value"})).is_err());
        assert!(matches!(
            parse(&m, json!({"new": {"deep": 1}})),
            Ok(ParseOutcome::MappingUpdate(_))
        ));
        let (_, replayed) = parse_document_for_replay(&m, &t, "1", &Json::from_value(&source));
        assert_eq!(
            replayed.len(),
            doc(&m, json!({})).len(),
            "nothing the mapping cannot take is indexed"
        );
        // what fits is indexed as usual
        let ok = json!({"n": 5, "o": {"k": "v"}, "extra": true});
        let (_, replayed) = parse_document_for_replay(&m, &t, "1", &Json::from_value(&ok));
        assert_eq!(
            replayed.len(),
            doc(&m, json!({"n": 5, "o": {"k": "v"}})).len()
        );
    }

    #[test]
    fn dotted_keys_and_arrays() {
        let m = strict_mapping();
        let t = table(&m);
        let d = doc(&m, json!({"station.id": ["A", "B"], "n": [1, 2, null]}));
        assert_eq!(
            d.get_all(t.leaf("station.id").unwrap().field.unwrap())
                .count(),
            2
        );
        assert_eq!(d.get_all(t.leaf("n").unwrap().field.unwrap()).count(), 2);
    }

    #[test]
    fn field_names_with_empty_parts_are_rejected() {
        let m = strict_mapping();
        for key in ["", ".n", "n.", "station..id"] {
            let e = parse(&m, json!({ key: 1 })).err().unwrap();
            assert_eq!(e.kind(), "mapper_parsing_exception", "{key:?}");
            assert!(
                e.reason().contains("field name cannot be an empty string"),
                "{key:?}: {}",
                e.reason()
            );
        }
        // a metadata field at the top level of a document is refused
        let e = parse(&m, json!({"_id": "x"})).err().unwrap();
        assert_eq!(e.kind(), "mapper_parsing_exception");
        assert!(e.reason().contains("[_id]"), "{}", e.reason());
    }

    #[test]
    fn strict_mapping_rejects_new_fields() {
        let e = parse(&strict_mapping(), json!({"other": 1})).err().unwrap();
        assert_eq!(e.kind(), "strict_dynamic_mapping_exception");
        assert_eq!(
            e.reason(),
            "mapping set to strict, dynamic introduction of [other] within [_doc] is not allowed"
        );
        let e = parse(&strict_mapping(), json!({"station": {"x": 1}}))
            .err()
            .unwrap();
        assert!(e.reason().contains("within [station]"), "{}", e.reason());
    }

    #[test]
    fn type_errors_name_field_type_and_id() {
        let e = parse(&strict_mapping(), json!({"n": "abc"})).err().unwrap();
        assert_eq!(e.kind(), "mapper_parsing_exception");
        assert_eq!(
            e.reason(),
            "failed to parse field [n] of type [integer] in document with id '1'. Preview of field's value: 'abc'"
        );
        assert_eq!(e.cause().unwrap().kind(), "illegal_argument_exception");
        let e = parse(&strict_mapping(), json!({"title": {"a": 1}}))
            .err()
            .unwrap();
        assert!(e.reason().contains("Preview of field's value: '{a=1}'"));
        let e = parse(&strict_mapping(), json!({"station": "flat"}))
            .err()
            .unwrap();
        assert!(e
            .reason()
            .contains("tried to parse field [station] as object"));
        let e = parse(&strict_mapping(), json!({"_id": "x"})).err().unwrap();
        assert!(e.cause().unwrap().reason().contains("is a metadata field"));
        let e = parse(&strict_mapping(), json!({"when": "01/01/2015"}))
            .err()
            .unwrap();
        assert!(e
            .cause()
            .unwrap()
            .reason()
            .contains("failed to parse date field [01/01/2015]"));
        assert!(parse(&strict_mapping(), json!({"loc": [0.0, 95.0]})).is_err());
    }

    #[test]
    fn dynamic_true_collects_new_fields() {
        let m = Mapping::parse(&json!({"properties": {"known": {"type": "long"}}})).unwrap();
        let outcome = parse(
            &m,
            json!({"known": 1, "name": "x", "nested": {"v": 1.5, "flag": true}, "empty": null}),
        )
        .unwrap();
        let ParseOutcome::MappingUpdate(update) = outcome else {
            panic!("expected an update")
        };
        let mut merged = m.clone();
        merged.merge_properties(&update).unwrap();
        assert_eq!(merged.field("name").unwrap().field_type, FieldType::Text);
        assert_eq!(
            merged.field("name.keyword").unwrap().field_type,
            FieldType::Keyword
        );
        assert_eq!(
            merged.field("nested.v").unwrap().field_type,
            FieldType::Float
        );
        assert_eq!(
            merged.field("nested.flag").unwrap().field_type,
            FieldType::Boolean
        );
        assert!(merged.field("empty").is_none());
        // with the merged mapping the same document parses in one go
        assert!(matches!(
            parse(
                &merged,
                json!({"known": 1, "name": "x", "nested": {"v": 1.5, "flag": true}})
            )
            .unwrap(),
            ParseOutcome::Document(_)
        ));
    }

    #[test]
    fn dynamic_false_keeps_unknown_fields_out_of_the_index() {
        let m = Mapping::parse(&json!({"dynamic": false, "properties": {"a": {"type": "long"}}}))
            .unwrap();
        let d = doc(&m, json!({"a": 1, "b": "ignored"}));
        assert_eq!(d.field_values().count(), 1);
    }

    #[test]
    fn ignore_malformed_and_null_value() {
        let m = Mapping::parse(&json!({"properties": {
            "n": {"type": "long", "ignore_malformed": true},
            "s": {"type": "keyword", "null_value": "NULL"}
        }}))
        .unwrap();
        let t = table(&m);
        let d = doc(&m, json!({"n": "oops", "s": null}));
        assert!(d.get_first(t.leaf("n").unwrap().field.unwrap()).is_none());
        assert_eq!(
            d.get_first(t.leaf("s").unwrap().field.unwrap())
                .unwrap()
                .as_str(),
            Some("NULL")
        );
    }

    #[test]
    fn copy_to_indexes_into_the_target() {
        let m = Mapping::parse(&json!({"properties": {
            "first": {"type": "text", "copy_to": "full"},
            "full": {"type": "text"}
        }}))
        .unwrap();
        let t = table(&m);
        let d = doc(&m, json!({"first": "Ada"}));
        assert_eq!(
            d.get_first(t.leaf("full").unwrap().field.unwrap())
                .unwrap()
                .as_str(),
            Some("Ada")
        );
    }

    #[test]
    fn non_object_documents_are_rejected() {
        assert!(parse(&strict_mapping(), json!([1, 2])).is_err());
    }
}
