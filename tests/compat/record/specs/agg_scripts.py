exec(open(os.path.join(os.path.dirname(SPEC), "common.py")).read())
NAME = "agg_scripts"
DESCRIPTION = "Painless in metric and bucket aggregations: a script in place of the field (numbers, lists, dates, booleans, null, params, missing) and a value script beside it (_value) in min/max/sum/avg/stats/extended_stats/value_count/cardinality/percentiles/median_absolute_deviation/histogram/date_histogram/auto_date_histogram/range/date_range/missing/terms/rare_terms and composite sources, and the errors that fail the shard; expectations copied from OpenSearch 2.19.6"
CLEANUP = ["/compat-scripts*"]
def ERR(b):
    """The root cause, and the Java exception under a script's."""
    e = {"root_cause": [{"type": r["type"], "reason": r.get("reason"), **({"position": r["position"]} if "position" in r else {})} for r in b["error"]["root_cause"]]}
    top = b["error"].get("caused_by", {})
    cause = top.get("caused_by")
    if cause and top.get("type") == "script_exception":
        e["caused_by"] = {"caused_by": {"type": cause["type"], "reason": cause["reason"]}}
    return {"error": e, "status": b["status"]}
def to_400(step):
    """OpenSearch answers 500 for a script value it cannot aggregate; the value comes from the
    request's script, so Tessera answers 400."""
    step["status"] = 400
    step["expect"]["status"] = 400
def A(desc, aggs, **kw):
    d = {"desc": desc, "method": "POST", "path": "/compat-scripts/_search", "params": {"size": 0}, "body": {"aggs": aggs}}
    d.update(kw)
    return d
