//! `rescore`: OpenSearch's query rescorer. Each shard collects at least `window_size` hits,
//! then every rescorer in turn scores its window's hits with its `rescore_query` and combines
//! the two scores by `score_mode` (`query_weight` × first pass, `rescore_query_weight` ×
//! second pass); hits outside the window, or not matched by the rescore query, keep
//! `query_weight` × their score. The hits are re-sorted after each rescorer, so the next one's
//! window holds the best hits so far, and the coordinator merges shards by the new scores.
//!
//! [`RescoredWeight`] gives the same combination per document as a tantivy weight, so
//! `explain` shows OpenSearch's "sum of" / "product of" … "primaryWeight" / "secondaryWeight"
//! tree without a second code path.

use std::sync::Arc;

use serde_json::Value;
use tantivy::query::{Explanation, Scorer, Weight};
use tantivy::{DocId, DocSet, Score, Searcher, SegmentReader, TERMINATED};
use tessera_common::error::json_token as token;
use tessera_common::{Error, Result};
use tessera_query::{parse_query, QueryAst};

use crate::hits::{HitSort, ShardHit};

/// How a rescorer combines the first and second pass (`score_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScoreMode {
    Total,
    Multiply,
    Avg,
    Max,
    Min,
}

impl ScoreMode {
    fn parse(name: &str) -> Option<ScoreMode> {
        Some(match name {
            "total" => ScoreMode::Total,
            "multiply" => ScoreMode::Multiply,
            "avg" => ScoreMode::Avg,
            "max" => ScoreMode::Max,
            "min" => ScoreMode::Min,
            _ => return None,
        })
    }

    fn combine(self, primary: Score, secondary: Score) -> Score {
        match self {
            ScoreMode::Total => primary + secondary,
            ScoreMode::Multiply => primary * secondary,
            ScoreMode::Avg => (primary + secondary) / 2.0,
            ScoreMode::Max => primary.max(secondary),
            ScoreMode::Min => primary.min(secondary),
        }
    }

    /// The explanation's description, as Lucene writes it.
    fn description(self) -> &'static str {
        match self {
            ScoreMode::Total => "sum of:",
            ScoreMode::Multiply => "product of:",
            ScoreMode::Avg => "avg of:",
            ScoreMode::Max => "max of:",
            ScoreMode::Min => "min of:",
        }
    }
}

/// One rescorer of the request.
#[derive(Clone, Debug)]
pub struct Rescorer {
    pub window_size: usize,
    pub rescore_query: QueryAst,
    pub query_weight: f32,
    pub rescore_query_weight: f32,
    pub score_mode: ScoreMode,
}

impl Rescorer {
    /// The score of a hit with first-pass score `primary`, and `secondary` when the rescore
    /// query matched it inside the window.
    pub fn combine(&self, primary: Score, secondary: Option<Score>) -> Score {
        let primary = primary * self.query_weight;
        match secondary {
            Some(secondary) => self
                .score_mode
                .combine(primary, secondary * self.rescore_query_weight),
            None => primary,
        }
    }
}

/// Parses the body's `rescore`: one rescorer or a list of them.
pub fn parse_rescore(value: &Value) -> Result<Vec<Rescorer>> {
    match value {
        Value::Array(items) => items.iter().map(parse_one).collect(),
        other => Ok(vec![parse_one(other)?]),
    }
}

