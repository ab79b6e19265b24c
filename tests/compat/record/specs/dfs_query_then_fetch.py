NAME = "dfs_query_then_fetch"
DESCRIPTION = "search_type=dfs_query_then_fetch: scores from the term statistics of every shard (and every index searched) — match, multi_match, a keyword term, bool, a phrase, fuzzy terms whose expansions exist on some shards only, query_string, a rescore query — against the per-shard scores of query_then_fetch, a scroll's first page, and an unknown search type; expectations recorded from OpenSearch 2.19.6"
CLEANUP = ["/compat-dfs*"]

exec(open(os.path.join(os.path.dirname(SPEC), "corpus.py")).read())
DOCS, OTHER = GARDEN, GARDEN_OTHER
BULK = []
for i, doc in enumerate(DOCS):
    BULK += [{"index": {"_index": "compat-dfs-a", "_id": f"a{i}"}}, doc]
for i, doc in enumerate(OTHER):
    BULK += [{"index": {"_index": "compat-dfs-b", "_id": f"b{i}"}}, doc]
MAPPINGS = {"properties": {"title": {"type": "text"}, "body": {"type": "text"}, "tag": {"type": "keyword"}}}


def K(b):
    if "error" in b:
        return None
    return {"hits": {"total": b["hits"]["total"], "hits": [{"_id": h["_id"], "_score": {"$approx": h["_score"], "tol": 1e-5}} for h in b["hits"]["hits"]]}}


def S(desc, query, path="/compat-dfs-a/_search", search_type="dfs_query_then_fetch", keep=K, **extra):
    d = {"desc": desc, "method": "POST", "path": path, "params": {"search_type": search_type},
         "body": dict({"size": 20, "query": query, "_source": False}, **extra), "keep": keep}
    if keep is None:
        d.pop("keep")
    return d


STEPS = [
    {"desc": "three shards", "method": "PUT", "path": "/compat-dfs-a",
     "body": {"settings": {"number_of_shards": 3, "number_of_replicas": 0}, "mappings": MAPPINGS},
     "keep": lambda b: {"acknowledged": True}},
    {"desc": "another index", "method": "PUT", "path": "/compat-dfs-b",
     "body": {"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": MAPPINGS},
     "keep": lambda b: {"acknowledged": True}},
    {"method": "POST", "path": "/_bulk", "params": {"refresh": "true"}, "ndjson": BULK, "keep": lambda b: {"errors": False}},
    S("match, each shard's own statistics", {"match": {"body": "honey garden"}}, search_type="query_then_fetch"),
    S("match, every shard's statistics", {"match": {"body": "honey garden"}}),
    S("multi_match", {"multi_match": {"query": "quick brown", "fields": ["title", "body"]}}),
    S("a keyword term", {"term": {"tag": "animal"}}),
    S("bool of a keyword and a text clause", {"bool": {"should": [{"term": {"tag": "pet"}}, {"match": {"title": "lazy"}}]}}),
    S("a phrase", {"match_phrase": {"body": "in the garden"}}),
    S("fuzzy", {"fuzzy": {"body": "gardn"}}),
    S("match with fuzziness", {"match": {"body": {"query": "hony gardn", "fuzziness": 1}}}),
    S("query_string", {"query_string": {"query": "body:garden OR title:quick"}}),
    S("over two indices", {"match": {"body": "garden honey beta"}}, path="/compat-dfs-a,compat-dfs-b/_search"),
    S("fuzzy terms found in one index only", {"fuzzy": {"body": "gamm"}}, path="/compat-dfs-a,compat-dfs-b/_search"),
    S("sorted by a field with tracked scores", {"match": {"body": "garden"}}, sort=[{"tag": "asc"}, "_doc"], track_scores=True,
      keep=lambda b: {"hits": {"hits": [{"_id": h["_id"], "_score": {"$approx": h["_score"], "tol": 1e-5}} for h in b["hits"]["hits"]]}}),
    S("a rescore query scores with every shard's statistics too", {"match": {"body": "garden"}},
      rescore={"window_size": 5, "query": {"rescore_query": {"match": {"title": "lazy garden"}},
                                           "query_weight": 0.5, "rescore_query_weight": 2}}),
    {"desc": "a scroll's first page", "method": "POST", "path": "/compat-dfs-a/_search",
     "params": {"search_type": "dfs_query_then_fetch", "scroll": "1m"},
     "body": {"size": 20, "query": {"match": {"body": "honey"}}, "_source": False}, "keep": K},
    S("an unknown search type", {"match_all": {}}, search_type="query_and_fetch", keep=None),
]
