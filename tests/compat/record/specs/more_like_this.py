NAME = "more_like_this"
DESCRIPTION = "the more_like_this query: liked texts (analyzed as the first field, each term searched where it is most frequent), liked indexed documents (read by the coordinator, left out of the hits unless include) and artificial documents (field by field), unlike texts and documents, term and document frequency bounds, word lengths, stop words, max_query_terms, minimum_should_match, boost_terms, keyword fields, default fields, a missing document and index, two shards, and OpenSearch's errors; expectations recorded from OpenSearch 2.19.6"
CLEANUP = ["/compat-mlt*"]
exec(open(os.path.join(os.path.dirname(SPEC), "helpers.py")).read())
INDEX = "/compat-mlt"

DOCS = [
    {"title": "the quick brown fox", "body": "foxes jumping over lazy dogs in the garden", "tag": "animal", "n": 1},
    {"title": "quick brown dogs", "body": "dogs are running quickly and jumping over the fence", "tag": "animal", "n": 2},
    {"title": "lazy cat sleeping", "body": "a cat sleeps all day long in the garden", "tag": "pet", "n": 3},
    {"title": "brown bear", "body": "bears are brown and big, they eat fish and honey", "tag": "animal", "n": 4},
    {"title": "quick quick quick", "body": "speed is everything for a quick fox and a quick dog", "tag": "speed", "n": 5},
    {"title": "garden flowers", "body": "flowers in the garden attract bees and the bees make honey", "tag": "plant", "n": 6},
    {"title": "the lazy dog", "body": "the dog sleeps in the garden next to the lazy cat", "tag": "pet", "n": 7},
    {"title": "brown honey bees", "body": "bees make brown honey in the summer garden", "tag": ["plant", "animal"], "n": 8},
    {"title": "fox and the hound", "body": "a fox and a dog become friends in the forest", "tag": "animal", "n": 9},
    {"title": "quick lunch", "body": "a quick lunch of bread and honey in the garden", "tag": "food", "n": 10},
]
BULK = []
for i, doc in enumerate(DOCS):
    BULK += [{"index": {"_index": "compat-mlt", "_id": str(i + 1)}}, doc]


def K(b):
    if "error" in b:
        return None
    return {"hits": {"total": b["hits"]["total"], "hits": [{"_id": h["_id"], "_score": {"$approx": h["_score"], "tol": 1e-5}} for h in b["hits"]["hits"]]}}


def S(desc, mlt, keep=K, index=INDEX, **kw):
    d = {"desc": desc, "method": "POST", "path": index + "/_search",
         "body": {"size": 20, "query": {"more_like_this": mlt}, "_source": False}, "keep": keep}
    d.update(kw)
    if d["keep"] is None:
        d.pop("keep")
    return d


LOW = {"min_term_freq": 1, "min_doc_freq": 1}
F = ["title", "body"]

