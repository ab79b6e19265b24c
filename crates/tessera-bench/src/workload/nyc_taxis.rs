//! nyc_taxis: 2015 New York taxi trips (yellow and green cabs), `dynamic: strict`.
//!
//! The generator models a trip the way the fares were computed in 2015 so the public operations
//! select realistic shares: distances are log-normal around 1.6 miles (a typical short trip is
//! 0.88 mi / $6.30) plus airport runs and a few GPS outliers beyond 50 miles; fares follow the
//! meter ($2.50 + $2.50/mile + waiting time), card payments carry tips, and `total_amount` is the
//! sum of its parts, which puts a little over half of the trips in [5, 15). Pickups are spread
//! over every day of 2015 with weekly and daily rhythms, so 2015-01-01..2015-01-21 holds ~5.7% of
//! the dropoffs.

use super::fmt;
use super::{op, DocGenerator, Operation, Workload};
use crate::rng::{cumulative, Rng};
use crate::timefmt::{epoch_seconds, push_space_datetime};

pub fn workload() -> Workload {
    let d = (50, 100);
    let mut ops: Vec<Operation> = vec![
        op(
            "default",
            include_str!("../../workloads/nyc_taxis/default.json"),
            true,
            d,
        ),
        op(
            "range",
            include_str!("../../workloads/nyc_taxis/range.json"),
            true,
            d,
        ),
        op(
            "distance_amount_agg",
            include_str!("../../workloads/nyc_taxis/distance_amount_agg.json"),
            true,
            d,
        ),
        op(
            "autohisto_agg",
            include_str!("../../workloads/nyc_taxis/autohisto_agg.json"),
            true,
            d,
        ),
        op(
            "date_histogram_agg",
            include_str!("../../workloads/nyc_taxis/date_histogram_agg.json"),
            true,
            d,
        ),
        op(
            "terms_payment_type",
            include_str!("../../workloads/nyc_taxis/extra/terms_payment_type.json"),
            false,
            d,
        ),
        op(
            "desc_sort_dropoff_datetime",
            include_str!("../../workloads/nyc_taxis/extra/desc_sort_dropoff_datetime.json"),
            false,
            d,
        ),
        op(
            "asc_sort_tip_amount",
            include_str!("../../workloads/nyc_taxis/extra/asc_sort_tip_amount.json"),
            false,
            d,
        ),
        op(
            "avg_passenger_count_aggregation",
            include_str!("../../workloads/nyc_taxis/extra/avg_passenger_count_aggregation.json"),
            false,
            d,
        ),
        op(
            "collapse_payment_type",
            include_str!("../../workloads/nyc_taxis/extra/collapse_payment_type.json"),
            false,
            d,
        ),
        op(
            "rescore_tip_amount",
            include_str!("../../workloads/nyc_taxis/extra/rescore_tip_amount.json"),
            false,
            d,
        ),
        op(
            "daily_revenue_pipelines",
            include_str!("../../workloads/nyc_taxis/extra/daily_revenue_pipelines.json"),
            false,
            d,
        ),
        op(
            "script_score_amount_per_distance",
            include_str!("../../workloads/nyc_taxis/extra/script_score_amount_per_distance.json"),
            false,
            d,
        ),
        op(
            "terms_script_payment_type",
            include_str!("../../workloads/nyc_taxis/extra/terms_script_payment_type.json"),
            false,
            d,
        ),
    ];
    ops[0].aliases = &["match-all", "match_all"];
    Workload {
        name: "nyc_taxis",
        default_index: "nyc_taxis",
        description: "2015 NYC taxi trips: numeric ranges, histograms, date histograms, geo points",
        index_body: include_str!("../../workloads/nyc_taxis/index.json"),
        operations: ops,
        focus_operation: "distance_amount_agg",
        default_docs: 1_000_000,
        make_generator: |seed, _docs| Box::new(NycTaxis::new(seed)),
    }
}

