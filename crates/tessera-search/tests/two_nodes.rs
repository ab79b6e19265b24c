//! Two nodes' worth of shards in one process: a coordinator on node A searches its own shards
//! of one index and, through the loopback transport (every request and answer in the wire
//! encoding), node B's shards of another; the answer must be the JSON a single node holding
//! both indices gives. Each node has its own pools and its own reader contexts, and neither
//! may keep a context once the search has answered.
//!
//! Reproduce a failure with `TESSERA_PROP_SEED=<seed> cargo test -p tessera-search --test
//! two_nodes`.

mod common;

use std::sync::Arc;

use common::{
    first_diff, mode_none, random_aggs, random_query, random_sort, seeds, Engine, Rng, TestIndex,
    VOCAB,
};
use serde_json::{json, Value};
use tessera_search::{LoopbackShard, ShardSearcher};

/// Seeds per run (each builds two indices and runs the requests below).
const CASES: usize = 3;
const REQUESTS: usize = 40;

fn random_request(rng: &mut Rng, users: u64) -> Value {
    let mut body = json!({ "query": random_query(rng, users) });
    if rng.chance(0.4) {
        body["aggs"] = random_aggs(rng, users, 2);
    }
    body["size"] = json!(*rng.pick(&[0, 1, 5, 10, 25]));
    if rng.chance(0.5) {
        body["sort"] = random_sort(rng);
    }
    if rng.chance(0.3) {
        body["from"] = json!(rng.range(0, 20));
    }
    if rng.chance(0.2) {
        body["_source"] = json!(["n", "color"]);
    }
    if rng.chance(0.1) {
        body["explain"] = json!(true);
    }
    if rng.chance(0.1) {
        body["version"] = json!(true);
        body["seq_no_primary_term"] = json!(true);
    }
    if rng.chance(0.25) {
        body["suggest"] = random_suggest(rng);
        if rng.chance(0.3) {
            // suggestions alone: no query runs
            let map = body.as_object_mut().expect("an object");
            map.remove("query");
            map.remove("aggs");
        }
    }
    body
}

/// A term suggestion for a misspelt corpus word and a correct one: each shard offers its
/// options, the coordinator adds the frequencies up.
fn random_suggest(rng: &mut Rng) -> Value {
    let mut misspelt: Vec<char> = rng.pick(VOCAB).chars().collect();
    let at = rng.range(0, misspelt.len() as i64 - 2) as usize;
    match rng.range(0, 2) {
        0 => misspelt.swap(at, at + 1),
        1 => {
            misspelt.remove(at);
        }
        _ => misspelt[at] = 'x',
    }
    let misspelt: String = misspelt.into_iter().collect();
    json!({
        "text": format!("{misspelt} {}", rng.pick(VOCAB)),
        "s": {"term": {
            "field": "body",
            "suggest_mode": rng.pick(&["missing", "popular", "always"]),
            "sort": rng.pick(&["score", "frequency"]),
            "max_term_freq": 1000,
            "size": rng.range(1, 4),
        }}
    })
}

#[test]
fn a_search_over_two_nodes_answers_as_one_node() {
    let node_a = Engine::new();
    let node_b = Engine::new();
    let single = Engine::new();
    let mut failures = Vec::new();
    for seed in seeds(0x2_0DE5, CASES) {
        let mut rng = Rng::new(seed);
        let first = TestIndex::random(&mut rng, (40, 300), &[1, 3]);
        let second = TestIndex::random(&mut rng, (40, 300), &[1, 2]);
        let users = first.users.min(second.users);

        let mut on_one_node = single.targets(&first.index);
        on_one_node.extend(single.targets(&second.index));
        let mut across_nodes = node_a.targets(&first.index);
        across_nodes.extend(
            node_b
                .targets(&second.index)
                .into_iter()
                .map(|remote| Arc::new(LoopbackShard::new(remote)) as Arc<dyn ShardSearcher>),
        );

        for _ in 0..REQUESTS {
            let body = random_request(&mut rng, users);
            let expected = single.search(&on_one_node, &body, mode_none());
            let actual = node_a.search(&across_nodes, &body, mode_none());
            assert_eq!(
                node_b.open_contexts(),
                0,
                "seed {seed}: node B kept reader contexts after {body}"
            );
            if let Some(diff) = first_diff(&expected, &actual) {
                failures.push(format!("seed {seed}, request {body}: {diff}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} requests answered differently across two nodes:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Explaining a hit that a `should` clause does not match: tantivy's boolean explain seeks a
/// fresh scorer of that clause which may already stand past the hit. Every hit keeps its
/// explanation and no shard fails, whether the page is fetched with the query (one shard, or a
/// copy behind a network) or in the fetch phase.
#[test]
fn hits_a_should_clause_does_not_match_are_explained() {
    let node = Engine::new();
    let remote = Engine::new();
    let mut rng = Rng::new(0xE7_9A1);
    let index = TestIndex::random(&mut rng, (60, 61), &[1]);
    let mut ns: Vec<i64> = index.live.values().filter_map(|d| d.n).collect();
    ns.sort_unstable();
    // the upper half of `n`: the first documents of the segment mostly precede its first match
    let (lo, hi) = (ns[ns.len() / 2], ns[ns.len() - 1]);
    let body = json!({
        "query": {"bool": {"should": [
            {"match_all": {}},
            {"bool": {"should": [{"range": {"n": {"gte": lo, "lte": hi}}}]}}
        ]}},
        "size": 60,
        "explain": true
    });
    let local = node.targets(&index.index);
    let behind_network: Vec<Arc<dyn ShardSearcher>> = remote
        .targets(&index.index)
        .into_iter()
        .map(|copy| Arc::new(LoopbackShard::new(copy)) as Arc<dyn ShardSearcher>)
        .collect();
    for targets in [local, behind_network] {
        let answer = node.search(&targets, &body, mode_none());
        assert_eq!(answer["_shards"]["failed"], json!(0), "{answer}");
        let hits = answer["hits"]["hits"].as_array().expect("hits");
        assert_eq!(hits.len(), index.live.len());
        assert!(
            hits.iter()
                .all(|hit| hit["_explanation"]["value"].is_number()),
            "{answer}"
        );
    }
}
