//! Compiling a [`QueryAst`] into a tantivy query for one shard.
//!
//! Field types decide what a value means: a `term` on a `long` is a point lookup, on a `date`
//! a range covering the value's precision, on `text` an exact token. Scores follow OpenSearch:
//! its BM25 is Lucene's legacy form with the `(1 + k1)` factor, which is tantivy's formula, and
//! numeric, date, ip, range, prefix and wildcard queries score a constant 1.0 × boost.

mod boosting;
mod column_filter;
mod column_set;
mod covering_range;
mod distance_feature;
pub(crate) mod field_stats;
mod full_text;
mod function_score;
mod fuzzy_terms;
pub use fuzzy_terms::{fuzzy_candidates, FuzzyAutomaton, FuzzyCandidate, DEFAULT_MAX_EXPANSIONS};
mod geo;
mod knn;
mod more_like_this;
pub mod numeric_script;
pub mod percolate;
mod random_score;
mod range_field;
pub mod script;
mod script_score;
pub mod sloppy_phrase;
mod term_level;
mod terms_set;
mod values;

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use tantivy::query::{
    AllQuery, BooleanQuery, BoostQuery, ConstScoreQuery, DisjunctionMaxQuery, EmptyQuery, Occur,
    Query,
};
use tessera_common::{Error, Result};
use tessera_mapping::FieldTable;

use crate::ast::{BoolQuery, QueryAst};
use crate::dsl::resolve_msm;

pub use column_filter::{column_filter, ColumnFilter};
pub(crate) use full_text::resolve_fields;
pub use term_level::i64_bounds;

/// A `query_string` field resolver for this shard.
pub(crate) fn shard_resolver<'a, 'b>(
    ctx: &'a CompileContext<'b>,
) -> full_text::ShardFieldResolver<'a, 'b> {
    full_text::ShardFieldResolver { ctx }
}
pub use values::{parse_date_bound, DateBoundContext};

/// What compiling needs to know about the shard.
pub struct CompileContext<'a> {
    pub table: &'a FieldTable,
    /// Index name, for error metadata.
    pub index: &'a str,
    /// `index.query.default_field` patterns.
    pub default_fields: &'a [String],
    /// "now" for date math, fixed per request so every shard agrees.
    pub now_millis: i64,
    /// `index.max_terms_count`: the most values a `terms` query may list.
    pub max_terms_count: usize,
    /// The shard's searcher, for the queries rewritten against the shard's segments before
    /// the weight is built (`knn`); `None` where no shard is at hand (a `knn` query fails).
    pub searcher: Option<&'a tantivy::Searcher>,
    /// Boolean clauses built so far for this query (see [`max_clause_count`]); start with
    /// `Default::default()`.
    pub clauses: ClauseCount,
    /// What a `knn` query needs of the shard besides its searcher.
    pub knn: KnnContext<'a>,
    /// The nested path of the `nested` query being compiled (`None`: the root documents);
    /// start with `Default::default()`.
    pub nested_scope: NestedScope,
    /// When the request must end: a script scoring or filtering a segment stops there.
    pub deadline: Option<std::time::Instant>,
    /// Where a query evaluated document by document as the collection asks (a `script` query)
    /// leaves its first failure, for the shard to report once it has collected; `None`: no
    /// one would read it, so such a query evaluates its segment when its scorer is made.
    pub failures: Option<QueryFailures>,
    /// The index's mapping, which a `percolate` query parses its documents with; `None`
    /// where none is at hand (a `percolate` query fails).
    pub mapping: Option<&'a tessera_mapping::Mapping>,
    /// OpenSearch scores an index with Lucene's legacy BM25, which multiplies every score by
    /// `1 + k1` (tantivy's formula too); the in-memory index of a `percolate` query's
    /// documents is scored with Lucene's BM25 without that factor (false).
    pub legacy_bm25: bool,
    /// The shard's number in its index: with the index's name, it salts `random_score`'s
    /// seed as OpenSearch does (0 where no shard is at hand).
    pub shard_id: u32,
}