struct NycTaxis {
    seed: u64,
    year_start: i64,
    year_end: i64,
    hours: Vec<f64>,
    yellow: Vec<f64>,
    green: Vec<f64>,
}

/// Pickup hot spots (lat, lon, weight) for yellow cabs (Manhattan) and green cabs (outer boroughs).
const YELLOW_SPOTS: [(f64, f64, f64); 7] = [
    (40.7580, -73.9855, 3.0), // Midtown
    (40.7410, -73.9897, 2.0), // Flatiron
    (40.7233, -73.9990, 1.5), // SoHo
    (40.7736, -73.9566, 1.5), // Upper East Side
    (40.7870, -73.9754, 1.0), // Upper West Side
    (40.7075, -74.0113, 1.0), // Financial District
    (40.7295, -73.9965, 1.0), // Village
];
const GREEN_SPOTS: [(f64, f64, f64); 4] = [
    (40.6782, -73.9442, 2.0), // Brooklyn
    (40.7447, -73.9485, 1.5), // Long Island City
    (40.8116, -73.9465, 1.5), // Harlem
    (40.7498, -73.8930, 1.0), // Jackson Heights
];
const JFK: (f64, f64) = (40.6413, -73.7781);
const LGA: (f64, f64) = (40.7769, -73.8740);

impl NycTaxis {
    fn new(seed: u64) -> NycTaxis {
        // Trips per hour of day (NYC's well-known curve: quiet at 5am, busiest 6–10pm).
        let per_hour = [
            3.3, 2.5, 1.9, 1.4, 1.0, 0.9, 1.9, 3.5, 4.4, 4.5, 4.3, 4.5, 4.8, 4.8, 5.0, 4.9, 4.4,
            5.1, 6.2, 6.6, 6.2, 6.0, 5.8, 4.8,
        ];
        NycTaxis {
            seed,
            year_start: epoch_seconds(2015, 1, 1, 0, 0, 0),
            year_end: epoch_seconds(2016, 1, 1, 0, 0, 0),
            hours: cumulative(per_hour),
            yellow: cumulative(YELLOW_SPOTS.iter().map(|s| s.2)),
            green: cumulative(GREEN_SPOTS.iter().map(|s| s.2)),
        }
    }
}

fn jitter(r: &mut Rng, (lat, lon): (f64, f64), sigma: f64) -> (f64, f64) {
    (lat + r.normal() * sigma, lon + r.normal() * sigma * 1.3)
}

fn push_point(out: &mut Vec<u8>, (lat, lon): (f64, f64)) {
    out.push(b'[');
    fmt::float(out, lon, 6);
    out.push(b',');
    fmt::float(out, lat, 6);
    out.push(b']');
}

fn money(out: &mut Vec<u8>, key: &str, cents: i64) {
    fmt::key(out, key);
    fmt::cents(out, cents);
    out.push(b',');
}

