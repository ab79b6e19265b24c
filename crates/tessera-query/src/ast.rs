//! `QueryAst`: the engine's own, serialisable form of a query.
//!
//! The wire parsers (one file per query type under `dsl/`) turn OpenSearch JSON into this tree;
//! `query_string` and `simple_query_string` are lowered into it once the fields they name are
//! known; the compiler turns it into tantivy queries for one shard. Keeping a plain data tree in
//! the middle means the same request can be checked (can_match), cost-estimated and sent to a
//! remote shard without re-parsing JSON.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A query, as parsed from the DSL. Field names are full dotted paths (`station.id`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum QueryAst {
    MatchAll {
        boost: f32,
    },
    MatchNone,
    /// An exact term; `value` is a JSON scalar interpreted with the field's type.
    Term {
        field: String,
        value: Value,
        boost: f32,
        case_insensitive: bool,
    },
    Terms {
        field: String,
        values: Vec<Value>,
        boost: f32,
    },
    /// `distance_feature`: scores by closeness to an origin.
    DistanceFeature(Box<DistanceFeatureQuery>),
    TermsSet(Box<TermsSetQuery>),
    MoreLikeThis(Box<MoreLikeThisQuery>),
    /// A `terms` query whose values are read from a document: the coordinator replaces it
    /// with the values before the shards see it (see [`crate::lookup`]).
    TermsLookup(Box<TermsLookup>),
    Range(RangeQuery),
    Exists {
        field: String,
        boost: f32,
    },
    Ids {
        values: Vec<String>,
        boost: f32,
    },
    Prefix {
        field: String,
        value: String,
        case_insensitive: bool,
        boost: f32,
    },
    /// `*` matches any sequence, `?` one character; `\` escapes.
    Wildcard {
        field: String,
        pattern: String,
        case_insensitive: bool,
        boost: f32,
    },
    Regexp {
        field: String,
        pattern: String,
        case_insensitive: bool,
        boost: f32,
    },
    Fuzzy {
        field: String,
        value: String,
        fuzziness: Fuzziness,
        prefix_length: u32,
        transpositions: bool,
        /// How many of the shard's closest terms are searched (50 by default).
        max_expansions: u32,
        boost: f32,
    },
    Match(MatchQuery),
    MatchPhrase {
        field: String,
        query: String,
        slop: u32,
        analyzer: Option<String>,
        zero_terms_query: ZeroTermsQuery,
        boost: f32,
    },
    MatchPhrasePrefix {
        field: String,
        query: String,
        slop: u32,
        max_expansions: u32,
        analyzer: Option<String>,
        boost: f32,
    },
    MultiMatch(MultiMatchQuery),
    Bool(BoolQuery),
    ConstantScore {
        filter: Box<QueryAst>,
        boost: f32,
    },
    DisMax {
        queries: Vec<QueryAst>,
        tie_breaker: f32,
        boost: f32,
    },
    /// Points within `distance_meters` of (`lat`, `lon`).
    GeoDistance {
        field: String,
        lat: f64,
        lon: f64,
        distance_meters: f64,
        /// An unmapped field matches nothing instead of failing the shard.
        ignore_unmapped: bool,
        boost: f32,
    },
    /// Points inside a box (`left > right` crosses the date line).
    /// Points inside the polygon of `points` (lat, lon), closed; on an edge counts as inside.
    GeoPolygon {
        field: String,
        points: Vec<(f64, f64)>,
        validation: GeoValidation,
        ignore_unmapped: bool,
        boost: f32,
    },
    GeoBoundingBox {
        field: String,
        top: f64,
        left: f64,
        bottom: f64,
        right: f64,
        /// An unmapped field matches nothing instead of failing the shard.
        ignore_unmapped: bool,
        boost: f32,
    },
    /// Matches `positive`; documents also matching `negative` have their score multiplied by
    /// `negative_boost`.
    Boosting {
        positive: Box<QueryAst>,
        negative: Box<QueryAst>,
        negative_boost: f32,
        boost: f32,
    },
    /// `function_score`: the query's score combined with functions of each document.
    FunctionScore(Box<FunctionScoreQuery>),
    /// `script_score`: the query's documents scored by a script.
    ScriptScore(Box<ScriptScoreQuery>),
    /// `script`: the documents a script returns true for.
    Script {
        script: Box<tessera_script::ScriptSpec>,
        boost: f32,
    },
    /// `knn`: the nearest vectors of a `knn_vector` field, rewritten on each shard into the
    /// shard's top k (`compile::knn`).
    Knn(Box<KnnQuery>),
    /// `percolate`: the stored queries of a `percolator` field matching given documents,
    /// answered on each shard before the weight is built (`compile::percolate`).
    Percolate(Box<PercolateQuery>),
    /// `nested`: parents of the nested objects of `path` that match a query (`crate::nested`).
    Nested(Box<NestedQueryAst>),
    /// Lowered into the other variants by `query_string::lower` once fields are known.
    QueryString(QueryStringQuery),
    /// Lowered into the other variants by `query_string::lower_simple` once fields are known.
    SimpleQueryString(SimpleQueryStringQuery),
}

