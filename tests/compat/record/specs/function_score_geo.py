NAME = "function_score_geo"
DESCRIPTION = "function_score decays (gauss, exp, linear) on geo points: origins in every form (a geohash as its cell's corner), scale and offset as distances, decay, multi_value_mode over several points, a missing origin as (0, 0), documents without a point at full score, two shards, and OpenSearch's error for a missing scale; expectations recorded from OpenSearch 2.19.6"
CLEANUP = ["/compat-geodecay*"]
exec(open(os.path.join(os.path.dirname(SPEC), "helpers.py")).read())
INDEX = "/compat-geodecay"

DOCS = [
    {"loc": {"lat": 52.37, "lon": 4.89}, "n": 1},
    {"loc": [[13.4, 52.52], [2.35, 48.86]], "n": 2},
    {"n": 3},
    {"loc": "40.71,-74.0", "n": 4},
    {"loc": "u173z", "n": 5},
    {"loc": [151.21, -33.87], "n": 6},
]
BULK = []
for i, doc in enumerate(DOCS):
    BULK += [{"index": {"_index": "compat-geodecay", "_id": str(i), "routing": f"r{i % 3}"}}, doc]


def K(b):
    if "error" in b:
        return None
    return {"hits": {"hits": [{"_id": h["_id"], "_score": {"$approx": h["_score"], "tol": 1e-6}} for h in b["hits"]["hits"]]}}


def S(desc, function, boost_mode=None, **kw):
    query = {"function_score": {"functions": [function]}}
    if boost_mode:
        query["function_score"]["query"] = {"match_all": {"boost": 2}}
        query["function_score"]["boost_mode"] = boost_mode
    d = {"desc": desc, "method": "POST", "path": INDEX + "/_search",
         "body": {"query": query, "_source": False, "sort": ["_score", {"n": "asc"}], "track_scores": True}, "keep": K}
    d.update(kw)
    if d["keep"] is None:
        d.pop("keep")
    return d


STEPS = [
    {"desc": "two shards and a geo point", "method": "PUT", "path": INDEX,
     "body": {"settings": {"number_of_shards": 2, "number_of_replicas": 0},
              "mappings": {"properties": {"loc": {"type": "geo_point"}, "n": {"type": "long"}}}},
     "keep": lambda b: {"acknowledged": True}},
    {"method": "POST", "path": "/_bulk", "params": {"refresh": "true"}, "ndjson": BULK, "keep": lambda b: {"errors": False}},
    S("gauss from a string origin, scale in kilometers", {"gauss": {"loc": {"origin": "52.3,4.9", "scale": "100km"}}}),
    S("exp with an offset and a decay, an array origin", {"exp": {"loc": {"origin": [4.9, 52.3], "scale": "500km", "offset": "10km", "decay": 0.3}}}),
    S("linear, the farthest of several points", {"linear": {"loc": {"origin": {"lat": 52.3, "lon": 4.9}, "scale": "1000km"}, "multi_value_mode": "max"}}),
    S("the average distance, a geohash origin, a scale in miles", {"gauss": {"loc": {"origin": "u173z", "scale": "2mi"}, "multi_value_mode": "avg"}}),
    S("the summed distances with an offset", {"linear": {"loc": {"origin": "52.3,4.9", "scale": "700km", "offset": "100km"}, "multi_value_mode": "sum"}}),
    S("a missing origin is (0, 0)", {"gauss": {"loc": {"scale": "10000km"}}}),
    S("with a weight, multiplied into the query's score", dict({"exp": {"loc": {"origin": "52.3,4.9", "scale": "300km"}}}, weight=3), boost_mode="multiply"),
    S("a missing scale fails the shards", {"gauss": {"loc": {"origin": "52.3,4.9"}}}, keep=None),
]
