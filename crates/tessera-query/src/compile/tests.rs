//! Compiling real queries against a real (in-memory) tantivy index built through the mapping.

use serde_json::{json, Value};
use tantivy::collector::TopDocs;
use tantivy::schema::Value as _;
use tantivy::{Index, IndexWriter, TantivyDocument};
use tessera_mapping::{parse_document, FieldTable, Mapping};

use super::{compile, CompileContext, DEFAULT_MAX_TERMS_COUNT};
use crate::dsl::parse_query;

struct Fixture {
    index: Index,
    table: FieldTable,
}

const NOW: i64 = 1_420_070_400_000; // 2015-01-01T00:00:00Z

fn fixture(mapping: Value, docs: &[(&str, Value)]) -> Fixture {
    let mapping = Mapping::parse(&mapping).unwrap();
    let (table, _) = FieldTable::build(&mapping, None).unwrap();
    let index = Index::builder()
        .schema(table.schema().clone())
        .register_plugin(std::sync::Arc::new(
            tessera_knn::segment::KnnPlugin::default(),
        ))
        .create_in_ram()
        .unwrap();
    tessera_mapping::analysis::register_analyzers(&index);
    let mut writer: IndexWriter = index.writer_with_num_threads(1, 20_000_000).unwrap();
    for (id, source) in docs {
        let Some((nested, mut doc)) = parse_document(&mapping, &table, id, source)
            .unwrap()
            .into_block()
        else {
            panic!("unexpected mapping update")
        };
        doc.add_text(table.meta.id, id);
        // a document and its nested children, children first, in one batch
        let block: Vec<_> = nested
            .into_iter()
            .chain(std::iter::once(doc))
            .map(tantivy::indexer::UserOperation::Add)
            .collect();
        writer.run(block).unwrap();
    }
    writer.commit().unwrap();
    Fixture { index, table }
}

impl Fixture {
    /// A context over this fixture's shard: no k-NN slices, no deadline, no failure slot.
    fn context<'a>(
        &'a self,
        searcher: Option<&'a tantivy::Searcher>,
        default_fields: &'a [String],
    ) -> CompileContext<'a> {
        CompileContext {
            searcher,
            table: &self.table,
            index: "test",
            default_fields,
            now_millis: NOW,
            max_terms_count: DEFAULT_MAX_TERMS_COUNT,
            clauses: Default::default(),
            knn: Default::default(),
            nested_scope: Default::default(),
            deadline: None,
            failures: None,
            mapping: None,
            legacy_bm25: true,
            shard_id: 0,
        }
    }

    fn search(&self, query: Value) -> Vec<(String, f32)> {
        let ast = parse_query(&query).unwrap();
        let searcher = self.index.reader().unwrap().searcher();
        let star = ["*".to_string()];
        let ctx = self.context(Some(&searcher), &star);
        let compiled = compile(&ast, &ctx).unwrap();
        let top = searcher
            .search(&*compiled, &TopDocs::with_limit(100).order_by_score())
            .unwrap();
        let mut out: Vec<(String, f32)> = top
            .into_iter()
            .map(|(score, address)| {
                let doc: TantivyDocument = searcher.doc(address).unwrap();
                (
                    doc.get_first(self.table.meta.id)
                        .unwrap()
                        .as_str()
                        .unwrap()
                        .to_string(),
                    score,
                )
            })
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out
    }

    fn ids(&self, query: Value) -> Vec<String> {
        let mut ids: Vec<String> = self.search(query).into_iter().map(|(id, _)| id).collect();
        ids.sort();
        ids
    }

    fn error(&self, query: Value) -> tessera_common::Error {
        let ast = parse_query(&query).unwrap();
        let star = ["*".to_string()];
        let ctx = self.context(None, &star);
        compile(&ast, &ctx).expect_err("expected an error")
    }
}

fn taxis() -> Fixture {
    fixture(
        json!({"properties": {
            "total_amount": {"type": "scaled_float", "scaling_factor": 100},
            "trip_distance": {"type": "scaled_float", "scaling_factor": 100},
            "passenger_count": {"type": "integer"},
            "tip": {"type": "half_float"},
            "rate": {"type": "float"},
            "dropoff": {"type": "date", "format": "yyyy-MM-dd HH:mm:ss"},
            "vendor": {"type": "keyword"},
            "name": {"type": "text"},
            "ip": {"type": "ip"},
            "flag": {"type": "boolean"}
        }}),
        &[
            (
                "a",
                json!({"total_amount": 5.0, "trip_distance": 0.5, "passenger_count": 1, "tip": 1.1, "rate": 0.1, "dropoff": "2015-01-01 00:00:00", "vendor": "VTS", "name": "Creative Mobile", "ip": "10.0.0.1", "flag": true}),
            ),
            (
                "b",
                json!({"total_amount": 14.99, "trip_distance": 1.25, "passenger_count": 2, "tip": 2.5, "dropoff": "2015-01-21 23:59:59", "vendor": "CMT", "name": "VeriFone Inc", "ip": "10.0.1.7"}),
            ),
            (
                "c",
                json!({"total_amount": 15.0, "trip_distance": 49.99, "passenger_count": 3, "dropoff": "2015-01-22 00:00:00", "vendor": "VTS", "flag": false}),
            ),
            (
                "d",
                json!({"total_amount": 4.999, "passenger_count": 1, "dropoff": "2014-12-31 23:59:59", "name": "creative"}),
            ),
        ],
    )
}

