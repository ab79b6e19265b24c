//! Mappings: field types, dynamic mapping, analyzers, the append-only tantivy schema of a shard
//! (the field table), document parsing and `_source` filtering.

pub mod analysis;
pub mod completion;
pub mod document;
pub mod dynamic;
pub mod field_table;
pub mod field_type;
pub mod geo;
pub mod json;
pub mod knn;
pub mod mapping;
pub mod range;
pub mod sloppy_math;
pub mod source_filter;
pub mod values;

pub use document::{parse_document, parse_document_for_replay, parse_json_document, ParseOutcome};
pub use field_table::{
    scaled_float_value, FieldTable, LeafField, LeafKind, MetaFields, NestedMarkers,
};
pub use field_type::{Dynamic, FieldType};
pub use json::Json;
pub use mapping::{FieldMapping, Mapping, NestedPath};
pub use source_filter::SourceFilter;
