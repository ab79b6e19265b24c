//! The field table: which tantivy field holds each mapped path of one shard, and how.
//!
//! A tantivy schema cannot change, but an OpenSearch mapping grows (new fields by `PUT _mapping`
//! or dynamic mapping). Tessera keeps each shard's schema *append-only*: existing fields keep
//! their ids and options, new leaves are added at the end, and the shard rewrites its schema
//! (see `tessera-index`). Segments written before a field existed simply have no data for it.
//! Metadata fields (`_id`, `_source`, …) come first and never change.

use rustc_hash::FxHashMap;
use std::collections::HashMap;
use std::sync::Arc;

use tantivy::schema::{
    BytesOptions, CustomOptions, Field, FieldEntry, FieldType as TantivyType, IndexRecordOption,
    IpAddrOptions, NumericOptions, Schema, SchemaBuilder, TextFieldIndexing, TextOptions,
};
use tessera_common::{Error, Result};
use tessera_date::DateFormat;

use crate::field_type::FieldType;
use crate::mapping::{FieldMapping, Mapping, NestedPath};
use crate::range::{range_column, RangeKind};

pub const ID_FIELD: &str = "_id";
pub const SOURCE_FIELD: &str = "_source";
pub const SEQ_NO_FIELD: &str = "_seq_no";
pub const VERSION_FIELD: &str = "_version";
pub const PRIMARY_TERM_FIELD: &str = "_primary_term";
pub const ROUTING_FIELD: &str = "_routing";
pub const FIELD_NAMES_FIELD: &str = "_field_names";
/// On a nested child document: the path of its nested field (root documents have none).
pub const NESTED_PATH_FIELD: &str = "_nested_path";
/// On a nested child document: its root document's `_id`, so that deleting or replacing the
/// root deletes the whole block.
pub const NESTED_PARENT_ID_FIELD: &str = "_nested_parent_id";

/// The tokenizer of keyword fields with the `lowercase` normalizer.
pub const LOWERCASE_KEYWORD_TOKENIZER: &str = "lowercase_keyword";

/// How a leaf's values are stored in tantivy.
#[derive(Clone, Debug)]
pub enum LeafKind {
    /// Analyzed text (`text`, `match_only_text`).
    Text {
        analyzer: String,
        search_analyzer: String,
        positions: bool,
    },
    /// A single untokenized term; `lowercase` when the field has the lowercase normalizer.
    Keyword {
        ignore_above: Option<usize>,
        lowercase: bool,
    },
    /// i64 values: long, integer, short, byte.
    Integer,
    /// f64 values, already rounded to the type's precision.
    Float,
    /// i64 = round(value × factor).
    ScaledFloat {
        factor: f64,
    },
    /// i64 epoch milliseconds.
    Date {
        format: DateFormat,
    },
    Boolean,
    Ip,
    /// Latitude and longitude columns (quantized like Lucene's), absent without doc values.
    GeoPoint {
        lat: Option<Field>,
        lon: Option<Field>,
    },
    /// A range type: the columns of the inclusive lower and upper bounds (see
    /// [`crate::range`]), absent when the field is neither indexed nor has doc values.
    Range {
        kind: RangeKind,
        from: Option<Field>,
        to: Option<Field>,
    },
    /// A dense vector: a custom tantivy field whose segments' vectors the k-NN plugin keeps
    /// (see `tessera_knn::segment`).
    KnnVector(Arc<crate::knn::KnnSpec>),
    /// A completion field: its keys are the terms of an indexed bytes field (see
    /// [`crate::completion`]).
    Completion(Arc<crate::completion::CompletionSpec>),
    /// A percolator field: each document's query as JSON text in a bytes column, read by
    /// the `percolate` query.
    Percolator,
}

/// A scaled_float's value as OpenSearch's field data computes it: the stored integer times the
/// factor's inverse (280 with factor 100 is 2.8000000000000003), as every sort, aggregation,
/// doc value and score function sees it.
#[inline]
pub fn scaled_float_value(raw: i64, factor: f64) -> f64 {
    raw as f64 * (1.0 / factor)
}

