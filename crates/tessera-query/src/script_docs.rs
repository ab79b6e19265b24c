//! `doc['field']` for scripts over a shard's columns. [`ScriptFields`] resolves the fields a
//! compiled script reads (`Script::fields`, in slot order) against the shard's mapping once per
//! request; [`SegmentDocs`] opens their tantivy columns once per segment; `set_doc` then
//! positions every column on a document, so a script's `doc['f'].value` is a read from an
//! already open column (no lookup by name, no allocation for numbers).
//!
//! Values come as OpenSearch's `ScriptDocValues` give them: longs for the integer types,
//! doubles for `float`/`double`/`scaled_float`, dates as `ZonedDateTime`s in UTC, strings for
//! keywords and ips, booleans, geo points.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use tantivy::columnar::{Column, ColumnIndex, StrColumn};
use tantivy::{DocId, SegmentReader};
use tessera_common::{Error, Result};
use tessera_mapping::{FieldTable, LeafKind};
use tessera_script::{DocValues, GeoPoint, Value};

/// How one field's values are read.
#[derive(Clone, Debug)]
enum Source {
    /// Not mapped: no values (`doc.containsKey` is false).
    Unmapped,
    Long(String),
    Double(String),
    Scaled(String, f64),
    Date(String),
    Bool(String),
    Keyword(String),
    Ip(String),
    Geo(String, String),
}

/// The fields of one script, resolved against a shard's mapping.
#[derive(Clone, Debug)]
pub struct ScriptFields {
    sources: Vec<Source>,
}

