exec(open(os.path.join(os.path.dirname(SPEC), "common.py")).read())
NAME = "script_query"
DESCRIPTION = "Painless as a filter, in fields and in aggregations: the script query (alone, in bool filters, boost, params, the short string form, errors), script_fields (numbers, lists, maps, null, ignore_failure, parse errors) and terms aggregations over a script's values; expectations copied from OpenSearch 2.19.6"
CLEANUP = ["/compat-scripts*"]
def S(desc, body, **kw):
    d = {"desc": desc, "method": "POST", "path": "/compat-scripts/_search", "body": body}
    d.update(kw)
    return d
ERR = lambda b: {"error": {"root_cause": [{"type": r["type"], "reason": r.get("reason")} for r in b["error"]["root_cause"]]}, "status": b["status"]}
def q(script, **kw):
    body = {"script": script}
    body.update(kw)
    return {"query": {"script": body}}
STEPS = SETUP + [
    S("a filter script", q({"source": "doc['n'].size() > 0 && doc['n'].value > params.min", "params": {"min": 5}})),
    S("the short string form and a boost", q("doc['k'].value == 'a' || doc['k'].value == 'd'", boost=2.5)),
    S("inside a bool filter beside a match", {"query": {"bool": {"must": [{"match": {"t": "hello"}}], "filter": [{"script": {"script": "doc['b'].value"}}]}}}),
    S("a keyword list", q("doc['tags'].contains('y')")),
    S("a missing value fails the shard", q("doc['n'].value > 1"), keep=ERR),
    S("a filter script must return a boolean", q({"source": "doc['k'].size()"}), keep=lambda b: {"error": {"root_cause": [{"type": b["error"]["root_cause"][0]["type"], "reason": b["error"]["root_cause"][0]["reason"]}]}, "status": 400}),
    S("an unknown parameter", {"query": {"script": {"script": "true", "foo": 1}}}, keep=lambda b: {"error": {"type": b["error"]["type"], "reason": b["error"]["reason"]}, "status": 400}),
    S("the script is required", {"query": {"script": {}}}, keep=lambda b: {"error": {"type": b["error"]["type"], "reason": b["error"]["reason"]}, "status": 400}),
    S("script fields", {"_source": False, "sort": ["_doc"], "query": {"exists": {"field": "n"}}, "script_fields": {
        "twice": {"script": "doc['n'].value * 2"},
        "half": {"script": {"source": "doc['n'].value * params.h", "params": {"h": 0.5}}},
        "list": {"script": "[doc['k'].value, 1]"},
        "map": {"script": "['x': doc['n'].value]"},
        "none": {"script": "null"},
        "tags": {"script": "doc['tags']"}}}),
    S("a failing script field", {"_source": False, "script_fields": {"a": {"script": "doc['n'].value"}}}, keep=ERR),
    S("ignore_failure does not cover a compile error", {"_source": False, "script_fields": {"a": {"script": "1/0", "ignore_failure": True}}}, keep=ERR),
    S("an unknown key in a script field", {"script_fields": {"a": {"foo": 1}}}, keep=lambda b: {"error": {"type": b["error"]["type"], "reason": b["error"]["reason"]}, "status": 400}),
    S("a script field must be an object", {"script_fields": {"a": "x"}}, keep=lambda b: {"error": {"type": b["error"]["type"], "reason": b["error"]["reason"]}, "status": 400}),
    S("terms over a script's values: strings, numbers as text, lists", {"size": 0, "aggs": {
        "k": {"terms": {"script": "doc['k'].value"}},
        "n": {"terms": {"script": {"source": "doc['n'].size() == 0 ? null : doc['n'].value * params.m", "params": {"m": 1.5}}}},
        "tags": {"terms": {"script": "doc['tags']", "size": 1}},
        "missing": {"terms": {"script": "doc['n'].size() == 0 ? null : 'has'", "missing": "none"}}}}),
    S("terms over a script with a sub-aggregation and an order", {"size": 0, "query": {"exists": {"field": "n"}}, "aggs": {
        "b": {"terms": {"script": "doc['b'].value ? 'yes' : 'no'", "order": {"total": "desc"}}, "aggs": {"total": {"sum": {"field": "n"}}}}}}),
    S("a failing terms script", {"size": 0, "aggs": {"a": {"terms": {"script": "doc['n'].value"}}}}, keep=ERR),
    S("_script sort by number, with params", {"_source": False, "query": {"exists": {"field": "n"}}, "sort": [{"_script": {"type": "number", "script": {"source": "doc['n'].value * params.s", "params": {"s": -1}}, "order": "asc"}}]}),
    S("_script sort by string, descending, then by _doc", {"_source": False, "sort": [{"_script": {"type": "string", "script": "doc['k'].value + '-x'", "order": "desc"}}, "_doc"]}),
    S("_script sort needs a type", {"sort": [{"_script": {"script": "1"}}]}, keep=lambda b: {"error": {"type": b["error"]["type"], "reason": b["error"]["reason"]}, "status": 400}),
    S("a failing _script sort", {"sort": [{"_script": {"type": "number", "script": "doc['n'].value"}}]}, keep=ERR),
    {"method": "DELETE", "path": "/compat-scripts"},
]