/// One mapped leaf of one shard.
#[derive(Clone, Debug)]
pub struct LeafField {
    pub path: String,
    pub field_type: FieldType,
    /// `None` for fields with no tantivy field of their own (geo_point, ranges).
    pub field: Option<Field>,
    pub kind: LeafKind,
    pub indexed: bool,
    pub fast: bool,
    pub mapping: FieldMapping,
    /// `mapping.coerce()` and `mapping.copy_to()`, read for every value the document parser
    /// indexes (the mapping keeps them in a map of parameters).
    pub coerce: bool,
    pub copy_to: Vec<String>,
}

impl LeafField {
    /// Fields a `*` in `query_string` or `multi_match` searches.
    pub fn is_default_searchable(&self) -> bool {
        self.field.is_some()
            && (self.indexed || self.fast)
            && self.mapping.index()
            && !matches!(self.kind, LeafKind::GeoPoint { .. })
    }

    /// Whether the field is searchable at all: indexed, or searched through its doc values.
    pub fn is_searchable(&self) -> bool {
        self.indexed || self.fast
    }
}

/// The metadata fields present in every shard.
#[derive(Clone, Copy, Debug)]
pub struct MetaFields {
    pub id: Field,
    pub source: Field,
    pub seq_no: Field,
    pub version: Field,
    pub primary_term: Field,
    pub routing: Field,
    pub field_names: Field,
    /// The markers of nested child documents: only in shards whose mapping has (or had) a
    /// `nested` field, so that other shards pay nothing for them.
    pub nested: Option<NestedMarkers>,
}

/// The hidden fields of nested child documents.
#[derive(Clone, Copy, Debug)]
pub struct NestedMarkers {
    pub path: Field,
    pub parent_id: Field,
}

/// A shard's schema plus the map from mapped paths to tantivy fields.
#[derive(Clone, Debug)]
pub struct FieldTable {
    schema: Schema,
    /// By path; looked up for every field of every indexed document, hence the fast hasher.
    leaves: FxHashMap<String, Arc<LeafField>>,
    pub meta: MetaFields,
    /// The mapping's `nested` fields, outermost first.
    pub nested: Vec<NestedPath>,
    /// Whether a completion field has a context that reads another field of the document
    /// (`path`): its documents are then parsed with the whole document at hand.
    pub completion_paths: bool,
    /// The `percolator` fields, whose values the write path checks as queries.
    pub percolators: Vec<String>,
}