#[test]
fn scaled_float_ranges_round_like_opensearch() {
    let f = taxis();
    // [5, 15): 4.999 is stored as 500 (rounded), so it is in; 15.0 is out
    assert_eq!(
        f.ids(json!({"range": {"total_amount": {"gte": 5, "lt": 15}}})),
        ["a", "b", "d"]
    );
    assert_eq!(
        f.ids(json!({"range": {"total_amount": {"gt": 5, "lte": 15}}})),
        ["b", "c"]
    );
    assert_eq!(
        f.ids(json!({"range": {"trip_distance": {"gte": 0, "lt": 50}}})),
        ["a", "b", "c"]
    );
    assert_eq!(f.ids(json!({"term": {"total_amount": 14.99}})), ["b"]);
}

#[test]
fn integer_ranges_with_decimal_bounds() {
    let f = taxis();
    assert_eq!(
        f.ids(json!({"range": {"passenger_count": {"gte": 1.5}}})),
        ["b", "c"]
    );
    assert_eq!(
        f.ids(json!({"range": {"passenger_count": {"lt": 2.5}}})),
        ["a", "b", "d"]
    );
    assert_eq!(
        f.ids(json!({"range": {"passenger_count": {"gt": 1, "lt": 3}}})),
        ["b"]
    );
    assert!(f.ids(json!({"term": {"passenger_count": 1.5}})).is_empty());
    assert_eq!(
        f.ids(json!({"terms": {"passenger_count": [1, "3"]}})),
        ["a", "c", "d"]
    );
}

#[test]
fn float_fields_match_their_own_precision() {
    let f = taxis();
    assert_eq!(
        f.ids(json!({"term": {"tip": 1.1}})),
        ["a"],
        "half_float 1.1 is stored as 1.099609375"
    );
    assert_eq!(f.ids(json!({"term": {"rate": 0.1}})), ["a"]);
    assert_eq!(f.ids(json!({"range": {"rate": {"gte": 0.1}}})), ["a"]);
    assert_eq!(f.ids(json!({"range": {"tip": {"gt": 1.1}}})), ["b"]);
}

#[test]
fn date_ranges_parse_formats_and_round_up_date_only_bounds() {
    let f = taxis();
    let q = json!({"range": {"dropoff": {"gte": "01/01/2015", "lte": "21/01/2015", "format": "dd/MM/yyyy"}}});
    assert_eq!(
        f.ids(q),
        ["a", "b"],
        "lte 21/01/2015 includes the whole day"
    );
    let q = json!({"range": {"dropoff": {"gt": "21/01/2015", "format": "dd/MM/yyyy"}}});
    assert_eq!(f.ids(q), ["c"], "gt excludes the whole day");
    assert_eq!(f.ids(json!({"range": {"dropoff": {"lt": "now"}}})), ["d"]);
    assert_eq!(
        f.ids(json!({"range": {"dropoff": {"gte": "now-1d/d", "lt": "now+1d/d"}}})),
        ["a", "d"]
    );
    assert_eq!(
        f.ids(json!({"range": {"dropoff": {"gte": "now/d", "lt": "now+1d/d"}}})),
        ["a"]
    );
    assert_eq!(
        f.ids(json!({"term": {"dropoff": "2015-01-01 00:00:00"}})),
        ["a"]
    );
    let error = f.error(json!({"range": {"dropoff": {"gte": "yesterday"}}}));
    assert_eq!(error.kind(), "parse_exception");
    assert_eq!(
        error.cause().map(|c| c.kind()),
        Some("illegal_argument_exception")
    );
}

#[test]
fn keyword_ip_boolean_exists_ids() {
    let f = taxis();
    assert_eq!(f.ids(json!({"term": {"vendor": "VTS"}})), ["a", "c"]);
    assert!(f.ids(json!({"term": {"vendor": "vts"}})).is_empty());
    assert_eq!(
        f.ids(json!({"term": {"vendor": {"value": "vts", "case_insensitive": true}}})),
        ["a", "c"]
    );
    assert_eq!(f.ids(json!({"term": {"ip": "10.0.0.0/16"}})), ["a", "b"]);
    assert_eq!(f.ids(json!({"term": {"ip": "10.0.1.7"}})), ["b"]);
    assert_eq!(f.ids(json!({"term": {"flag": false}})), ["c"]);
    assert_eq!(f.ids(json!({"exists": {"field": "name"}})), ["a", "b", "d"]);
    assert_eq!(
        f.ids(json!({"exists": {"field": "vendor"}})),
        ["a", "b", "c"]
    );
    assert_eq!(
        f.ids(json!({"ids": {"values": ["b", "zz", "d"]}})),
        ["b", "d"]
    );
    assert_eq!(f.ids(json!({"prefix": {"vendor": "V"}})), ["a", "c"]);
    assert_eq!(f.ids(json!({"wildcard": {"vendor": "?M*"}})), ["b"]);
    assert_eq!(f.ids(json!({"regexp": {"vendor": "V.S"}})), ["a", "c"]);
    assert!(f.ids(json!({"term": {"unmapped": "x"}})).is_empty());
    assert_eq!(f.ids(json!({"term": {"_index": "test"}})).len(), 4);
    assert!(f.ids(json!({"terms": {"_index": ["other"]}})).is_empty());
    assert_eq!(f.ids(json!({"term": {"_id": "c"}})), ["c"]);
    assert_eq!(f.ids(json!({"terms": {"_id": ["a", "b"]}})), ["a", "b"]);
    assert_eq!(
        f.error(json!({"term": {"passenger_count": "abc"}}))
            .reason(),
        "failed to create query: For input string: \"abc\""
    );
    assert!(f
        .error(json!({"prefix": {"passenger_count": "1"}}))
        .reason()
        .starts_with("Can only use prefix queries"));
}

