NAME = "suggest_completion"
DESCRIPTION = "the completion field and suggester: inputs with weights, prefixes analyzed by the field's analyzer, one option per document (its best input), skip_duplicates, size, fuzzy prefixes scored as Lucene scores them, regex, _source filtering, max_input_length, preserve_separators, category and geo contexts (boosts, prefixes, paths, precision, neighbours), two shards merged, and OpenSearch's errors; expectations recorded from OpenSearch 2.19.6"
CLEANUP = ["/compat-completion*"]
INDEX = "/compat-completion"
PLACES = "/compat-completion-places"

SONGS = [
    {"suggest": {"input": ["Nevermind", "Nirvana"], "weight": 34}, "title": "a"},
    {"suggest": [{"input": "Nevermore", "weight": 10}, {"input": "Nirvana Live", "weight": 3}], "title": "b"},
    {"suggest": "Nirvana", "title": "c"},
    {"suggest": ["the nirvana show", "Nice Thing"], "title": "d"},
    {"suggest": {"input": "Nivrana Fake", "weight": 50}, "title": "e"},
    {"suggest": {"input": "Nirvana", "weight": 7}, "title": "f"},
    {"suggest": {"input": ["Hello World Again", "Hell's Kitchen"], "weight": "12"}, "title": "g"},
    {"suggest": {"input": "Naïve Café", "weight": 5}, "title": "h"},
    {"suggest": [], "title": "i"},
    {"title": "j"},
]
BULK = []
for i, song in enumerate(SONGS):
    BULK += [{"index": {"_index": "compat-completion", "_id": str(i), "routing": f"r{i % 3}"}}, song]

PLACE_DOCS = [
    {"suggest": {"input": ["timmy's", "starbucks", "dunkin donuts"], "contexts": {"place_type": ["cafe", "food"], "location": {"lat": 43.662, "lon": -79.380}}}},
    {"suggest": {"input": ["monkey", "mcdonalds"], "weight": 5, "contexts": {"place_type": ["money", "food"], "location": "dpz8"}}},
    {"suggest": {"input": ["mo"], "weight": 4, "contexts": {"place_type": "mocha"}}},
    {"suggest": {"input": ["mocca", "mojito"], "weight": 2}, "cat": ["bar", "food"], "loc": {"lat": 43.7, "lon": -79.4}},
    {"suggest": {"input": ["marrakech"], "weight": 9, "contexts": {"location": [{"lat": 31.63, "lon": -8.0}]}}},
]
PLACE_BULK = []
for i, doc in enumerate(PLACE_DOCS):
    PLACE_BULK += [{"index": {"_index": "compat-completion-places", "_id": str(i)}}, doc]


def K(b):
    if "error" in b:
        return None
    return {"hits": {"total": b["hits"]["total"], "hits": [{"_id": h["_id"]} for h in b["hits"]["hits"]]}, "suggest": b["suggest"]}


def S(desc, completion, text=("prefix", "nir"), body=None, path=INDEX, **kw):
    suggestion = {text[0]: text[1], "completion": completion}
    d = {"desc": desc, "method": "POST", "path": path + "/_search", "body": dict(body or {}, suggest={"s": suggestion})}
    d.setdefault("keep", K)
    d.update(kw)
    if d["keep"] is None:
        d.pop("keep")
    return d


def P(desc, contexts, prefix="m", **kw):
    return S(desc, {"field": "suggest", "contexts": contexts}, ("prefix", prefix), {"_source": False}, PLACES, **kw)


