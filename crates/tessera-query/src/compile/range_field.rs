//! Queries on range fields (`integer_range` … `ip_range`): a `term` matches the documents with
//! a range holding the value, a `range` query those with a range that intersects (the
//! default), lies within or contains the query's range — OpenSearch's semantics, with its
//! value parsing and messages.
//!
//! A range field is two columns of inclusive bounds (see `tessera_mapping::range`); the query
//! filters each column with its bulk range scan and intersects the two lists, a document
//! matching when any of its ranges does. A range that a sample says most documents match is
//! answered lazily instead: a conjunction's other clause leads and each of its candidates
//! has its bounds read directly, and the bulk scan runs only once the set is walked by itself
//! (`LazyRangeDocs`).
//! Matches score 1.0 × boost, as Lucene's range field queries do.

use std::net::Ipv6Addr;
use std::ops::{Range, RangeInclusive};
use std::sync::Arc;

use serde_json::Value;
use tantivy::columnar::{Cardinality, Column, ColumnValues, DynamicColumn};
use tantivy::query::{
    BitSetDocSet, ConstScorer, EnableScoring, Explanation, Query, Scorer, Weight,
};
use tantivy::schema::Field;
use tantivy::{BitSet, DocId, Score, SegmentReader};
use tantivy::{DocSet, SeekDangerResult, TERMINATED};
use tessera_common::{Error, Result};
use tessera_mapping::range::{java_float, RangeBounds, RangeKind};
use tessera_mapping::values as coerce;
use tessera_mapping::{LeafField, LeafKind};

use super::values::{date_format_for, parse_date_bound, text_of, time_zone, DateBoundContext};
use super::{constant, match_none, CompileContext};
use crate::ast::{RangeQuery as RangeAst, RangeRelation};

/// Documents with a range in the pair of columns that relates to `bounds` as `relation` says.
#[derive(Clone, Debug)]
pub struct RangeFieldQuery {
    /// The columns of the lower and upper bounds.
    from: Field,
    to: Field,
    bounds: RangeBounds,
    relation: RangeRelation,
}

impl RangeFieldQuery {
    pub fn new(
        from: Field,
        to: Field,
        bounds: RangeBounds,
        relation: RangeRelation,
    ) -> RangeFieldQuery {
        RangeFieldQuery {
            from,
            to,
            bounds,
            relation,
        }
    }
}

/// Whether the document range `[from, to]` relates to the query range `[low, high]`.
fn relates<T: PartialOrd>(relation: RangeRelation, from: T, to: T, low: &T, high: &T) -> bool {
    match relation {
        RangeRelation::Intersects => from <= *high && to >= *low,
        RangeRelation::Within => from >= *low && to <= *high,
        RangeRelation::Contains => from <= *low && to >= *high,
    }
}

/// A value type of range columns, with the ends of its order.
trait Bound: PartialOrd + Copy + Send + Sync + std::fmt::Debug + 'static {
    const LEAST: Self;
    const GREATEST: Self;

    /// The value as the upper end of a column scan: a column orders -0.0 before 0.0, which
    /// compare equal, so an upper end of zero is 0.0 and a lower end -0.0.
    fn as_upper_end(self) -> Self {
        self
    }

    fn as_lower_end(self) -> Self {
        self
    }
}

impl Bound for i64 {
    const LEAST: i64 = i64::MIN;
    const GREATEST: i64 = i64::MAX;
}

impl Bound for f64 {
    const LEAST: f64 = f64::NEG_INFINITY;
    const GREATEST: f64 = f64::INFINITY;

    fn as_upper_end(self) -> f64 {
        if self == 0.0 {
            0.0
        } else {
            self
        }
    }

    fn as_lower_end(self) -> f64 {
        if self == 0.0 {
            -0.0
        } else {
            self
        }
    }
}

impl Bound for Ipv6Addr {
    const LEAST: Ipv6Addr = Ipv6Addr::UNSPECIFIED;
    const GREATEST: Ipv6Addr = Ipv6Addr::new(
        0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff,
    );
}

/// What `relation` asks of each bound column on its own: the values a document's lower bound
/// and upper bound must lie in (both, for one of its ranges).
fn column_ranges<T: Bound>(
    relation: RangeRelation,
    low: T,
    high: T,
) -> (RangeInclusive<T>, RangeInclusive<T>) {
    let up_to = |end: T| T::LEAST..=end.as_upper_end();
    let from = |end: T| end.as_lower_end()..=T::GREATEST;
    match relation {
        RangeRelation::Intersects => (up_to(high), from(low)),
        RangeRelation::Within => (from(low), up_to(high)),
        RangeRelation::Contains => (up_to(low), from(high)),
    }
}

