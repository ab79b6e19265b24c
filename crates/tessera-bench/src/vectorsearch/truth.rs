//! Exact ground truth: for each query, the ids of the k closest documents (among those a filter
//! keeps), computed by brute force on all cores, so recall is measured against the true answer
//! and not against another engine's.

use super::corpus::Corpus;

/// How distances are compared (smaller is closer), as OpenSearch's spaces rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    L2,
    InnerProduct,
    Cosine,
}

impl Space {
    pub fn parse(name: &str) -> Option<Space> {
        Some(match name {
            "l2" => Space::L2,
            "innerproduct" => Space::InnerProduct,
            "cosinesimil" => Space::Cosine,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Space::L2 => "l2",
            Space::InnerProduct => "innerproduct",
            Space::Cosine => "cosinesimil",
        }
    }

    fn distance(self, a: &[f32], b: &[f32]) -> f32 {
        match self {
            Space::L2 => a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum(),
            Space::InnerProduct => -a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>(),
            Space::Cosine => {
                let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
                let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
                let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
                1.0 - dot / (na * nb)
            }
        }
    }
}

/// The corpus in memory: vectors (doc-major) and attributes.
pub struct Docs {
    pub dim: usize,
    pub vectors: Vec<f32>,
    pub attrs: Vec<u32>,
}

impl Docs {
    pub fn generate(corpus: &Corpus, n: u64) -> Docs {
        let mut vectors = Vec::with_capacity(n as usize * corpus.dim);
        let mut attrs = Vec::with_capacity(n as usize);
        for i in 0..n {
            vectors.extend(corpus.doc_vector(i));
            attrs.push(corpus.doc_attr(i));
        }
        Docs {
            dim: corpus.dim,
            vectors,
            attrs,
        }
    }

    pub fn len(&self) -> usize {
        self.attrs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.attrs.is_empty()
    }
}

/// For each query, the doc ids of its exact top `k` among docs with `attr < below` (all docs
/// when `below` is `None`), best first (ties by id).
pub fn ground_truth(
    docs: &Docs,
    queries: &[Vec<f32>],
    k: usize,
    space: Space,
    below: Option<u32>,
) -> Vec<Vec<u64>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = queries.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = queries
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|q| top_k(docs, q, k, space, below))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("ground truth thread"))
            .collect()
    })
}

fn top_k(docs: &Docs, query: &[f32], k: usize, space: Space, below: Option<u32>) -> Vec<u64> {
    let mut best: Vec<(f32, u64)> = Vec::with_capacity(k + 1);
    for (i, vector) in docs.vectors.chunks_exact(docs.dim).enumerate() {
        if below.is_some_and(|b| docs.attrs[i] >= b) {
            continue;
        }
        let d = space.distance(query, vector);
        if best.len() == k && d >= best[k - 1].0 {
            continue;
        }
        let at = best.partition_point(|&(e, _)| e <= d);
        best.insert(at, (d, i as u64));
        best.truncate(k);
    }
    best.into_iter().map(|(_, id)| id).collect()
}

/// recall@k: the share of the true top k found in the results' first k; recall@1: the share of
/// queries whose first result is the true nearest neighbour.
pub fn recall(truth: &[Vec<u64>], found: &[Vec<u64>], k: usize) -> (f64, f64) {
    let mut hits = 0usize;
    let mut wanted = 0usize;
    let mut firsts = 0usize;
    for (want, got) in truth.iter().zip(found) {
        let want = &want[..want.len().min(k)];
        let got = &got[..got.len().min(k)];
        wanted += want.len();
        hits += want.iter().filter(|id| got.contains(id)).count();
        if !want.is_empty() && got.first() == want.first() {
            firsts += 1;
        }
    }
    let queries = truth.iter().filter(|w| !w.is_empty()).count().max(1);
    (
        hits as f64 / wanted.max(1) as f64,
        firsts as f64 / queries as f64,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truth_is_the_exact_top_k_and_recall_counts_it() {
        let docs = Docs {
            dim: 1,
            vectors: vec![0.0, 1.0, 2.0, 3.0, 4.0],
            attrs: vec![0, 900, 0, 900, 0],
        };
        let queries = vec![vec![2.9f32]];
        let all = ground_truth(&docs, &queries, 2, Space::L2, None);
        assert_eq!(all, vec![vec![3, 2]]);
        let filtered = ground_truth(&docs, &queries, 2, Space::L2, Some(800));
        assert_eq!(filtered, vec![vec![2, 4]]);
        assert_eq!(recall(&all, &[vec![3, 4]], 2), (0.5, 1.0));
        assert_eq!(recall(&all, &[vec![2, 3]], 2), (1.0, 0.0));
    }
}