/// The `percolate` query: the documents as JSON text, in slot order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PercolateQuery {
    pub field: String,
    pub documents: Vec<String>,
    /// The indexed document to percolate instead (`index` and `id`): the coordinator reads
    /// it into `documents` before the shards see the query (see [`crate::lookup`]).
    pub indexed: Option<DocRef>,
    /// Names the hits' slot field (`_percolator_document_slot_<name>`) beside other
    /// `percolate` queries.
    pub name: Option<String>,
    /// Parsed and, as in OpenSearch, left out of the scores.
    pub boost: f32,
}

/// The `distance_feature` query: a document with a value in `field` (a date or a geo
/// point) scores `boost × pivot / (pivot + distance)`, its closest value's distance from
/// `origin`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DistanceFeatureQuery {
    pub field: String,
    /// A date (date math allowed) or a geo point.
    pub origin: Value,
    /// A time (`7d`) or a distance (`1km`).
    pub pivot: String,
    pub boost: f32,
}

/// The `terms_set` query: documents matching at least as many of `terms` as their own
/// minimum says, scored by the sum of the matching terms' scores.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TermsSetQuery {
    pub field: String,
    /// Repeats count (and score) as often as they are listed, as in OpenSearch.
    pub terms: Vec<Value>,
    /// `None`: neither a field nor a script, which fails when the query is built.
    pub minimum: Option<TermsSetMinimum>,
    pub boost: f32,
}

/// Where a `terms_set` document's minimum number of matching terms comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TermsSetMinimum {
    /// A numeric field's (first) value.
    Field(String),
    /// A script's value (it sees `params.num_terms`), truncated to a whole number.
    Script(Box<tessera_script::ScriptSpec>),
}

/// The `more_like_this` query: documents sharing the most telling terms of the texts and
/// documents it likes (see `compile::more_like_this`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MoreLikeThisQuery {
    /// `None`: the index's default fields.
    pub fields: Option<Vec<String>>,
    pub like: Vec<MltItem>,
    pub unlike: Vec<MltItem>,
    pub max_query_terms: usize,
    pub min_term_freq: u64,
    pub min_doc_freq: u64,
    pub max_doc_freq: u64,
    pub min_word_length: usize,
    /// 0: no bound.
    pub max_word_length: usize,
    pub stop_words: Vec<String>,
    /// Analyzes the liked texts (default: the first field's search analyzer).
    pub analyzer: Option<String>,
    pub minimum_should_match: MinimumShouldMatch,
    /// 0: the terms are not boosted by how telling they are.
    pub boost_terms: f32,
    /// Whether the liked documents may be hits.
    pub include: bool,
    pub fail_on_unsupported_field: bool,
    pub boost: f32,
}

/// One thing a `more_like_this` query likes (or unlikes).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum MltItem {
    Text(String),
    /// A document of an index; `source` is what the coordinator read (`Some(None)`: not
    /// found), `None` until it has.
    Indexed {
        doc: DocRef,
        fields: Option<Vec<String>>,
        per_field_analyzer: Vec<(String, String)>,
        source: Option<Option<Value>>,
    },
    /// A document given in the request.
    Artificial {
        doc: Value,
        fields: Option<Vec<String>>,
        per_field_analyzer: Vec<(String, String)>,
    },
}

/// A `terms` lookup: the values at `path` in a document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TermsLookup {
    pub field: String,
    pub doc: DocRef,
    /// Dotted path to the values in the document's `_source`.
    pub path: String,
    pub boost: f32,
}

/// A document a query names by index and id.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DocRef {
    pub index: String,
    pub id: String,
    pub routing: Option<String>,
    /// The version the document must have (a `percolate` of an indexed document).
    pub version: Option<i64>,
}

