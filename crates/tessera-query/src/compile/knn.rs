//! Compiling a `knn` query on a shard: the checks that need the field (OpenSearch's
//! `failed to create query` messages), then the rewrite: the shard's k-NN search runs here,
//! before the request's weight is built, and the query becomes the fixed set of the shard's
//! hits (`tessera_knn::query::DocScoresQuery`), so that the `knn` clause of a `bool` or a
//! `function_score`, and the aggregations, see exactly the shard's top k, as in OpenSearch
//! (where k is per shard and `size` applies at the coordinator).

use std::sync::Arc;

use tantivy::query::{EnableScoring, Query};
use tessera_common::{Error, Result};
use tessera_knn::query::DocScoresQuery;
use tessera_knn::search::{search_shard, KnnSearch, Limit};
use tessera_knn::segment::ShardVectors;
use tessera_knn::stats::{QueryKind, STATS};
use tessera_knn::Space;
use tessera_mapping::field_table::LeafKind;
use tessera_mapping::knn::DataType;

use super::{compile, CompileContext};
use crate::ast::KnnQuery;

fn create_error(ctx: &CompileContext, reason: String) -> Error {
    ctx.error(format!("failed to create query: {reason}"))
        .caused_by(Error::illegal_argument(reason))
}

/// OpenSearch's name of a space in its messages (`SpaceType.L2`).
fn upper(space: Space) -> &'static str {
    match space {
        Space::L2 => "L2",
        Space::CosineSimil => "COSINESIMIL",
        Space::InnerProduct => "INNER_PRODUCT",
        Space::L1 => "L1",
        Space::LInf => "LINF",
    }
}

pub(super) fn knn(ctx: &CompileContext, query: &KnnQuery) -> Result<Box<dyn Query>> {
    let spec = match ctx.table.leaf(&query.field).map(|leaf| &leaf.kind) {
        Some(LeafKind::KnnVector(spec)) => spec.clone(),
        _ => {
            return Err(create_error(
                ctx,
                format!("Field '{}' is not knn_vector type.", query.field),
            ))
        }
    };
    let vector = &query.vector;
    if vector.len() != spec.dimension {
        return Err(create_error(
            ctx,
            format!(
                "Query vector has invalid dimension: {}. Dimension should be: {}",
                vector.len(),
                spec.dimension
            ),
        ));
    }
    if let Some((i, v)) = vector.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        let shown = if v.is_nan() {
            "NaN"
        } else if *v > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        };
        return Err(create_error(
            ctx,
            format!("non-finite value at vector[{i}]={shown}"),
        ));
    }
    if spec.data_type == DataType::Byte || spec.space == Space::CosineSimil {
        if let Err(e) = spec.check(vector) {
            return Err(create_error(ctx, e.reason));
        }
    }
    let space = spec.space;
    let (limit, kind) = match (query.k, query.max_distance, query.min_score) {
        (Some(k), _, _) => (Limit::TopK(k as usize), QueryKind::TopK),
        (_, Some(distance), _) => {
            if distance < 0.0 && space != Space::InnerProduct {
                return Err(create_error(
                    ctx,
                    format!(
                        "[knn] requires distance to be non-negative for space type: {}",
                        upper(space)
                    ),
                ));
            }
            (Limit::Within(distance), QueryKind::MaxDistance)
        }
        (_, _, Some(score)) => {
            if space == Space::CosineSimil && score > 1.0 {
                return Err(create_error(
                    ctx,
                    format!(
                        "[knn] requires score to be in the range [0, 1] for space type: {}",
                        upper(space)
                    ),
                ));
            }
            (
                Limit::Within(space.distance_for_score(score)),
                QueryKind::MinScore,
            )
        }
        _ => {
            return Err(Error::illegal_argument(
                "[knn] requires exactly one of k, distance or score to be set",
            ))
        }
    };
    let Some(searcher) = ctx.searcher else {
        return Err(ctx.error(format!(
            "failed to create query: [knn] on field [{}] cannot be searched here",
            query.field
        )));
    };
    let field = ctx
        .table
        .leaf(&query.field)
        .and_then(|leaf| leaf.field)
        .ok_or_else(|| {
            Error::illegal_state(format!("field [{}] has no shard field", query.field))
        })?;
    let filter = match &query.filter {
        Some(filter) => Some(
            compile(filter, ctx)?
                .weight(EnableScoring::disabled_from_searcher(searcher))
                .map_err(|e| Error::internal("create the knn filter's weight", e))?,
        ),
        None => None,
    };
    STATS.query(kind, filter.is_some());
    let search = KnnSearch {
        field,
        space,
        vector: vector.as_slice().into(),
        limit,
        // the query's `method_parameters.ef_search`, else the index's
        ef_search: query.ef_search.map_or(ctx.knn.ef_search, |e| e as usize),
    };
    let vectors = match ctx.knn.vectors {
        Some(cell) => cell.get(searcher),
        None => ShardVectors::open(searcher).map(Arc::new),
    }
    .map_err(|e| Error::internal("open the segments' vectors", e))?;
    let hits = search_shard(
        searcher,
        &vectors,
        &search,
        filter.as_deref(),
        ctx.knn.slices,
    )
    .map_err(|e| Error::internal("run the knn search", e))?;
    Ok(Box::new(DocScoresQuery::new(
        searcher,
        &hits,
        space,
        query.boost,
    )))
}
