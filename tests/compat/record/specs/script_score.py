exec(open(os.path.join(os.path.dirname(SPEC), "common.py")).read())
NAME = "script_score"
DESCRIPTION = "Painless in scores: the script_score query (_score, doc[...] over longs, doubles, scaled floats, dates, keywords, booleans and geo points, params, min_score, boost) and function_score's script_score function, with OpenSearch's parse errors, compile errors and invalid (negative, NaN) scores; expectations copied from OpenSearch 2.19.6"
CLEANUP = ["/compat-scripts*"]
def ss(script, query=None, **kw):
    body = {"query": query or {"exists": {"field": "n"}}, "script": script}
    body.update(kw)
    return {"query": {"script_score": body}}
def S(desc, body, **kw):
    d = {"desc": desc, "method": "POST", "path": "/compat-scripts/_search", "body": body}
    d.update(kw)
    return d
ERR = lambda b: {"error": {"root_cause": [{"type": r["type"], "reason": r.get("reason")} for r in b["error"]["root_cause"]]}, "status": b["status"]}
STEPS = SETUP + [
    S("a long and a double", ss({"source": "doc['n'].value * doc['f'].value"})),
    S("params and _score (the match query's BM25 score)", ss({"source": "_score * params.w + doc['n'].value", "params": {"w": 10}}, query={"match": {"t": "hello"}})),
    S("a scaled float", ss({"source": "doc['price'].value"})),
    S("size(), empty and a ternary", ss({"source": "doc['tags'].size() + (doc['tags'].empty ? 100 : 0)"})),
    S("a keyword in a condition", ss({"source": "doc['k'].value == 'b' ? 5 : 1"})),
    S("a boolean", ss({"source": "doc['b'].value ? 2 : 1"})),
    S("a date's parts", ss({"source": "doc['d'].value.getYear() - 2000 + doc['d'].value.getMonthValue() / 100.0"})),
    S("epoch millis of a date", ss({"source": "doc['d'].value.toInstant().toEpochMilli() / 1000000000.0"})),
    S("arcDistance of a geo point", ss({"source": "doc['loc'].arcDistance(params.lat, params.lon) / 1000", "params": {"lat": 40.5, "lon": -70.5}})),
    S("Math functions, a local and an if", ss({"source": "double x = Math.log10(doc['n'].value); if (x > 0.9) { return Math.sqrt(x); } return Math.pow(x, 2);"})),
    S("min_score drops the documents scoring less", ss({"source": "doc['n'].value"}, min_score=5)),
    S("boost multiplies the script's score", ss({"source": "doc['n'].value"}, boost=2)),
    S("a missing value", ss({"source": "doc['n'].value"}, query={"match_all": {}}), keep=ERR),
    S("size() guards a missing value", ss({"source": "doc['n'].size() == 0 ? 0 : doc['n'].value"}, query={"match_all": {}})),
    S("a negative score", ss({"source": "doc['n'].value - 5"}), keep=ERR),
    S("NaN", ss({"source": "Math.sqrt(-1)"}), keep=ERR),
    S("a compile error", ss({"source": "doc['n'].value +"}), keep=ERR),
    S("a string is not a score", ss({"source": "'a'"}), keep=ERR),
    S("a runtime error", ss({"source": "int z = 0; return doc['n'].value / z;"}), keep=ERR),
    S("query is required", {"query": {"script_score": {"script": {"source": "1"}}}}),
    S("script is required", {"query": {"script_score": {"query": {"match_all": {}}}}}),
    S("the string form is not taken", {"query": {"script_score": {"query": {"match_all": {}}, "script": "1"}}}, keep=lambda b: {"error": {"type": b["error"]["type"], "reason": {"$regex": "\\[script_score\\] script doesn't support values of type: VALUE_STRING$"}}, "status": 400}),
    S("an unknown field in the script", {"query": {"script_score": {"query": {"match_all": {}}, "script": {"source": "1", "foo": 1}}}}, keep=lambda b: {"error": {"type": b["error"]["type"], "reason": {"$regex": "\\[script_score\\] failed to parse field \\[script\\]$"}, "caused_by": {"type": b["error"]["caused_by"]["type"], "reason": {"$regex": "\\[script\\] unknown field \\[foo\\]$"}}}, "status": 400}),
    S("another lang", ss({"source": "1", "lang": "expression"}), keep=ERR),
    S("function_score's script_score, multiplied with the query's score", {"query": {"function_score": {"query": {"match": {"t": "hello"}}, "script_score": {"script": {"source": "doc['n'].size() == 0 ? 1 : doc['n'].value + params.a", "params": {"a": 1}}}}}}),
    S("function_score's script_score sees _score, boost_mode replace", {"query": {"function_score": {"query": {"match": {"t": "world"}}, "functions": [{"script_score": {"script": "_score * 2"}}, {"filter": {"term": {"k": "a"}}, "weight": 3}], "score_mode": "sum", "boost_mode": "replace"}}}),
    S("function_score's script_score: a negative score", {"query": {"function_score": {"query": {"exists": {"field": "n"}}, "script_score": {"script": "doc['n'].value - 5"}}}}, keep=ERR),
    S("function_score's script_score: script is required", {"query": {"function_score": {"script_score": {}}}}, keep=lambda b: {"error": {"type": b["error"]["type"], "reason": b["error"]["reason"]}, "status": 400}),
    {"method": "DELETE", "path": "/compat-scripts"},
]
