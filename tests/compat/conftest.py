"""Shared fixtures for the compatibility suites (scenarios and opensearch-py).

TESSERA_URL selects the endpoint (default http://127.0.0.1:9200).
COMPAT_WAIT_SECONDS bounds how long the suite waits for the endpoint to answer (default 60).
"""

import os
import re
import time
import urllib.error
import urllib.request

import pytest

TESSERA_URL = os.environ.get("TESSERA_URL", "http://127.0.0.1:9200").rstrip("/")
WAIT_SECONDS = float(os.environ.get("COMPAT_WAIT_SECONDS", "60"))


def pytest_collect_file(file_path, parent):
    # run_scenarios.py does not follow the test_*.py naming (it is also a standalone script): collect it explicitly.
    if file_path.name == "run_scenarios.py":
        return pytest.Module.from_parent(parent, path=file_path)
    return None


def _answers(url):
    try:
        with urllib.request.urlopen(url + "/", timeout=5) as resp:
            return resp.status == 200
    except urllib.error.HTTPError:
        return False
    except (urllib.error.URLError, OSError):
        return False


@pytest.fixture(scope="session", autouse=True)
def endpoint_ready():
    """Wait until GET / answers 200 on TESSERA_URL; fail the session clearly otherwise."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        if _answers(TESSERA_URL):
            return TESSERA_URL
        if time.monotonic() > deadline:
            pytest.exit(f"endpoint {TESSERA_URL} did not answer GET / with 200 within {WAIT_SECONDS:.0f}s", returncode=2)
        time.sleep(1)


@pytest.fixture(scope="session")
def client(endpoint_ready):
    from opensearchpy import OpenSearch

    c = OpenSearch(hosts=[TESSERA_URL], timeout=60, max_retries=0, retry_on_timeout=False)
    yield c
    c.close()


@pytest.fixture
def index_name(request, client):
    """A unique index name for the test (compat-py-<test name>), deleted before and after the test."""
    base = re.sub(r"[^a-z0-9_-]+", "-", request.node.name.lower()).strip("-_")
    name = f"compat-py-{base}"[:200]
    client.indices.delete(index=name, ignore=[404])
    yield name
    client.indices.delete(index=f"{name}*", ignore=[404])
