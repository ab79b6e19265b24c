NAME = "samplers"
DESCRIPTION = "sampler and diversified_sampler: the best-scoring shard_size matches of each shard (per parent bucket), ties to the earlier document, at most max_docs_per_value per value of a field, the key a document without a value shares under each execution_hint, top_hits scores inside a sample, and OpenSearch's errors; expectations recorded from OpenSearch 2.19.6"
CLEANUP = ["/compat-samplers*"]
INDEX = "/compat-samplers"


def doc(i):
    words = " ".join(["fox"] * (1 + i % 5)) + (" dog" if i % 3 == 0 else "")
    return {"t": f"{words} quick {i}", "k": f"k{i % 4}", "n": i % 7, "f": (i % 5) / 2, "tags": [f"a{i % 2}", f"b{i % 3}"]}


BULK = []
for i in range(1, 31):
    BULK += [{"index": {"_index": "compat-samplers", "_id": str(i), "routing": f"r{i % 2}"}}, doc(i)]
BULK += [{"index": {"_index": "compat-samplers", "_id": "nok", "routing": "r0"}}, {"t": "fox alone"}]


def S(desc, body, **kw):
    d = {"desc": desc, "method": "POST", "path": INDEX + "/_search", "body": dict({"size": 0}, **body)}
    d.update(kw)
    return d


def HITS(name="th", size=20):
    return {name: {"top_hits": {"size": size, "_source": False}}}


def _strip(aggs):
    """top_hits kept as ids and scores (approximate), everything else as it is."""
    if isinstance(aggs, dict):
        out = {}
        for k, v in aggs.items():
            if k == "hits" and isinstance(v, dict) and "hits" in v:
                out[k] = {"total": v["total"], "hits": [{"_id": h["_id"], "_score": {"$approx": h["_score"], "tol": 0.001}} for h in v["hits"]]}
            else:
                out[k] = _strip(v)
        return out
    if isinstance(aggs, list):
        return [_strip(x) for x in aggs]
    return aggs


def unposition(error):
    """`[1:66] [agg] unknown field [x]`: the position as a pattern."""
    pattern = {"$regex": r"^(\[\d+:\d+\] )?\[diversified_sampler\] unknown field \[bogus\]$"}
    error["reason"] = pattern
    for cause in error["root_cause"]:
        cause["reason"] = pattern