N = "doc['n'].size() == 0 ? null : doc['n'].value"
STEPS = SETUP + [
    A("sum, avg, min, max and value_count of a script", {
        "sum": {"sum": {"script": N}}, "avg": {"avg": {"script": {"source": N + " * params.f", "params": {"f": 2}}}},
        "min": {"min": {"script": N}}, "max": {"max": {"script": "doc['f'].size() == 0 ? null : doc['f'].value"}},
        "count": {"value_count": {"script": "doc['k'].value"}}}),
    A("a list is several values; an empty list none", {"stats": {"stats": {"script": "doc['tags'].size() == 0 ? [] : [doc['tags'].size(), 10]"}}}),
    A("dates are epoch milliseconds, booleans 1 or 0", {
        "latest": {"max": {"script": "doc['d'].size() == 0 ? null : doc['d'].value"}},
        "truth": {"avg": {"script": "doc['b'].size() == 0 ? null : doc['b'].value"}}}),
    A("missing stands in for documents without values", {"min": {"min": {"script": N, "missing": -7}}}),
    A("extended_stats, percentiles and the median absolute deviation", {
        "ext": {"extended_stats": {"script": N}},
        "pct": {"percentiles": {"script": N, "percents": [50, 90]}},
        "ranks": {"percentile_ranks": {"script": N, "values": [5]}},
        "mad": {"median_absolute_deviation": {"script": N}}}),
    A("cardinality tells a script's values apart by their text", {
        "kinds": {"cardinality": {"script": "doc['k'].value"}},
        "tags": {"cardinality": {"script": "doc['tags']"}}}),
    A("histogram and range over a script", {
        "h": {"histogram": {"script": N, "interval": 5}},
        "r": {"range": {"script": N, "ranges": [{"to": 5}, {"from": 5}]}}}),
    A("date_histogram and auto_date_histogram over a script: dates, or numbers read as epoch milliseconds", {
        "years": {"date_histogram": {"script": "doc['d'].size() == 0 ? null : doc['d'].value", "calendar_interval": "year"}},
        "from_n": {"date_histogram": {"script": N + " * 86400000L * 400", "calendar_interval": "year", "min_doc_count": 1}},
        "auto": {"auto_date_histogram": {"script": "doc['d'].size() == 0 ? null : doc['d'].value", "buckets": 3}}}),
    A("a value script on a date keeps the field's format, or takes the request's", {
        "shifted": {"date_histogram": {"field": "d", "script": "_value + 86400000L * 365", "calendar_interval": "year"}},
        "formatted": {"date_histogram": {"field": "d", "script": "_value + 86400000L * 365", "calendar_interval": "year", "format": "yyyy"}},
        "auto": {"auto_date_histogram": {"field": "d", "script": "_value + 1000", "buckets": 2}}}),
    A("date_range over a script, with date bounds; a value script on a number stays a number", {
        "dates": {"date_range": {"script": "doc['d'].size() == 0 ? null : doc['d'].value", "ranges": [{"to": "2021-01-01"}, {"from": "2021-01-01"}]}},
        "shifted": {"date_range": {"field": "d", "script": "_value + 1000", "ranges": [{"to": "2021-01-01"}, {"from": "2021-01-01"}]}},
        "numbers": {"date_range": {"field": "n", "script": "_value * 1000", "ranges": [{"to": 5000}, {"from": 5000}]}}}),
    A("missing counts the documents a script gives no value", {
        "no_n": {"missing": {"script": N}},
        "no_tags": {"missing": {"field": "tags", "script": "_value"}}}),
    A("rare_terms over a script keys its values by their text", {
        "tags": {"rare_terms": {"script": "doc['tags']"}},
        "kinds": {"rare_terms": {"field": "k", "script": "_value + '!'"}},
        "numbers": {"rare_terms": {"script": N}}}),
    A("rare_terms: a value script on a number is floating point", {"r": {"rare_terms": {"field": "n", "script": "_value + 1"}}}, keep=ERR),
    A("composite: terms sources key a script's values by their text, lists and the missing bucket included", {"c": {"composite": {"sources": [
        {"t": {"terms": {"script": "doc['tags']"}}}, {"n": {"terms": {"script": N, "missing_bucket": True}}}]}}}),
    A("composite: a value list with repeats counts a document once per value", {"c": {"composite": {"sources": [{"v": {"terms": {"script": "['a', 'a', 'b']"}}}]}}}),
    A("composite: histogram and date_histogram sources over scripts", {"c": {"composite": {"sources": [
        {"h": {"histogram": {"script": N, "interval": 5}}},
        {"d": {"date_histogram": {"script": "doc['d'].size() == 0 ? null : doc['d'].value", "calendar_interval": "year"}}}]}}}),
    A("composite: numeric keys for a numeric value_type, and for a value script on a number or a date", {
        "long": {"composite": {"sources": [{"n": {"terms": {"script": N + " * 1.5", "value_type": "long"}}}]}},
        "double": {"composite": {"sources": [{"n": {"terms": {"script": N, "value_type": "double"}}}]}},
        "twice": {"composite": {"sources": [{"n": {"terms": {"field": "n", "script": "_value * 2"}}}]}},
        "price": {"composite": {"sources": [{"p": {"terms": {"field": "price", "script": "_value * 2"}}}]}},
        "dates": {"composite": {"sources": [{"d": {"terms": {"field": "d", "script": "_value + 1"}}}]}},
        "hist": {"composite": {"sources": [{"h": {"histogram": {"field": "n", "script": "_value * 100", "interval": 5}}}]}}}),
    A("composite: after a script's key", {
        "text": {"composite": {"after": {"n": "3"}, "sources": [{"n": {"terms": {"script": N}}}]}},
        "number": {"composite": {"after": {"n": 6.0}, "sources": [{"n": {"terms": {"field": "n", "script": "_value * 2"}}}]}}}),
    A("composite: a script's runtime error fails the shard", {"c": {"composite": {"sources": [{"n": {"terms": {"script": "doc['n'].value"}}}]}}}, keep=ERR),
    A("a value script sees each value as _value", {
        "sum": {"sum": {"field": "n", "script": "_value * 10"}},
        "count": {"value_count": {"field": "tags", "script": "_value"}},
        "tags": {"terms": {"field": "tags", "script": "_value + '!'"}},
        "prices": {"avg": {"field": "price", "script": {"source": "_value * params.rate", "params": {"rate": 2}}}}}),
    A("a value script on a date keeps the date format", {"d": {"max": {"field": "d", "script": "_value + 1000"}}}),
    A("a value script on an unmapped field has no values", {"s": {"sum": {"field": "nope", "script": "_value"}}}),
    A("a script under a bucket aggregation", {"k": {"terms": {"field": "k"}, "aggs": {"twice": {"sum": {"script": {"source": N + " * 2"}}}}}}),
    A("a missing value fails the shard", {"s": {"sum": {"script": "doc['n'].value"}}}, keep=ERR),
    A("an unmapped field fails the shard", {"s": {"avg": {"script": "doc['nope'].value"}}}, keep=ERR),
    A("a runtime error fails the shard", {"s": {"sum": {"script": "int x = 0; return 1 / x"}}}, keep=ERR),
    A("a value an aggregation cannot read fails the shard", {"s": {"max": {"script": "'x'"}}}, keep=ERR, fix=to_400),
    A("a compile error", {"s": {"sum": {"script": "1 +"}}}, keep=ERR),
    A("params belong to the script", {"s": {"sum": {"script": "params.x", "params": {"x": 1}}}}, keep=lambda b: {"error": {"type": b["error"]["type"], "reason": b["error"]["reason"]}, "status": 400}),
]
SM_SUM = {"init_script": "state.l = []", "map_script": "if (doc['n'].size() > 0) state.l.add(doc['n'].value * params.f)",
          "combine_script": "long t = 0; for (x in state.l) t += x; return t", "reduce_script": "long t = 0; for (s in states) t += s; return t", "params": {"f": 2}}