/// A segment's two bound columns, and what the query asks of its ranges.
struct SegmentRanges<T: Bound> {
    from: Column<T>,
    to: Column<T>,
    relation: RangeRelation,
    low: T,
    high: T,
}

impl<T: Bound> SegmentRanges<T> {
    /// Whether one of `doc`'s ranges relates to `[low, high]` (its bounds read directly).
    fn relates(&self, doc: DocId) -> bool {
        self.from
            .values_for_doc(doc)
            .zip(self.to.values_for_doc(doc))
            .any(|(f, t)| relates(self.relation, f, t, &self.low, &self.high))
    }

    /// Sets the bit of every document of the segment with a range that relates to
    /// `[low, high]`.
    ///
    /// Each bound column is filtered on its own condition by the column's bulk range scan (it
    /// compares packed blocks of values instead of reading documents one by one). With one range
    /// per document the two conditions meet in row space (a few candidates read their other
    /// bound directly); with several, a document in both lists is checked range by range (its
    /// bounds may come from different ranges).
    fn mark(&self, bits: &mut BitSet) {
        let (from, to) = (&self.from, &self.to);
        let (from_range, to_range) = column_ranges(self.relation, self.low, self.high);
        let single = |column: &Column<T>| column.get_cardinality() != Cardinality::Multivalued;
        if single(from) && single(to) && from.values.num_vals() == to.values.num_vals() {
            // one range per document: the bounds of the documents' ranges are in the same rows
            // of both columns, so the rows are matched first and only matches become documents
            let rows = 0..from.values.num_vals();
            let mut hits = Vec::new();
            scan_rows(&*from.values, from_range, rows.clone(), &mut hits);
            if hits.len() * 4 < rows.len() {
                // few candidates: read their other bound instead of scanning its column
                hits.retain(|&row| to_range.contains(&to.values.get_val(row)));
            } else {
                let mut to_rows = Vec::new();
                scan_rows(&*to.values, to_range, rows, &mut to_rows);
                hits = intersect_sorted(&hits, &to_rows);
            }
            from.index.select_batch_in_place(0, &mut hits);
            for doc in hits {
                bits.insert(doc);
            }
            return;
        }
        let docs = |column: &Column<T>, range: RangeInclusive<T>| {
            let mut rows = Vec::new();
            scan_rows(
                &*column.values,
                range,
                0..column.values.num_vals(),
                &mut rows,
            );
            column.index.select_batch_in_place(0, &mut rows);
            rows.dedup();
            rows
        };
        let (from_docs, to_docs) = (docs(from, from_range), docs(to, to_range));
        for doc in intersect_sorted(&from_docs, &to_docs) {
            if self.relates(doc) {
                bits.insert(doc);
            }
        }
    }
}

/// Documents checked to estimate how many match: a range most documents match is found
/// lazily ([`LazyRangeDocs`]), a narrow one by the bulk scan at once.
const SAMPLED_DOCS: u32 = 64;

/// The segment's matches for `relation` to `[low, high]`, as a docset.
fn range_docs<T>(
    reader: &SegmentReader,
    from_column: &str,
    to_column: &str,
    relation: RangeRelation,
    (low, high): (T, T),
) -> tantivy::Result<Box<dyn DocSet>>
where
    T: Bound + tantivy::columnar::HasAssociatedColumnType,
    DynamicColumn: Into<Option<Column<T>>>,
{
    let fast = reader.fast_fields();
    let (Some(from), Some(to)) = (
        fast.column_opt::<T>(from_column)?,
        fast.column_opt::<T>(to_column)?,
    ) else {
        return Ok(Box::new(BitSetDocSet::from(BitSet::with_max_value(1))));
    };
    let ranges = SegmentRanges {
        from,
        to,
        relation,
        low,
        high,
    };
    let max_doc = reader.max_doc();
    let step = (max_doc / SAMPLED_DOCS).max(1);
    let sampled = (0..max_doc)
        .step_by(step as usize)
        .take(SAMPLED_DOCS as usize);
    let (mut seen, mut matched) = (0u32, 0u32);
    for doc in sampled {
        seen += 1;
        matched += u32::from(ranges.relates(doc));
    }
    if matched * 4 >= seen && seen > 0 {
        let estimate = (u64::from(max_doc) * u64::from(matched) / u64::from(seen)) as u32;
        return Ok(Box::new(LazyRangeDocs::new(ranges, max_doc, estimate)));
    }
    let mut bits = BitSet::with_max_value(max_doc.max(1));
    ranges.mark(&mut bits);
    Ok(Box::new(BitSetDocSet::from(bits)))
}