/// The `nested` query.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NestedQueryAst {
    pub path: String,
    pub query: QueryAst,
    pub score_mode: crate::nested::ScoreMode,
    pub ignore_unmapped: bool,
    pub boost: f32,
    /// `inner_hits` as given (parsed by the search layer, which fetches them).
    pub inner_hits: Option<serde_json::Value>,
}

impl QueryAst {
    /// The query's name in the DSL (as `profile` shows it).
    pub fn type_name(&self) -> &'static str {
        match self {
            QueryAst::MatchAll { .. } => "match_all",
            QueryAst::MatchNone => "match_none",
            QueryAst::Term { .. } => "term",
            QueryAst::Terms { .. } | QueryAst::TermsLookup(_) => "terms",
            QueryAst::DistanceFeature(_) => "distance_feature",
            QueryAst::TermsSet(_) => "terms_set",
            QueryAst::MoreLikeThis(_) => "more_like_this",
            QueryAst::Range(_) => "range",
            QueryAst::Exists { .. } => "exists",
            QueryAst::Ids { .. } => "ids",
            QueryAst::Prefix { .. } => "prefix",
            QueryAst::Wildcard { .. } => "wildcard",
            QueryAst::Regexp { .. } => "regexp",
            QueryAst::Fuzzy { .. } => "fuzzy",
            QueryAst::Match(_) => "match",
            QueryAst::MatchPhrase { .. } => "match_phrase",
            QueryAst::MatchPhrasePrefix { .. } => "match_phrase_prefix",
            QueryAst::MultiMatch(_) => "multi_match",
            QueryAst::Bool(_) => "bool",
            QueryAst::ConstantScore { .. } => "constant_score",
            QueryAst::DisMax { .. } => "dis_max",
            QueryAst::GeoDistance { .. } => "geo_distance",
            QueryAst::GeoBoundingBox { .. } => "geo_bounding_box",
            QueryAst::GeoPolygon { .. } => "geo_polygon",
            QueryAst::Boosting { .. } => "boosting",
            QueryAst::FunctionScore(_) => "function_score",
            QueryAst::ScriptScore(_) => "script_score",
            QueryAst::Script { .. } => "script",
            QueryAst::Knn(_) => "knn",
            QueryAst::Percolate(_) => "percolate",
            QueryAst::Nested(_) => "nested",
            QueryAst::QueryString(_) => "query_string",
            QueryAst::SimpleQueryString(_) => "simple_query_string",
        }
    }
    pub fn match_all() -> QueryAst {
        QueryAst::MatchAll { boost: 1.0 }
    }

    /// The queries a compound query is made of (a `nested` query's own query included; a
    /// `knn` filter left out, as it only narrows the vectors searched).
    pub fn children(&self) -> Vec<&QueryAst> {
        match self {
            QueryAst::Bool(b) => b
                .must
                .iter()
                .chain(&b.should)
                .chain(&b.filter)
                .chain(&b.must_not)
                .collect(),
            QueryAst::ConstantScore { filter, .. } => vec![filter],
            QueryAst::DisMax { queries, .. } => queries.iter().collect(),
            QueryAst::Boosting {
                positive, negative, ..
            } => vec![positive, negative],
            QueryAst::FunctionScore(f) => vec![&f.query],
            QueryAst::Nested(nested) => vec![&nested.query],
            _ => Vec::new(),
        }
    }

    /// True when every matching document gets the same score, so the top hits by score are
    /// simply the first matches in index order (lets collection stop early).
    pub fn is_constant_score(&self) -> bool {
        match self {
            QueryAst::MatchAll { .. }
            | QueryAst::MatchNone
            | QueryAst::Range(_)
            | QueryAst::Exists { .. }
            | QueryAst::Ids { .. }
            | QueryAst::Prefix { .. }
            | QueryAst::Wildcard { .. }
            | QueryAst::Regexp { .. }
            | QueryAst::Terms { .. }
            | QueryAst::Script { .. }
            | QueryAst::ConstantScore { .. } => true,
            QueryAst::Bool(b) => b.must.is_empty() && b.should.is_empty(),
            _ => false,
        }
    }
}

/// A `knn` query: exactly one of `k`, `max_distance` and `min_score` is set (checked by the
/// parser); `ef_search` is `method_parameters.ef_search`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KnnQuery {
    pub field: String,
    pub vector: Vec<f32>,
    pub k: Option<i64>,
    pub max_distance: Option<f32>,
    pub min_score: Option<f32>,
    pub filter: Option<Box<QueryAst>>,
    pub ef_search: Option<u32>,
    pub boost: f32,
}

