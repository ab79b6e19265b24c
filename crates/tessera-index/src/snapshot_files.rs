//! A shard's commit in a snapshot repository, and a shard filled back from one.
//!
//! Why it is shaped this way:
//! - tantivy's segment files are immutable and uniquely named, so a repository stores each file
//!   once under its content identity ([`blob_name`]: name, length and footer checksum) in
//!   `<repository>/blobs/`, shared by every snapshot: a second snapshot of a shard copies only
//!   the segments written since (incremental), and deleting a snapshot deletes only the blobs
//!   no other snapshot names (the node's side decides that).
//! - A snapshot reads a commit, never the live directory: the shard commits (everything
//!   acknowledged is in it), pins the commit as segment replication does
//!   ([`Shard::replication_checkpoint`]) and hard-links the pinned files aside for the copy
//!   (beside the pins: the shard's file system, cleared when the shard opens),
//!   so merges that go on meanwhile delete nothing the copy needs, and the snapshot holds
//!   exactly that commit whatever is written during the copy.
//! - Nothing in the repository looks complete before it is: a blob is written under
//!   `<repository>/tmp/`, fsynced and renamed to its final name; a shard's manifest (the commit's
//!   `meta.json` and its files) is written the same way once every blob it names is in place.
//! - A restored primary fills its empty directory as a replica fills its copy (the same
//!   verified copy and atomic `meta.json`), marked as a copy so that [`Shard::open`] starts a
//!   fresh translog and commits once on its own.

use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tessera_common::{Error, Result};

use crate::replication::{self, FileMeta, ReplicationCheckpoint, CHUNK_BYTES, META_FILE};
use crate::shard::Shard;
use crate::translog;

/// Where a repository keeps file contents, by [`blob_name`].
pub const BLOBS_DIR: &str = "blobs";
/// Where a repository writes files before renaming them into place.
pub const TMP_DIR: &str = "tmp";
/// Where a repository keeps shard manifests: `shards/<snapshot uuid>/<index uuid>/<shard>.json`.
pub const SHARDS_DIR: &str = "shards";

/// A file's name in a repository's `blobs/`: its content identity.
pub fn blob_name(file: &FileMeta) -> String {
    format!("{}.{}.{:08x}", file.name, file.length, file.checksum)
}

/// The directory of the manifests of one index of one snapshot.
pub fn manifests_dir(repository: &Path, snapshot_uuid: &str, index_uuid: &str) -> PathBuf {
    repository
        .join(SHARDS_DIR)
        .join(snapshot_uuid)
        .join(index_uuid)
}

/// What a repository holds of one shard of one snapshot: a commit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardManifest {
    pub generation: u64,
    pub max_seq_no: Option<u64>,
    /// Every file of the commit except `meta.json`, sorted by name.
    pub files: Vec<FileMeta>,
    /// The commit's `meta.json`.
    pub meta_json: String,
    pub stats: ShardSnapshotStats,
}

/// How much a shard's snapshot copied (`incremental`) of what it holds (`total`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardSnapshotStats {
    pub incremental_files: u64,
    pub incremental_bytes: u64,
    pub total_files: u64,
    pub total_bytes: u64,
    pub start_time_millis: i64,
    pub time_millis: i64,
}

/// Where a restored index's primaries take their commits from (kept in its metadata).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreSource {
    pub repository: String,
    pub snapshot: String,
    /// The repository's directory.
    pub location: String,
    pub snapshot_uuid: String,
    /// The index's name and uuid in the snapshot (the uuid names its manifests' directory).
    pub index: String,
    pub index_uuid: String,
}

impl RestoreSource {
    /// The manifest of shard `shard_id`: the commit a restored primary copies.
    pub fn manifest(&self, shard_id: u32) -> Result<ShardManifest> {
        read_manifest(&self.manifest_path(shard_id))
    }

    fn manifest_path(&self, shard_id: u32) -> PathBuf {
        manifests_dir(
            Path::new(&self.location),
            &self.snapshot_uuid,
            &self.index_uuid,
        )
        .join(format!("{shard_id}.json"))
    }
}

fn io(context: impl std::fmt::Display) -> impl FnOnce(std::io::Error) -> Error {
    move |e| Error::internal(context, e)
}

/// A file of `dir` that need not be cleaned up: removed on drop.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

