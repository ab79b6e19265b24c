//! A repository's directory: the finished snapshots and the files they share.
//!
//! ```text
//! <location>/snapshots/<name>.json                  a finished snapshot (SnapshotInfo)
//! <location>/shards/<uuid>/<index uuid>/<n>.json    a shard's commit (ShardManifest)
//! <location>/blobs/<file>.<length>.<crc32>          file contents, shared by every snapshot
//! <location>/tmp/                                   files being written
//! ```
//!
//! A snapshot exists once its `snapshots/<name>.json` is renamed into place, which happens
//! after every manifest and blob it names is durable: a crash before that leaves only files no
//! snapshot names, which the next deletion collects ([`delete`]). Deleting a snapshot removes
//! its `.json` first, then every manifest directory and blob that no remaining snapshot names;
//! the caller makes sure no snapshot of the repository is being written meanwhile.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tessera_common::{Error, Result};
use tessera_index::snapshot_files::{
    blob_name, manifests_dir, read_manifest, ShardSnapshotStats, BLOBS_DIR, SHARDS_DIR, TMP_DIR,
};

const SNAPSHOTS_DIR: &str = "snapshots";

/// One shard of a finished snapshot: its copy's figures, or why it failed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardResult {
    pub shard: u32,
    pub stats: Option<ShardSnapshotStats>,
    pub failure: Option<ShardFailure>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardFailure {
    pub reason: String,
    pub node_id: Option<String>,
    pub status: String,
}

/// One index of a snapshot: its metadata as it was (`IndexMetadata::to_json`) and its shards.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SnapshotIndex {
    pub name: String,
    pub uuid: String,
    pub metadata: Value,
    pub shards: Vec<ShardResult>,
}

/// A finished snapshot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SnapshotInfo {
    pub snapshot: String,
    pub uuid: String,
    pub indices: Vec<SnapshotIndex>,
    pub include_global_state: bool,
    pub metadata: Option<Value>,
    pub start_time_millis: i64,
    pub end_time_millis: i64,
}

impl SnapshotInfo {
    pub fn shard_counts(&self) -> (usize, usize) {
        let shards = self.indices.iter().flat_map(|i| i.shards.iter());
        let (total, failed) = shards.fold((0, 0), |(t, f), s| {
            (t + 1, f + s.failure.is_some() as usize)
        });
        (total, failed)
    }

    /// OpenSearch's states of a finished snapshot.
    pub fn state(&self) -> &'static str {
        match self.shard_counts() {
            (_, 0) => "SUCCESS",
            (total, failed) if failed == total => "FAILED",
            _ => "PARTIAL",
        }
    }
}

fn info_path(location: &Path, name: &str) -> PathBuf {
    location.join(SNAPSHOTS_DIR).join(format!("{name}.json"))
}

fn io(context: impl std::fmt::Display) -> impl FnOnce(std::io::Error) -> Error {
    move |e| Error::internal(context, e)
}

/// Records a finished snapshot (atomically: the snapshot exists from here on).
pub fn write(location: &Path, info: &SnapshotInfo) -> Result<()> {
    let dir = location.join(SNAPSHOTS_DIR);
    fs::create_dir_all(&dir).map_err(io(format!("create {}", dir.display())))?;
    let bytes = serde_json::to_vec(info).map_err(|e| Error::internal("serialise a snapshot", e))?;
    tessera_index::translog::write_atomic(&info_path(location, &info.snapshot), &bytes)
}

/// The finished snapshot `name`, if the repository holds it.
pub fn read(location: &Path, name: &str) -> Result<Option<SnapshotInfo>> {
    let path = info_path(location, name);
    match fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            Error::new(
                "snapshot_exception",
                500,
                format!("cannot read {}: {e}", path.display()),
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::internal(format!("read {}", path.display()), e)),
    }
}

/// Every finished snapshot of the repository, oldest first (a missing directory holds none).
pub fn list(location: &Path) -> Result<Vec<SnapshotInfo>> {
    let entries = match fs::read_dir(location.join(SNAPSHOTS_DIR)) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::internal("list snapshots", e)),
    };
    let mut out = Vec::new();
    for entry in entries.filter_map(|e| e.ok()) {
        let file = entry.file_name().to_string_lossy().into_owned();
        if let Some(name) = file.strip_suffix(".json") {
            if let Some(info) = read(location, name)? {
                out.push(info);
            }
        }
    }
    out.sort_by(|a, b| (a.start_time_millis, &a.snapshot).cmp(&(b.start_time_millis, &b.snapshot)));
    Ok(out)
}

