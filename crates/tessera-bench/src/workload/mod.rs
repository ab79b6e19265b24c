//! Built-in workloads: for each, the index body, the operations (request bodies) with their default
//! schedule, and a deterministic synthetic corpus generator with the same schema.
//!
//! Why built in: the public corpora do not fit the machines Tessera is developed on, so the bench
//! carries generators that make the public operations meaningful at any size. The index bodies and
//! the operations from the public workloads are the files under `crates/tessera-bench/workloads/`
//! (copied from `shared/workloads/`), embedded with `include_str!`; operations added here, of the
//! same kind, live in `workloads/<workload>/extra/`. `schedules.txt` supplies the default warm-up
//! iterations, iterations and target throughput of the public operations.

use anyhow::{anyhow, bail, Result};
use serde_json::Value;

pub mod big5;
pub mod noaa;
pub mod nyc_taxis;

/// Writes one document (one JSON object, no trailing newline) of a corpus.
pub trait DocGenerator: Send + Sync {
    fn write_doc(&self, doc: u64, out: &mut Vec<u8>);
}

/// One benchmark operation: a search request body and its default schedule.
#[derive(Clone, Debug)]
pub struct Operation {
    pub name: &'static str,
    /// Other names accepted on the command line (e.g. `match-all` for `default`).
    pub aliases: &'static [&'static str],
    /// The `_search` request body.
    pub body: &'static str,
    /// True for the operations of the public workload (the files in `shared/workloads/`).
    pub public: bool,
    pub warmup_iterations: u32,
    pub iterations: u32,
    /// ops/s across all clients in the public schedule; `None` = as fast as possible.
    pub target_throughput: Option<f64>,
}

impl Operation {
    pub fn matches(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name)
    }
}

/// A workload: index, operations and corpus generator.
pub struct Workload {
    pub name: &'static str,
    pub default_index: &'static str,
    pub description: &'static str,
    /// The create-index body (settings + mappings).
    pub index_body: &'static str,
    pub operations: Vec<Operation>,
    /// The operation that the "% improvement vs % additional CPU" tables follow by default.
    pub focus_operation: &'static str,
    pub default_docs: u64,
    pub(crate) make_generator: fn(seed: u64, docs: u64) -> Box<dyn DocGenerator>,
}

/// Names of the built-in workloads.
pub const NAMES: [&str; 3] = ["nyc_taxis", "big5", "noaa"];

const SCHEDULES: &str = include_str!("../../workloads/schedules.txt");

/// The workload called `name`, or a clear error.
pub fn get(name: &str) -> Result<Workload> {
    let mut w = match name {
        "nyc_taxis" => nyc_taxis::workload(),
        "big5" => big5::workload(),
        "noaa" => noaa::workload(),
        "vectorsearch" => bail!(
            "workload vectorsearch has a command of its own (each query carries its vector and is \
             scored by recall): `tessera bench vectorsearch --target URL`; workloads of `run`: {}",
            NAMES.join(", ")
        ),
        other => bail!(
            "unknown workload {other:?}; available workloads: {} (vectorsearch: `tessera bench vectorsearch`)",
            NAMES.join(", ")
        ),
    };
    apply_schedules(&mut w, SCHEDULES);
    Ok(w)
}

/// All built-in workloads.
pub fn all() -> Vec<Workload> {
    NAMES
        .iter()
        .map(|n| get(n).expect("built-in workload"))
        .collect()
}

fn apply_schedules(w: &mut Workload, schedules: &str) {
    for line in schedules.lines() {
        let Some((wl, json)) = line.split_once(' ') else {
            continue;
        };
        if wl != w.name {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(json) else {
            continue;
        };
        let Some(name) = v["operation"].as_str() else {
            continue;
        };
        if let Some(op) = w.operations.iter_mut().find(|o| o.matches(name)) {
            if let Some(n) = v["warmup-iterations"].as_u64() {
                op.warmup_iterations = n as u32;
            }
            if let Some(n) = v["iterations"].as_u64() {
                op.iterations = n as u32;
            }
            op.target_throughput = v["target-throughput"].as_f64();
        }
    }
}

impl Workload {
    pub fn operation(&self, name: &str) -> Result<&Operation> {
        self.operations
            .iter()
            .find(|o| o.matches(name))
            .ok_or_else(|| {
                anyhow!(
                    "unknown operation {name:?} for workload {}; available: {}",
                    self.name,
                    self.operation_names().join(", ")
                )
            })
    }

    pub fn operation_names(&self) -> Vec<&'static str> {
        self.operations.iter().map(|o| o.name).collect()
    }

    /// The operations named (all of them when `names` is empty), in the order given.
    pub fn select(&self, names: &[String]) -> Result<Vec<Operation>> {
        if names.is_empty() {
            return Ok(self.operations.clone());
        }
        names.iter().map(|n| self.operation(n).cloned()).collect()
    }

    pub fn generator(&self, seed: u64, docs: u64) -> Box<dyn DocGenerator> {
        (self.make_generator)(seed, docs)
    }

    /// The index body as JSON.
    pub fn index_json(&self) -> Value {
        serde_json::from_str(self.index_body).expect("embedded index body is valid JSON")
    }
}

