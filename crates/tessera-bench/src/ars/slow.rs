//! The slowed data node of the "with load" scenarios: one process held to a fraction of one
//! core while the others run free, as the reference post stressed one node of its cluster.
//!
//! Why a CPU quota and not a competing stress process: on a small shared machine a stress
//! process would slow every node alike, while a cgroup v1 `cpu` group with
//! `cpu.cfs_quota_us / cpu.cfs_period_us` slows exactly one process (all its threads, also
//! those started later) by a known amount. Where no cgroup v1 `cpu` controller can be used the
//! process is duty-cycled instead: a thread stops it (SIGSTOP) for most of every period and lets
//! it run (SIGCONT) for the rest. Either way the slowdown ends when its guard is dropped: the
//! process goes back to the root group and the group is removed, or it is continued.

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Where cgroup v1's `cpu` controller is mounted on these machines.
pub const CGROUP_CPU_ROOT: &str = "/sys/fs/cgroup/cpu";

/// The CFS period of the group: 100 ms, the kernel's default.
const PERIOD_US: u64 = 100_000;

/// The duty cycle's period: short enough that a search sees the average speed, long enough that
/// the two signals per period cost nothing.
const DUTY_PERIOD: Duration = Duration::from_millis(100);

/// How to slow the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SlowMethod {
    /// A cgroup v1 `cpu` quota where usable, SIGSTOP/SIGCONT duty cycling otherwise
    Auto,
    /// cgroup v1 `cpu.cfs_quota_us` only
    Cgroup,
    /// SIGSTOP/SIGCONT duty cycling only
    Signals,
}

/// A slowed process; the slowdown lasts until this is dropped (or [`Slowdown::release`]d).
pub enum Slowdown {
    Cgroup(CpuGroup),
    Signals(DutyCycle),
}

impl Slowdown {
    /// Holds `pid` to `cpu` cores (e.g. 0.1 = 10% of one core) with `method`; `auto` tries the
    /// cgroup under `cgroup_root` first.
    pub fn start(pid: u32, cpu: f64, method: SlowMethod, cgroup_root: &Path) -> Result<Slowdown> {
        if !(cpu > 0.0 && cpu.is_finite()) {
            bail!("the slow node's CPU share must be positive, got {cpu}");
        }
        match method {
            SlowMethod::Cgroup => Ok(Slowdown::Cgroup(CpuGroup::create(cgroup_root, pid, cpu)?)),
            SlowMethod::Signals => Ok(Slowdown::Signals(DutyCycle::start(pid, cpu)?)),
            SlowMethod::Auto => {
                match CpuGroup::create(cgroup_root, pid, cpu) {
                    Ok(g) => Ok(Slowdown::Cgroup(g)),
                    Err(e) => {
                        eprintln!("cgroup v1 cpu quota not usable ({e:#}); duty-cycling with SIGSTOP/SIGCONT");
                        Ok(Slowdown::Signals(DutyCycle::start(pid, cpu)?))
                    }
                }
            }
        }
    }

    /// The method in words, for the report.
    pub fn describe(&self) -> String {
        match self {
            Slowdown::Cgroup(g) => format!(
                "cgroup v1 cpu quota {} µs per {PERIOD_US} µs ({})",
                g.quota_us,
                g.dir.display()
            ),
            Slowdown::Signals(d) => format!(
                "SIGSTOP/SIGCONT duty cycle: runs {} ms of every {} ms",
                d.run.as_millis(),
                DUTY_PERIOD.as_millis()
            ),
        }
    }

    /// Ends the slowdown, reporting what could not be undone.
    pub fn release(self) -> Result<()> {
        match self {
            Slowdown::Cgroup(g) => g.remove(),
            Slowdown::Signals(d) => {
                d.stop();
                Ok(())
            }
        }
    }
}

/// The CFS quota for `cpu` cores per [`PERIOD_US`] (at least the kernel's minimum, 1 ms).
pub fn quota_us(cpu: f64) -> u64 {
    ((cpu * PERIOD_US as f64).round() as u64).max(1000)
}

/// A cgroup v1 `cpu` group holding one process.
#[derive(Debug)]
pub struct CpuGroup {
    root: PathBuf,
    dir: PathBuf,
    pid: u32,
    quota_us: u64,
    removed: bool,
}

impl CpuGroup {
    /// Creates `<root>/tessera-bench-<pid>`, sets its quota and moves `pid` (all its threads) in.
    pub fn create(root: &Path, pid: u32, cpu: f64) -> Result<CpuGroup> {
        if !root.join("cpu.cfs_quota_us").exists() {
            bail!(
                "{} is not a cgroup v1 cpu controller (no cpu.cfs_quota_us)",
                root.display()
            );
        }
        let dir = root.join(format!("tessera-bench-{pid}"));
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e).with_context(|| format!("create cgroup {}", dir.display())),
        }
        let group = CpuGroup {
            root: root.to_path_buf(),
            dir,
            pid,
            quota_us: quota_us(cpu),
            removed: false,
        };
        // On error the guard's drop removes the half-made group.
        group.write("cpu.cfs_period_us", PERIOD_US)?;
        group.write("cpu.cfs_quota_us", group.quota_us)?;
        group.write("cgroup.procs", pid as u64)?;
        Ok(group)
    }

    fn write(&self, file: &str, value: u64) -> Result<()> {
        let path = self.dir.join(file);
        std::fs::write(&path, format!("{value}\n"))
            .with_context(|| format!("write {value} to {}", path.display()))
    }

    /// Moves the process back to the root group and removes the group.
    pub fn remove(mut self) -> Result<()> {
        self.removed = true;
        self.undo()
    }

    fn undo(&self) -> Result<()> {
        let procs = self.root.join("cgroup.procs");
        let back = std::fs::write(&procs, format!("{}\n", self.pid));
        // A process that has exited is no longer in the group: nothing to move.
        if let Err(e) = back {
            if process_alive(self.pid) {
                return Err(e)
                    .with_context(|| format!("move pid {} back to {}", self.pid, procs.display()));
            }
        }
        remove_group_dir(&self.dir)
    }
}

