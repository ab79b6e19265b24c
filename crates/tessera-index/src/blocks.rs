//! Index blocks (`index.blocks.*`): which operations an index refuses, and OpenSearch's
//! `cluster_block_exception` for them. Each block applies at some levels (reading documents,
//! writing them, reading or changing the index's metadata); an operation checks its level, and
//! the error names every block set at that level, as OpenSearch's does.

use tessera_common::Error;

use crate::index_service::IndexMetadata;

/// What an operation does to an index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockLevel {
    /// Searches, counts, document gets.
    Read,
    /// Document writes.
    Write,
    /// Reading the mapping or the settings.
    MetadataRead,
    /// Changing the mapping (also by dynamic mapping) or the settings.
    MetadataWrite,
    /// Deleting the index (a change of metadata the disk's block allows: it frees space).
    Delete,
}

use BlockLevel::{Delete, MetadataRead, MetadataWrite, Read, Write};

/// OpenSearch's index blocks: setting, id, description, status, levels.
const BLOCKS: [(&str, u32, &str, u16, &[BlockLevel]); 5] = [
    (
        "index.blocks.read_only",
        5,
        "index read-only (api)",
        403,
        &[Write, MetadataWrite, Delete],
    ),
    ("index.blocks.read", 7, "index read (api)", 403, &[Read]),
    ("index.blocks.write", 8, "index write (api)", 403, &[Write]),
    (
        "index.blocks.metadata",
        9,
        "index metadata (api)",
        403,
        &[MetadataRead, MetadataWrite, Delete],
    ),
    (
        "index.blocks.read_only_allow_delete",
        12,
        "disk usage exceeded flood-stage watermark, index has read-only-allow-delete block",
        429,
        &[Write, MetadataWrite],
    ),
];

/// OpenSearch's answer to a read or a write of a closed index.
pub fn index_closed(meta: &IndexMetadata) -> Error {
    Error::new("index_closed_exception", 400, "closed")
        .with_meta("index", meta.name.clone())
        .with_meta("index_uuid", meta.uuid.clone())
}

/// The error for an operation at `level` on the index, when a block set on it refuses it (a
/// closed index refuses reads and writes).
pub fn blocked(meta: &IndexMetadata, level: BlockLevel) -> Option<Error> {
    if meta.closed && matches!(level, Read | Write) {
        return Some(index_closed(meta));
    }
    let set: Vec<_> = BLOCKS
        .iter()
        .filter(|(setting, _, _, _, levels)| {
            levels.contains(&level) && meta.setting(setting) == "true"
        })
        .collect();
    let status = set.first()?.3;
    let names: Vec<String> = set
        .iter()
        .map(|(_, id, description, status, _)| {
            let kind = if *status == 429 {
                "TOO_MANY_REQUESTS"
            } else {
                "FORBIDDEN"
            };
            format!("{kind}/{id}/{description}")
        })
        .collect();
    Some(Error::new(
        "cluster_block_exception",
        status,
        format!("index [{}] blocked by: [{}];", meta.name, names.join(", ")),
    ))
}

/// [`blocked`] as a result.
pub fn check(meta: &IndexMetadata, level: BlockLevel) -> tessera_common::Result<()> {
    match blocked(meta, level) {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// Whether a settings update is allowed under a metadata block: one that sets only the
/// `metadata`, `read_only` or `read_only_allow_delete` block (OpenSearch's exception, without
/// which such a block could never be lifted).
pub fn only_blocks(update: &tessera_common::settings::Settings) -> bool {
    let keys: Vec<&str> = update.keys().collect();
    matches!(
        keys.as_slice(),
        ["index.blocks.metadata"
            | "index.blocks.read_only"
            | "index.blocks.read_only_allow_delete"]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tessera_common::settings::Settings;

    fn meta(settings: serde_json::Value) -> IndexMetadata {
        let settings = Settings::from_json(&settings).unwrap();
        crate::IndexService::new_metadata(
            "logs",
            "u",
            settings,
            tessera_mapping::Mapping::default(),
        )
        .unwrap()
    }

    #[test]
    fn each_block_refuses_its_levels() {
        let read = meta(json!({"index.blocks.read": true}));
        let e = blocked(&read, Read).unwrap();
        assert_eq!(e.status(), 403);
        assert_eq!(
            e.reason(),
            "index [logs] blocked by: [FORBIDDEN/7/index read (api)];"
        );
        assert!(blocked(&read, Write).is_none());
        assert!(blocked(&read, MetadataRead).is_none());

        let read_only = meta(json!({"index.blocks.read_only": true, "index.blocks.write": true}));
        assert_eq!(
            blocked(&read_only, Write).unwrap().reason(),
            "index [logs] blocked by: [FORBIDDEN/5/index read-only (api), FORBIDDEN/8/index write (api)];"
        );
        assert!(blocked(&read_only, MetadataWrite).is_some());
        assert!(blocked(&read_only, Read).is_none());

        let metadata = meta(json!({"index.blocks.metadata": true}));
        assert!(blocked(&metadata, MetadataRead).is_some());
        assert!(blocked(&metadata, Read).is_none());

        let disk = meta(json!({"index.blocks.read_only_allow_delete": true}));
        assert_eq!(blocked(&disk, Write).unwrap().status(), 429);
        assert!(blocked(&disk, Delete).is_none());
        assert!(blocked(&metadata, Delete).is_some());
        assert!(check(&meta(json!({})), Write).is_ok());
    }

    #[test]
    fn a_lone_update_of_a_metadata_block_is_told_apart() {
        let lone = |s: serde_json::Value| only_blocks(&Settings::from_json(&s).unwrap());
        assert!(lone(json!({"index.blocks.metadata": false})));
        assert!(lone(json!({"index.blocks.read_only": false})));
        assert!(!lone(json!({"index.blocks.write": false})));
        assert!(!lone(
            json!({"index.blocks.metadata": false, "index.blocks.write": false})
        ));
        assert!(!lone(
            json!({"index.blocks.metadata": false, "index.refresh_interval": "1s"})
        ));
    }
}
