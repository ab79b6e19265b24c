exec(open(os.path.join(os.path.dirname(SPEC), "common.py")).read())
NAME = "search_templates"
DESCRIPTION = "Mustache search templates: _render/template (escaping, sections, inverted sections, dotted names, toJson, join, url, delimiters, standalone lines, errors), stored mustache scripts, _search/template (inline, stored, JSON-object sources, explain, typed_keys) and _msearch/template; expectations copied from OpenSearch 2.19.6 with lang-mustache"
CLEANUP = ["/compat-scripts*", "/_scripts/compat-tpl", "/_scripts/compat-painless"]
def R(desc, body, **kw):
    d = {"desc": desc, "method": "POST", "path": "/_render/template", "body": body}
    d.update(kw)
    return d
def T(desc, body, path="/compat-scripts/_search/template", **kw):
    d = {"desc": desc, "method": "POST", "path": path, "body": body}
    d.update(kw)
    return d
ERR = lambda b: {"error": {k: v for k, v in b["error"].items() if k in ("root_cause", "type", "reason", "caused_by", "script", "lang")}, "status": b["status"]}
STEPS = SETUP + [
    R("variables are JSON-escaped", {"source": "{\"query\":{\"match\":{\"k\":\"{{q}}\"}},\"size\":{{n}}}", "params": {"q": "a\"b\\c\n", "n": 5}}),
    R("toJson writes a value as JSON", {"source": "{\"query\":{\"terms\":{\"k\":{{#toJson}}ks{{/toJson}}}},\"m\":{{#toJson}}m{{/toJson}}}", "params": {"ks": ["a", "b"], "m": {"x": [1, {"y": 2.5}], "s": "q\"", "n": None}}}),
    R("a template written as JSON is its text", {"source": {"query": {"match": {"k": "{{q}}"}}}, "params": {"q": "v"}}),
    R("sections, inverted sections, join, url and raw values", {"source": "{\"s\":\"{{#join}}ks{{/join}}|{{#join delimiter='||'}}ks{{/join delimiter='||'}}|{{#url}}a b&c/é{{/url}}|{{#ks}}[{{.}}]{{/ks}}|{{^none}}no{{/none}}|{{m.x}}|{{l.1}}|{{{raw}}}\"}",
        "params": {"ks": ["a", "b"], "m": {"x": 1}, "l": ["p", "q"], "raw": "x'y"}}),
    R("values as Java prints them; falsy and truthy sections", {"source": "{\"s\":\"{{m}} {{l}} {{d}} {{big}} {{e}} {{b}} [{{n}}] {{#f}}F{{/f}}{{^f}}nf{{/f}} {{#z}}Z{{/z}} {{#es}}E{{/es}} {{#items}}<{{name}}:{{k}}>{{/items}}\"}",
        "params": {"m": {"x": 1, "y": [1, 2]}, "l": [1, 2.5], "d": 1.5, "big": 5000000000, "e": 1e-7, "b": True, "n": None, "f": False, "z": 0, "es": "",
                   "items": [{"name": "i1"}, {"name": "i2", "k": 2}], "k": "outer"}}),
    R("delimiters can change; standalone tag lines are dropped", {"source": "{{=<% %>=}}{\n  <%#a%>\n  \"a\": <%a%>\n  <%/a%>\n}", "params": {"a": 1}}),
    R("an unclosed section", {"source": "{{#a}}x"}, keep=ERR),
    R("mismatched tags", {"source": "{{#a}}x{{/b}}"}, keep=ERR),
    R("an unclosed variable", {"source": "x\n{{#a}}\n{{y"}, keep=ERR),
    R("partials are not found", {"source": "{{> p}}"}, keep=ERR),
    R("unknown fields", {"source": "x", "foo": 1}, keep=ERR),
    R("params must be an object", {"source": "x", "params": "bad"}, keep=ERR),
    R("a template is required", {"params": {}}, keep=ERR),
    R("a missing stored template", {"id": "compat-nope"}, keep=ERR),
    {"desc": "a stored template, its source given as JSON", "method": "PUT", "path": "/_scripts/compat-tpl",
     "body": {"script": {"lang": "mustache", "source": {"query": {"match": {"k": "{{q}}"}}, "size": "{{n}}"}}}},
    {"method": "GET", "path": "/_scripts/compat-tpl"},
    R("rendering a stored template", {"params": {"q": "a", "n": 2}}, path="/_render/template/compat-tpl"),
    T("a stored template searches", {"id": "compat-tpl", "params": {"q": "b", "n": 2}}),
    T("an inline template searches, with explain", {"source": "{\"query\":{\"match\":{\"k\":\"{{q}}\"}},\"size\":1}", "params": {"q": "a"}, "explain": True}),
    T("an inline template written as JSON, typed keys", {"source": {"size": 0, "aggs": {"m": {"max": {"field": "{{f}}"}}}}, "params": {"f": "n"}}, params={"typed_keys": "true"}),
    T("a template that renders to broken JSON", {"source": "{\"query\":{\"match\":{\"k\":\"{{q}}\"}}", "params": {"q": "a"}}, keep=lambda b: {"error": {"root_cause": [{"type": b["error"]["root_cause"][0]["type"]}]}, "status": b["status"]}),
    T("a template that renders to an unknown query", {"source": "{\"query\":{\"bogus\":{}}}"}, keep=ERR),
    T("an index pattern in the path", {"source": "{\"query\":{\"term\":{\"k\":\"{{k}}\"}}}", "params": {"k": "c"}}, path="/compat-scr*/_search/template"),
    {"desc": "_msearch/template: stored and inline templates, one missing index; a template that does not render or renders to a bad search fails only its own search", "method": "POST", "path": "/_msearch/template", "ndjson": [
        {"index": "compat-scripts"}, {"id": "compat-tpl", "params": {"q": "a", "n": 1}},
        {"index": "compat-scripts"}, {"source": "{\"query\":{\"match_all\":{}},\"size\":0}"},
        {"index": "compat-nope"}, {"source": "{}"},
        {"index": "compat-scripts"}, {"id": "compat-no-such-template"},
        {"index": "compat-scripts"}, {"source": "{\"query\":{\"bogus\":{}}}"},
        {"index": "compat-scripts"}, {"source": "{{#x}}"},
        {"index": "compat-scripts"}, {"source": "{\"size\":0}"}],
     "keep": lambda b: {"responses": [{k: (v if k != "error" else {"type": v["type"]}) for k, v in r.items() if k in ("hits", "status", "error")} for r in b["responses"]]}},
    {"desc": "_msearch/template: a line that is no template request fails the whole request", "method": "POST", "path": "/_msearch/template", "ndjson": [
        {"index": "compat-scripts"}, {"source": "{}"},
        {"index": "compat-scripts"}, {"sourcex": "{}"}],
     # OpenSearch adds a "did you mean" to the reason; Tessera names the unknown field only
     "keep": lambda b: {"error": {"type": b["error"]["type"]}, "status": b["status"]}},
    {"desc": "a painless script is not a template", "method": "PUT", "path": "/_scripts/compat-painless", "body": {"script": {"lang": "painless", "source": "1"}}},
    # OpenSearch compiles the painless script as a template script (a compile error here);
    # Tessera refuses a stored script that is not mustache before compiling it: both a 400
    R("a painless script is not a template", {"id": "compat-painless"}, keep=lambda b: {"status": b["status"]}),
]