impl FieldTable {
    /// Builds the table for `mapping` on top of `existing` (the shard's current schema, if any).
    /// Returns the table and whether the schema had to grow.
    pub fn build(mapping: &Mapping, existing: Option<&Schema>) -> Result<(FieldTable, bool)> {
        let mut builder = SchemaBuilder::new();
        let mut names: HashMap<String, ()> = HashMap::new();
        if let Some(schema) = existing {
            for (_, entry) in schema.fields() {
                names.insert(entry.name().to_string(), ());
                builder.add_field(entry.clone());
            }
        }
        let mut grew = false;
        for entry in meta_entries() {
            if !names.contains_key(entry.name()) {
                names.insert(entry.name().to_string(), ());
                builder.add_field(entry);
                grew = true;
            }
        }
        let nested = mapping.nested_paths();
        let has_nested_fields = names.contains_key(NESTED_PATH_FIELD);
        if !nested.is_empty() && !has_nested_fields {
            for entry in nested_entries() {
                names.insert(entry.name().to_string(), ());
                builder.add_field(entry);
            }
            grew = true;
        }
        let leaves = mapping.leaves();
        for (path, field) in &leaves {
            if field.field_type == FieldType::GeoPoint {
                // a geo point is two columns, latitude and longitude
                for name in [geo_column(path, "lat"), geo_column(path, "lon")] {
                    if field.doc_values() && !names.contains_key(name.as_str()) {
                        builder.add_field(FieldEntry::new_f64(
                            name.clone(),
                            NumericOptions::default().set_fast(),
                        ));
                        names.insert(name, ());
                        grew = true;
                    }
                }
                continue;
            }
            if field.field_type.is_range() {
                // a range is two columns, the lower and the upper bounds
                if field.index() || field.doc_values() {
                    for name in [range_column(path, "from"), range_column(path, "to")] {
                        if !names.contains_key(name.as_str()) {
                            let options = NumericOptions::default().set_fast();
                            builder.add_field(match field.field_type {
                                FieldType::FloatRange | FieldType::DoubleRange => {
                                    FieldEntry::new_f64(name.clone(), options)
                                }
                                FieldType::IpRange => FieldEntry::new_ip_addr(
                                    name.clone(),
                                    IpAddrOptions::default().set_fast(),
                                ),
                                _ => FieldEntry::new_i64(name.clone(), options),
                            });
                            names.insert(name, ());
                            grew = true;
                        }
                    }
                }
                continue;
            }
            if names.contains_key(path.as_str()) {
                continue;
            }
            if let Some(entry) = leaf_entry(path, field) {
                names.insert(path.clone(), ());
                builder.add_field(entry);
                grew = true;
            }
        }
        let schema = builder.build();
        let field = |name: &str| {
            schema
                .get_field(name)
                .map_err(|e| Error::internal("resolve a metadata field", e))
        };
        let meta = MetaFields {
            id: field(ID_FIELD)?,
            source: field(SOURCE_FIELD)?,
            seq_no: field(SEQ_NO_FIELD)?,
            version: field(VERSION_FIELD)?,
            primary_term: field(PRIMARY_TERM_FIELD)?,
            routing: field(ROUTING_FIELD)?,
            field_names: field(FIELD_NAMES_FIELD)?,
            nested: match (
                schema.get_field(NESTED_PATH_FIELD),
                schema.get_field(NESTED_PARENT_ID_FIELD),
            ) {
                (Ok(path), Ok(parent_id)) => Some(NestedMarkers { path, parent_id }),
                _ => None,
            },
        };
        let mut table = FxHashMap::default();
        for (path, mapping) in leaves {
            let leaf = resolve_leaf(&schema, &path, mapping)?;
            table.insert(path, Arc::new(leaf));
        }
        let completion_paths = table.values().any(|leaf| match &leaf.kind {
            LeafKind::Completion(spec) => spec.contexts.iter().any(|c| c.path.is_some()),
            _ => false,
        });
        let mut percolators: Vec<String> = table
            .values()
            .filter(|leaf| matches!(leaf.kind, LeafKind::Percolator))
            .map(|leaf| leaf.path.clone())
            .collect();
        percolators.sort();
        Ok((
            FieldTable {
                schema,
                leaves: table,
                meta,
                nested,
                completion_paths,
                percolators,
            },
            grew,
        ))
    }

    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The nested field `path`, if the mapping has one there.
    pub fn nested_path(&self, path: &str) -> Option<&NestedPath> {
        self.nested.iter().find(|n| n.path == path)
    }

    /// The innermost nested field holding `path` (a leaf or a nested field itself is held by
    /// the nested field around it); `None`: the root document.
    pub fn nested_scope(&self, path: &str) -> Option<&NestedPath> {
        self.nested
            .iter()
            .filter(|n| {
                path.len() > n.path.len()
                    && path.starts_with(n.path.as_str())
                    && path.as_bytes()[n.path.len()] == b'.'
            })
            .max_by_key(|n| n.path.len())
    }

    pub fn leaf(&self, path: &str) -> Option<&Arc<LeafField>> {
        self.leaves.get(path)
    }

    pub fn leaves(&self) -> impl Iterator<Item = &Arc<LeafField>> {
        self.leaves.values()
    }

    /// Paths matching a `*` pattern, sorted.
    pub fn expand(&self, pattern: &str) -> Vec<String> {
        let mut out: Vec<String> = if pattern.contains('*') {
            self.leaves
                .keys()
                .filter(|p| crate::dynamic::simple_match(pattern, p))
                .cloned()
                .collect()
        } else if self.leaves.contains_key(pattern) {
            vec![pattern.to_string()]
        } else {
            Vec::new()
        };
        out.sort();
        out
    }
}

