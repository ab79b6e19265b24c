//! `tessera bench ars` end to end, kept small: 2 data nodes and a coordinating node, a tiny
//! corpus, one 2-second lap per run, no load and one slowed node, ARS off and on. It checks that
//! every run measured searches without errors, that the report has the post's tables, and that
//! no process of the benchmark's cluster outlives it. Skipped when `etcd` is not installed.

use std::path::Path;
use std::process::Command;

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|dir| dir.join(program).is_file()))
}

/// Processes whose command line mentions `needle` (the cluster's work directory).
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(needle) {
            found.push(cmdline);
        }
    }
    found
}

#[test]
fn ars_bench_runs_the_matrix_and_cleans_up() {
    if !on_path("etcd") {
        eprintln!("skipped: etcd is not on PATH (scripts/system-deps installs it)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("cluster");
    let out = dir.path().join("results");
    let output = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args([
            "bench",
            "ars",
            "--data-nodes",
            "2",
            "--docs",
            "2000",
            "--clients",
            "4",
        ])
        .args(["--laps", "1", "--lap-seconds", "2", "--warmup-seconds", "1"])
        .args(["--replicas", "1", "--load", "none,slow", "--ars", "off,on"])
        .arg("--work-dir")
        .arg(&work)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );

    let results: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    let runs = results["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4, "{results}");
    for run in runs {
        let total = &run["measured"]["total"];
        assert!(total["requests"].as_u64().unwrap() > 0, "{run}");
        assert_eq!(total["errors"], 0, "{run}");
        let tasks = run["search_tasks"].as_array().unwrap();
        assert!(
            tasks.iter().any(|t| t["completed"].as_u64() > Some(0)),
            "{run}"
        );
    }
    assert!(runs[2]["slow_method"].is_string(), "{}", runs[2]);
    for section in [
        "## Summary: ARS off vs on",
        "## Target check",
        "## Completed search tasks per node",
    ] {
        assert!(stdout.contains(section), "{section} missing:\n{stdout}");
    }
    assert!(Path::new(&out.join("report.md")).is_file());
    assert!(out.join("charts/throughput.svg").is_file());
    assert!(!work.exists(), "the work directory is removed");
    let left = processes_mentioning(&work.display().to_string());
    assert!(
        left.is_empty(),
        "processes outlived the benchmark: {left:?}"
    );
}
