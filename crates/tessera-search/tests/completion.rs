//! The completion suggester against a model: random inputs with distinct weights, spread over
//! shards and segments with deletes and updates, asked for random prefixes (exact and fuzzy).
//! The model is the suggester's contract written out plainly: per live document its best
//! matching input, best score first, `size` of them.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};
use tessera_common::settings::Settings;
use tessera_index::{Conditions, DocWrite, IndexService, NodeResources};
use tessera_mapping::Mapping;

use common::{mode_none, seeds, Engine, Rng};

const WORDS: &[&str] = &[
    "nirvana",
    "nevermind",
    "never",
    "nice",
    "nicer",
    "ninja",
    "north",
    "norse",
    "nova",
    "new",
    "newer",
    "live",
    "light",
    "lime",
    "lines",
    "mocha",
    "mochi",
    "mojito",
];

/// One document's inputs: text and weight.
type Inputs = Vec<(String, u32)>;

fn create(shards: u32) -> (tempfile::TempDir, Arc<IndexService>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let settings = json!({
        "number_of_shards": shards,
        "number_of_replicas": 0,
        "refresh_interval": "-1",
    });
    let mapping = json!({"properties": {"s": {"type": "completion"}}});
    let index = IndexService::create(
        &dir.path().join("c"),
        "c",
        "c-uuid",
        Settings::from_json(&settings)
            .expect("settings")
            .with_prefix("index."),
        Mapping::parse(&mapping).expect("mapping"),
        &NodeResources {
            indexing_threads: 1,
            indexing_buffer_bytes: 64 << 20,
            merge_threads: 1,
            scripts: Default::default(),
        },
    )
    .expect("create the index");
    (dir, Arc::new(index))
}

fn write(index: &IndexService, id: &str, inputs: Option<&Inputs>) {
    let shard = index.shard_for(id, None);
    let op = match inputs {
        Some(inputs) => {
            let value: Vec<Value> = inputs
                .iter()
                .map(|(text, weight)| json!({"input": text, "weight": weight}))
                .collect();
            DocWrite::Index {
                id: Some(id.to_string()),
                auto_generated_id: false,
                source: serde_json::to_vec(&json!({ "s": value }))
                    .expect("source")
                    .into(),
                routing: None,
                conditions: Conditions::default(),
            }
        }
        None => DocWrite::Delete {
            id: id.to_string(),
            routing: None,
            conditions: Conditions::default(),
        },
    };
    for result in index.write_shard(shard, vec![op], false).expect("write") {
        result.expect("a write failed");
    }
}

/// Optimal string alignment distance, written as plainly as possible.
fn distance(a: &[u8], b: &[u8]) -> usize {
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

/// The model's score of one input for `prefix`: `None` when it does not match.
fn score(input: &str, weight: u32, prefix: &str, fuzzy: bool) -> Option<f32> {
    let (form, query) = (input.as_bytes(), prefix.as_bytes());
    if !fuzzy {
        return form.starts_with(query).then_some(weight as f32);
    }
    // one edit from three characters on, the first exact; the shortest accepted prefix of the
    // input decides the boost: the characters it shares with the query
    let edits = if query.len() >= 3 { 1 } else { 0 };
    let accepted = (1..=form.len())
        .find(|&len| form[0] == query[0] && distance(&form[..len], query) <= edits)?;
    let shared = form[..accepted]
        .iter()
        .zip(query)
        .take_while(|(a, b)| a == b)
        .count();
    Some(weight as f32 * shared as f32)
}

fn expected(docs: &BTreeMap<String, Inputs>, prefix: &str, fuzzy: bool, size: usize) -> Value {
    let mut options: Vec<(f32, String, String)> = docs
        .iter()
        .filter_map(|(id, inputs)| {
            inputs
                .iter()
                .filter_map(|(text, weight)| Some((score(text, *weight, prefix, fuzzy)?, text)))
                .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(a.1)))
                .map(|(score, text)| (score, text.clone(), id.clone()))
        })
        .collect();
    options.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    options.truncate(size);
    json!(options
        .into_iter()
        .map(|(score, text, id)| json!({"text": text, "_id": id, "_score": score}))
        .collect::<Vec<_>>())
}

fn actual(
    engine: &Engine,
    index: &Arc<IndexService>,
    prefix: &str,
    fuzzy: bool,
    size: usize,
) -> Value {
    let body = json!({"_source": false, "suggest": {"s": {"prefix": prefix, "completion": {
        "field": "s", "size": size, "fuzzy": fuzzy
    }}}});
    let response = engine.search(&engine.targets(index), &body, mode_none());
    let options = response["suggest"]["s"][0]["options"]
        .as_array()
        .unwrap_or_else(|| panic!("no options in {response}"));
    json!(options
        .iter()
        .map(|o| json!({"text": o["text"], "_id": o["_id"], "_score": o["_score"]}))
        .collect::<Vec<_>>())
}

fn next_prime(mut n: u32) -> u32 {
    while (2..n)
        .take_while(|d| d * d <= n)
        .any(|d| n.is_multiple_of(d))
    {
        n += 1;
    }
    n
}

#[test]
fn suggestions_match_the_model_over_shards_segments_and_deletes() {
    let engine = Engine::new();
    for seed in seeds(0xC0_4D1E, 6) {
        let mut rng = Rng::new(seed);
        let (_dir, index) = create(rng.usize(1, 3) as u32);
        let mut docs: BTreeMap<String, Inputs> = BTreeMap::new();
        // distinct primes above any boost: no two scores tie, so the order is the contract's
        // alone (with ties, shards and keys would decide)
        let mut next_weight = 23u32;
        for _ in 0..4 {
            for _ in 0..rng.usize(5, 25) {
                let id = format!("d{}", rng.below(60));
                if rng.chance(0.15) {
                    docs.remove(&id);
                    write(&index, &id, None);
                    continue;
                }
                let inputs: Inputs = (0..rng.usize(1, 3))
                    .map(|_| {
                        let mut text = rng.pick(WORDS).to_string();
                        if rng.chance(0.3) {
                            text = format!("{text} {}", rng.pick(WORDS));
                        }
                        next_weight = next_prime(next_weight + 1 + rng.below(5) as u32);
                        (text, next_weight)
                    })
                    .collect();
                write(&index, &id, Some(&inputs));
                docs.insert(id, inputs);
            }
            index.refresh().expect("refresh");
        }
        for _ in 0..30 {
            let word = rng.pick(WORDS);
            let cut = rng.usize(1, word.len());
            let mut prefix: Vec<u8> = word.as_bytes()[..cut].to_vec();
            let fuzzy = rng.chance(0.4);
            if fuzzy && prefix.len() >= 3 && rng.chance(0.7) {
                let at = rng.usize(1, prefix.len() - 1);
                prefix[at] = b'x';
            }
            let prefix = String::from_utf8(prefix).expect("ascii");
            let size = rng.usize(1, 6);
            assert_eq!(
                actual(&engine, &index, &prefix, fuzzy, size),
                expected(&docs, &prefix, fuzzy, size),
                "seed {seed}: prefix {prefix:?} fuzzy {fuzzy} size {size}"
            );
        }
    }
}