#[test]
fn full_text_and_bool() {
    let f = taxis();
    assert_eq!(
        f.ids(json!({"match": {"name": "creative mobile"}})),
        ["a", "d"]
    );
    assert_eq!(
        f.ids(json!({"match": {"name": {"query": "creative mobile", "operator": "and"}}})),
        ["a"]
    );
    assert_eq!(
        f.ids(json!({"match_phrase": {"name": "creative mobile"}})),
        ["a"]
    );
    assert!(f
        .ids(json!({"match_phrase": {"name": "mobile creative"}}))
        .is_empty());
    assert_eq!(
        f.ids(json!({"match_phrase": {"name": {"query": "mobile creative", "slop": 2}}})),
        ["a"]
    );
    assert_eq!(
        f.ids(json!({"match_phrase_prefix": {"name": "creative mob"}})),
        ["a"]
    );
    assert_eq!(
        f.ids(json!({"multi_match": {"query": "vts", "fields": ["vendor", "name"]}})),
        Vec::<String>::new()
    );
    assert_eq!(
        f.ids(json!({"multi_match": {"query": "VTS", "fields": ["vendor", "name"]}})),
        ["a", "c"]
    );
    assert_eq!(
        f.ids(json!({"match": {"name": {"query": "creatve", "fuzziness": "AUTO"}}})),
        ["a", "d"]
    );
    let q = json!({"bool": {"must": [{"term": {"vendor": "VTS"}}], "must_not": [{"term": {"flag": false}}]}});
    assert_eq!(f.ids(q), ["a"]);
    let q = json!({"bool": {"should": [{"term": {"vendor": "VTS"}}, {"term": {"vendor": "CMT"}}, {"match": {"name": "creative"}}], "minimum_should_match": 2}});
    assert_eq!(f.ids(q), ["a"]);
    let filtered = f.search(json!({"bool": {"filter": [{"term": {"vendor": "VTS"}}]}}));
    assert!(
        filtered.iter().all(|(_, s)| *s == 0.0),
        "filter-only bool scores 0"
    );
    let negated = f.search(json!({"bool": {"must_not": [{"term": {"vendor": "VTS"}}]}}));
    assert_eq!(negated.len(), 2);
    assert!(negated.iter().all(|(_, s)| *s == 0.0));
    let constant =
        f.search(json!({"constant_score": {"filter": {"term": {"vendor": "VTS"}}, "boost": 1.5}}));
    assert!(constant.iter().all(|(_, s)| *s == 1.5));
    assert_eq!(
        f.ids(json!({"query_string": {"query": "vendor:VTS AND passenger_count:[2 TO *]"}})),
        ["c"]
    );
    assert_eq!(
        f.ids(json!({"query_string": {"query": "creative", "default_field": "name"}})),
        ["a", "d"]
    );
    assert_eq!(f.ids(json!({"simple_query_string": {"query": "creative -mobile", "fields": ["name"], "default_operator": "and"}})), ["d"]);
}

#[test]
fn bm25_scores_match_opensearch() {
    // the same three documents as the OpenSearch reference (`match` title:fox scores 0.72615415)
    let f = fixture(
        json!({"properties": {"title": {"type": "text"}, "tag": {"type": "keyword"}}}),
        &[
            (
                "1",
                json!({"title": "The quick brown fox", "tag": ["animal", "fast"]}),
            ),
            (
                "2",
                json!({"title": "The lazy brown dog", "tag": ["animal"]}),
            ),
            (
                "3",
                json!({"title": "Quick quick fox jumps over the fence", "tag": ["fast"]}),
            ),
            (
                "4",
                json!({"title": "A slow turtle", "tag": ["animal", "slow"]}),
            ),
            ("5", json!({"title": "Brown bears eat honey", "tag": []})),
            (
                "6",
                json!({"title": "fox and dog are friends", "tag": ["animal", "friends"]}),
            ),
        ],
    );
    let hits = f.search(json!({"match": {"title": "fox"}}));
    let ids: Vec<&str> = hits.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["1", "6", "3"]);
    assert!((hits[0].1 - 0.72615415).abs() < 1e-5, "{hits:?}");
    assert!((hits[1].1 - 0.66301036).abs() < 1e-5, "{hits:?}");
    assert!((hits[2].1 - 0.56478655).abs() < 1e-5, "{hits:?}");
    // keyword terms: Lucene's BM25 counts only documents that have the field (doc 5 has no
    // tag), with avgdl = values / docCount; by hand: ln(1 + 4.5/1.5) × 2.2 / (1 + 1.2 × (0.25 +
    // 0.75 / 1.6)) = 1.6375
    let tag = f.search(json!({"term": {"tag": "friends"}}));
    assert_eq!(tag.len(), 1);
    assert!((tag[0].1 - 1.6375021).abs() < 1e-5, "{tag:?}");
}

