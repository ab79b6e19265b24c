//! Where an aggregation reads its values: the field resolved against the shard's mapping
//! ([`ValueSource`]) and, per segment, its column read a block of documents at a time.
//!
//! Reading blocks (the matching docs of one collection step, ascending) lets a full column be
//! read with one batched call, and turns optional or multi-valued columns into `(position in
//! block, value)` pairs with one row-id translation per block instead of one per document.

use std::net::Ipv6Addr;

use tantivy::columnar::{Column, ColumnIndex, StrColumn};
use tantivy::{DocId, SegmentReader};
use tessera_common::{Error, Result};
use tessera_date::DateFormat;
use tessera_mapping::range::RangeKind;
use tessera_mapping::{FieldTable, FieldType, LeafKind};
use tessera_query::compile::script::PreparedScript;
use tessera_query::script_docs::ScriptFields;

use crate::prepare::AggContext;
use crate::request::ValuesSourceParams;
use crate::script_values::{ScriptSource, ScriptValues};

/// How numbers of a field are stored and shown.
#[derive(Clone, Debug, PartialEq)]
pub enum NumericKind {
    /// long, integer, short, byte.
    Long,
    /// double, float, half_float (already rounded to the type's precision).
    Double,
    /// scaled_float: the column holds `round(value × factor)`.
    Scaled(f64),
    /// Epoch milliseconds, shown with the field's format.
    Date(DateFormat),
    /// 0 and 1, shown as `false`/`true`.
    Boolean,
}

/// A field resolved for an aggregation.
#[derive(Clone, Debug, PartialEq)]
pub enum ValueSource {
    /// The field is not mapped in this shard: the aggregation sees no values.
    Unmapped,
    Numeric {
        path: String,
        kind: NumericKind,
    },
    Keyword {
        path: String,
    },
    Ip {
        path: String,
    },
    /// A range field: only counted (value_count, missing) or bucketed by the histograms.
    Range(RangeSource),
    /// A script's values (see [`crate::script_values`]).
    Script(ScriptSource),
}

/// A range field resolved for an aggregation: its kind and bound columns.
#[derive(Clone, Debug, PartialEq)]
pub struct RangeSource {
    pub path: String,
    pub kind: RangeKind,
    pub from: String,
    pub to: String,
}

impl RangeSource {
    /// The range field at `field` with doc values; `None` when `field` is not a range field
    /// here. The histograms take range fields, which `ValueSource::resolve` refuses.
    pub fn resolve(table: &FieldTable, field: &str) -> Result<Option<RangeSource>> {
        let Some(leaf) = table.leaf(field) else {
            return Ok(None);
        };
        let LeafKind::Range { kind, from, to } = &leaf.kind else {
            return Ok(None);
        };
        let (Some(from), Some(to), true) = (from, to, leaf.fast) else {
            return Err(no_doc_values(field, leaf.field_type));
        };
        let schema = table.schema();
        Ok(Some(RangeSource {
            path: field.to_string(),
            kind: kind.clone(),
            from: schema.get_field_name(*from).to_string(),
            to: schema.get_field_name(*to).to_string(),
        }))
    }
}

fn no_doc_values(field: &str, field_type: FieldType) -> Error {
    Error::illegal_argument(format!(
        "Can't load fielddata on [{field}] because fielddata is unsupported on fields of type [{}]. Use doc values instead.",
        field_type.name()
    ))
}

/// What kinds of values an aggregation type can work on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accepts {
    /// Numbers, dates and booleans (histogram, range, min, avg, ...).
    Numeric,
    /// Anything with doc values but range fields (terms, cardinality, ...).
    Any,
    /// Anything with doc values, range fields included: aggregations that only count the
    /// documents with a value (value_count, missing).
    Counted,
    /// Ip fields only (ip_range).
    Ip,
}