/// Consecutive `advance` calls after which [`LazyRangeDocs`] runs the bulk scan.
const WALK_BEFORE_SCAN: u32 = 256;

/// The matches of a range most documents match, found lazily: while another clause of a
/// conjunction leads (it seeks this set to its candidates), each candidate's bounds are read
/// directly, and none of the rest is looked at; once the set is walked by itself (a lone
/// query, a disjunction), the columns' bulk scan ([`SegmentRanges::mark`]) finds the rest at
/// once.
struct LazyRangeDocs<T: Bound> {
    ranges: SegmentRanges<T>,
    /// After the bulk scan: the rest of the matches.
    scanned: Option<BitSetDocSet>,
    doc: DocId,
    max_doc: DocId,
    /// `advance` calls since the last seek.
    walked: u32,
    estimate: u32,
}

impl<T: Bound> LazyRangeDocs<T> {
    fn new(ranges: SegmentRanges<T>, max_doc: DocId, estimate: u32) -> Self {
        let mut docs = LazyRangeDocs {
            ranges,
            scanned: None,
            doc: 0,
            max_doc,
            walked: 0,
            estimate,
        };
        docs.doc = docs.next_match(0);
        docs
    }

    /// The first match at or after `doc`, reading documents one by one.
    fn next_match(&self, mut doc: DocId) -> DocId {
        while doc < self.max_doc {
            if self.ranges.relates(doc) {
                return doc;
            }
            doc += 1;
        }
        TERMINATED
    }

    /// Runs the bulk scan; the first match after the current document.
    fn scan_rest(&mut self) -> DocId {
        let mut bits = BitSet::with_max_value(self.max_doc.max(1));
        self.ranges.mark(&mut bits);
        let mut rest = BitSetDocSet::from(bits);
        let next = match self.doc.checked_add(1) {
            Some(next) if next < self.max_doc => rest.seek(next),
            _ => TERMINATED,
        };
        self.scanned = Some(rest);
        next
    }
}

impl<T: Bound> DocSet for LazyRangeDocs<T> {
    fn advance(&mut self) -> DocId {
        if let Some(rest) = &mut self.scanned {
            return rest.advance();
        }
        if self.doc == TERMINATED {
            return TERMINATED;
        }
        self.walked += 1;
        self.doc = if self.walked > WALK_BEFORE_SCAN {
            self.scan_rest()
        } else {
            self.next_match(self.doc + 1)
        };
        self.doc
    }

    fn seek(&mut self, target: DocId) -> DocId {
        if let Some(rest) = &mut self.scanned {
            return rest.seek(target);
        }
        self.walked = 0;
        if self.doc < target {
            self.doc = self.next_match(target);
        }
        self.doc
    }

    /// A candidate is checked alone: the next match is not looked for (the leading clause
    /// will name the next candidate).
    fn seek_danger(&mut self, target: DocId) -> SeekDangerResult {
        if let Some(rest) = &mut self.scanned {
            return rest.seek_danger(target);
        }
        self.walked = 0;
        if target >= self.max_doc {
            return SeekDangerResult::SeekLowerBound(TERMINATED);
        }
        if self.ranges.relates(target) {
            self.doc = target;
            return SeekDangerResult::Found;
        }
        match target + 1 {
            next if next >= self.max_doc => SeekDangerResult::SeekLowerBound(TERMINATED),
            next => SeekDangerResult::SeekLowerBound(next),
        }
    }

    fn doc(&self) -> DocId {
        match &self.scanned {
            Some(rest) => rest.doc(),
            None => self.doc,
        }
    }

    fn size_hint(&self) -> u32 {
        self.estimate
    }

    /// Walking it reads every document's bounds: let a conjunction's other clauses lead.
    fn cost(&self) -> u64 {
        u64::from(self.max_doc)
    }
}

