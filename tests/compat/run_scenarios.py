"""Data-driven OpenSearch API compatibility scenarios.

Runs every ``scenarios/*.json`` file against ``TESSERA_URL`` (default
http://127.0.0.1:9200), one pytest test per file.  Only the standard library
is used for HTTP (urllib), so the scenarios depend on nothing but Python; the
module can also be run directly without pytest:

    TESSERA_URL=http://127.0.0.1:9200 python3 tests/compat/run_scenarios.py [name ...]

See README.md in this directory for the scenario format and the matching rules.
"""

import json
import os
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

try:  # pytest is optional: the module also runs standalone.
    import pytest
except ImportError:  # pragma: no cover
    pytest = None

BASE_URL = os.environ.get("TESSERA_URL", "http://127.0.0.1:9200").rstrip("/")
SCENARIO_DIR = Path(__file__).resolve().parent / "scenarios"
HTTP_TIMEOUT = float(os.environ.get("COMPAT_HTTP_TIMEOUT", "60"))
# how many nodes the cluster under test has: "$nodes" in an expectation stands for it
NODES = int(os.environ.get("TESSERA_NODES", "1"))


# --------------------------------------------------------------------------- HTTP


class Response:
    def __init__(self, status, headers, raw):
        self.status = status
        self.headers = headers
        self.raw = raw
        self.text = raw.decode("utf-8", errors="replace")
        self.json = None
        self.is_json = False
        if raw.strip():
            try:
                self.json = json.loads(self.text)
                self.is_json = True
            except ValueError:
                pass


def _encode_params(params):
    parts = []
    for key, value in (params or {}).items():
        if value is None:  # bare flag, e.g. {"v": null} -> "?v"
            parts.append(urllib.parse.quote(key, safe=""))
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, (list, tuple)):
            value = ",".join(str(v) for v in value)
        parts.append(urllib.parse.quote(key, safe="") + "=" + urllib.parse.quote(str(value), safe=",*:"))
    return "&".join(parts)


def build_request(step, base_url=BASE_URL):
    """Return (method, url, body_bytes, headers) for a step."""
    method = step["method"].upper()
    path = step["path"]
    if not path.startswith("/"):
        path = "/" + path
    url = base_url + path
    query = _encode_params(step.get("params"))
    if query:
        url += ("&" if "?" in url else "?") + query
    headers = {}
    data = None
    if "ndjson" in step:
        lines = [l if isinstance(l, str) else json.dumps(l) for l in step["ndjson"]]
        data = ("\n".join(lines) + "\n").encode("utf-8")
        headers["Content-Type"] = "application/x-ndjson"
    elif "raw_body" in step:
        data = step["raw_body"].encode("utf-8")
        headers["Content-Type"] = "application/json"
    elif "body" in step:
        data = json.dumps(step["body"]).encode("utf-8")
        headers["Content-Type"] = "application/json"
    headers.update(step.get("headers", {}))
    return method, url, data, headers


def http(method, url, data=None, headers=None, timeout=HTTP_TIMEOUT):
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return Response(resp.status, dict(resp.headers), resp.read())
    except urllib.error.HTTPError as err:
        try:
            raw = err.read()
        except Exception:  # pragma: no cover
            raw = b""
        return Response(err.code, dict(err.headers or {}), raw)


def send(step, base_url=BASE_URL):
    method, url, data, headers = build_request(step, base_url)
    return http(method, url, data, headers)


# --------------------------------------------------------------------------- matching

MARKERS = ("$any", "$number", "$string", "$absent", "$bool", "$array", "$object")


