//! Distance spaces as OpenSearch's k-NN plugin names them, with their score functions, and the
//! distance kernels behind them.
//!
//! Every graph hop costs one distance, so the kernels are the hot loop of a k-NN search: each
//! has an AVX-512F and an AVX2+FMA version picked once at run time (`is_x86_feature_detected!`,
//! the shipped binary is built for the baseline CPU) and a scalar fallback that defines the
//! values; the tests check every version against the scalar one on odd lengths.
//!
//! Smaller is closer in every space, so the graph and the heaps never need to know which space
//! they serve; [`Space::score`] turns a distance into OpenSearch's `_score`.

use std::sync::OnceLock;

/// A distance between two vectors of the same length; smaller is closer.
pub type Kernel = fn(&[f32], &[f32]) -> f32;

/// The space a `knn_vector` field is indexed in (its `space_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Space {
    L2,
    CosineSimil,
    InnerProduct,
    L1,
    LInf,
}

impl Space {
    /// Every space, in the order of their codes in a graph file.
    pub const ALL: [Space; 5] = [
        Space::L2,
        Space::CosineSimil,
        Space::InnerProduct,
        Space::L1,
        Space::LInf,
    ];

    /// OpenSearch's names: "l2", "cosinesimil", "innerproduct", "l1", "linf"; None otherwise.
    pub fn parse(name: &str) -> Option<Space> {
        Space::ALL.into_iter().find(|space| space.name() == name)
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

    /// The space's code in a serialized graph.
    pub(crate) fn code(self) -> u32 {
        self as u32
    }

    pub(crate) fn from_code(code: u32) -> Option<Space> {
        Space::ALL.get(code as usize).copied()
    }

    /// Smaller is closer. l2: squared euclidean; cosinesimil: 1 - cos(a,b) (cos of a zero vector
    /// is not defined: callers reject zero vectors); innerproduct: -dot; l1: sum |a-b|; linf:
    /// max |a-b|.
    pub fn distance(self, a: &[f32], b: &[f32]) -> f32 {
        (self.kernel())(a, b)
    }

    /// The fastest kernel of this space on this CPU (chosen once per process).
    pub fn kernel(self) -> Kernel {
        let kernels = kernels();
        match self {
            Space::L2 => kernels.l2,
            Space::CosineSimil => kernels.cosine,
            Space::InnerProduct => kernels.inner_product,
            Space::L1 => kernels.l1,
            Space::LInf => kernels.linf,
        }
    }

    /// OpenSearch's k-NN score for that distance: l2 1/(1+d); cosinesimil (2-d)/2 i.e.
    /// (1+cos)/2; innerproduct with dot=-d: dot >= 0 ? 1+dot : 1/(1-dot); l1 and linf 1/(1+d).
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

    /// The inverse of score (for min_score / max_distance and a shared best-score bound). A score
    /// no distance reaches (≤ 0 where scores are positive) gives +∞: every distance qualifies.
    pub fn distance_for_score(self, score: f32) -> f32 {
        match self {
            Space::L2 | Space::L1 | Space::LInf => {
                if score <= 0.0 {
                    f32::INFINITY
                } else {
                    1.0 / score - 1.0
                }
            }
            Space::CosineSimil => 2.0 - 2.0 * score,
            Space::InnerProduct => {
                if score >= 1.0 {
                    1.0 - score
                } else if score <= 0.0 {
                    f32::INFINITY
                } else {
                    1.0 / score - 1.0
                }
            }
        }
    }
}

/// The kernels of every space, chosen once for this CPU.
#[derive(Clone, Copy)]
struct Kernels {
    l2: Kernel,
    cosine: Kernel,
    inner_product: Kernel,
    l1: Kernel,
    linf: Kernel,
}

/// Which instruction set the kernels use on this machine: "avx512f", "avx2+fma" or "scalar".
pub fn kernel_isa() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") {
            return "avx512f";
        }
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            return "avx2+fma";
        }
    }
    "scalar"
}

fn kernels() -> &'static Kernels {
    static KERNELS: OnceLock<Kernels> = OnceLock::new();
    KERNELS.get_or_init(|| match kernel_isa() {
        #[cfg(target_arch = "x86_64")]
        "avx512f" => Kernels {
            l2: x86::l2_avx512,
            cosine: x86::cosine_avx512,
            inner_product: x86::neg_dot_avx512,
            l1: x86::l1_avx512,
            linf: x86::linf_avx512,
        },
        #[cfg(target_arch = "x86_64")]
        "avx2+fma" => Kernels {
            l2: x86::l2_avx2,
            cosine: x86::cosine_avx2,
            inner_product: x86::neg_dot_avx2,
            l1: x86::l1_avx2,
            linf: x86::linf_avx2,
        },
        _ => SCALAR,
    })
}