/// Builds an [`Operation`] with the workload's default schedule (overridden by `schedules.txt`).
pub(crate) fn op(
    name: &'static str,
    body: &'static str,
    public: bool,
    defaults: (u32, u32),
) -> Operation {
    Operation {
        name,
        aliases: &[],
        body,
        public,
        warmup_iterations: defaults.0,
        iterations: defaults.1,
        target_throughput: None,
    }
}

/// Fast number formatting into document buffers.
pub(crate) mod fmt {
    use std::io::Write as _;

    pub fn int(out: &mut Vec<u8>, v: i64) {
        let _ = write!(out, "{v}");
    }

    /// A fixed-point value with `decimals` digits: `scaled = value * 10^decimals`.
    pub fn fixed(out: &mut Vec<u8>, scaled: i64, decimals: u32) {
        if scaled < 0 {
            out.push(b'-');
        }
        let a = scaled.unsigned_abs();
        let p = 10u64.pow(decimals);
        let _ = write!(out, "{}", a / p);
        if decimals > 0 {
            out.push(b'.');
            let frac = a % p;
            let _ = write!(out, "{:0width$}", frac, width = decimals as usize);
        }
    }

    /// Money as cents → `12.30`.
    pub fn cents(out: &mut Vec<u8>, cents: i64) {
        fixed(out, cents, 2)
    }

    /// Rounds `v` to `decimals` and writes it.
    pub fn float(out: &mut Vec<u8>, v: f64, decimals: u32) {
        let scaled = (v * 10f64.powi(decimals as i32)).round() as i64;
        fixed(out, scaled, decimals)
    }

    /// `"key":` (key must not need escaping).
    pub fn key(out: &mut Vec<u8>, k: &str) {
        out.push(b'"');
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(b"\":");
    }

    /// `"value"` (value must not need escaping).
    pub fn str(out: &mut Vec<u8>, s: &str) {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    }

    pub fn kv_str(out: &mut Vec<u8>, k: &str, v: &str) {
        key(out, k);
        str(out, v);
        out.push(b',');
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    use super::*;

    /// Generates `n` documents and parses them.
    pub fn docs(w: &Workload, seed: u64, n: u64) -> Vec<Value> {
        let g = w.generator(seed, n);
        let mut buf = Vec::new();
        (0..n)
            .map(|i| {
                buf.clear();
                g.write_doc(i, &mut buf);
                serde_json::from_slice(&buf).unwrap_or_else(|e| {
                    panic!(
                        "doc {i} is not JSON ({e}): {}",
                        String::from_utf8_lossy(&buf)
                    )
                })
            })
            .collect()
    }

    /// Share of `docs` for which `f` holds.
    pub fn share(docs: &[Value], f: impl Fn(&Value) -> bool) -> f64 {
        docs.iter().filter(|d| f(d)).count() as f64 / docs.len() as f64
    }

    /// Checks every leaf field of `doc` is declared in the mapping `props` (strict mappings).
    pub fn assert_mapped(doc: &Value, props: &Value, path: &str) {
        for (k, v) in doc.as_object().expect("object") {
            let m = &props[k];
            assert!(!m.is_null(), "field {path}{k} is not in the mapping");
            if v.is_object() && m.get("properties").is_some() {
                assert_mapped(v, &m["properties"], &format!("{path}{k}."));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_and_operations_resolve() {
        for w in all() {
            assert!(!w.operations.is_empty());
            w.index_json();
            w.operation(w.focus_operation).unwrap();
            for o in &w.operations {
                let body: Value = serde_json::from_str(o.body)
                    .unwrap_or_else(|e| panic!("{}/{}: {e}", w.name, o.name));
                assert!(body.is_object());
                assert!(o.iterations > 0);
            }
        }
        let nyc = get("nyc_taxis").unwrap();
        assert_eq!(nyc.operation("match-all").unwrap().name, "default");
        let range = nyc.operation("range").unwrap();
        assert_eq!((range.warmup_iterations, range.iterations), (50, 100));
        assert_eq!(range.target_throughput, Some(0.7));
    }

    #[test]
    fn every_public_operation_is_built_in() {
        for line in SCHEDULES.lines().filter(|l| !l.trim().is_empty()) {
            let (wl, json) = line.split_once(' ').unwrap();
            let v: Value = serde_json::from_str(json).unwrap();
            let w = get(wl).unwrap();
            let op = w.operation(v["operation"].as_str().unwrap()).unwrap();
            assert!(op.public);
        }
    }

    #[test]
    fn unknown_names_are_clear_errors() {
        let e = get("nope").err().unwrap().to_string();
        assert!(
            e.contains("unknown workload") && e.contains("nyc_taxis"),
            "{e}"
        );
        let e = get("vectorsearch").err().unwrap().to_string();
        assert!(e.contains("tessera bench vectorsearch"), "{e}");
        let w = get("big5").unwrap();
        let e = w.select(&["nope".into()]).err().unwrap().to_string();
        assert!(
            e.contains("unknown operation") && e.contains("keyword-in-range"),
            "{e}"
        );
    }

    #[test]
    fn fixed_point_formatting() {
        let f = |s: i64, d: u32| {
            let mut v = Vec::new();
            fmt::fixed(&mut v, s, d);
            String::from_utf8(v).unwrap()
        };
        assert_eq!(f(630, 2), "6.30");
        assert_eq!(f(5, 2), "0.05");
        assert_eq!(f(-5, 1), "-0.5");
        assert_eq!(f(-73_985_123, 6), "-73.985123");
        assert_eq!(f(42, 0), "42");
    }
}
