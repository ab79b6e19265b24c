NAME = "query_lookups"
DESCRIPTION = "queries that name an indexed document, read by the coordinator before the shards run: the terms lookup (index, id, path into objects and arrays, routing, a missing document or path, boost, in filters, post_filter, aggregations, _count, _msearch and _delete_by_query) and the percolate query of an indexed document (routing, version, not found, conflicts), and OpenSearch's errors; expectations recorded from OpenSearch 2.19.6"
CLEANUP = ["/compat-lookup*"]
exec(open(os.path.join(os.path.dirname(SPEC), "helpers.py")).read())
INDEX = "/compat-lookup"
SOURCE = "/compat-lookup-src"

DOCS = [
    {"color": ["red", "blue"], "n": 1, "body": "quick brown fox", "q": {"match": {"body": "fox"}}},
    {"color": "green", "n": 2, "body": "lazy dog", "q": {"term": {"color": "green"}}},
    {"color": ["blue"], "n": 3, "body": "brown bear", "q": {"range": {"n": {"gte": 3}}}},
    {"color": "yellow", "n": 4, "body": "quick yellow bird"},
    {"color": ["red"], "n": 5, "body": "red fox", "q": {"match": {"body": "quick"}}},
]
BULK = []
for i, doc in enumerate(DOCS):
    BULK += [{"index": {"_index": "compat-lookup", "_id": str(i), "routing": f"r{i % 3}"}}, doc]
SOURCES = [
    ("a", None, {"prefs": {"colors": ["red", "green"], "nums": [1, 2]}, "list": [{"c": "blue"}, {"c": ["red"]}, {"d": 1}],
                 "a.b": {"c": "yellow"}, "obj": {"k": "red"}}),
    ("b", "user1", {"prefs": {"colors": "blue"}, "body": "a quick fox", "n": 9}),
]
SOURCE_BULK = []
for doc_id, routing, doc in SOURCES:
    action = {"_index": "compat-lookup-src", "_id": doc_id}
    if routing:
        action["routing"] = routing
    SOURCE_BULK += [{"index": action}, doc]


def K(b):
    if "error" in b:
        return None
    def hit(h):
        out = {"_id": h["_id"], "_score": {"$approx": h["_score"], "tol": 0.0001} if h["_score"] is not None else None}
        if "fields" in h:
            out["fields"] = h["fields"]
        return out
    return {"hits": {"total": b["hits"]["total"], "hits": [hit(h) for h in b["hits"]["hits"]]}}


def S(desc, query, body=None, path=INDEX, **kw):
    d = {"desc": desc, "method": "POST", "path": path + "/_search",
         "body": dict({"query": query, "_source": False, "size": 20, "sort": [{"n": "asc"}]}, **(body or {}))}
    d.setdefault("keep", K)
    d.update(kw)
    if d["keep"] is None:
        d.pop("keep")
    return d


def L(path, id="a", **kw):
    return {"color": dict({"index": "compat-lookup-src", "id": id, "path": path}, **kw)}




PERC = {"field": "q", "index": "compat-lookup-src", "id": "b", "routing": "user1"}