/// The index's k-NN settings and the shard's slices, for the `knn` rewrite.
#[derive(Clone, Copy)]
pub struct KnnContext<'a> {
    /// `index.knn.algo_param.ef_search`: the graph's beam width when the query sets none.
    pub ef_search: usize,
    /// Runs the per-segment searches on the shard's slices; `None`: one slice, this thread.
    pub slices: Option<&'a dyn tessera_knn::search::SliceRunner>,
    /// The shard snapshot's vector files, kept open between searches; `None`: opened for
    /// this search only.
    pub vectors: Option<&'a tessera_knn::segment::ShardVectorsCell>,
}

impl Default for KnnContext<'_> {
    fn default() -> Self {
        KnnContext {
            ef_search: DEFAULT_EF_SEARCH,
            slices: None,
            vectors: None,
        }
    }
}

/// `index.knn.algo_param.ef_search`'s default.
pub const DEFAULT_EF_SEARCH: usize = 100;

/// The first failure of a query that cannot fail where it runs (a tantivy scorer cannot):
/// recorded there, taken by the shard after collecting.
#[derive(Clone, Debug, Default)]
pub struct QueryFailures(std::sync::Arc<std::sync::Mutex<Option<Error>>>);

impl QueryFailures {
    /// Keeps `error` unless an earlier failure is already kept.
    pub fn record(&self, error: Error) {
        let mut slot = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        slot.get_or_insert(error);
    }

    pub fn failed(&self) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .is_some()
    }

    pub fn take(&self) -> Option<Error> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
    }
}

/// Where a `nested` query sits: the path of the enclosing `nested` query, whose documents are
/// the parents a `nested` query inside it joins to (the root documents at the top level).
#[derive(Debug, Default)]
pub struct NestedScope(std::cell::RefCell<Option<String>>);

impl CompileContext<'_> {
    /// Sets the nested path the queries compiled next sit in, answering the previous one.
    pub fn nested_scope_replace(&self, scope: Option<String>) -> Option<String> {
        self.nested_scope.0.replace(scope)
    }

    pub(crate) fn error(&self, reason: impl Into<String>) -> Error {
        Error::query_shard(self.index, reason)
    }

    /// Counts a boolean query of `n` clauses (a `bool`, a `dis_max`, the terms of a `match`)
    /// against [`max_clause_count`]: too many in this one query, or in all those of the
    /// request's query together, fail it before it is built.
    pub(crate) fn count_clauses(&self, n: usize) -> Result<()> {
        let max = max_clause_count();
        let total = self.clauses.0.get().saturating_add(n);
        self.clauses.0.set(total);
        if n > max || total > max {
            return Err(self
                .error(format!(
                    "failed to create query: maxClauseCount is set to {max}"
                ))
                .caused_by(too_many_clauses(max)));
        }
        Ok(())
    }
}

/// Lucene's and OpenSearch's default for `indices.query.bool.max_clause_count`.
pub const DEFAULT_MAX_CLAUSE_COUNT: usize = 1024;

/// OpenSearch's default for `index.max_terms_count`.
pub const DEFAULT_MAX_TERMS_COUNT: usize = 65_536;

/// `indices.query.bool.max_clause_count`, a static node setting. Process-wide as in Lucene
/// (OpenSearch sets `IndexSearcher.maxClauseCount`, a static, when the node starts), so that
/// every place that compiles a query sees it without carrying it along.
static MAX_CLAUSE_COUNT: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_CLAUSE_COUNT);

/// Sets `indices.query.bool.max_clause_count` (at node start).
pub fn set_max_clause_count(max: usize) {
    MAX_CLAUSE_COUNT.store(max, Ordering::Relaxed);
}

/// The most clauses one boolean query may have, and all the boolean queries compiled from one
/// query together. Lucene 9 counts the leaf queries of the whole tree; Tessera counts the
/// clauses of every boolean query it builds, nested ones included, which differs from the
/// leaf count only by the number of nested boolean queries. So a `bool` of 1,100 `term`s
/// fails, and so do two nested `bool`s of 600 each, as in OpenSearch.
pub fn max_clause_count() -> usize {
    MAX_CLAUSE_COUNT.load(Ordering::Relaxed)
}

/// The clauses counted while compiling one query.
#[derive(Debug, Default)]
pub struct ClauseCount(Cell<usize>);

impl ClauseCount {
    /// Starts counting another query (a `post_filter` is counted apart from the query, as
    /// Lucene rewrites each on its own).
    pub fn reset(&self) {
        self.0.set(0);
    }
}