const SCALAR: Kernels = Kernels {
    l2: scalar::l2,
    cosine: scalar::cosine,
    inner_product: scalar::neg_dot,
    l1: scalar::l1,
    linf: scalar::linf,
};

/// 1 - dot / (|a|·|b|) from the three sums; a zero vector gives 1 (callers reject them).
#[inline]
fn cosine_from(dot: f32, norm_a: f32, norm_b: f32) -> f32 {
    let denominator = (norm_a * norm_b).sqrt();
    if denominator > 0.0 {
        1.0 - dot / denominator
    } else {
        1.0
    }
}

/// The definitions: plain loops, also the fallback off x86-64.
mod scalar {
    pub fn l2(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
    }

    pub fn neg_dot(a: &[f32], b: &[f32]) -> f32 {
        -a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>()
    }

    pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
        let (mut dot, mut norm_a, mut norm_b) = (0.0f32, 0.0f32, 0.0f32);
        for (x, y) in a.iter().zip(b) {
            dot += x * y;
            norm_a += x * x;
            norm_b += y * y;
        }
        super::cosine_from(dot, norm_a, norm_b)
    }

    pub fn l1(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum()
    }

    pub fn linf(a: &[f32], b: &[f32]) -> f32 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max)
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! The SIMD kernels. Each `unsafe fn` needs its target feature; the safe wrappers are only
    //! handed out by `kernels()` after the feature was detected.
    use std::arch::x86_64::*;

    // ---- AVX-512F: 4 accumulators of 16 lanes, a masked load for the tail ----

    macro_rules! avx512_sum_kernel {
        ($name:ident, $inner:ident, $step:ident, $finish:expr) => {
            pub fn $name(a: &[f32], b: &[f32]) -> f32 {
                debug_assert_eq!(a.len(), b.len());
                // SAFETY: handed out only when avx512f was detected.
                $finish(unsafe { $inner(a, b) })
            }

            #[target_feature(enable = "avx512f")]
            unsafe fn $inner(a: &[f32], b: &[f32]) -> f32 {
                let n = a.len().min(b.len());
                let (pa, pb) = (a.as_ptr(), b.as_ptr());
                let mut acc0 = _mm512_setzero_ps();
                let mut acc1 = _mm512_setzero_ps();
                let mut acc2 = _mm512_setzero_ps();
                let mut acc3 = _mm512_setzero_ps();
                let mut i = 0;
                while i + 64 <= n {
                    acc0 = $step(acc0, _mm512_loadu_ps(pa.add(i)), _mm512_loadu_ps(pb.add(i)));
                    acc1 = $step(
                        acc1,
                        _mm512_loadu_ps(pa.add(i + 16)),
                        _mm512_loadu_ps(pb.add(i + 16)),
                    );
                    acc2 = $step(
                        acc2,
                        _mm512_loadu_ps(pa.add(i + 32)),
                        _mm512_loadu_ps(pb.add(i + 32)),
                    );
                    acc3 = $step(
                        acc3,
                        _mm512_loadu_ps(pa.add(i + 48)),
                        _mm512_loadu_ps(pb.add(i + 48)),
                    );
                    i += 64;
                }
                while i + 16 <= n {
                    acc0 = $step(acc0, _mm512_loadu_ps(pa.add(i)), _mm512_loadu_ps(pb.add(i)));
                    i += 16;
                }
                if i < n {
                    let mask: __mmask16 = (1u32 << (n - i)) as u16 - 1;
                    let x = _mm512_maskz_loadu_ps(mask, pa.add(i));
                    let y = _mm512_maskz_loadu_ps(mask, pb.add(i));
                    acc1 = $step(acc1, x, y);
                }
                _mm512_reduce_add_ps(_mm512_add_ps(
                    _mm512_add_ps(acc0, acc1),
                    _mm512_add_ps(acc2, acc3),
                ))
            }
        };
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn sq512(acc: __m512, x: __m512, y: __m512) -> __m512 {
        let d = _mm512_sub_ps(x, y);
        _mm512_fmadd_ps(d, d, acc)
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn dot512(acc: __m512, x: __m512, y: __m512) -> __m512 {
        _mm512_fmadd_ps(x, y, acc)
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn abs512(acc: __m512, x: __m512, y: __m512) -> __m512 {
        _mm512_add_ps(acc, _mm512_abs_ps(_mm512_sub_ps(x, y)))
    }

    avx512_sum_kernel!(l2_avx512, l2_avx512_inner, sq512, |s| s);
    avx512_sum_kernel!(neg_dot_avx512, dot_avx512_inner, dot512, |s: f32| -s);
    avx512_sum_kernel!(l1_avx512, l1_avx512_inner, abs512, |s| s);

    pub fn linf_avx512(a: &[f32], b: &[f32]) -> f32 {
        debug_assert_eq!(a.len(), b.len());
        // SAFETY: handed out only when avx512f was detected.
        unsafe { linf_avx512_inner(a, b) }
    }

    #[target_feature(enable = "avx512f")]
    unsafe fn linf_avx512_inner(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut acc = _mm512_setzero_ps();
        let mut i = 0;
        while i + 16 <= n {
            let d = _mm512_sub_ps(_mm512_loadu_ps(pa.add(i)), _mm512_loadu_ps(pb.add(i)));
            acc = _mm512_max_ps(acc, _mm512_abs_ps(d));
            i += 16;
        }
        if i < n {
            let mask: __mmask16 = (1u32 << (n - i)) as u16 - 1;
            let d = _mm512_sub_ps(
                _mm512_maskz_loadu_ps(mask, pa.add(i)),
                _mm512_maskz_loadu_ps(mask, pb.add(i)),
            );
            acc = _mm512_max_ps(acc, _mm512_abs_ps(d));
        }
        _mm512_reduce_max_ps(acc)
    }

    pub fn cosine_avx512(a: &[f32], b: &[f32]) -> f32 {
        debug_assert_eq!(a.len(), b.len());
        // SAFETY: handed out only when avx512f was detected.
        let (dot, norm_a, norm_b) = unsafe { cosine_avx512_inner(a, b) };
        super::cosine_from(dot, norm_a, norm_b)
    }

    #[target_feature(enable = "avx512f")]
    unsafe fn cosine_avx512_inner(a: &[f32], b: &[f32]) -> (f32, f32, f32) {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let (mut dot, mut na, mut nb) = (
            _mm512_setzero_ps(),
            _mm512_setzero_ps(),
            _mm512_setzero_ps(),
        );
        let mut i = 0;
        while i + 16 <= n {
            let x = _mm512_loadu_ps(pa.add(i));
            let y = _mm512_loadu_ps(pb.add(i));
            dot = _mm512_fmadd_ps(x, y, dot);
            na = _mm512_fmadd_ps(x, x, na);
            nb = _mm512_fmadd_ps(y, y, nb);
            i += 16;
        }
        if i < n {
            let mask: __mmask16 = (1u32 << (n - i)) as u16 - 1;
            let x = _mm512_maskz_loadu_ps(mask, pa.add(i));
            let y = _mm512_maskz_loadu_ps(mask, pb.add(i));
            dot = _mm512_fmadd_ps(x, y, dot);
            na = _mm512_fmadd_ps(x, x, na);
            nb = _mm512_fmadd_ps(y, y, nb);
        }
        (
            _mm512_reduce_add_ps(dot),
            _mm512_reduce_add_ps(na),
            _mm512_reduce_add_ps(nb),
        )
    }

    // ---- AVX2 + FMA: 4 accumulators of 8 lanes, a scalar tail ----

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn hsum256(v: __m256) -> f32 {
        let sum4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let sum2 = _mm_add_ps(sum4, _mm_movehl_ps(sum4, sum4));
        let sum1 = _mm_add_ss(sum2, _mm_shuffle_ps(sum2, sum2, 1));
        _mm_cvtss_f32(sum1)
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn hmax256(v: __m256) -> f32 {
        let max4 = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let max2 = _mm_max_ps(max4, _mm_movehl_ps(max4, max4));
        let max1 = _mm_max_ss(max2, _mm_shuffle_ps(max2, max2, 1));
        _mm_cvtss_f32(max1)
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn abs256(v: __m256) -> __m256 {
        _mm256_andnot_ps(_mm256_set1_ps(-0.0), v)
    }

    macro_rules! avx2_sum_kernel {
        ($name:ident, $inner:ident, $step:ident, $tail:expr, $finish:expr) => {
            pub fn $name(a: &[f32], b: &[f32]) -> f32 {
                debug_assert_eq!(a.len(), b.len());
                // SAFETY: handed out only when avx2 and fma were detected.
                $finish(unsafe { $inner(a, b) })
            }

            #[target_feature(enable = "avx2,fma")]
            unsafe fn $inner(a: &[f32], b: &[f32]) -> f32 {
                let n = a.len().min(b.len());
                let (pa, pb) = (a.as_ptr(), b.as_ptr());
                let mut acc0 = _mm256_setzero_ps();
                let mut acc1 = _mm256_setzero_ps();
                let mut acc2 = _mm256_setzero_ps();
                let mut acc3 = _mm256_setzero_ps();
                let mut i = 0;
                while i + 32 <= n {
                    acc0 = $step(acc0, _mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)));
                    acc1 = $step(
                        acc1,
                        _mm256_loadu_ps(pa.add(i + 8)),
                        _mm256_loadu_ps(pb.add(i + 8)),
                    );
                    acc2 = $step(
                        acc2,
                        _mm256_loadu_ps(pa.add(i + 16)),
                        _mm256_loadu_ps(pb.add(i + 16)),
                    );
                    acc3 = $step(
                        acc3,
                        _mm256_loadu_ps(pa.add(i + 24)),
                        _mm256_loadu_ps(pb.add(i + 24)),
                    );
                    i += 32;
                }
                while i + 8 <= n {
                    acc0 = $step(acc0, _mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)));
                    i += 8;
                }
                let mut sum = hsum256(_mm256_add_ps(
                    _mm256_add_ps(acc0, acc1),
                    _mm256_add_ps(acc2, acc3),
                ));
                let tail = $tail;
                while i < n {
                    sum += tail(*pa.add(i), *pb.add(i));
                    i += 1;
                }
                sum
            }
        };
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn sq256(acc: __m256, x: __m256, y: __m256) -> __m256 {
        let d = _mm256_sub_ps(x, y);
        _mm256_fmadd_ps(d, d, acc)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn dot256(acc: __m256, x: __m256, y: __m256) -> __m256 {
        _mm256_fmadd_ps(x, y, acc)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn l1_256(acc: __m256, x: __m256, y: __m256) -> __m256 {
        _mm256_add_ps(acc, abs256(_mm256_sub_ps(x, y)))
    }

    avx2_sum_kernel!(
        l2_avx2,
        l2_avx2_inner,
        sq256,
        |x: f32, y: f32| (x - y) * (x - y),
        |s| s
    );
    avx2_sum_kernel!(
        neg_dot_avx2,
        dot_avx2_inner,
        dot256,
        |x: f32, y: f32| x * y,
        |s: f32| -s
    );
    avx2_sum_kernel!(
        l1_avx2,
        l1_avx2_inner,
        l1_256,
        |x: f32, y: f32| (x - y).abs(),
        |s| s
    );

    pub fn linf_avx2(a: &[f32], b: &[f32]) -> f32 {
        debug_assert_eq!(a.len(), b.len());
        // SAFETY: handed out only when avx2 and fma were detected.
        unsafe { linf_avx2_inner(a, b) }
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn linf_avx2_inner(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut acc = _mm256_setzero_ps();
        let mut i = 0;
        while i + 8 <= n {
            let d = _mm256_sub_ps(_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)));
            acc = _mm256_max_ps(acc, abs256(d));
            i += 8;
        }
        let mut max = hmax256(acc);
        while i < n {
            max = max.max((*pa.add(i) - *pb.add(i)).abs());
            i += 1;
        }
        max
    }

    pub fn cosine_avx2(a: &[f32], b: &[f32]) -> f32 {
        debug_assert_eq!(a.len(), b.len());
        // SAFETY: handed out only when avx2 and fma were detected.
        let (dot, norm_a, norm_b) = unsafe { cosine_avx2_inner(a, b) };
        super::cosine_from(dot, norm_a, norm_b)
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn cosine_avx2_inner(a: &[f32], b: &[f32]) -> (f32, f32, f32) {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let (mut dot, mut na, mut nb) = (
            _mm256_setzero_ps(),
            _mm256_setzero_ps(),
            _mm256_setzero_ps(),
        );
        let mut i = 0;
        while i + 8 <= n {
            let x = _mm256_loadu_ps(pa.add(i));
            let y = _mm256_loadu_ps(pb.add(i));
            dot = _mm256_fmadd_ps(x, y, dot);
            na = _mm256_fmadd_ps(x, x, na);
            nb = _mm256_fmadd_ps(y, y, nb);
            i += 8;
        }
        let (mut dot, mut na, mut nb) = (hsum256(dot), hsum256(na), hsum256(nb));
        while i < n {
            let (x, y) = (*pa.add(i), *pb.add(i));
            dot += x * y;
            na += x * x;
            nb += y * y;
            i += 1;
        }
        (dot, na, nb)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vectors(len: usize, seed: u32) -> (Vec<f32>, Vec<f32>) {
        let mut state = seed.wrapping_mul(2654435761).max(1);
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            (state as f32 / u32::MAX as f32) * 2.0 - 1.0
        };
        let a = (0..len).map(|_| next()).collect();
        let b = (0..len).map(|_| next()).collect();
        (a, b)
    }

    fn all_kernels() -> Vec<(&'static str, Kernels)> {
        let mut out = vec![("scalar", SCALAR)];
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                out.push((
                    "avx2",
                    Kernels {
                        l2: x86::l2_avx2,
                        cosine: x86::cosine_avx2,
                        inner_product: x86::neg_dot_avx2,
                        l1: x86::l1_avx2,
                        linf: x86::linf_avx2,
                    },
                ));
            }
            if std::is_x86_feature_detected!("avx512f") {
                out.push((
                    "avx512",
                    Kernels {
                        l2: x86::l2_avx512,
                        cosine: x86::cosine_avx512,
                        inner_product: x86::neg_dot_avx512,
                        l1: x86::l1_avx512,
                        linf: x86::linf_avx512,
                    },
                ));
            }
        }
        out
    }

    #[test]
    fn every_kernel_agrees_with_the_scalar_one_on_odd_lengths() {
        for len in [
            1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 100, 129, 255, 256, 257,
        ] {
            let (a, b) = vectors(len, len as u32);
            for (name, kernels) in all_kernels() {
                let pairs: [(&str, Kernel, Kernel); 5] = [
                    ("l2", kernels.l2, scalar::l2),
                    ("cosine", kernels.cosine, scalar::cosine),
                    ("ip", kernels.inner_product, scalar::neg_dot),
                    ("l1", kernels.l1, scalar::l1),
                    ("linf", kernels.linf, scalar::linf),
                ];
                for (space, kernel, reference) in pairs {
                    let (got, want) = (kernel(&a, &b), reference(&a, &b));
                    let tolerance = 1e-4 * (1.0 + want.abs());
                    assert!(
                        (got - want).abs() <= tolerance,
                        "{name} {space} len {len}: {got} vs {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn distances_are_the_documented_ones() {
        let a = [1.0, 0.0, 2.0];
        let b = [0.0, 1.0, 2.0];
        assert_eq!(Space::L2.distance(&a, &b), 2.0);
        assert_eq!(Space::InnerProduct.distance(&a, &b), -4.0);
        assert_eq!(Space::L1.distance(&a, &b), 2.0);
        assert_eq!(Space::LInf.distance(&a, &b), 1.0);
        assert!((Space::CosineSimil.distance(&a, &b) - (1.0 - 4.0 / 5.0)).abs() < 1e-6);
        assert!(Space::CosineSimil.distance(&a, &a).abs() < 1e-6);
    }

    #[test]
    fn names_round_trip_and_unknown_names_are_none() {
        for space in Space::ALL {
            assert_eq!(Space::parse(space.name()), Some(space));
            assert_eq!(Space::from_code(space.code()), Some(space));
        }
        assert_eq!(Space::parse("hamming"), None);
        assert_eq!(Space::parse("L2"), None);
        assert_eq!(Space::from_code(5), None);
    }

    #[test]
    fn scores_are_opensearch_s_and_distance_for_score_inverts_them() {
        assert_eq!(Space::L2.score(1.0), 0.5);
        assert_eq!(Space::CosineSimil.score(0.0), 1.0);
        assert_eq!(Space::CosineSimil.score(2.0), 0.0);
        assert_eq!(Space::InnerProduct.score(-3.0), 4.0);
        assert_eq!(Space::InnerProduct.score(3.0), 0.25);
        for space in Space::ALL {
            for distance in [0.0f32, 0.25, 1.0, 3.0] {
                let distance = if space == Space::InnerProduct {
                    distance - 1.5
                } else {
                    distance
                };
                let back = space.distance_for_score(space.score(distance));
                assert!(
                    (back - distance).abs() < 1e-5,
                    "{space:?} {distance} {back}"
                );
            }
        }
        assert_eq!(Space::L2.distance_for_score(0.0), f32::INFINITY);
        assert_eq!(Space::InnerProduct.distance_for_score(-1.0), f32::INFINITY);
    }
}