impl DocGenerator for NycTaxis {
    fn write_doc(&self, doc: u64, out: &mut Vec<u8>) {
        let r = &mut Rng::for_doc(self.seed, doc);

        // When: any day of 2015, busier towards the weekend, daily rhythm by hour.
        let weekday_weight = [1.03, 1.07, 1.08, 0.93, 0.92, 0.97, 1.0]; // Thu..Wed (2015-01-01 = Thu)
        let day = loop {
            let d = r.below(365);
            if r.f64() * 1.08 < weekday_weight[(d % 7) as usize] {
                break d as i64;
            }
        };
        let hour = r.pick_cumulative(&self.hours) as i64;
        let pickup = self.year_start + day * 86_400 + hour * 3600 + r.below(3600) as i64;
        let weekday = (day + 3) % 7; // 0 = Monday
        let green = r.chance(0.14);

        // What kind of trip.
        let kind = r.f64();
        let (distance, airport) = if kind < 0.012 {
            (0.0, None) // cancelled / no movement
        } else if kind < 0.0125 {
            (r.range_f64(50.0, 180.0), None) // GPS glitches beyond the histogram range
        } else if kind < 0.055 && !green {
            let a = if r.chance(0.55) { JFK } else { LGA };
            let d = if a == JFK { 16.5 } else { 9.5 };
            ((d + r.normal() * 2.5).clamp(5.0, 30.0), Some(a))
        } else {
            (r.lognormal(1.7, 0.85).min(45.0), None)
        };
        let distance_c = (distance * 100.0).round() as i64;
        let distance = distance_c as f64 / 100.0;

        let speed = if airport.is_some() {
            r.lognormal(19.0, 0.25)
        } else {
            r.lognormal(10.0, 0.3)
        };
        let minutes = (distance / speed * 60.0 + 0.8 + r.exponential(1.2)).clamp(0.3, 180.0);
        let dropoff = (pickup + (minutes * 60.0) as i64).min(self.year_end - 1);

        // Rate code and fare.
        let (rate_code, fare_c) = if airport == Some(JFK) && r.chance(0.5) {
            ("2", 5200)
        } else if distance == 0.0 && r.chance(0.3) {
            ("5", (r.lognormal(25.0, 0.6) * 100.0).round() as i64) // negotiated
        } else {
            let rc = *r.weighted(&[("1", 0.993), ("3", 0.002), ("4", 0.003), ("6", 0.002)]);
            let metered = 2.5 + 2.5 * distance + 0.5 * (minutes * 0.3).floor();
            (rc, ((metered * 2.0).round() * 50.0) as i64)
        };
        let extra_c = if !(6..20).contains(&hour) {
            50
        } else if (16..20).contains(&hour) && weekday < 5 {
            100
        } else {
            0
        };
        let mta_c = if r.chance(0.985) { 50 } else { 0 };
        let improvement_c = if r.chance(0.97) { 30 } else { 0 };
        let tolls_c = if (airport.is_some() && r.chance(0.55)) || r.chance(0.01) {
            554
        } else {
            0
        };
        let payment = *r.weighted(&[("1", 0.62), ("2", 0.37), ("3", 0.007), ("4", 0.003)]);
        let tip_c = if payment == "1" && r.chance(0.93) {
            let pct = *r.weighted(&[
                (0.2, 0.45),
                (0.25, 0.15),
                (0.3, 0.1),
                (0.15, 0.15),
                (0.1, 0.15),
            ]);
            (((fare_c + extra_c) as f64 * pct * (1.0 + r.normal() * 0.05)).max(0.0)).round() as i64
        } else {
            0
        };
        let total_c = fare_c + extra_c + mta_c + improvement_c + tolls_c + tip_c;

        // Where.
        let (spots, weights): (&[(f64, f64, f64)], _) = if green {
            (&GREEN_SPOTS, &self.green)
        } else {
            (&YELLOW_SPOTS, &self.yellow)
        };
        let spot = {
            let i = r.pick_cumulative(weights);
            (spots[i].0, spots[i].1)
        };
        let city = jitter(r, spot, 0.012);
        let (pickup_loc, dropoff_loc) = match airport {
            Some(a) => {
                let a = jitter(r, a, 0.002);
                if r.chance(0.5) {
                    (a, city)
                } else {
                    (city, a)
                }
            }
            None => {
                let angle = r.f64() * std::f64::consts::TAU;
                let straight = distance / 1.3;
                let to = (
                    city.0 + straight / 69.0 * angle.cos(),
                    city.1 + straight / 52.5 * angle.sin(),
                );
                (city, to)
            }
        };

        let passengers = *r.weighted(&[
            (1i64, 0.70),
            (2, 0.14),
            (3, 0.04),
            (4, 0.02),
            (5, 0.06),
            (6, 0.035),
            (0, 0.005),
        ]);
        let vendor = if r.chance(0.45) { "1" } else { "2" };

        out.push(b'{');
        money(out, "total_amount", total_c);
        money(out, "improvement_surcharge", improvement_c);
        fmt::key(out, "pickup_location");
        push_point(out, pickup_loc);
        out.push(b',');
        fmt::key(out, "pickup_datetime");
        out.push(b'"');
        push_space_datetime(out, pickup);
        out.extend_from_slice(b"\",");
        if green {
            fmt::kv_str(out, "trip_type", if r.chance(0.97) { "1" } else { "2" });
        }
        fmt::key(out, "dropoff_datetime");
        out.push(b'"');
        push_space_datetime(out, dropoff);
        out.extend_from_slice(b"\",");
        fmt::kv_str(out, "rate_code_id", rate_code);
        money(out, "tolls_amount", tolls_c);
        fmt::key(out, "dropoff_location");
        push_point(out, dropoff_loc);
        out.push(b',');
        fmt::key(out, "passenger_count");
        fmt::int(out, passengers);
        out.push(b',');
        money(out, "fare_amount", fare_c);
        money(out, "extra", extra_c);
        money(out, "trip_distance", distance_c);
        fmt::key(out, "tip_amount");
        fmt::cents(out, tip_c);
        out.push(b',');
        if green && r.chance(0.01) {
            money(out, "ehail_fee", 0);
        }
        if r.chance(0.2) {
            let name = if vendor == "1" {
                "Creative Mobile Technologies"
            } else {
                "VeriFone Inc"
            };
            fmt::kv_str(out, "vendor_name", name);
        }
        let fwd = if vendor == "1" && r.chance(0.02) {
            "Y"
        } else {
            "N"
        };
        fmt::kv_str(out, "store_and_fwd_flag", fwd);
        fmt::kv_str(out, "payment_type", payment);
        money(out, "mta_tax", mta_c);
        fmt::kv_str(out, "cab_color", if green { "green" } else { "yellow" });
        fmt::key(out, "vendor_id");
        fmt::str(out, vendor);
        out.push(b'}');
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{assert_mapped, docs, share};
    use super::*;
    use serde_json::Value;

    fn num(d: &Value, k: &str) -> f64 {
        d[k].as_f64()
            .unwrap_or_else(|| panic!("{k} missing in {d}"))
    }

    #[test]
    fn documents_match_the_strict_mapping() {
        let w = workload();
        let props = w.index_json()["mappings"]["properties"].clone();
        for d in docs(&w, 5, 2000) {
            assert_mapped(&d, &props, "");
        }
    }

    #[test]
    fn operations_select_realistic_shares() {
        let w = workload();
        let docs = docs(&w, 1, 40_000);
        let range = share(&docs, |d| (5.0..15.0).contains(&num(d, "total_amount")));
        assert!(
            (0.45..0.70).contains(&range),
            "total_amount in [5,15): {range}"
        );
        let dist = share(&docs, |d| (0.0..50.0).contains(&num(d, "trip_distance")));
        assert!(dist > 0.99 && dist < 1.0, "trip_distance in [0,50): {dist}");
        let jan = share(&docs, |d| {
            d["dropoff_datetime"].as_str().unwrap() < "2015-01-22"
        });
        assert!(
            (0.05..0.065).contains(&jan),
            "dropoffs 2015-01-01..21: {jan}"
        );
        let card = share(&docs, |d| d["payment_type"] == "1");
        assert!((0.58..0.66).contains(&card), "card share {card}");
        let mut dists: Vec<f64> = docs.iter().map(|d| num(d, "trip_distance")).collect();
        dists.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let median = dists[dists.len() / 2];
        assert!((1.2..2.2).contains(&median), "median distance {median}");
        for d in &docs {
            let p = d["pickup_datetime"].as_str().unwrap();
            let o = d["dropoff_datetime"].as_str().unwrap();
            assert!(
                p.starts_with("2015-") && o.starts_with("2015-") && p <= o,
                "{p} {o}"
            );
            let parts = [
                "fare_amount",
                "extra",
                "mta_tax",
                "improvement_surcharge",
                "tolls_amount",
            ];
            let sum: f64 = parts.iter().map(|k| num(d, k)).sum::<f64>() + num(d, "tip_amount");
            assert!((sum - num(d, "total_amount")).abs() < 0.011, "{d}");
        }
    }
}