#[test]
fn bm25_counts_documents_with_a_single_valued_keyword() {
    // `kind` is on three of five documents, one value each: docCount 3, avgdl 1, so
    // kind:b scores ln(1 + (3 - 1 + 0.5) / (1 + 0.5)) = 0.98083 (with all five documents
    // counted it would be ln(1 + 4.5 / 1.5) × 2.2 / (1 + 1.2 × (0.25 + 0.75 / 0.6)) = 0.9704)
    let f = fixture(
        json!({"properties": {"kind": {"type": "keyword"}}}),
        &[
            ("1", json!({"kind": "a"})),
            ("2", json!({"kind": "b"})),
            ("3", json!({"kind": "a"})),
            ("4", json!({})),
            ("5", json!({"kind": []})),
        ],
    );
    let hits = f.search(json!({"term": {"kind": "b"}}));
    assert_eq!(hits.len(), 1);
    assert!((hits[0].1 - 0.980_829_3).abs() < 1e-5, "{hits:?}");
}

#[test]
fn match_only_text_scores_one_per_matching_term() {
    let f = fixture(
        json!({"properties": {"message": {"type": "match_only_text"}}}),
        &[
            ("three", json!({"message": "monkey jackal bear"})),
            ("two", json!({"message": "monkey jackal jackal jackal"})),
            ("one", json!({"message": "bear"})),
        ],
    );
    let hits = f.search(json!({"match": {"message": "monkey jackal bear"}}));
    assert_eq!(
        hits,
        vec![
            ("three".to_string(), 3.0),
            ("two".to_string(), 2.0),
            ("one".to_string(), 1.0)
        ]
    );
    // query_string's bare terms on a match_only_text default field add up the same way
    let hits = f.search(json!({"query_string": {"query": "message: monkey jackal bear"}}));
    assert_eq!(hits[0], ("three".to_string(), 3.0));
    // a phrase is one constant-score clause
    let hits = f.search(json!({"match_phrase": {"message": "monkey jackal"}}));
    assert_eq!(hits[0].1, 1.0);
}

fn clause_fixture() -> Fixture {
    fixture(
        json!({"properties": {"k": {"type": "keyword"}, "t": {"type": "text"}}}),
        &[("1", json!({"k": "v1", "t": "w1"}))],
    )
}

fn terms(range: std::ops::Range<usize>) -> Vec<Value> {
    range
        .map(|i| json!({"term": {"k": format!("v{i}")}}))
        .collect()
}

/// As in OpenSearch: `failed to create query: maxClauseCount is set to 1024`, a
/// `query_shard_exception` (400) caused by `too_many_clauses`.
fn assert_too_many_clauses(e: &tessera_common::Error) {
    assert_eq!(e.kind(), "query_shard_exception", "{e}");
    assert_eq!(
        e.reason(),
        "failed to create query: maxClauseCount is set to 1024"
    );
    assert_eq!(e.status(), 400);
    let cause = e.cause().expect("a cause");
    assert_eq!(cause.kind(), "too_many_clauses");
    assert_eq!(cause.reason(), "maxClauseCount is set to 1024");
}

#[test]
fn bool_clauses_are_limited_like_lucene() {
    let f = clause_fixture();
    assert_eq!(
        f.ids(json!({"bool": {"should": terms(0..1024)}})),
        vec!["1".to_string()]
    );
    assert_too_many_clauses(&f.error(json!({"bool": {"should": terms(0..1100)}})));
    // the clauses of nested bools count together
    assert_too_many_clauses(&f.error(json!({"bool": {"should": [
        {"bool": {"should": terms(0..600)}},
        {"bool": {"filter": terms(600..1200)}},
    ]}})));
    assert_eq!(
        f.ids(json!({"bool": {"should": [
            {"bool": {"should": terms(0..600)}},
            {"bool": {"should": terms(600..1000)}},
        ]}})),
        vec!["1".to_string()]
    );
    // a match's terms are clauses too
    let words: Vec<String> = (0..1100).map(|i| format!("w{i}")).collect();
    assert_too_many_clauses(&f.error(json!({"match": {"t": words.join(" ")}})));
}

#[test]
fn query_string_with_too_many_clauses_fails_to_parse() {
    let f = clause_fixture();
    let query: Vec<String> = (0..1100).map(|i| format!("w{i}")).collect();
    let query = query.join(" OR ");
    let e = f.error(json!({"query_string": {"query": query, "default_field": "t"}}));
    assert_eq!(e.kind(), "query_shard_exception");
    assert_eq!(e.reason(), format!("Failed to parse query [{query}]"));
    assert_eq!(e.meta("index"), Some(&json!("test")));
    let parse = e.cause().unwrap();
    assert_eq!(parse.kind(), "parse_exception");
    assert_eq!(
        parse.reason(),
        format!("Cannot parse '{query}': too many boolean clauses")
    );
    assert_eq!(parse.cause().unwrap().kind(), "too_many_clauses");
    let simple = query.replace(" OR ", " | ");
    assert_too_many_clauses(
        &f.error(json!({"simple_query_string": {"query": simple, "fields": ["t"]}})),
    );
}

