NAME = "by_query_scripts"
RECORD = "whole"
DESCRIPTION = "Scripts in _update_by_query (ctx._source, ctx.op noop/delete counted as noops/deleted, the ctx keys, the errors that fail the request) and _reindex (a script that changes ctx._id, ctx._routing, ctx._index, ctx.op); expectations copied from OpenSearch 2.19.6"
CLEANUP = ["/compat-sbq*"]
I = "/compat-sbq"
def ubq(body, desc, **kw):
    s = {"desc": desc, "method": "POST", "path": f"{I}/_update_by_query", "params": {"refresh": True}, "body": body}
    s.update(kw)
    return s
def rx(body, desc, **kw):
    s = {"desc": desc, "method": "POST", "path": "/_reindex", "params": {"refresh": True}, "body": body}
    s.update(kw)
    return s
STEPS = [
 {"method": "PUT", "path": I, "body": {"settings": {"number_of_shards": 1, "number_of_replicas": 0}}},
 {"method": "POST", "path": f"{I}/_bulk", "params": {"refresh": True}, "ndjson": [
   {"index": {"_id": "1"}}, {"b": 1, "a": 2, "n": 1},
   {"index": {"_id": "2", "routing": "r"}}, {"b": 1, "a": 2, "n": 2},
   {"index": {"_id": "3"}}, {"b": 1, "a": 2, "n": 3}], "no_expect": True, "expect": {"errors": False}},
 ubq({"script": {"source": "ctx._source.k = ctx.keySet().toString(); ctx._source.m = [ctx._index, ctx._id, ctx._version, ctx._routing, ctx.op].toString()"}, "query": {"term": {"n": 1}}}, "the ctx of an update by query"),
 {"method": "GET", "path": f"{I}/_doc/1"},
 ubq({"script": {"source": "if (ctx._source.n == 1) { ctx.op = 'noop' } else if (ctx._source.n == 2) { ctx.op = 'delete' } else { ctx._source.n += params.d }", "params": {"d": 10}}}, "noop and delete are counted"),
 {"method": "GET", "path": f"{I}/_doc/3"},
 {"method": "GET", "path": f"{I}/_doc/2", "params": {"routing": "r"}},
 ubq({"script": "ctx._source.s = 'x'"}, "a script as a string"),
 ubq({"script": {"source": "ctx.op = 'bogus'"}}, "an unknown op fails the request"),
 ubq({"script": {"source": "ctx.op = 'create'"}}, "create is not an op of an update by query"),
 ubq({"script": {"source": "ctx._id = 'x'"}}, "_id cannot change"),
 ubq({"script": {"source": "ctx._index = 'x'"}}, "_index cannot change"),
 ubq({"script": {"source": "ctx._routing = 'x'"}}, "_routing cannot change"),
 ubq({"script": {"source": "ctx.foo = 1"}}, "ctx cannot grow"),
 ubq({"script": {"source": "ctx.op = null"}}, "ctx.op cannot be cleared"),
 ubq({"script": {"source": "int x = 1 / params.z", "params": {"z": 0}}}, "a runtime error fails the request"),
 ubq({"script": {"source": "ctx._source.x +"}}, "a compile error fails the request"),
 ubq({"script": {"id": "compat-sbq-missing"}}, "a missing stored script"),
 ubq({"script": {"source": "ctx._source = null"}}, "a null source fails each document"),
 rx({"source": {"index": I[1:]}, "dest": {"index": "compat-sbq-2"}, "script": {"source": "ctx._source.k = ctx.keySet().toString(); ctx._source.m = [ctx._index, ctx._id, ctx._version, ctx._routing, ctx.op].toString(); ctx._id = ctx._id + '-c'; if (ctx._routing == null) { ctx._routing = 'rr' }"}}, "a reindex script may change the id and the routing"),
 {"method": "GET", "path": "/compat-sbq-2/_search", "body": {"sort": ["_id"], "version": True}},
 rx({"source": {"index": I[1:]}, "dest": {"index": "compat-sbq-2"}, "script": {"source": "ctx._index = 'compat-sbq-3'; if (ctx._source.n == 1) { ctx.op = 'noop' }"}}, "or the index, or skip a document"),
 {"method": "GET", "path": "/compat-sbq-3/_search"},
 rx({"source": {"index": I[1:]}, "dest": {"index": "compat-sbq-2"}, "script": {"source": "ctx.op = 'delete'"}}, "a delete in the destination counts as deleted"),
 {"method": "GET", "path": "/compat-sbq-2/_count"},
 rx({"source": {"index": I[1:]}, "dest": {"index": "compat-sbq-4"}, "script": {"source": "ctx._id = null"}}, "a null id is generated"),
 {"method": "GET", "path": "/compat-sbq-4/_count"},
 rx({"source": {"index": I[1:]}, "dest": {"index": "compat-sbq-2"}, "script": {"source": "ctx.op = 'bogus'"}}, "an unknown op fails a reindex"),
]