impl ValueSource {
    /// Resolves `field` for the aggregation type `agg_type`, with OpenSearch's errors for
    /// fields that cannot be aggregated on.
    pub fn resolve(
        table: &FieldTable,
        field: &str,
        agg_type: &str,
        accepts: Accepts,
    ) -> Result<ValueSource> {
        let Some(leaf) = table.leaf(field) else {
            return Ok(ValueSource::Unmapped);
        };
        let unsupported = || {
            Error::illegal_argument(format!(
                "Field [{field}] of type [{}] is not supported for aggregation [{agg_type}]",
                leaf.field_type.name()
            ))
        };
        if let LeafKind::Text { .. } = leaf.kind {
            return Err(Error::text_fielddata_disabled(field));
        }
        if let LeafKind::GeoPoint { .. } = leaf.kind {
            return Err(unsupported());
        }
        if let LeafKind::Range { .. } = leaf.kind {
            if accepts != Accepts::Counted {
                return Err(unsupported());
            }
            let range = RangeSource::resolve(table, field)?.ok_or_else(unsupported)?;
            return Ok(ValueSource::Range(range));
        }
        if !leaf.fast {
            return Err(no_doc_values(field, leaf.field_type));
        }
        let path = field.to_string();
        let source = match &leaf.kind {
            LeafKind::Integer => ValueSource::Numeric {
                path,
                kind: NumericKind::Long,
            },
            LeafKind::Float => ValueSource::Numeric {
                path,
                kind: NumericKind::Double,
            },
            LeafKind::ScaledFloat { factor } => ValueSource::Numeric {
                path,
                kind: NumericKind::Scaled(*factor),
            },
            LeafKind::Date { format } => ValueSource::Numeric {
                path,
                kind: NumericKind::Date(format.clone()),
            },
            LeafKind::Boolean => ValueSource::Numeric {
                path,
                kind: NumericKind::Boolean,
            },
            LeafKind::Keyword { .. } => ValueSource::Keyword { path },
            LeafKind::Ip => ValueSource::Ip { path },
            LeafKind::Text { .. }
            | LeafKind::GeoPoint { .. }
            | LeafKind::Range { .. }
            | LeafKind::KnnVector(_)
            | LeafKind::Completion(_)
            | LeafKind::Percolator => return Err(unsupported()),
        };
        let accepted = match accepts {
            Accepts::Numeric => matches!(source, ValueSource::Numeric { .. }),
            Accepts::Ip => matches!(source, ValueSource::Ip { .. }),
            Accepts::Any | Accepts::Counted => true,
        };
        if !accepted {
            return Err(unsupported());
        }
        Ok(source)
    }

    /// The source of an aggregation's values: its field, or its script; a value script when
    /// both are given (a script beside an unmapped field has no values to transform).
    pub fn resolve_params(
        ctx: &AggContext,
        params: &ValuesSourceParams,
        agg_type: &str,
        accepts: Accepts,
    ) -> Result<ValueSource> {
        let Some(spec) = &params.script else {
            let field = params.require_field(agg_type)?;
            return ValueSource::resolve(ctx.table, field, agg_type, accepts);
        };
        let (field, field_kind) = match &params.field {
            None => (None, None),
            Some(field) => match ValueSource::resolve(ctx.table, field, agg_type, accepts)? {
                ValueSource::Unmapped => return Ok(ValueSource::Unmapped),
                ValueSource::Range(_) => {
                    return Err(Error::illegal_argument(format!(
                        "a value script on the range field [{field}] is not supported by Tessera"
                    )))
                }
                resolved => (
                    Some(ScriptFields::resolve(
                        ctx.table,
                        std::slice::from_ref(field),
                    )?),
                    resolved.numeric_kind().cloned(),
                ),
            },
        };
        let script =
            PreparedScript::prepare(ctx.table, spec, tessera_script::ScriptContext::Aggregation)?;
        Ok(ValueSource::Script(ScriptSource {
            script: std::sync::Arc::new(script),
            field,
            field_kind,
            failures: ctx.script_failures.clone(),
        }))
    }

    /// The numeric kind, for numeric sources.
    pub fn numeric_kind(&self) -> Option<&NumericKind> {
        match self {
            ValueSource::Numeric { kind, .. } => Some(kind),
            _ => None,
        }
    }