K = {"keep": lambda b: {"aggregations": _strip(b["aggregations"])}}
STEPS = [
    {"desc": "two shards, documents routed by parity", "method": "PUT", "path": INDEX,
     "body": {"settings": {"number_of_shards": 2, "number_of_replicas": 0},
              "mappings": {"properties": {"t": {"type": "text"}, "k": {"type": "keyword"}, "n": {"type": "long"},
                                          "f": {"type": "double"}, "tags": {"type": "keyword"}}}},
     "keep": lambda b: {"acknowledged": True}},
    {"method": "POST", "path": "/_bulk", "params": {"refresh": "true"}, "ndjson": BULK, "keep": lambda b: {"errors": False}},
    S("sampler: the three best matches of each shard feed terms and max", {
        "query": {"match": {"t": "fox dog"}},
        "aggs": {"s": {"sampler": {"shard_size": 3}, "aggs": {"k": {"terms": {"field": "k"}}, "mx": {"max": {"field": "n"}}, **HITS()}}}}, **K),
    S("sampler under a constant-score query: the first documents of each shard", {
        "aggs": {"s": {"sampler": {"shard_size": 4}, "aggs": {"k": {"terms": {"field": "k"}}, **HITS()}}}}, **K),
    S("sampler's default shard_size is 100", {
        "query": {"match": {"t": "quick"}},
        "aggs": {"s": {"sampler": {}, "aggs": {"c": {"value_count": {"field": "n"}}}}}}, **K),
    S("a sampler under terms samples each bucket", {
        "query": {"match": {"t": "fox dog"}},
        "aggs": {"k": {"terms": {"field": "k"}, "aggs": {"s": {"sampler": {"shard_size": 2}, "aggs": HITS()}}}}}, **K),
    S("terms ordered by a sampler's sub-aggregation", {
        "query": {"match": {"t": "fox dog"}},
        "aggs": {"k": {"terms": {"field": "k", "order": {"s>mx": "desc"}}, "aggs": {"s": {"sampler": {"shard_size": 1}, "aggs": {"mx": {"max": {"field": "n"}}}}}}}}, **K),
    S("diversified_sampler: one document per keyword", {
        "query": {"match": {"t": "fox dog"}},
        "aggs": {"s": {"diversified_sampler": {"shard_size": 4, "field": "k"}, "aggs": HITS()}}}, **K),
    S("diversified_sampler: two per keyword", {
        "query": {"match": {"t": "fox dog"}},
        "aggs": {"s": {"diversified_sampler": {"shard_size": 4, "field": "k", "max_docs_per_value": 2}, "aggs": HITS()}}}, **K),
    S("diversified_sampler on a long field", {
        "query": {"match": {"t": "fox dog"}},
        "aggs": {"s": {"diversified_sampler": {"shard_size": 10, "field": "n"}, "aggs": HITS()}}}, **K),
    S("diversified_sampler on a double field keys by the integer part", {
        "query": {"match": {"t": "fox dog"}},
        "aggs": {"s": {"diversified_sampler": {"shard_size": 10, "field": "f"}, "aggs": HITS()}}}, **K),
    S("a document without the field shares the smallest term's key (global ordinals)", {
        "query": {"match": {"t": "alone fox"}},
        "aggs": {"s": {"diversified_sampler": {"shard_size": 40, "field": "k"}, "aggs": HITS()}}}, **K),
    S("... the first term collected (map)", {
        "query": {"match": {"t": "alone fox"}},
        "aggs": {"s": {"diversified_sampler": {"shard_size": 40, "field": "k", "execution_hint": "map"}, "aggs": HITS()}}}, **K),
    S("... or a key of its own (bytes_hash)", {
        "query": {"match": {"t": "alone fox"}},
        "aggs": {"s": {"diversified_sampler": {"shard_size": 40, "field": "k", "execution_hint": "bytes_hash"}, "aggs": HITS()}}}, **K),
    S("no document per value samples nothing", {
        "aggs": {"s": {"diversified_sampler": {"field": "k", "max_docs_per_value": 0}, "aggs": {"m": {"max": {"field": "n"}}}}}}, **K),
    S("nothing matches", {
        "query": {"match": {"t": "zzz"}},
        "aggs": {"s": {"sampler": {"shard_size": 2}, "aggs": {"m": {"max": {"field": "n"}}}}}}, **K),
    S("an unmapped field samples nothing", {
        "aggs": {"s": {"diversified_sampler": {"field": "nope"}, "aggs": {"m": {"max": {"field": "n"}}}}}},
      keep=lambda b: {"aggregations": {"s": {"doc_count": 0}}}),
    S("typed_keys", {"aggs": {"s": {"sampler": {"shard_size": 1}, "aggs": {"m": {"max": {"field": "n"}}}},
                              "d": {"diversified_sampler": {"field": "k"}, "aggs": {"m": {"max": {"field": "n"}}}}}},
      params={"typed_keys": "true"}, **K),
    S("a multi-valued key fails the shards", {
        "query": {"match": {"t": "fox"}},
        "aggs": {"s": {"diversified_sampler": {"field": "tags"}, "aggs": {"m": {"max": {"field": "n"}}}}}}),
    S("a sampler needs sub-aggregations (OpenSearch answers 500)", {"aggs": {"s": {"sampler": {}}}},
      fix=lambda step: (step.__setitem__("status", 400), step["expect"].__setitem__("status", 400))),
    S("shard_size must be positive", {"aggs": {"s": {"sampler": {"shard_size": 0}, "aggs": {"m": {"max": {"field": "n"}}}}}}),
    S("an unknown property of sampler", {"aggs": {"s": {"sampler": {"bogus": 1}, "aggs": {"m": {"max": {"field": "n"}}}}}}),
    S("an unknown property of diversified_sampler (the position depends on the JSON's layout)",
      {"aggs": {"s": {"diversified_sampler": {"field": "k", "bogus": 1}, "aggs": {"m": {"max": {"field": "n"}}}}}},
      fix=lambda step: unposition(step["expect"]["error"])),
    S("an unknown execution_hint", {"aggs": {"s": {"diversified_sampler": {"field": "k", "execution_hint": "zzz"}, "aggs": {"m": {"max": {"field": "n"}}}}}}),
    S("a field or a script is required", {"aggs": {"s": {"diversified_sampler": {"shard_size": 3}, "aggs": {"m": {"max": {"field": "n"}}}}}}),
    S("a text field has no doc values", {"aggs": {"s": {"diversified_sampler": {"field": "t"}, "aggs": {"m": {"max": {"field": "n"}}}}}}),
]