def _fmt(value, limit=300):
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else json.dumps(value)
    return text if len(text) <= limit else text[:limit] + "...(truncated)"


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def match(expected, actual, path="$", errors=None):
    """Partially match ``actual`` against ``expected``; return a list of mismatch strings."""
    if errors is None:
        errors = []
    if expected == "$nodes":
        # _cat's JSON gives numbers as strings
        if actual != NODES and actual != str(NODES):
            errors.append(f"{path}: expected {NODES} (the nodes of the cluster), got {_fmt(actual)}")
        return errors
    if isinstance(expected, str) and expected in MARKERS:
        ok = {
            "$any": True,
            "$number": _is_number(actual),
            "$string": isinstance(actual, str),
            "$bool": isinstance(actual, bool),
            "$array": isinstance(actual, list),
            "$object": isinstance(actual, dict),
            "$absent": False,  # only meaningful as an object value, handled below
        }[expected]
        if not ok:
            errors.append(f"{path}: expected {expected}, got {_fmt(actual)}")
        return errors
    if isinstance(expected, dict):
        if "$approx" in expected:
            tol = expected.get("tol", 1e-6)
            if not _is_number(actual) or abs(actual - expected["$approx"]) > tol:
                errors.append(f"{path}: expected {expected['$approx']} +/- {tol}, got {_fmt(actual)}")
            return errors
        if "$regex" in expected:
            if not isinstance(actual, str) or not re.search(expected["$regex"], actual, re.S):
                errors.append(f"{path}: expected a string matching /{expected['$regex']}/, got {_fmt(actual)}")
            return errors
        if "$all" in expected:
            # an array whose every element matches (of "$length" elements, "$nodes" allowed),
            # some of them matching each of "$contains"
            if not isinstance(actual, list) or not actual:
                errors.append(f"{path}: expected a non-empty array, got {_fmt(actual)}")
                return errors
            if "$length" in expected:
                length = NODES if expected["$length"] == "$nodes" else expected["$length"]
                if len(actual) != length:
                    errors.append(f"{path}: expected {length} elements, got {_fmt(actual)}")
            for i, got in enumerate(actual):
                match(expected["$all"], got, f"{path}[{i}]", errors)
            for want in expected.get("$contains", []):
                if not any(not match(want, got, path) for got in actual):
                    errors.append(f"{path}: no element matches expected {_fmt(want)} (actual array: {_fmt(actual)})")
            return errors
        if "$contains" in expected:
            if not isinstance(actual, list):
                errors.append(f"{path}: expected an array containing {_fmt(expected['$contains'])}, got {_fmt(actual)}")
                return errors
            for i, want in enumerate(expected["$contains"]):
                if not any(not match(want, got, path) for got in actual):
                    errors.append(f"{path}: no element matches expected {_fmt(want)} (actual array: {_fmt(actual)})")
            return errors
        if "$unordered" in expected:
            want = expected["$unordered"]
            if not isinstance(actual, list) or len(actual) != len(want):
                errors.append(f"{path}: expected an array of {len(want)} elements in any order matching "
                              f"{_fmt(want)}, got {_fmt(actual)}")
                return errors
            # small arrays: backtracking assignment of expected elements to distinct actual elements
            fits = [[j for j, got in enumerate(actual) if not match(w, got, path)] for w in want]

            def assign(i, used):
                if i == len(want):
                    return True
                return any(j not in used and assign(i + 1, used | {j}) for j in fits[i])

            if not assign(0, frozenset()):
                errors.append(f"{path}: array does not match {_fmt(want)} in any order (actual: {_fmt(actual)})")
            return errors
        if "$length" in expected:
            if not isinstance(actual, (list, dict, str)) or len(actual) != expected["$length"]:
                errors.append(f"{path}: expected length {expected['$length']}, got {_fmt(actual)}")
            return errors
        if "$values_contain" in expected:
            # an object of arrays (e.g. shards by node): together they hold a match for each element
            if not isinstance(actual, dict) or not all(isinstance(v, list) for v in actual.values()):
                errors.append(f"{path}: expected an object of arrays, got {_fmt(actual)}")
                return errors
            pooled = [item for value in actual.values() for item in value]
            for want in expected["$values_contain"]:
                if not any(not match(want, got, path) for got in pooled):
                    errors.append(f"{path}: no element of any value matches {_fmt(want)} (actual: {_fmt(actual)})")
            return errors
        if "$every_value" in expected or "$some_value" in expected:
            if not isinstance(actual, dict) or not actual:
                errors.append(f"{path}: expected a non-empty object, got {_fmt(actual)}")
                return errors
            if "$every_value" in expected:
                for key, value in actual.items():
                    match(expected["$every_value"], value, f"{path}.{key}", errors)
            if "$some_value" in expected:
                if not any(not match(expected["$some_value"], v, path) for v in actual.values()):
                    errors.append(f"{path}: no value matches {_fmt(expected['$some_value'])}")
            return errors
        if not isinstance(actual, dict):
            errors.append(f"{path}: expected an object, got {_fmt(actual)}")
            return errors
        if not expected and actual:  # an expected {} means "exactly empty"; use "$object" for any object
            errors.append(f"{path}: expected an empty object, got {_fmt(actual)}")
            return errors
        for key, want in expected.items():
            sub = f"{path}.{key}"
            if want == "$absent":
                if key in actual:
                    errors.append(f"{sub}: expected the key to be absent, got {_fmt(actual[key])}")
                continue
            if key not in actual:
                errors.append(f"{sub}: missing key (expected {_fmt(want)})")
                continue
            match(want, actual[key], sub, errors)
        return errors
    if isinstance(expected, list):
        if not isinstance(actual, list):
            errors.append(f"{path}: expected an array, got {_fmt(actual)}")
            return errors
        if len(expected) != len(actual):
            errors.append(f"{path}: expected {len(expected)} elements, got {len(actual)}: {_fmt(actual)}")
            return errors
        for i, (want, got) in enumerate(zip(expected, actual)):
            match(want, got, f"{path}[{i}]", errors)
        return errors
    # scalars: strict type for booleans, numeric comparison for numbers
    if isinstance(expected, bool) or isinstance(actual, bool):
        ok = isinstance(expected, bool) and isinstance(actual, bool) and expected == actual
    elif _is_number(expected):
        ok = _is_number(actual) and expected == actual
    else:
        ok = expected == actual
    if not ok:
        errors.append(f"{path}: expected {_fmt(expected)}, got {_fmt(actual)}")
    return errors


