NAME = "indices_boost"
DESCRIPTION = "indices_boost: the scores of an index's documents multiplied by the first entry naming it (an index, an alias or a wildcard; list and object forms), across indices of several shards, and OpenSearch's errors; expectations recorded from OpenSearch 2.19.6"
CLEANUP = ["/compat-boost*"]
exec(open(os.path.join(os.path.dirname(SPEC), "helpers.py")).read())

TEXTS = ["quick brown fox", "lazy dog", "quick fox jumps", "brown bear", "the fox"]
BULK = []
for index in ("compat-boost-a", "compat-boost-b", "compat-boost-c"):
    for i, text in enumerate(TEXTS):
        BULK += [{"index": {"_index": index, "_id": str(i), "routing": f"r{i % 3}"}}, {"t": text, "n": i}]


def K(b):
    if "error" in b:
        return None
    return {"hits": {"total": b["hits"]["total"], "max_score": {"$approx": b["hits"]["max_score"], "tol": 0.0001} if b["hits"]["max_score"] is not None else None,
                     "hits": [{"_index": h["_index"], "_id": h["_id"],
                               "_score": {"$approx": h["_score"], "tol": 0.0001} if h["_score"] is not None else None}
                              for h in b["hits"]["hits"]]}}


def S(desc, boost, query=None, path="/compat-boost-*", **kw):
    body = {"query": query or {"match": {"t": "fox"}}, "size": 20, "sort": ["_score", {"n": "asc"}]}
    if boost is not None:
        body["indices_boost"] = boost
    d = {"desc": desc, "method": "POST", "path": path + "/_search", "body": body, "keep": K}
    d.update(kw)
    if d["keep"] is None:
        d.pop("keep")
    return d


STEPS = [
    *[{"desc": f"index {name}, two shards", "method": "PUT", "path": f"/compat-boost-{name}",
       "body": {"settings": {"number_of_shards": 2, "number_of_replicas": 0},
                "mappings": {"properties": {"t": {"type": "text"}, "n": {"type": "long"}}}},
       "keep": lambda b: {"acknowledged": True}} for name in ("a", "b", "c")],
    {"method": "POST", "path": "/_aliases", "body": {"actions": [{"add": {"index": "compat-boost-b", "alias": "compat-boost-alias"}}]},
     "keep": lambda b: {"acknowledged": True}},
    {"method": "POST", "path": "/_bulk", "params": {"refresh": "true"}, "ndjson": BULK, "keep": lambda b: {"errors": False}},
    S("no boost", None),
    S("one index boosted", [{"compat-boost-a": 2}]),
    S("several indices, one entry each", [{"compat-boost-a": 0.5}, {"compat-boost-c": 3}]),
    S("the first entry naming an index applies", [{"compat-boost-*": 3}, {"compat-boost-a": 2}]),
    S("an alias", [{"compat-boost-alias": 1.5}]),
    S("the object form", {"compat-boost-c": 4}),
    S("a wildcard matching nothing changes nothing", [{"compat-nothing-*": 2}]),
    S("an index outside the search changes nothing", [{"compat-boost-b": 5}], path="/compat-boost-a"),
    S("a filter scores nothing to boost", [{"compat-boost-a": 2}], query={"bool": {"filter": {"match": {"t": "fox"}}}}),
    S("a function_score under a boost", [{"compat-boost-b": 2}],
      query={"function_score": {"query": {"match": {"t": "fox"}}, "field_value_factor": {"field": "n", "missing": 1}, "boost_mode": "sum"}}),
    S("a missing index", [{"compat-boost-nope": 2}], keep=None),
    S("a boost must be a number", [{"compat-boost-a": "x"}], keep=None,
      fix=without("line", "col")),
    S("one index per object", [{"compat-boost-a": 1, "compat-boost-b": 2}], keep=None,
      fix=without("line", "col")),
    S("not a list or an object", 5, keep=None,
      fix=without("line", "col")),
]
