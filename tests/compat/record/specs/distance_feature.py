NAME = "distance_feature"
DESCRIPTION = "the distance_feature query: documents with a date or geo point scored boost x pivot / (pivot + distance) by their value closest to the origin (a date origin rounded up, date math, epoch millis; a geo origin in every form, distances by Lucene's sloppy haversine), in bool and function_score, over two shards, and OpenSearch's errors; expectations recorded from OpenSearch 2.19.6"
CLEANUP = ["/compat-distfeat*"]
exec(open(os.path.join(os.path.dirname(SPEC), "helpers.py")).read())
INDEX = "/compat-distfeat"

DOCS = [
    {"d": "2024-01-01", "loc": {"lat": 52.37, "lon": 4.89}, "k": "a", "n": 1},
    {"d": ["2024-01-05", "2023-12-20"], "loc": [[13.4, 52.52], [2.35, 48.86]], "k": "b", "n": 2},
    {"k": "c", "n": 3},
    {"d": "2024-02-01T10:00:00Z", "loc": "40.71,-74.0", "n": 4},
    {"d": "2023-06-15T08:30:00Z", "loc": "u173z", "n": 5},
]
BULK = []
for i, doc in enumerate(DOCS):
    BULK += [{"index": {"_index": "compat-distfeat", "_id": str(i), "routing": f"r{i % 3}"}}, doc]


def K(b):
    if "error" in b:
        return None
    return {"hits": {"total": b["hits"]["total"],
                     "hits": [{"_id": h["_id"], "_score": {"$approx": h["_score"], "tol": 1e-6}} for h in b["hits"]["hits"]]}}


def S(desc, query, **kw):
    d = {"desc": desc, "method": "POST", "path": INDEX + "/_search",
         "body": {"query": query, "_source": False, "sort": ["_score", {"n": "asc"}], "track_scores": True}, "keep": K}
    d.update(kw)
    if d["keep"] is None:
        d.pop("keep")
    return d


def F(**params):
    return {"distance_feature": params}


STEPS = [
    {"desc": "two shards, a date, a geo point and a keyword", "method": "PUT", "path": INDEX,
     "body": {"settings": {"number_of_shards": 2, "number_of_replicas": 0},
              "mappings": {"properties": {"d": {"type": "date"}, "loc": {"type": "geo_point"}, "k": {"type": "keyword"}, "n": {"type": "long"}}}},
     "keep": lambda b: {"acknowledged": True}},
    {"method": "POST", "path": "/_bulk", "params": {"refresh": "true"}, "ndjson": BULK, "keep": lambda b: {"errors": False}},
    S("a date origin (rounded up to the day's end) and a pivot of days", F(field="d", origin="2024-01-03", pivot="2d")),
    S("a boost", F(field="d", origin="2024-01-03", pivot="7d", boost=2.5)),
    S("epoch millis and a pivot of hours", F(field="d", origin=1704067200000, pivot="12h")),
    S("date math in the origin", F(field="d", origin="2024-01-03||+1d/d", pivot="1d")),
    S("a geo origin as an array, a pivot in kilometers", F(field="loc", origin=[4.9, 52.3], pivot="100km")),
    S("a geo origin as a string, a pivot in meters, a boost", F(field="loc", origin="52.3,4.9", pivot="1000m", boost=3)),
    S("a geohash origin (its cell's corner)", F(field="loc", origin="u173z", pivot="3km")),
    S("an unmapped field matches nothing", F(field="nope", origin="2024-01-01", pivot="1d")),
    S("a should clause beside match_all", {"bool": {"must": {"match_all": {}}, "should": F(field="d", origin="2024-01-03", pivot="1d", boost=1.7)}}),
    S("under function_score", {"function_score": {"query": F(field="loc", origin={"lat": 52.3, "lon": 4.9}, pivot="3km"), "boost": 2}}),
    S("a keyword field is refused", F(field="k", origin="a", pivot="1"), keep=None),
    S("a long field is refused", F(field="n", origin=1, pivot="1d"), keep=None),
    S("origin is required", F(field="d", pivot="1d"), keep=None),
    S("pivot is required", F(field="d", origin="2024-01-01"), keep=None),
    S("field is required", F(origin="2024-01-01", pivot="1d"), keep=None),
    S("a pivot that is no time", F(field="d", origin="2024-01-01", pivot="bogus"), keep=None,
      fix=lambda step: [e.pop("caused_by", None) for e in [step["expect"]["error"]] + [f["reason"] for f in step["expect"]["error"].get("failed_shards", [])]]),
    S("an unknown option", F(field="d", origin="2024-01-01", pivot="1d", x=1), keep=None,
      fix=positioned(r"\[distance_feature\] unknown field \[x\]")),
]
