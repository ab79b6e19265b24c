//! Lucene's `SloppyMath`: the haversine distance OpenSearch computes geo distances with
//! (`arc` sorts, aggregations and queries), from table-driven `cos` and `asin`.
//!
//! Its distances differ from an exact haversine in the last digits, which a distance sort
//! shows: to give the same sort values, the tables are built as Lucene builds them, from
//! Java's `StrictMath` — fdlibm 5.3 — whose `sin`, `cos` and `asin` are ported below
//! (the platform's libm rounds some table entries differently).

use std::sync::OnceLock;

/// The earth's mean radius Lucene measures in, in meters.
const TO_METERS: f64 = crate::geo::EARTH_RADIUS_METERS;

const SIN_COS_TABS_SIZE: usize = (1 << 11) + 1;
const ASIN_TABS_SIZE: usize = (1 << 13) + 1;
const ONE_DIV_F2: f64 = 1.0 / 2.0;
const ONE_DIV_F3: f64 = 1.0 / 6.0;
const ONE_DIV_F4: f64 = 1.0 / 24.0;

/// The first 33 bits of pi/2, and the rest.
const PIO2_HI: f64 = f64::from_bits(0x3FF9_21FB_5440_0000);
const PIO2_LO: f64 = f64::from_bits(0x3DD0_B461_1A62_6331);

/// Haversine distance in meters between two points in degrees, as Lucene computes it.
pub fn haversin_meters(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    haversin_meters_of_key(haversin_sort_key(lat1, lon1, lat2, lon2))
}

fn haversin_meters_of_key(key: f64) -> f64 {
    TO_METERS * 2.0 * asin((key * 0.5).sqrt().min(1.0))
}

/// Lucene's `haversinSortKey`: orders as the distance does, cheaper.
fn haversin_sort_key(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    let x1 = lat1.to_radians();
    let x2 = lat2.to_radians();
    let h1 = 1.0 - cos(x1 - x2);
    let h2 = 1.0 - cos((lon1 - lon2).to_radians());
    let h = h1 + cos(x1) * cos(x2) * h2;
    // as Lucene: clobber the last bits so that later rounding makes no ties
    f64::from_bits(h.to_bits() & 0xFFFF_FFFF_FFFF_FFF8)
}

struct Tables {
    sin: Vec<f64>,
    cos: Vec<f64>,
    sin_cos_delta_hi: f64,
    sin_cos_delta_lo: f64,
    sin_cos_indexer: f64,
    sin_cos_max: f64,
    asin: [Vec<f64>; 5],
    asin_max: f64,
    asin_delta: f64,
    asin_indexer: f64,
}

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| {
        let steps = (SIN_COS_TABS_SIZE - 1) as f64;
        let delta_hi = 4.0 * PIO2_HI / steps;
        let delta_lo = 4.0 * PIO2_LO / steps;
        let indexer = 1.0 / (delta_hi + delta_lo);
        let pi_index = (SIN_COS_TABS_SIZE - 1) / 2;
        let (mut sin, mut cos) = (Vec::new(), Vec::new());
        for i in 0..SIN_COS_TABS_SIZE {
            let angle = i as f64 * delta_hi + i as f64 * delta_lo;
            let (mut s, mut c) = (fdlibm::sin(angle), fdlibm::cos(angle));
            // exact zeros where the sine or cosine is null
            if i == pi_index || i == 2 * pi_index {
                s = 0.0;
            } else if i == pi_index / 2 || i == 3 * pi_index / 2 {
                c = 0.0;
            }
            sin.push(s);
            cos.push(c);
        }
        let asin_max = fdlibm::sin(73.0f64.to_radians());
        let asin_delta = asin_max / (ASIN_TABS_SIZE - 1) as f64;
        let mut asin: [Vec<f64>; 5] = Default::default();
        for i in 0..ASIN_TABS_SIZE {
            let x = i as f64 * asin_delta;
            let inv = 1.0 / (1.0 - x * x);
            let inv0_5 = inv.sqrt();
            let inv1_5 = inv0_5 * inv;
            let inv2_5 = inv1_5 * inv;
            let inv3_5 = inv2_5 * inv;
            asin[0].push(fdlibm::asin(x));
            asin[1].push(inv0_5);
            asin[2].push((x * inv1_5) * ONE_DIV_F2);
            asin[3].push(((1.0 + 2.0 * x * x) * inv2_5) * ONE_DIV_F3);
            asin[4].push(((5.0 + 2.0 * x * (2.0 + x * (5.0 - 2.0 * x))) * inv3_5) * ONE_DIV_F4);
        }
        Tables {
            sin,
            cos,
            sin_cos_delta_hi: delta_hi,
            sin_cos_delta_lo: delta_lo,
            sin_cos_indexer: indexer,
            sin_cos_max: (f64::from(i32::MAX >> 9) / indexer) * 0.99,
            asin,
            asin_max,
            asin_delta,
            asin_indexer: 1.0 / asin_delta,
        }
    })
}