    /// The numeric kind values are shown as: a numeric field's, or a value script's field's.
    pub fn shown_as(&self) -> Option<&NumericKind> {
        match self {
            ValueSource::Script(script) => script.field_kind.as_ref(),
            _ => self.numeric_kind(),
        }
    }

    /// Whether the field is a date (keys are shown as dates).
    pub fn is_date(&self) -> bool {
        matches!(self.numeric_kind(), Some(NumericKind::Date(_)))
    }

    /// The mapped field type name (for errors), or `None` when unmapped.
    pub fn field_type_of(table: &FieldTable, field: &str) -> Option<FieldType> {
        table.leaf(field).map(|leaf| leaf.field_type)
    }
}

/// Reusable buffers for block reads: the row-id translation of sparse columns and where each
/// value read belongs.
#[derive(Default)]
struct Rows {
    docs: Vec<DocId>,
    rows: Vec<u32>,
    /// The position in the block of each value of the last read.
    positions: Vec<u32>,
    /// 0, 1, 2, ...: the positions of a full column's values, kept between reads.
    identity: Vec<u32>,
    /// Whether the last read was of a full column (its positions are `identity`).
    full: bool,
}

impl Rows {
    /// Reads every value of the docs of `docs` (ascending) into `values`, a doc's values in
    /// column order; [`Rows::positions`] then says which position of `docs` each belongs to.
    fn read<T>(&mut self, column: &Column<T>, docs: &[DocId], values: &mut Vec<T>)
    where
        T: Copy + PartialOrd + Default + std::fmt::Debug + Send + Sync + 'static,
    {
        values.clear();
        self.full = false;
        match &column.index {
            ColumnIndex::Empty { .. } => self.positions.clear(),
            ColumnIndex::Full => {
                values.resize(docs.len(), T::default());
                column.values.get_vals(docs, values);
                if self.identity.len() < docs.len() {
                    self.identity = (0..docs.len() as u32).collect();
                }
                self.full = true;
            }
            _ => {
                // tantivy appends to these buffers
                self.docs.clear();
                self.rows.clear();
                column.row_ids_for_docs(docs, &mut self.docs, &mut self.rows);
                values.resize(self.rows.len(), T::default());
                column.values.get_vals(&self.rows, values);
                self.positions.clear();
                let mut position = 0;
                for doc in &self.docs {
                    while docs[position] != *doc {
                        position += 1;
                    }
                    self.positions.push(position as u32);
                }
            }
        }
    }

    /// The positions of the values of the last read (at least as many as the values).
    fn positions(&self) -> &[u32] {
        if self.full {
            &self.identity
        } else {
            &self.positions
        }
    }
}

/// Calls `f(position, value)` for every value of a [`Rows::read`], from one loop without
/// branches or bounds checks: with a single call site the compiler inlines `f`, which runs
/// once per value of every matching document.
#[inline]
fn each<T: Copy>(positions: &[u32], values: &[T], mut f: impl FnMut(usize, T)) {
    for (position, value) in positions.iter().zip(values) {
        f(*position as usize, *value);
    }
}

enum NumericColumn {
    I64(Column<i64>),
    F64(Column<f64>),
    Bool(Column<bool>),
}

/// A numeric field's values in one segment.
pub struct NumericValues {
    column: Option<NumericColumn>,
    /// The scaling factor of scaled floats (1 otherwise): a value is `raw × (1 / factor)`, the
    /// multiplication by the inverse OpenSearch's scaled_float field data does.
    factor: f64,
    /// Which positions of the current block had at least one value (for `missing`).
    seen: Vec<bool>,
    rows: Rows,
    /// The block's values in the form last asked for.
    raw: Vec<i64>,
    floats: Vec<f64>,
    bools: Vec<bool>,
    /// A script's values, in place of a column.
    script: Option<Box<ScriptValues>>,
}

fn open_error(e: tantivy::TantivyError) -> Error {
    Error::internal("open an aggregation column", e)
}