fn parse_one(value: &Value) -> Result<Rescorer> {
    let Value::Object(map) = value else {
        return Err(Error::parsing(format!(
            "Unknown key for a {} in [rescore].",
            token(value)
        )));
    };
    let mut window_size = 10;
    let mut query = None;
    for (key, value) in map {
        match key.as_str() {
            "window_size" => {
                let n = number(key, value)?;
                if n < 0.0 || n.fract() != 0.0 {
                    return Err(Error::illegal_argument(format!(
                        "[window_size] must be a non-negative integer, got [{value}]"
                    )));
                }
                window_size = n as usize;
            }
            "query" => query = Some(value),
            other => {
                return Err(Error::new(
                    "named_object_not_found_exception",
                    400,
                    format!("unknown field [{other}]"),
                ))
            }
        }
    }
    let Some(query) = query else {
        return Err(Error::parsing("missing rescore type"));
    };
    let Value::Object(query) = query else {
        return Err(Error::parsing(format!(
            "Unknown key for a {} in [query].",
            token(query)
        )));
    };
    let mut rescorer = Rescorer {
        window_size,
        rescore_query: QueryAst::match_all(),
        query_weight: 1.0,
        rescore_query_weight: 1.0,
        score_mode: ScoreMode::Total,
    };
    let mut rescore_query = None;
    for (key, value) in query {
        match key.as_str() {
            "rescore_query" => rescore_query = Some(parse_query(value)?),
            "query_weight" => rescorer.query_weight = number(key, value)? as f32,
            "rescore_query_weight" => rescorer.rescore_query_weight = number(key, value)? as f32,
            "score_mode" => {
                rescorer.score_mode =
                    value.as_str().and_then(ScoreMode::parse).ok_or_else(|| {
                        Error::x_content_parse("[query] failed to parse field [score_mode]")
                            .caused_by(Error::illegal_argument(format!(
                                "illegal score_mode [{}]",
                                value.as_str().map_or(value.to_string(), String::from)
                            )))
                    })?
            }
            other => {
                return Err(Error::x_content_parse(format!(
                    "[query] unknown field [{other}]"
                )))
            }
        }
    }
    rescorer.rescore_query =
        rescore_query.ok_or_else(|| Error::illegal_argument("rescore_query cannot be null"))?;
    Ok(rescorer)
}

/// A number, or a numeric string, as OpenSearch's parser takes them.
fn number(key: &str, value: &Value) -> Result<f64> {
    match value {
        Value::Number(n) => Ok(n.as_f64().unwrap_or_default()),
        Value::String(s) => s.trim().parse().map_err(|_| {
            Error::new(
                "number_format_exception",
                400,
                format!("For input string: \"{s}\""),
            )
        }),
        other => Err(Error::x_content_parse(format!(
            "[{key}] expected a number but found [{}]",
            token(other)
        ))),
    }
}

/// What a shard checks before rescoring (OpenSearch fails the shard with these).
pub fn check(rescorers: &[Rescorer], sort: &HitSort, max_rescore_window: usize) -> Result<()> {
    if rescorers.is_empty() {
        return Ok(());
    }
    if !sort.is_score() {
        return Err(Error::illegal_argument(
            "Cannot use [sort] option in conjunction with [rescore].",
        ));
    }
    for rescorer in rescorers {
        if rescorer.window_size > max_rescore_window {
            return Err(Error::illegal_argument(format!(
                "Rescore window [{}] is too large. It must be less than [{max_rescore_window}]. This prevents allocating massive heaps for storing the results to be rescored. This limit can be set by changing the [index.max_rescore_window] index level setting.",
                rescorer.window_size
            )));
        }
    }
    Ok(())
}

/// How many hits a shard must collect for `from + size` hits after rescoring.
pub fn hits_to_collect(rescorers: &[Rescorer], k: usize) -> usize {
    if k == 0 {
        return 0;
    }
    rescorers.iter().map(|r| r.window_size).fold(k, usize::max)
}

/// A rescorer with its query's weight on one shard.
pub struct ShardRescorer {
    pub spec: Rescorer,
    pub weight: Box<dyn Weight>,
}

/// Rescores a shard's hits (sorted by score) with each rescorer in turn.
pub fn rescore(
    hits: &mut [ShardHit],
    searcher: &Searcher,
    rescorers: &[ShardRescorer],
    sort: &HitSort,
) -> Result<()> {
    for rescorer in rescorers {
        let window = rescorer.spec.window_size.min(hits.len());
        let secondary = second_pass(&hits[..window], searcher, rescorer.weight.as_ref())?;
        for (i, hit) in hits.iter_mut().enumerate() {
            let second = secondary.get(i).copied().flatten();
            hit.score = rescorer.spec.combine(hit.score, second);
        }
        hits.sort_by(|a, b| sort.compare(a, b));
    }
    Ok(())
}

