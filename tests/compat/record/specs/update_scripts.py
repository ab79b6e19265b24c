NAME = "update_scripts"
RECORD = "whole"
DESCRIPTION = "Scripted updates: _update with script (ctx._source, ctx.op index/noop/none/delete, the read-only ctx._index/_id/_version/_routing/_now), upsert, scripted_upsert, _source of the get, stored scripts by id, script errors as failed-to-execute-script, and script updates in _bulk; expectations copied from OpenSearch 2.19.6"
CLEANUP = ["/compat-upd*", "/_scripts/compat-upd-counter"]
I = "/compat-upd"
def upd(id, body, desc, params=None, **kw):
    s = {"desc": desc, "method": "POST", "path": f"{I}/_update/{id}", "body": body}
    if params: s["params"] = params
    s.update(kw)
    return s
STEPS = [
 {"method": "PUT", "path": I, "body": {"settings": {"number_of_shards": 1, "number_of_replicas": 0}}},
 {"method": "PUT", "path": f"{I}/_doc/1", "params": {"refresh": True}, "body": {"b": 1, "a": 2, "counter": 1, "tags": ["x"]}},
 upd(1, {"script": {"source": "ctx._source.counter += params.n", "params": {"n": 4}}}, "a script with params updates the document"),
 upd(1, {"script": {"source": "ctx._source.z = 1; ctx._source.c = ['k': 1]"}, "_source": True}, "new fields go after the stored ones, in the get of the response",
     expect_text_contains=['"_source":{"b":1,"a":2,"counter":5,"tags":["x"],"z":1,"c":{"k":1}}']),
 upd(1, {"script": "ctx._source.counter++"}, "a script may be its source alone"),
 upd(1, {"script": {"source": "ctx.op = 'noop'"}, "_source": True}, "ctx.op noop: nothing written, the get shows the document"),
 upd(1, {"script": {"source": "ctx.op = 'none'"}}, "ctx.op none is a noop too"),
 upd(1, {"script": {"source": "ctx.op = 'bogus'"}}, "an unknown ctx.op is a noop"),
 upd(1, {"script": {"source": "ctx.op = 'create'"}}, "create on an existing document is a noop"),
 upd(1, {"script": {"source": "ctx._source.info = ctx.keySet().toString() + ' ' + ctx._index + ' ' + ctx._id + ' ' + ctx._version + ' ' + ctx._routing + ' ' + ctx.op + ' ' + (ctx._now > 0)"}, "_source": ["info"]}, "the ctx of an update, and _source filtering of the get"),
 upd(1, {"script": {"source": "ctx._id = 'zz'; ctx._index = 'other'; ctx._version = 100; ctx._routing = 'r'; ctx._source.q = 1"}}, "changing the metadata in ctx changes nothing"),
 {"method": "GET", "path": f"{I}/_doc/zz"},
 {"method": "GET", "path": f"{I}/_doc/1", "params": {"_source_includes": "q,counter"}},
 upd(1, {"script": {"source": "ctx._source.counter +"}}, "a compile error"),
 upd(1, {"script": {"source": "int x = 1/params.z;", "params": {"z": 0}}}, "a runtime error"),
 upd(1, {"script": {"source": "ctx._source.x.y = 1"}}, "a null dereference", fix=lambda s: s["expect"]["error"]["caused_by"]["caused_by"].__setitem__("reason", "$string")),
 upd(1, {"script": {"source": "ctx._source.counter = 1", "lang": "expression"}}, "another language"),
 upd(1, {"script": {"id": "compat-upd-counter"}}, "a stored script that does not exist"),
 {"method": "PUT", "path": "/_scripts/compat-upd-counter", "body": {"script": {"lang": "painless", "source": "ctx._source.counter += params.n"}}},
 upd(1, {"script": {"id": "compat-upd-counter", "params": {"n": 10}}, "_source": ["counter"]}, "a stored script by id, with the request's params"),
 upd(1, {"script": {"source": "ctx._source.counter += 1"}, "doc": {"a": 1}}, "a script and a doc"),
 upd(1, {"script": {"source": "ctx._source.counter += 1"}}, "retry_on_conflict is accepted", params={"retry_on_conflict": 3}),
 upd(1, {"script": {"source": "ctx._source.counter += 1"}}, "retry_on_conflict must be a number", params={"retry_on_conflict": "x"}),
 upd(2, {"script": {"source": "ctx._source.counter += 1"}}, "a missing document without upsert"),
 upd(2, {"script": {"source": "ctx._source.counter += 1"}, "upsert": {"counter": 10}}, "upsert is indexed, the script does not run"),
 upd(2, {"script": {"source": "ctx._source.counter += 1"}, "upsert": {"counter": 10}, "_source": True}, "then the script runs"),
 upd(3, {"script": {"source": "ctx._source.counter = 5; ctx._source.op = ctx.op; ctx._source.keys = ctx.keySet().size()"}, "upsert": {"x": 1}, "scripted_upsert": True, "_source": True}, "scripted_upsert runs the script on the upsert document with ctx.op create",
     expect_text_contains=['"_source":{"op":"create","keys":3,"x":1,"counter":5}']),
 upd(4, {"script": {"source": "ctx.op = 'none'"}, "upsert": {"x": 1}, "scripted_upsert": True}, "a scripted upsert the script turns into a noop"),
 upd(4, {"script": {"source": "ctx.op = 'index'"}, "upsert": {"x": 1}, "scripted_upsert": True, "_source": True}, "only create creates"),
 {"method": "GET", "path": f"{I}/_doc/4"},
 upd(6, {"script": {"source": "ctx._source.x = 2"}, "scripted_upsert": True}, "scripted_upsert without upsert: the document is missing"),
 upd(3, {"script": {"source": "ctx._source = params.s", "params": {"s": {"n": 1}}}}, "the whole source replaced"),
 upd(3, {"script": {"source": "ctx._source.remove('n')"}, "_source": True}, "a field removed"),
 upd(3, {"script": {"source": "ctx._source = null"}}, "a null source"),
 upd(2, {"script": {"source": "ctx.op = 'delete'"}, "_source": True}, "ctx.op delete deletes; the get has no source"),
 {"method": "GET", "path": f"{I}/_doc/2"},
 upd(2, {"script": {"source": "ctx.op = 'delete'"}}, "the document is gone"),
 {"method": "PUT", "path": f"{I}/_doc/r1", "params": {"routing": "rt", "refresh": True}, "body": {"n": 1}},
 upd("r1", {"script": {"source": "ctx._source.r = ctx._routing"}, "_source": True}, "ctx._routing is the document's", params={"routing": "rt"}),
 {"method": "POST", "path": f"{I}/_bulk", "params": {"refresh": True}, "ndjson": [
   {"update": {"_id": "b1"}}, {"script": {"source": "ctx._source.bc += 1"}, "upsert": {"bc": 0}},
   {"update": {"_id": "b1"}}, {"script": {"source": "ctx._source.bc += params.n", "params": {"n": 5}}},
   {"update": {"_id": "b2"}}, {"script": {"source": "ctx._source.bc += 1"}},
   {"update": {"_id": "b1"}}, {"script": {"source": "ctx._source.bc +"}},
   {"update": {"_id": "b1"}}, {"script": {"source": "int x = 1 / params.z;", "params": {"z": 0}}},
   {"update": {"_id": "b1"}}, {"script": {"id": "compat-upd-missing"}},
   {"update": {"_id": "b1", "retry_on_conflict": 2}}, {"script": "ctx._source.d = 1"},
   {"update": {"_id": "b1"}}, {"script": {"source": "ctx.op = 'delete'"}},
   {"update": {"_id": "b3"}}, {"script": {"source": "ctx._source.s = 1"}, "scripted_upsert": True, "upsert": {}},
 ], "desc": "script updates in a bulk, each failing alone", "fix": lambda s: [s["expect"]["items"][i]["update"].pop(k, None) for i in range(9) for k in ("_shards", "forced_refresh")]},
 {"method": "GET", "path": f"{I}/_doc/b3"},
 {"method": "DELETE", "path": "/_scripts/compat-upd-counter"},
]