/// The rows among `rows` whose value lies in `range`, ascending. The range is first narrowed
/// to the column's own: the columns' scans shift a bound below the smallest value up to it
/// (a range wholly below the column's values would match its smallest).
fn scan_rows<T: Bound>(
    values: &dyn ColumnValues<T>,
    range: RangeInclusive<T>,
    rows: Range<u32>,
    out: &mut Vec<u32>,
) {
    out.clear();
    let (start, end) = range.into_inner();
    let (least, greatest) = (values.min_value(), values.max_value());
    if rows.is_empty() || end < least || start > greatest {
        return;
    }
    let start = if start < least { least } else { start };
    let end = if end > greatest { greatest } else { end };
    values.get_row_ids_for_value_range(start..=end, rows, out);
}

/// The values in both ascending lists.
fn intersect_sorted(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len().min(b.len()));
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out
}

impl Query for RangeFieldQuery {
    fn weight(&self, _: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(RangeFieldWeight(Arc::new(self.clone()))))
    }
}

struct RangeFieldWeight(Arc<RangeFieldQuery>);

impl Weight for RangeFieldWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let q = &self.0;
        let relation = q.relation;
        let schema = reader.schema();
        let (from_column, to_column) = (schema.get_field_name(q.from), schema.get_field_name(q.to));
        let docs = match q.bounds {
            RangeBounds::I64(low, high) => {
                range_docs::<i64>(reader, from_column, to_column, relation, (low, high))?
            }
            RangeBounds::F64(low, high) => {
                range_docs::<f64>(reader, from_column, to_column, relation, (low, high))?
            }
            RangeBounds::Ip(low, high) => {
                range_docs::<Ipv6Addr>(reader, from_column, to_column, relation, (low, high))?
            }
        };
        Ok(Box::new(ConstScorer::new(docs, boost)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let score = super::score_of_match(self, reader, doc)?;
        Ok(Explanation::new_with_string(
            format!(
                "{} {:?} {:?}",
                reader
                    .schema()
                    .get_field_name(self.0.from)
                    .trim_end_matches("#from"),
                self.0.relation,
                self.0.bounds
            ),
            score,
        ))
    }
}

fn failed(ctx: &CompileContext, cause: Error) -> Error {
    ctx.error(format!("failed to create query: {}", cause.reason()))
        .caused_by(cause)
}

fn number_error(value: &Value) -> Error {
    Error::new(
        "number_format_exception",
        400,
        format!("For input string: \"{}\"", text_of(value)),
    )
}

/// A value as a Java double (`objectToDouble`): numbers, or strings `Double.parseDouble` reads.
fn to_double(value: &Value) -> Result<f64> {
    let parsed = match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    parsed.ok_or_else(|| number_error(value))
}

/// OpenSearch's `NumberType.INTEGER/LONG.parse(value, coerce = false)`: a whole number in the
/// type's range.
fn parse_whole(value: &Value, long: bool) -> Result<i64> {
    let double = to_double(value)?;
    let (name, min, max) = if long {
        ("a long", i64::MIN as f64, i64::MAX as f64)
    } else {
        ("an integer", i32::MIN as f64, i32::MAX as f64)
    };
    if double < min || double > max {
        return Err(Error::illegal_argument(format!(
            "Value [{}] is out of range for {name}",
            text_of(value)
        )));
    }
    if double.fract() != 0.0 {
        return Err(Error::illegal_argument(format!(
            "Value [{}] has a decimal part",
            text_of(value)
        )));
    }
    // a long keeps its exact digits (a double cannot hold all of them)
    let exact = match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse::<i64>().ok(),
        _ => None,
    };
    Ok(exact.unwrap_or(double as i64))
}

/// A float or double query value (`Float.parseFloat` / `Double.parseDouble`), finite.
fn parse_floating(value: &Value, kind: &RangeKind) -> Result<f64> {
    let double = to_double(value)?;
    let (name, parsed) = match kind {
        RangeKind::Float => ("float", (double as f32) as f64),
        _ => ("double", double),
    };
    if !parsed.is_finite() {
        let shown = if parsed.is_nan() {
            "NaN".to_string()
        } else if parsed > 0.0 {
            "Infinity".to_string()
        } else {
            "-Infinity".to_string()
        };
        return Err(Error::illegal_argument(format!(
            "[{name}] supports only finite values, but got [{shown}]"
        )));
    }
    Ok(parsed)
}

/// The bound columns of a range leaf, or `None` when it has none in this shard.
fn columns(leaf: &LeafField) -> Option<(Field, Field)> {
    match &leaf.kind {
        LeafKind::Range {
            from: Some(from),
            to: Some(to),
            ..
        } => Some((*from, *to)),
        _ => None,
    }
}

