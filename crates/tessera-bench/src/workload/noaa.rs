//! noaa: daily weather observations (GHCN-Daily, 2014–2016), an aggregation-heavy workload,
//! `dynamic: strict`.
//!
//! One document per station per day, shuffled. Stations are many (about one per 150 documents,
//! at least 600, so `keyword-terms` with size 500 has a long tail), spread over countries with the
//! real skew (the US holds most), each with its own climate (latitude, elevation, hemisphere) and
//! its own set of reported measurements, which makes documents sparse the way GHCN's are: most
//! stations report only precipitation, fewer report temperatures, a handful wind or evaporation,
//! and weather-type codes (`WT01`…) appear only on days with that weather. TMAX spans every range
//! bucket of the public operations (< -10 … ≥ 30).

use super::fmt;
use super::{op, DocGenerator, Operation, Workload};
use crate::rng::{cumulative, Rng};
use crate::timefmt::{days_from_civil, push_iso_seconds};

pub fn workload() -> Workload {
    let d = (10, 50);
    let p = |name, body| op(name, body, true, d);
    let x = |name, body| op(name, body, false, d);
    let ops: Vec<Operation> = vec![
        p(
            "date-histo-entire-range",
            include_str!("../../workloads/noaa/date-histo-entire-range.json"),
        ),
        p(
            "date-histo-string-significant-terms-via-map",
            include_str!("../../workloads/noaa/date-histo-string-significant-terms-via-map.json"),
        ),
        p(
            "keyword-terms",
            include_str!("../../workloads/noaa/keyword-terms.json"),
        ),
        p(
            "range-date-histo",
            include_str!("../../workloads/noaa/range-date-histo.json"),
        ),
        p(
            "range-numeric-significant-terms",
            include_str!("../../workloads/noaa/range-numeric-significant-terms.json"),
        ),
        x(
            "default",
            include_str!("../../workloads/noaa/extra/default.json"),
        ),
        x(
            "keyword-terms-low-cardinality",
            include_str!("../../workloads/noaa/extra/keyword-terms-low-cardinality.json"),
        ),
        x(
            "range-aggregation",
            include_str!("../../workloads/noaa/extra/range-aggregation.json"),
        ),
        x(
            "asc_sort_awnd",
            include_str!("../../workloads/noaa/extra/asc_sort_awnd.json"),
        ),
        x(
            "desc_sort_awnd",
            include_str!("../../workloads/noaa/extra/desc_sort_awnd.json"),
        ),
        x(
            "date-histo-geohash-box",
            include_str!("../../workloads/noaa/extra/date-histo-geohash-box.json"),
        ),
        x(
            "range_field_big_range",
            include_str!("../../workloads/noaa/extra/range_field_big_range.json"),
        ),
        x(
            "range_field_small_range",
            include_str!("../../workloads/noaa/extra/range_field_small_range.json"),
        ),
        x(
            "range_field_conjunction_big_range_small_term_query",
            include_str!("../../workloads/noaa/extra/range_field_conjunction_big_range_small_term_query.json"),
        ),
        x(
            "range_field_conjunction_small_range_small_term_query",
            include_str!("../../workloads/noaa/extra/range_field_conjunction_small_range_small_term_query.json"),
        ),
        x(
            "range_field_conjunction_small_range_big_term_query",
            include_str!("../../workloads/noaa/extra/range_field_conjunction_small_range_big_term_query.json"),
        ),
        x(
            "range_field_conjunction_big_range_big_term_query",
            include_str!("../../workloads/noaa/extra/range_field_conjunction_big_range_big_term_query.json"),
        ),
        x(
            "range_field_disjunction_small_range_small_term_query",
            include_str!("../../workloads/noaa/extra/range_field_disjunction_small_range_small_term_query.json"),
        ),
        x(
            "range_field_disjunction_big_range_small_term_query",
            include_str!("../../workloads/noaa/extra/range_field_disjunction_big_range_small_term_query.json"),
        ),
    ];
    Workload {
        name: "noaa",
        default_index: "weather-data-2016",
        description: "daily weather observations: sparse floats, many stations, aggregations",
        index_body: include_str!("../../workloads/noaa/index.json"),
        operations: ops,
        focus_operation: "range-date-histo",
        default_docs: 1_000_000,
        make_generator: |seed, docs| Box::new(Noaa::new(seed, docs)),
    }
}