/// Lucene's table-driven cosine.
fn cos(a: f64) -> f64 {
    let t = tables();
    let a = a.abs();
    if a > t.sin_cos_max {
        return a.cos();
    }
    let mut index = (a * t.sin_cos_indexer + 0.5) as i32;
    let delta = (a - f64::from(index) * t.sin_cos_delta_hi) - f64::from(index) * t.sin_cos_delta_lo;
    index &= (SIN_COS_TABS_SIZE - 2) as i32;
    let index_cos = t.cos[index as usize];
    let index_sin = t.sin[index as usize];
    index_cos
        + delta
            * (-index_sin
                + delta
                    * (-index_cos * ONE_DIV_F2
                        + delta * (index_sin * ONE_DIV_F3 + delta * index_cos * ONE_DIV_F4)))
}

/// Lucene's arc sine: tables below sin(73°), fdlibm's formula above.
fn asin(a: f64) -> f64 {
    let t = tables();
    let (a, negate) = if a < 0.0 { (-a, true) } else { (a, false) };
    let result = if a <= t.asin_max {
        let index = (a * t.asin_indexer + 0.5) as usize;
        let delta = a - index as f64 * t.asin_delta;
        let [tab, d1, d2, d3, d4] = &t.asin;
        tab[index]
            + delta * (d1[index] + delta * (d2[index] + delta * (d3[index] + delta * d4[index])))
    } else if a < 1.0 {
        fdlibm::asin_near_one(a)
    } else if a == 1.0 {
        std::f64::consts::FRAC_PI_2
    } else {
        f64::NAN
    };
    if negate {
        -result
    } else {
        result
    }
}

/// fdlibm 5.3's `sin`, `cos` and `asin` (Java's `StrictMath`), for the arguments the tables
/// need: angles up to 2π and values in [0, 1].
mod fdlibm {
    fn high(x: f64) -> i32 {
        (x.to_bits() >> 32) as i32
    }

    fn with_low_zero(x: f64) -> f64 {
        f64::from_bits(x.to_bits() & 0xFFFF_FFFF_0000_0000)
    }

    const S1: f64 = f64::from_bits(0xBFC5_5555_5555_5549);
    const S2: f64 = f64::from_bits(0x3F81_1111_1110_F8A6);
    const S3: f64 = f64::from_bits(0xBF2A_01A0_19C1_61D5);
    const S4: f64 = f64::from_bits(0x3EC7_1DE3_57B1_FE7D);
    const S5: f64 = f64::from_bits(0xBE5A_E5E6_8A2B_9CEB);
    const S6: f64 = f64::from_bits(0x3DE5_D93A_5ACF_D57C);

    fn kernel_sin(x: f64, y: f64, iy: bool) -> f64 {
        let ix = high(x) & 0x7fff_ffff;
        if ix < 0x3e40_0000 && x as i32 == 0 {
            return x;
        }
        let z = x * x;
        let v = z * x;
        let r = S2 + z * (S3 + z * (S4 + z * (S5 + z * S6)));
        if !iy {
            x + v * (S1 + z * r)
        } else {
            x - ((z * (0.5 * y - v * r) - y) - v * S1)
        }
    }

    const C1: f64 = f64::from_bits(0x3FA5_5555_5555_554C);
    const C2: f64 = f64::from_bits(0xBF56_C16C_16C1_5177);
    const C3: f64 = f64::from_bits(0x3EFA_01A0_19CB_1590);
    const C4: f64 = f64::from_bits(0xBE92_7E4F_809C_52AD);
    const C5: f64 = f64::from_bits(0x3E21_EE9E_BDB4_B1C4);
    const C6: f64 = f64::from_bits(0xBDA8_FAE9_BE88_38D4);

    fn kernel_cos(x: f64, y: f64) -> f64 {
        let ix = high(x) & 0x7fff_ffff;
        if ix < 0x3e40_0000 && x as i32 == 0 {
            return 1.0;
        }
        let z = x * x;
        let r = z * (C1 + z * (C2 + z * (C3 + z * (C4 + z * (C5 + z * C6)))));
        if ix < 0x3FD3_3333 {
            return 1.0 - (0.5 * z - (z * r - x * y));
        }
        let qx = if ix > 0x3fe9_0000 {
            0.28125
        } else {
            f64::from_bits((((ix - 0x0020_0000) as u32) as u64) << 32)
        };
        let hz = 0.5 * z - qx;
        let a = 1.0 - qx;
        a - (hz - (z * r - x * y))
    }