impl Drop for CpuGroup {
    fn drop(&mut self) {
        if !self.removed {
            if let Err(e) = self.undo() {
                eprintln!("warning: {e:#}");
            }
        }
    }
}

/// Removes a group directory: `rmdir` on cgroupfs (its control files go with it); a plain
/// directory standing in for the controller (as in the tests) keeps its files, so it is removed
/// with its content.
fn remove_group_dir(dir: &Path) -> Result<()> {
    match std::fs::remove_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => {
            std::fs::remove_dir_all(dir).with_context(|| format!("remove {}", dir.display()))
        }
        Err(e) => Err(e).with_context(|| format!("remove cgroup {}", dir.display())),
    }
}

fn process_alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
}

fn signal(pid: u32, sig: libc::c_int) -> std::io::Result<()> {
    // SAFETY: kill(2) has no memory effects; a wrong pid is an error return.
    if unsafe { libc::kill(pid as libc::pid_t, sig) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// A thread that stops a process for `(1 - cpu)` of every [`DUTY_PERIOD`].
#[derive(Debug)]
pub struct DutyCycle {
    pid: u32,
    run: Duration,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl DutyCycle {
    pub fn start(pid: u32, cpu: f64) -> Result<DutyCycle> {
        signal(pid, 0).with_context(|| format!("signal pid {pid}"))?;
        let (run, stopped) = duty_split(cpu);
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("slow-node".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    if signal(pid, libc::SIGSTOP).is_err() {
                        return;
                    }
                    std::thread::sleep(stopped);
                    let _ = signal(pid, libc::SIGCONT);
                    std::thread::sleep(run);
                }
            })
            .context("start the duty-cycle thread")?;
        Ok(DutyCycle {
            pid,
            run,
            stop,
            thread: Some(thread),
        })
    }

    fn stop(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = signal(self.pid, libc::SIGCONT);
    }
}

impl Drop for DutyCycle {
    fn drop(&mut self) {
        self.finish();
    }
}

/// (running, stopped) time per period for a share `cpu` of the wall clock (capped at 1: a
/// process running all the time is not slowed).
pub fn duty_split(cpu: f64) -> (Duration, Duration) {
    let run = DUTY_PERIOD.mul_f64(cpu.clamp(0.01, 1.0));
    (run, DUTY_PERIOD.saturating_sub(run))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory standing in for the cgroup v1 cpu controller.
    fn fake_root() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("cpu.cfs_quota_us"), "-1\n").unwrap();
        std::fs::write(d.path().join("cgroup.procs"), "").unwrap();
        d
    }

    #[test]
    fn quota_is_a_share_of_the_period() {
        assert_eq!(quota_us(0.1), 10_000);
        assert_eq!(quota_us(1.5), 150_000);
        assert_eq!(quota_us(0.001), 1000, "the kernel's minimum quota");
    }

    #[test]
    fn group_is_created_filled_and_removed() {
        let root = fake_root();
        let pid = std::process::id();
        let g = CpuGroup::create(root.path(), pid, 0.25).unwrap();
        let dir = root.path().join(format!("tessera-bench-{pid}"));
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        assert_eq!(read("cpu.cfs_period_us"), "100000\n");
        assert_eq!(read("cpu.cfs_quota_us"), "25000\n");
        assert_eq!(read("cgroup.procs"), format!("{pid}\n"));
        g.remove().unwrap();
        assert!(!dir.exists());
        assert_eq!(
            std::fs::read_to_string(root.path().join("cgroup.procs")).unwrap(),
            format!("{pid}\n"),
            "the process went back to the root group"
        );
    }

    #[test]
    fn dropping_the_guard_removes_the_group() {
        let root = fake_root();
        let pid = std::process::id();
        let s = Slowdown::start(pid, 0.1, SlowMethod::Cgroup, root.path()).unwrap();
        assert!(
            s.describe().contains("10000 µs per 100000 µs"),
            "{}",
            s.describe()
        );
        drop(s);
        assert!(!root.path().join(format!("tessera-bench-{pid}")).exists());
    }

    #[test]
    fn a_directory_without_the_cpu_controller_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let e = CpuGroup::create(d.path(), 1, 0.1).unwrap_err().to_string();
        assert!(e.contains("not a cgroup v1 cpu controller"), "{e}");
        assert!(Slowdown::start(1, 0.0, SlowMethod::Auto, d.path()).is_err());
    }

    #[test]
    fn duty_cycle_splits_the_period() {
        assert_eq!(
            duty_split(0.1),
            (Duration::from_millis(10), Duration::from_millis(90))
        );
        assert_eq!(duty_split(2.0), (DUTY_PERIOD, Duration::ZERO));
    }

    #[test]
    fn duty_cycle_leaves_the_process_running() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let s = Slowdown::start(
            child.id(),
            0.5,
            SlowMethod::Signals,
            Path::new("/nonexistent"),
        )
        .unwrap();
        assert!(s.describe().contains("SIGSTOP"));
        s.release().unwrap();
        let state = std::fs::read_to_string(format!("/proc/{}/stat", child.id())).unwrap();
        let state = state
            .rsplit(')')
            .next()
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap();
        assert_ne!(state, "T", "the process is continued, not left stopped");
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
