NAME = "metadata_sorts"
DESCRIPTION = "sorting on metadata fields across two indices: _index (the index name), _seq_no and _id, both orders, with search_after, and OpenSearch's errors for _version, _routing and _primary_term; expectations recorded from OpenSearch 2.19.6"
CLEANUP = ["/compat-msort*"]

BULK = []
for index, count in (("compat-msort-a", 5), ("compat-msort-b", 4)):
    for i in range(count):
        BULK += [{"index": {"_index": index, "_id": f"{index[-1]}{i}"}}, {"n": i}]


def H(b):
    if "error" in b:
        return None
    return {"hits": {"hits": [{"_index": h["_index"], "_id": h["_id"], "sort": h["sort"]} for h in b["hits"]["hits"]]}}


def S(desc, body, keep=H):
    d = {"desc": desc, "method": "POST", "path": "/compat-msort-a,compat-msort-b/_search",
         "body": dict(body, _source=False), "keep": keep}
    if keep is None:
        d.pop("keep")
    return d


STEPS = [
    {"desc": "index a", "method": "PUT", "path": "/compat-msort-a",
     "body": {"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": {"properties": {"n": {"type": "long"}}}},
     "keep": lambda b: {"acknowledged": True}},
    {"desc": "index b", "method": "PUT", "path": "/compat-msort-b",
     "body": {"settings": {"number_of_shards": 1, "number_of_replicas": 0}, "mappings": {"properties": {"n": {"type": "long"}}}},
     "keep": lambda b: {"acknowledged": True}},
    {"method": "POST", "path": "/_bulk", "params": {"refresh": "true"}, "ndjson": BULK, "keep": lambda b: {"errors": False}},
    S("by index name, descending, then _seq_no", {"size": 6, "sort": [{"_index": "desc"}, {"_seq_no": "asc"}]}),
    S("by _seq_no descending, then index", {"size": 5, "sort": [{"_seq_no": "desc"}, {"_index": "asc"}]}),
    S("after an index and a seq_no", {"size": 4, "sort": [{"_index": "asc"}, {"_seq_no": "desc"}], "search_after": ["compat-msort-a", 2]}),
    S("after an id", {"size": 3, "sort": [{"_id": "asc"}], "search_after": ["a3"]}),
    S("_version has no field data", {"sort": [{"_version": "asc"}]}, keep=None),
    S("_routing has no field data", {"sort": [{"_routing": "asc"}]}, keep=None),
    S("_primary_term has no mapping to sort on", {"sort": [{"_primary_term": "asc"}]}, keep=None),
]