impl NumericValues {
    pub fn open(source: &ValueSource, segment: &SegmentReader) -> Result<NumericValues> {
        let fast = segment.fast_fields();
        let (column, scale) = match source {
            ValueSource::Numeric { path, kind } => match kind {
                NumericKind::Double => (
                    fast.column_opt::<f64>(path)
                        .map_err(open_error)?
                        .map(NumericColumn::F64),
                    1.0,
                ),
                NumericKind::Boolean => (
                    fast.column_opt::<bool>(path)
                        .map_err(open_error)?
                        .map(NumericColumn::Bool),
                    1.0,
                ),
                NumericKind::Scaled(factor) => (
                    fast.column_opt::<i64>(path)
                        .map_err(open_error)?
                        .map(NumericColumn::I64),
                    *factor,
                ),
                NumericKind::Long | NumericKind::Date(_) => (
                    fast.column_opt::<i64>(path)
                        .map_err(open_error)?
                        .map(NumericColumn::I64),
                    1.0,
                ),
            },
            _ => (None, 1.0),
        };
        let script = match source {
            ValueSource::Script(script) => Some(Box::new(script.open(segment)?)),
            _ => None,
        };
        Ok(NumericValues {
            column,
            factor: scale,
            seen: Vec::new(),
            rows: Rows::default(),
            raw: Vec::new(),
            floats: Vec::new(),
            bools: Vec::new(),
            script,
        })
    }

    /// Whether this segment has the column (or script) at all.
    pub fn is_present(&self) -> bool {
        self.column.is_some() || self.script.is_some()
    }

    /// Reads the block's stored integers (before any scaling) into `self.raw`, their
    /// positions into `self.rows`. Doubles read as nothing.
    fn read_raw(&mut self, docs: &[DocId]) {
        match &self.column {
            Some(NumericColumn::I64(column)) => self.rows.read(column, docs, &mut self.raw),
            Some(NumericColumn::Bool(column)) => {
                self.rows.read(column, docs, &mut self.bools);
                self.raw.clear();
                self.raw.extend(self.bools.iter().map(|b| *b as i64));
            }
            _ => self.raw.clear(),
        }
    }

    /// Reads the block's values as `f64` into `self.floats` (scaled floats times the inverse
    /// of their factor), their positions into `self.rows`.
    fn read_f64(&mut self, docs: &[DocId]) {
        if let Some(script) = &mut self.script {
            let (floats, positions) = (&mut self.floats, &mut self.rows.positions);
            floats.clear();
            positions.clear();
            self.rows.full = false;
            return script.for_each_f64(docs, |position, value| {
                positions.push(position as u32);
                floats.push(value);
            });
        }
        if let Some(NumericColumn::F64(column)) = &self.column {
            return self.rows.read(column, docs, &mut self.floats);
        }
        self.read_raw(docs);
        self.floats.clear();
        if self.factor == 1.0 {
            self.floats.extend(self.raw.iter().map(|v| *v as f64));
        } else {
            let inverse = 1.0 / self.factor;
            self.floats
                .extend(self.raw.iter().map(|v| *v as f64 * inverse));
        }
    }

    /// Every value of the block's docs as `f64` (scaled floats times the inverse of their
    /// factor).
    pub fn for_each_f64(&mut self, docs: &[DocId], f: impl FnMut(usize, f64)) {
        self.read_f64(docs);
        each(self.rows.positions(), &self.floats, f);
    }

    /// Whether no document has more than one value in this segment (a missing column has
    /// none at all).
    pub fn is_single_valued(&self) -> bool {
        if self.script.is_some() {
            return false;
        }
        let cardinality = match &self.column {
            None => return true,
            Some(NumericColumn::I64(c)) => c.get_cardinality(),
            Some(NumericColumn::F64(c)) => c.get_cardinality(),
            Some(NumericColumn::Bool(c)) => c.get_cardinality(),
        };
        cardinality != tantivy::columnar::Cardinality::Multivalued
    }

