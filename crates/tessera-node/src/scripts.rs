//! Where a request's script comes from: its own source, or the stored script its `id` names.
//!
//! A minimal version written on the update branch while stored scripts were not there yet:
//! no script is stored, so an `id` is OpenSearch's `resource_not_found_exception`.

use tessera_common::{Error, Result};
use tessera_script::spec::{ResolvedScript, ScriptSpec};

use crate::Node;

impl Node {
    /// The source of a request's script: its own, or the stored script its `id` names.
    pub fn resolve_script(&self, spec: &ScriptSpec) -> Result<ResolvedScript> {
        match (&spec.source, &spec.id) {
            (Some(source), _) => Ok(ResolvedScript {
                lang: spec.lang().to_string(),
                source: source.clone(),
                stored: None,
                params: spec.params.clone(),
            }),
            (None, Some(id)) => Err(Error::new(
                "resource_not_found_exception",
                404,
                format!("unable to find script [{id}] in cluster state"),
            )),
            (None, None) => Err(Error::illegal_argument(
                "must specify either [source] for an inline script or [id] for a stored script",
            )),
        }
    }
}
