//! The cluster layer: what every node must agree on (the cluster state, read and written through
//! the `MetaStore` trait) and how nodes talk to each other's shards (the transport). A single node
//! runs the same code over local files and an in-process transport; the cluster issues add etcd
//! and gRPC behind the same seams.

pub mod holder;
pub mod meta_store;
pub mod state;
pub mod transport;

pub use holder::ClusterStateHolder;
pub use meta_store::file::FileMetaStore;
pub use meta_store::{Expect, KeyValue, LeaseId, MetaError, MetaStore, Revision};
pub use state::{ClusterState, DiscoveryNode, IndexRouting, IndexState, ShardRouting, ShardState};
pub use transport::{
    register_search_handlers, Handlers, RemoteShard, RequestContext, TransportClient,
    TransportServer,
};