    /// The scaling factor when the column stores integers (long, date, boolean, scaled
    /// float), for exact sums of [`NumericValues::for_each_raw`]; `None` for doubles.
    pub fn raw_factor(&self) -> Option<f64> {
        match &self.column {
            Some(NumericColumn::I64(..)) | Some(NumericColumn::Bool(..)) => Some(self.factor),
            _ => None,
        }
    }

    /// Every stored integer of the block's docs, before any scaling.
    pub fn for_each_raw(&mut self, docs: &[DocId], f: impl FnMut(usize, i64)) {
        self.read_raw(docs);
        each(self.rows.positions(), &self.raw, f);
    }

    /// Like [`NumericValues::for_each_f64`], with `missing` standing in for docs without a
    /// value (the aggregations' `missing` parameter).
    pub fn for_each_f64_or(
        &mut self,
        docs: &[DocId],
        missing: Option<f64>,
        mut f: impl FnMut(usize, f64),
    ) {
        let Some(missing) = missing else {
            return self.for_each_f64(docs, f);
        };
        let mut seen = std::mem::take(&mut self.seen);
        seen.clear();
        seen.resize(docs.len(), false);
        self.for_each_f64(docs, |p, v| {
            seen[p] = true;
            f(p, v)
        });
        for (p, _) in seen.iter().enumerate().filter(|(_, s)| !**s) {
            f(p, missing);
        }
        self.seen = seen;
    }

    /// Every value as an exact `i64` (long and date fields; other kinds are truncated).
    pub fn for_each_i64(&mut self, docs: &[DocId], f: impl FnMut(usize, i64)) {
        match &self.column {
            Some(NumericColumn::I64(_)) if self.factor == 1.0 => self.read_raw(docs),
            _ => {
                self.read_f64(docs);
                self.raw.clear();
                self.raw.extend(self.floats.iter().map(|v| *v as i64));
            }
        }
        each(self.rows.positions(), &self.raw, f);
    }

    /// Whether a doc has at least one value (docs checked one by one; for `missing`/`exists`).
    pub fn has_value(&self, doc: DocId) -> bool {
        match &self.column {
            None => false,
            Some(NumericColumn::I64(c)) => c.values_for_doc(doc).next().is_some(),
            Some(NumericColumn::F64(c)) => c.values_for_doc(doc).next().is_some(),
            Some(NumericColumn::Bool(c)) => c.values_for_doc(doc).next().is_some(),
        }
    }
}

/// A keyword field's term ordinals in one segment.
pub struct KeywordValues {
    column: Option<StrColumn>,
    rows: Rows,
    ords: Vec<u64>,
}

impl KeywordValues {
    pub fn open(source: &ValueSource, segment: &SegmentReader) -> Result<KeywordValues> {
        let column = match source {
            ValueSource::Keyword { path } => segment.fast_fields().str(path).map_err(open_error)?,
            _ => None,
        };
        Ok(KeywordValues {
            column,
            rows: Rows::default(),
            ords: Vec::new(),
        })
    }

    /// The number of distinct terms in this segment.
    pub fn num_terms(&self) -> usize {
        self.column.as_ref().map_or(0, |c| c.num_terms())
    }

    /// Every term ordinal of the block's docs.
    pub fn for_each_ord(&mut self, docs: &[DocId], f: impl FnMut(usize, u64)) {
        if let Some(column) = &self.column {
            self.rows.read(column.ords(), docs, &mut self.ords);
            each(self.rows.positions(), &self.ords, f);
        }
    }

    /// The term of an ordinal.
    pub fn term(&self, ord: u64, out: &mut String) -> Result<()> {
        out.clear();
        if let Some(column) = &self.column {
            column
                .ord_to_str(ord, out)
                .map_err(|e| Error::internal("read a term of an aggregation column", e))?;
        }
        Ok(())
    }