STEPS += [
    A("scripted_metric: init, map, combine and reduce", {"s": {"scripted_metric": SM_SUM}}),
    A("scripted_metric under terms, with typed keys", {"k": {"terms": {"field": "k"}, "aggs": {"s": {"scripted_metric": SM_SUM}}}}, params={"size": 0, "typed_keys": "true"}),
    A("scripted_metric: maps, lists and strings come through", {"s": {"scripted_metric": {
        "map_script": "state.c = (state.c ?: 0) + 1; state.k = doc['k'].value", "combine_script": "return state", "reduce_script": "return [states, 'done', 1.5]"}}}),
    A("scripted_metric: without init_script, with script params", {"s": {"scripted_metric": {
        "map_script": {"source": "state.n = params.a"}, "combine_script": {"source": "return state.n + params.b", "params": {"b": 10}},
        "reduce_script": "return states[0] * params.a", "params": {"a": 3}}}}),
    A("scripted_metric over no documents: init and combine still run", {"s": {"scripted_metric": {
        "init_script": "state.l = []", "map_script": "state.l.add(1)", "combine_script": "return state.l.size()", "reduce_script": "return states"}}},
        body={"query": {"term": {"k": "nothing"}}, "aggs": {"s": {"scripted_metric": {
        "init_script": "state.l = []", "map_script": "state.l.add(1)", "combine_script": "return state.l.size()", "reduce_script": "return states"}}}}),
    A("scripted_metric: a null result", {"s": {"scripted_metric": {"map_script": "state.x = 1", "combine_script": "return state", "reduce_script": "return null"}}}),
    A("scripted_metric: map_script is required", {"s": {"scripted_metric": {"combine_script": "1", "reduce_script": "1"}}}, keep=ERR),
    A("scripted_metric: unknown fields", {"s": {"scripted_metric": {"map_script": "1", "combine_script": "1", "reduce_script": "1", "bogus": 1}}}, keep=ERR),
    A("scripted_metric: combine_script is required", {"s": {"scripted_metric": {"map_script": "state.x = 1"}}}, keep=ERR),
    A("scripted_metric: reduce_script is required", {"s": {"scripted_metric": {"map_script": "state.x = 1", "combine_script": "return state"}}}, keep=ERR),
    A("scripted_metric: a parameter in both places", {"s": {"scripted_metric": {"map_script": {"source": "state.x = params.a", "params": {"a": 2}}, "combine_script": "return state.x", "reduce_script": "return states", "params": {"a": 1}}}}, keep=ERR),
    A("scripted_metric: a failing map script", {"s": {"scripted_metric": {"map_script": "state.x = doc['n'].value", "combine_script": "return state.x", "reduce_script": "return states"}}}, keep=ERR),
]
def H(pipe):
    return {"h": {"histogram": {"field": "n", "interval": 4}, "aggs": dict({"s": {"sum": {"field": "n"}}}, **pipe)}}
def PERR(b):
    """A script failing in the final reduce: OpenSearch blames no shard."""
    e = b["error"]
    return {"error": {"root_cause": e["root_cause"], "type": e["type"], "phase": e.get("phase"), "failed_shards": e.get("failed_shards"),
                      "caused_by": {"type": e["caused_by"]["type"], "reason": e["caused_by"]["reason"], "position": e["caused_by"].get("position"),
                                    "caused_by": {"type": e["caused_by"]["caused_by"]["type"], "reason": e["caused_by"]["caused_by"]["reason"]}}}, "status": b["status"]}
STEPS += [
    A("bucket_script runs Painless over the bucket's values", H({"b": {"bucket_script": {"buckets_path": {"s": "s", "c": "_count"},
        "script": {"source": "double t = 0; for (int i = 0; i < params.c; i++) { t += params.s } return t + params.k", "params": {"k": 1}}}}})),
    A("bucket_script: null leaves the bucket without a value", H({"b": {"bucket_script": {"buckets_path": {"s": "s"}, "script": "params.s > 5 ? null : params.s"}}})),
    A("bucket_selector with methods and a boolean", H({"b": {"bucket_selector": {"buckets_path": {"s": "s"}, "script": "params.s.intValue() % 2 == 1"}}})),
    A("scripted_metric read by bucket_script is not a number path", H({"sm": {"scripted_metric": {"map_script": "state.x = 1", "combine_script": "return 1", "reduce_script": "return 2"}}})),
    A("bucket_script must return a number", H({"b": {"bucket_script": {"buckets_path": {"s": "s"}, "script": "'x'"}}}), keep=PERR),
    A("bucket_script: a boolean is not a number", H({"b": {"bucket_script": {"buckets_path": {"s": "s"}, "script": "params.s > 1"}}}), keep=PERR),
    A("bucket_selector must return a boolean", H({"b": {"bucket_selector": {"buckets_path": {"s": "s"}, "script": "params.s"}}}), keep=PERR),
    A("bucket_script: a runtime error", H({"b": {"bucket_script": {"buckets_path": {"s": "s"}, "script": "int z = 0; return 1 / z"}}}), keep=PERR),
    A("scripted_metric: a failing reduce script", {"s": {"scripted_metric": {"map_script": "state.x = 1", "combine_script": "return state", "reduce_script": "int z = 0; return 1 / z"}}}, keep=PERR),
]
