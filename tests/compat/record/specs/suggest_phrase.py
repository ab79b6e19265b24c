NAME = "suggest_phrase"
DESCRIPTION = "the phrase suggester: whole-phrase corrections scored by the noisy-channel model (stupid backoff, laplace and linear smoothing over unigrams, bigrams and trigrams), confidence, max_errors, real_word_error_likelihood, direct generators (several, pre and post filters, suggest modes), highlighting, collate with and without prune, token_limit, two shards merged, several segments, and OpenSearch's errors; expectations recorded from OpenSearch 2.19.6"
CLEANUP = ["/compat-phrase*"]
exec(open(os.path.join(os.path.dirname(SPEC), "helpers.py")).read())
INDEX = "/compat-phrase"

TEXTS = [
    "the quick brown fox jumps over the lazy dog", "quick brown foxes are quicker than lazy dogs",
    "the brown bear eats honey by the river", "a quick test of the phrase suggester",
    "the river runs through the green valley", "snow falls in winter on the mountain peak",
    "the king and the queen ride horses", "a knight rides a brown horse at night",
    "the sun shines bright in the morning", "stars light the night sky over the ocean",
    "waves crash on the sandy shore", "the quick brown fox eats the honey",
    "Straße und Café am Fluss", "the lazy dog sleeps by the river",
]
MORE = ["the quick red fox jumps over the lazy cat", "brown bears and brown foxes by the green river"]

BULK = []
for i, text in enumerate(TEXTS):
    BULK += [{"index": {"_index": "compat-phrase", "_id": str(i), "routing": f"r{i % 3}"}},
             {"body": text, "ws": text, "tag": text.split(" ")[0] + " " + text.split(" ")[1], "n": i}]
MORE_BULK = []
for i, text in enumerate(MORE):
    MORE_BULK += [{"index": {"_index": "compat-phrase", "_id": f"m{i}", "routing": f"r{i % 3}"}},
                  {"body": text, "ws": text, "n": 100 + i}]


def K(b):
    if "error" in b:
        return None
    return {"hits": {"total": b["hits"]["total"], "hits": [{"_id": h["_id"]} for h in b["hits"]["hits"]]}, "suggest": b["suggest"]}


def P(desc, text, body=None, params=None, **options):
    suggestion = {"text": text, "phrase": dict({"field": "body"}, **options)}
    d = {"desc": desc, "method": "POST", "path": INDEX + "/_search", "body": dict(body or {"size": 0}, suggest={"s": suggestion})}
    if params:
        d["params"] = params
    return d


def KP(*args, **kw):
    d = P(*args, **kw)
    d["keep"] = K
    return d