    /// Where `term` sits among this segment's ordinals, comparable with `2·ord + 1` for any
    /// ordinal: `2·ord + 1` when the segment has the term, else `2·next` (`next` the ordinal
    /// of the first larger term, or the number of terms).
    pub fn ord_position(&self, term: &[u8]) -> Result<u64> {
        let Some(column) = &self.column else {
            return Ok(0);
        };
        let hit = column
            .dictionary()
            .term_ord_or_next(term)
            .map_err(|e| Error::internal("look up a term of an aggregation column", e))?;
        Ok(match hit {
            tantivy::columnar::TermOrdHit::Exact(ord) => 2 * ord + 1,
            tantivy::columnar::TermOrdHit::Next(ord) => 2 * ord.min(column.num_terms() as u64),
        })
    }

    pub fn has_value(&self, doc: DocId) -> bool {
        self.column
            .as_ref()
            .is_some_and(|c| c.ords().values_for_doc(doc).next().is_some())
    }

    /// Whether some document has several terms in this segment.
    pub fn is_multivalued(&self) -> bool {
        self.column.as_ref().is_some_and(|c| {
            c.ords().get_cardinality() == tantivy::columnar::Cardinality::Multivalued
        })
    }

    /// Calls `f(ordinal, term bytes)` for each of `ords` (ascending, repeats allowed), reading
    /// each dictionary block they fall in once: [`KeywordValues::term`] rescans a term's block
    /// from its start (hundreds of terms), so resolving many ordinals one by one is quadratic
    /// in the block.
    pub fn for_each_term_of(&self, ords: &[u64], mut f: impl FnMut(u64, &[u8])) -> Result<()> {
        let Some(column) = &self.column else {
            return Ok(());
        };
        let mut next = ords.iter();
        let found = column
            .dictionary()
            .sorted_ords_to_term_cb(ords, |term| {
                if let Some(&ord) = next.next() {
                    f(ord, term);
                }
            })
            .map_err(|e| Error::internal("read the terms of an aggregation column", e))?;
        if !found {
            return Err(Error::internal(
                "read the terms of an aggregation column",
                "an ordinal past the dictionary's end",
            ));
        }
        Ok(())
    }

    /// Calls `f(ordinal, term bytes)` for every term of the segment, in order: one sequential
    /// pass over the dictionary, much cheaper per term than [`KeywordValues::term`] lookups
    /// when most terms are needed.
    pub fn for_each_term(&self, mut f: impl FnMut(u64, &[u8])) -> Result<()> {
        let Some(column) = &self.column else {
            return Ok(());
        };
        let mut stream = column
            .dictionary()
            .stream()
            .map_err(|e| Error::internal("read the terms of an aggregation column", e))?;
        while stream.advance() {
            f(stream.term_ord(), stream.key());
        }
        Ok(())
    }
}

/// An ip field's values in one segment.
pub struct IpValues {
    column: Option<Column<Ipv6Addr>>,
}

impl IpValues {
    pub fn open(source: &ValueSource, segment: &SegmentReader) -> Result<IpValues> {
        let column = match source {
            ValueSource::Ip { path } => segment
                .fast_fields()
                .column_opt::<Ipv6Addr>(path)
                .map_err(open_error)?,
            _ => None,
        };
        Ok(IpValues { column })
    }

    pub fn for_each(&mut self, docs: &[DocId], mut f: impl FnMut(usize, Ipv6Addr)) {
        if let Some(column) = &self.column {
            for (position, &doc) in docs.iter().enumerate() {
                for ip in column.values_for_doc(doc) {
                    f(position, ip);
                }
            }
        }
    }

    pub fn has_value(&self, doc: DocId) -> bool {
        self.column
            .as_ref()
            .is_some_and(|c| c.values_for_doc(doc).next().is_some())
    }

    /// The segment's smallest address (deleted documents included); `None` without values.
    pub fn min_value(&self) -> Option<Ipv6Addr> {
        self.column
            .as_ref()
            .filter(|c| c.values.num_vals() > 0)
            .map(|c| c.min_value())
    }
}

/// A range field's ranges in one segment, for counting: OpenSearch keeps a document's ranges
/// as one binary doc value, so a document with ranges is one value.
pub struct RangeValues {
    /// The lower-bound column (a range has exactly one value in each column).
    column: Option<RangeColumn>,
}

