//! Every endpoint Tessera serves: method, path pattern, accepted parameters, handler.

use axum::http::Method;

use crate::cat_table::CAT_PARAMS;
use crate::handler;
use crate::handlers::{
    aliases, allocation, bulk, by_query, cat, cluster, cluster_stats, data_streams, documents,
    indices, ingest, msearch, nodes, pending_tasks, recovery, resize, resolve, root, scripts,
    scroll, search, segments, snapshots, stats, tasks, templates,
};
use crate::router::Route;

/// The URL parameters of `_stats`.
const STATS_PARAMS: &[&str] = &[
    "level",
    "expand_wildcards",
    "ignore_unavailable",
    "allow_no_indices",
    "forbid_closed_indices",
    "groups",
    "types",
    "completion_fields",
    "fielddata_fields",
    "fields",
    "include_segment_file_sizes",
    "include_unloaded_segments",
];

/// The URL parameters of `_nodes/stats`.
const NODES_STATS: &[&str] = &[
    "level",
    "timeout",
    "groups",
    "types",
    "completion_fields",
    "fielddata_fields",
    "fields",
    "include_segment_file_sizes",
];

/// The URL parameters of `_cluster/state`.
const CLUSTER_STATE: &[&str] = &[
    "local",
    "flat_settings",
    "master_timeout",
    "cluster_manager_timeout",
];

/// The URL parameters of `_cat/recovery`: the `_cat` ones, and `_recovery`'s.
const CAT_RECOVERY: &[&str] = &[
    "format",
    "h",
    "help",
    "s",
    "v",
    "bytes",
    "time",
    "local",
    "master_timeout",
    "cluster_manager_timeout",
    "expand_wildcards",
    "ignore_unavailable",
    "allow_no_indices",
    "active_only",
    "detailed",
];

/// The URL parameters of `_cat/segment_replication`: the `_cat` ones, and its filters.
const CAT_SEGMENT_REPLICATION: &[&str] = &[
    "format",
    "h",
    "help",
    "s",
    "v",
    "bytes",
    "time",
    "local",
    "master_timeout",
    "cluster_manager_timeout",
    "expand_wildcards",
    "ignore_unavailable",
    "allow_no_indices",
    "active_only",
    "completed_only",
    "detailed",
    "shards",
    "timeout",
];

/// The URL parameters of the snapshot APIs that name a cluster manager timeout.
const SNAPSHOT: &[&str] = &["master_timeout", "cluster_manager_timeout"];
/// ... and those that may wait for the work to finish.
const SNAPSHOT_WAIT: &[&str] = &[
    "master_timeout",
    "cluster_manager_timeout",
    "wait_for_completion",
];

const GET: Method = Method::GET;
const POST: Method = Method::POST;
const PUT: Method = Method::PUT;
const DELETE: Method = Method::DELETE;
const HEAD: Method = Method::HEAD;

