NAME = "percolator"
DESCRIPTION = "the percolator field and the percolate query: stored queries checked against the mapping when indexed, matched against one or several documents (indexed in memory, scored with Lucene's BM25 there), _percolator_document_slot (named when several percolate queries), filter context, boosts, two shards, updates and deletes of stored queries, and OpenSearch's errors; expectations recorded from OpenSearch 2.19.6"
CLEANUP = ["/compat-percolator*"]
INDEX = "/compat-percolator"

QUERIES = [
    {"query": {"match": {"message": "bonsai tree"}}},
    {"query": {"range": {"n": {"gte": 5}}}, "tag": "a"},
    {"query": {"bool": {"must": [{"term": {"tag": "x"}}, {"match": {"message": "tree"}}]}}},
    {"query": {"bool": {"should": [{"range": {"n": {"lt": 3}}}, {"match": {"message": "office plant"}}]}}},
    {"query": {"match_phrase": {"message": "bonsai tree"}}},
    {"query": {"bool": {"filter": [{"terms": {"tag": ["x", "y"]}}], "must_not": [{"match": {"message": "dead"}}]}}},
    {"query": {"prefix": {"tag": "x"}}},
    {"query": {"match": {"message": "bonsai tree"}}},
    {"tag": "no query here"},
    {"query": {"exists": {"field": "n"}}},
]
BULK = []
for i, doc in enumerate(QUERIES):
    BULK += [{"index": {"_index": "compat-percolator", "_id": str(i), "routing": f"r{i % 3}"}}, doc]


def K(b):
    if "error" in b:
        return None
    return {"hits": {"total": b["hits"]["total"],
                     "hits": [{"_id": h["_id"], "_score": {"$approx": h["_score"], "tol": 0.0001} if h["_score"] is not None else None,
                               "fields": h.get("fields")} for h in b["hits"]["hits"]]}}


def S(desc, query, body=None, **kw):
    d = {"desc": desc, "method": "POST", "path": INDEX + "/_search",
         "body": dict({"query": query, "_source": False, "size": 20}, **(body or {}))}
    d.setdefault("keep", K)
    d.update(kw)
    if d["keep"] is None:
        d.pop("keep")
    return d


def P(**kw):
    return {"percolate": dict({"field": "query"}, **kw)}


STEPS = [
    {"desc": "two shards; a percolator field beside the fields its queries name", "method": "PUT", "path": INDEX,
     "body": {"settings": {"number_of_shards": 2, "number_of_replicas": 0},
              "mappings": {"properties": {"query": {"type": "percolator"}, "message": {"type": "text"},
                                          "n": {"type": "long"}, "tag": {"type": "keyword"}}}},
     "keep": lambda b: {"acknowledged": True}},
    {"desc": "the mapping", "method": "GET", "path": INDEX + "/_mapping"},
    {"method": "POST", "path": "/_bulk", "params": {"refresh": "true"}, "ndjson": BULK, "keep": lambda b: {"errors": False}},
    S("one document: the stored queries matching it, scored by their score on it",
      P(document={"message": "A new bonsai tree in the office", "n": 7})),
    S("several documents: every slot each stored query matches",
      P(documents=[{"message": "bonsai tree"}, {"message": "tree", "tag": "x"}, {"n": 9}, {"message": "dead bonsai", "tag": "y"}])),
    S("fields the mapping lacks are ignored", P(document={"message": "office plant", "other": {"x": 1}, "n": 1})),
    S("in filter context the score is constant",
      {"bool": {"filter": [P(document={"message": "tree", "tag": "x", "n": 1})], "must": [{"match_all": {}}]}}),
    S("constant_score", {"constant_score": {"filter": P(document={"message": "tree", "tag": "x"})}}),
    S("boost", P(document={"message": "bonsai tree"}, boost=3)),
    S("beside other clauses", {"bool": {"must": [P(document={"message": "bonsai tree", "n": 6})], "filter": [{"term": {"tag": "a"}}]}}),
    S("two named percolate queries name their slot fields",
      {"bool": {"should": [P(document={"message": "bonsai tree"}, name="first"), P(documents=[{"n": 1}, {"n": 8}], name="second")]}}),
    S("a sort by _id", P(documents=[{"message": "bonsai tree"}, {"n": 9}]), {"sort": [{"_id": "desc"}]}),
    {"desc": "a stored query is updated", "method": "PUT", "path": INDEX + "/_doc/1", "params": {"routing": "r1", "refresh": "true"},
     "body": {"query": {"range": {"n": {"gte": 100}}}}, "keep": lambda b: {"result": "updated"}},
    {"desc": "and one deleted", "method": "DELETE", "path": INDEX + "/_doc/0", "params": {"routing": "r0", "refresh": "true"},
     "keep": lambda b: {"result": "deleted"}},
    S("updates and deletes count", P(document={"message": "A new bonsai tree in the office", "n": 7})),
    {"desc": "a stored query on a field the mapping lacks", "method": "PUT", "path": INDEX + "/_doc/x",
     "body": {"query": {"match": {"nope": "x"}}}, "fix": lambda step: step["expect"]["error"]["root_cause"][0].pop("index_uuid", None) or step["expect"]["error"]["caused_by"].pop("index_uuid", None)},
    {"desc": "an unknown query", "method": "PUT", "path": INDEX + "/_doc/x", "body": {"query": {"bogus": {}}}},
    {"desc": "a stored query must be an object", "method": "PUT", "path": INDEX + "/_doc/x", "body": {"query": "x"}},
    S("percolate on a field that is not a percolator", {"percolate": {"field": "message", "document": {"message": "x"}}}, keep=None),
    S("percolate without a document", {"percolate": {"field": "query"}}, keep=None),
    S("a document that does not parse", P(document={"n": "abc"}), keep=None,
      fix=lambda step: step["expect"]["error"].pop("caused_by")),
]
