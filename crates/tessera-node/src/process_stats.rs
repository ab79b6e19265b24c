//! Process and OS statistics read from `/proc`, as `_nodes/stats` and `_cat/nodes` report them.
//!
//! CPU percentages are over the time since the previous sample and relative to the whole
//! machine (all cores), like OpenSearch's `process.cpu.percent`, so a benchmark sampling
//! `_nodes/stats` every second sees the same scale on both engines.

use std::sync::Mutex;
use std::time::Instant;

/// Clock ticks per second of `/proc` CPU times (100 on every Linux platform Tessera targets).
const TICKS_PER_SECOND: f64 = 100.0;

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// User + system CPU time of this process, in milliseconds.
pub fn process_cpu_millis() -> u64 {
    let Some(stat) = read("/proc/self/stat") else {
        return 0;
    };
    let Some(after) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
        return 0;
    };
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // fields after the name start at "state" (field 3): utime is field 14, stime 15
    ((ticks(11) + ticks(12)) as f64 * 1000.0 / TICKS_PER_SECOND) as u64
}

/// Resident and virtual memory of this process, in bytes.
pub fn process_memory() -> (u64, u64) {
    let Some(statm) = read("/proc/self/statm") else {
        return (0, 0);
    };
    let mut parts = statm
        .split_whitespace()
        .map(|p| p.parse::<u64>().unwrap_or(0));
    let size = parts.next().unwrap_or(0);
    let resident = parts.next().unwrap_or(0);
    (resident * 4096, size * 4096)
}

/// This process's peak resident memory (`VmHWM`, bytes) and its thread count, from
/// `/proc/self/status`.
pub fn peak_memory_and_threads() -> (u64, u64) {
    let Some(status) = read("/proc/self/status") else {
        return (0, 0);
    };
    let value = |key: &str| {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (value("VmHWM:") * 1024, value("Threads:"))
}

/// The files this process maps into memory (tantivy reads segments through `mmap`): how many
/// mappings, and their bytes, from `/proc/self/maps`.
pub fn mapped_files() -> (u64, u64) {
    let Some(maps) = read("/proc/self/maps") else {
        return (0, 0);
    };
    let (mut count, mut bytes) = (0, 0);
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let range = fields.next().unwrap_or("");
        // address, perms, offset, device, inode, path: a file mapping has an inode and a path
        let inode = fields.nth(3).unwrap_or("0");
        let path = fields.next().unwrap_or("");
        if inode == "0" || !path.starts_with('/') {
            continue;
        }
        if let Some((start, end)) = range.split_once('-') {
            let start = u64::from_str_radix(start, 16).unwrap_or(0);
            let end = u64::from_str_radix(end, 16).unwrap_or(0);
            count += 1;
            bytes += end.saturating_sub(start);
        }
    }
    (count, bytes)
}

pub fn open_file_descriptors() -> u64 {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count() as u64)
        .unwrap_or(0)
}

/// Total and available memory of the machine, in bytes.
pub fn os_memory() -> (u64, u64) {
    let Some(info) = read("/proc/meminfo") else {
        return (0, 0);
    };
    let value = |key: &str| {
        info.lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
            * 1024
    };
    (value("MemTotal:"), value("MemAvailable:"))
}

pub fn load_average() -> [f64; 3] {
    let Some(text) = read("/proc/loadavg") else {
        return [0.0; 3];
    };
    let mut parts = text
        .split_whitespace()
        .map(|p| p.parse::<f64>().unwrap_or(0.0));
    [
        parts.next().unwrap_or(0.0),
        parts.next().unwrap_or(0.0),
        parts.next().unwrap_or(0.0),
    ]
}

fn os_cpu_ticks() -> (u64, u64) {
    let Some(stat) = read("/proc/stat") else {
        return (0, 0);
    };
    let Some(line) = stat.lines().next() else {
        return (0, 0);
    };
    let values: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    let total: u64 = values.iter().sum();
    let idle = values.get(3).copied().unwrap_or(0) + values.get(4).copied().unwrap_or(0);
    (total, idle)
}

pub fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// CPU usage between successive samples.
pub struct CpuSampler {
    last: Mutex<Sample>,
}

struct Sample {
    at: Instant,
    process_millis: u64,
    os_total: u64,
    os_idle: u64,
    process_percent: u32,
    os_percent: u32,
}

impl Default for CpuSampler {
    fn default() -> Self {
        let (os_total, os_idle) = os_cpu_ticks();
        CpuSampler {
            last: Mutex::new(Sample {
                at: Instant::now(),
                process_millis: process_cpu_millis(),
                os_total,
                os_idle,
                process_percent: 0,
                os_percent: 0,
            }),
        }
    }
}

impl CpuSampler {
    /// (process %, os %) since the previous sample; samples closer than 200 ms apart reuse the
    /// previous figures, so frequent callers do not get noise.
    pub fn sample(&self) -> (u32, u32) {
        let mut last = self.last.lock().unwrap();
        let elapsed = last.at.elapsed();
        if elapsed.as_millis() < 200 {
            return (last.process_percent, last.os_percent);
        }
        let process_millis = process_cpu_millis();
        let (os_total, os_idle) = os_cpu_ticks();
        let wall_millis = elapsed.as_secs_f64() * 1000.0 * cores() as f64;
        let process_percent =
            ((process_millis.saturating_sub(last.process_millis)) as f64 / wall_millis * 100.0)
                .round()
                .min(100.0) as u32;
        let total = os_total.saturating_sub(last.os_total);
        let idle = os_idle.saturating_sub(last.os_idle);
        let os_percent = if total == 0 {
            0
        } else {
            ((total - idle.min(total)) as f64 / total as f64 * 100.0).round() as u32
        };
        *last = Sample {
            at: Instant::now(),
            process_millis,
            os_total,
            os_idle,
            process_percent,
            os_percent,
        };
        (process_percent, os_percent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_proc() {
        assert!(process_memory().0 > 0);
        assert!(os_memory().0 > 0);
        assert!(open_file_descriptors() > 0);
        let sampler = CpuSampler::default();
        let start = Instant::now();
        let mut x = 0u64;
        while start.elapsed().as_millis() < 300 {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        let (process, _) = sampler.sample();
        assert!(process > 0 && process <= 100, "{process}");
    }
}