/// Lucene's `TooManyClauses`, as OpenSearch renders it.
pub(crate) fn too_many_clauses(max: usize) -> Error {
    Error::new(
        "too_many_clauses",
        400,
        format!("maxClauseCount is set to {max}"),
    )
}

pub(crate) fn boosted(query: Box<dyn Query>, boost: f32) -> Box<dyn Query> {
    if (boost - 1.0).abs() < f32::EPSILON {
        query
    } else {
        Box::new(BoostQuery::new(query, boost))
    }
}

/// The score of `doc` by a fresh scorer of `weight`, for `Weight::explain`; an error when the
/// document does not match (a fresh scorer may already stand past it, so it is not sought).
pub(crate) fn score_of_match(
    weight: &dyn tantivy::query::Weight,
    reader: &tantivy::SegmentReader,
    doc: tantivy::DocId,
) -> tantivy::Result<tantivy::Score> {
    let mut scorer = weight.scorer(reader, 1.0)?;
    if scorer.doc() > doc || scorer.seek(doc) != doc {
        return Err(tantivy::TantivyError::InvalidArgument(format!(
            "Document #({doc}) does not match"
        )));
    }
    Ok(scorer.score())
}

pub(crate) fn match_none() -> Box<dyn Query> {
    Box::new(EmptyQuery)
}

pub(crate) fn constant(query: Box<dyn Query>, boost: f32) -> Box<dyn Query> {
    Box::new(ConstScoreQuery::new(query, boost))
}

/// Queries on the metadata fields `_index` and `_id`, which have no mapping: `_index` is
/// decided by the shard's index name, `_id` is an ids query.
fn metadata_query(ast: &QueryAst, ctx: &CompileContext) -> Option<Result<Box<dyn Query>>> {
    let all_or_none = |matches: bool, boost: f32| -> Result<Box<dyn Query>> {
        Ok(if matches {
            constant(Box::new(AllQuery), boost)
        } else {
            match_none()
        })
    };
    let text = |v: &serde_json::Value| {
        v.as_str()
            .map(String::from)
            .unwrap_or_else(|| v.to_string())
    };
    let index = ctx.index;
    Some(match ast {
        QueryAst::Term {
            field,
            value,
            boost,
            ..
        } if field == "_index" => all_or_none(text(value) == index, *boost),
        QueryAst::Terms {
            field,
            values,
            boost,
        } if field == "_index" => all_or_none(values.iter().any(|v| text(v) == index), *boost),
        QueryAst::Prefix {
            field,
            value,
            boost,
            ..
        } if field == "_index" => all_or_none(index.starts_with(value.as_str()), *boost),
        QueryAst::Wildcard {
            field,
            pattern,
            boost,
            ..
        } if field == "_index" => all_or_none(
            tessera_mapping::dynamic::simple_match(&pattern.replace('?', "*"), index),
            *boost,
        ),
        QueryAst::Exists { field, boost } if field == "_index" || field == "_id" => {
            all_or_none(true, *boost)
        }
        QueryAst::Term {
            field,
            value,
            boost,
            ..
        } if field == "_id" => term_level::ids(ctx, &[text(value)], *boost),
        QueryAst::Terms {
            field,
            values,
            boost,
        } if field == "_id" => {
            term_level::ids(ctx, &values.iter().map(text).collect::<Vec<_>>(), *boost)
        }
        _ => return None,
    })
}

/// `nested`: the query on the children of `path`, joined to their parents at the level the
/// query sits in.
fn nested_query(
    ctx: &CompileContext,
    query: &crate::ast::NestedQueryAst,
) -> Result<Box<dyn Query>> {
    use crate::nested::{Level, NestedQuery};
    let path = query.path.as_str();
    let (Some(_), Some(markers)) = (ctx.table.nested_path(path), ctx.table.meta.nested) else {
        if query.ignore_unmapped {
            return Ok(match_none());
        }
        let is_object = ctx.table.leaves().any(|leaf| {
            leaf.path.len() > path.len()
                && leaf.path.starts_with(path)
                && leaf.path.as_bytes()[path.len()] == b'.'
        });
        let reason = if is_object {
            format!("[nested] nested object under path [{path}] is not of nested type")
        } else {
            format!("[nested] failed to find nested object under path [{path}]")
        };
        return Err(ctx
            .error(format!("failed to create query: {reason}"))
            .caused_by(Error::illegal_state(reason)));
    };
    let parent = ctx.nested_scope_replace(Some(path.to_string()));
    let child = compile(&query.query, ctx);
    ctx.nested_scope_replace(parent.clone());
    let joined = NestedQuery::new(
        child?,
        markers,
        path.to_string(),
        Level::of(parent.as_deref()),
        query.score_mode,
    );
    Ok(boosted(Box::new(joined), query.boost))
}

