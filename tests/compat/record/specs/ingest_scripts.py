NAME = "ingest_scripts"
RECORD = "whole"
DESCRIPTION = "The ingest script processor (source, params, ctx with the metadata, errors at pipeline creation and at run time, ignore_failure, on_failure) and painless if conditions of processors (simulate, verbose skipped, errors); expectations copied from OpenSearch 2.19.6"
CLEANUP = ["/compat-isc*", "/_ingest/pipeline/compat-isc*"]
def sim(pipeline, docs, desc, **kw):
    s = {"desc": desc, "method": "POST", "path": "/_ingest/pipeline/_simulate", "body": {"pipeline": pipeline, "docs": docs}}
    s.update(kw)
    return s
D = [{"_index": "i", "_id": "1", "_routing": "r", "_source": {"b": 1, "a": 2, "n": 1}}]
Z = [{"_source": {"z": 0}}]
STEPS = [
 sim({"processors": [{"script": {"source": "ctx.k = ctx.keySet().toString(); ctx.n = ctx.n + params.d; ctx.m = [ctx._index, ctx._id, ctx._routing].toString()", "params": {"d": 5}}}]}, D, "the script's ctx is the document with its metadata"),
 sim({"processors": [{"script": {"source": "ctx._index = 'other'; ctx._id = 'x'; ctx.remove('b')"}}]}, D, "a script changes the metadata and removes fields"),
 sim({"processors": [{"script": "ctx.q = 1"}]}, Z, "a script processor as a string"),
 sim({"processors": [{"script": {"source": "ctx.q = ctx._ingest"}}]}, Z, "_ingest is not in ctx"),
 sim({"processors": [{"script": {"source": "ctx.x = 1 / ctx.z", "tag": "t1"}}]}, Z, "a runtime error"),
 sim({"processors": [{"script": {"source": "ctx.x = 1 / ctx.z", "ignore_failure": True}}, {"set": {"field": "y", "value": 1}}]}, Z, "ignore_failure"),
 sim({"processors": [{"script": {"source": "ctx.x = 1 / ctx.z", "on_failure": [{"set": {"field": "err", "value": "{{_ingest.on_failure_message}}"}}]}}]}, Z, "on_failure"),
 {"desc": "a compile error refuses the pipeline", "method": "PUT", "path": "/_ingest/pipeline/compat-isc-bad", "body": {"processors": [{"script": {"source": "ctx.x +"}}]}},
 {"desc": "a pipeline with a script", "method": "PUT", "path": "/_ingest/pipeline/compat-isc-1", "body": {"processors": [{"script": {"source": "ctx.n = ctx.n * params.f; ctx.seen = ctx._index", "params": {"f": 2}}}]}},
 {"method": "PUT", "path": "/compat-isc/_doc/1", "params": {"pipeline": "compat-isc-1", "refresh": True}, "body": {"n": 21}},
 {"method": "GET", "path": "/compat-isc/_doc/1"},
 sim({"processors": [{"set": {"field": "y", "value": 1, "if": "ctx.z == 0"}}, {"set": {"field": "w", "value": 1, "if": "ctx.z != 0"}}]}, Z, "if conditions"),
 sim({"processors": [{"set": {"field": "y", "value": 1, "if": {"source": "ctx.z == params.v", "params": {"v": 0}}}}]}, Z, "an if condition as a script object"),
 sim({"processors": [{"set": {"field": "y", "value": 1, "if": "ctx.z"}}]}, Z, "an if condition that is no boolean", fix=lambda s: s["expect"]["docs"][0]["error"].update({"root_cause": "$array", "script_stack": "$array", "position": "$object"})),
 sim({"processors": [{"set": {"field": "y", "value": 1, "if": "ctx.z = 5; return true"}}]}, Z, "an if condition may not change the document", fix=lambda s: s["expect"]["docs"][0]["error"].update({"root_cause": "$array", "script_stack": "$array", "position": "$object"})),
 {"desc": "a compile error in an if condition refuses the pipeline", "method": "PUT", "path": "/_ingest/pipeline/compat-isc-bad", "body": {"processors": [{"set": {"field": "y", "value": 1, "if": "ctx.z +"}}]}},
 sim({"processors": [{"set": {"field": "y", "value": 1, "if": "ctx.z == 1"}}, {"set": {"field": "q", "value": 1, "if": "ctx.z == 0"}}]}, Z, "a verbose simulation shows the conditions", params={"verbose": True}),
 {"method": "DELETE", "path": "/_ingest/pipeline/compat-isc-1"},
]
