//! The sweep behind `run` and `matrix`: slice settings × client counts × targets, changing the
//! cluster settings between cells exactly the same way on every target, as in the concurrent
//! segment search posts.
//!
//! Settings are `search.concurrent_segment_search.mode` (none|all|auto) and
//! `search.concurrent.max_slice_count`, set with `PUT /_cluster/settings` (persistent); an engine
//! that only knows the older boolean `search.concurrent_segment_search.enabled` gets that instead.
//! Targets are the innermost loop, so two engines are measured side by side under the same
//! conditions, and the original settings are restored at the end (also after Ctrl-C or an error).
//! The results file is rewritten after every cell, so a crash loses at most one cell.

use crate::client::Client;
use crate::results::{BenchResult, TargetInfo};
use crate::runner::{self, CellOutcome, CellRun, CellSpec, OnError, OpPlan};
use crate::timefmt;
use anyhow::{bail, Context, Result};
use serde_json::{json, Map, Value};
use std::path::Path;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub const MODE: &str = "search.concurrent_segment_search.mode";
pub const ENABLED: &str = "search.concurrent_segment_search.enabled";
pub const MAX_SLICES: &str = "search.concurrent.max_slice_count";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    None,
    All,
    Auto,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::None => "none",
            Mode::All => "all",
            Mode::Auto => "auto",
        }
    }
}

/// One column of the reference tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SliceSetting {
    /// Leave the cluster settings as they are.
    Keep,
    /// `slices: None` = the engine's default slice count (`max_slice_count` 0).
    Set { mode: Mode, slices: Option<u32> },
}

impl FromStr for SliceSetting {
    type Err = anyhow::Error;

    /// `keep`, `none`, `all`, `auto`, `<n>` (= all with n slices), `all:<n>`, `auto:<n>`.
    fn from_str(s: &str) -> Result<SliceSetting> {
        let s = s.trim().to_ascii_lowercase();
        let slices = |n: &str| -> Result<u32> {
            n.trim()
                .parse::<u32>()
                .ok()
                .filter(|n| *n > 0)
                .with_context(|| format!("invalid slice count {n:?} in setting {s:?}"))
        };
        Ok(match s.as_str() {
            "keep" | "as-is" | "current" => SliceSetting::Keep,
            "none" | "off" | "disabled" => SliceSetting::Set {
                mode: Mode::None,
                slices: None,
            },
            "all" | "on" | "default" => SliceSetting::Set {
                mode: Mode::All,
                slices: None,
            },
            "auto" => SliceSetting::Set {
                mode: Mode::Auto,
                slices: None,
            },
            _ => {
                let (mode, n) = match s.split_once([':', '=']) {
                    Some(("all" | "slices", n)) => (Mode::All, n),
                    Some(("auto", n)) => (Mode::Auto, n),
                    Some(_) => bail!(
                        "unknown slice setting {s:?}; use none, all, auto, <n>, all:<n>, auto:<n> or keep"
                    ),
                    None => (Mode::All, s.as_str()),
                };
                let n = slices(n).map_err(|_| {
                    anyhow::anyhow!(
                        "unknown slice setting {s:?}; use none, all, auto, <n>, all:<n>, auto:<n> or keep"
                    )
                })?;
                SliceSetting::Set {
                    mode,
                    slices: Some(n),
                }
            }
        })
    }
}

impl SliceSetting {
    /// The label used in results and table headers.
    pub fn label(&self) -> String {
        match self {
            SliceSetting::Keep => "as is".into(),
            SliceSetting::Set {
                mode: Mode::None, ..
            } => "none".into(),
            SliceSetting::Set {
                mode: Mode::All,
                slices: None,
            } => "all".into(),
            SliceSetting::Set {
                mode: Mode::All,
                slices: Some(n),
            } => format!("{n} slices"),
            SliceSetting::Set {
                mode: Mode::Auto,
                slices: None,
            } => "auto".into(),
            SliceSetting::Set {
                mode: Mode::Auto,
                slices: Some(n),
            } => format!("auto, {n} slices"),
        }
    }