/// The column holding one coordinate (`lat` or `lon`) of a geo point field.
pub fn geo_column(path: &str, coordinate: &str) -> String {
    format!("{path}#{coordinate}")
}

/// The nested markers: raw terms, indexed only (the root-document filter and the block deletes
/// read their postings).
fn nested_entries() -> Vec<FieldEntry> {
    let raw_indexed = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer("raw")
            .set_index_option(IndexRecordOption::Basic)
            .set_fieldnorms(false),
    );
    vec![
        FieldEntry::new_text(NESTED_PATH_FIELD.into(), raw_indexed.clone()),
        FieldEntry::new_text(NESTED_PARENT_ID_FIELD.into(), raw_indexed),
    ]
}

fn meta_entries() -> Vec<FieldEntry> {
    let raw_indexed = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer("raw")
            .set_index_option(IndexRecordOption::Basic)
            .set_fieldnorms(false),
    );
    vec![
        FieldEntry::new_text(ID_FIELD.into(), raw_indexed.clone().set_stored()),
        FieldEntry::new_bytes(SOURCE_FIELD.into(), BytesOptions::default().set_stored()),
        FieldEntry::new_u64(SEQ_NO_FIELD.into(), NumericOptions::default().set_fast()),
        FieldEntry::new_u64(VERSION_FIELD.into(), NumericOptions::default().set_fast()),
        FieldEntry::new_u64(
            PRIMARY_TERM_FIELD.into(),
            NumericOptions::default().set_fast(),
        ),
        FieldEntry::new_text(ROUTING_FIELD.into(), raw_indexed.clone().set_stored()),
        FieldEntry::new_text(FIELD_NAMES_FIELD.into(), raw_indexed),
    ]
}

/// Numbers and dates are searched through their columns (range scans), as OpenSearch searches
/// points rather than terms: postings for them would cost much of the indexing time and buy
/// little. Without doc values they get postings, so that they stay searchable.
fn numeric_options(mapping: &FieldMapping) -> NumericOptions {
    let options = NumericOptions::default();
    if mapping.doc_values() {
        options.set_fast()
    } else if mapping.index() {
        options.set_indexed()
    } else {
        options
    }
}

