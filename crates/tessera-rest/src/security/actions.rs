//! Which OpenSearch action a request performs, and whether it only reads: what a role is
//! checked against, and the name a permission error quotes (`no permissions for
//! [indices:data/write/bulk] ...`, as OpenSearch security names its transport actions).
//!
//! The action follows from the method and the first path segment starting with `_` (index
//! names cannot start with `_`, so besides the index expression `_all` that segment is the API; `/{index}/_doc/_search` is a
//! document write, not a search). Some POSTs only read (`_search`, `_count`, `_msearch`, `_mget`,
//! `_field_caps`, `_validate`, `_explain`, term vectors); some GETs write (`_refresh`, `_flush`).

use std::borrow::Cow;

use axum::http::Method;

/// The action a request performs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    /// OpenSearch's action name, e.g. `indices:data/read/search`.
    pub name: Cow<'static, str>,
    /// Whether a read-only role may perform it.
    pub read_only: bool,
}

fn action(name: &'static str, read_only: bool) -> Action {
    Action {
        name: Cow::Borrowed(name),
        read_only,
    }
}

/// The action of `method` on `path`.
pub fn classify(method: &Method, path: &str) -> Action {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    // `_all` is the one index expression starting with `_`
    let api_at = segments
        .iter()
        .enumerate()
        .position(|(i, s)| s.starts_with('_') && !(i == 0 && *s == "_all"));
    let reading = *method == Method::GET || *method == Method::HEAD;
    let reading_or_post = reading || *method == Method::POST;
    let Some(at) = api_at else {
        return if segments.is_empty() {
            action("cluster:monitor/main", reading)
        } else if reading {
            action("indices:admin/get", true)
        } else if *method == Method::DELETE {
            action("indices:admin/delete", false)
        } else {
            action("indices:admin/create", false)
        };
    };
    let next = segments.get(at + 1).copied().unwrap_or("");
    match segments[at] {
        // a scroll or a point in time only reads, its clearing and deleting included
        "_search" if next == "scroll" && *method == Method::DELETE => {
            action("indices:data/read/scroll/clear", true)
        }
        "_search" if next == "scroll" => action("indices:data/read/scroll", reading_or_post),
        "_search" if next == "point_in_time" => match *method {
            Method::POST => action("indices:data/read/point_in_time/create", true),
            Method::DELETE => action("indices:data/read/point_in_time/delete", true),
            _ => action("indices:data/read/point_in_time/readall", reading),
        },
        "_search" if next == "template" => {
            action("indices:data/read/search/template", reading_or_post)
        }
        "_msearch" if next == "template" => {
            action("indices:data/read/msearch/template", reading_or_post)
        }
        // rendering a template reads nothing but the stored scripts
        "_render" => action("cluster:admin/script/template/render", reading_or_post),
        "_search" | "_count" => action("indices:data/read/search", reading_or_post),
        "_msearch" => action("indices:data/read/msearch", reading_or_post),
        "_mget" => action("indices:data/read/mget", reading_or_post),
        "_field_caps" => action("indices:data/read/field_caps", reading_or_post),
        "_validate" => action("indices:admin/validate/query", reading_or_post),
        "_explain" => action("indices:data/read/explain", reading_or_post),
        "_termvectors" => action("indices:data/read/tv", reading_or_post),
        "_mtermvectors" => action("indices:data/read/mtv", reading_or_post),
        "_doc" | "_source" if reading => action("indices:data/read/get", true),
        "_doc" if *method == Method::DELETE => action("indices:data/write/delete", false),
        "_doc" | "_create" => action("indices:data/write/index", false),
        "_update" => action("indices:data/write/update", false),
        "_bulk" => action("indices:data/write/bulk", false),
        "_delete_by_query" => action("indices:data/write/delete/byquery", false),
        "_update_by_query" => action("indices:data/write/update/byquery", false),
        "_reindex" => action("indices:data/write/reindex", false),
        "_tasks" if reading && segments.len() > at + 1 => action("cluster:monitor/task/get", true),
        "_tasks" if reading => action("cluster:monitor/tasks/lists", true),
        "_tasks" => action("cluster:admin/tasks/cancel", false),
        "_refresh" => action("indices:admin/refresh", false),
        "_flush" => action("indices:admin/flush", false),
        "_forcemerge" => action("indices:admin/forcemerge", false),
        "_mapping" | "_mappings" if reading => action("indices:admin/mappings/get", true),
        "_mapping" | "_mappings" => action("indices:admin/mapping/put", false),
        "_settings" if reading => action("indices:monitor/settings/get", true),
        "_settings" => action("indices:admin/settings/update", false),
        "_stats" => action("indices:monitor/stats", reading),
        "_shrink" | "_split" | "_clone" => action("indices:admin/resize", false),
        "_cluster" => match next {
            "health" => action("cluster:monitor/health", reading),
            "pending_tasks" => action("cluster:monitor/task", reading),
            "settings" if reading => action("cluster:monitor/settings", true),
            "settings" => action("cluster:admin/settings/update", false),
            _ if reading => action("cluster:monitor/state", true),
            _ => Action {
                name: Cow::Owned(format!("cluster:admin/{next}")),
                read_only: false,
            },
        },
        // pipelines are cluster metadata; a simulation only reads
        "_ingest" if segments.last() == Some(&"_simulate") => {
            action("cluster:admin/ingest/pipeline/simulate", reading_or_post)
        }
        "_ingest" if next == "processor" => {
            action("cluster:admin/ingest/processor/grok/get", reading)
        }
        "_ingest" if reading => action("cluster:admin/ingest/pipeline/get", true),
        "_ingest" if *method == Method::DELETE => {
            action("cluster:admin/ingest/pipeline/delete", false)
        }
        "_ingest" => action("cluster:admin/ingest/pipeline/put", false),
        // running a script changes nothing
        "_scripts" if segments.last() == Some(&"_execute") => {
            action("cluster:admin/scripts/painless/execute", reading_or_post)
        }
        // repositories, snapshots of them, their status and restores
        "_snapshot" => {
            let depth = segments.len() - at;
            match segments.last().copied() {
                Some("_status") => action("cluster:admin/snapshot/status", reading),
                Some("_verify") => action("cluster:admin/repository/verify", false),
                Some("_restore") => action("cluster:admin/snapshot/restore", false),
                _ if depth <= 2 && reading => action("cluster:admin/repository/get", true),
                _ if depth <= 2 && *method == Method::DELETE => {
                    action("cluster:admin/repository/delete", false)
                }
                _ if depth <= 2 => action("cluster:admin/repository/put", false),
                _ if reading => action("cluster:admin/snapshot/get", true),
                _ if *method == Method::DELETE => action("cluster:admin/snapshot/delete", false),
                _ => action("cluster:admin/snapshot/create", false),
            }
        }
        "_nodes" => match segments.get(at + 1..) {
            Some(rest) if rest.contains(&"stats") => action("cluster:monitor/nodes/stats", reading),
            _ => action("cluster:monitor/nodes/info", reading),
        },
        "_cat" => match next {
            "indices" | "shards" => action("indices:monitor/stats", reading),
            "segments" => action("indices:monitor/segments", reading),
            "count" => action("indices:data/read/search", reading),
            "health" => action("cluster:monitor/health", reading),
            "nodes" => action("cluster:monitor/nodes/info", reading),
            "thread_pool" => action("cluster:monitor/nodes/stats", reading),
            "pending_tasks" => action("cluster:monitor/task", reading),
            _ => action("cluster:monitor/state", reading),
        },
        // an API Tessera does not know (the router answers 400 or 405 for it): GETs read
        other if reading => Action {
            name: Cow::Owned(format!("indices:data/read/{}", &other[1..])),
            read_only: true,
        },
        other => Action {
            name: Cow::Owned(format!("indices:admin/{}", &other[1..])),
            read_only: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(method: Method, path: &str, name: &str, read_only: bool) {
        let action = classify(&method, path);
        assert_eq!(action.name, name, "{method} {path}");
        assert_eq!(action.read_only, read_only, "{method} {path}");
    }

    #[test]
    fn resizes_change_indices_and_pending_tasks_only_read() {
        for kind in ["_shrink", "_split", "_clone"] {
            check(
                Method::POST,
                &format!("/src/{kind}/target"),
                "indices:admin/resize",
                false,
            );
        }
        check(
            Method::GET,
            "/_cluster/pending_tasks",
            "cluster:monitor/task",
            true,
        );
        check(
            Method::GET,
            "/_cat/pending_tasks",
            "cluster:monitor/task",
            true,
        );
    }

    #[test]
    fn ingest_pipelines_are_cluster_actions() {
        check(
            Method::PUT,
            "/_ingest/pipeline/p",
            "cluster:admin/ingest/pipeline/put",
            false,
        );
        check(
            Method::GET,
            "/_ingest/pipeline",
            "cluster:admin/ingest/pipeline/get",
            true,
        );
        check(
            Method::DELETE,
            "/_ingest/pipeline/p",
            "cluster:admin/ingest/pipeline/delete",
            false,
        );
        check(
            Method::POST,
            "/_ingest/pipeline/p/_simulate",
            "cluster:admin/ingest/pipeline/simulate",
            true,
        );
        check(
            Method::GET,
            "/_ingest/processor/grok",
            "cluster:admin/ingest/processor/grok/get",
            true,
        );
    }

    #[test]
    fn snapshot_actions() {
        let cases = [
            (
                Method::PUT,
                "/_snapshot/r",
                "cluster:admin/repository/put",
                false,
            ),
            (
                Method::GET,
                "/_snapshot",
                "cluster:admin/repository/get",
                true,
            ),
            (
                Method::GET,
                "/_snapshot/r",
                "cluster:admin/repository/get",
                true,
            ),
            (
                Method::DELETE,
                "/_snapshot/r",
                "cluster:admin/repository/delete",
                false,
            ),
            (
                Method::POST,
                "/_snapshot/r/_verify",
                "cluster:admin/repository/verify",
                false,
            ),
            (
                Method::PUT,
                "/_snapshot/r/s",
                "cluster:admin/snapshot/create",
                false,
            ),
            (
                Method::GET,
                "/_snapshot/r/s",
                "cluster:admin/snapshot/get",
                true,
            ),
            (
                Method::DELETE,
                "/_snapshot/r/s",
                "cluster:admin/snapshot/delete",
                false,
            ),
            (
                Method::GET,
                "/_snapshot/_status",
                "cluster:admin/snapshot/status",
                true,
            ),
            (
                Method::POST,
                "/_snapshot/r/s/_restore",
                "cluster:admin/snapshot/restore",
                false,
            ),
        ];
        for (method, path, name, read_only) in cases {
            check(method, path, name, read_only);
        }
    }

    #[test]
    fn read_only_posts_and_writing_gets() {
        check(
            Method::POST,
            "/logs/_search",
            "indices:data/read/search",
            true,
        );
        check(Method::POST, "/_count", "indices:data/read/search", true);
        check(
            Method::POST,
            "/_search/scroll",
            "indices:data/read/scroll",
            true,
        );
        check(
            Method::DELETE,
            "/_search/scroll/_all",
            "indices:data/read/scroll/clear",
            true,
        );
        check(
            Method::POST,
            "/logs/_search/point_in_time",
            "indices:data/read/point_in_time/create",
            true,
        );
        check(
            Method::DELETE,
            "/_search/point_in_time",
            "indices:data/read/point_in_time/delete",
            true,
        );
        check(Method::POST, "/_msearch", "indices:data/read/msearch", true);
        check(Method::POST, "/a/_mget", "indices:data/read/mget", true);
        check(
            Method::POST,
            "/a/_field_caps",
            "indices:data/read/field_caps",
            true,
        );
        check(
            Method::POST,
            "/a/_validate/query",
            "indices:admin/validate/query",
            true,
        );
        check(
            Method::POST,
            "/a/_explain/1",
            "indices:data/read/explain",
            true,
        );
        check(Method::GET, "/_refresh", "indices:admin/refresh", false);
        check(Method::GET, "/a/_flush", "indices:admin/flush", false);
        check(
            Method::POST,
            "/_all/_forcemerge",
            "indices:admin/forcemerge",
            false,
        );
        check(Method::PUT, "/a/_search", "indices:data/read/search", false);
    }

    #[test]
    fn documents_indices_and_cluster() {
        check(Method::GET, "/", "cluster:monitor/main", true);
        check(Method::HEAD, "/a/_doc/1", "indices:data/read/get", true);
        check(Method::GET, "/a/_source/1", "indices:data/read/get", true);
        check(Method::PUT, "/a/_doc/1", "indices:data/write/index", false);
        // a document id that looks like an API is still a document write
        check(
            Method::POST,
            "/a/_doc/_search",
            "indices:data/write/index",
            false,
        );
        check(
            Method::DELETE,
            "/a/_doc/1",
            "indices:data/write/delete",
            false,
        );
        check(
            Method::PUT,
            "/a/_create/1",
            "indices:data/write/index",
            false,
        );
        check(
            Method::POST,
            "/a/_update/1",
            "indices:data/write/update",
            false,
        );
        check(Method::POST, "/_bulk", "indices:data/write/bulk", false);
        check(
            Method::POST,
            "/_reindex",
            "indices:data/write/reindex",
            false,
        );
        check(Method::GET, "/_tasks", "cluster:monitor/tasks/lists", true);
        check(Method::GET, "/_tasks/n:1", "cluster:monitor/task/get", true);
        check(
            Method::POST,
            "/_tasks/_cancel",
            "cluster:admin/tasks/cancel",
            false,
        );
        check(Method::GET, "/a", "indices:admin/get", true);
        check(Method::GET, "/_all", "indices:admin/get", true);
        check(Method::DELETE, "/_all", "indices:admin/delete", false);
        check(Method::PUT, "/a", "indices:admin/create", false);
        check(Method::DELETE, "/a", "indices:admin/delete", false);
        check(
            Method::GET,
            "/a/_mapping",
            "indices:admin/mappings/get",
            true,
        );
        check(
            Method::PUT,
            "/a/_mapping",
            "indices:admin/mapping/put",
            false,
        );
        check(
            Method::PUT,
            "/_settings",
            "indices:admin/settings/update",
            false,
        );
        check(
            Method::GET,
            "/_cluster/health",
            "cluster:monitor/health",
            true,
        );
        check(
            Method::PUT,
            "/_cluster/settings",
            "cluster:admin/settings/update",
            false,
        );
        check(
            Method::GET,
            "/_nodes/stats/indices",
            "cluster:monitor/nodes/stats",
            true,
        );
        check(Method::GET, "/_cat/indices", "indices:monitor/stats", true);
        check(Method::GET, "/_unknown", "indices:data/read/unknown", true);
        check(Method::POST, "/_unknown", "indices:admin/unknown", false);
    }
}