#[test]
fn terms_query_values_are_limited_by_max_terms_count() {
    let f = clause_fixture();
    let values: Vec<String> = (0..70_000).map(|i| format!("v{i}")).collect();
    let e = f.error(json!({"terms": {"k": values}}));
    let reason = "The number of terms [70000] used in the Terms Query request has exceeded the allowed maximum of [65536]. This maximum can be set by changing the [index.max_terms_count] index level setting.";
    assert_eq!(e.kind(), "query_shard_exception");
    assert_eq!(e.reason(), format!("failed to create query: {reason}"));
    assert_eq!(e.cause().unwrap().kind(), "illegal_argument_exception");
    assert_eq!(e.cause().unwrap().reason(), reason);
    // the limit holds for unmapped fields too, as OpenSearch checks before the lookup
    assert_eq!(
        f.error(json!({"terms": {"missing": values}})).reason(),
        format!("failed to create query: {reason}")
    );
}

#[test]
fn geo_queries_on_an_unmapped_field_fail_unless_told_to_ignore_it() {
    let f = fixture(
        json!({"properties": {"loc": {"type": "geo_point"}}}),
        &[("1", json!({"loc": {"lat": 1.0, "lon": 1.0}}))],
    );
    let distance = |extra: Value| {
        let mut q = json!({"distance": "10km", "nope": {"lat": 1.0, "lon": 1.0}});
        q.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        json!({ "geo_distance": q })
    };
    let e = f.error(distance(json!({})));
    assert_eq!(e.kind(), "query_shard_exception");
    assert_eq!(e.reason(), "failed to find geo field [nope]");
    assert!(f.ids(distance(json!({"ignore_unmapped": true}))).is_empty());
    let bbox = json!({"geo_bounding_box": {"nope": {"top_left": {"lat": 2, "lon": 0},
        "bottom_right": {"lat": 0, "lon": 2}}}});
    assert_eq!(f.error(bbox).reason(), "failed to find geo field [nope]");
    assert_eq!(
        f.ids(json!({"geo_distance": {"distance": "10km", "loc": {"lat": 1.0, "lon": 1.0}}})),
        ["1"]
    );
}

#[test]
fn knn_is_the_shards_top_k_with_opensearch_scores_and_errors() {
    let f = fixture(
        json!({"properties": {
            "v": {"type": "knn_vector", "dimension": 2},
            "ip": {"type": "knn_vector", "dimension": 2, "space_type": "innerproduct"},
            "tag": {"type": "keyword"}}}),
        &[
            ("1", json!({"v": [0, 0], "ip": [1, 0], "tag": "a"})),
            ("2", json!({"v": [1, 0], "ip": [2, 0], "tag": "b"})),
            ("3", json!({"v": [0, 2], "ip": [-1, 0], "tag": "a"})),
            ("4", json!({"tag": "a"})),
        ],
    );
    assert_eq!(
        f.search(json!({"knn": {"v": {"vector": [0, 0], "k": 2}}})),
        vec![("1".to_string(), 1.0), ("2".to_string(), 0.5)]
    );
    assert_eq!(
        f.search(json!({"knn": {"v": {"vector": [0, 0], "k": 5, "filter": {"term": {"tag": "a"}}, "boost": 2}}})),
        vec![("1".to_string(), 2.0), ("3".to_string(), 0.4)]
    );
    assert_eq!(
        f.search(json!({"knn": {"ip": {"vector": [1, 0], "k": 3}}})),
        vec![
            ("2".to_string(), 3.0),
            ("1".to_string(), 2.0),
            ("3".to_string(), 0.5)
        ]
    );
    // within a bool, the knn clause matches its top k only
    assert_eq!(
        f.search(
            json!({"bool": {"must": {"knn": {"v": {"vector": [0, 0], "k": 2}}},
                                 "filter": {"term": {"tag": "a"}}}})
        ),
        vec![("1".to_string(), 1.0)]
    );
    assert_eq!(
        f.search(json!({"knn": {"v": {"vector": [0, 0], "max_distance": 1}}}))
            .len(),
        2
    );
    assert_eq!(
        f.search(json!({"knn": {"v": {"vector": [0, 0], "min_score": 0.4}}}))
            .len(),
        2
    );
    let searcher = f.index.reader().unwrap().searcher();
    let ctx = f.context(Some(&searcher), &[]);
    let error = |query: Value| compile(&parse_query(&query).unwrap(), &ctx).err().unwrap();
    let e = error(json!({"knn": {"tag": {"vector": [0, 0], "k": 1}}}));
    assert_eq!(e.kind(), "query_shard_exception");
    assert_eq!(
        e.reason(),
        "failed to create query: Field 'tag' is not knn_vector type."
    );
    assert_eq!(
        error(json!({"knn": {"v": {"vector": [0, 0, 0], "k": 1}}})).reason(),
        "failed to create query: Query vector has invalid dimension: 3. Dimension should be: 2"
    );
    assert_eq!(
        error(json!({"knn": {"v": {"vector": [0, "NaN"], "k": 1}}})).reason(),
        "failed to create query: non-finite value at vector[1]=NaN"
    );
    assert_eq!(
        error(json!({"knn": {"v": {"vector": [0, 0], "max_distance": -1}}})).reason(),
        "failed to create query: [knn] requires distance to be non-negative for space type: L2"
    );
    assert_eq!(
        error(json!({"term": {"v": 1}})).reason(),
        "KNN vector do not support exact searching, use KNN queries instead: [v]"
    );
}