    /// The `PUT /_cluster/settings` body (None for `Keep`).
    pub fn body(&self) -> Option<Value> {
        let SliceSetting::Set { mode, slices } = self else {
            return None;
        };
        let mut p = Map::new();
        p.insert(MODE.into(), json!(mode.name()));
        p.insert(
            MAX_SLICES.into(),
            if *mode == Mode::None {
                Value::Null
            } else {
                json!(slices.unwrap_or(0))
            },
        );
        Some(json!({ "persistent": p }))
    }

    /// The same setting for engines that only know `search.concurrent_segment_search.enabled`.
    fn legacy_body(&self) -> Result<Option<Value>> {
        let SliceSetting::Set { mode, slices } = self else {
            return Ok(None);
        };
        let enabled = match mode {
            Mode::None => false,
            Mode::All => true,
            Mode::Auto => bail!(
                "the target does not accept {MODE}, and the older {ENABLED} cannot express auto"
            ),
        };
        let mut p = Map::new();
        p.insert(ENABLED.into(), json!(enabled));
        p.insert(
            MAX_SLICES.into(),
            if enabled {
                json!(slices.unwrap_or(0))
            } else {
                Value::Null
            },
        );
        Ok(Some(json!({ "persistent": p })))
    }
}

/// The value of a dotted setting in a settings object, flat (`"a.b": 1`) or nested
/// (`{"a": {"b": 1}}`); null when absent.
pub fn setting_value(settings: &Value, key: &str) -> Value {
    if let Some(v) = settings.get(key) {
        return v.clone();
    }
    let mut cur = settings;
    for part in key.split('.') {
        match cur.get(part) {
            Some(v) => cur = v,
            None => return Value::Null,
        }
    }
    cur.clone()
}

/// Reads the persistent values of the slice settings (to restore them later).
pub fn current_settings(client: &Client) -> Result<Map<String, Value>> {
    let v = client.get_json("/_cluster/settings?flat_settings=true")?;
    let mut out = Map::new();
    for key in [MODE, ENABLED, MAX_SLICES] {
        out.insert(key.into(), setting_value(&v["persistent"], key));
    }
    Ok(out)
}

/// Applies `setting` on `client`; returns the body that was sent (null for `Keep`).
pub fn apply(client: &Client, setting: &SliceSetting) -> Result<Value> {
    let Some(body) = setting.body() else {
        return Ok(Value::Null);
    };
    let sent = match client.json("PUT", "/_cluster/settings", Some(&body)) {
        Ok(_) => body,
        Err(e) if format!("{e:#}").contains(MODE) => {
            let legacy = setting.legacy_body()?.expect("a Set setting");
            client
                .json("PUT", "/_cluster/settings", Some(&legacy))
                .with_context(|| format!("set {} on {}", setting.label(), client.base()))?;
            legacy
        }
        Err(e) => return Err(e.context(format!("set {} on {}", setting.label(), client.base()))),
    };
    // Check the engine took the values.
    let now = client.get_json("/_cluster/settings?flat_settings=true")?;
    for (k, want) in sent["persistent"].as_object().expect("object") {
        let got = &setting_value(&now["persistent"], k);
        let same = match (want, got) {
            (Value::Null, g) => g.is_null(),
            (w, Value::String(g)) => w.to_string().trim_matches('"') == g,
            (w, g) => w == g,
        };
        if !same {
            bail!(
                "{} did not keep {k} = {want} (it reports {got})",
                client.base()
            );
        }
    }
    Ok(sent)
}

/// Restores settings read by [`current_settings`].
pub fn restore(client: &Client, original: &Map<String, Value>, sent_keys: &[String]) -> Result<()> {
    let mut p = Map::new();
    for k in sent_keys {
        p.insert(k.clone(), original.get(k).cloned().unwrap_or(Value::Null));
    }
    if p.is_empty() {
        return Ok(());
    }
    client.json(
        "PUT",
        "/_cluster/settings",
        Some(&json!({ "persistent": p })),
    )?;
    Ok(())
}

/// A target with its client.
pub struct Target {
    pub info: TargetInfo,
    pub client: Client,
}

/// What to sweep.
pub struct Sweep<'a> {
    pub index: &'a str,
    pub targets: &'a [Target],
    pub settings: &'a [SliceSetting],
    pub clients: &'a [usize],
    pub plans: &'a [OpPlan],
    pub sample_interval: Duration,
    pub on_error: OnError,
    /// Where `results.json` and `raw/*.csv` go.
    pub out_dir: &'a Path,
    pub raw: bool,
    /// Several targets take turns operation by operation (see [`run_interleaved`]).
    pub interleave: bool,
}