/// (code, name, lat, lon, spread in degrees, weight)
const COUNTRIES: [(&str, &str, f64, f64, f64, f64); 24] = [
    ("US", "United States", 39.0, -97.0, 9.0, 0.55),
    ("CA", "Canada", 52.0, -100.0, 8.0, 0.07),
    ("AU", "Australia", -27.0, 134.0, 8.0, 0.06),
    ("MX", "Mexico", 23.0, -102.0, 4.0, 0.03),
    ("BR", "Brazil", -12.0, -52.0, 8.0, 0.03),
    ("RS", "Russia", 58.0, 70.0, 12.0, 0.03),
    ("GM", "Germany", 51.0, 10.0, 2.0, 0.02),
    ("SW", "Sweden", 62.0, 16.0, 4.0, 0.02),
    ("IN", "India", 22.0, 79.0, 6.0, 0.02),
    ("CH", "China", 34.0, 104.0, 8.0, 0.02),
    ("JA", "Japan", 36.0, 138.0, 3.0, 0.015),
    ("SF", "South Africa", -29.0, 25.0, 4.0, 0.015),
    ("AR", "Argentina", -36.0, -64.0, 6.0, 0.015),
    ("NO", "Norway", 64.0, 12.0, 4.0, 0.01),
    ("FI", "Finland", 63.0, 26.0, 3.0, 0.01),
    ("UK", "United Kingdom", 54.0, -2.0, 2.0, 0.01),
    ("FR", "France", 46.0, 2.0, 3.0, 0.01),
    ("SP", "Spain", 40.0, -4.0, 3.0, 0.01),
    ("IT", "Italy", 42.5, 12.5, 3.0, 0.008),
    ("KZ", "Kazakhstan", 48.0, 67.0, 5.0, 0.008),
    ("NZ", "New Zealand", -41.0, 174.0, 3.0, 0.006),
    ("AE", "United Arab Emirates", 24.5, 54.5, 1.0, 0.003),
    ("AY", "Antarctica", -75.0, 0.0, 8.0, 0.003),
    ("GL", "Greenland", 70.0, -42.0, 5.0, 0.003),
];

const US_STATES: [(&str, &str); 12] = [
    ("CA", "California"),
    ("TX", "Texas"),
    ("CO", "Colorado"),
    ("NY", "New York"),
    ("MN", "Minnesota"),
    ("FL", "Florida"),
    ("WA", "Washington"),
    ("IL", "Illinois"),
    ("NC", "North Carolina"),
    ("AZ", "Arizona"),
    ("MT", "Montana"),
    ("PA", "Pennsylvania"),
];

const PLACES: [&str; 24] = [
    "SPRINGFIELD",
    "RIVERSIDE",
    "FAIRVIEW",
    "GREENVILLE",
    "LAKEWOOD",
    "MILLBROOK",
    "OAKDALE",
    "PINE RIDGE",
    "CEDAR FALLS",
    "ELM GROVE",
    "SHARJAH",
    "KIRUNA",
    "ALICE SPRINGS",
    "MAPLE CREEK",
    "BIRCH HILL",
    "STONY POINT",
    "EAGLE PASS",
    "WILLOW BEND",
    "ASHFORD",
    "NORTHFIELD",
    "WESTPORT",
    "HIGHLAND",
    "CLEARWATER",
    "BLUE MOUNTAIN",
];
const SUFFIXES: [&str; 8] = [
    "AIRPORT", "2 NW", "1.5 SE", "CITY", "DAM", "EXP STN", "RIVER", "INTL AP",
];

