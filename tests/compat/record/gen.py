"""Builds a compat scenario from steps by calling the reference node and recording its answers.
Usage: REFERENCE_URL=http://127.0.0.1:9414 gen.py specs/NAME.py ../scenarios/NAME.json  (spec defines NAME, DESCRIPTION, CLEANUP, STEPS; each step a dict
with method, path, body?, params?, and 'keep': a function response-json -> expectation, or None to
record status only)."""
import json, os, sys, urllib.request, urllib.parse

REF = os.environ.get("REFERENCE_URL", "http://127.0.0.1:9414")

def call(step):
    path = step["path"]
    if step.get("params"):
        path += "?" + urllib.parse.urlencode({k: (str(v).lower() if isinstance(v, bool) else v) for k, v in step["params"].items()})
    data = None
    headers = {}
    if "body" in step:
        data = json.dumps(step["body"]).encode()
        headers["Content-Type"] = "application/json"
    if "ndjson" in step:
        data = ("\n".join(l if isinstance(l, str) else json.dumps(l) for l in step["ndjson"]) + "\n").encode()
        headers["Content-Type"] = "application/x-ndjson"
    req = urllib.request.Request(REF + path, data=data, method=step["method"], headers=headers)
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        body = e.read()
        try:
            return e.code, json.loads(body)
        except Exception:
            return e.code, None

def error_expect(body):
    err = body["error"]
    out = {"error": {"root_cause": [{"type": rc["type"], "reason": rc.get("reason")} for rc in err["root_cause"]],
                     "type": err["type"], "reason": err.get("reason")}, "status": body["status"]}
    if "caused_by" in err:
        cb = err["caused_by"]
        out["error"]["caused_by"] = {"type": cb["type"], "reason": cb.get("reason")}
    for k in ("script_stack", "script", "lang", "position"):
        if k in err:
            out["error"][k] = err[k]
    return out

def hits_expect(body, score=True, source=False):
    hits = []
    for h in body["hits"]["hits"]:
        e = {"_id": h["_id"]}
        if score:
            e["_score"] = {"$approx": h["_score"], "tol": 0.001} if isinstance(h["_score"], (int, float)) else h["_score"]
        for k in ("fields", "sort"):
            if k in h:
                e[k] = h[k]
        if source and "_source" in h:
            e["_source"] = h["_source"]
        hits.append(e)
    return {"hits": {"total": body["hits"]["total"], "hits": hits}}

def scrub(v, key=None):
    """A whole response as an expectation: timings dropped, generated uuids and timestamps as
    `$string`."""
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if k in ("took", "throttled_millis", "throttled_until_millis"):
                continue
            if (k == "index_uuid" and x != "_na_") or (k == "timestamp" and key == "_ingest"):
                out[k] = "$string"
                continue
            out[k] = scrub(x, k)
        return out
    if isinstance(v, list):
        return [scrub(x, key) for x in v]
    return v

def record_whole(s, status, body):
    """`RECORD = "whole"` specs: every response kept whole (scrubbed) unless the step gives its
    own `expect` or says `no_expect`; a step's `fix` edits the recorded step."""
    out = dict(s)
    out["status"] = status
    if "expect" not in s and not s.get("no_expect") and body is not None:
        out["expect"] = scrub(body)
    out.pop("no_expect", None)
    fix = out.pop("fix", None)
    if fix:
        fix(out)
    return out

def main():
    spec = {"os": os, "SPEC": sys.argv[1]}
    exec(open(sys.argv[1]).read(), spec)
    for c in spec["CLEANUP"]:
        call(c if isinstance(c, dict) else {"method": "DELETE", "path": c})
    steps = []
    for s in spec["STEPS"]:
        status, body = call(s)
        if spec.get("RECORD") == "whole":
            steps.append(record_whole(s, status, body))
            continue
        keep = s.pop("keep", "auto")
        fix = s.pop("fix", None)
        out = {k: v for k, v in s.items()}
        out["status"] = status
        if keep == "auto":
            if body is not None and isinstance(body, dict) and "error" in body and status >= 400:
                out["expect"] = error_expect(body)
            elif body is not None and isinstance(body, dict) and "hits" in body:
                out["expect"] = hits_expect(body)
                if "aggregations" in body:
                    out["expect"]["aggregations"] = body["aggregations"]
            elif body is not None:
                out["expect"] = body
        elif keep is not None:
            out["expect"] = keep(body)
        if fix:
            fix(out)
        print(status, json.dumps(out.get("expect"))[:300], file=sys.stderr)
        steps.append(out)
    for c in spec["CLEANUP"]:
        call(c if isinstance(c, dict) else {"method": "DELETE", "path": c})
    json.dump({"name": spec["NAME"], "description": spec["DESCRIPTION"], "cleanup": spec["CLEANUP"], "steps": steps},
              open(sys.argv[2], "w"), indent=1)

main()