/// Compiles `ast` for the shard described by `ctx`.
pub fn compile(ast: &QueryAst, ctx: &CompileContext) -> Result<Box<dyn Query>> {
    if let QueryAst::Terms { values, .. } = ast {
        check_terms_count(values.len(), ctx)?;
    }
    if let Some(query) = metadata_query(ast, ctx) {
        return query;
    }
    match ast {
        QueryAst::MatchAll { boost } => {
            // inside a `nested` query every document means every child of the path, so that
            // what scores them (a function_score's functions) never sees another document
            let scope = ctx.nested_scope.0.borrow().clone();
            match (scope, ctx.table.meta.nested) {
                (Some(path), Some(markers)) => Ok(constant(
                    Box::new(crate::nested::RootDocsQuery::at(
                        Box::new(AllQuery),
                        markers,
                        crate::nested::Level::Path(path),
                    )),
                    *boost,
                )),
                _ => Ok(constant(Box::new(AllQuery), *boost)),
            }
        }
        QueryAst::MatchNone => Ok(match_none()),
        QueryAst::Term {
            field,
            value,
            boost,
            case_insensitive,
        } => term_level::term(ctx, field, value, *boost, *case_insensitive),
        QueryAst::Terms {
            field,
            values,
            boost,
        } => term_level::terms(ctx, field, values, *boost),
        QueryAst::Range(range) => term_level::range(ctx, range),
        QueryAst::Exists { field, boost } => term_level::exists(ctx, field, *boost),
        QueryAst::Ids { values, boost } => term_level::ids(ctx, values, *boost),
        QueryAst::Prefix {
            field,
            value,
            case_insensitive,
            boost,
        } => term_level::prefix(ctx, field, value, *case_insensitive, *boost),
        QueryAst::Wildcard {
            field,
            pattern,
            case_insensitive,
            boost,
        } => term_level::wildcard(ctx, field, pattern, *case_insensitive, *boost),
        QueryAst::Regexp {
            field,
            pattern,
            case_insensitive,
            boost,
        } => term_level::regexp(ctx, field, pattern, *case_insensitive, *boost),
        QueryAst::Fuzzy {
            field,
            value,
            fuzziness,
            prefix_length,
            transpositions,
            boost,
            max_expansions,
        } => term_level::fuzzy(
            ctx,
            field,
            value,
            fuzziness,
            fuzzy_terms::Expansion {
                prefix_length: *prefix_length,
                transpositions: *transpositions,
                max_expansions: *max_expansions,
            },
            *boost,
        ),
        QueryAst::Match(query) => full_text::match_query(ctx, query),
        QueryAst::MatchPhrase {
            field,
            query,
            slop,
            analyzer,
            zero_terms_query,
            boost,
        } => full_text::phrase(
            ctx,
            field,
            query,
            *slop,
            analyzer.as_deref(),
            *zero_terms_query,
            *boost,
        ),
        QueryAst::MatchPhrasePrefix {
            field,
            query,
            slop,
            max_expansions,
            analyzer,
            boost,
        } => full_text::phrase_prefix(
            ctx,
            field,
            query,
            *slop,
            *max_expansions,
            analyzer.as_deref(),
            *boost,
        ),
        QueryAst::MultiMatch(query) => full_text::multi_match(ctx, query),
        QueryAst::Bool(query) => bool_query(ctx, query),
        QueryAst::ConstantScore { filter, boost } => Ok(constant(compile(filter, ctx)?, *boost)),
        QueryAst::GeoDistance {
            field,
            lat,
            lon,
            distance_meters,
            ignore_unmapped,
            boost,
        } => {
            let shape = geo::GeoShape::Circle {
                center: tessera_mapping::geo::GeoPoint {
                    lat: *lat,
                    lon: *lon,
                },
                meters: *distance_meters,
            };
            geo_query(ctx, field, shape, *ignore_unmapped, *boost)
        }
        QueryAst::GeoBoundingBox {
            field,
            top,
            left,
            bottom,
            right,
            ignore_unmapped,
            boost,
        } => {
            let shape = geo::GeoShape::Box {
                top: *top,
                left: *left,
                bottom: *bottom,
                right: *right,
            };
            geo_query(ctx, field, shape, *ignore_unmapped, *boost)
        }
        QueryAst::GeoPolygon {
            field,
            points,
            validation,
            ignore_unmapped,
            boost,
        } => {
            match ctx.table.leaf(field) {
                None if !ignore_unmapped => {
                    return Err(ctx.error(format!("failed to find geo_point field [{field}]")))
                }
                Some(leaf) if !matches!(leaf.kind, tessera_mapping::LeafKind::GeoPoint { .. }) => {
                    return Err(ctx.error(format!("field [{field}] is not a geo_point field")))
                }
                _ => {}
            }
            let shape = geo::GeoShape::polygon(points, *validation).map_err(|e| ctx.error(e))?;
            geo_query(ctx, field, shape, *ignore_unmapped, *boost)
        }
        QueryAst::Boosting {
            positive,
            negative,
            negative_boost,
            boost,
        } => {
            let query = boosting::BoostingQuery::new(
                compile(positive, ctx)?,
                compile(negative, ctx)?,
                *negative_boost,
            );
            Ok(boosted(Box::new(query), *boost))
        }
        QueryAst::Knn(query) => knn::knn(ctx, query),
        QueryAst::Percolate(query) if query.indexed.is_some() => Err(unresolved("percolate")),
        QueryAst::Percolate(query) => percolate::percolate(ctx, query),
        QueryAst::TermsLookup(_) => Err(unresolved("terms")),
        QueryAst::DistanceFeature(query) => distance_feature::compile(ctx, query),
        QueryAst::TermsSet(query) => terms_set::compile(ctx, query),
        QueryAst::MoreLikeThis(query) => more_like_this::compile(ctx, query),
        QueryAst::Nested(query) => nested_query(ctx, query),
        QueryAst::FunctionScore(query) => {
            Ok(boosted(function_score::compile(ctx, query)?, query.boost))
        }
        QueryAst::ScriptScore(query) => script_score::script_score(ctx, query),
        QueryAst::Script { script, boost } => script::script_filter(ctx, script, *boost),
        QueryAst::DisMax {
            queries,
            tie_breaker,
            boost,
        } => {
            ctx.count_clauses(queries.len())?;
            let compiled = queries
                .iter()
                .map(|q| compile(q, ctx))
                .collect::<Result<Vec<_>>>()?;
            let dismax: Box<dyn Query> = Box::new(DisjunctionMaxQuery::with_tie_breaker(
                compiled,
                *tie_breaker,
            ));
            Ok(boosted(dismax, *boost))
        }
        QueryAst::QueryString(query) => {
            let resolver = full_text::ShardFieldResolver { ctx };
            let lowered = crate::query_string::lower_query_string(query, &resolver)
                .map_err(|e| with_index(e, ctx.index))?;
            // OpenSearch's classic parser fails while it builds the clauses
            compile(&lowered, ctx).map_err(|e| {
                match e.cause().filter(|c| c.kind() == "too_many_clauses") {
                    Some(cause) => with_index(
                        crate::query_string::parse_failure_caused_by(
                            &query.query,
                            "too many boolean clauses",
                            cause.clone(),
                        ),
                        ctx.index,
                    ),
                    None => e,
                }
            })
        }
        QueryAst::SimpleQueryString(query) => {
            let resolver = full_text::ShardFieldResolver { ctx };
            let lowered = crate::query_string::lower_simple_query_string(query, &resolver)
                .map_err(|e| with_index(e, ctx.index))?;
            compile(&lowered, ctx)
        }
    }
}