const WT_CODES: [&str; 13] = [
    "WT01", "WT02", "WT03", "WT04", "WT05", "WT06", "WT07", "WT08", "WT09", "WT10", "WT11", "WT17",
    "WT18",
];

/// Bit flags of the measurements a station reports.
const PRCP: u32 = 1;
const TEMP: u32 = 2;
const TAVG: u32 = 4;
const TOBS: u32 = 8;
const SNOW: u32 = 16;
const WIND: u32 = 32;
const EVAP: u32 = 64;
const WTYPE: u32 = 128;
const MDPR: u32 = 256;

struct Station {
    id: String,
    name: String,
    country: usize,
    state: Option<usize>,
    gsn: bool,
    hcn_crn: Option<&'static str>,
    wmo_id: Option<u32>,
    elevation: f64,
    lat: f64,
    lon: f64,
    reports: u32,
    /// Annual mean temperature and seasonal amplitude (°C).
    mean_t: f64,
    amplitude_t: f64,
}

struct Noaa {
    seed: u64,
    first_day: i64,
    stations: Vec<Station>,
}

const DAYS: i64 = 1096; // 2014-01-01 ..= 2016-12-31

impl Noaa {
    fn new(seed: u64, docs: u64) -> Noaa {
        let n = (docs.div_ceil(150)).clamp(600, 200_000) as usize;
        let mut r = Rng::new(seed ^ 0x0A0A_A000);
        let country_weights = cumulative(COUNTRIES.iter().map(|c| c.5));
        let stations = (0..n)
            .map(|i| {
                let country = r.pick_cumulative(&country_weights);
                let (code, _, lat0, lon0, spread, _) = COUNTRIES[country];
                let lat = (lat0 + r.normal() * spread * 0.6).clamp(-89.0, 89.0);
                let lon = wrap_longitude(lon0 + r.normal() * spread);
                let elevation = if r.chance(0.05) {
                    r.range_f64(1500.0, 4000.0)
                } else {
                    r.lognormal(250.0, 1.0)
                };
                let network = *r.weighted(&[('1', 0.45), ('C', 0.35), ('W', 0.1), ('0', 0.1)]);
                let mut reports = PRCP;
                if r.chance(0.45) {
                    reports |= TEMP;
                    if r.chance(0.3) {
                        reports |= TAVG;
                    }
                    if r.chance(0.6) {
                        reports |= TOBS;
                    }
                }
                if lat.abs() > 30.0 && r.chance(0.6) {
                    reports |= SNOW;
                }
                if r.chance(0.08) {
                    reports |= WIND;
                }
                if r.chance(0.03) {
                    reports |= EVAP;
                }
                if r.chance(0.2) {
                    reports |= WTYPE;
                }
                if r.chance(0.1) {
                    reports |= MDPR;
                }
                let alat = lat.abs();
                Station {
                    id: format!("{code}{network}{i:08}"),
                    name: format!("{} {}", r.pick(&PLACES), r.pick(&SUFFIXES)),
                    country,
                    state: (code == "US").then(|| r.below(US_STATES.len() as u64) as usize),
                    gsn: r.chance(0.04),
                    hcn_crn: if code == "US" && r.chance(0.06) {
                        Some(if r.chance(0.8) { "HCN" } else { "CRN" })
                    } else {
                        None
                    },
                    wmo_id: r.chance(0.08).then(|| 10_000 + r.below(89_999) as u32),
                    elevation,
                    lat,
                    lon,
                    reports,
                    mean_t: 29.0 - 0.6 * (alat - 12.0).max(0.0) - 0.0065 * elevation,
                    amplitude_t: (1.5 + 0.38 * alat).min(22.0),
                }
            })
            .collect();
        Noaa {
            seed,
            first_day: days_from_civil(2014, 1, 1),
            stations,
        }
    }
}

/// A longitude brought into [-180, 180): stations scattered around a country near the
/// antimeridian (New Zealand) would otherwise get longitudes OpenSearch rejects.
fn wrap_longitude(lon: f64) -> f64 {
    (lon + 180.0).rem_euclid(360.0) - 180.0
}