/// The tantivy field for a leaf, or `None` for types kept only in `_source`.
fn leaf_entry(path: &str, mapping: &FieldMapping) -> Option<FieldEntry> {
    let name = path.to_string();
    let entry = match mapping.field_type {
        FieldType::Text | FieldType::MatchOnlyText => {
            let mut options = TextOptions::default();
            if mapping.index() {
                let record = match mapping.index_options() {
                    "docs" => IndexRecordOption::Basic,
                    "freqs" => IndexRecordOption::WithFreqs,
                    _ => IndexRecordOption::WithFreqsAndPositions,
                };
                options = options.set_indexing_options(
                    TextFieldIndexing::default()
                        .set_tokenizer(mapping.analyzer())
                        .set_index_option(record)
                        .set_fieldnorms(mapping.norms()),
                );
            }
            FieldEntry::new_text(name, options)
        }
        FieldType::Keyword => {
            let tokenizer = if mapping.normalizer() == Some("lowercase") {
                LOWERCASE_KEYWORD_TOKENIZER
            } else {
                "raw"
            };
            let mut options = TextOptions::default();
            if mapping.index() {
                let record = if mapping.index_options() == "freqs" {
                    IndexRecordOption::WithFreqs
                } else {
                    IndexRecordOption::Basic
                };
                options = options.set_indexing_options(
                    TextFieldIndexing::default()
                        .set_tokenizer(tokenizer)
                        .set_index_option(record)
                        .set_fieldnorms(false),
                );
            }
            if mapping.doc_values() {
                options = options.set_fast(tokenizer);
            }
            FieldEntry::new_text(name, options)
        }
        FieldType::Long
        | FieldType::Integer
        | FieldType::Short
        | FieldType::Byte
        | FieldType::ScaledFloat
        | FieldType::Date => FieldEntry::new_i64(name, numeric_options(mapping)),
        FieldType::Double | FieldType::Float | FieldType::HalfFloat => {
            FieldEntry::new_f64(name, numeric_options(mapping))
        }
        FieldType::Boolean => {
            // booleans keep postings: OpenSearch scores their term queries with BM25
            let mut options = NumericOptions::default();
            if mapping.index() {
                options = options.set_indexed();
            }
            if mapping.doc_values() {
                options = options.set_fast();
            }
            FieldEntry::new_bool(name, options)
        }
        FieldType::Ip => {
            // like numbers: searched through the column when there is one
            let options = IpAddrOptions::default();
            let options = if mapping.doc_values() {
                options.set_fast()
            } else if mapping.index() {
                options.set_indexed()
            } else {
                options
            };
            FieldEntry::new_ip_addr(name, options)
        }
        FieldType::GeoPoint
        | FieldType::IntegerRange
        | FieldType::LongRange
        | FieldType::FloatRange
        | FieldType::DoubleRange
        | FieldType::DateRange
        | FieldType::IpRange
        | FieldType::Object
        | FieldType::Nested => return None,
        // the keys are read through the term dictionary only: no positions, norms or store
        FieldType::Completion => FieldEntry::new_bytes(name, BytesOptions::default().set_indexed()),
        FieldType::Percolator => FieldEntry::new_bytes(name, BytesOptions::default().set_fast()),
        FieldType::KnnVector => {
            let spec = crate::knn::KnnSpec::from_params(&mapping.params);
            FieldEntry::new_custom(
                name,
                CustomOptions::new(
                    tessera_knn::segment::KNN_VECTOR_TYPE,
                    // what the segment plugin builds the field's graphs with
                    tessera_knn::segment_graph::field_params(
                        spec.dimension,
                        spec.space,
                        spec.m.unwrap_or(crate::knn::DEFAULT_M),
                        spec.ef_construction
                            .unwrap_or(crate::knn::DEFAULT_EF_CONSTRUCTION),
                    ),
                ),
            )
        }
    };
    Some(entry)
}

