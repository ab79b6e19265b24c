//! One module per API family. Handlers parse parameters and bodies, call the node, and shape
//! the answer as OpenSearch does; CPU work goes to the node's thread pools.

pub mod allocation;
pub mod bulk;
pub mod cat;
pub mod cluster;
pub mod documents;
pub mod indices;
pub mod nodes;
pub mod root;
pub mod search;
pub mod stats;

use tessera_cluster::ResolveOptions;
use tessera_common::{Error, Result};

use crate::request::RestRequest;

/// `ignore_unavailable`, `allow_no_indices` (and `expand_wildcards`, accepted).
pub const RESOLVE_PARAMS: &[&str] = &["ignore_unavailable", "allow_no_indices", "expand_wildcards"];

pub fn resolve_options(
    request: &RestRequest,
    allow_no_indices_default: bool,
) -> Result<ResolveOptions> {
    Ok(ResolveOptions {
        ignore_unavailable: request.param_bool("ignore_unavailable", false)?,
        allow_no_indices: request.param_bool("allow_no_indices", allow_no_indices_default)?,
        document_api: false,
    })
}

/// `refresh`: `true` (or a bare flag), `wait_for`, `false`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refresh {
    None,
    Immediate,
    WaitFor,
}

pub fn refresh_param(request: &RestRequest) -> Result<Refresh> {
    match request.param("refresh") {
        None | Some("false") => Ok(Refresh::None),
        Some("" | "true") => Ok(Refresh::Immediate),
        Some("wait_for") => Ok(Refresh::WaitFor),
        Some(other) => Err(Error::illegal_argument(format!(
            "Unknown value for refresh: [{other}]."
        ))),
    }
}
