//! Recognising queries that are a single range on one integer column (or match everything):
//! for those, aggregations over that column can count from the column's sorted values instead
//! of being fed the matching documents one by one.

use tessera_common::Result;
use tessera_mapping::LeafKind;

use super::term_level::i64_bounds;
use super::CompileContext;
use crate::ast::QueryAst;

/// What a query keeps, when it is this simple.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ColumnFilter {
    /// Every document.
    All,
    /// Documents whose value of `field` (a single integer column: long, date, scaled float)
    /// lies in `[low, high]` (empty when `low > high`).
    Range { field: String, low: i64, high: i64 },
}

/// The column filter equivalent to `ast`, if it is one.
pub fn column_filter(ast: &QueryAst, ctx: &CompileContext) -> Result<Option<ColumnFilter>> {
    Ok(match ast {
        QueryAst::MatchAll { .. } => Some(ColumnFilter::All),
        QueryAst::ConstantScore { filter, .. } => column_filter(filter, ctx)?,
        QueryAst::Bool(b)
            if b.should.is_empty()
                && b.must_not.is_empty()
                && b.must.len() + b.filter.len() == 1 =>
        {
            let only = b.must.first().or(b.filter.first()).expect("one clause");
            column_filter(only, ctx)?
        }
        QueryAst::Range(range) => {
            let Some(leaf) = ctx.table.leaf(&range.field) else {
                return Ok(None);
            };
            let integer = matches!(
                leaf.kind,
                LeafKind::Integer | LeafKind::ScaledFloat { .. } | LeafKind::Date { .. }
            );
            if !integer || !leaf.fast || (range.lower.is_none() && range.upper.is_none()) {
                return Ok(None);
            }
            match i64_bounds(ctx, leaf, range)? {
                Some(Some((low, high))) => Some(ColumnFilter::Range {
                    field: leaf.path.clone(),
                    low,
                    high,
                }),
                Some(None) => Some(ColumnFilter::Range {
                    field: leaf.path.clone(),
                    low: 1,
                    high: 0,
                }),
                None => None,
            }
        }
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsl::parse_query;
    use serde_json::json;
    use tessera_mapping::{FieldTable, Mapping};

    #[test]
    fn recognises_single_ranges_on_integer_columns() {
        let mapping = Mapping::parse(&json!({"properties": {
            "d": {"type": "date", "format": "dd/MM/yyyy"},
            "n": {"type": "long"},
            "f": {"type": "double"},
            "k": {"type": "keyword"}
        }}))
        .unwrap();
        let (table, _) = FieldTable::build(&mapping, None).unwrap();
        let ctx = CompileContext {
            searcher: None,
            table: &table,
            index: "i",
            default_fields: &[],
            now_millis: 0,
            max_terms_count: crate::compile::DEFAULT_MAX_TERMS_COUNT,
            clauses: Default::default(),
            knn: Default::default(),
            nested_scope: Default::default(),
            deadline: None,
            failures: None,
            mapping: None,
            legacy_bm25: true,
            shard_id: 0,
        };
        let filter = |q: serde_json::Value| column_filter(&parse_query(&q).unwrap(), &ctx).unwrap();
        assert_eq!(filter(json!({"match_all": {}})), Some(ColumnFilter::All));
        assert_eq!(
            filter(json!({"bool": {"filter": {"range": {"n": {"gte": 5, "lt": 10}}}}})),
            Some(ColumnFilter::Range {
                field: "n".into(),
                low: 5,
                high: 9
            })
        );
        assert_eq!(
            filter(json!({"range": {"d": {"gte": "01/01/2015", "lte": "01/01/2015"}}})),
            Some(ColumnFilter::Range {
                field: "d".into(),
                low: 1_420_070_400_000,
                high: 1_420_156_799_999
            })
        );
        assert_eq!(filter(json!({"range": {"f": {"gte": 1}}})), None);
        assert_eq!(filter(json!({"term": {"k": "x"}})), None);
        assert_eq!(
            filter(json!({"bool": {"filter": [{"match_all": {}}, {"match_all": {}}]}})),
            None
        );
    }
}