/// A geo query on `path`; an unmapped field fails the shard, as in OpenSearch, unless
/// `ignore_unmapped` asks it to match nothing.
fn geo_query(
    ctx: &CompileContext,
    path: &str,
    shape: geo::GeoShape,
    ignore_unmapped: bool,
    boost: f32,
) -> Result<Box<dyn Query>> {
    let Some(leaf) = ctx.table.leaf(path) else {
        if ignore_unmapped {
            return Ok(match_none());
        }
        return Err(ctx.error(format!("failed to find geo field [{path}]")));
    };
    match &leaf.kind {
        tessera_mapping::LeafKind::GeoPoint { lat: Some(lat), lon: Some(lon) } => {
            let schema = ctx.table.schema();
            let query = geo::GeoQuery::new(schema.get_field_name(*lat).to_string(), schema.get_field_name(*lon).to_string(), shape);
            Ok(constant(Box::new(query), boost))
        }
        tessera_mapping::LeafKind::GeoPoint { .. } => Err(ctx.error(format!(
            "failed to create query: field [{path}] of type [geo_point] has no doc values to search"
        ))),
        _ => Err(ctx.error(format!(
            "failed to create query: field [{path}] is of type [{}], but only geo_point fields are supported for geo queries",
            leaf.field_type.name()
        ))),
    }
}

