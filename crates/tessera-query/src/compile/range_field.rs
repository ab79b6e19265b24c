//! Queries on range fields (`integer_range` … `ip_range`): a `term` matches the documents with
//! a range holding the value, a `range` query those with a range that intersects (the
//! default), lies within or contains the query's range — OpenSearch's semantics, with its
//! value parsing and messages.
//!
//! A range field is two columns of inclusive bounds (see `tessera_mapping::range`); the query
//! scans each segment's pair of columns, a document matching when any of its ranges does.
//! Matches score 1.0 × boost, as Lucene's range field queries do.

use std::net::Ipv6Addr;
use std::sync::Arc;

use serde_json::Value;
use tantivy::columnar::{Column, DynamicColumn};
use tantivy::query::{
    BitSetDocSet, ConstScorer, EnableScoring, Explanation, Query, Scorer, Weight,
};
use tantivy::schema::Field;
use tantivy::{BitSet, DocId, Score, SegmentReader};
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

/// Sets the bit of every document of the segment with a matching range.
fn mark<T>(
    reader: &SegmentReader,
    from_column: &str,
    to_column: &str,
    matches: impl Fn(T, T) -> bool,
    bits: &mut BitSet,
) -> tantivy::Result<()>
where
    T: PartialOrd + Copy + Send + Sync + std::fmt::Debug + 'static,
    T: tantivy::columnar::HasAssociatedColumnType,
    DynamicColumn: Into<Option<Column<T>>>,
{
    let fast = reader.fast_fields();
    let (Some(from), Some(to)) = (
        fast.column_opt::<T>(from_column)?,
        fast.column_opt::<T>(to_column)?,
    ) else {
        return Ok(());
    };
    for doc in 0..reader.max_doc() {
        if from
            .values_for_doc(doc)
            .zip(to.values_for_doc(doc))
            .any(|(a, b)| matches(a, b))
        {
            bits.insert(doc);
        }
    }
    Ok(())
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
        let max_doc = reader.max_doc();
        let mut bits = BitSet::with_max_value(max_doc.max(1));
        let relation = q.relation;
        let schema = reader.schema();
        let (from_column, to_column) = (schema.get_field_name(q.from), schema.get_field_name(q.to));
        match q.bounds {
            RangeBounds::I64(low, high) => mark::<i64>(
                reader,
                from_column,
                to_column,
                |a, b| relates(relation, a, b, &low, &high),
                &mut bits,
            )?,
            RangeBounds::F64(low, high) => mark::<f64>(
                reader,
                from_column,
                to_column,
                |a, b| relates(relation, a, b, &low, &high),
                &mut bits,
            )?,
            RangeBounds::Ip(low, high) => mark::<Ipv6Addr>(
                reader,
                from_column,
                to_column,
                |a, b| relates(relation, a, b, &low, &high),
                &mut bits,
            )?,
        }
        Ok(Box::new(ConstScorer::new(BitSetDocSet::from(bits), boost)))
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
