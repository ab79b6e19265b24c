NAME = "terms_set"
DESCRIPTION = "the terms_set query: a minimum from a long, double or scaled float field (documents without one never match, zero and negative minimums still need one term), from a script with params.num_terms and doc values (a fraction truncated), repeated terms counting twice, keyword, text and numeric fields, a boost, inside a bool filter, highlighting, two shards, and OpenSearch's errors; expectations recorded from OpenSearch 2.19.6"
CLEANUP = ["/compat-termsset*"]
exec(open(os.path.join(os.path.dirname(SPEC), "helpers.py")).read())
INDEX = "/compat-termsset"

DOCS = [
    {"tags": ["a", "b", "c"], "req": 2, "dreq": 2.9, "sreq": 1.5, "body": "alpha beta", "n": [1, 2]},
    {"tags": ["a"], "req": 1, "dreq": 1.0, "sreq": 1.0, "body": "alpha", "n": 1},
    {"tags": ["a", "b"], "req": 0, "body": "beta gamma", "n": 3},
    {"tags": ["a", "b"], "req": -1, "dreq": -4.0, "n": [2, 3]},
    {"tags": ["a", "b", "c", "d"], "body": "alpha beta gamma delta"},
    {"tags": ["b", "c"], "req": 3, "dreq": 2.1, "sreq": 2.0, "n": 1},
    {"tags": ["a", "c"], "req": [1, 2], "body": "gamma"},
    {"tags": ["d"], "req": 1, "n": 4},
    {"req": 1, "body": "alpha"},
]
BULK = []
for i, doc in enumerate(DOCS):
    BULK += [{"index": {"_index": "compat-termsset", "_id": str(i)}}, doc]


def K(b):
    if "error" in b:
        return None
    return {"hits": {"total": b["hits"]["total"], "hits": [{"_id": h["_id"], "_score": {"$approx": h["_score"], "tol": 1e-5}} for h in b["hits"]["hits"]]}}


def S(desc, field, options, keep=K, **kw):
    d = {"desc": desc, "method": "POST", "path": INDEX + "/_search",
         "body": {"query": {"terms_set": {field: options}}, "_source": False}, "keep": keep}
    d.update(kw)
    if d["keep"] is None:
        d.pop("keep")
    return d


SCRIPT = {"source": "Math.min(params.num_terms, 2)"}

STEPS = [
    {"desc": "two shards", "method": "PUT", "path": INDEX,
     "body": {"settings": {"number_of_shards": 2, "number_of_replicas": 0},
              "mappings": {"properties": {"tags": {"type": "keyword"}, "req": {"type": "long"}, "dreq": {"type": "double"},
                                          "sreq": {"type": "scaled_float", "scaling_factor": 10},
                                          "body": {"type": "text"}, "n": {"type": "integer"}}}},
     "keep": lambda b: {"acknowledged": True}},
    {"method": "POST", "path": "/_bulk", "params": {"refresh": "true"}, "ndjson": BULK, "keep": lambda b: {"errors": False}},
    S("a minimum from a long field", "tags", {"terms": ["a", "b", "c"], "minimum_should_match_field": "req"}),
    S("a term listed twice counts and scores twice", "tags", {"terms": ["a", "b", "c", "a"], "minimum_should_match_field": "req"}),
    S("a minimum from a double field, truncated", "tags", {"terms": ["a", "b", "c"], "minimum_should_match_field": "dreq"}),
    S("a minimum from a scaled float", "tags", {"terms": ["a", "b", "c"], "minimum_should_match_field": "sreq"}),
    S("a minimum from a script with num_terms", "tags", {"terms": ["a", "b"], "minimum_should_match_script": SCRIPT}),
    S("a script reading doc values, with params", "tags", {"terms": ["a", "b", "c"], "minimum_should_match_script": {
        "source": "doc['req'].size() > 0 ? doc['req'].value + params.extra : params.num_terms", "params": {"extra": 1}}}),
    S("a script's fraction truncated, with a boost", "tags", {"terms": ["a", "b"], "minimum_should_match_script": {"source": "1.7"}, "boost": 2, "_name": "ts"}),
    S("terms of a text field are not analyzed", "body", {"terms": ["alpha", "Beta", "gamma"], "minimum_should_match_script": {"source": "1"}}),
    S("numbers score a constant each", "n", {"terms": [1, 2, "3"], "minimum_should_match_script": {"source": "2"}}),
    S("no terms match nothing", "tags", {"terms": [], "minimum_should_match_field": "req"}),
    {"desc": "as a bool filter", "method": "POST", "path": INDEX + "/_search",
     "body": {"query": {"bool": {"filter": [{"terms_set": {"tags": {"terms": ["a", "b"], "minimum_should_match_field": "req"}}}],
                                 "should": [{"match": {"body": "alpha"}}]}}, "_source": False}, "keep": K},
    {"desc": "highlighting the terms", "method": "POST", "path": INDEX + "/_search",
     "body": {"query": {"terms_set": {"body": {"terms": ["alpha", "beta"], "minimum_should_match_script": {"source": "2"}}}},
              "_source": False, "highlight": {"fields": {"body": {}}}},
     "keep": lambda b: {"hits": {"hits": [{"_id": h["_id"], "highlight": h["highlight"]} for h in b["hits"]["hits"]]}}},
    {"desc": "counted", "method": "POST", "path": INDEX + "/_count",
     "body": {"query": {"terms_set": {"tags": {"terms": ["a", "b", "c"], "minimum_should_match_field": "req"}}}},
     "keep": lambda b: {"count": b["count"]}},
    S("no minimum fails the shards", "tags", {"terms": ["a"]}, keep=None),
    S("a minimum field that is not mapped", "tags", {"terms": ["a"], "minimum_should_match_field": "nope"}, keep=None),
    S("a text minimum field has no field data", "tags", {"terms": ["a"], "minimum_should_match_field": "body"}, keep=None),
    S("both a field and a script", "tags", {"terms": ["a"], "minimum_should_match_field": "req", "minimum_should_match_script": {"source": "1"}}, keep=None),
    S("terms that are not an array", "tags", {"terms": "a", "minimum_should_match_field": "req"}, keep=None),
    S("an unknown option", "tags", {"terms": ["a"], "minimum_should_match_field": "req", "x": 1}, keep=None),
    {"desc": "options that are not an object", "method": "POST", "path": INDEX + "/_search",
     "body": {"query": {"terms_set": {"tags": ["a"]}}}},
]