const TIMEOUTS: [&str; 3] = ["timeout", "master_timeout", "cluster_manager_timeout"];
/// `_shrink`, `_split`, `_clone`: `copy_settings` may only be true.
const RESIZE: &[&str] = &[
    "copy_settings",
    "wait_for_active_shards",
    TIMEOUTS[0],
    TIMEOUTS[1],
    TIMEOUTS[2],
];
const INDEX_READ: &[&str] = &[
    "flat_settings",
    "include_defaults",
    "local",
    "ignore_unavailable",
    "allow_no_indices",
    "expand_wildcards",
    "master_timeout",
    "cluster_manager_timeout",
];
const INDEX_WRITE: &[&str] = &[
    "timeout",
    "master_timeout",
    "cluster_manager_timeout",
    "ignore_unavailable",
    "allow_no_indices",
    "expand_wildcards",
    "wait_for_active_shards",
    "preserve_existing",
    "flat_settings",
    "write_index_only",
];
const BROADCAST: &[&str] = &[
    "ignore_unavailable",
    "allow_no_indices",
    "expand_wildcards",
    "force",
    "wait_if_ongoing",
    "max_num_segments",
    "only_expunge_deletes",
    "flush",
];
const DOC_WRITE: &[&str] = &[
    "routing",
    "refresh",
    "op_type",
    "if_seq_no",
    "if_primary_term",
    "version",
    "version_type",
    "pipeline",
    "timeout",
    "wait_for_active_shards",
    "require_alias",
];
const DOC_READ: &[&str] = &[
    "routing",
    "preference",
    "realtime",
    "refresh",
    "_source",
    "_source_includes",
    "_source_excludes",
    "stored_fields",
    "version",
    "version_type",
];
const UPDATE: &[&str] = &[
    "routing",
    "refresh",
    "if_seq_no",
    "if_primary_term",
    "retry_on_conflict",
    "_source",
    "_source_includes",
    "_source_excludes",
    "timeout",
    "wait_for_active_shards",
    "require_alias",
    "lang",
];
const BULK: &[&str] = &[
    "routing",
    "refresh",
    "pipeline",
    "timeout",
    "wait_for_active_shards",
    "require_alias",
    "_source",
    "_source_includes",
    "_source_excludes",
    "type",
];
const SEARCH: &[&str] = &[
    "q",
    "df",
    "default_operator",
    "analyzer",
    "analyze_wildcard",
    "lenient",
    "from",
    "size",
    "sort",
    "_source",
    "_source_includes",
    "_source_excludes",
    "stored_fields",
    "docvalue_fields",
    "track_total_hits",
    "track_scores",
    "timeout",
    "terminate_after",
    "search_type",
    "request_cache",
    "routing",
    "preference",
    "allow_no_indices",
    "ignore_unavailable",
    "expand_wildcards",
    "ignore_throttled",
    "rest_total_hits_as_int",
    "typed_keys",
    "batched_reduce_size",
    "pre_filter_shard_size",
    "max_concurrent_shard_requests",
    "ccs_minimize_roundtrips",
    "allow_partial_search_results",
    "version",
    "seq_no_primary_term",
    "explain",
    "scroll",
    "cancel_after_time_interval",
    "phase_took",
    "include_named_queries_score",
    "search_pipeline",
    "stats",
];
/// `_search/scroll`.
const SCROLL: &[&str] = &["scroll", "scroll_id", "rest_total_hits_as_int"];
/// `_search/point_in_time` on an index.
const CREATE_PIT: &[&str] = &[
    "keep_alive",
    "routing",
    "preference",
    "expand_wildcards",
    "allow_partial_pit_creation",
];
const COUNT: &[&str] = &[
    "q",
    "df",
    "default_operator",
    "analyzer",
    "analyze_wildcard",
    "lenient",
    "routing",
    "preference",
    "allow_no_indices",
    "ignore_unavailable",
    "expand_wildcards",
    "ignore_throttled",
    "min_score",
    "terminate_after",
];
const HEALTH: &[&str] = &[
    "wait_for_status",
    "timeout",
    "level",
    "local",
    "master_timeout",
    "cluster_manager_timeout",
    "wait_for_nodes",
    "wait_for_active_shards",
    "wait_for_no_relocating_shards",
    "wait_for_no_initializing_shards",
    "wait_for_events",
    "expand_wildcards",
    "awareness_attribute",
    "ensure_node_commission",
];

/// All routes.
/// The parameters of a template read.
const TEMPLATE_READ: &[&str] = &["local", "flat_settings", TIMEOUTS[1], TIMEOUTS[2]];

/// The five routes of a template family (`/_index_template`, `/_component_template`,
/// `/_template`): put, delete, get all, get and head by name.
macro_rules! template_routes {
    ($base:literal) => {
        [
            Route {
                methods: &[PUT, POST],
                pattern: concat!($base, "/{name}"),
                params: &[
                    "create",
                    "cause",
                    "order",
                    TIMEOUTS[0],
                    TIMEOUTS[1],
                    TIMEOUTS[2],
                ],
                handler: handler!(templates::put),
            },
            Route {
                methods: &[DELETE],
                pattern: concat!($base, "/{name}"),
                params: &TIMEOUTS,
                handler: handler!(templates::delete),
            },
            Route {
                methods: &[GET],
                pattern: $base,
                params: TEMPLATE_READ,
                handler: handler!(templates::get),
            },
            Route {
                methods: &[GET],
                pattern: concat!($base, "/{name}"),
                params: TEMPLATE_READ,
                handler: handler!(templates::get),
            },
            Route {
                methods: &[HEAD],
                pattern: concat!($base, "/{name}"),
                params: TEMPLATE_READ,
                handler: handler!(templates::exists),
            },
        ]
    };
}