/// Deletes the snapshots `names` (those already gone are skipped), then every file of the
/// repository no remaining snapshot names.
pub fn delete(location: &Path, names: &[String]) -> Result<()> {
    for name in names {
        let path = info_path(location, name);
        match fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::internal(format!("delete {}", path.display()), e))
            }
            _ => {}
        }
    }
    let dir = location.join(SNAPSHOTS_DIR);
    if dir.exists() {
        tessera_index::translog::sync_dir(&dir)?;
    }
    collect_garbage(location)
}

/// Removes the manifests of snapshots that do not exist (deleted, or cut short) and the blobs
/// no remaining manifest names.
pub fn collect_garbage(location: &Path) -> Result<()> {
    let remaining = list(location)?;
    let uuids: BTreeSet<&str> = remaining.iter().map(|s| s.uuid.as_str()).collect();
    if let Ok(entries) = fs::read_dir(location.join(SHARDS_DIR)) {
        for entry in entries.filter_map(|e| e.ok()) {
            if !uuids.contains(entry.file_name().to_string_lossy().as_ref()) {
                fs::remove_dir_all(entry.path())
                    .map_err(io(format!("delete {}", entry.path().display())))?;
            }
        }
    }
    let mut referenced = BTreeSet::new();
    for snapshot in &remaining {
        for index in &snapshot.indices {
            let dir = manifests_dir(location, &snapshot.uuid, &index.uuid);
            for shard in index.shards.iter().filter(|s| s.failure.is_none()) {
                let manifest = read_manifest(&dir.join(format!("{}.json", shard.shard)))?;
                referenced.extend(manifest.files.iter().map(blob_name));
            }
        }
    }
    if let Ok(entries) = fs::read_dir(location.join(BLOBS_DIR)) {
        for entry in entries.filter_map(|e| e.ok()) {
            if !referenced.contains(entry.file_name().to_string_lossy().as_ref()) {
                fs::remove_file(entry.path())
                    .map_err(io(format!("delete {}", entry.path().display())))?;
            }
        }
    }
    // what writes cut short left
    let _ = fs::remove_dir_all(location.join(TMP_DIR));
    Ok(())
}

/// The number of blobs and their bytes (what the repository holds of file contents).
pub fn blob_usage(location: &Path) -> (u64, u64) {
    fs::read_dir(location.join(BLOBS_DIR))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.metadata().ok())
                .fold((0, 0), |(n, bytes), m| (n + 1, bytes + m.len()))
        })
        .unwrap_or((0, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str, start: i64, failed: bool) -> SnapshotInfo {
        SnapshotInfo {
            snapshot: name.into(),
            uuid: format!("{name}-uuid"),
            indices: vec![SnapshotIndex {
                name: "i".into(),
                uuid: "iu".into(),
                metadata: Value::Null,
                shards: vec![ShardResult {
                    shard: 0,
                    stats: None,
                    failure: failed.then(|| ShardFailure {
                        reason: "boom".into(),
                        node_id: None,
                        status: "INTERNAL_SERVER_ERROR".into(),
                    }),
                }],
            }],
            include_global_state: true,
            metadata: None,
            start_time_millis: start,
            end_time_millis: start + 1,
        }
    }

    #[test]
    fn snapshots_are_written_listed_and_deleted() {
        let dir = tempfile::tempdir().unwrap();
        assert!(list(dir.path()).unwrap().is_empty());
        write(dir.path(), &info("b", 2, true)).unwrap();
        write(dir.path(), &info("a", 1, true)).unwrap();
        let all = list(dir.path()).unwrap();
        assert_eq!(all[0].snapshot, "a");
        assert_eq!(all[1].state(), "FAILED");
        assert_eq!(info("c", 0, false).state(), "SUCCESS");
        // a cut-short snapshot's manifests go with the next deletion
        fs::create_dir_all(dir.path().join(SHARDS_DIR).join("orphan")).unwrap();
        fs::create_dir_all(dir.path().join(BLOBS_DIR)).unwrap();
        fs::write(dir.path().join(BLOBS_DIR).join("x.1.00000000"), b"x").unwrap();
        delete(dir.path(), &["a".to_string()]).unwrap();
        delete(dir.path(), &["a".to_string()]).unwrap();
        assert!(read(dir.path(), "a").unwrap().is_none());
        assert!(read(dir.path(), "b").unwrap().is_some());
        assert!(!dir.path().join(SHARDS_DIR).join("orphan").exists());
        assert_eq!(blob_usage(dir.path()), (0, 0));
    }
}