#[test]
fn nested_query_joins_children_to_parents_with_each_score_mode() {
    let f = fixture(
        json!({"properties": {
            "t": {"type": "keyword"},
            "c": {"type": "nested", "properties": {"w": {"type": "keyword"}, "n": {"type": "long"}}}
        }}),
        &[
            (
                "1",
                json!({"t": "a", "c": [{"w": "x", "n": 1}, {"w": "y", "n": 5}]}),
            ),
            ("2", json!({"t": "b", "c": {"w": "x", "n": 3}})),
            ("3", json!({"t": "a"})),
            (
                "4",
                json!({"t": "a", "c": [{"w": "y", "n": 2}, {"w": "y", "n": 4}]}),
            ),
        ],
    );
    let by_n = |mode: &str| {
        json!({"nested": {"path": "c", "score_mode": mode, "query": {"function_score": {
            "query": {"match_all": {}}, "field_value_factor": {"field": "c.n"}, "boost_mode": "replace"}}}})
    };
    let scores = |mode: &str| f.search(by_n(mode));
    let expected = |pairs: &[(&str, f32)]| -> Vec<(String, f32)> {
        pairs.iter().map(|(id, s)| (id.to_string(), *s)).collect()
    };
    assert_eq!(
        scores("avg"),
        expected(&[("1", 3.0), ("2", 3.0), ("4", 3.0)])
    );
    assert_eq!(
        scores("sum"),
        expected(&[("1", 6.0), ("4", 6.0), ("2", 3.0)])
    );
    assert_eq!(scores("max")[0], ("1".into(), 5.0));
    assert_eq!(
        scores("min"),
        expected(&[("2", 3.0), ("4", 2.0), ("1", 1.0)])
    );
    assert!(scores("none").iter().all(|(_, s)| *s == 0.0));
    // conjunctions seek the join: a parent must have one child matching both conditions
    let both = json!({"bool": {"must": [
        {"term": {"t": "a"}},
        {"nested": {"path": "c", "query": {"bool": {"must": [
            {"term": {"c.w": "y"}}, {"range": {"c.n": {"gte": 4}}}]}}}}
    ]}});
    let mut ids: Vec<String> = f.search(both).into_iter().map(|(id, _)| id).collect();
    ids.sort();
    assert_eq!(ids, ["1", "4"]);
    // a nested object is no document of its own: a query on its fields outside `nested`
    // matches only children, which the root filter leaves out
    let searcher = f.index.reader().unwrap().searcher();
    let markers = f.table.meta.nested.unwrap();
    let count = |query: Box<dyn tantivy::query::Query>| {
        let root_only = crate::nested::RootDocsQuery::new(query, markers);
        searcher
            .search(&root_only, &tantivy::collector::Count)
            .unwrap()
    };
    assert_eq!(
        count(Box::new(tantivy::query::AllQuery)),
        4,
        "only the root documents"
    );
    let term = tantivy::query::TermQuery::new(
        tantivy::Term::from_field_text(f.table.leaf("c.w").unwrap().field.unwrap(), "x"),
        tantivy::schema::IndexRecordOption::Basic,
    );
    assert_eq!(count(Box::new(term)), 0);
}

fn scripted() -> Fixture {
    fixture(
        json!({"properties": {
            "n": {"type": "long"},
            "f": {"type": "double"},
            "price": {"type": "scaled_float", "scaling_factor": 100},
            "k": {"type": "keyword"},
            "b": {"type": "boolean"},
            "d": {"type": "date"},
            "loc": {"type": "geo_point"},
            "t": {"type": "text"}
        }}),
        &[
            (
                "1",
                json!({"n": 3, "f": 1.5, "price": 10.25, "k": "a", "b": true, "d": "2021-03-04T05:06:07Z", "loc": {"lat": 40.0, "lon": -70.0}, "t": "hello world"}),
            ),
            (
                "2",
                json!({"n": 10, "f": 0.25, "price": 3.5, "k": "b", "b": false, "d": "2022-12-31T23:59:59Z", "loc": {"lat": 41.0, "lon": -71.0}, "t": "hello"}),
            ),
            ("3", json!({"k": "c", "t": "world"})),
        ],
    )
}

