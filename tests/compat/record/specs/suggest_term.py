NAME = "suggest_term"
DESCRIPTION = "the term suggester: per-token spelling suggestions from each shard's terms (edit distance with transpositions, prefix, accuracy, suggest_mode, sort, string_distance, frequency thresholds), merged over shards (frequencies added), suggest-only searches without hits, typed_keys, UTF-16 offsets, and OpenSearch's errors; expectations recorded from OpenSearch 2.19.6"
CLEANUP = ["/compat-suggest*"]
INDEX = "/compat-suggest"

TEXTS = [
    "the quick brown fox jumps", "quick brown foxes", "the lazy dog sleeps", "quack quick quicker",
    "brown brawn brain", "sleeping dogs lie", "the quickest fox", "Über straße café", "brawl in the brewery",
    "a quick quiz", "quirk and quack", "Hello World",
]

BULK = []
for i, text in enumerate(TEXTS):
    BULK += [{"index": {"_index": "compat-suggest", "_id": str(i), "routing": f"r{i % 3}"}},
             {"body": text, "tag": text, "ws": text, "n": i}]


def S(desc, suggest, body=None, **kw):
    d = {"desc": desc, "method": "POST", "path": INDEX + "/_search", "body": dict(body or {}, suggest=suggest)}
    d.update(kw)
    return d


def K(b):
    return {"hits": {"total": b["hits"]["total"], "hits": [{"_id": h["_id"]} for h in b["hits"]["hits"]]}, "suggest": b["suggest"]}


def T(text, **options):
    return {"s": {"text": text, "term": dict({"field": "body"}, **options)}}


STEPS = [
    {"desc": "two shards, documents routed three ways", "method": "PUT", "path": INDEX,
     "body": {"settings": {"number_of_shards": 2, "number_of_replicas": 0},
              "mappings": {"properties": {"body": {"type": "text"}, "tag": {"type": "keyword"},
                                          "ws": {"type": "text", "analyzer": "whitespace"}, "n": {"type": "long"}}}},
     "keep": lambda b: {"acknowledged": True}},
    {"method": "POST", "path": "/_bulk", "params": {"refresh": "true"}, "ndjson": BULK, "keep": lambda b: {"errors": False}},
    S("suggestions only: no query, no hits; misspelt tokens get options, known and short ones none",
      {"text": "quikc brwn fx straße", "s1": {"term": {"field": "body"}}}, keep=K),
    S("beside a query the hits are there", T("quikc brwn"), {"query": {"match": {"body": "quick"}}, "size": 2}, keep=K),
    S("beside aggregations the hits are counted", T("quikc"), {"size": 0, "aggs": {"c": {"value_count": {"field": "n"}}}},
      keep=lambda b: dict(K(b), aggregations=b["aggregations"])),
    S("suggest_mode always, sort by frequency, shorter words", T("quikc brwn fx the", suggest_mode="always", sort="frequency", min_word_length=2), keep=K),
    S("suggest_mode popular: only terms in more documents", T("quack brawn quick", suggest_mode="popular"), keep=K),
    S("size and shard_size", T("quikc brwn", size=1, shard_size=1), keep=K),
    S("a low accuracy lets further terms in", T("quikc brwn", accuracy=0.1, size=10), keep=K),
    S("max_edits 1", T("quikc brwn", max_edits=1), keep=K),
    S("prefix_length 0 and 3", {"a": {"text": "wuick", "term": {"field": "body", "prefix_length": 0}},
                                "b": {"text": "quxck", "term": {"field": "body", "prefix_length": 3}}}, keep=K),
    S("string_distance levenshtein", T("quikc brwn", string_distance="levenshtein"), keep=K),
    S("string_distance damerau_levenshtein", T("quikc brwn", string_distance="damerau_levenshtein"), keep=K),
    S("string_distance jaro_winkler", T("quikc brwn", string_distance="jaro_winkler"), keep=K),
    S("min_doc_freq as a count", T("quikc brwn", min_doc_freq=2), keep=K),
    S("max_term_freq as a count keeps frequent tokens out", T("quick brwn", suggest_mode="always", max_term_freq=2), keep=K),
    S("a keyword field: the whole text is one token", {"s": {"text": "the quikc brown fx jumps", "term": {"field": "tag"}}}, keep=K),
    S("a whitespace-analyzed field keeps case", {"s": {"text": "Helo wrld", "term": {"field": "ws"}}}, keep=K),
    S("the analyzer option", T("Quikc, brwn!", analyzer="whitespace"), keep=K),
    S("offsets count UTF-16 units", T("Ünïcödé quikc   brwn"), keep=K),
    S("a numeric field has no terms to offer", {"s": {"text": "6", "term": {"field": "n"}}}, keep=K),
    S("several suggestions, the global text where one has none",
      {"text": "quikc", "a": {"term": {"field": "body"}}, "b": {"text": "brwn", "term": {"field": "body", "size": 1}}}, keep=K),
    S("typed_keys", T("quikc"), params={"typed_keys": "true"}, keep=K),
    S("numbers as strings are coerced", T("quikc", size="1", accuracy="0.7"), keep=K),
    {"desc": "suggest_field in the URL, with suggest_text, suggest_size and suggest_mode", "method": "GET", "path": INDEX + "/_search",
     "params": {"suggest_field": "body", "suggest_text": "quikc brwn", "suggest_size": "2", "suggest_mode": "always", "size": "1"}, "keep": K},
    {"desc": "the URL's suggestion takes q as its text and replaces the body's", "method": "POST", "path": INDEX + "/_search",
     "params": {"suggest_field": "body", "q": "quikc", "suggest_mode": "missing"}, "body": {"suggest": T("brwn")}, "keep": K},
    {"desc": "suggest_size must be an integer", "method": "GET", "path": INDEX + "/_search",
     "params": {"suggest_field": "body", "suggest_text": "quikc", "suggest_size": "x", "suggest_mode": "missing"}},
    S("an unmapped field fails the shards", T("quikc", field="nope")),
    S("a suggestion without text fails the shards", {"s": {"term": {"field": "body"}}}),
    S("shard_size must be positive (on the shards)", T("quikc", shard_size=0)),
    S("an unknown analyzer fails the shards", T("quikc", analyzer="bogus")),
    S("field is required", {"s": {"text": "x", "term": {}}}),
    S("an unknown option", T("quikc", bogus=1),
      fix=lambda step: [c.__setitem__("reason", {"$regex": r"^suggester\[term\] doesn't support field \[bogus\]$"}) for c in step["expect"]["error"]["root_cause"]]),
    S("an unknown suggest_mode", T("quikc", suggest_mode="bogus")),
    S("an unknown sort", T("quikc", sort="bogus")),
    S("an unknown string_distance", T("quikc", string_distance="bogus")),
    S("max_edits above 2", T("quikc", max_edits=3)),
    S("size 0", T("quikc", size=0)),
    S("accuracy above 1", T("quikc", accuracy=2)),
    S("prefix_length below 0", T("quikc", prefix_length=-1)),
    S("min_word_length below 1", T("quikc", min_word_length=0)),
    S("a suggestion with no suggester", {"s": {"text": "x"}}),
    {"desc": "suggest must be an object", "method": "POST", "path": INDEX + "/_search", "body": {"suggest": []}},
]