# --------------------------------------------------------------------------- variables

_VAR = re.compile(r"\$\{([A-Za-z0-9_]+)\}")


def substitute(value, variables):
    if isinstance(value, str):
        whole = re.fullmatch(r"\$\{([A-Za-z0-9_]+)\}", value)
        if whole and whole.group(1) in variables:
            return variables[whole.group(1)]  # keeps the saved value's JSON type
        return _VAR.sub(lambda m: str(variables.get(m.group(1), m.group(0))), value)
    if isinstance(value, list):
        return [substitute(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, variables) for k, v in value.items()}
    return value


def lookup(document, dotted):
    cur = document
    for part in dotted.split("."):
        if isinstance(cur, list):
            cur = cur[int(part)]
        else:
            cur = cur[part]
    return cur


# --------------------------------------------------------------------------- scenarios


def load_scenarios():
    return sorted(SCENARIO_DIR.glob("*.json"))


def describe(step, index):
    desc = f" ({step['desc']})" if step.get("desc") else ""
    params = _encode_params(step.get("params"))
    return f"step {index}{desc}: {step['method']} {step['path']}{'?' + params if params else ''}"


def cleanup(scenario, base_url=BASE_URL):
    """Best-effort cleanup, run before and after a scenario: a string is a path to DELETE, an object is a
    request step (e.g. resetting cluster settings). Failures are ignored."""
    for entry in scenario.get("cleanup", []):
        step = {"method": "DELETE", "path": entry} if isinstance(entry, str) else entry
        try:
            send(step, base_url)
        except Exception:
            pass


def check_step(step, resp):
    """Return a list of mismatch strings for one step's response."""
    problems = []
    if "status" in step and resp.status != step["status"]:
        problems.append(f"status: expected {step['status']}, got {resp.status}")
    if "expect" in step:
        if not resp.is_json:
            problems.append(f"body: expected JSON, got {_fmt(resp.text)}")
        else:
            problems.extend(match(step["expect"], resp.json))
    for needle in step.get("expect_text_contains", []):
        if needle not in resp.text:
            problems.append(f"text: expected to contain {_fmt(needle)}")
    for pattern in step.get("expect_text_regex", []):
        if not re.search(pattern, resp.text, re.M):
            problems.append(f"text: expected to match /{pattern}/ (multiline)")
    return problems


def run_scenario(path, base_url=BASE_URL, on_response=None):
    """Run one scenario file. Raises AssertionError with a readable diff on the first failing step."""
    scenario = json.loads(Path(path).read_text())
    variables = {}
    cleanup(scenario, base_url)
    try:
        for i, raw_step in enumerate(scenario["steps"]):
            if raw_step.get("single_node") and NODES > 1:
                continue
            step = substitute(raw_step, variables)
            for attempt in range(int(step.get("retries", 0)) + 1):
                try:
                    resp = send(step, base_url)
                except (urllib.error.URLError, OSError) as err:
                    raise AssertionError(f"[{scenario['name']}] {describe(raw_step, i)}\n"
                                         f"  - no HTTP response from {base_url}: {err}") from None
                problems = check_step(step, resp)
                if not problems:
                    break
                time.sleep(0.5)
            if on_response:
                on_response(i, step, resp)
            if problems:
                body = json.dumps(resp.json, indent=2, sort_keys=True) if resp.is_json else resp.text
                if len(body) > 4000:
                    body = body[:4000] + "\n...(truncated)"
                raise AssertionError(
                    f"[{scenario['name']}] {describe(raw_step, i)}\n"
                    + "".join(f"  - {p}\n" for p in problems)
                    + f"  actual status {resp.status}, body:\n"
                    + "\n".join("    " + line for line in body.splitlines())
                )
            for name, dotted in step.get("save", {}).items():
                variables[name] = lookup(resp.json, dotted)
    finally:
        cleanup(scenario, base_url)


if pytest is not None:

    @pytest.mark.parametrize("scenario_path", load_scenarios(), ids=lambda p: p.stem)
    def test_scenario(scenario_path):
        try:
            run_scenario(scenario_path)
        except AssertionError as err:
            pytest.fail(str(err), pytrace=False)


def main(argv):
    names = set(argv[1:])
    failed = 0
    paths = [p for p in load_scenarios() if not names or p.stem in names]
    for path in paths:
        try:
            run_scenario(path)
            print(f"PASS {path.stem}")
        except AssertionError as err:
            failed += 1
            print(f"FAIL {path.stem}\n{err}")
    print(f"{len(paths) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