/// Runs the sweep, filling `result.cells`; returns why it stopped early, if it did.
pub fn sweep(
    s: &Sweep<'_>,
    result: &mut BenchResult,
    stop: &Arc<AtomicBool>,
) -> Result<Option<String>> {
    let originals: Vec<Map<String, Value>> = if s.settings.iter().any(|x| *x != SliceSetting::Keep)
    {
        s.targets
            .iter()
            .map(|t| current_settings(&t.client))
            .collect::<Result<_>>()?
    } else {
        vec![Map::new(); s.targets.len()]
    };
    let mut touched: Vec<Vec<String>> = vec![Vec::new(); s.targets.len()];
    let outcome = sweep_cells(s, result, stop, &mut touched);
    let mut restore_error = None;
    for ((t, orig), keys) in s.targets.iter().zip(&originals).zip(&touched) {
        if let Err(e) = restore(&t.client, orig, keys) {
            eprintln!(
                "warning: could not restore the slice settings of {}: {e:#}",
                t.info.label
            );
            restore_error = Some(e);
        }
    }
    let stopped = outcome?;
    if let (None, Some(e)) = (&stopped, restore_error) {
        return Err(e.context("restore cluster settings"));
    }
    Ok(stopped)
}

fn file_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn sweep_cells(
    s: &Sweep<'_>,
    result: &mut BenchResult,
    stop: &Arc<AtomicBool>,
    touched: &mut [Vec<String>],
) -> Result<Option<String>> {
    let total = s.settings.len() * s.clients.len() * s.targets.len();
    let mut n = 0;
    for setting in s.settings {
        let mut sent = Vec::new();
        for (i, t) in s.targets.iter().enumerate() {
            let body = apply(&t.client, setting)?;
            if let Some(p) = body["persistent"].as_object() {
                for k in p.keys() {
                    if !touched[i].contains(k) {
                        touched[i].push(k.clone());
                    }
                }
            }
            sent.push(body);
        }
        let label = setting.label();
        for &clients in s.clients {
            let specs: Vec<CellSpec<'_>> = s
                .targets
                .iter()
                .enumerate()
                .map(|(i, t)| CellSpec {
                    target_label: &t.info.label,
                    client: &t.client,
                    index: s.index,
                    setting: &label,
                    cluster_settings: sent[i].clone(),
                    clients,
                    plans: s.plans,
                    sample_interval: s.sample_interval,
                    on_error: s.on_error,
                    processors: t.info.available_processors,
                })
                .collect();
            let outcomes = if s.interleave && specs.len() > 1 {
                n += specs.len();
                eprintln!(
                    "[{n}/{total}] {} interleaved · slices: {} · {clients} client{}",
                    specs
                        .iter()
                        .map(|spec| spec.target_label)
                        .collect::<Vec<_>>()
                        .join(", "),
                    setting.label(),
                    if clients == 1 { "" } else { "s" }
                );
                run_interleaved(&specs, stop)
            } else {
                let mut outcomes = Vec::new();
                for spec in &specs {
                    if stop.load(Ordering::Relaxed) {
                        return Ok(Some("interrupted".into()));
                    }
                    n += 1;
                    eprintln!(
                        "[{n}/{total}] {} · slices: {} · {clients} client{}",
                        spec.target_label,
                        setting.label(),
                        if clients == 1 { "" } else { "s" }
                    );
                    let out = runner::run_cell(spec, stop);
                    let aborted = out.abort.is_some();
                    outcomes.push(out);
                    if aborted {
                        break;
                    }
                }
                outcomes
            };
            for out in outcomes {
                if s.raw && !out.raw.is_empty() {
                    let dir = s.out_dir.join("raw");
                    std::fs::create_dir_all(&dir)?;
                    let name = format!(
                        "{}-{}-c{clients}.csv",
                        file_part(&out.cell.target),
                        file_part(&setting.label())
                    );
                    runner::write_raw_csv(&dir.join(name), &out.raw)?;
                }
                result.cells.push(out.cell);
                result.finished_at = timefmt::rfc3339_millis(timefmt::now_millis());
                result.save(s.out_dir)?;
                if let Some(a) = out.abort {
                    return Ok(Some(a));
                }
            }
            if stop.load(Ordering::Relaxed) {
                return Ok(Some("interrupted".into()));
            }
        }
    }
    Ok(None)
}

