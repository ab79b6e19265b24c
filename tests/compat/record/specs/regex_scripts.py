exec(open(os.path.join(os.path.dirname(SPEC), "common.py")).read())
NAME = "regex_scripts"
DESCRIPTION = "Painless regexes (OpenSearch's default script.painless.regex.enabled: limited): /pattern/flags literals, =~ and ==~, Pattern.matcher and the Matcher's find/matches/group/namedGroup/start/end, in _execute, script queries, script fields, aggregation scripts and updates, and their errors; expectations copied from OpenSearch 2.19.6"
CLEANUP = ["/compat-scripts*"]
def X(desc, source, keep=None, **kw):
    d = {"desc": desc, "method": "POST", "path": "/_scripts/painless/_execute", "body": {"script": dict({"source": source}, **kw)}}
    if keep:
        d["keep"] = keep
    return d
def S(desc, body, **kw):
    d = {"desc": desc, "method": "POST", "path": "/compat-scripts/_search", "body": body}
    d.update(kw)
    return d
CAUSE = lambda b: {"error": {"type": b["error"]["type"], "caused_by": {"type": b["error"]["caused_by"]["type"]}, "position": b["error"].get("position")}, "status": b["status"]}
STEPS = SETUP + [
    X("find and match", "['abc' =~ /b/, 'abc' ==~ /b/, 'abc' ==~ /a.c/, 'ABC' ==~ /abc/i, 'a' + 'b' ==~ /ab/]"),
    X("a whole-text match that is not the leftmost-first one", "'ab' ==~ /a|ab/"),
    X("classes are ASCII; the U flag makes them Unicode", "['é' =~ /\\w/, 'é' =~ /\\w/U, '١' =~ /\\d/, 'x y' =~ /\\s/, 'a.b' ==~ /a\\.b/]"),
    X("a dot leaves out line terminators unless s", "[params.r ==~ /a.b/, params.r ==~ /a.b/s, params.n ==~ /a.b/, params.n ==~ /a.b/s]", params={"r": "a\rb", "n": "a\nb"}),
    X("a slash after an operand divides", "def x = [8]; return x[0] / 2 / 2"),
    X("a matcher finds one match after another with its groups", "def m = /(a)(b)?/.matcher('zab ac'); List r = []; while (m.find()) { r.add(m.group() + ':' + m.group(1) + ':' + m.group(2) + ':' + m.start() + ':' + m.end() + ':' + m.start(2) + ':' + m.groupCount()) } return r"),
    X("named groups", "def m = /(?<year>\\d{4})-(?<month>\\d\\d)/.matcher('on 2024-05-01'); return m.find() ? m.namedGroup('year') + '/' + m.namedGroup('month') : 'none'"),
    X("matches, find from an index, reset", "def m = /b+/.matcher('abbcbb'); List r = [m.matches(), m.find(3), m.start(), m.group()]; m.reset(); r.add(m.find()); r.add(m.start()); return r"),
    X("a pattern prints as its source", "def p = /a+b/; return p + '|' + p.pattern()"),
    X("an invalid pattern is a compile error", "'x' =~ /a(/", keep=CAUSE),
    X("the left side must be a string", "5 =~ /a/", keep=CAUSE),
    X("null text", "String s = null; return s =~ /a/", keep=CAUSE),
    X("group before a match", "/a/.matcher('b').group()", keep=CAUSE),
    X("a group that does not exist", "def m = /a/.matcher('a'); m.find(); return m.group(2)", keep=CAUSE),
    S("a script query with a regex", {"query": {"script": {"script": "doc['k'].size() > 0 && doc['k'].value =~ /^[ab]$/"}}, "sort": ["_doc"], "_source": False}),
    S("a script field with a matcher", {"query": {"exists": {"field": "n"}}, "sort": ["_doc"], "_source": False, "script_fields": {
        "first_tag": {"script": "def m = /([a-z])/.matcher(doc['k'].value); return m.find() ? m.group(1) : null"}}}),
    S("terms over a regex test", {"size": 0, "aggs": {"long_text": {"terms": {"script": "doc['k'].size() > 0 && doc['k'].value ==~ /[a-c]/"}}}}),
    {"desc": "an update script with a regex", "method": "POST", "path": "/compat-scripts/_update/1", "params": {"refresh": "true"},
     "body": {"script": {"source": "if (ctx._source.t =~ /world/) { ctx._source.tagged = true } else { ctx.op = 'noop' }"}}},
    {"desc": "the updated document", "method": "GET", "path": "/compat-scripts/_doc/1", "keep": lambda b: {"_source": b["_source"]}},
]