STEPS = [
    {"desc": "two shards; a keyword, a number, a text and a percolator field", "method": "PUT", "path": INDEX,
     "body": {"settings": {"number_of_shards": 2, "number_of_replicas": 0},
              "mappings": {"properties": {"color": {"type": "keyword"}, "n": {"type": "long"}, "body": {"type": "text"},
                                          "q": {"type": "percolator"}}}},
     "keep": lambda b: {"acknowledged": True}},
    {"desc": "the documents the lookups read", "method": "PUT", "path": SOURCE,
     "body": {"settings": {"number_of_shards": 3, "number_of_replicas": 0},
              "mappings": {"properties": {"body": {"type": "text"}, "n": {"type": "long"}}},
              "aliases": {"compat-lookup-alias": {}}},
     "keep": lambda b: {"acknowledged": True}},
    {"method": "POST", "path": "/_bulk", "params": {"refresh": "true"}, "ndjson": BULK + SOURCE_BULK, "keep": lambda b: {"errors": False}},
    S("a terms lookup: the values at a path of an indexed document", {"terms": L("prefs.colors")}),
    S("a path through an array of objects, values and arrays alike", {"terms": L("list.c")}),
    S("a key holding a dot", {"terms": L("a.b.c")}),
    S("numbers", {"terms": {"n": {"index": "compat-lookup-src", "id": "a", "path": "prefs.nums"}}}),
    S("a path to an object gives no values", {"terms": L("obj")}),
    S("a missing path matches nothing", {"terms": L("nope")}),
    S("a missing document matches nothing", {"terms": L("prefs.colors", id="zz")}),
    S("routing reaches the document", {"terms": L("prefs.colors", id="b", routing="user1")}),
    S("through an alias", {"terms": {"color": {"index": "compat-lookup-alias", "id": "a", "path": "prefs.colors"}}}),
    S("boost and _name", {"terms": dict(L("prefs.colors"), boost=2.5, _name="looked")},
      keep=lambda b: {"hits": {"hits": [{"_id": h["_id"], "_score": h["_score"], "matched_queries": h.get("matched_queries")} for h in b["hits"]["hits"]]}},
      body={"sort": ["_score", {"n": "asc"}]}),
    S("inside a bool, beside another lookup", {"bool": {"filter": [{"terms": L("prefs.colors")}],
                                                        "must_not": [{"terms": L("list.c")}]}}),
    S("in a post_filter", {"match_all": {}}, body={"post_filter": {"terms": L("list.c")}}),
    {"desc": "in a filter aggregation", "method": "POST", "path": INDEX + "/_search",
     "body": {"size": 0, "aggs": {"f": {"filter": {"terms": L("prefs.colors")}, "aggs": {"s": {"sum": {"field": "n"}}}}}},
     "keep": lambda b: {"aggregations": {"f": {"doc_count": b["aggregations"]["f"]["doc_count"], "s": b["aggregations"]["f"]["s"]}}}},
    {"desc": "_count", "method": "POST", "path": INDEX + "/_count", "body": {"query": {"terms": L("prefs.colors")}},
     "keep": lambda b: {"count": b["count"]}},
    {"desc": "_msearch", "method": "POST", "path": INDEX + "/_msearch",
     "ndjson": [{}, {"query": {"terms": L("prefs.colors")}, "size": 0}, {}, {"query": {"terms": L("list.c")}, "size": 0}],
     "keep": lambda b: {"responses": [{"hits": {"total": r["hits"]["total"]}} for r in b["responses"]]}},
    S("an unknown index", {"terms": {"color": {"index": "compat-lookup-nope", "id": "a", "path": "c"}}}, keep=None),
    S("index is required", {"terms": {"color": {"id": "a", "path": "c"}}}, keep=None),
    S("id is required", {"terms": {"color": {"index": "compat-lookup-src", "path": "c"}}}, keep=None),
    S("path is required", {"terms": {"color": {"index": "compat-lookup-src", "id": "a"}}}, keep=None),
    S("an unknown lookup option", {"terms": {"color": {"index": "compat-lookup-src", "id": "a", "path": "c", "bogus": 1}}},
      keep=None, fix=positioned(r"\[terms_lookup\] unknown field \[bogus\]")),
    S("the id must be a string", {"terms": {"color": {"index": "compat-lookup-src", "id": 1, "path": "c"}}},
      keep=None, fix=positioned(r"\[terms_lookup\] id doesn't support values of type: VALUE_NUMBER")),
    S("percolate an indexed document", {"percolate": PERC}, body={"sort": ["_score", {"n": "asc"}]}),
    S("percolate with its version", {"percolate": dict(PERC, version=1)}, body={"sort": ["_score", {"n": "asc"}]}),
    S("percolate in a filter, named", {"bool": {"filter": {"percolate": dict(PERC, name="doc")}}}),
    S("percolate an indexed document of the same index", {"percolate": {"field": "q", "index": "compat-lookup", "id": "1", "routing": "r1"}}),
    S("a version conflict", {"percolate": dict(PERC, version=7)}, keep=None,
      fix=without("index_uuid", "shard")),
    S("a missing document", {"percolate": {"field": "q", "index": "compat-lookup-src", "id": "zz"}}, keep=None),
    S("an id needs an index", {"percolate": {"field": "q", "id": "b"}}, keep=None),
    S("an id and a document together", {"percolate": {"field": "q", "index": "compat-lookup-src", "id": "b", "document": {}}}, keep=None),
    {"desc": "_delete_by_query with a lookup", "method": "POST", "path": INDEX + "/_delete_by_query",
     "params": {"refresh": "true"}, "body": {"query": {"terms": L("prefs.colors")}},
     "keep": lambda b: {"deleted": b["deleted"], "failures": b["failures"]}},
    S("what the lookup deleted is gone", {"match_all": {}}),
]