STEPS = [
    {"desc": "two shards", "method": "PUT", "path": INDEX,
     "body": {"settings": {"number_of_shards": 2, "number_of_replicas": 0},
              "mappings": {"properties": {"title": {"type": "text", "fields": {"raw": {"type": "keyword"}}},
                                          "body": {"type": "text"}, "tag": {"type": "keyword"}, "n": {"type": "long"}}}},
     "keep": lambda b: {"acknowledged": True}},
    {"method": "POST", "path": "/_bulk", "params": {"refresh": "true"}, "ndjson": BULK, "keep": lambda b: {"errors": False}},
    S("a liked text over two fields", dict(fields=F, like="quick brown fox in the garden", **LOW)),
    S("the default frequency bounds leave little", dict(fields=F, like="quick brown fox quick brown fox in the garden")),
    S("several liked texts", dict(fields=F, like=["lazy cat", "honey bees"], **LOW)),
    S("a liked document is not a hit", dict(fields=F, like=[{"_id": "1"}], **LOW)),
    S("unless include", dict(fields=F, like=[{"_index": "compat-mlt", "_id": "1"}], include=True, **LOW)),
    S("a liked document over every field", dict(like=[{"_id": "8"}], **LOW)),
    S("a liked document's own fields", dict(fields=F, like=[{"_id": "7", "fields": ["body"]}], **LOW)),
    S("two liked documents and a text", dict(fields=F, like=[{"_id": "2"}, {"_id": "9"}, "honey"], **LOW)),
    S("an artificial document", dict(fields=["title", "tag"], like=[{"doc": {"title": "lazy dogs", "tag": "pet"}}], **LOW)),
    S("an artificial document with an analyzer per field", dict(fields=["title"], like=[{"doc": {"title": "Lazy-Dogs"}, "per_field_analyzer": {"title": "whitespace"}}], **LOW)),
    S("an unliked text", dict(fields=["title"], like="quick brown fox", unlike="fox", **LOW)),
    S("an unliked document", dict(fields=F, like=[{"_id": "1"}], unlike=[{"_id": "2"}], **LOW)),
    S("boost_terms", dict(fields=["title"], like="quick brown fox", boost_terms=2, **LOW)),
    S("max_query_terms", dict(fields=F, like="quick brown fox lazy cat garden honey bees", max_query_terms=3, **LOW)),
    S("minimum_should_match", dict(fields=F, like="quick brown fox lazy cat", minimum_should_match="60%", **LOW)),
    S("max_doc_freq", dict(fields=F, like="quick brown fox in the garden", max_doc_freq=2, **LOW)),
    S("min_term_freq counts repeats", dict(fields=F, like="quick quick brown garden garden fox", min_term_freq=2, min_doc_freq=1)),
    S("word lengths and stop words", dict(fields=F, like="the quick brown fox in the garden", min_word_length=4, max_word_length=5, stop_words=["quick"], min_term_freq=1, min_doc_freq=1)),
    S("an analyzer for the text", dict(fields=["title"], like="Quick-Brown", analyzer="whitespace", **LOW)),
    S("a keyword field takes the whole value", dict(fields=["tag", "title.raw"], like=[{"doc": {"tag": "animal", "title": "brown bear"}}], **LOW)),
    S("a missing document likes nothing", dict(fields=F, like=[{"_id": "99"}], **LOW)),
    S("a document of a missing index likes nothing", dict(fields=F, like=[{"_index": "compat-mlt-none", "_id": "1"}], **LOW)),
    S("a boost", dict(fields=["title"], like="quick brown", boost=3, **LOW)),
    {"desc": "inside a bool, counted", "method": "POST", "path": INDEX + "/_count",
     "body": {"query": {"bool": {"filter": [{"more_like_this": dict(fields=F, like=[{"_id": "3"}], **LOW)}]}}},
     "keep": lambda b: {"count": b["count"]}},
    {"desc": "a term query on a text field scores the term's frequency, as the terms picked are", "method": "POST",
     "path": INDEX + "/_search", "body": {"query": {"term": {"body": "the"}}, "_source": False}, "keep": K},
    S("a numeric field fails the shards", dict(fields=["title", "n"], like="quick"), keep=None),
    S("unless told to skip it", dict(fields=["title", "n"], like="quick brown", fail_on_unsupported_field=False, **LOW)),
    S("free text without fields fails the shards", dict(like="quick", **LOW), keep=None),
    S("no like", {"fields": ["title"]}, keep=None),
    S("empty fields", {"fields": [], "like": "x"}, keep=None),
    S("an unknown option", {"like": "x", "foo": 1}, keep=None),
    S("max_query_terms of zero", {"like": "x", "max_query_terms": 0}, keep=None),
    S("an item with an id and a doc", {"like": [{"_id": "1", "doc": {"title": "x"}}]}, keep=None),
    S("an item with neither", {"like": [{"_index": "compat-mlt"}]}, keep=None),
    S("an item with an unknown field", {"like": [{"_id": "1", "foo": 2}]}, keep=None),
]