STEPS = [
    {"desc": "two shards, documents routed three ways", "method": "PUT", "path": INDEX,
     "body": {"settings": {"number_of_shards": 2, "number_of_replicas": 0},
              "mappings": {"properties": {"body": {"type": "text"}, "ws": {"type": "text", "analyzer": "whitespace"},
                                          "tag": {"type": "keyword"}, "n": {"type": "long"}}}},
     "keep": lambda b: {"acknowledged": True}},
    {"method": "POST", "path": "/_bulk", "params": {"refresh": "true"}, "ndjson": BULK, "keep": lambda b: {"errors": False}},
    KP("defaults: corrections scoring above the text's own score, the text as given", "the quikc brwn fox"),
    KP("confidence 0 keeps the text itself; highlight wraps the changed runs", "the quikc brwn fox", confidence=0,
       max_errors=2, gram_size=2, highlight={"pre_tag": "<em>", "post_tag": "</em>"}),
    KP("max_errors 1: one change per correction", "the quikc brwn fox", max_errors=1, confidence=0),
    KP("max_errors as a fraction of the tokens", "quikc brwn fox jumsp ovr", max_errors=0.2, confidence=0.5),
    KP("size and shard_size", "quikc brwn foxs", size=2, shard_size=3, max_errors=3, confidence=0),
    KP("laplace smoothing over bigrams", "the quikc brwn fox", gram_size=2, smoothing={"laplace": {"alpha": 0.7}}, confidence=0.5),
    KP("linear interpolation over trigrams", "the quikc brwn fox jumsp", gram_size=3, max_errors=2,
       smoothing={"linear": {"trigram_lambda": 0.5, "bigram_lambda": 0.3, "unigram_lambda": 0.2}}, confidence=0),
    KP("stupid backoff with its discount over trigrams", "the quikc brwn fox jumsp", gram_size=3, max_errors=3,
       smoothing={"stupid_backoff": {"discount": 0.3}}, size=3),
    KP("real_word_error_likelihood", "the lazy dgo sleeps", real_word_error_likelihood=0.5, confidence=0),
    KP("a separator for the n-grams looked up", "the quikc brwn fox", gram_size=2, separator="_", confidence=0),
    KP("two generators, one with pre and post filters", "Quikc brwn",
       direct_generator=[{"field": "body", "suggest_mode": "always", "min_word_length": 3, "size": 3},
                         {"field": "body", "pre_filter": "standard", "post_filter": "simple", "max_edits": 1}]),
    KP("a popular generator suggests more frequent words for known ones", "brown dog", confidence=0,
       direct_generator=[{"field": "body", "suggest_mode": "popular", "max_term_freq": 10, "min_word_length": 3}]),
    KP("generator options: prefix_length, accuracy, string_distance, sort, max_inspections", "qiuck bronw",
       direct_generator=[{"field": "body", "prefix_length": 0, "accuracy": 0.6, "string_distance": "damerau_levenshtein",
                          "sort": "frequency", "max_inspections": 2, "min_doc_freq": 1}], confidence=0),
    KP("a generator on a field without terms offers nothing", "quikc", direct_generator=[{"field": "nope"}]),
    KP("a keyword field: the whole text is one token", "quikc brown", field="tag", confidence=0),
    KP("a whitespace-analyzed field keeps case", "The quikc brwn", field="ws", max_errors=2),
    KP("token_limit: a text of as many tokens gets nothing", "quikc brwn fox", token_limit=3),
    KP("an empty text", ""),
    KP("non-ASCII text: the length counts UTF-16 units", "Straße und Cafe", confidence=0),
    KP("collate keeps the corrections whose query matches", "the brwn bera eats", confidence=0, max_errors=2,
       collate={"query": {"source": {"match_phrase": {"body": "{{suggestion}}"}}}}),
    KP("collate with params and prune flags every correction", "quikc brwn bear", confidence=0, max_errors=2,
       collate={"query": {"source": {"match": {"{{f}}": {"query": "{{suggestion}}", "operator": "and"}}}},
                "params": {"f": "body"}, "prune": True}),
    KP("collate as a template string", "the lazy dgo", confidence=0,
       collate={"query": {"source": "{\"match_phrase\": {\"body\": \"{{suggestion}}\"}}"}, "prune": True}),
    KP("typed_keys", "quikc brwn", params={"typed_keys": "true"}),
    {"desc": "beside a query, a term suggestion and the global text", "method": "POST", "path": INDEX + "/_search",
     "body": {"query": {"match": {"body": "honey"}}, "suggest": {"text": "brwn bera", "p": {"phrase": {"field": "body"}},
                                                             "t": {"term": {"field": "body"}}}},
     "keep": K},
    {"method": "POST", "path": "/_bulk", "params": {"refresh": "true"}, "ndjson": MORE_BULK, "keep": lambda b: {"errors": False}},
    KP("shards of two segments", "the quikc brwn fox jumsp", gram_size=2, confidence=0),
    P("an unmapped field fails the shards", "quikc", field="nope"),
    P("an unknown analyzer fails the shards", "quikc", analyzer="nope"),
    P("an unknown pre_filter fails the shards", "quikc", direct_generator=[{"field": "body", "pre_filter": "nope"}]),
    P("an unknown suggest_mode fails the shards", "quikc", direct_generator=[{"field": "body", "suggest_mode": "nope"}]),
    P("an unknown sort fails the shards", "quikc", direct_generator=[{"field": "body", "sort": "nope"}]),
    P("an unknown string_distance fails the shards", "quikc", direct_generator=[{"field": "body", "string_distance": "nope"}]),
    P("shard_size must be positive (on the shards)", "quikc", shard_size=0),
    {"desc": "field is required", "method": "POST", "path": INDEX + "/_search", "body": {"suggest": {"s": {"text": "x", "phrase": {}}}}},
    dict(P("an unknown option", "x", bogus=1), fix=positioned(r"suggester\[phrase\] doesn't support field \[bogus\]")),
    dict(P("an unknown object", "x", bogus={}), fix=positioned(r"suggester\[phrase\]  doesn't support array field \[bogus\]")),
    P("size 0", "x", size=0),
    P("a negative confidence", "x", confidence=-1),
    P("max_errors 0", "x", max_errors=0),
    P("gram_size 0", "x", gram_size=0),
    P("real_word_error_likelihood 0", "x", real_word_error_likelihood=0),
    P("token_limit 0", "x", token_limit=0),
    P("a pre_tag without a post_tag", "x", highlight={"pre_tag": "<"}),
    dict(P("an unknown highlight option", "x", highlight={"x": "<"}), fix=positioned(r"suggester\[phrase\]\[highlight\] doesn't support field \[x\]")),
    P("an unknown smoothing model", "x", smoothing={"bogus": {}}),
    P("linear lambdas must sum to 1", "x", smoothing={"linear": {"trigram_lambda": 0.5}}),
    P("an unknown linear option", "x", smoothing={"linear": {"x": 0.5}}),
    dict(P("a generator of size 0", "x", direct_generator=[{"field": "body", "size": 0}]),
         fix=positioned(r"\[direct_generator\] failed to parse field \[size\]")),
    dict(P("a generator with max_edits 3", "x", direct_generator=[{"field": "body", "max_edits": 3}]),
         fix=positioned(r"\[direct_generator\] failed to parse field \[max_edits\]")),
    dict(P("an unknown generator option", "x", direct_generator=[{"field": "body", "bogus": 1}]),
         fix=positioned(r"\[direct_generator\] unknown field \[bogus\]")),
    P("a generator without a field", "x", direct_generator=[{"size": 1}]),
    dict(P("collate prune must be a boolean", "x", collate={"query": {"source": "{}"}, "prune": "yes"}),
         fix=positioned(r"suggester\[phrase\]\[collate\] prune must be either 'true' or 'false'")),
    dict(P("an unknown collate option", "x", collate={"x": 1}),
         fix=positioned(r"suggester\[phrase\]\[collate\] doesn't support field \[x\]")),
    P("force_unigrams must be a boolean", "x", force_unigrams="nope"),
]