/// The rescore query's score of each hit it matches, in the hits' order.
fn second_pass(
    hits: &[ShardHit],
    searcher: &Searcher,
    weight: &dyn Weight,
) -> Result<Vec<Option<Score>>> {
    // scorers move forward only: visit the hits segment by segment, in doc order
    let mut order: Vec<usize> = (0..hits.len()).collect();
    order.sort_by_key(|&i| (hits[i].segment_ord, hits[i].doc));
    let mut scores = vec![None; hits.len()];
    let mut current: Option<(u32, Box<dyn Scorer>)> = None;
    for i in order {
        let hit = &hits[i];
        if current.as_ref().map(|(ord, _)| *ord) != Some(hit.segment_ord) {
            let reader = searcher.segment_reader(hit.segment_ord);
            let scorer = weight
                .scorer(reader, 1.0)
                .map_err(|e| Error::internal("create the rescore query's scorer", e))?;
            current = Some((hit.segment_ord, scorer));
        }
        let (_, scorer) = current.as_mut().expect("set above");
        if matches_at(scorer.as_mut(), hit.doc) {
            scores[i] = Some(scorer.score());
        }
    }
    Ok(scores)
}

/// Moves `scorer` to `doc` when it is not past it; whether it matches `doc`.
fn matches_at(scorer: &mut dyn Scorer, doc: DocId) -> bool {
    let current = scorer.doc();
    current == doc || (current < doc && current != TERMINATED && scorer.seek(doc) == doc)
}

/// The first pass's weight with the rescorers applied to every document it matches: the
/// score `explain` shows for a rescored hit.
pub struct RescoredWeight {
    pub first: Arc<dyn Weight>,
    pub rescorers: Arc<Vec<ShardRescorer>>,
}

impl Weight for RescoredWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let first = self.first.scorer(reader, boost)?;
        let seconds = self
            .rescorers
            .iter()
            .map(|r| r.weight.scorer(reader, 1.0))
            .collect::<tantivy::Result<_>>()?;
        Ok(Box::new(RescoredScorer {
            first,
            seconds,
            rescorers: self.rescorers.clone(),
        }))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut explained = self.first.explain(reader, doc)?;
        for rescorer in self.rescorers.iter() {
            let spec = &rescorer.spec;
            let mut scorer = rescorer.weight.scorer(reader, 1.0)?;
            let second = matches_at(scorer.as_mut(), doc)
                .then(|| rescorer.weight.explain(reader, doc))
                .transpose()?;
            let primary = weighted(explained, spec.query_weight, "primaryWeight");
            explained = match second {
                None => primary,
                Some(second) => {
                    let secondary = weighted(second, spec.rescore_query_weight, "secondaryWeight");
                    let combined = spec.score_mode.combine(primary.value(), secondary.value());
                    let mut both = Explanation::new(spec.score_mode.description(), combined);
                    both.add_detail(primary);
                    both.add_detail(secondary);
                    both
                }
            };
        }
        Ok(explained)
    }
}

/// `explained` × `weight`, as Lucene's rescorer explains it.
fn weighted(explained: Explanation, weight: f32, name: &'static str) -> Explanation {
    let mut product = Explanation::new("product of:", explained.value() * weight);
    product.add_detail(explained);
    product.add_const(name, weight);
    product
}

struct RescoredScorer {
    first: Box<dyn Scorer>,
    seconds: Vec<Box<dyn Scorer>>,
    rescorers: Arc<Vec<ShardRescorer>>,
}

impl DocSet for RescoredScorer {
    fn advance(&mut self) -> DocId {
        self.first.advance()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        self.first.seek(target)
    }

    fn doc(&self) -> DocId {
        self.first.doc()
    }

    fn size_hint(&self) -> u32 {
        self.first.size_hint()
    }
}