/// `gt`/`gte`/`lt`/`lte` bounds on a field; values are JSON scalars interpreted with the
/// field's type (numbers, date strings or date math, keywords, ips).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RangeQuery {
    pub field: String,
    pub lower: Option<RangeBound>,
    pub upper: Option<RangeBound>,
    /// Date format for the bounds (`dd/MM/yyyy`, `epoch_millis`, `||` lists).
    pub format: Option<String>,
    /// Time zone for date bounds without an explicit offset (`+01:00`, `UTC`).
    pub time_zone: Option<String>,
    /// How a range field's ranges must relate to the query's (other fields ignore it).
    #[serde(default)]
    pub relation: RangeRelation,
    pub boost: f32,
}

/// `relation` of a `range` query on a range field: the document's range intersects, lies
/// within, or contains the query's range.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum RangeRelation {
    #[default]
    Intersects,
    Within,
    Contains,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RangeBound {
    pub value: Value,
    pub inclusive: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Operator {
    #[default]
    Or,
    And,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum ZeroTermsQuery {
    #[default]
    None,
    All,
}

/// `minimum_should_match` in its OpenSearch forms: `3`, `-2`, `75%`, `-25%`, and the
/// conditional form `3<90%` (kept as text and resolved against the clause count).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum MinimumShouldMatch {
    Count(i32),
    Percent(i32),
    Conditional(String),
}

/// `fuzziness`: `AUTO` (with optional `AUTO:low,high`) or a fixed edit distance 0..=2.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Fuzziness {
    Auto { low: u32, high: u32 },
    Edits(u8),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatchQuery {
    pub field: String,
    /// The query text (numbers and booleans arrive as their JSON form).
    pub query: Value,
    pub operator: Operator,
    pub minimum_should_match: Option<MinimumShouldMatch>,
    pub fuzziness: Option<Fuzziness>,
    pub prefix_length: u32,
    /// How many of the shard's closest terms a fuzzy term searches.
    pub max_expansions: u32,
    pub fuzzy_transpositions: bool,
    pub zero_terms_query: ZeroTermsQuery,
    pub analyzer: Option<String>,
    /// Ignore values that cannot be converted to the field's type instead of failing.
    pub lenient: bool,
    pub boost: f32,
}

impl MatchQuery {
    pub fn new(field: impl Into<String>, query: impl Into<Value>) -> MatchQuery {
        MatchQuery {
            field: field.into(),
            query: query.into(),
            operator: Operator::Or,
            minimum_should_match: None,
            fuzziness: None,
            prefix_length: 0,
            max_expansions: crate::compile::DEFAULT_MAX_EXPANSIONS,
            fuzzy_transpositions: true,
            zero_terms_query: ZeroTermsQuery::None,
            analyzer: None,
            lenient: false,
            boost: 1.0,
        }
    }
}

/// A field name or pattern (`title`, `*_name`, `*`) with its boost (`title^3`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FieldPattern {
    pub pattern: String,
    pub boost: f32,
}

impl FieldPattern {
    /// Parses `name^boost`.
    pub fn parse(spec: &str) -> Result<FieldPattern, String> {
        match spec.rsplit_once('^') {
            Some((name, boost)) => boost
                .parse::<f32>()
                .map(|boost| FieldPattern {
                    pattern: name.to_string(),
                    boost,
                })
                .map_err(|_| format!("invalid boost [{boost}] in field [{spec}]")),
            None => Ok(FieldPattern {
                pattern: spec.to_string(),
                boost: 1.0,
            }),
        }
    }
}

