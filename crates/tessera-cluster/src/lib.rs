//! The cluster layer: what every node must agree on (the cluster state, read and written through
//! the `MetaStore` trait) and how nodes talk to each other's shards (the transport). A single node
//! runs the same code over local files and an in-process transport; the cluster issues add etcd
//! and gRPC behind the same seams.