fn resolve_leaf(schema: &Schema, path: &str, mapping: &FieldMapping) -> Result<LeafField> {
    let kind = match mapping.field_type {
        FieldType::Text | FieldType::MatchOnlyText => LeafKind::Text {
            analyzer: mapping.analyzer().to_string(),
            search_analyzer: mapping.search_analyzer().to_string(),
            positions: matches!(mapping.index_options(), "positions" | "offsets"),
        },
        FieldType::Keyword => LeafKind::Keyword {
            ignore_above: mapping.ignore_above(),
            lowercase: mapping.normalizer() == Some("lowercase"),
        },
        FieldType::Long | FieldType::Integer | FieldType::Short | FieldType::Byte => {
            LeafKind::Integer
        }
        FieldType::Double | FieldType::Float | FieldType::HalfFloat => LeafKind::Float,
        FieldType::ScaledFloat => LeafKind::ScaledFloat {
            factor: mapping.scaling_factor(),
        },
        FieldType::Date => LeafKind::Date {
            format: date_format(mapping)?,
        },
        FieldType::Boolean => LeafKind::Boolean,
        FieldType::Ip => LeafKind::Ip,
        FieldType::KnnVector => {
            LeafKind::KnnVector(Arc::new(crate::knn::KnnSpec::from_params(&mapping.params)))
        }
        FieldType::Completion => LeafKind::Completion(Arc::new(
            crate::completion::CompletionSpec::from_params(&mapping.params),
        )),
        FieldType::Percolator => LeafKind::Percolator,
        FieldType::GeoPoint => LeafKind::GeoPoint {
            lat: schema.get_field(&geo_column(path, "lat")).ok(),
            lon: schema.get_field(&geo_column(path, "lon")).ok(),
        },
        FieldType::IntegerRange
        | FieldType::LongRange
        | FieldType::FloatRange
        | FieldType::DoubleRange
        | FieldType::DateRange
        | FieldType::IpRange => {
            let kind = match mapping.field_type {
                FieldType::IntegerRange => RangeKind::Integer,
                FieldType::LongRange => RangeKind::Long,
                FieldType::FloatRange => RangeKind::Float,
                FieldType::DoubleRange => RangeKind::Double,
                FieldType::DateRange => RangeKind::Date(date_format(mapping)?),
                _ => RangeKind::Ip,
            };
            let column = |bound: &str| -> Result<Option<Field>> {
                let Ok(field) = schema.get_field(&range_column(path, bound)) else {
                    return Ok(None);
                };
                let ok = match (kind.is_i64(), schema.get_field_entry(field).field_type()) {
                    (true, TantivyType::I64(_)) => true,
                    (false, TantivyType::F64(_)) => kind != RangeKind::Ip,
                    (false, TantivyType::IpAddr(_)) => kind == RangeKind::Ip,
                    _ => false,
                };
                if !ok {
                    return Err(Error::illegal_state(format!(
                        "field [{path}] of type [{}] does not match the shard schema",
                        mapping.field_type.name()
                    )));
                }
                Ok(Some(field))
            };
            let (from, to) = (column("from")?, column("to")?);
            let present = from.is_some() && to.is_some();
            return Ok(LeafField {
                path: path.to_string(),
                field_type: mapping.field_type,
                field: None,
                kind: LeafKind::Range { kind, from, to },
                indexed: present && mapping.index(),
                fast: present && mapping.doc_values(),
                mapping: mapping.clone(),
                coerce: mapping.coerce(),
                copy_to: mapping.copy_to().map(String::from).collect(),
            });
        }
        FieldType::Object | FieldType::Nested => {
            return Err(Error::illegal_state(format!(
                "object [{path}] is not a leaf"
            )));
        }
    };
    let (field, indexed, fast) = match schema.get_field(path) {
        Ok(field) => {
            let entry = schema.get_field_entry(field);
            check_compatible(path, mapping, entry)?;
            (Some(field), entry.is_indexed(), entry.is_fast())
        }
        Err(_) if matches!(kind, LeafKind::GeoPoint { .. }) => {
            let fast = matches!(kind, LeafKind::GeoPoint { lat: Some(_), .. });
            (None, false, fast)
        }
        Err(_) => {
            return Err(Error::illegal_state(format!(
                "field [{path}] is missing from the shard schema"
            )))
        }
    };
    Ok(LeafField {
        path: path.to_string(),
        field_type: mapping.field_type,
        field,
        kind,
        indexed,
        fast,
        mapping: mapping.clone(),
        coerce: mapping.coerce(),
        copy_to: mapping.copy_to().map(String::from).collect(),
    })
}

fn date_format(mapping: &FieldMapping) -> Result<DateFormat> {
    DateFormat::parse(mapping.format()).map_err(|e| {
        Error::mapper_parsing(format!(
            "Invalid format: [{}]: {}",
            mapping.format(),
            e.message
        ))
    })
}

