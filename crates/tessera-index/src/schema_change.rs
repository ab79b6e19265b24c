//! Growing a shard's tantivy schema in place.
//!
//! tantivy fixes the schema when an index is created. Tessera's schemas only ever grow (new
//! fields are appended, existing ids never move), so a committed index can take a new schema by
//! rewriting `meta.json`: old segments just have no data for the new fields. One repair is
//! needed: tantivy's merger expects every segment to carry field norms for every field that has
//! them, so the `.fieldnorm` file of each existing segment is rewritten with empty norms for
//! the new text fields (written next to the original, then renamed over it).

use std::path::Path;

use serde_json::Value;
use tantivy::directory::Directory;
use tantivy::fieldnorm::{FieldNormReaders, FieldNormsSerializer};
use tantivy::index::SegmentComponent;
use tantivy::schema::Schema;
use tantivy::Index;
use tessera_common::{Error, Result};

fn fail(what: &str) -> impl FnOnce(tantivy::TantivyError) -> Error + '_ {
    move |e| Error::internal(what, e)
}

/// Installs `schema` (a superset of the current one) on the closed index in `dir`.
pub fn grow_schema(dir: &Path, schema: &Schema) -> Result<()> {
    let index = Index::open_in_dir(dir).map_err(fail("open the shard to change its schema"))?;
    let old = index.schema();
    let new_fieldnorm_fields: Vec<_> = schema
        .fields()
        .filter(|(field, entry)| {
            entry.has_fieldnorms() && field.field_id() as usize >= old.num_fields()
        })
        .map(|(field, _)| field)
        .collect();
    let metas = index.load_metas().map_err(fail("load the shard metas"))?;
    if !new_fieldnorm_fields.is_empty() {
        for segment in &metas.segments {
            rewrite_fieldnorms(
                &index,
                dir,
                &segment.relative_path(SegmentComponent::FieldNorms),
                segment.max_doc(),
                schema,
            )?;
        }
    }
    let directory = index.directory();
    let meta_path = Path::new("meta.json");
    let raw = directory
        .atomic_read(meta_path)
        .map_err(|e| Error::internal("read meta.json", e))?;
    let mut meta: Value =
        serde_json::from_slice(&raw).map_err(|e| Error::internal("parse meta.json", e))?;
    meta["schema"] =
        serde_json::to_value(schema).map_err(|e| Error::internal("serialise the schema", e))?;
    let bytes = serde_json::to_vec(&meta).map_err(|e| Error::internal("serialise meta.json", e))?;
    directory
        .atomic_write(meta_path, &bytes)
        .map_err(|e| Error::internal("write meta.json", e))?;
    Ok(())
}

fn rewrite_fieldnorms(
    index: &Index,
    dir: &Path,
    relative: &Path,
    max_doc: u32,
    schema: &Schema,
) -> Result<()> {
    let directory = index.directory();
    let file = directory
        .open_read(relative)
        .map_err(|e| Error::internal(format!("read {}", relative.display()), e))?;
    let readers = FieldNormReaders::open(file).map_err(fail("open field norms"))?;
    let patch_name = format!("{}.patch", relative.display());
    let patch = Path::new(&patch_name);
    let _ = directory.delete(patch);
    let write = directory
        .open_write(patch)
        .map_err(|e| Error::internal(format!("write {patch_name}"), e))?;
    let mut serializer = FieldNormsSerializer::from_write(write)
        .map_err(|e| Error::internal("write field norms", e))?;
    let mut data = vec![0u8; max_doc as usize];
    for (field, entry) in schema.fields() {
        if !entry.has_fieldnorms() {
            continue;
        }
        match readers.get_field(field).map_err(fail("read field norms"))? {
            Some(reader) => {
                for (doc, slot) in data.iter_mut().enumerate() {
                    *slot = reader.fieldnorm_id(doc as u32);
                }
            }
            None => data.iter_mut().for_each(|slot| *slot = 0),
        }
        serializer
            .serialize_field(field, &data)
            .map_err(|e| Error::internal("write field norms", e))?;
    }
    serializer
        .close()
        .map_err(|e| Error::internal("close field norms", e))?;
    std::fs::rename(dir.join(patch), dir.join(relative))
        .map_err(|e| Error::internal(format!("install {}", relative.display()), e))?;
    crate::translog::sync_dir(dir)
}
