//! Ingest pipelines as OpenSearch's `ingest-common` module runs them: pure functions over
//! JSON documents, with no knowledge of indices, nodes or the cluster (the node stores the
//! pipelines and runs them on the write path: `tessera_node::ingest`).
//!
//! - [`document`]: the document a pipeline sees (`_source` plus `_index`, `_id`, `_routing`,
//!   and the `_ingest` metadata) and dotted field paths over it.
//! - [`template`]: the `{{field}}` templates of `set`, `append`, `fail` (mustache's simple
//!   substitutions only).
//! - [`config`]: reading a processor's configuration with OpenSearch's errors.
//! - [`processor`]: one module per family of processors, and the common options (`tag`,
//!   `ignore_failure`, `on_failure`).
//! - [`grok`]: grok expressions compiled to a `regex`, and the standard pattern bank.
//! - [`pipeline`]: a pipeline's definition, parsing and execution (`on_failure`, `drop`,
//!   the `pipeline` processor, verbose traces for `_simulate`).

pub mod config;
pub mod document;
pub mod grok;
pub mod pipeline;
pub mod processor;
pub mod template;

pub use document::IngestDocument;
pub use pipeline::{Outcome, Pipeline, PipelineLookup, TraceEntry};