fn check_compatible(path: &str, mapping: &FieldMapping, entry: &FieldEntry) -> Result<()> {
    let ok = matches!(
        (mapping.field_type, entry.field_type()),
        (
            FieldType::Text | FieldType::MatchOnlyText | FieldType::Keyword,
            TantivyType::Str(_)
        ) | (
            FieldType::Long
                | FieldType::Integer
                | FieldType::Short
                | FieldType::Byte
                | FieldType::ScaledFloat
                | FieldType::Date,
            TantivyType::I64(_)
        ) | (
            FieldType::Double | FieldType::Float | FieldType::HalfFloat,
            TantivyType::F64(_)
        ) | (FieldType::Boolean, TantivyType::Bool(_))
            | (
                FieldType::Completion | FieldType::Percolator,
                TantivyType::Bytes(_)
            )
            | (FieldType::Ip, TantivyType::IpAddr(_))
    ) || matches!(
        (mapping.field_type, entry.field_type()),
        (FieldType::KnnVector, TantivyType::Custom(options))
            if options.type_name() == tessera_knn::segment::KNN_VECTOR_TYPE
                && options.params()["dimension"].as_u64()
                    == mapping.params.get("dimension").and_then(serde_json::Value::as_u64)
    );
    if ok {
        Ok(())
    } else {
        Err(Error::illegal_state(format!(
            "field [{path}] of type [{}] does not match the shard schema",
            mapping.field_type.name()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builds_fields_for_every_leaf() {
        let mapping = Mapping::parse(&json!({"properties": {
            "title": {"type": "text", "fields": {"keyword": {"type": "keyword"}}},
            "n": {"type": "integer"},
            "price": {"type": "scaled_float", "scaling_factor": 100},
            "loc": {"type": "geo_point"},
            "when": {"type": "date", "format": "yyyy-MM-dd"}
        }}))
        .unwrap();
        let (table, grew) = FieldTable::build(&mapping, None).unwrap();
        assert!(grew);
        let title = table.leaf("title").unwrap();
        assert!(matches!(
            title.kind,
            LeafKind::Text {
                positions: true,
                ..
            }
        ));
        assert!(title.indexed && !title.fast);
        let keyword = table.leaf("title.keyword").unwrap();
        assert!(keyword.fast);
        assert!(
            matches!(table.leaf("price").unwrap().kind, LeafKind::ScaledFloat { factor } if factor == 100.0)
        );
        assert!(table.leaf("loc").unwrap().field.is_none());
        assert!(matches!(
            table.leaf("loc").unwrap().kind,
            LeafKind::GeoPoint {
                lat: Some(_),
                lon: Some(_)
            }
        ));
        assert_eq!(table.expand("t*"), ["title", "title.keyword"]);
    }

    #[test]
    fn ranges_are_two_columns() {
        let mapping = Mapping::parse(&json!({"properties": {
            "d": {"type": "double_range"},
            "t": {"type": "date_range", "doc_values": false},
            "ip": {"type": "ip_range"},
            "off": {"type": "long_range", "index": false, "doc_values": false}
        }}))
        .unwrap();
        let (table, _) = FieldTable::build(&mapping, None).unwrap();
        let d = table.leaf("d").unwrap();
        assert!(d.field.is_none() && d.indexed && d.fast);
        let LeafKind::Range {
            kind: RangeKind::Double,
            from: Some(from),
            to: Some(to),
        } = &d.kind
        else {
            panic!("{:?}", d.kind)
        };
        assert_eq!(table.schema().get_field_name(*from), "d#from");
        assert_eq!(table.schema().get_field_name(*to), "d#to");
        let t = table.leaf("t").unwrap();
        assert!(t.indexed && !t.fast, "searchable without doc values");
        assert!(matches!(
            t.kind,
            LeafKind::Range {
                kind: RangeKind::Date(_),
                ..
            }
        ));
        let off = table.leaf("off").unwrap();
        assert!(!off.is_searchable());
        assert!(matches!(off.kind, LeafKind::Range { from: None, .. }));
        // the schema is stable across rebuilds
        let (again, grew) = FieldTable::build(&mapping, Some(table.schema())).unwrap();
        assert!(!grew);
        assert!(again.leaf("ip").unwrap().fast);
    }

    #[test]
    fn growth_is_append_only() {
        let first = Mapping::parse(&json!({"properties": {"b": {"type": "long"}}})).unwrap();
        let (t1, _) = FieldTable::build(&first, None).unwrap();
        let b_field = t1.leaf("b").unwrap().field.unwrap();
        let mut second = first.clone();
        second
            .merge_json(&json!({"properties": {"a": {"type": "keyword"}}}))
            .unwrap();
        let (t2, grew) = FieldTable::build(&second, Some(t1.schema())).unwrap();
        assert!(grew);
        assert_eq!(
            t2.leaf("b").unwrap().field.unwrap(),
            b_field,
            "existing ids never move"
        );
        assert!(t2.leaf("a").unwrap().field.unwrap().field_id() > b_field.field_id());
        let (_, grew_again) = FieldTable::build(&second, Some(t2.schema())).unwrap();
        assert!(!grew_again);
    }
}
