# Shared by specs that `exec` it: fixes for error expectations OpenSearch words with details a
# recording should not pin.


def positioned(pattern):
    """The error's reason as a regex, with or without OpenSearch's `[line:col] ` prefix."""
    def fix(step):
        err = step["expect"]["error"]
        for e in [err] + err["root_cause"]:
            e["reason"] = {"$regex": r"^(\[\d+:\d+\] )?" + pattern + "$"}
    return fix


def without(*keys):
    """The error and its root causes without `keys` (positions, uuids)."""
    def fix(step):
        err = step["expect"]["error"]
        for e in [err] + err["root_cause"]:
            for key in keys:
                e.pop(key, None)
    return fix