#[test]
fn script_score_reads_columns_params_and_the_query_score() {
    let f = scripted();
    let scores = f.search(json!({"script_score": {
        "query": {"exists": {"field": "n"}},
        "script": {"source": "doc['n'].value * doc['f'].value + doc['price'].value + params.a", "params": {"a": 1}}
    }}));
    assert_eq!(
        scores,
        vec![("1".to_string(), 15.75), ("2".to_string(), 7.0)]
    );
    let scores = f.search(json!({"script_score": {
        "query": {"exists": {"field": "n"}},
        "script": {"source": "(doc['k'].value == 'a' ? 1 : 0) + (doc['b'].value ? 10 : 0) + doc['d'].value.getYear() - 2000"},
        "boost": 2
    }}));
    assert_eq!(
        scores,
        vec![("1".to_string(), 64.0), ("2".to_string(), 44.0)]
    );
    let scores = f.search(json!({"script_score": {
        "query": {"exists": {"field": "n"}},
        "script": {"source": "doc['loc'].value.lat + doc['loc'].arcDistance(40.0, -70.0) / 1000"}
    }}));
    assert_eq!(scores[0].0, "2");
    assert!((scores[0].1 - (41.0 + 139.7)).abs() < 1.0, "{scores:?}");
    assert!((scores[1].1 - 40.0).abs() < 1e-3, "{scores:?}");
    // _score is the wrapped query's score; min_score drops documents
    let plain = f.search(json!({"match": {"t": "hello"}}));
    let scores = f.search(json!({"script_score": {
        "query": {"match": {"t": "hello"}},
        "script": {"source": "_score * 2"},
        "min_score": plain[1].1 * 2.0 + 0.0001
    }}));
    assert_eq!(scores.len(), 1);
    assert!((scores[0].1 - plain[0].1 * 2.0).abs() < 1e-5);
    // a missing value fails the search; size() guards it
    let query = parse_query(&json!({"script_score": {"query": {"match_all": {}}, "script": {"source": "doc['n'].value"}}})).unwrap();
    let searcher = f.index.reader().unwrap().searcher();
    let ctx = f.context(Some(&searcher), &[]);
    let compiled = compile(&query, &ctx).unwrap();
    let e = searcher
        .search(&*compiled, &TopDocs::with_limit(10).order_by_score())
        .unwrap_err();
    let e = tessera_common::Error::internal("search", e);
    assert_eq!(e.kind(), "script_exception");
    assert_eq!(e.reason(), "runtime error");
    let negative = parse_query(&json!({"script_score": {"query": {"exists": {"field": "n"}}, "script": {"source": "doc['n'].value - 5"}}})).unwrap();
    let e = searcher
        .search(
            &*compile(&negative, &ctx).unwrap(),
            &TopDocs::with_limit(10).order_by_score(),
        )
        .unwrap_err();
    assert_eq!(
        tessera_common::Error::internal("search", e).reason(),
        "script_score script returned an invalid score [-2.0] for doc [0]. Must be a non-negative score!"
    );
}

#[test]
fn script_errors_when_the_query_is_built() {
    let f = scripted();
    let e =
        f.error(json!({"script_score": {"query": {"match_all": {}}, "script": {"source": "'a'"}}}));
    assert_eq!(e.kind(), "query_shard_exception");
    assert_eq!(e.cause().unwrap().kind(), "script_exception");
    let e = f.error(json!({"script_score": {"query": {"match_all": {}}, "script": {"source": "1", "lang": "expression"}}}));
    assert_eq!(
        e.reason(),
        "failed to create query: script_lang not supported [expression]"
    );
    let e = f.error(json!({"script": {"script": "doc['t'].value == 'x'"}}));
    assert!(
        e.reason().contains("Text fields are not optimised"),
        "{}",
        e.reason()
    );
}

#[test]
fn script_queries_filter_and_function_score_scripts_score() {
    let f = scripted();
    assert_eq!(
        f.ids(json!({"script": {"script": {"source": "doc['n'].size() > 0 && doc['n'].value > params.m", "params": {"m": 5}}}})),
        vec!["2"]
    );
    // the parameters belong to the script, not to the query (OpenSearch's words)
    let e = parse_query(
        &json!({"script": {"script": "doc['n'].value > params.m", "params": {"m": 5}}}),
    )
    .unwrap_err();
    assert_eq!(e.reason(), "[script] query does not support [params]");
    assert_eq!(
        f.ids(json!({"script": {"script": {"source": "doc['n'].size() > 0 && doc['n'].value > params.m", "params": {"m": 1}}}})),
        vec!["1", "2"]
    );
    let scores = f.search(json!({"script": {"script": "doc['k'].value != 'b'", "boost": 3}}));
    assert_eq!(scores, vec![("1".to_string(), 3.0), ("3".to_string(), 3.0)]);
    let scores = f.search(json!({"function_score": {
        "query": {"exists": {"field": "n"}},
        "script_score": {"script": "doc['n'].value + _score"},
        "boost_mode": "replace"
    }}));
    assert_eq!(
        scores,
        vec![("2".to_string(), 11.0), ("1".to_string(), 4.0)]
    );
}

