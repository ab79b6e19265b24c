//! The synthetic corpus of the `vectorsearch` workload: clustered, normalised vectors (real
//! embeddings cluster by topic and are usually normalised) and one integer attribute for the
//! filters, all a pure function of (seed, index), so that every target gets the same bytes.
//!
//! A vector is a cluster's centre (a random unit vector) plus Gaussian noise, normalised;
//! clusters are picked with Zipf-like weights, as topics are. Queries come from the same
//! distribution with another seed. `attr` is uniform in 0..1000: the relaxed filter keeps
//! `attr < 800` (80%), the restrictive one `attr < 10` (1%).

use crate::rng::{cumulative, zipf_weights, Rng};

/// Documents kept by the relaxed filter: `attr < RELAXED_BELOW`.
pub const RELAXED_BELOW: u32 = 800;
/// Documents kept by the restrictive filter: `attr < RESTRICTIVE_BELOW`.
pub const RESTRICTIVE_BELOW: u32 = 10;
/// `attr` is uniform below this.
pub const ATTR_RANGE: u64 = 1000;

/// The corpus's shape.
#[derive(Clone, Debug)]
pub struct Corpus {
    pub seed: u64,
    pub dim: usize,
    centres: Vec<f32>,
    weights: Vec<f64>,
    /// Noise around a centre, per coordinate (the centres are unit vectors).
    spread: f32,
}

impl Corpus {
    pub fn new(seed: u64, dim: usize, clusters: usize) -> Corpus {
        let clusters = clusters.max(1);
        let mut rng = Rng::new(seed ^ 0xC1u64);
        let mut centres = Vec::with_capacity(clusters * dim);
        for _ in 0..clusters {
            let centre: Vec<f32> = (0..dim).map(|_| rng.normal() as f32).collect();
            centres.extend(normalised(centre));
        }
        Corpus {
            seed,
            dim,
            centres,
            weights: cumulative(zipf_weights(clusters, 0.7)),
            // the noise's norm is about 0.6: neighbours within a cluster are close, not equal
            spread: 0.6 / (dim as f32).sqrt(),
        }
    }

    fn vector(&self, stream: u64, i: u64) -> Vec<f32> {
        let mut rng = Rng::for_doc(self.seed ^ stream, i);
        let cluster = rng.pick_cumulative(&self.weights);
        let centre = &self.centres[cluster * self.dim..][..self.dim];
        normalised(
            centre
                .iter()
                .map(|c| c + self.spread * rng.normal() as f32)
                .collect(),
        )
    }

    /// Document `i`'s vector.
    pub fn doc_vector(&self, i: u64) -> Vec<f32> {
        self.vector(0, i)
    }

    /// Document `i`'s attribute (0..1000).
    pub fn doc_attr(&self, i: u64) -> u32 {
        Rng::for_doc(self.seed ^ 0xA77, i).below(ATTR_RANGE) as u32
    }

    /// Query `i`'s vector.
    pub fn query_vector(&self, i: u64) -> Vec<f32> {
        self.vector(0x9E37_79B9, i)
    }
}

fn normalised(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in &mut v {
            *x /= norm;
        }
    }
    v
}

/// Writes a vector as JSON numbers (shortest round-trip form).
pub fn write_vector(out: &mut Vec<u8>, v: &[f32]) {
    use std::io::Write as _;
    out.push(b'[');
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let _ = write!(out, "{x}");
    }
    out.push(b']');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_unit_length_and_reproducible() {
        let corpus = Corpus::new(7, 16, 10);
        let v = corpus.doc_vector(3);
        assert_eq!(v.len(), 16);
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5);
        assert_eq!(Corpus::new(7, 16, 10).doc_vector(3), v);
        assert_ne!(corpus.query_vector(3), v);
        assert!(corpus.doc_attr(5) < 1000);
        let mut out = Vec::new();
        write_vector(&mut out, &[0.5, -1.0]);
        assert_eq!(out, b"[0.5,-1]");
    }
}
