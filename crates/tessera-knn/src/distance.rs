//! Distances between vectors and OpenSearch's scores for them, per space type.
//!
//! Every space is expressed as a distance where smaller is closer, so that one search routine
//! (exact or graph) serves all of them; the score a hit shows is computed from the distance
//! exactly as OpenSearch's k-NN plugin computes it. This is the simple scalar version: the
//! optimized kernels replace this file with the same API.

/// A k-NN space type (`space_type` in a `knn_vector` mapping).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Space {
    L2,
    CosineSimil,
    InnerProduct,
    L1,
    LInf,
}

impl Space {
    /// `l2`, `cosinesimil`, `innerproduct`, `l1` or `linf`.
    pub fn parse(name: &str) -> Option<Space> {
        Some(match name {
            "l2" => Space::L2,
            "cosinesimil" => Space::CosineSimil,
            "innerproduct" => Space::InnerProduct,
            "l1" => Space::L1,
            "linf" => Space::LInf,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Space::L2 => "l2",
            Space::CosineSimil => "cosinesimil",
            Space::InnerProduct => "innerproduct",
            Space::L1 => "l1",
            Space::LInf => "linf",
        }
    }

    /// Smaller is closer. l2: squared euclidean; cosinesimil: 1 - cos; innerproduct: -dot;
    /// l1: sum |a-b|; linf: max |a-b|.
    pub fn distance(self, a: &[f32], b: &[f32]) -> f32 {
        debug_assert_eq!(a.len(), b.len());
        match self {
            Space::L2 => a
                .iter()
                .zip(b)
                .map(|(x, y)| {
                    let d = x - y;
                    d * d
                })
                .sum(),
            Space::CosineSimil => {
                let (mut dot, mut na, mut nb) = (0f32, 0f32, 0f32);
                for (x, y) in a.iter().zip(b) {
                    dot += x * y;
                    na += x * x;
                    nb += y * y;
                }
                let denominator = (na * nb).sqrt();
                if denominator == 0.0 {
                    return 1.0;
                }
                1.0 - dot / denominator
            }
            Space::InnerProduct => -a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>(),
            Space::L1 => a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum(),
            Space::LInf => a
                .iter()
                .zip(b)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f32::max),
        }
    }

    /// OpenSearch's score for a distance: l2, l1, linf `1/(1+d)`; cosinesimil `(2-d)/2`;
    /// innerproduct (dot = -d) `dot >= 0 ? 1+dot : 1/(1-dot)`.
    pub fn score(self, distance: f32) -> f32 {
        match self {
            Space::L2 | Space::L1 | Space::LInf => 1.0 / (1.0 + distance),
            Space::CosineSimil => (2.0 - distance) / 2.0,
            Space::InnerProduct => {
                let dot = -distance;
                if dot >= 0.0 {
                    1.0 + dot
                } else {
                    1.0 / (1.0 - dot)
                }
            }
        }
    }

    /// The distance whose score is `score` (the inverse of [`Space::score`]).
    pub fn distance_for_score(self, score: f32) -> f32 {
        match self {
            Space::L2 | Space::L1 | Space::LInf => 1.0 / score - 1.0,
            Space::CosineSimil => 2.0 - 2.0 * score,
            Space::InnerProduct => {
                let dot = if score >= 1.0 {
                    score - 1.0
                } else {
                    1.0 - 1.0 / score
                };
                -dot
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for space in [
            Space::L2,
            Space::CosineSimil,
            Space::InnerProduct,
            Space::L1,
            Space::LInf,
        ] {
            assert_eq!(Space::parse(space.name()), Some(space));
        }
        assert_eq!(Space::parse("hamming"), None);
    }

    #[test]
    fn distances_and_scores() {
        let (a, b) = ([1.0, 2.0, 3.0], [0.0, 0.0, 1.0]);
        assert_eq!(Space::L2.distance(&a, &b), 1.0 + 4.0 + 4.0);
        assert_eq!(Space::L2.score(9.0), 0.1);
        assert_eq!(Space::InnerProduct.distance(&a, &b), -3.0);
        assert_eq!(Space::InnerProduct.score(-3.0), 4.0);
        assert_eq!(Space::InnerProduct.score(3.0), 0.25);
        assert_eq!(Space::L1.distance(&a, &b), 5.0);
        assert_eq!(Space::LInf.distance(&a, &b), 2.0);
        let cos = Space::CosineSimil.distance(&[1.0, 0.0], &[0.0, 1.0]);
        assert_eq!(cos, 1.0);
        assert_eq!(Space::CosineSimil.score(cos), 0.5);
    }

    #[test]
    fn distance_for_score_inverts_score() {
        for space in [
            Space::L2,
            Space::CosineSimil,
            Space::InnerProduct,
            Space::L1,
        ] {
            for d in [-3.0f32, -0.5, 0.0, 0.25, 2.0] {
                if d < 0.0 && space != Space::InnerProduct && space != Space::CosineSimil {
                    continue;
                }
                let back = space.distance_for_score(space.score(d));
                assert!((back - d).abs() < 1e-5, "{space:?} {d} {back}");
            }
        }
    }
}