impl Scorer for RescoredScorer {
    fn score(&mut self) -> Score {
        let doc = self.first.doc();
        let mut score = self.first.score();
        for (scorer, rescorer) in self.seconds.iter_mut().zip(self.rescorers.iter()) {
            let second = matches_at(scorer.as_mut(), doc).then(|| scorer.score());
            score = rescorer.spec.combine(score, second);
        }
        score
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_one_or_several_rescorers_with_defaults() {
        let one = parse_rescore(&json!({"query": {"rescore_query": {"match_all": {}}}})).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].window_size, 10);
        assert_eq!(
            (one[0].query_weight, one[0].rescore_query_weight),
            (1.0, 1.0)
        );
        assert_eq!(one[0].score_mode, ScoreMode::Total);
        let two = parse_rescore(&json!([
            {"window_size": "3", "query": {"rescore_query": {"match_all": {}}, "query_weight": "0.5", "score_mode": "multiply"}},
            {"window_size": 2, "query": {"rescore_query": {"match_all": {}}, "rescore_query_weight": 2, "score_mode": "max"}}
        ]))
        .unwrap();
        assert_eq!((two[0].window_size, two[0].query_weight), (3, 0.5));
        assert_eq!(
            (two[1].score_mode, two[1].rescore_query_weight),
            (ScoreMode::Max, 2.0)
        );
    }

    #[test]
    fn refuses_what_opensearch_refuses() {
        let kind_and_reason = |body: Value| {
            let e = parse_rescore(&body).unwrap_err();
            (e.kind().to_string(), e.reason().to_string())
        };
        assert_eq!(
            kind_and_reason(json!({"window_size": 3})),
            ("parsing_exception".into(), "missing rescore type".into())
        );
        assert_eq!(
            kind_and_reason(json!({"query": {}})),
            (
                "illegal_argument_exception".into(),
                "rescore_query cannot be null".into()
            )
        );
        assert_eq!(
            kind_and_reason(json!({"window_size": 3, "foo": {}})),
            (
                "named_object_not_found_exception".into(),
                "unknown field [foo]".into()
            )
        );
        let bogus = parse_rescore(
            &json!({"query": {"rescore_query": {"match_all": {}}, "score_mode": "bogus"}}),
        )
        .unwrap_err();
        assert_eq!(bogus.kind(), "x_content_parse_exception");
        assert_eq!(
            bogus.cause().unwrap().reason(),
            "illegal score_mode [bogus]"
        );
        assert!(parse_rescore(
            &json!({"window_size": -1, "query": {"rescore_query": {"match_all": {}}}})
        )
        .is_err());
    }

    #[test]
    fn combines_as_lucene_query_rescorer() {
        let mut r = parse_rescore(&json!({"query": {"rescore_query": {"match_all": {}}, "query_weight": 0.5, "rescore_query_weight": 2}}))
            .unwrap()
            .remove(0);
        assert_eq!(r.combine(1.0, None), 0.5);
        assert_eq!(r.combine(1.0, Some(3.0)), 6.5);
        for (mode, expected) in [
            (ScoreMode::Multiply, 3.0),
            (ScoreMode::Avg, 3.25),
            (ScoreMode::Max, 6.0),
            (ScoreMode::Min, 0.5),
        ] {
            r.score_mode = mode;
            assert_eq!(r.combine(1.0, Some(3.0)), expected, "{mode:?}");
        }
    }

    #[test]
    fn a_shard_collects_the_largest_window_and_refuses_a_field_sort() {
        let rescorers = parse_rescore(&json!([
            {"window_size": 50, "query": {"rescore_query": {"match_all": {}}}},
            {"window_size": 5, "query": {"rescore_query": {"match_all": {}}}}
        ]))
        .unwrap();
        assert_eq!(hits_to_collect(&rescorers, 10), 50);
        assert_eq!(hits_to_collect(&rescorers, 100), 100);
        assert_eq!(hits_to_collect(&rescorers, 0), 0);
        assert!(check(&rescorers, &HitSort::Score, 10_000).is_ok());
        let too_large = check(&rescorers, &HitSort::Score, 20).unwrap_err();
        assert!(too_large
            .reason()
            .starts_with("Rescore window [50] is too large"));
        let by_field = HitSort::new(crate::sort::parse_sort(&json!(["n"])).unwrap());
        assert_eq!(
            check(&rescorers, &by_field, 10_000).unwrap_err().reason(),
            "Cannot use [sort] option in conjunction with [rescore]."
        );
    }

    /// A RAM index of texts, and a term query's scoring weight over it.
    fn index(texts: &[&str]) -> (tantivy::Index, tantivy::schema::Field) {
        let mut builder = tantivy::schema::Schema::builder();
        let t = builder.add_text_field("t", tantivy::schema::TEXT);
        let index = tantivy::Index::create_in_ram(builder.build());
        let mut writer = index.writer_with_num_threads(1, 15_000_000).unwrap();
        for text in texts {
            writer.add_document(tantivy::doc!(t => *text)).unwrap();
        }
        writer.commit().unwrap();
        (index, t)
    }

    fn term_weight(
        searcher: &Searcher,
        field: tantivy::schema::Field,
        word: &str,
    ) -> Box<dyn Weight> {
        use tantivy::query::{EnableScoring, Query, TermQuery};
        let term = tantivy::Term::from_field_text(field, word);
        TermQuery::new(term, tantivy::schema::IndexRecordOption::WithFreqs)
            .weight(EnableScoring::enabled_from_searcher(searcher))
            .unwrap()
    }

    #[test]
    fn rescored_hits_score_as_the_rescored_weight_explains_them() {
        let (index, t) = index(&[
            "quick fox fox",
            "quick quick",
            "quick quick quick fox",
            "quick quick quick quick",
            "quick fox",
        ]);
        let searcher = index.reader().unwrap().searcher();
        let first: Arc<dyn Weight> = Arc::from(term_weight(&searcher, t, "quick"));
        let reader = searcher.segment_reader(0);
        let mut hits = Vec::new();
        let mut scorer = first.scorer(reader, 1.0).unwrap();
        while scorer.doc() != TERMINATED {
            hits.push(ShardHit {
                shard_index: 0,
                segment_ord: 0,
                segment_rank: 0,
                doc: scorer.doc(),
                score: scorer.score(),
                sort: vec![],
                collapse: None,
            });
            scorer.advance();
        }
        let sort = HitSort::Score;
        hits.sort_by(|a, b| sort.compare(a, b));
        let spec = |mode: &str, weights: (f32, f32)| {
            let mut r = parse_rescore(&json!({"window_size": 5, "query": {"rescore_query": {"match_all": {}}, "score_mode": mode}})).unwrap().remove(0);
            (r.query_weight, r.rescore_query_weight) = weights;
            r
        };
        let rescorers = Arc::new(vec![
            ShardRescorer {
                spec: spec("multiply", (0.5, 2.0)),
                weight: term_weight(&searcher, t, "fox"),
            },
            ShardRescorer {
                spec: spec("total", (1.0, 1.0)),
                weight: term_weight(&searcher, t, "quick"),
            },
        ]);
        rescore(&mut hits, &searcher, &rescorers, &sort).unwrap();
        assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
        let explaining = RescoredWeight { first, rescorers };
        for hit in &hits {
            let explained = explaining.explain(reader, hit.doc).unwrap();
            assert!((explained.value() - hit.score).abs() < 1e-6, "{hit:?}");
        }
        let mut scored = Vec::new();
        let mut scorer = explaining.scorer(reader, 1.0).unwrap();
        while scorer.doc() != TERMINATED {
            scored.push((scorer.doc(), scorer.score()));
            scorer.advance();
        }
        for hit in &hits {
            let (_, score) = scored.iter().find(|(doc, _)| *doc == hit.doc).unwrap();
            assert!((score - hit.score).abs() < 1e-6, "{hit:?}");
        }
    }
}