pub fn all() -> Vec<Route> {
    let mut routes = vec![
        Route {
            methods: &[GET, HEAD],
            pattern: "/",
            params: &[],
            handler: handler!(root::info),
        },
        // cluster
        Route {
            methods: &[GET],
            pattern: "/_cluster/health",
            params: HEALTH,
            handler: handler!(cluster::health),
        },
        Route {
            methods: &[GET],
            pattern: "/_cluster/health/{index}",
            params: HEALTH,
            handler: handler!(cluster::health),
        },
        Route {
            methods: &[GET],
            pattern: "/_cluster/settings",
            params: &[
                "flat_settings",
                "include_defaults",
                "local",
                "master_timeout",
                "cluster_manager_timeout",
                "timeout",
            ],
            handler: handler!(cluster::get_settings),
        },
        Route {
            methods: &[GET],
            pattern: "/_cluster/state",
            params: CLUSTER_STATE,
            handler: handler!(cluster::state),
        },
        Route {
            methods: &[GET],
            pattern: "/_cluster/state/{metric}",
            params: CLUSTER_STATE,
            handler: handler!(cluster::state),
        },
        Route {
            methods: &[GET],
            pattern: "/_cluster/state/{metric}/{index}",
            params: CLUSTER_STATE,
            handler: handler!(cluster::state),
        },
        Route {
            methods: &[GET, POST],
            pattern: "/_cluster/allocation/explain",
            params: &["include_yes_decisions", "include_disk_info"],
            handler: handler!(allocation::explain),
        },
        Route {
            methods: &[PUT],
            pattern: "/_cluster/settings",
            params: &[
                "flat_settings",
                "master_timeout",
                "cluster_manager_timeout",
                "timeout",
            ],
            handler: handler!(cluster::put_settings),
        },
        // ingest pipelines
        Route {
            methods: &[PUT],
            pattern: "/_ingest/pipeline/{id}",
            params: &["master_timeout", "cluster_manager_timeout", "timeout"],
            handler: handler!(ingest::put),
        },
        Route {
            methods: &[GET],
            pattern: "/_ingest/pipeline/{id}",
            params: &["master_timeout", "cluster_manager_timeout"],
            handler: handler!(ingest::get),
        },
        Route {
            methods: &[GET],
            pattern: "/_ingest/pipeline",
            params: &["master_timeout", "cluster_manager_timeout"],
            handler: handler!(ingest::get),
        },
        Route {
            methods: &[DELETE],
            pattern: "/_ingest/pipeline/{id}",
            params: &["master_timeout", "cluster_manager_timeout", "timeout"],
            handler: handler!(ingest::delete),
        },
        Route {
            methods: &[GET, POST],
            pattern: "/_ingest/pipeline/_simulate",
            params: &["verbose"],
            handler: handler!(ingest::simulate),
        },
        Route {
            methods: &[GET, POST],
            pattern: "/_ingest/pipeline/{id}/_simulate",
            params: &["verbose"],
            handler: handler!(ingest::simulate),
        },
        Route {
            methods: &[GET],
            pattern: "/_ingest/processor/grok",
            params: &["s", "ecs_compatibility"],
            handler: handler!(ingest::grok_patterns),
        },
        // scripts
        Route {
            methods: &[GET, POST],
            pattern: "/_scripts/painless/_execute",
            params: &[],
            handler: handler!(scripts::execute),
        },
        // index statistics
        Route {
            methods: &[GET],
            pattern: "/_stats",
            params: STATS_PARAMS,
            handler: handler!(stats::stats),
        },
        Route {
            methods: &[GET],
            pattern: "/_stats/{metric}",
            params: STATS_PARAMS,
            handler: handler!(stats::stats),
        },
        Route {
            methods: &[GET],
            pattern: "/{index}/_stats",
            params: STATS_PARAMS,
            handler: handler!(stats::stats),
        },
        Route {
            methods: &[GET],
            pattern: "/{index}/_stats/{metric}",
            params: STATS_PARAMS,
            handler: handler!(stats::stats),
        },
        // recoveries
        Route {
            methods: &[GET],
            pattern: "/_recovery",
            params: recovery::RECOVERY_PARAMS,
            handler: handler!(recovery::recovery),
        },
        Route {
            methods: &[GET],
            pattern: "/{index}/_recovery",
            params: recovery::RECOVERY_PARAMS,
            handler: handler!(recovery::recovery),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/recovery",
            params: CAT_RECOVERY,
            handler: handler!(recovery::cat_recovery),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/recovery/{index}",
            params: CAT_RECOVERY,
            handler: handler!(recovery::cat_recovery),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/segment_replication",
            params: CAT_SEGMENT_REPLICATION,
            handler: handler!(recovery::cat_segment_replication),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/segment_replication/{index}",
            params: CAT_SEGMENT_REPLICATION,
            handler: handler!(recovery::cat_segment_replication),
        },
        // nodes
        Route {
            methods: &[GET],
            pattern: "/_nodes",
            params: &["flat_settings", "timeout"],
            handler: handler!(nodes::info),
        },
        Route {
            methods: &[GET],
            pattern: "/_nodes/{node_id}",
            params: &["flat_settings", "timeout"],
            handler: handler!(nodes::info),
        },
        Route {
            methods: &[GET],
            pattern: "/_nodes/{node_id}/{metric}",
            params: &["flat_settings", "timeout"],
            handler: handler!(nodes::info),
        },
        Route {
            methods: &[GET],
            pattern: "/_nodes/{node_id}/info/{metric}",
            params: &["flat_settings", "timeout"],
            handler: handler!(nodes::info),
        },
        Route {
            methods: &[GET],
            pattern: "/_nodes/stats",
            params: NODES_STATS,
            handler: handler!(nodes::stats),
        },
        Route {
            methods: &[GET],
            pattern: "/_nodes/{node_id}/stats",
            params: NODES_STATS,
            handler: handler!(nodes::stats),
        },
        Route {
            methods: &[GET],
            pattern: "/_nodes/stats/{metric}",
            params: NODES_STATS,
            handler: handler!(nodes::stats),
        },
        Route {
            methods: &[GET],
            pattern: "/_nodes/{node_id}/stats/{metric}",
            params: NODES_STATS,
            handler: handler!(nodes::stats),
        },
        Route {
            methods: &[GET],
            pattern: "/_nodes/stats/{metric}/{index_metric}",
            params: NODES_STATS,
            handler: handler!(nodes::stats),
        },
        Route {
            methods: &[GET],
            pattern: "/_nodes/{node_id}/stats/{metric}/{index_metric}",
            params: NODES_STATS,
            handler: handler!(nodes::stats),
        },
        // cat
        Route {
            methods: &[GET],
            pattern: "/_cat",
            params: &[],
            handler: handler!(cat::listing),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/aliases",
            params: CAT_PARAMS,
            handler: handler!(aliases::cat),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/aliases/{name}",
            params: CAT_PARAMS,
            handler: handler!(aliases::cat),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/indices",
            params: CAT_PARAMS,
            handler: handler!(cat::indices),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/indices/{index}",
            params: CAT_PARAMS,
            handler: handler!(cat::indices),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/shards",
            params: CAT_PARAMS,
            handler: handler!(cat::shards),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/shards/{index}",
            params: CAT_PARAMS,
            handler: handler!(cat::shards),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/segments",
            params: CAT_PARAMS,
            handler: handler!(cat::segments),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/segments/{index}",
            params: CAT_PARAMS,
            handler: handler!(cat::segments),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/count",
            params: CAT_PARAMS,
            handler: handler!(cat::count),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/count/{index}",
            params: CAT_PARAMS,
            handler: handler!(cat::count),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/health",
            params: CAT_PARAMS,
            handler: handler!(cat::health),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/nodes",
            params: CAT_PARAMS,
            handler: handler!(cat::nodes),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/allocation",
            params: CAT_PARAMS,
            handler: handler!(cat::allocation),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/allocation/{node_id}",
            params: CAT_PARAMS,
            handler: handler!(cat::allocation),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/pending_tasks",
            params: CAT_PARAMS,
            handler: handler!(pending_tasks::cat),
        },
        Route {
            methods: &[GET],
            pattern: "/_cluster/pending_tasks",
            params: &["local", TIMEOUTS[1], TIMEOUTS[2]],
            handler: handler!(pending_tasks::list),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/cluster_manager",
            params: CAT_PARAMS,
            handler: handler!(cat::cluster_manager),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/master",
            params: CAT_PARAMS,
            handler: handler!(cat::cluster_manager),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/thread_pool",
            params: CAT_PARAMS,
            handler: handler!(cat::thread_pool),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/thread_pool/{thread_pool_patterns}",
            params: CAT_PARAMS,
            handler: handler!(cat::thread_pool),
        },
        // search and count
        Route {
            methods: &[GET, POST],
            pattern: "/_search",
            params: SEARCH,
            handler: handler!(search: search::search),
        },
        Route {
            methods: &[GET, POST],
            pattern: "/{index}/_search",
            params: SEARCH,
            handler: handler!(search: search::search),
        },
        Route {
            methods: &[GET, POST],
            pattern: "/_search/scroll",
            params: SCROLL,
            handler: handler!(search: scroll::scroll),
        },
        Route {
            methods: &[GET, POST],
            pattern: "/_search/scroll/{scroll_id}",
            params: SCROLL,
            handler: handler!(search: scroll::scroll),
        },
        Route {
            methods: &[DELETE],
            pattern: "/_search/scroll",
            params: &[],
            handler: handler!(search: scroll::clear_scroll),
        },
        Route {
            methods: &[DELETE],
            pattern: "/_search/scroll/{scroll_id}",
            params: &[],
            handler: handler!(search: scroll::clear_scroll),
        },
        Route {
            methods: &[POST],
            pattern: "/{index}/_search/point_in_time",
            params: CREATE_PIT,
            handler: handler!(search: scroll::create_pit),
        },
        Route {
            methods: &[DELETE],
            pattern: "/_search/point_in_time",
            params: &[],
            handler: handler!(search: scroll::delete_pits),
        },
        Route {
            methods: &[DELETE],
            pattern: "/_search/point_in_time/_all",
            params: &[],
            handler: handler!(search: scroll::delete_pits),
        },
        Route {
            methods: &[GET],
            pattern: "/_search/point_in_time/_all",
            params: &[],
            handler: handler!(search: scroll::list_pits),
        },
        Route {
            methods: &[GET, POST],
            pattern: "/_msearch",
            params: msearch::MSEARCH_PARAMS,
            handler: handler!(search: msearch::msearch),
        },
        Route {
            methods: &[GET, POST],
            pattern: "/{index}/_msearch",
            params: msearch::MSEARCH_PARAMS,
            handler: handler!(search: msearch::msearch),
        },
        Route {
            methods: &[GET, POST],
            pattern: "/_count",
            params: COUNT,
            handler: handler!(search: search::count),
        },
        Route {
            methods: &[GET, POST],
            pattern: "/{index}/_count",
            params: COUNT,
            handler: handler!(search: search::count),
        },
        // rewriting data, and the tasks that do it
        Route {
            methods: &[POST],
            pattern: "/{index}/_delete_by_query",
            params: by_query::BY_QUERY_PARAMS,
            handler: handler!(by_query::delete_by_query),
        },
        Route {
            methods: &[POST],
            pattern: "/{index}/_update_by_query",
            params: by_query::BY_QUERY_PARAMS,
            handler: handler!(by_query::update_by_query),
        },
        Route {
            methods: &[POST],
            pattern: "/_reindex",
            params: by_query::REINDEX_PARAMS,
            handler: handler!(by_query::reindex),
        },
        Route {
            methods: &[POST],
            pattern: "/_reindex/{task_id}/_rethrottle",
            params: tasks::RETHROTTLE_PARAMS,
            handler: handler!(tasks::rethrottle),
        },
        Route {
            methods: &[POST],
            pattern: "/_update_by_query/{task_id}/_rethrottle",
            params: tasks::RETHROTTLE_PARAMS,
            handler: handler!(tasks::rethrottle),
        },
        Route {
            methods: &[POST],
            pattern: "/_delete_by_query/{task_id}/_rethrottle",
            params: tasks::RETHROTTLE_PARAMS,
            handler: handler!(tasks::rethrottle),
        },
        Route {
            methods: &[GET],
            pattern: "/_tasks",
            params: tasks::LIST_PARAMS,
            handler: handler!(tasks::list),
        },
        Route {
            methods: &[GET],
            pattern: "/_tasks/{task_id}",
            params: tasks::GET_PARAMS,
            handler: handler!(tasks::get),
        },
        Route {
            methods: &[POST],
            pattern: "/_tasks/_cancel",
            params: tasks::CANCEL_PARAMS,
            handler: handler!(tasks::cancel),
        },
        Route {
            methods: &[POST],
            pattern: "/_tasks/{task_id}/_cancel",
            params: tasks::CANCEL_PARAMS,
            handler: handler!(tasks::cancel),
        },
        // documents
        Route {
            methods: &[POST, PUT],
            pattern: "/_bulk",
            params: BULK,
            handler: handler!(write: bulk::bulk),
        },
        Route {
            methods: &[POST, PUT],
            pattern: "/{index}/_bulk",
            params: BULK,
            handler: handler!(write: bulk::bulk),
        },
        Route {
            methods: &[GET],
            pattern: "/{index}/_doc/{id}",
            params: DOC_READ,
            handler: handler!(documents::get),
        },
        Route {
            methods: &[POST, PUT],
            pattern: "/{index}/_doc/{id}",
            params: DOC_WRITE,
            handler: handler!(write: documents::index),
        },
        Route {
            methods: &[DELETE],
            pattern: "/{index}/_doc/{id}",
            params: DOC_WRITE,
            handler: handler!(write: documents::delete),
        },
        Route {
            methods: &[HEAD],
            pattern: "/{index}/_doc/{id}",
            params: DOC_READ,
            handler: handler!(documents::exists),
        },
        Route {
            methods: &[POST],
            pattern: "/{index}/_doc",
            params: DOC_WRITE,
            handler: handler!(write: documents::index),
        },
        Route {
            methods: &[PUT, POST],
            pattern: "/{index}/_create/{id}",
            params: DOC_WRITE,
            handler: handler!(write: documents::index),
        },
        Route {
            methods: &[GET, HEAD],
            pattern: "/{index}/_source/{id}",
            params: DOC_READ,
            handler: handler!(documents::source),
        },
        Route {
            methods: &[POST],
            pattern: "/{index}/_update/{id}",
            params: UPDATE,
            handler: handler!(write: documents::update),
        },
        Route {
            methods: &[GET, POST],
            pattern: "/_mget",
            params: DOC_READ,
            handler: handler!(documents::mget),
        },
        Route {
            methods: &[GET, POST],
            pattern: "/{index}/_mget",
            params: DOC_READ,
            handler: handler!(documents::mget),
        },
        // index administration
        Route {
            methods: &[GET],
            pattern: "/{index}",
            params: INDEX_READ,
            handler: handler!(indices::get),
        },
        Route {
            methods: &[DELETE],
            pattern: "/{index}",
            params: INDEX_WRITE,
            handler: handler!(indices::delete),
        },
        Route {
            methods: &[HEAD],
            pattern: "/{index}",
            params: INDEX_READ,
            handler: handler!(indices::exists),
        },
        Route {
            methods: &[PUT],
            pattern: "/{index}",
            params: &[
                "wait_for_active_shards",
                TIMEOUTS[0],
                TIMEOUTS[1],
                TIMEOUTS[2],
                "include_type_name",
            ],
            handler: handler!(indices::create),
        },
        Route {
            methods: &[GET],
            pattern: "/_mapping",
            params: INDEX_READ,
            handler: handler!(indices::get_mapping),
        },
        Route {
            methods: &[GET],
            pattern: "/{index}/_mapping",
            params: INDEX_READ,
            handler: handler!(indices::get_mapping),
        },
        Route {
            methods: &[PUT, POST],
            pattern: "/{index}/_mapping",
            params: INDEX_WRITE,
            handler: handler!(indices::put_mapping),
        },
        Route {
            methods: &[GET],
            pattern: "/_mapping/field/{fields}",
            params: INDEX_READ,
            handler: handler!(indices::get_field_mapping),
        },
        Route {
            methods: &[GET],
            pattern: "/{index}/_mapping/field/{fields}",
            params: INDEX_READ,
            handler: handler!(indices::get_field_mapping),
        },
        Route {
            methods: &[GET],
            pattern: "/_settings",
            params: INDEX_READ,
            handler: handler!(indices::get_settings),
        },
        Route {
            methods: &[GET],
            pattern: "/{index}/_settings",
            params: INDEX_READ,
            handler: handler!(indices::get_settings),
        },
        Route {
            methods: &[GET],
            pattern: "/{index}/_settings/{name}",
            params: INDEX_READ,
            handler: handler!(indices::get_settings),
        },
        Route {
            methods: &[PUT],
            pattern: "/_settings",
            params: INDEX_WRITE,
            handler: handler!(indices::put_settings),
        },
        Route {
            methods: &[PUT],
            pattern: "/{index}/_settings",
            params: INDEX_WRITE,
            handler: handler!(indices::put_settings),
        },
        Route {
            methods: &[POST],
            pattern: "/_index_template/_simulate_index/{name}",
            params: &TIMEOUTS,
            handler: handler!(templates::simulate_index),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/templates",
            params: CAT_PARAMS,
            handler: handler!(templates::cat),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/templates/{name}",
            params: CAT_PARAMS,
            handler: handler!(templates::cat),
        },
        Route {
            methods: &[POST],
            pattern: "/{index}/_close",
            params: &[
                "ignore_unavailable",
                "allow_no_indices",
                "expand_wildcards",
                "wait_for_active_shards",
                TIMEOUTS[0],
                TIMEOUTS[1],
                TIMEOUTS[2],
            ],
            handler: handler!(indices::close),
        },
        Route {
            methods: &[POST],
            pattern: "/{index}/_open",
            params: &[
                "ignore_unavailable",
                "allow_no_indices",
                "expand_wildcards",
                "wait_for_active_shards",
                TIMEOUTS[0],
                TIMEOUTS[1],
                TIMEOUTS[2],
            ],
            handler: handler!(indices::open),
        },
        Route {
            methods: &[PUT, POST],
            pattern: "/{index}/_shrink/{target}",
            params: RESIZE,
            handler: handler!(resize::shrink),
        },
        Route {
            methods: &[PUT, POST],
            pattern: "/{index}/_split/{target}",
            params: RESIZE,
            handler: handler!(resize::split),
        },
        Route {
            methods: &[PUT, POST],
            pattern: "/{index}/_clone/{target}",
            params: RESIZE,
            handler: handler!(resize::clone),
        },
        Route {
            methods: &[GET],
            pattern: "/_cluster/stats",
            params: &["timeout", "flat_settings"],
            handler: handler!(cluster_stats::cluster_stats),
        },
        Route {
            methods: &[GET],
            pattern: "/_resolve/index/{name}",
            params: &["expand_wildcards"],
            handler: handler!(resolve::resolve_index),
        },
        Route {
            methods: &[GET],
            pattern: "/_segments",
            params: INDEX_READ,
            handler: handler!(segments::segments),
        },
        Route {
            methods: &[GET],
            pattern: "/{index}/_segments",
            params: INDEX_READ,
            handler: handler!(segments::segments),
        },
        Route {
            methods: &[POST],
            pattern: "/_cache/clear",
            params: &[
                "ignore_unavailable",
                "allow_no_indices",
                "expand_wildcards",
                "fielddata",
                "query",
                "request",
                "fields",
                "file",
            ],
            handler: handler!(indices::clear_cache),
        },
        Route {
            methods: &[POST],
            pattern: "/{index}/_cache/clear",
            params: &[
                "ignore_unavailable",
                "allow_no_indices",
                "expand_wildcards",
                "fielddata",
                "query",
                "request",
                "fields",
                "file",
            ],
            handler: handler!(indices::clear_cache),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/tasks",
            params: &[
                "format",
                "h",
                "help",
                "s",
                "v",
                "time",
                "actions",
                "detailed",
                "nodes",
                "parent_task_id",
            ],
            handler: handler!(cat::tasks),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/plugins",
            params: CAT_PARAMS,
            handler: handler!(cat::plugins),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/nodeattrs",
            params: CAT_PARAMS,
            handler: handler!(cat::nodeattrs),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/fielddata",
            params: CAT_PARAMS,
            handler: handler!(cat::fielddata),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/fielddata/{fields}",
            params: CAT_PARAMS,
            handler: handler!(cat::fielddata),
        },
        Route {
            methods: &[PUT, POST],
            pattern: "/_snapshot/{repository}",
            params: &[
                "master_timeout",
                "cluster_manager_timeout",
                "timeout",
                "verify",
            ],
            handler: handler!(snapshots::put_repository),
        },
        Route {
            methods: &[GET],
            pattern: "/_snapshot",
            params: &["master_timeout", "cluster_manager_timeout", "local"],
            handler: handler!(snapshots::get_repositories),
        },
        Route {
            methods: &[GET],
            pattern: "/_snapshot/{repository}",
            params: &["master_timeout", "cluster_manager_timeout", "local"],
            handler: handler!(snapshots::get_repositories),
        },
        Route {
            methods: &[DELETE],
            pattern: "/_snapshot/{repository}",
            params: &["master_timeout", "cluster_manager_timeout", "timeout"],
            handler: handler!(snapshots::delete_repository),
        },
        Route {
            methods: &[POST],
            pattern: "/_snapshot/{repository}/_verify",
            params: &["master_timeout", "cluster_manager_timeout", "timeout"],
            handler: handler!(snapshots::verify_repository),
        },
        Route {
            methods: &[PUT, POST],
            pattern: "/_snapshot/{repository}/{snapshot}",
            params: SNAPSHOT_WAIT,
            handler: handler!(snapshots::create),
        },
        Route {
            methods: &[GET],
            pattern: "/_snapshot/{repository}/{snapshot}",
            params: &[
                "master_timeout",
                "cluster_manager_timeout",
                "ignore_unavailable",
                "verbose",
            ],
            handler: handler!(snapshots::get),
        },
        Route {
            methods: &[DELETE],
            pattern: "/_snapshot/{repository}/{snapshot}",
            params: SNAPSHOT,
            handler: handler!(snapshots::delete),
        },
        Route {
            methods: &[GET],
            pattern: "/_snapshot/_status",
            params: SNAPSHOT,
            handler: handler!(snapshots::status),
        },
        Route {
            methods: &[GET],
            pattern: "/_snapshot/{repository}/_status",
            params: SNAPSHOT,
            handler: handler!(snapshots::status),
        },
        Route {
            methods: &[GET],
            pattern: "/_snapshot/{repository}/{snapshot}/_status",
            params: &[
                "master_timeout",
                "cluster_manager_timeout",
                "ignore_unavailable",
            ],
            handler: handler!(snapshots::status),
        },
        Route {
            methods: &[POST],
            pattern: "/_snapshot/{repository}/{snapshot}/_restore",
            params: SNAPSHOT_WAIT,
            handler: handler!(snapshots::restore),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/snapshots",
            params: CAT_PARAMS,
            handler: handler!(snapshots::cat_snapshots),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/snapshots/{repository}",
            params: CAT_PARAMS,
            handler: handler!(snapshots::cat_snapshots),
        },
        Route {
            methods: &[GET],
            pattern: "/_cat/repositories",
            params: CAT_PARAMS,
            handler: handler!(snapshots::cat_repositories),
        },
        Route {
            methods: &[PUT],
            pattern: "/_data_stream/{name}",
            params: &TIMEOUTS,
            handler: handler!(data_streams::create),
        },
        Route {
            methods: &[DELETE],
            pattern: "/_data_stream/{name}",
            params: &TIMEOUTS,
            handler: handler!(data_streams::delete),
        },
        Route {
            methods: &[GET],
            pattern: "/_data_stream",
            params: &TIMEOUTS,
            handler: handler!(data_streams::get),
        },
        Route {
            methods: &[GET],
            pattern: "/_data_stream/{name}",
            params: &TIMEOUTS,
            handler: handler!(data_streams::get),
        },
        Route {
            methods: &[GET],
            pattern: "/_data_stream/_stats",
            params: &TIMEOUTS,
            handler: handler!(data_streams::stats),
        },
        Route {
            methods: &[GET],
            pattern: "/_data_stream/{name}/_stats",
            params: &TIMEOUTS,
            handler: handler!(data_streams::stats),
        },
        Route {
            methods: &[POST],
            pattern: "/{index}/_rollover",
            params: &[
                "dry_run",
                "wait_for_active_shards",
                TIMEOUTS[0],
                TIMEOUTS[1],
                TIMEOUTS[2],
            ],
            handler: handler!(data_streams::rollover),
        },
        Route {
            methods: &[POST],
            pattern: "/{index}/_rollover/{new_index}",
            params: &[
                "dry_run",
                "wait_for_active_shards",
                TIMEOUTS[0],
                TIMEOUTS[1],
                TIMEOUTS[2],
            ],
            handler: handler!(data_streams::rollover),
        },
        Route {
            methods: &[POST],
            pattern: "/_aliases",
            params: &TIMEOUTS,
            handler: handler!(aliases::update),
        },
        Route {
            methods: &[PUT, POST],
            pattern: "/{index}/_alias/{name}",
            params: &TIMEOUTS,
            handler: handler!(aliases::put),
        },
        Route {
            methods: &[PUT, POST],
            pattern: "/{index}/_aliases/{name}",
            params: &TIMEOUTS,
            handler: handler!(aliases::put),
        },
        Route {
            methods: &[PUT, POST],
            pattern: "/_alias/{name}",
            params: &TIMEOUTS,
            handler: handler!(aliases::put),
        },
        Route {
            methods: &[PUT, POST],
            pattern: "/_aliases/{name}",
            params: &TIMEOUTS,
            handler: handler!(aliases::put),
        },
        Route {
            methods: &[DELETE],
            pattern: "/{index}/_alias/{name}",
            params: &TIMEOUTS,
            handler: handler!(aliases::delete),
        },
        Route {
            methods: &[DELETE],
            pattern: "/{index}/_aliases/{name}",
            params: &TIMEOUTS,
            handler: handler!(aliases::delete),
        },
        Route {
            methods: &[GET],
            pattern: "/_alias",
            params: INDEX_READ,
            handler: handler!(aliases::get),
        },
        Route {
            methods: &[GET],
            pattern: "/_aliases",
            params: INDEX_READ,
            handler: handler!(aliases::get),
        },
        Route {
            methods: &[GET],
            pattern: "/_alias/{name}",
            params: INDEX_READ,
            handler: handler!(aliases::get),
        },
        Route {
            methods: &[GET],
            pattern: "/{index}/_alias",
            params: INDEX_READ,
            handler: handler!(aliases::get),
        },
        Route {
            methods: &[GET],
            pattern: "/{index}/_alias/{name}",
            params: INDEX_READ,
            handler: handler!(aliases::get),
        },
        Route {
            methods: &[HEAD],
            pattern: "/_alias/{name}",
            params: INDEX_READ,
            handler: handler!(aliases::exists),
        },
        Route {
            methods: &[HEAD],
            pattern: "/{index}/_alias",
            params: INDEX_READ,
            handler: handler!(aliases::exists),
        },
        Route {
            methods: &[HEAD],
            pattern: "/{index}/_alias/{name}",
            params: INDEX_READ,
            handler: handler!(aliases::exists),
        },
        Route {
            methods: &[PUT],
            pattern: "/{index}/_block/{block}",
            params: INDEX_WRITE,
            handler: handler!(indices::add_block),
        },
        Route {
            methods: &[GET, POST],
            pattern: "/_refresh",
            params: BROADCAST,
            handler: handler!(indices::refresh),
        },
        Route {
            methods: &[GET, POST],
            pattern: "/{index}/_refresh",
            params: BROADCAST,
            handler: handler!(indices::refresh),
        },
        Route {
            methods: &[GET, POST],
            pattern: "/_flush",
            params: BROADCAST,
            handler: handler!(indices::flush),
        },
        Route {
            methods: &[GET, POST],
            pattern: "/{index}/_flush",
            params: BROADCAST,
            handler: handler!(indices::flush),
        },
        Route {
            methods: &[POST],
            pattern: "/_forcemerge",
            params: BROADCAST,
            handler: handler!(indices::force_merge),
        },
        Route {
            methods: &[POST],
            pattern: "/{index}/_forcemerge",
            params: BROADCAST,
            handler: handler!(indices::force_merge),
        },
    ];
    routes.extend(template_routes!("/_index_template"));
    routes.extend(template_routes!("/_component_template"));
    routes.extend(template_routes!("/_template"));
    routes
}