fn kind_of(leaf: &LeafField) -> &RangeKind {
    match &leaf.kind {
        LeafKind::Range { kind, .. } => kind,
        _ => unreachable!("range_field compiles range leaves only"),
    }
}

fn require_searchable(ctx: &CompileContext, leaf: &LeafField) -> Result<()> {
    if leaf.is_searchable() {
        Ok(())
    } else {
        Err(ctx.error(format!(
            "Cannot search on field [{}] since it is not indexed.",
            leaf.path
        )))
    }
}

/// The query's range for one value (`term`, `terms`, `match`): the documents whose ranges
/// hold it. A date covers its whole precision (`2020-01-05` is a day).
pub(crate) fn value_bounds(
    ctx: &CompileContext,
    leaf: &LeafField,
    value: &Value,
) -> Result<RangeBounds> {
    let kind = kind_of(leaf);
    Ok(match kind {
        RangeKind::Integer | RangeKind::Long => {
            let n = parse_whole(value, *kind == RangeKind::Long).map_err(|e| failed(ctx, e))?;
            RangeBounds::I64(n, n)
        }
        RangeKind::Float | RangeKind::Double => {
            let f = parse_floating(value, kind).map_err(|e| failed(ctx, e))?;
            RangeBounds::F64(f, f)
        }
        RangeKind::Date(format) => {
            let bounds = DateBoundContext {
                format,
                zone: None,
                now: ctx.now_millis,
            };
            let low = parse_date_bound(&bounds, value, false).map_err(|e| failed(ctx, e))?;
            let high = parse_date_bound(&bounds, value, true).map_err(|e| failed(ctx, e))?;
            RangeBounds::I64(low, high)
        }
        RangeKind::Ip => {
            let ip = coerce::parse_ip(&text_of(value)).map_err(|e| failed(ctx, e))?;
            RangeBounds::Ip(ip, ip)
        }
    })
}

/// The query for one value's bounds on a range leaf (constant score).
pub(crate) fn bounds_query(
    ctx: &CompileContext,
    leaf: &LeafField,
    bounds: RangeBounds,
    relation: RangeRelation,
) -> Result<Box<dyn Query>> {
    require_searchable(ctx, leaf)?;
    Ok(leaf_query(leaf, bounds, relation))
}

/// The query for `bounds` on a range leaf (no scoring wrapper).
pub(crate) fn leaf_query(
    leaf: &LeafField,
    bounds: RangeBounds,
    relation: RangeRelation,
) -> Box<dyn Query> {
    match columns(leaf) {
        Some((from, to)) => Box::new(RangeFieldQuery::new(from, to, bounds, relation)),
        None => match_none(),
    }
}