STEPS = [
    {"desc": "two shards; a completion field with OpenSearch's defaults", "method": "PUT", "path": INDEX,
     "body": {"settings": {"number_of_shards": 2, "number_of_replicas": 0},
              "mappings": {"properties": {"suggest": {"type": "completion"}, "title": {"type": "keyword"},
                                          "short": {"type": "completion", "analyzer": "standard", "search_analyzer": "simple",
                                                    "max_input_length": 5, "preserve_separators": False}}}},
     "keep": lambda b: {"acknowledged": True}},
    {"desc": "the defaults show in the mapping", "method": "GET", "path": INDEX + "/_mapping"},
    {"method": "POST", "path": "/_bulk", "params": {"refresh": "true"}, "ndjson": BULK, "keep": lambda b: {"errors": False}},
    {"method": "PUT", "path": INDEX + "/_doc/20", "params": {"refresh": "true"},
     "body": {"short": ["Hello World Again", "Hell yeah"], "title": "short"}, "keep": lambda b: {"result": "created"}},
    S("a prefix: one option per document, its best input, best weight first", {"field": "suggest"}),
    S("the prefix is analyzed (case, trailing space)", {"field": "suggest"}, ("prefix", "NIRVANA ")),
    S("the text key works as the prefix", {"field": "suggest"}, ("text", "ne")),
    S("a whole phrase with its separator", {"field": "suggest"}, ("prefix", "nirvana l")),
    S("a prefix of a later word does not match", {"field": "suggest"}, ("prefix", "show")),
    S("non-ASCII inputs", {"field": "suggest"}, ("prefix", "naïve c")),
    S("skip_duplicates keeps one option per text", {"field": "suggest", "skip_duplicates": True}),
    S("size", {"field": "suggest", "size": 2}, ("prefix", "n")),
    S("_source filtering applies to the options", {"field": "suggest", "size": 3}, ("prefix", "n"), {"_source": ["title"]}),
    S("_source false", {"field": "suggest", "size": 3}, ("prefix", "h"), {"_source": False}),
    S("beside a query the hits are there", {"field": "suggest", "size": 1}, body={"query": {"term": {"title": "a"}}}),
    S("fuzzy: one edit, scores weight times the shared prefix", {"field": "suggest", "fuzzy": {"fuzziness": 1}}),
    S("fuzzy true on a longer prefix", {"field": "suggest", "fuzzy": True}, ("prefix", "nirv")),
    S("fuzzy below min_length matches exactly", {"field": "suggest", "fuzzy": {}}, ("prefix", "ni")),
    S("fuzzy with prefix_length 0 and transpositions", {"field": "suggest", "fuzzy": {"prefix_length": 0, "min_length": 2}}, ("prefix", "inrv")),
    S("fuzzy without transpositions", {"field": "suggest", "fuzzy": {"transpositions": False}}, ("prefix", "nrivana")),
    S("a regex matches a prefix of the analyzed form", {"field": "suggest"}, ("regex", "n[ie]r?")),
    S("an empty prefix has no options", {"field": "suggest"}, ("prefix", "")),
    S("max_input_length cuts inputs; preserve_separators false joins the words", {"field": "short"}, ("prefix", "hellw")),
    S("the search analyzer lowercases", {"field": "short"}, ("prefix", "HELL")),
    S("typed_keys", {"field": "suggest", "size": 1}, params={"typed_keys": "true"}),
    {"desc": "weights must be integers", "method": "PUT", "path": INDEX + "/_doc/x", "body": {"suggest": {"input": "x", "weight": 1.5}}},
    {"desc": "weights must be in range", "method": "PUT", "path": INDEX + "/_doc/x", "body": {"suggest": {"input": "x", "weight": -1}}},
    {"desc": "unknown keys in a value", "method": "PUT", "path": INDEX + "/_doc/x", "body": {"suggest": {"input": "x", "bogus": 1}}},
    {"desc": "a number is not a value", "method": "PUT", "path": INDEX + "/_doc/x", "body": {"suggest": 5},
     "fix": lambda step: step["expect"]["error"]["root_cause"][0].pop("line", None)},
    S("a field that is not a completion field", {"field": "title"}, keep=None),
    S("an unmapped field", {"field": "nope"}, keep=None),
    S("field is required", {}, keep=None),
    {"desc": "a suggestion without text", "method": "POST", "path": INDEX + "/_search",
     "body": {"suggest": {"s": {"completion": {"field": "suggest"}}}}},
    S("an unknown option", {"field": "suggest", "bogus": 1}, keep=None,
      fix=lambda step: [e.__setitem__("reason", {"$regex": r"^\[1:\d+\] \[completion\] unknown field \[bogus\]$"})
                        for e in (step["expect"]["error"]["root_cause"][0], step["expect"]["error"])]),
    S("contexts on a field without any", {"field": "suggest", "contexts": {"a": ["x"]}}, keep=None),
    {"desc": "contexts: category and geo, one read from fields of the document", "method": "PUT", "path": PLACES,
     "body": {"mappings": {"properties": {
         "suggest": {"type": "completion", "contexts": [
             {"name": "place_type", "type": "category", "path": "cat"},
             {"name": "location", "type": "geo", "precision": 4, "path": "loc"}]},
         "cat": {"type": "keyword"}, "loc": {"type": "geo_point"}}}},
     "keep": lambda b: {"acknowledged": True}},
    {"desc": "context types show upper-cased", "method": "GET", "path": PLACES + "/_mapping"},
    {"method": "POST", "path": "/_bulk", "params": {"refresh": "true"}, "ndjson": PLACE_BULK, "keep": lambda b: {"errors": False}},
    {"desc": "a suggestion without any context is refused", "method": "PUT", "path": PLACES + "/_doc/x",
     "body": {"suggest": {"input": ["mochi"], "weight": 3}}},
    P("categories: any of them", {"place_type": ["food"]}),
    P("a category prefix with a boost", {"place_type": [{"context": "mo", "prefix": True, "boost": 2}, "cafe"]}),
    P("the best boost of the matched categories, all of them shown", {"place_type": ["food", {"context": "money", "boost": 3}]}),
    P("categories read from the document's field", {"place_type": "bar"}),
    P("a point: its cell at the mapping's precision and the cells around", {"location": {"lat": 43.662, "lon": -79.380}}, prefix="s"),
    P("a coarser precision with a boost", {"location": [{"context": {"lat": 43.6, "lon": -79.3}, "precision": 2, "boost": 3}]}),
    P("neighbours at a coarser precision", {"location": [{"context": {"lat": 43.0, "lon": -79.0}, "precision": 4, "neighbours": [3]}]}),
    P("a geohash as the point", {"location": "dpz8"}),
    P("a distance as the precision", {"location": {"lat": 31.6, "lon": -8.0, "precision": "100km"}}),
    P("both kinds: a key matches either", {"place_type": "food", "location": "dpz8"}),
    {"desc": "fuzzy with contexts adds the boosts", "method": "POST", "path": PLACES + "/_search", "keep": K,
     "body": {"_source": False, "suggest": {"s": {"prefix": "mcdonlds", "completion": {
         "field": "suggest", "fuzzy": True, "contexts": {"place_type": [{"context": "food", "boost": 2}]}}}}}},
    P("contexts are mandatory in a query", {}, keep=None),
    P("an unknown context", {"bogus": ["x"]}, keep=None),
    P("a geo context is a point", {"location": [{"context": "dpz8"}]}, keep=None,
      fix=lambda step: [c.__setitem__("reason", {"$regex": r"^(\[1:\d+\] )?\[geo\] context doesn't support values of type: VALUE_STRING$"}) for c in step["expect"]["error"]["root_cause"] + [step["expect"]["error"]["caused_by"]]]),
    {"desc": "a context mapping needs a name", "method": "PUT", "path": "/compat-completion-bad",
     "body": {"mappings": {"properties": {"s": {"type": "completion", "contexts": [{"type": "category"}]}}}}},
    {"desc": "an unknown context type", "method": "PUT", "path": "/compat-completion-bad",
     "body": {"mappings": {"properties": {"s": {"type": "completion", "contexts": [{"name": "c", "type": "bogus"}]}}}}},
    {"desc": "an unknown analyzer", "method": "PUT", "path": "/compat-completion-bad",
     "body": {"mappings": {"properties": {"s": {"type": "completion", "analyzer": "nope"}}}}},
    {"desc": "max_input_length must be positive", "method": "PUT", "path": "/compat-completion-bad",
     "body": {"mappings": {"properties": {"s": {"type": "completion", "max_input_length": 0}}}}},
]
