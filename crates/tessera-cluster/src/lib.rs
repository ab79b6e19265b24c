//! The cluster layer: what every node must agree on (the cluster state, read and written through
//! the `MetaStore` trait) and how nodes talk to each other's shards (the transport). A single node
//! runs the same code over local files and an in-process transport; a cluster runs it over etcd
//! ([`EtcdMetaStore`]) and gRPC behind the same seams.

pub mod adaptive_selection;
pub mod allocation;
pub mod etcd_process;
pub mod holder;
pub mod layout;
pub mod meta_store;
pub mod state;
pub mod transport;

pub use etcd_process::EtcdProcess;
pub use holder::ClusterStateHolder;
pub use meta_store::etcd::EtcdMetaStore;
pub use meta_store::file::FileMetaStore;
pub use meta_store::{
    Expect, KeyValue, LeaderKey, LeaseId, Listing, MetaError, MetaStore, Revision, TxnOp, Watch,
    WatchEvent,
};
pub use state::{ClusterState, DiscoveryNode, IndexRouting, IndexState, ShardRouting, ShardState};
pub use transport::{
    register_search_handlers, Handlers, ReceivingRuns, RemoteShard, RequestContext,
    TransportClient, TransportServer,
};