impl Shard {
    /// Snapshots the shard into the repository at `repository`: commits, pins the commit,
    /// copies the blobs the repository lacks and writes the shard's manifest under
    /// `manifests_dir(repository, snapshot_uuid, index_uuid)`. Returns the manifest.
    pub fn snapshot_into(
        &self,
        repository: &Path,
        snapshot_uuid: &str,
        index_uuid: &str,
    ) -> Result<ShardManifest> {
        let start = tessera_common::time::now_millis();
        self.flush()?;
        let tmp = repository.join(TMP_DIR);
        let blobs = repository.join(BLOBS_DIR);
        for dir in [&tmp, &blobs] {
            fs::create_dir_all(dir).map_err(io(format!("create {}", dir.display())))?;
        }
        // beside the pins, on the shard's file system (a link, never a copy), and removed with
        // them when the shard opens again after a crash
        let held = TempDir(
            self.path
                .join(replication::PINS_DIR)
                .join(format!("snapshot-{}", tessera_common::ids::random_uuid())),
        );
        // the pin may be released by newer commits before its files are linked: take the next
        let mut attempts = 0;
        let checkpoint = loop {
            let checkpoint = self.replication_checkpoint()?;
            match self.link_pinned_files(checkpoint.generation, &held.0) {
                Ok(()) => break checkpoint,
                Err(e) if e.kind() == "resource_not_found_exception" && attempts < 5 => {
                    attempts += 1;
                    let _ = fs::remove_dir_all(&held.0);
                }
                Err(e) => return Err(e),
            }
        };
        let mut stats = ShardSnapshotStats {
            start_time_millis: start,
            ..ShardSnapshotStats::default()
        };
        for file in &checkpoint.files {
            stats.total_files += 1;
            stats.total_bytes += file.length;
            let target = blobs.join(blob_name(file));
            if fs::metadata(&target).is_ok_and(|m| m.len() == file.length) {
                continue;
            }
            let partial = tmp.join(tessera_common::ids::random_uuid());
            let copied = copy_synced(&held.0.join(&file.name), &partial).and_then(|()| {
                fs::rename(&partial, &target).map_err(io(format!("install {}", target.display())))
            });
            if copied.is_err() {
                let _ = fs::remove_file(&partial);
            }
            copied?;
            stats.incremental_files += 1;
            stats.incremental_bytes += file.length;
        }
        translog::sync_dir(&blobs)?;
        stats.time_millis = tessera_common::time::now_millis() - start;
        let manifest = ShardManifest {
            generation: checkpoint.generation,
            max_seq_no: checkpoint.max_seq_no,
            files: checkpoint.files,
            meta_json: String::from_utf8(checkpoint.meta_json)
                .map_err(|e| Error::internal("read meta.json", e))?,
            stats,
        };
        let dir = manifests_dir(repository, snapshot_uuid, index_uuid);
        fs::create_dir_all(&dir).map_err(io(format!("create {}", dir.display())))?;
        let bytes = serde_json::to_vec(&manifest)
            .map_err(|e| Error::internal("serialise a shard manifest", e))?;
        translog::write_atomic(&dir.join(format!("{}.json", self.shard_id)), &bytes)?;
        Ok(manifest)
    }
}

/// Copies `from` to `to` and fsyncs it.
fn copy_synced(from: &Path, to: &Path) -> Result<()> {
    fs::copy(from, to).map_err(io(format!("copy {}", from.display())))?;
    File::open(to)
        .and_then(|f| f.sync_all())
        .map_err(io(format!("fsync {}", to.display())))
}

/// Reads the manifest of shard `shard_id` of a snapshot.
pub fn read_manifest(path: &Path) -> Result<ShardManifest> {
    let bytes = fs::read(path).map_err(|e| {
        Error::new(
            "snapshot_restore_exception",
            500,
            format!("cannot read the shard manifest {}: {e}", path.display()),
        )
    })?;
    serde_json::from_slice(&bytes).map_err(|e| {
        Error::new(
            "snapshot_restore_exception",
            500,
            format!("the shard manifest {} is damaged: {e}", path.display()),
        )
    })
}

/// True when the shard at `shard_path` holds no commit yet (a restore fills only those).
pub fn is_empty_shard(shard_path: &Path) -> bool {
    !shard_path.join("index").join(META_FILE).exists()
}