/// The cells of several targets run side by side, taking turns operation by operation (the
/// first target of each turn alternating), so that drift on a shared machine falls on every
/// target alike. Each cell's sampler runs throughout, so its system metrics span the whole run
/// (per-operation metrics stay each operation's own).
fn run_interleaved(specs: &[CellSpec<'_>], stop: &Arc<AtomicBool>) -> Vec<CellOutcome> {
    let mut runs: Vec<CellRun<'_>> = specs.iter().map(CellRun::start).collect();
    'operations: for (k, plan) in specs[0].plans.iter().enumerate() {
        for i in turn_order(runs.len(), k) {
            if stop.load(Ordering::Relaxed) || !runs[i].run(plan, stop) {
                break 'operations;
            }
        }
    }
    runs.into_iter().map(|run| run.finish(stop)).collect()
}

/// Which target goes first in the `k`-th turn: forwards, then backwards.
fn turn_order(targets: usize, k: usize) -> Vec<usize> {
    if k.is_multiple_of(2) {
        (0..targets).collect()
    } else {
        (0..targets).rev().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaved_turns_alternate_which_target_goes_first() {
        assert_eq!(turn_order(2, 0), [0, 1]);
        assert_eq!(turn_order(2, 1), [1, 0]);
        assert_eq!(turn_order(3, 2), [0, 1, 2]);
        assert_eq!(turn_order(3, 3), [2, 1, 0]);
    }

    #[test]
    fn settings_parse_and_label() {
        let p = |s: &str| s.parse::<SliceSetting>().unwrap();
        assert_eq!(
            p("none"),
            SliceSetting::Set {
                mode: Mode::None,
                slices: None
            }
        );
        assert_eq!(
            p("4"),
            SliceSetting::Set {
                mode: Mode::All,
                slices: Some(4)
            }
        );
        assert_eq!(
            p("all:2"),
            SliceSetting::Set {
                mode: Mode::All,
                slices: Some(2)
            }
        );
        assert_eq!(
            p("auto"),
            SliceSetting::Set {
                mode: Mode::Auto,
                slices: None
            }
        );
        assert_eq!(p("Auto:8").label(), "auto, 8 slices");
        assert_eq!(p("2").label(), "2 slices");
        assert_eq!(p("all").label(), "all");
        assert_eq!(p("keep"), SliceSetting::Keep);
        assert!("0".parse::<SliceSetting>().is_err());
        assert!("fast"
            .parse::<SliceSetting>()
            .unwrap_err()
            .to_string()
            .contains("unknown slice setting"));
    }

    #[test]
    fn bodies_follow_opensearch_settings() {
        let b = "2".parse::<SliceSetting>().unwrap().body().unwrap();
        assert_eq!(b, json!({"persistent": {MODE: "all", MAX_SLICES: 2}}));
        let b = "none".parse::<SliceSetting>().unwrap().body().unwrap();
        assert_eq!(b, json!({"persistent": {MODE: "none", MAX_SLICES: null}}));
        let b = "auto".parse::<SliceSetting>().unwrap().body().unwrap();
        assert_eq!(b["persistent"][MAX_SLICES], 0);
        let legacy = "4"
            .parse::<SliceSetting>()
            .unwrap()
            .legacy_body()
            .unwrap()
            .unwrap();
        assert_eq!(
            legacy,
            json!({"persistent": {ENABLED: true, MAX_SLICES: 4}})
        );
        assert!("auto"
            .parse::<SliceSetting>()
            .unwrap()
            .legacy_body()
            .is_err());
        assert!(SliceSetting::Keep.body().is_none());
    }

    #[test]
    fn settings_are_found_flat_or_nested() {
        let flat = json!({MODE: "all"});
        assert_eq!(setting_value(&flat, MODE), "all");
        let nested = json!({"search": {"concurrent": {"max_slice_count": "2"}}});
        assert_eq!(setting_value(&nested, MAX_SLICES), "2");
        assert!(setting_value(&nested, MODE).is_null());
    }
}