    const INVPIO2: f64 = f64::from_bits(0x3FE4_5F30_6DC9_C883);
    const PIO2_1: f64 = f64::from_bits(0x3FF9_21FB_5440_0000);
    const PIO2_1T: f64 = f64::from_bits(0x3DD0_B461_1A62_6331);
    const PIO2_2: f64 = f64::from_bits(0x3DD0_B461_1A60_0000);
    const PIO2_2T: f64 = f64::from_bits(0x3BA3_198A_2E03_7073);
    const PIO2_3: f64 = f64::from_bits(0x3BA3_198A_2E00_0000);
    const PIO2_3T: f64 = f64::from_bits(0x397B_839A_2520_49C1);
    /// The high words of n·π/2 for n in 1..=32.
    const NPIO2_HW: [i32; 32] = [
        0x3FF921FB, 0x400921FB, 0x4012D97C, 0x401921FB, 0x401F6A7A, 0x4022D97C, 0x4025FDBB,
        0x402921FB, 0x402C463A, 0x402F6A7A, 0x4031475C, 0x4032D97C, 0x40346B9C, 0x4035FDBB,
        0x40378FDB, 0x403921FB, 0x403AB41B, 0x403C463A, 0x403DD85A, 0x403F6A7A, 0x40407E4C,
        0x4041475C, 0x4042106C, 0x4042D97C, 0x4043A28C, 0x40446B9C, 0x404534AC, 0x4045FDBB,
        0x4046C6CB, 0x40478FDB, 0x404858EB, 0x404921FB,
    ];

    /// `x` reduced by a multiple `n` of π/2 into `(n, hi, lo)`, for |x| up to 2^19·π/2.
    fn rem_pio2(x: f64) -> (i32, f64, f64) {
        let hx = high(x);
        let ix = hx & 0x7fff_ffff;
        if ix <= 0x3fe9_21fb {
            return (0, x, 0.0);
        }
        if ix < 0x4002_d97c {
            // |x| < 3π/4: n = ±1
            let sign = if hx > 0 { 1.0 } else { -1.0 };
            let mut z = x - sign * PIO2_1;
            let (y0, y1);
            if ix != 0x3ff9_21fb {
                y0 = z - sign * PIO2_1T;
                y1 = (z - y0) - sign * PIO2_1T;
            } else {
                z -= sign * PIO2_2;
                y0 = z - sign * PIO2_2T;
                y1 = (z - y0) - sign * PIO2_2T;
            }
            return (if hx > 0 { 1 } else { -1 }, y0, y1);
        }
        debug_assert!(ix <= 0x4139_21fb, "only medium arguments are reduced here");
        let t = x.abs();
        let n = (t * INVPIO2 + 0.5) as i32;
        let fn_ = f64::from(n);
        let mut r = t - fn_ * PIO2_1;
        let mut w = fn_ * PIO2_1T;
        let mut y0 = r - w;
        if !(n < 32 && ix != NPIO2_HW[(n - 1) as usize]) {
            let j = ix >> 20;
            let mut i = j - ((high(y0) >> 20) & 0x7ff);
            if i > 16 {
                let t = r;
                w = fn_ * PIO2_2;
                r = t - w;
                w = fn_ * PIO2_2T - ((t - r) - w);
                y0 = r - w;
                i = j - ((high(y0) >> 20) & 0x7ff);
                if i > 49 {
                    let t = r;
                    w = fn_ * PIO2_3;
                    r = t - w;
                    w = fn_ * PIO2_3T - ((t - r) - w);
                    y0 = r - w;
                }
            }
        }
        let y1 = (r - y0) - w;
        if hx < 0 {
            (-n, -y0, -y1)
        } else {
            (n, y0, y1)
        }
    }

    pub fn sin(x: f64) -> f64 {
        let ix = high(x) & 0x7fff_ffff;
        if ix <= 0x3fe9_21fb {
            return kernel_sin(x, 0.0, false);
        }
        let (n, y0, y1) = rem_pio2(x);
        match n & 3 {
            0 => kernel_sin(y0, y1, true),
            1 => kernel_cos(y0, y1),
            2 => -kernel_sin(y0, y1, true),
            _ => -kernel_cos(y0, y1),
        }
    }