/// Fills the empty directory of shard `shard_id` at `shard_path` from the snapshot `source`:
/// copies and verifies each file, then installs `meta.json` last, atomically, marked as a
/// copy (see the module's documentation). A failure leaves no `meta.json`: the shard fails
/// to open and may be restored again. Returns the manifest restored.
pub fn restore_shard(
    source: &RestoreSource,
    shard_id: u32,
    shard_path: &Path,
) -> Result<ShardManifest> {
    let manifest = source.manifest(shard_id)?;
    let checkpoint = ReplicationCheckpoint {
        primary_term: 0,
        generation: manifest.generation,
        max_seq_no: manifest.max_seq_no,
        files: manifest.files.clone(),
        meta_json: manifest.meta_json.clone().into_bytes(),
    };
    replication::validate(&checkpoint)?;
    let dir = shard_path.join("index");
    fs::create_dir_all(&dir).map_err(io(format!("create {}", dir.display())))?;
    let blobs = Path::new(&source.location).join(BLOBS_DIR);
    for file in &manifest.files {
        let path = blobs.join(blob_name(file));
        let mut blob = File::open(&path).map_err(|e| {
            Error::new(
                "snapshot_restore_exception",
                500,
                format!(
                    "[{}:{}] file [{}] is missing from the repository: {e}",
                    source.repository, source.snapshot, file.name
                ),
            )
        })?;
        replication::copy_file(&dir, file, &mut |_, offset, len| {
            blob.seek(SeekFrom::Start(offset))
                .map_err(io(format!("read {}", path.display())))?;
            let mut chunk = Vec::with_capacity(len.min(CHUNK_BYTES));
            (&mut blob)
                .take(len as u64)
                .read_to_end(&mut chunk)
                .map_err(io(format!("read {}", path.display())))?;
            Ok(chunk)
        })?;
    }
    translog::sync_dir(&dir)?;
    replication::write_managed(&dir, manifest.files.iter().map(|f| f.name.as_str()))?;
    replication::write_replica_marker(shard_path, 0)?;
    translog::write_atomic(&dir.join(META_FILE), manifest.meta_json.as_bytes())?;
    Ok(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::{Conditions, PreparedDoc, ShardConfig};
    use bytes::Bytes;
    use serde_json::json;
    use tessera_mapping::{parse_document, Mapping, ParseOutcome};

    fn mapping() -> Mapping {
        Mapping::parse(&json!({"properties": {"text": {"type": "text"}, "n": {"type": "long"}}}))
            .unwrap()
    }

    fn shard(dir: &Path) -> Shard {
        Shard::open("idx", 0, dir, &mapping(), 1, ShardConfig::default()).unwrap()
    }

    /// Indexes documents `from..to` in one batch, then refreshes.
    fn index(shard: &Shard, from: u32, to: u32) {
        let mapping = mapping();
        let table = shard.table_for(&mapping, 1).unwrap();
        let mut batch = shard.write_batch();
        for i in from..to {
            let source = json!({"n": i, "text": format!("doc {i}")});
            let id = i.to_string();
            let ParseOutcome::Document(doc) =
                parse_document(&mapping, &table, &id, &source).unwrap()
            else {
                panic!("mapping update")
            };
            let prepared = PreparedDoc {
                id,
                auto_id: false,
                doc,
                nested: Vec::new(),
                source: Bytes::from(serde_json::to_vec(&source).unwrap()),
                routing: None,
            };
            batch.index(prepared, &Conditions::default()).unwrap();
        }
        batch.finish().unwrap();
        shard.refresh().unwrap();
    }

    fn blob_count(repository: &Path) -> usize {
        fs::read_dir(repository.join(BLOBS_DIR)).unwrap().count()
    }

    #[test]
    fn snapshots_are_incremental_and_restore_exactly() {
        let (data, repo, restored) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        let primary = shard(data.path());
        index(&primary, 0, 10);
        let first = primary.snapshot_into(repo.path(), "s1", "u").unwrap();
        assert_eq!(first.stats.incremental_files, first.stats.total_files);
        assert!(first.stats.total_files > 0);
        let blobs = blob_count(repo.path());
        // nothing new: nothing copied
        let again = primary.snapshot_into(repo.path(), "s2", "u").unwrap();
        assert_eq!(again.stats.incremental_files, 0);
        assert_eq!(blob_count(repo.path()), blobs);
        index(&primary, 10, 15);
        let second = primary.snapshot_into(repo.path(), "s3", "u").unwrap();
        assert!(second.stats.incremental_files > 0);
        assert!(second.stats.incremental_files < second.stats.total_files);
        // nothing temporary is left behind, in the repository or beside the shard's pins
        assert_eq!(fs::read_dir(repo.path().join(TMP_DIR)).unwrap().count(), 0);
        let held = fs::read_dir(data.path().join(replication::PINS_DIR))
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with("snapshot-"))
            .count();
        assert_eq!(held, 0);

        let source = RestoreSource {
            repository: "r".into(),
            snapshot: "s1".into(),
            location: repo.path().to_string_lossy().into_owned(),
            snapshot_uuid: "s1".into(),
            index: "idx".into(),
            index_uuid: "u".into(),
        };
        assert!(is_empty_shard(restored.path()));
        restore_shard(&source, 0, restored.path()).unwrap();
        let copy = shard(restored.path());
        assert_eq!(copy.doc_counts().0, 10);
        // the restored shard is a primary that takes writes after the snapshot's seq_nos
        index(&copy, 100, 101);
        assert_eq!(copy.doc_counts().0, 11);
    }

    #[test]
    fn a_missing_blob_fails_the_restore_without_a_commit() {
        let (data, repo, restored) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        let primary = shard(data.path());
        index(&primary, 0, 3);
        let manifest = primary.snapshot_into(repo.path(), "s1", "u").unwrap();
        fs::remove_file(
            repo.path()
                .join(BLOBS_DIR)
                .join(blob_name(&manifest.files[0])),
        )
        .unwrap();
        let source = RestoreSource {
            repository: "r".into(),
            snapshot: "s1".into(),
            location: repo.path().to_string_lossy().into_owned(),
            snapshot_uuid: "s1".into(),
            index: "idx".into(),
            index_uuid: "u".into(),
        };
        let error = restore_shard(&source, 0, restored.path()).unwrap_err();
        assert_eq!(error.kind(), "snapshot_restore_exception");
        assert!(is_empty_shard(restored.path()));
    }
}