enum RangeColumn {
    I64(Column<i64>),
    F64(Column<f64>),
    Ip(Column<Ipv6Addr>),
}

impl RangeValues {
    pub fn open(source: &RangeSource, segment: &SegmentReader) -> Result<RangeValues> {
        let fast = segment.fast_fields();
        let column = match source.kind {
            RangeKind::Float | RangeKind::Double => fast
                .column_opt::<f64>(&source.from)
                .map_err(open_error)?
                .map(RangeColumn::F64),
            RangeKind::Ip => fast
                .column_opt::<Ipv6Addr>(&source.from)
                .map_err(open_error)?
                .map(RangeColumn::Ip),
            _ => fast
                .column_opt::<i64>(&source.from)
                .map_err(open_error)?
                .map(RangeColumn::I64),
        };
        Ok(RangeValues { column })
    }

    pub fn has_value(&self, doc: DocId) -> bool {
        match &self.column {
            None => false,
            Some(RangeColumn::I64(c)) => c.values_for_doc(doc).next().is_some(),
            Some(RangeColumn::F64(c)) => c.values_for_doc(doc).next().is_some(),
            Some(RangeColumn::Ip(c)) => c.values_for_doc(doc).next().is_some(),
        }
    }
}

/// Any field's values, for aggregations that only count values (value_count, missing).
pub enum AnyValues {
    Numeric(NumericValues),
    Keyword(KeywordValues),
    Ip(IpValues),
    Range(RangeValues),
    Script(Box<ScriptValues>),
    Unmapped,
}

impl AnyValues {
    pub fn open(source: &ValueSource, segment: &SegmentReader) -> Result<AnyValues> {
        Ok(match source {
            ValueSource::Numeric { .. } => {
                AnyValues::Numeric(NumericValues::open(source, segment)?)
            }
            ValueSource::Keyword { .. } => {
                AnyValues::Keyword(KeywordValues::open(source, segment)?)
            }
            ValueSource::Ip { .. } => AnyValues::Ip(IpValues::open(source, segment)?),
            ValueSource::Range(range) => AnyValues::Range(RangeValues::open(range, segment)?),
            ValueSource::Script(script) => AnyValues::Script(Box::new(script.open(segment)?)),
            ValueSource::Unmapped => AnyValues::Unmapped,
        })
    }

    /// Calls `f(position)` once per value (once per document with ranges, for a range field).
    pub fn for_each_value(&mut self, docs: &[DocId], mut f: impl FnMut(usize)) {
        match self {
            AnyValues::Numeric(v) => v.for_each_f64(docs, |p, _| f(p)),
            AnyValues::Keyword(v) => v.for_each_ord(docs, |p, _| f(p)),
            AnyValues::Ip(v) => v.for_each(docs, |p, _| f(p)),
            AnyValues::Range(v) => {
                for (position, &doc) in docs.iter().enumerate() {
                    if v.has_value(doc) {
                        f(position);
                    }
                }
            }
            AnyValues::Script(v) => v.for_each(docs, |p, _| f(p)),
            AnyValues::Unmapped => {}
        }
    }

    /// Whether a doc has a value (a script's documents never do: aggregations that ask this
    /// take no script).
    pub fn has_value(&self, doc: DocId) -> bool {
        match self {
            AnyValues::Script(_) => false,
            AnyValues::Numeric(v) => v.has_value(doc),
            AnyValues::Keyword(v) => v.has_value(doc),
            AnyValues::Ip(v) => v.has_value(doc),
            AnyValues::Range(v) => v.has_value(doc),
            AnyValues::Unmapped => false,
        }
    }
}

/// Renders an ip stored as IPv6 the way OpenSearch shows it (IPv4 in dotted form).
pub fn ip_to_string(ip: Ipv6Addr) -> String {
    match ip.to_ipv4_mapped() {
        Some(v4) => v4.to_string(),
        None => ip.to_string(),
    }
}