impl ScriptFields {
    /// Resolves `fields` (a script's `doc[...]` names in slot order). A field Painless cannot
    /// read per document fails as OpenSearch's field data does.
    pub fn resolve(table: &FieldTable, fields: &[String]) -> Result<ScriptFields> {
        let sources = fields
            .iter()
            .map(|name| {
                let Some(leaf) = table.leaf(name) else {
                    return Ok(Source::Unmapped);
                };
                let path = leaf.path.clone();
                let no_doc_values = || {
                    Error::illegal_argument(format!(
                        "Can't load fielddata on [{name}] because fielddata is unsupported on fields of type [{}]. Use doc values instead.",
                        leaf.field_type.name()
                    ))
                };
                Ok(match &leaf.kind {
                    LeafKind::Text { .. } => {
                        return Err(Error::illegal_argument(format!(
                            "Text fields are not optimised for operations that require per-document field data like aggregations and sorting, so these operations are disabled by default. Please use a keyword field instead. Alternatively, set fielddata=true on [{name}] in order to load field data by uninverting the inverted index. Note that this can use significant memory."
                        )))
                    }
                    _ if !leaf.fast && !matches!(leaf.kind, LeafKind::GeoPoint { .. }) => {
                        return Err(no_doc_values())
                    }
                    LeafKind::Integer => Source::Long(path),
                    LeafKind::Float => Source::Double(path),
                    LeafKind::ScaledFloat { factor } => Source::Scaled(path, *factor),
                    LeafKind::Date { .. } => Source::Date(path),
                    LeafKind::Boolean => Source::Bool(path),
                    LeafKind::Keyword { .. } => Source::Keyword(path),
                    LeafKind::Ip => Source::Ip(path),
                    LeafKind::GeoPoint {
                        lat: Some(lat),
                        lon: Some(lon),
                    } => {
                        let schema = table.schema();
                        Source::Geo(
                            schema.get_field_name(*lat).to_string(),
                            schema.get_field_name(*lon).to_string(),
                        )
                    }
                    _ => return Err(no_doc_values()),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(ScriptFields { sources })
    }

    /// Whether field `slot` is read as doubles (`double`, `float`, `scaled_float`).
    pub fn is_double(&self, slot: usize) -> bool {
        matches!(
            self.sources.get(slot),
            Some(Source::Double(_) | Source::Scaled(..))
        )
    }

    /// Opens the columns of `segment`.
    pub fn open(&self, segment: &SegmentReader) -> tantivy::Result<SegmentDocs> {
        let fast = segment.fast_fields();
        let columns = self
            .sources
            .iter()
            .map(|source| {
                Ok(match source {
                    Source::Unmapped => Col::Unmapped,
                    Source::Long(p) => fast.column_opt::<i64>(p)?.map_or(Col::Empty, Col::Long),
                    Source::Date(p) => fast.column_opt::<i64>(p)?.map_or(Col::Empty, Col::Date),
                    Source::Double(p) => fast.column_opt::<f64>(p)?.map_or(Col::Empty, Col::Double),
                    Source::Scaled(p, factor) => fast
                        .column_opt::<i64>(p)?
                        .map_or(Col::Empty, |c| Col::Scaled(c, *factor)),
                    Source::Bool(p) => fast.column_opt::<bool>(p)?.map_or(Col::Empty, Col::Bool),
                    Source::Keyword(p) => fast.str(p)?.map_or(Col::Empty, Col::Keyword),
                    Source::Ip(p) => fast
                        .column_opt::<std::net::Ipv6Addr>(p)?
                        .map_or(Col::Empty, Col::Ip),
                    Source::Geo(lat, lon) => {
                        match (fast.column_opt::<f64>(lat)?, fast.column_opt::<f64>(lon)?) {
                            (Some(lat), Some(lon)) => Col::Geo(lat, lon),
                            _ => Col::Empty,
                        }
                    }
                })
            })
            .collect::<tantivy::Result<Vec<_>>>()?;
        let rows = vec![0..0; columns.len()];
        Ok(SegmentDocs {
            columns: Arc::new(columns),
            rows,
            doc: 0,
            terms: RefCell::new(HashMap::new()),
        })
    }
}

/// One field's column on one segment.
enum Col {
    Unmapped,
    /// Mapped, but no document of the segment has a value.
    Empty,
    Long(Column<i64>),
    Double(Column<f64>),
    Scaled(Column<i64>, f64),
    Date(Column<i64>),
    Bool(Column<bool>),
    Keyword(StrColumn),
    Ip(Column<std::net::Ipv6Addr>),
    Geo(Column<f64>, Column<f64>),
}

/// The values of one document of one segment: what a script's `doc` reads.
pub struct SegmentDocs {
    columns: Arc<Vec<Col>>,
    /// Per field, the value rows of the current document.
    rows: Vec<Range<u32>>,
    doc: DocId,
    /// Keyword terms already looked up in the segment's dictionary, by (slot, ordinal): a
    /// script reading a keyword of every document looks each distinct term up once.
    terms: RefCell<HashMap<(u32, u64), Value>>,
}

/// The most keyword terms a [`SegmentDocs`] keeps (past it, terms are looked up each time).
const MAX_CACHED_TERMS: usize = 65_536;

impl SegmentDocs {
    /// Positions every column on `doc`.
    pub fn set_doc(&mut self, doc: DocId) {
        self.doc = doc;
        for (col, rows) in self.columns.iter().zip(self.rows.iter_mut()) {
            *rows = match col {
                Col::Unmapped | Col::Empty => 0..0,
                Col::Long(c) | Col::Scaled(c, _) | Col::Date(c) => c.index.value_row_ids(doc),
                Col::Double(c) => c.index.value_row_ids(doc),
                Col::Bool(c) => c.index.value_row_ids(doc),
                Col::Ip(c) => c.index.value_row_ids(doc),
                Col::Keyword(c) => c.ords().index.value_row_ids(doc),
                Col::Geo(lat, _) => lat.index.value_row_ids(doc),
            };
        }
    }

    /// The first value of double field `slot` (see [`ScriptFields::is_double`]) of `doc`,
    /// read without positioning the other columns.
    #[inline]
    pub fn first_f64(&self, slot: u32, doc: DocId) -> Option<f64> {
        match &self.columns[slot as usize] {
            Col::Scaled(c, factor) => c.first(doc).map(|v| v as f64 / factor),
            Col::Double(c) => c.first(doc),
            _ => None,
        }
    }

    /// The first values of double field `slot` for a block of documents (in doc order), into
    /// `out`, as [`SegmentDocs::first_f64`] reads them; a document without a value clears
    /// its flag in `has`. A column every document has a value in is read with one call for
    /// the block. `ints` is scratch kept between blocks.
    pub fn first_f64_block(
        &self,
        slot: u32,
        docs: &[DocId],
        out: &mut [f64],
        has: &mut [bool],
        ints: &mut Vec<i64>,
    ) {
        match &self.columns[slot as usize] {
            Col::Scaled(c, factor) if matches!(c.index, ColumnIndex::Full) => {
                ints.resize(docs.len(), 0);
                c.values.get_vals(docs, ints);
                for (v, i) in out.iter_mut().zip(ints.iter()) {
                    *v = *i as f64 / factor;
                }
            }
            Col::Double(c) if matches!(c.index, ColumnIndex::Full) => {
                c.values.get_vals(docs, &mut out[..docs.len()]);
            }
            _ => {
                for ((v, has), doc) in out.iter_mut().zip(has.iter_mut()).zip(docs) {
                    match self.first_f64(slot, *doc) {
                        Some(value) => *v = value,
                        None => *has = false,
                    }
                }
            }
        }
    }
}

impl DocValues for SegmentDocs {
    fn count(&self, slot: u32) -> usize {
        self.rows[slot as usize].len()
    }

    fn value(&self, slot: u32, index: usize) -> Value {
        let row = self.rows[slot as usize].start + index as u32;
        match &self.columns[slot as usize] {
            Col::Unmapped | Col::Empty => Value::Null,
            Col::Long(c) => Value::Long(c.values.get_val(row)),
            Col::Date(c) => Value::Date(c.values.get_val(row)),
            Col::Double(c) => Value::Double(c.values.get_val(row)),
            Col::Scaled(c, factor) => Value::Double(c.values.get_val(row) as f64 / factor),
            Col::Bool(c) => Value::Bool(c.values.get_val(row)),
            Col::Ip(c) => Value::str(&tessera_mapping::values::format_ip(c.values.get_val(row))),
            Col::Keyword(c) => {
                let ord = c.ords().values.get_val(row);
                if let Some(term) = self.terms.borrow().get(&(slot, ord)) {
                    return term.clone();
                }
                let mut text = String::new();
                let term = match c.ord_to_str(ord, &mut text) {
                    Ok(true) => Value::str(&text),
                    _ => Value::Null,
                };
                let mut terms = self.terms.borrow_mut();
                if terms.len() < MAX_CACHED_TERMS {
                    terms.insert((slot, ord), term.clone());
                }
                term
            }
            Col::Geo(lat, lon) => Value::Geo(GeoPoint {
                lat: lat.values.get_val(row),
                lon: lon.values.get_val(row),
            }),
        }
    }

    fn has_field(&self, slot: u32) -> bool {
        !matches!(self.columns[slot as usize], Col::Unmapped)
    }
}
