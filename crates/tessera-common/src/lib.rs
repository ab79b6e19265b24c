//! Building blocks shared by every Tessera crate: the one error type (rendered as an OpenSearch
//! error body), id generation, the routing hash, the settings registry and the node's thread
//! pools with their statistics.

pub mod breaker;
pub mod cpu_limit;
pub mod error;
pub mod ids;
pub mod java_hash;
pub mod java_replacement;
pub mod lucene_queue;
pub mod murmur3;
pub mod params;
pub mod settings;
pub mod threadpool;
pub mod time;

pub use error::{Error, Result};
