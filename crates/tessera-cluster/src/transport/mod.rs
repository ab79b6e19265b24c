//! The node-to-node transport: actions called on other nodes over gRPC (tonic, HTTP/2).
//!
//! One generic unary method carries every action: the request is an envelope (action name,
//! deadline as milliseconds left, calling node) around a body that is already encoded
//! (postcard shard messages), and the answer is the handler's body or its
//! `tessera_common::Error`, which crosses as itself. No `.proto`: the codec frames raw bytes
//! and the service is written by hand the way tonic's generator would write it.
//!
//! - [`codec`]: the raw-bytes tonic codec;
//! - [`envelope`]: the request and answer frames, the method path, the message size limit;
//! - [`actions`]: the action names (OpenSearch's);
//! - [`errors`]: the transport's own failures, as OpenSearch names them;
//! - [`http2`]: the HTTP/2 windows and frame size both sides use, and why;
//! - [`server`]: [`TransportServer`], serving a registry of [`Handlers`];
//! - [`client`]: [`TransportClient`], one cached channel per node address;
//! - [`remote_shard`]: [`RemoteShard`], a `ShardSearcher` over the client, and
//!   [`register_search_handlers`], its receiving side.

pub mod actions;
pub mod client;
pub mod codec;
pub mod envelope;
pub mod errors;
pub mod http2;
pub mod remote_shard;
pub mod server;

pub use client::{ClientSettings, TransportClient};
pub use codec::BytesCodec;
pub use remote_shard::{register_search_handlers, ReceivingRuns, RemoteShard, ShardLookup};
pub use server::{Handler, HandlerFuture, Handlers, RequestContext, ServerHandle, TransportServer};
