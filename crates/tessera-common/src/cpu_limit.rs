//! The CPU this process may use under a cgroup quota (a container's CPU limit, or a node held
//! to a fraction of a core), in cores, possibly fractional: `cpu.cfs_quota_us / cpu.cfs_period_us`
//! in cgroup v1's `cpu` controller, `cpu.max` in cgroup v2. `std::thread::available_parallelism`
//! reads the same files but rounds to whole threads (at least one), which says how many threads
//! to start, not how much work the process gets through: a node held to 0.1 core is ten times
//! slower than one with a core.

use std::path::{Path, PathBuf};

/// The process's CPU quota in cores, if its cgroup sets one.
pub fn cgroup_cpu_limit() -> Option<f64> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    limit_in(Path::new("/sys/fs/cgroup"), &cgroups)
}

/// [`cgroup_cpu_limit`] with the cgroup file system mounted at `root` and `/proc/self/cgroup`
/// reading `cgroups`.
fn limit_in(root: &Path, cgroups: &str) -> Option<f64> {
    for line in cgroups.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let path = path.trim_start_matches('/');
        if controllers.split(',').any(|c| c == "cpu") {
            // v1: the cpu controller's own hierarchy (`cpu` or `cpu,cpuacct`)
            for mount in [controllers, "cpu", "cpu,cpuacct"] {
                let dir = root.join(mount).join(path);
                if let Some(limit) = v1_limit(&dir) {
                    return Some(limit);
                }
            }
        } else if controllers.is_empty() {
            // v2: one hierarchy
            if let Some(limit) = v2_limit(&root.join(path)) {
                return Some(limit);
            }
        }
    }
    None
}

fn read_number(path: PathBuf) -> Option<f64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn v1_limit(dir: &Path) -> Option<f64> {
    let quota = read_number(dir.join("cpu.cfs_quota_us"))?;
    let period = read_number(dir.join("cpu.cfs_period_us"))?;
    (quota > 0.0 && period > 0.0).then(|| quota / period)
}

fn v2_limit(dir: &Path) -> Option<f64> {
    let max = std::fs::read_to_string(dir.join("cpu.max")).ok()?;
    let mut fields = max.split_whitespace();
    let quota: f64 = fields.next()?.parse().ok()?; // "max": no quota
    let period: f64 = fields.next()?.parse().ok()?;
    (quota > 0.0 && period > 0.0).then(|| quota / period)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v1_quota_in_the_cpu_hierarchy() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("cpu,cpuacct/slow");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cpu.cfs_quota_us"), "10000\n").unwrap();
        std::fs::write(dir.join("cpu.cfs_period_us"), "100000\n").unwrap();
        let cgroups = "12:memory:/\n4:cpu,cpuacct:/slow\n1:name=systemd:/\n";
        assert_eq!(limit_in(root.path(), cgroups), Some(0.1));
        // no quota
        std::fs::write(dir.join("cpu.cfs_quota_us"), "-1\n").unwrap();
        assert_eq!(limit_in(root.path(), cgroups), None);
    }

    #[test]
    fn a_v1_cpu_controller_mounted_alone() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("cpu/bench");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cpu.cfs_quota_us"), "50000").unwrap();
        std::fs::write(dir.join("cpu.cfs_period_us"), "100000").unwrap();
        assert_eq!(limit_in(root.path(), "3:cpu:/bench\n"), Some(0.5));
    }

    #[test]
    fn a_v2_cpu_max() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("app");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cpu.max"), "250000 100000\n").unwrap();
        assert_eq!(limit_in(root.path(), "0::/app\n"), Some(2.5));
        std::fs::write(dir.join("cpu.max"), "max 100000\n").unwrap();
        assert_eq!(limit_in(root.path(), "0::/app\n"), None);
    }

    #[test]
    fn no_cgroup_files_no_limit() {
        let root = tempfile::tempdir().unwrap();
        assert_eq!(limit_in(root.path(), "4:cpu:/gone\n0::/\n"), None);
        assert_eq!(limit_in(root.path(), "garbage"), None);
    }
}
