//! Disk watermarks, as OpenSearch's disk threshold monitor applies them on one node: when the
//! data path's disk passes the flood stage, every index gets `index.blocks.read_only_allow_delete`
//! (writes answer 429 `cluster_block_exception`, deletes of whole indices still work, so space
//! can be freed), and the block is released by itself once usage falls below the high watermark.
//! A watermark is a used share (`95%`, `0.95`) or an amount of space that must stay free
//! (`500mb`). The low and high watermarks guide shard allocation in a cluster; on a single node
//! only the high one matters, as the release point.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use tessera_common::settings::parse_byte_size;
use tessera_common::{Error, Result};

pub const LOW: &str = "cluster.routing.allocation.disk.watermark.low";
pub const HIGH: &str = "cluster.routing.allocation.disk.watermark.high";
pub const FLOOD_STAGE: &str = "cluster.routing.allocation.disk.watermark.flood_stage";
pub const THRESHOLD_ENABLED: &str = "cluster.routing.allocation.disk.threshold_enabled";

/// Space on the file system holding a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiskUsage {
    pub total: u64,
    /// Bytes an unprivileged writer can still use.
    pub available: u64,
}

impl DiskUsage {
    /// The file system's figures (`statvfs`); `None` if they cannot be read.
    pub fn of(path: &Path) -> Option<DiskUsage> {
        let c_path = CString::new(path.as_os_str().as_bytes()).ok()?;
        let mut stats: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: a valid NUL-terminated path and a zeroed statvfs to fill
        if unsafe { libc::statvfs(c_path.as_ptr(), &mut stats) } != 0 {
            return None;
        }
        let fragment = stats.f_frsize as u64;
        Some(DiskUsage {
            total: stats.f_blocks as u64 * fragment,
            available: stats.f_bavail as u64 * fragment,
        })
    }

    pub fn used_share(&self) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        1.0 - self.available as f64 / self.total as f64
    }
}

/// One watermark setting's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Watermark {
    /// The disk may be used up to this share (0..=1).
    Used(f64),
    /// At least this many bytes must stay free.
    Free(u64),
}

impl Watermark {
    /// Parses `95%`, `0.95` or a byte size, with OpenSearch's message for anything else.
    pub fn parse(key: &str, value: &str) -> Result<Watermark> {
        let bad = || {
            Error::illegal_argument(format!(
                "failed to parse setting [{key}] with value [{value}] as a size in bytes: unit is missing or unrecognized"
            ))
        };
        let share = |s: &str| s.parse::<f64>().ok().filter(|v| v.is_finite());
        if let Some(percent) = value.strip_suffix('%') {
            let percent = share(percent).ok_or_else(bad)?;
            return if (0.0..=100.0).contains(&percent) {
                Ok(Watermark::Used(percent / 100.0))
            } else {
                Err(bad())
            };
        }
        if let Some(ratio) = share(value) {
            return if (0.0..=1.0).contains(&ratio) {
                Ok(Watermark::Used(ratio))
            } else {
                Err(bad())
            };
        }
        parse_byte_size(value, key)
            .map(Watermark::Free)
            .map_err(|_| bad())
    }

    /// True when the disk is past this watermark.
    pub fn exceeded(&self, usage: &DiskUsage) -> bool {
        match *self {
            Watermark::Used(share) => usage.used_share() > share,
            Watermark::Free(bytes) => usage.available < bytes,
        }
    }
}

/// Watermarks that ask for one free byte, as node defaults for nodes in tests: like
/// OpenSearch's test clusters, a test must not fail because the machine's disk is past 95%.
pub fn one_free_byte() -> tessera_common::settings::Settings {
    let mut settings = tessera_common::settings::Settings::new();
    for key in [LOW, HIGH, FLOOD_STAGE] {
        settings.set(key, "1b");
    }
    settings
}

/// The registry's validation of the watermark settings.
pub fn check_watermark(key: &str, value: &str) -> Result<()> {
    Watermark::parse(key, value).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DISK: DiskUsage = DiskUsage {
        total: 1000,
        available: 40,
    };

    #[test]
    fn watermarks_parse_as_opensearch_writes_them() {
        assert_eq!(Watermark::parse(HIGH, "90%").unwrap(), Watermark::Used(0.9));
        assert_eq!(Watermark::parse(HIGH, "0.5").unwrap(), Watermark::Used(0.5));
        assert_eq!(
            Watermark::parse(HIGH, "500mb").unwrap(),
            Watermark::Free(500 << 20)
        );
        for bad in ["101%", "1.5", "lots", "-1%", ""] {
            let e = Watermark::parse(FLOOD_STAGE, bad).unwrap_err();
            assert_eq!(e.kind(), "illegal_argument_exception", "{bad}");
            assert!(e.reason().contains(FLOOD_STAGE), "{}", e.reason());
        }
    }

    #[test]
    fn a_disk_is_past_a_watermark_by_share_or_by_free_space() {
        assert!(Watermark::Used(0.95).exceeded(&DISK)); // 96% used
        assert!(!Watermark::Used(0.97).exceeded(&DISK));
        assert!(Watermark::Free(50).exceeded(&DISK));
        assert!(!Watermark::Free(40).exceeded(&DISK));
    }

    #[test]
    fn the_data_path_has_figures() {
        let dir = tempfile::tempdir().unwrap();
        let usage = DiskUsage::of(dir.path()).unwrap();
        assert!(usage.total > 0 && usage.available <= usage.total);
    }
}