/// `validation_method` of a geo query: out-of-range coordinates fail the query (`strict`), are
/// normalized (`coerce`), or are taken as given (`ignore_malformed`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum GeoValidation {
    Strict,
    Coerce,
    IgnoreMalformed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum MultiMatchType {
    #[default]
    BestFields,
    MostFields,
    CrossFields,
    Phrase,
    PhrasePrefix,
    BoolPrefix,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MultiMatchQuery {
    /// Empty means "the index's default fields" (`index.query.default_field`).
    pub fields: Vec<FieldPattern>,
    pub query: Value,
    pub kind: MultiMatchType,
    pub operator: Operator,
    pub minimum_should_match: Option<MinimumShouldMatch>,
    pub tie_breaker: Option<f32>,
    pub fuzziness: Option<Fuzziness>,
    pub prefix_length: u32,
    /// How many terms a fuzzy term or a phrase's last prefix expands to.
    pub max_expansions: u32,
    pub fuzzy_transpositions: bool,
    pub slop: u32,
    pub analyzer: Option<String>,
    pub zero_terms_query: ZeroTermsQuery,
    pub lenient: bool,
    pub boost: f32,
}

impl MultiMatchQuery {
    /// A `multi_match` of `kind` over `fields` with OpenSearch's defaults (the text is set by
    /// the parser).
    pub fn new(fields: Vec<FieldPattern>, kind: MultiMatchType) -> MultiMatchQuery {
        MultiMatchQuery {
            fields,
            query: Value::Null,
            kind,
            operator: Operator::Or,
            minimum_should_match: None,
            tie_breaker: None,
            fuzziness: None,
            prefix_length: 0,
            max_expansions: crate::compile::DEFAULT_MAX_EXPANSIONS,
            fuzzy_transpositions: true,
            slop: 0,
            analyzer: None,
            zero_terms_query: ZeroTermsQuery::None,
            lenient: false,
            boost: 1.0,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct BoolQuery {
    pub must: Vec<QueryAst>,
    pub should: Vec<QueryAst>,
    pub filter: Vec<QueryAst>,
    pub must_not: Vec<QueryAst>,
    pub minimum_should_match: Option<MinimumShouldMatch>,
    pub boost: f32,
}

/// The options of `query_string` that shape how its text is turned into queries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueryStringQuery {
    pub query: String,
    /// `default_field`, if given (may be a pattern such as `*`).
    pub default_field: Option<String>,
    /// `fields`, if given; takes precedence over `default_field`.
    pub fields: Vec<FieldPattern>,
    pub default_operator: Operator,
    pub analyze_wildcard: bool,
    pub allow_leading_wildcard: bool,
    pub lenient: Option<bool>,
    pub minimum_should_match: Option<MinimumShouldMatch>,
    pub phrase_slop: u32,
    pub fuzziness: Option<Fuzziness>,
    pub fuzzy_prefix_length: u32,
    pub fuzzy_max_expansions: u32,
    pub fuzzy_transpositions: bool,
    pub tie_breaker: Option<f32>,
    pub kind: MultiMatchType,
    pub time_zone: Option<String>,
    pub analyzer: Option<String>,
    pub boost: f32,
}

impl QueryStringQuery {
    pub fn new(query: impl Into<String>) -> QueryStringQuery {
        QueryStringQuery {
            query: query.into(),
            default_field: None,
            fields: Vec::new(),
            default_operator: Operator::Or,
            analyze_wildcard: false,
            allow_leading_wildcard: true,
            lenient: None,
            minimum_should_match: None,
            phrase_slop: 0,
            fuzziness: None,
            fuzzy_prefix_length: 0,
            fuzzy_max_expansions: crate::compile::DEFAULT_MAX_EXPANSIONS,
            fuzzy_transpositions: true,
            tie_breaker: None,
            kind: MultiMatchType::BestFields,
            time_zone: None,
            analyzer: None,
            boost: 1.0,
        }
    }
}

/// `simple_query_string`'s operators, as the bits of its `flags` option.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimpleQueryFlags(pub u32);

impl SimpleQueryFlags {
    pub const AND: u32 = 1;
    pub const NOT: u32 = 1 << 1;
    pub const OR: u32 = 1 << 2;
    pub const PREFIX: u32 = 1 << 3;
    pub const PHRASE: u32 = 1 << 4;
    pub const PRECEDENCE: u32 = 1 << 5;
    pub const ESCAPE: u32 = 1 << 6;
    pub const WHITESPACE: u32 = 1 << 7;
    pub const FUZZY: u32 = 1 << 8;
    pub const NEAR: u32 = 1 << 9;
    pub const SLOP: u32 = 1 << 9;
    pub const ALL: u32 = (1 << 10) - 1;

    pub fn has(self, flag: u32) -> bool {
        self.0 & flag != 0
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimpleQueryStringQuery {
    pub query: String,
    pub fields: Vec<FieldPattern>,
    pub default_operator: Operator,
    pub flags: SimpleQueryFlags,
    pub analyze_wildcard: bool,
    pub lenient: Option<bool>,
    pub minimum_should_match: Option<MinimumShouldMatch>,
    pub fuzzy_prefix_length: u32,
    pub fuzzy_max_expansions: u32,
    pub fuzzy_transpositions: bool,
    pub analyzer: Option<String>,
    pub boost: f32,
}

impl SimpleQueryStringQuery {
    pub fn new(query: impl Into<String>) -> SimpleQueryStringQuery {
        SimpleQueryStringQuery {
            query: query.into(),
            fields: Vec::new(),
            default_operator: Operator::Or,
            flags: SimpleQueryFlags(SimpleQueryFlags::ALL),
            analyze_wildcard: false,
            lenient: None,
            minimum_should_match: None,
            fuzzy_prefix_length: 0,
            fuzzy_max_expansions: crate::compile::DEFAULT_MAX_EXPANSIONS,
            fuzzy_transpositions: true,
            analyzer: None,
            boost: 1.0,
        }
    }
}

/// A `script_score` query: `query`'s documents, scored by `script` (which sees `_score`);
/// those scoring below `min_score` do not match.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScriptScoreQuery {
    pub query: QueryAst,
    pub script: tessera_script::ScriptSpec,
    pub min_score: Option<f32>,
    pub boost: f32,
}

/// A `function_score` query (OpenSearch's `FunctionScoreQuery`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionScoreQuery {
    pub query: QueryAst,
    pub functions: Vec<FilterFunction>,
    pub score_mode: FunctionScoreMode,
    pub boost_mode: FunctionBoostMode,
    /// The most the functions' combined score may be.
    pub max_boost: f32,
    /// Documents scoring less (before `boost`) do not match.
    pub min_score: Option<f32>,
    pub boost: f32,
}

/// One of a `function_score`'s functions: it applies to the documents its filter matches (all
/// without one), its score multiplied by its weight.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FilterFunction {
    pub filter: Option<QueryAst>,
    pub weight: Option<f32>,
    pub function: ScoreFunction,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ScoreFunction {
    /// Only a weight: the function's score is the weight.
    Weight,
    /// `modifier(factor × the field's value)`.
    FieldValueFactor {
        field: String,
        factor: f64,
        modifier: FieldValueModifier,
        missing: Option<f64>,
    },
    /// `gauss`, `exp` or `linear` decay with the distance of the field's value from an origin.
    Decay(Box<DecayFunction>),
    /// `script_score`: the script's value (it sees the query's `_score`).
    Script(Box<tessera_script::ScriptSpec>),
    /// `random_score`: a hash of the seed with the field's first value (the `_id` when a
    /// seed comes without a field), or of the document without a seed; in `[0, 1)`.
    Random {
        seed: Option<i32>,
        field: Option<String>,
    },
}

/// A decay function; origin, scale and offset are read with the field's type when compiled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecayFunction {
    pub curve: DecayCurve,
    pub field: String,
    pub origin: Option<Value>,
    pub scale: Option<Value>,
    pub offset: Option<Value>,
    pub decay: f64,
    pub multi_value_mode: MultiValueMode,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FieldValueModifier {
    None,
    Log,
    Log1p,
    Log2p,
    Ln,
    Ln1p,
    Ln2p,
    Square,
    Sqrt,
    Reciprocal,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DecayCurve {
    Gauss,
    Exp,
    Linear,
}

/// Which distance of a multi-valued field's values a decay function takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MultiValueMode {
    Min,
    Max,
    Avg,
    Sum,
}

/// How the scores of the functions that apply to a document combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FunctionScoreMode {
    Multiply,
    Sum,
    Avg,
    First,
    Max,
    Min,
}

/// How the functions' score combines with the query's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FunctionBoostMode {
    Multiply,
    Replace,
    Sum,
    Avg,
    Max,
    Min,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_pattern_parses_boost() {
        assert_eq!(
            FieldPattern::parse("title^3").unwrap(),
            FieldPattern {
                pattern: "title".into(),
                boost: 3.0
            }
        );
        assert_eq!(FieldPattern::parse("body").unwrap().boost, 1.0);
        assert!(FieldPattern::parse("x^y").is_err());
    }

    #[test]
    fn constant_score_detection() {
        assert!(QueryAst::match_all().is_constant_score());
        let filter_only = QueryAst::Bool(BoolQuery {
            filter: vec![QueryAst::match_all()],
            boost: 1.0,
            ..Default::default()
        });
        assert!(filter_only.is_constant_score());
        assert!(!QueryAst::Match(MatchQuery::new("a", "b")).is_constant_score());
    }
}
