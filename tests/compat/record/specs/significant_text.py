NAME = "significant_text"
DESCRIPTION = "the significant_text aggregation: the analyzed terms of a text field's _source in the matching documents against the index's, keyword fields, source_fields, include/exclude, heuristics, min_doc_count and size, under a terms parent, over two indices (ties ordered as OpenSearch's reduce meets shards, shard number first — as hits are); expectations recorded from OpenSearch 2.19.6"
CLEANUP = ["/compat-sigtext*"]

exec(open(os.path.join(os.path.dirname(SPEC), "corpus.py")).read())
DOCS, OTHER = GARDEN, GARDEN_OTHER
BULK = []
for i, doc in enumerate(DOCS):
    BULK += [{"index": {"_index": "compat-sigtext-a", "_id": f"a{i}"}}, doc]
for i, doc in enumerate(OTHER):
    BULK += [{"index": {"_index": "compat-sigtext-b", "_id": f"b{i}"}}, doc]
MAPPINGS = {"properties": {"title": {"type": "text"}, "body": {"type": "text"}, "tag": {"type": "keyword"}}}


def A(desc, query, aggs, path="/compat-sigtext-a/_search", keep=None):
    d = {"desc": desc, "method": "POST", "path": path, "params": {"typed_keys": "true"},
         "body": {"size": 0, "query": query, "aggs": aggs},
         "keep": keep or (lambda b: {"aggregations": b["aggregations"]} if "aggregations" in b else None)}
    return d


BOTH = "/compat-sigtext-a,compat-sigtext-b/_search"

STEPS = [
    {"desc": "three shards", "method": "PUT", "path": "/compat-sigtext-a",
     "body": {"settings": {"number_of_shards": 3, "number_of_replicas": 0}, "mappings": MAPPINGS},
     "keep": lambda b: {"acknowledged": True}},
    {"desc": "another index", "method": "PUT", "path": "/compat-sigtext-b",
     "body": {"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": MAPPINGS},
     "keep": lambda b: {"acknowledged": True}},
    {"method": "POST", "path": "/_bulk", "params": {"refresh": "true"}, "ndjson": BULK, "keep": lambda b: {"errors": False}},
    A("the terms of honey documents", {"match": {"body": "honey"}}, {"st": {"significant_text": {"field": "body", "min_doc_count": 1}}}),
    A("the default min_doc_count of 3", {"match": {"body": "garden"}}, {"st": {"significant_text": {"field": "body"}}}),
    A("a keyword field, whole values", {"match": {"body": "garden"}}, {"st": {"significant_text": {"field": "tag", "min_doc_count": 1}}}),
    A("source_fields read another field's text", {"match": {"body": "garden"}}, {"st": {"significant_text": {"field": "body", "source_fields": ["title"], "min_doc_count": 2}}}),
    A("include as a pattern, exclude as values", {"match": {"body": "garden"}}, {
        "inc": {"significant_text": {"field": "body", "min_doc_count": 1, "include": "[a-m].*"}},
        "exc": {"significant_text": {"field": "body", "min_doc_count": 1, "exclude": ["garden", "in", "the"]}}}),
    A("chi_square and gnd", {"match": {"body": "honey"}}, {
        "chi": {"significant_text": {"field": "body", "min_doc_count": 1, "size": 5, "chi_square": {}}},
        "gnd": {"significant_text": {"field": "body", "min_doc_count": 1, "size": 5, "gnd": {}}}}),
    A("under a terms parent", {"match_all": {}}, {"tags": {"terms": {"field": "tag", "size": 3},
        "aggs": {"st": {"significant_text": {"field": "body", "min_doc_count": 2, "size": 3}}}}}),
    A("over two indices", {"match": {"body": "honey"}}, {"st": {"significant_text": {"field": "body", "min_doc_count": 1}}}, path=BOTH),
    A("ties over two indices, as significant_terms'", {"match": {"body": "garden"}}, {
        "st": {"significant_text": {"field": "tag", "min_doc_count": 1}},
        "sterms": {"significant_terms": {"field": "tag", "min_doc_count": 1}}}, path=BOTH),
    {"desc": "hits tied over two indices come shard number first", "method": "POST", "path": BOTH,
     "body": {"size": 13, "query": {"match_all": {}}, "_source": False},
     "keep": lambda b: {"hits": {"hits": [{"_index": h["_index"], "_id": h["_id"]} for h in b["hits"]["hits"]]}}},
]