    pub fn cos(x: f64) -> f64 {
        let ix = high(x) & 0x7fff_ffff;
        if ix <= 0x3fe9_21fb {
            return kernel_cos(x, 0.0);
        }
        let (n, y0, y1) = rem_pio2(x);
        match n & 3 {
            0 => kernel_cos(y0, y1),
            1 => -kernel_sin(y0, y1, true),
            2 => -kernel_cos(y0, y1),
            _ => kernel_sin(y0, y1, true),
        }
    }

    const PIO2_HI: f64 = f64::from_bits(0x3FF9_21FB_5444_2D18);
    const PIO2_LO: f64 = f64::from_bits(0x3C91_A626_3314_5C07);
    const PIO4_HI: f64 = f64::from_bits(0x3FE9_21FB_5444_2D18);
    const PS0: f64 = f64::from_bits(0x3FC5_5555_5555_5555);
    const PS1: f64 = f64::from_bits(0xBFD4_D612_03EB_6F7D);
    const PS2: f64 = f64::from_bits(0x3FC9_C155_0E88_4455);
    const PS3: f64 = f64::from_bits(0xBFA4_8228_B568_8F3B);
    const PS4: f64 = f64::from_bits(0x3F49_EFE0_7501_B288);
    const PS5: f64 = f64::from_bits(0x3F02_3DE1_0DFD_F709);
    const QS1: f64 = f64::from_bits(0xC003_3A27_1C8A_2D4B);
    const QS2: f64 = f64::from_bits(0x4000_2AE5_9C59_8AC8);
    const QS3: f64 = f64::from_bits(0xBFE6_066C_1B8D_0159);
    const QS4: f64 = f64::from_bits(0x3FB3_B8C5_B12E_9282);

    fn rational(t: f64) -> (f64, f64) {
        let p = t * (PS0 + t * (PS1 + t * (PS2 + t * (PS3 + t * (PS4 + t * PS5)))));
        let q = 1.0 + t * (QS1 + t * (QS2 + t * (QS3 + t * QS4)));
        (p, q)
    }

    /// fdlibm's `asin` for x in [0, 1).
    pub fn asin(x: f64) -> f64 {
        let ix = high(x) & 0x7fff_ffff;
        if ix < 0x3fe0_0000 {
            if ix < 0x3e40_0000 {
                return x;
            }
            let t = x * x;
            let (p, q) = rational(t);
            return x + x * (p / q);
        }
        let w = 1.0 - x.abs();
        let t = w * 0.5;
        let (p, q) = rational(t);
        let s = t.sqrt();
        if ix >= 0x3FEF_3333 {
            return PIO2_HI - (2.0 * (s + s * (p / q)) - PIO2_LO);
        }
        let w = with_low_zero(s);
        let c = (t - w * w) / (s + w);
        let r = p / q;
        let p = 2.0 * s * r - (PIO2_LO - 2.0 * c);
        let q = PIO4_HI - 2.0 * w;
        PIO4_HI - (p - q)
    }

    /// Lucene's own copy of fdlibm's `asin` for values in (sin 73°, 1).
    pub fn asin_near_one(a: f64) -> f64 {
        let t = (1.0 - a) * 0.5;
        let (p, q) = rational(t);
        let s = t.sqrt();
        let z = s + s * (p / q);
        PIO2_HI - ((z + z) - PIO2_LO)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // the figures are the reference node's `_geo_distance` sort values for these points (as
    // indexed: quantized)

    #[test]
    fn distances_are_lucenes_to_the_last_digit() {
        let distance = |lat: f64, lon: f64| {
            let point = crate::geo::quantize(crate::geo::GeoPoint { lat, lon });
            haversin_meters(52.3, 4.9, point.lat, point.lon)
        };
        assert_eq!(distance(52.37, 4.89), 7813.250862911952);
        assert_eq!(distance(40.71, -74.0), 5865461.490515818);
    }

    #[test]
    fn strict_math_is_reproduced_where_the_platform_rounds_otherwise() {
        // table entries where glibc's correctly rounded results differ from fdlibm's
        let steps = (SIN_COS_TABS_SIZE - 1) as f64;
        let angle = |i: f64| i * (4.0 * PIO2_HI / steps) + i * (4.0 * PIO2_LO / steps);
        assert_eq!(fdlibm::sin(angle(18.0)).to_bits(), 0x3fac428d12c0d7e3);
        assert_eq!(fdlibm::cos(angle(123.0)).to_bits(), 0x3fedbf9e4395759a);
    }
}