fn float_kv(out: &mut Vec<u8>, key: &str, v: f64) {
    fmt::key(out, key);
    fmt::float(out, v, 1);
    out.push(b',');
}

impl DocGenerator for Noaa {
    fn write_doc(&self, doc: u64, out: &mut Vec<u8>) {
        let r = &mut Rng::for_doc(self.seed, doc);
        let n = self.stations.len() as u64;
        let s = &self.stations[(doc % n) as usize];
        // A station's k-th document falls on a distinct day (397 is coprime to 1096).
        let k = (doc / n) as i64;
        let day = (k * 397 + (doc % n) as i64 * 131).rem_euclid(DAYS);
        let days = self.first_day + day;
        let (_, m, d) = crate::timefmt::civil_from_days(days);
        let doy = ((m - 1) * 30 + d) as f64;
        let season = ((doy - 200.0) / 365.0 * std::f64::consts::TAU).cos();
        let season = if s.lat < 0.0 { -season } else { season };
        let t = s.mean_t + s.amplitude_t * season + r.normal() * 3.5;
        let dtr = 7.0 + r.f64() * 7.0;
        let (tmax, tmin) = (t + dtr / 2.0, t - dtr / 2.0);

        out.extend_from_slice(b"{\"date\":\"");
        push_iso_seconds(out, days * 86_400);
        out.extend_from_slice(b"\",");
        if s.reports & TEMP != 0 {
            float_kv(out, "TMAX", tmax);
            float_kv(out, "TMIN", tmin);
            if s.reports & TAVG != 0 {
                float_kv(out, "TAVG", t);
            }
            if s.reports & TOBS != 0 {
                float_kv(out, "TOBS", t + r.normal() * 2.0);
            }
            out.extend_from_slice(b"\"TRANGE\":{\"gte\":");
            fmt::float(out, tmin, 1);
            out.extend_from_slice(b",\"lte\":");
            fmt::float(out, tmax, 1);
            out.extend_from_slice(b"},");
        }
        let wet = r.chance(0.3);
        let prcp = if wet { r.exponential(6.0) } else { 0.0 };
        if s.reports & PRCP != 0 && !(s.reports & MDPR != 0 && r.chance(0.05)) {
            float_kv(out, "PRCP", prcp);
        } else if s.reports & MDPR != 0 {
            float_kv(out, "MDPR", prcp * 2.0);
            fmt::kv_str(out, "DAPR", "2");
        }
        if s.reports & SNOW != 0 {
            let snow = if wet && tmax < 1.0 {
                (prcp * 10.0).round() as i64
            } else {
                0
            };
            fmt::key(out, "SNOW");
            out.push(b'"');
            fmt::int(out, snow);
            out.extend_from_slice(b"\",");
            if r.chance(0.7) {
                let depth = if tmax < 0.0 {
                    (r.lognormal(80.0, 0.8)) as i64
                } else {
                    0
                };
                fmt::key(out, "SNWD");
                out.push(b'"');
                fmt::int(out, depth);
                out.extend_from_slice(b"\",");
            }
        }
        if s.reports & WIND != 0 {
            let awnd = r.lognormal(3.5, 0.45);
            float_kv(out, "AWND", awnd);
            float_kv(out, "WSF2", awnd * 2.2);
            float_kv(out, "WSF5", awnd * 2.8);
            fmt::kv_str(
                out,
                "WDF2",
                ["90", "180", "270", "360"][r.below(4) as usize],
            );
        }
        if s.reports & EVAP != 0 && tmax > 0.0 {
            float_kv(out, "EVAP", r.lognormal(3.0, 0.5));
        }
        if s.reports & WTYPE != 0 {
            for (i, code) in WT_CODES.iter().enumerate() {
                let p = if i == 0 { 0.08 } else { 0.015 };
                if r.chance(p) {
                    fmt::kv_str(out, code, "1");
                }
            }
        }
        let (code, country, ..) = COUNTRIES[s.country];
        out.extend_from_slice(b"\"station\":{");
        fmt::kv_str(out, "id", &s.id);
        fmt::kv_str(out, "name", &s.name);
        fmt::kv_str(out, "country", country);
        fmt::kv_str(out, "country_code", code);
        if let Some(st) = s.state {
            fmt::kv_str(out, "state", US_STATES[st].1);
            fmt::kv_str(out, "state_code", US_STATES[st].0);
        }
        if s.gsn {
            fmt::kv_str(out, "gsn_flag", "GSN");
        }
        if let Some(f) = s.hcn_crn {
            fmt::kv_str(out, "hcn_crn_flag", f);
        }
        if let Some(w) = s.wmo_id {
            fmt::key(out, "wmo_id");
            out.push(b'"');
            fmt::int(out, w as i64);
            out.extend_from_slice(b"\",");
        }
        float_kv(out, "elevation", s.elevation);
        out.extend_from_slice(b"\"location\":{\"lat\":");
        fmt::float(out, s.lat, 4);
        out.extend_from_slice(b",\"lon\":");
        fmt::float(out, s.lon, 4);
        out.extend_from_slice(b"}}}");
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{assert_mapped, docs, share};
    use super::*;
    use std::collections::{HashMap, HashSet};

    #[test]
    fn longitudes_wrap_around_the_antimeridian() {
        assert_eq!(wrap_longitude(174.0), 174.0);
        assert_eq!(wrap_longitude(181.5), -178.5);
        assert_eq!(wrap_longitude(-181.0), 179.0);
        assert_eq!(wrap_longitude(-180.0), -180.0);
        assert_eq!(wrap_longitude(180.0), -180.0);
    }

    #[test]
    fn documents_are_sparse_mapped_and_spread() {
        let w = workload();
        let props = w.index_json()["mappings"]["properties"].clone();
        let n = 20_000;
        let docs = docs(&w, 11, n);
        for d in docs.iter().take(2000) {
            assert_mapped(d, &props, "");
        }
        let stations: HashSet<&str> = docs
            .iter()
            .map(|d| d["station"]["id"].as_str().unwrap())
            .collect();
        assert!(stations.len() >= 600, "stations {}", stations.len());
        let mut seen = HashSet::new();
        for d in &docs {
            let key = (
                d["station"]["id"].as_str().unwrap(),
                d["date"].as_str().unwrap(),
            );
            assert!(seen.insert(key), "duplicate station-day {key:?}");
            let date = d["date"].as_str().unwrap();
            assert!(("2014-01-01".."2017-01-01").contains(&date), "{date}");
        }
        let with_tmax: Vec<f64> = docs.iter().filter_map(|d| d["TMAX"].as_f64()).collect();
        let tshare = with_tmax.len() as f64 / n as f64;
        assert!((0.3..0.6).contains(&tshare), "TMAX present in {tshare}");
        let mut buckets: HashMap<i32, usize> = HashMap::new();
        for t in &with_tmax {
            let b = if *t < -10.0 {
                0
            } else if *t >= 30.0 {
                5
            } else {
                ((*t + 10.0) / 10.0) as i32 + 1
            };
            *buckets.entry(b).or_default() += 1;
        }
        for b in 0..=5 {
            assert!(
                buckets.get(&b).copied().unwrap_or(0) > 50,
                "TMAX bucket {b}: {buckets:?}"
            );
        }
        for d in &docs {
            let location = &d["station"]["location"];
            let (lat, lon) = (
                location["lat"].as_f64().unwrap(),
                location["lon"].as_f64().unwrap(),
            );
            assert!((-90.0..=90.0).contains(&lat), "latitude {lat}");
            assert!((-180.0..=180.0).contains(&lon), "longitude {lon}");
        }
        let us = share(&docs, |d| d["station"]["country_code"] == "US");
        assert!((0.45..0.65).contains(&us), "US share {us}");
        let wt = share(&docs, |d| d.get("WT01").is_some());
        assert!(wt > 0.0 && wt < 0.05, "WT01 share {wt}");
    }
}