/// `index.max_terms_count`, checked before the field is even looked up, as OpenSearch does.
/// A query that names a document reaches a shard only after the coordinator read the
/// document into it ([`crate::lookup`]); one that did not is a path that skipped it.
fn unresolved(query: &str) -> Error {
    Error::illegal_state(format!(
        "a [{query}] query naming an indexed document reached a shard unresolved"
    ))
}

fn check_terms_count(count: usize, ctx: &CompileContext) -> Result<()> {
    if count <= ctx.max_terms_count {
        return Ok(());
    }
    let reason = format!(
        "The number of terms [{count}] used in the Terms Query request has exceeded the allowed maximum of [{}]. This maximum can be set by changing the [index.max_terms_count] index level setting.",
        ctx.max_terms_count
    );
    Err(ctx
        .error(format!("failed to create query: {reason}"))
        .caused_by(Error::illegal_argument(reason)))
}

fn with_index(error: Error, index: &str) -> Error {
    if error.kind() == "query_shard_exception" && error.meta("index").is_none() {
        error.with_meta("index", index.to_string())
    } else {
        error
    }
}

fn bool_query(ctx: &CompileContext, query: &BoolQuery) -> Result<Box<dyn Query>> {
    if query.must.is_empty()
        && query.should.is_empty()
        && query.filter.is_empty()
        && query.must_not.is_empty()
    {
        return Ok(constant(Box::new(AllQuery), query.boost));
    }
    // counted before the clauses are compiled: a huge bool fails without building them
    ctx.count_clauses(
        query.must.len() + query.filter.len() + query.must_not.len() + query.should.len(),
    )?;
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    for q in &query.must {
        clauses.push((Occur::Must, compile(q, ctx)?));
    }
    for q in &query.filter {
        // filters restrict without scoring
        clauses.push((Occur::Must, constant(compile(q, ctx)?, 0.0)));
    }
    for q in &query.must_not {
        clauses.push((Occur::MustNot, compile(q, ctx)?));
    }
    let should_count = query.should.len();
    for q in &query.should {
        clauses.push((Occur::Should, compile(q, ctx)?));
    }
    let has_required = !query.must.is_empty() || !query.filter.is_empty();
    if !has_required && should_count == 0 {
        // only must_not: everything else, as OpenSearch adds a match_all filter
        clauses.push((Occur::Must, constant(Box::new(AllQuery), 0.0)));
    }
    let minimum = match &query.minimum_should_match {
        Some(msm) => resolve_msm(msm, should_count),
        None if has_required => 0,
        None => usize::from(should_count > 0),
    };
    if minimum > should_count {
        return Ok(match_none());
    }
    let boolean: Box<dyn Query> = if should_count > 0 {
        if minimum == 0 && has_required {
            // optional shoulds only add to the score
            Box::new(BooleanQuery::new(clauses))
        } else {
            Box::new(BooleanQuery::with_minimum_required_clauses(
                clauses,
                minimum.max(1),
            ))
        }
    } else {
        Box::new(BooleanQuery::new(clauses))
    };
    Ok(boosted(boolean, query.boost))
}

#[cfg(test)]
mod tests;
