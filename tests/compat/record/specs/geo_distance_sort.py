NAME = "geo_distance_sort"
DESCRIPTION = "the _geo_distance sort: distances from one or several origins (every point form, a geohash as its cell's corner) in any unit, arc (Lucene's sloppy haversine, to the last digit) or plane, min/max/avg/median over several points, documents without a point as Infinity, ignore_unmapped, search_after, two shards, and OpenSearch's errors; expectations recorded from OpenSearch 2.19.6"
CLEANUP = ["/compat-geosort*"]
exec(open(os.path.join(os.path.dirname(SPEC), "helpers.py")).read())
INDEX = "/compat-geosort"

DOCS = [
    {"loc": {"lat": 52.37, "lon": 4.89}, "n": 1, "city": "amsterdam"},
    {"loc": [[13.4, 52.52], [2.35, 48.86]], "n": 2, "city": "berlin and paris"},
    {"n": 3, "city": "nowhere"},
    {"loc": "40.71,-74.0", "n": 4, "city": "new york"},
    {"loc": "u173z", "n": 5, "city": "a geohash"},
    {"loc": "POINT (-0.1276 51.5072)", "n": 6, "city": "london"},
    {"loc": [151.21, -33.87], "n": 7, "city": "sydney"},
]
BULK = []
for i, doc in enumerate(DOCS):
    BULK += [{"index": {"_index": "compat-geosort", "_id": str(i), "routing": f"r{i % 3}"}}, doc]


def K(b):
    if "error" in b:
        return None
    return {"hits": {"hits": [{"_id": h["_id"], "sort": h["sort"]} for h in b["hits"]["hits"]]}}


def S(desc, sort, body=None, **kw):
    d = {"desc": desc, "method": "POST", "path": INDEX + "/_search",
         "body": dict({"sort": sort, "_source": False, "size": 20}, **(body or {})), "keep": K}
    d.update(kw)
    if d["keep"] is None:
        d.pop("keep")
    return d


AMS = [4.9, 52.3]

STEPS = [
    {"desc": "two shards and a geo point", "method": "PUT", "path": INDEX,
     "body": {"settings": {"number_of_shards": 2, "number_of_replicas": 0},
              "mappings": {"properties": {"loc": {"type": "geo_point"}, "n": {"type": "long"}, "city": {"type": "keyword"}}}},
     "keep": lambda b: {"acknowledged": True}},
    {"method": "POST", "path": "/_bulk", "params": {"refresh": "true"}, "ndjson": BULK, "keep": lambda b: {"errors": False}},
    S("meters from one origin, nearest first, no point last", [{"_geo_distance": {"loc": AMS}}]),
    S("descending in kilometers: no point first, a document's farthest point", [{"_geo_distance": {"loc": {"lat": 52.3, "lon": 4.9}, "order": "desc", "unit": "km"}}]),
    S("several origins, the greatest distance, in miles", [{"_geo_distance": {"loc": [AMS, [-74, 40.7]], "unit": "mi", "mode": "max"}}]),
    S("the median and the average of several distances", [{"_geo_distance": {"loc": [AMS, [-74, 40.7], "48.8,2.3"], "mode": "median", "unit": "nmi"}},
                                                           {"_geo_distance": {"loc": [AMS, [-74, 40.7]], "mode": "avg", "unit": "yd"}}]),
    S("plane distances", [{"_geo_distance": {"loc": "52.3,4.9", "distance_type": "plane", "unit": "km"}}]),
    S("a geohash origin is its cell's corner", [{"_geo_distance": {"loc": "u173z", "unit": "ft"}}]),
    S("units: centimeters and inches", [{"_geo_distance": {"loc": AMS, "unit": "cm"}}, {"_geo_distance": {"loc": AMS, "unit": "in"}}]),
    S("then another field", [{"_geo_distance": {"loc": [0, 0], "unit": "km"}}, {"n": "desc"}]),
    S("after a field", [{"city": "asc"}, {"_geo_distance": {"loc": AMS}}]),
    S("search_after a distance", [{"_geo_distance": {"loc": AMS}}], body={"search_after": [422702.63061621645]}),
    S("search_after Infinity, descending", [{"_geo_distance": {"loc": AMS, "order": "desc"}}], body={"search_after": ["Infinity"]}),
    S("ignore_unmapped: every document as Infinity", [{"_geo_distance": {"nope": AMS, "ignore_unmapped": True}}, {"n": "asc"}]),
    S("an unmapped field fails the shards", [{"_geo_distance": {"nope": AMS}}], keep=None),
    S("mode sum is refused", [{"_geo_distance": {"loc": AMS, "mode": "sum"}}], keep=None),
    S("an unknown unit", [{"_geo_distance": {"loc": AMS, "unit": "parsecs"}}], keep=None),
    S("an unknown option", [{"_geo_distance": {"loc": AMS, "bogus": 1}}], keep=None,
      fix=without("line", "col")),
]
