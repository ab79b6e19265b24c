NAME = "random_score"
DESCRIPTION = "function_score's random_score as OpenSearch computes it: seeds as ints, longs and strings salted per shard, hashed with the first value of keyword, long, double, float, scaled_float, boolean, date, ip, geo_point, _seq_no and _id fields (the _id when a seed has no field), documents without a value, weights, score and boost modes, a seedless order, and OpenSearch's errors; expectations recorded from OpenSearch 2.19.6"
CLEANUP = ["/compat-random*"]
exec(open(os.path.join(os.path.dirname(SPEC), "helpers.py")).read())
INDEX = "/compat-random"

BULK = []
for i in range(1, 13):
    doc = {"k": [f"v{i}", f"a{i % 4}"], "n": [i, -i * 3], "t": "some text", "d": i + 0.1, "f": i / 10,
           "sf": i + 0.257, "b": i % 3 == 0, "dt": f"2020-01-{i:02d}T10:00:00Z", "ip": f"10.0.{i}.1", "tag": "x" if i % 2 else "y"}
    if i % 3 == 1:
        doc["g"] = {"lat": 40 + i / 7, "lon": -70 + i * 11}
    elif i % 3 == 2:
        doc["g"] = [[4.89 - i, 52.37], [-3.7, 40.42], [2.35 + i, 48.86 - i]]
    if i % 5 == 0:
        doc = {"t": "no values here", "tag": "x"}
    BULK += [{"index": {"_index": "compat-random", "_id": f"doc-{i}"}}, doc]


UNMAPPED = {"$regex": r"^failed to create query: Field \[nope\] is not mapped on \[\[compat-random(/[^\]]+)?\]\] and cannot be used as a source of random numbers\.$"}


def unmapped(step):
    """The index's uuid in OpenSearch's message is its own."""
    err = step["expect"]["error"]
    for e in err["root_cause"] + [err["caused_by"]]:
        e["reason"] = UNMAPPED


def K(b):
    if "error" in b:
        return None
    return {"hits": {"hits": [{"_id": h["_id"], "_score": {"$approx": h["_score"], "tol": 1e-6}} for h in b["hits"]["hits"]]}}


def S(desc, random, **kw):
    query = kw.pop("query", None) or {"function_score": {"random_score": random}}
    d = {"desc": desc, "method": "POST", "path": INDEX + "/_search",
         "body": {"size": 20, "query": query, "_source": False}, "keep": K}
    d.update(kw)
    if d["keep"] is None:
        d.pop("keep")
    return d


STEPS = [
    {"desc": "two shards, every kind of field", "method": "PUT", "path": INDEX,
     "body": {"settings": {"number_of_shards": 2, "number_of_replicas": 0},
              "mappings": {"properties": {"k": {"type": "keyword"}, "n": {"type": "long"}, "t": {"type": "text"},
                                          "d": {"type": "double"}, "f": {"type": "float"},
                                          "sf": {"type": "scaled_float", "scaling_factor": 100},
                                          "b": {"type": "boolean"}, "dt": {"type": "date"}, "ip": {"type": "ip"},
                                          "tag": {"type": "keyword"}, "g": {"type": "geo_point"},
                                          "empty": {"type": "geo_point"}}}},
     "keep": lambda b: {"acknowledged": True}},
    {"method": "POST", "path": "/_bulk", "params": {"refresh": "true"}, "ndjson": BULK, "keep": lambda b: {"errors": False}},
    S("an int seed on _seq_no", {"seed": 10, "field": "_seq_no"}),
    S("a long seed folds its halves", {"seed": 1234567890123, "field": "_seq_no"}),
    S("a string seed is its hash code", {"seed": "tessera", "field": "_seq_no"}),
    S("a seed without a field hashes the _id", {"seed": 42}),
    S("the _id named", {"seed": 42, "field": "_id"}),
    S("a keyword's first value", {"seed": 7, "field": "k"}),
    S("a long's smallest value", {"seed": 7, "field": "n"}),
    S("a double's Java text", {"seed": 7, "field": "d"}),
    S("a float widened to a double", {"seed": 7, "field": "f"}),
    S("a scaled float as field data computes it", {"seed": 7, "field": "sf"}),
    S("a boolean as 1 or 0", {"seed": 7, "field": "b"}),
    S("a date's epoch milliseconds", {"seed": 7, "field": "dt"}),
    S("an ip's sixteen bytes", {"seed": 7, "field": "ip"}),
    S("a geo point's first point as lat, lon", {"seed": 7, "field": "g"}),
    S("a field no document has: every score is the salted seed", {"seed": 7, "field": "empty"}),
    S("with a weight and a filter, summed with another function", None, query={"function_score": {
        "query": {"match": {"t": "text"}}, "score_mode": "sum", "boost_mode": "sum",
        "functions": [{"random_score": {"seed": 3, "field": "_seq_no"}, "weight": 5, "filter": {"term": {"tag": "x"}}},
                      {"random_score": {"seed": 4, "field": "k"}}]}}),
    S("replacing the query's score, under a max_boost", None, query={"function_score": {
        "query": {"match": {"t": "text"}}, "boost_mode": "replace", "max_boost": 0.5,
        "random_score": {"seed": 11, "field": "dt"}}}),
    S("a min_score keeps the documents scoring at least it", None, query={"function_score": {
        "min_score": 0.5, "random_score": {"seed": 11, "field": "n"}}}),
    S("without a seed: every document, each score below one", {}, keep=lambda b: {
        "hits": {"total": b["hits"]["total"], "max_score": {"$approx": 0.5, "tol": 0.5}}}),
    {"desc": "a scaled float's doc values as the field data hashed above computes them", "method": "POST",
     "path": INDEX + "/_search", "body": {"size": 4, "sort": ["_id"], "docvalue_fields": ["sf", "f"], "_source": False},
     "keep": lambda b: {"hits": {"hits": [{k: h[k] for k in ("_id", "fields") if k in h} for h in b["hits"]["hits"]]}}},
    {"desc": "sorted by _doc with track_scores: max_score is the best of every match", "method": "POST",
     "path": INDEX + "/_search", "body": {"size": 2, "sort": ["_doc"], "track_scores": True, "track_total_hits": False,
                                          "query": {"function_score": {"random_score": {"seed": 5, "field": "_seq_no"}}}, "_source": False},
     "keep": lambda b: {"hits": {"max_score": {"$approx": b["hits"]["max_score"], "tol": 1e-6}}}},
    S("a field that is not mapped", {"seed": 1, "field": "nope"}, keep=None, fix=unmapped),
    S("a text field has no field data", {"seed": 1, "field": "t"}, keep=None),
    S("a seed that is a fraction", {"seed": 1.5}, keep=None),
    S("a seed that is a boolean", {"seed": True}, keep=None),
    S("an unknown option", {"seed": 1, "other": 2}, keep=None),
    S("a function that is not an object", 5, keep=None),
]