/// `range` on a range field: OpenSearch's `RangeType.rangeQuery` — the bounds parsed (dates
/// rounded as for date fields), an error when `from` is above `to`, then `gt`/`lt` stepped to
/// inclusive bounds (nothing matches when that empties the range).
pub(crate) fn range(
    ctx: &CompileContext,
    leaf: &LeafField,
    range: &RangeAst,
) -> Result<Box<dyn Query>> {
    require_searchable(ctx, leaf)?;
    let kind = kind_of(leaf);
    let lower = range.lower.as_ref().map(|b| (&b.value, b.inclusive));
    let upper = range.upper.as_ref().map(|b| (&b.value, b.inclusive));
    let include_lower = lower.is_none_or(|(_, inclusive)| inclusive);
    let include_upper = upper.is_none_or(|(_, inclusive)| inclusive);
    let reversed = |from: String, to: String| {
        failed(
            ctx,
            Error::illegal_argument(format!(
                "Range query `from` value ({from}) is greater than `to` value ({to})"
            )),
        )
    };
    let bounds = match (kind.full(), kind) {
        (RangeBounds::I64(min, max), RangeKind::Date(field_format)) => {
            let format = date_format_for(ctx, field_format, range.format.as_deref())?;
            let zone = time_zone(ctx, range.time_zone.as_deref())?;
            let dates = DateBoundContext {
                format: &format,
                zone: zone.as_ref(),
                now: ctx.now_millis,
            };
            // "gt" rounds its date up, "lte" too
            let low = match lower {
                None => min,
                Some((v, inclusive)) => {
                    parse_date_bound(&dates, v, !inclusive).map_err(|e| failed(ctx, e))?
                }
            };
            let high = match upper {
                None => max,
                Some((v, inclusive)) => {
                    parse_date_bound(&dates, v, inclusive).map_err(|e| failed(ctx, e))?
                }
            };
            if low > high {
                return Err(reversed(low.to_string(), high.to_string()));
            }
            let low = if include_lower {
                low
            } else {
                low.wrapping_add(1)
            };
            let high = if include_upper {
                high
            } else {
                high.wrapping_sub(1)
            };
            (low <= high).then_some(RangeBounds::I64(low, high))
        }
        (RangeBounds::I64(min, max), _) => {
            let long = *kind == RangeKind::Long;
            let parse = |b: Option<(&Value, bool)>, default: i64| -> Result<i64> {
                match b {
                    None => Ok(default),
                    Some((v, _)) => parse_whole(v, long).map_err(|e| failed(ctx, e)),
                }
            };
            let (low, high) = (parse(lower, min)?, parse(upper, max)?);
            if low > high {
                return Err(reversed(low.to_string(), high.to_string()));
            }
            let low = if include_lower {
                low
            } else {
                kind.next_up_i64(low)
            };
            let high = if include_upper {
                high
            } else {
                kind.next_down_i64(high)
            };
            (low <= high).then_some(RangeBounds::I64(low, high))
        }
        (RangeBounds::F64(min, max), _) => {
            let parse = |b: Option<(&Value, bool)>, default: f64| -> Result<f64> {
                match b {
                    None => Ok(default),
                    Some((v, _)) => parse_floating(v, kind).map_err(|e| failed(ctx, e)),
                }
            };
            let (low, high) = (parse(lower, min)?, parse(upper, max)?);
            if low > high {
                let show = |f: f64| match kind {
                    RangeKind::Float => java_float(f as f32),
                    _ => tessera_common::settings::java_double(f),
                };
                return Err(reversed(show(low), show(high)));
            }
            let low = if include_lower {
                low
            } else {
                kind.next_up_f64(low)
            };
            let high = if include_upper {
                high
            } else {
                kind.next_down_f64(high)
            };
            (low <= high).then_some(RangeBounds::F64(low, high))
        }
        (RangeBounds::Ip(min, max), _) => {
            let parse = |b: Option<(&Value, bool)>, default: Ipv6Addr| -> Result<Ipv6Addr> {
                match b {
                    None => Ok(default),
                    Some((v, _)) => coerce::parse_ip(&text_of(v)).map_err(|e| failed(ctx, e)),
                }
            };
            let (low, high) = (parse(lower, min)?, parse(upper, max)?);
            if low > high {
                // Java's InetAddress.toString
                let show = |ip: Ipv6Addr| format!("/{}", coerce::format_ip(ip));
                return Err(reversed(show(low), show(high)));
            }
            let low = match include_lower {
                true => Some(low),
                false => u128::from(low).checked_add(1).map(Ipv6Addr::from),
            };
            let high = match include_upper {
                true => Some(high),
                false => u128::from(high).checked_sub(1).map(Ipv6Addr::from),
            };
            match (low, high) {
                (Some(low), Some(high)) if low <= high => Some(RangeBounds::Ip(low, high)),
                _ => None,
            }
        }
    };
    Ok(match bounds {
        Some(bounds) => constant(
            bounds_query(ctx, leaf, bounds, range.relation)?,
            range.boost,
        ),
        None => match_none(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::collector::Count;
    use tantivy::schema::{Schema, FAST};
    use tantivy::{doc, Index, IndexWriter};

    #[test]
    fn relations_over_multi_valued_ranges() {
        let mut builder = Schema::builder();
        let from = builder.add_i64_field("r#from", FAST);
        let to = builder.add_i64_field("r#to", FAST);
        let index = Index::create_in_ram(builder.build());
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        writer.add_document(doc!(from => 1i64, to => 5i64)).unwrap();
        writer
            .add_document(doc!(from => 10i64, to => 20i64, from => 30i64, to => 40i64))
            .unwrap();
        writer.add_document(doc!()).unwrap();
        writer.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        let count = |low: i64, high: i64, relation: RangeRelation| {
            let q = RangeFieldQuery::new(from, to, RangeBounds::I64(low, high), relation);
            searcher.search(&q, &Count).unwrap()
        };
        use RangeRelation::*;
        assert_eq!(count(3, 3, Intersects), 1);
        assert_eq!(count(5, 10, Intersects), 2);
        assert_eq!(count(21, 29, Intersects), 0);
        assert_eq!(count(0, 25, Within), 2, "[1,5] and [10,20] lie within");
        assert_eq!(count(2, 4, Within), 0);
        assert_eq!(count(2, 4, Contains), 1);
        assert_eq!(count(12, 35, Contains), 0, "no single range holds it");
        assert_eq!(count(31, 39, Contains), 1);
    }

    /// A segment of one range has constant columns, whose scans would match a query bound
    /// beyond the value as the value itself (the noaa restart test's `within` query).
    #[test]
    fn bounds_beyond_a_segments_values_match_nothing() {
        let mut builder = Schema::builder();
        let from = builder.add_f64_field("r#from", FAST);
        let to = builder.add_f64_field("r#to", FAST);
        let index = Index::create_in_ram(builder.build());
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        writer
            .add_document(doc!(from => 10.1f64, to => 20.5f64))
            .unwrap();
        writer.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        let count = |low: f64, high: f64, relation: RangeRelation| {
            let q = RangeFieldQuery::new(from, to, RangeBounds::F64(low, high), relation);
            searcher.search(&q, &Count).unwrap()
        };
        use RangeRelation::*;
        assert_eq!(count(0.0, 15.0, Within), 0);
        assert_eq!(count(0.0, 5.0, Intersects), 0);
        assert_eq!(count(25.0, 30.0, Intersects), 0);
        assert_eq!(count(30.0, 40.0, Contains), 0);
        assert_eq!(count(0.0, 30.0, Within), 1);
        assert_eq!(count(15.0, 15.0, Intersects), 1);
        assert_eq!(count(12.0, 13.0, Contains), 1);
    }

    /// The column scans agree with checking every document's ranges, single- and
    /// multi-valued, on float bounds around zero too.
    #[test]
    fn column_scans_match_every_range_checked_one_by_one() {
        // at most one range per document (the lists' intersection is the answer), then two
        // (each document in both lists is checked range by range)
        for most in [1, 2] {
            column_scans_check(most);
        }
    }

    /// Seeks, careful and dangerous, and walks find the same documents as the bulk scan,
    /// whichever way the segment's docset was built (lazy for the wide ranges).
    #[test]
    fn lazy_range_docs_seek_and_walk_like_the_scan() {
        for most in [1, 2] {
            let (index, from, to, _) = test_index(most);
            let searcher = index.reader().unwrap().searcher();
            let segment = searcher.segment_reader(0);
            let schema = segment.schema();
            let (from, to) = (schema.get_field_name(from), schema.get_field_name(to));
            let max_doc = segment.max_doc();
            for relation in [RangeRelation::Intersects, RangeRelation::Within] {
                for bounds in [(-5.0, 5.0), (-2.0, 1.0), (4.0, 4.5)] {
                    let docs = || range_docs::<f64>(segment, from, to, relation, bounds).unwrap();
                    let expected: Vec<DocId> = {
                        let fast = segment.fast_fields();
                        let (f, t) = (
                            fast.column_opt::<f64>(from).unwrap().unwrap(),
                            fast.column_opt::<f64>(to).unwrap().unwrap(),
                        );
                        let ranges = SegmentRanges {
                            from: f,
                            to: t,
                            relation,
                            low: bounds.0,
                            high: bounds.1,
                        };
                        let mut bits = BitSet::with_max_value(max_doc);
                        ranges.mark(&mut bits);
                        (0..max_doc).filter(|&d| bits.contains(d)).collect()
                    };
                    let next_from = |target: DocId| {
                        expected
                            .iter()
                            .copied()
                            .find(|&d| d >= target)
                            .unwrap_or(TERMINATED)
                    };
                    let case = format!("{most} {relation:?} {bounds:?}");
                    // a walk (past the switch to the bulk scan for the wide ranges)
                    let mut walk = docs();
                    let mut walked = Vec::new();
                    while walk.doc() != TERMINATED {
                        walked.push(walk.doc());
                        walk.advance();
                    }
                    assert_eq!(walked, expected, "{case}");
                    // seeks to every third document, and walks between them
                    let mut seeking = docs();
                    for target in (0..max_doc + 3).step_by(3) {
                        if seeking.doc() >= target {
                            continue;
                        }
                        assert_eq!(seeking.seek(target), next_from(target), "{case} {target}");
                    }
                    // dangerous seeks, on strictly increasing targets
                    let mut danger = docs();
                    for target in (1..max_doc + 2).step_by(2) {
                        match danger.seek_danger(target) {
                            SeekDangerResult::Found => {
                                assert!(expected.contains(&target), "{case} {target}");
                                assert_eq!(danger.doc(), target);
                            }
                            SeekDangerResult::SeekLowerBound(bound) => {
                                assert!(!expected.contains(&target), "{case} {target}");
                                assert!(bound > target, "{case} {target}");
                                assert!(
                                    bound <= next_from(target) || bound == TERMINATED,
                                    "{case} {target} {bound}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// Each document's ranges.
    type DocRanges = Vec<Vec<(f64, f64)>>;

    /// 400 documents with up to `most` ranges each over -5..=5 (zero's both signs included),
    /// and their ranges.
    fn test_index(most: u64) -> (Index, Field, Field, DocRanges) {
        let mut builder = Schema::builder();
        let from = builder.add_f64_field("r#from", FAST);
        let to = builder.add_f64_field("r#to", FAST);
        let index = Index::create_in_ram(builder.build());
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        // a small deterministic generator: ranges over -5..=5 (zero's both signs included)
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let value = |v: u64| if v == 11 { -0.0 } else { v as f64 - 5.0 };
        let mut docs: DocRanges = Vec::new();
        for _ in 0..400 {
            let ranges: Vec<(f64, f64)> = (0..next(most + 1))
                .map(|_| {
                    let (a, b) = (value(next(12)), value(next(12)));
                    if a <= b {
                        (a, b)
                    } else {
                        (b, a)
                    }
                })
                .collect();
            let mut doc = tantivy::TantivyDocument::default();
            for (a, b) in &ranges {
                doc.add_f64(from, *a);
                doc.add_f64(to, *b);
            }
            writer.add_document(doc).unwrap();
            docs.push(ranges);
        }
        writer.commit().unwrap();
        (index, from, to, docs)
    }

    fn column_scans_check(most: u64) {
        let (index, from, to, docs) = test_index(most);
        let searcher = index.reader().unwrap().searcher();
        for relation in [
            RangeRelation::Intersects,
            RangeRelation::Within,
            RangeRelation::Contains,
        ] {
            for (low, high) in [
                (-2.0, 1.0),
                (0.0, 0.0),
                (-0.0, 3.0),
                (-5.0, 5.0),
                (4.0, 4.5),
            ] {
                let q = RangeFieldQuery::new(from, to, RangeBounds::F64(low, high), relation);
                let found = searcher
                    .search(&q, &tantivy::collector::DocSetCollector)
                    .unwrap();
                let found: Vec<u32> = {
                    let mut docs: Vec<u32> = found.into_iter().map(|d| d.doc_id).collect();
                    docs.sort_unstable();
                    docs
                };
                let expected: Vec<u32> = (0..docs.len() as u32)
                    .filter(|&d| {
                        docs[d as usize]
                            .iter()
                            .any(|(a, b)| relates(relation, *a, *b, &low, &high))
                    })
                    .collect();
                assert_eq!(
                    found, expected,
                    "{relation:?} [{low}, {high}], {most} per doc"
                );
            }
        }
    }

    #[test]
    fn query_values_parse_like_opensearch() {
        assert_eq!(parse_whole(&serde_json::json!(3), false).unwrap(), 3);
        assert_eq!(parse_whole(&serde_json::json!("3"), false).unwrap(), 3);
        assert_eq!(
            parse_whole(&serde_json::json!(3.5), false)
                .unwrap_err()
                .reason(),
            "Value [3.5] has a decimal part"
        );
        assert_eq!(
            parse_whole(&serde_json::json!(3_000_000_000i64), false)
                .unwrap_err()
                .reason(),
            "Value [3000000000] is out of range for an integer"
        );
        let e = parse_whole(&serde_json::json!("abc"), true).unwrap_err();
        assert_eq!(e.kind(), "number_format_exception");
        assert_eq!(
            parse_whole(&serde_json::json!(i64::MAX), true).unwrap(),
            i64::MAX
        );
        assert_eq!(
            parse_floating(&serde_json::json!("NaN"), &RangeKind::Double)
                .unwrap_err()
                .reason(),
            "[double] supports only finite values, but got [NaN]"
        );
        assert_eq!(
            parse_floating(&serde_json::json!(1.1), &RangeKind::Float).unwrap(),
            1.1f32 as f64
        );
    }
}