#[test]
fn a_lazy_script_query_runs_only_where_a_conjunction_asks_and_keeps_its_failure() {
    // documents 1 and 2 have `n`, 3 has not: `doc['n'].value` fails on 3 only
    let f = scripted();
    let searcher = f.index.reader().unwrap().searcher();
    let failures = crate::compile::QueryFailures::default();
    let ctx = CompileContext {
        failures: Some(failures.clone()),
        ..f.context(Some(&searcher), &[])
    };
    // hits collected one by one (tantivy's dense `Count` of a conjunction fills a bit set per
    // clause instead, which runs the script on every document)
    let count = |query: Value| {
        let compiled = compile(&parse_query(&query).unwrap(), &ctx).unwrap();
        let top = TopDocs::with_limit(10).order_by_score();
        searcher.search(&*compiled, &top).unwrap().len()
    };
    assert_eq!(count(json!({"exists": {"field": "n"}})), 2);
    // beside a clause that leaves document 3 out, the script never sees it (Lucene's
    // two-phase iteration): no failure
    let beside = json!({"bool": {
        "must": [{"exists": {"field": "n"}}],
        "filter": [{"script": {"script": "doc['n'].value > 5"}}]
    }});
    assert_eq!(count(beside), 1);
    assert!(failures.take().is_none());
    // alone, the script meets document 3: the failure waits for the shard
    assert_eq!(
        count(json!({"script": {"script": "doc['n'].value > 5"}})),
        1
    );
    let failure = failures.take().expect("the script failed on document 3");
    assert_eq!(failure.kind(), "script_exception");
    assert_eq!(failure.reason(), "runtime error");
    // a result other than a boolean is Painless's cast error at run time
    assert_eq!(count(json!({"script": {"script": "doc['k'].size()"}})), 0);
    let failure = failures.take().expect("not a boolean");
    assert_eq!(failure.reason(), "runtime error");
    assert_eq!(failure.cause().unwrap().kind(), "class_cast_exception");
}

/// Many documents, so that `script_score` spans several blocks: `f` is missing from every
/// 97th document, `price` is a scaled float.
fn many_scripted() -> Fixture {
    let docs: Vec<(String, Value)> = (0..700)
        .map(|i| {
            let mut doc = json!({"n": i, "price": (i * 37 % 1000) as f64 / 100.0});
            if i % 97 != 5 {
                doc["f"] = json!((i * 13 % 101) as f64 / 8.0 - 3.0);
            }
            (i.to_string(), doc)
        })
        .collect();
    let docs: Vec<(&str, Value)> = docs
        .iter()
        .map(|(id, d)| (id.as_str(), d.clone()))
        .collect();
    fixture(
        json!({"properties": {
            "n": {"type": "long"},
            "f": {"type": "double"},
            "price": {"type": "scaled_float", "scaling_factor": 100}
        }}),
        &docs,
    )
}

#[test]
fn script_score_blocks_score_as_the_interpreter_does() {
    let f = many_scripted();
    let searcher = f.index.reader().unwrap().searcher();
    // every hit, by the lazy scorer (the shard's search) or the eager one
    let run = |query: Value, lazy: bool| -> Result<Vec<(tantivy::DocId, f32)>, String> {
        let failures = crate::compile::QueryFailures::default();
        let ctx = CompileContext {
            failures: lazy.then(|| failures.clone()),
            ..f.context(Some(&searcher), &[])
        };
        let compiled = compile(&parse_query(&query).unwrap(), &ctx).unwrap();
        let top = TopDocs::with_limit(1000).order_by_score();
        let found = searcher
            .search(&*compiled, &top)
            .map_err(|e| e.to_string())?;
        if let Some(e) = failures.take() {
            return Err(e.reason().to_string());
        }
        let mut hits: Vec<(tantivy::DocId, f32)> =
            found.iter().map(|(s, a)| (a.doc_id, *s)).collect();
        hits.sort_by_key(|h| h.0);
        Ok(hits)
    };
    let score = |inner: Value, source: &str| json!({"script_score": {"query": inner, "script": {"source": source}, "min_score": 0.5}});
    // the same arithmetic on the fast path and, as statements, in the interpreter; the inner
    // queries make the scorer seek (a conjunction) and skip (min_score)
    // (with `_score` the query's documents come one by one, without it a buffer at a time)
    let pairs = [
        (
            "Math.abs(doc['price'].value / (doc['f'].value + 4)) * _score",
            "double p = doc['price'].value; return Math.abs(p / (doc['f'].value + 4)) * _score;",
        ),
        (
            "Math.abs(doc['price'].value / (doc['f'].value + 4))",
            "double p = doc['price'].value; return Math.abs(p / (doc['f'].value + 4));",
        ),
    ];
    for (fast, interpreted) in pairs {
        for inner in [
            json!({"exists": {"field": "f"}}),
            json!({"bool": {"must": [{"exists": {"field": "f"}}], "filter": [{"range": {"n": {"gte": 130, "lt": 610}}}]}}),
        ] {
            for lazy in [true, false] {
                let expected = run(score(inner.clone(), interpreted), lazy).unwrap();
                assert!(expected.len() > 300, "{}", expected.len());
                assert_eq!(run(score(inner.clone(), fast), lazy).unwrap(), expected);
            }
        }
    }
    let fast = pairs[0].0;
    // a document missing `f` goes to the interpreter, which fails as Painless does; under a
    // bound that leaves those documents out nothing fails
    for lazy in [true, false] {
        let e = run(score(json!({"match_all": {}}), fast), lazy).unwrap_err();
        assert!(e.contains("runtime error"), "{e}");
        let fine = run(
            score(json!({"range": {"n": {"gte": 6, "lt": 102}}}), fast),
            lazy,
        );
        assert!(fine.is_ok(), "{fine:?}");
    }
    // a negative score fails even below min_score, on either path
    for source in ["doc['f'].value - 1", "double x = doc['f'].value; x - 1"] {
        let e = run(score(json!({"exists": {"field": "f"}}), source), true).unwrap_err();
        assert!(e.contains("Must be a non-negative score!"), "{e}");
    }
}
