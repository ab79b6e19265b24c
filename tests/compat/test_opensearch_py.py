"""Compatibility tests driven through the real opensearch-py client.

Every test uses its own index (fixture ``index_name``: compat-py-<test name>) and deletes it afterwards.
The expectations were verified against OpenSearch 2.19.
"""

import os

import pytest
from opensearchpy import helpers
from opensearchpy.exceptions import ConflictError, NotFoundError, RequestError
from opensearchpy.helpers import BulkIndexError

MAPPING = {
    "properties": {
        "title": {"type": "text"},
        "tag": {"type": "keyword"},
        "price": {"type": "long"},
        "rating": {"type": "double"},
        "ts": {"type": "date"},
        "in_stock": {"type": "boolean"},
    }
}
DOCS = [
    {"title": "The quick brown fox", "tag": ["animal", "fast"], "price": 10, "rating": 4.5,
     "ts": "2024-01-01T10:00:00Z", "in_stock": True},
    {"title": "The lazy brown dog", "tag": ["animal"], "price": 20, "rating": 3.0,
     "ts": "2024-01-02T12:30:00Z", "in_stock": False},
    {"title": "Quick quick fox jumps over the fence", "tag": ["fast"], "price": 30, "rating": 5.0,
     "ts": "2024-01-03T08:00:00Z", "in_stock": True},
    {"title": "A slow turtle", "tag": ["animal", "slow"], "price": 40, "rating": 2.5,
     "ts": "2024-01-03T23:59:59Z", "in_stock": True},
    {"title": "Brown bears eat honey", "tag": [], "price": 50, "rating": 4.0,
     "ts": "2024-02-10T00:00:00Z", "in_stock": False},
    {"title": "fox and dog are friends", "tag": ["animal", "friends"], "price": 60, "rating": 3.5,
     "ts": "2024-01-04T00:00:00Z", "in_stock": True},
]
ONE_SHARD = {"number_of_shards": 1, "number_of_replicas": 0}


def create_products(client, name):
    client.indices.create(index=name, body={"settings": ONE_SHARD, "mappings": MAPPING})
    ok, errors = helpers.bulk(
        client, ({"_index": name, "_id": str(i), "_source": d} for i, d in enumerate(DOCS, 1)), refresh=True)
    assert ok == len(DOCS) and errors == []


def hit_ids(resp):
    return [h["_id"] for h in resp["hits"]["hits"]]


# ----------------------------------------------------------------------------------------- info / cluster


def test_info(client):
    info = client.info()
    assert isinstance(info["name"], str)
    assert isinstance(info["cluster_name"], str)
    assert isinstance(info["cluster_uuid"], str)
    assert info["version"]["distribution"] in ("opensearch", "tessera")
    assert isinstance(info["version"]["number"], str)
    assert info["tagline"] == "The OpenSearch Project: https://opensearch.org/"
    assert client.ping() is True


def test_cluster_health(client):
    # note: opensearch-py 3.x uses a `timeout` param as its own HTTP timeout unless request_timeout is also given
    health = client.cluster.health(wait_for_status="yellow", timeout="30s", request_timeout=60)
    assert health["status"] in ("green", "yellow")
    assert health["timed_out"] is False
    nodes = int(os.environ.get("TESSERA_NODES", "1"))
    assert health["number_of_nodes"] == nodes
    assert health["number_of_data_nodes"] == nodes
    for key in ("cluster_name", "active_primary_shards", "active_shards", "unassigned_shards",
                "active_shards_percent_as_number"):
        assert key in health


def test_cluster_health_index_level(client, index_name):
    client.indices.create(index=index_name, body={"settings": {"number_of_shards": 1, "number_of_replicas": 1}})
    health = client.cluster.health(index=index_name, level="indices")
    assert health["status"] == "yellow"
    assert health["indices"][index_name]["unassigned_shards"] == 1
    # a replica can never be assigned on one node: waiting for green times out with HTTP 408
    health = client.cluster.health(index=index_name, wait_for_status="green", timeout="1s",
                                   request_timeout=30, ignore=408)
    assert health["timed_out"] is True
    assert health["status"] == "yellow"


def test_cluster_settings(client):
    try:
        resp = client.cluster.put_settings(body={
            "persistent": {"cluster.routing.allocation.enable": "all"},
            "transient": {"indices.recovery.max_bytes_per_sec": "50mb"}})
        assert resp["acknowledged"] is True
        assert resp["persistent"] == {"cluster": {"routing": {"allocation": {"enable": "all"}}}}
        assert resp["transient"] == {"indices": {"recovery": {"max_bytes_per_sec": "50mb"}}}
        got = client.cluster.get_settings(flat_settings=True)
        assert got["persistent"]["cluster.routing.allocation.enable"] == "all"
        assert got["transient"]["indices.recovery.max_bytes_per_sec"] == "50mb"
        with pytest.raises(RequestError) as err:
            client.cluster.put_settings(body={"persistent": {"bogus.setting": 1}})
        assert err.value.status_code == 400
        assert err.value.error == "illegal_argument_exception"
    finally:
        resp = client.cluster.put_settings(body={
            "persistent": {"cluster.routing.allocation.enable": None},
            "transient": {"indices.recovery.max_bytes_per_sec": None}})
    assert resp == {"acknowledged": True, "persistent": {}, "transient": {}}
    got = client.cluster.get_settings()
    assert got == {"persistent": {}, "transient": {}}


def test_cat(client, index_name):
    create_products(client, index_name)
    rows = client.cat.indices(index=index_name, format="json")
    assert len(rows) == 1
    row = rows[0]
    assert row["index"] == index_name
    assert row["health"] == "green"
    assert row["status"] == "open"
    assert row["pri"] == "1" and row["rep"] == "0"
    assert row["docs.count"] == "6"  # cat values are strings
    rows = client.cat.indices(index=index_name, format="json", h="index,docs.count")
    assert rows == [{"index": index_name, "docs.count": "6"}]
    count = client.cat.count(index=index_name, format="json")
    assert count[0]["count"] == "6"
    assert set(count[0]) == {"epoch", "timestamp", "count"}
    health = client.cat.health(format="json")
    assert health[0]["status"] in ("green", "yellow")
    assert health[0]["node.total"] == os.environ.get("TESSERA_NODES", "1")
    text = client.cat.indices(index=index_name, v=True)
    assert text.splitlines()[0].split()[:3] == ["health", "status", "index"]


# ----------------------------------------------------------------------------------------- index APIs


def test_index_lifecycle(client, index_name):
    resp = client.indices.create(index=index_name, body={
        "settings": {"number_of_shards": 2, "number_of_replicas": 0, "refresh_interval": "5s"},
        "mappings": MAPPING})
    assert resp == {"acknowledged": True, "shards_acknowledged": True, "index": index_name}
    assert client.indices.exists(index=index_name) is True
    assert client.indices.exists(index=index_name + "-missing") is False

    mapping = client.indices.get_mapping(index=index_name)
    assert mapping[index_name]["mappings"]["properties"]["tag"] == {"type": "keyword"}
    assert client.indices.put_mapping(index=index_name, body={"properties": {"extra": {"type": "keyword"}}}) == {
        "acknowledged": True}
    props = client.indices.get_mapping(index=index_name)[index_name]["mappings"]["properties"]
    assert props["extra"] == {"type": "keyword"}
    assert props["title"] == {"type": "text"}

    settings = client.indices.get_settings(index=index_name)[index_name]["settings"]["index"]
    assert settings["number_of_shards"] == "2"  # settings come back as strings
    assert settings["number_of_replicas"] == "0"
    assert settings["refresh_interval"] == "5s"
    assert settings["provided_name"] == index_name
    assert client.indices.put_settings(index=index_name, body={"index": {"refresh_interval": "30s"}}) == {
        "acknowledged": True}
    flat = client.indices.get_settings(index=index_name, flat_settings=True)[index_name]["settings"]
    assert flat["index.refresh_interval"] == "30s"

    client.index(index=index_name, id="1", body={"title": "x", "price": 1})
    assert client.indices.refresh(index=index_name) == {"_shards": {"total": 2, "successful": 2, "failed": 0}}
    assert client.indices.flush(index=index_name) == {"_shards": {"total": 2, "successful": 2, "failed": 0}}
    assert client.indices.forcemerge(index=index_name, max_num_segments=1) == {
        "_shards": {"total": 2, "successful": 2, "failed": 0}}

    full = client.indices.get(index=index_name)[index_name]
    assert set(full) >= {"aliases", "mappings", "settings"}
    assert client.indices.delete(index=index_name) == {"acknowledged": True}
    assert client.indices.exists(index=index_name) is False


def test_duplicate_index_is_request_error(client, index_name):
    client.indices.create(index=index_name, body={"settings": ONE_SHARD})
    with pytest.raises(RequestError) as err:
        client.indices.create(index=index_name)
    assert err.value.status_code == 400
    assert err.value.error == "resource_already_exists_exception"
    assert err.value.info["error"]["index"] == index_name


@pytest.mark.parametrize("bad_name,reason", [
    ("Compat-Py-Upper", "must be lowercase"),
    ("_compat-py-underscore", "must not start with '_', '-', or '+'"),
])
def test_invalid_index_name(client, bad_name, reason):
    with pytest.raises(RequestError) as err:
        client.indices.create(index=bad_name)
    assert err.value.status_code == 400
    assert err.value.error == "invalid_index_name_exception"
    assert err.value.info["error"]["reason"] == f"Invalid index name [{bad_name}], {reason}"


def test_mapping_errors(client, index_name):
    with pytest.raises(RequestError) as err:
        client.indices.create(index=index_name, body={"mappings": {"properties": {"x": {"type": "bogus"}}}})
    assert err.value.error == "mapper_parsing_exception"
    client.indices.create(index=index_name, body={"settings": ONE_SHARD, "mappings": MAPPING})
    with pytest.raises(RequestError) as err:
        client.indices.put_mapping(index=index_name, body={"properties": {"title": {"type": "long"}}})
    assert err.value.status_code == 400
    assert err.value.error == "illegal_argument_exception"
    assert err.value.info["error"]["reason"] == "mapper [title] cannot be changed from type [text] to [long]"


def test_settings_errors(client, index_name):
    client.indices.create(index=index_name, body={"settings": ONE_SHARD})
    with pytest.raises(RequestError) as err:
        client.indices.put_settings(index=index_name, body={"index": {"number_of_shards": 3}})
    assert err.value.error == "illegal_argument_exception"
    assert "Can't update non dynamic settings [[index.number_of_shards]]" in err.value.info["error"]["reason"]
    with pytest.raises(RequestError) as err:
        client.indices.put_settings(index=index_name, body={"index": {"bogus_setting": 1}})
    assert err.value.error == "illegal_argument_exception"
    assert err.value.info["error"]["reason"].startswith("unknown setting [index.bogus_setting]")


def test_missing_index_errors(client, index_name):
    missing = index_name + "-missing"
    for call in (lambda: client.indices.get(index=missing),
                 lambda: client.indices.delete(index=missing),
                 lambda: client.indices.get_mapping(index=missing),
                 lambda: client.search(index=missing, body={"query": {"match_all": {}}}),
                 lambda: client.count(index=missing),
                 lambda: client.get(index=missing, id="1")):
        with pytest.raises(NotFoundError) as err:
            call()
        assert err.value.status_code == 404
        assert err.value.error == "index_not_found_exception"
        assert err.value.info["error"]["reason"] == f"no such index [{missing}]"


# ----------------------------------------------------------------------------------------- documents


def test_document_crud(client, index_name):
    client.indices.create(index=index_name, body={"settings": ONE_SHARD, "mappings": MAPPING})
    resp = client.index(index=index_name, id="1", body={"title": "hello", "price": 1})
    assert resp["result"] == "created"
    assert resp["_id"] == "1" and resp["_index"] == index_name
    assert resp["_version"] == 1 and resp["_seq_no"] == 0 and resp["_primary_term"] == 1
    assert resp["_shards"] == {"total": 1, "successful": 1, "failed": 0}
    resp = client.index(index=index_name, id="1", body={"title": "hello again", "price": 2}, refresh=True)
    assert resp["result"] == "updated" and resp["_version"] == 2
    assert resp["forced_refresh"] is True

    doc = client.get(index=index_name, id="1")
    assert doc["found"] is True
    assert doc["_source"] == {"title": "hello again", "price": 2}
    assert doc["_version"] == 2 and doc["_seq_no"] == 1
    assert client.get_source(index=index_name, id="1") == {"title": "hello again", "price": 2}
    assert client.exists(index=index_name, id="1") is True
    assert client.exists(index=index_name, id="nope") is False
    partial = client.get(index=index_name, id="1", _source_includes="title")
    assert partial["_source"] == {"title": "hello again"}

    resp = client.update(index=index_name, id="1", body={"doc": {"price": 5}})
    assert resp["result"] == "updated" and resp["_version"] == 3
    assert client.get_source(index=index_name, id="1") == {"title": "hello again", "price": 5}
    resp = client.update(index=index_name, id="1", body={"doc": {"price": 5}})
    assert resp["result"] == "noop" and resp["_version"] == 3

    resp = client.delete(index=index_name, id="1")
    assert resp["result"] == "deleted" and resp["_version"] == 4
    assert client.exists(index=index_name, id="1") is False
    with pytest.raises(NotFoundError) as err:
        client.get(index=index_name, id="1")
    assert err.value.info == {"_index": index_name, "_id": "1", "found": False}
    with pytest.raises(NotFoundError) as err:
        client.delete(index=index_name, id="1")
    assert err.value.info["result"] == "not_found"


def test_index_generated_id(client, index_name):
    client.indices.create(index=index_name, body={"settings": ONE_SHARD})
    resp = client.index(index=index_name, body={"title": "auto"}, refresh="wait_for")
    assert resp["result"] == "created"
    assert isinstance(resp["_id"], str) and len(resp["_id"]) > 0
    assert client.get(index=index_name, id=resp["_id"])["_source"] == {"title": "auto"}


def test_create_conflict(client, index_name):
    client.indices.create(index=index_name, body={"settings": ONE_SHARD})
    assert client.create(index=index_name, id="1", body={"a": 1})["result"] == "created"
    with pytest.raises(ConflictError) as err:
        client.create(index=index_name, id="1", body={"a": 2})
    assert err.value.status_code == 409
    assert err.value.error == "version_conflict_engine_exception"
    assert err.value.info["error"]["reason"] == "[1]: version conflict, document already exists (current version [1])"
    with pytest.raises(ConflictError) as err:
        client.index(index=index_name, id="1", body={"a": 3}, op_type="create")
    assert err.value.error == "version_conflict_engine_exception"


def test_optimistic_concurrency(client, index_name):
    client.indices.create(index=index_name, body={"settings": ONE_SHARD})
    first = client.index(index=index_name, id="1", body={"a": 1})
    second = client.index(index=index_name, id="1", body={"a": 2}, if_seq_no=first["_seq_no"],
                          if_primary_term=first["_primary_term"])
    assert second["result"] == "updated"
    with pytest.raises(ConflictError) as err:
        client.index(index=index_name, id="1", body={"a": 3}, if_seq_no=first["_seq_no"],
                     if_primary_term=first["_primary_term"])
    assert err.value.error == "version_conflict_engine_exception"


def test_update_missing_and_upsert(client, index_name):
    client.indices.create(index=index_name, body={"settings": ONE_SHARD})
    with pytest.raises(NotFoundError) as err:
        client.update(index=index_name, id="nope", body={"doc": {"a": 1}})
    assert err.value.error == "document_missing_exception"
    assert err.value.info["error"]["reason"] == "[nope]: document missing"
    resp = client.update(index=index_name, id="up", body={"doc": {"a": 1}, "doc_as_upsert": True})
    assert resp["result"] == "created"
    assert client.get_source(index=index_name, id="up") == {"a": 1}


def test_mget(client, index_name):
    create_products(client, index_name)
    resp = client.mget(index=index_name, body={"ids": ["1", "nope", "2"]})
    assert [d["_id"] for d in resp["docs"]] == ["1", "nope", "2"]
    assert [d["found"] for d in resp["docs"]] == [True, False, True]
    assert resp["docs"][0]["_source"]["title"] == "The quick brown fox"
    assert "_source" not in resp["docs"][1]
    resp = client.mget(body={"docs": [{"_index": index_name, "_id": "3", "_source": ["price"]}]})
    assert resp["docs"][0]["_source"] == {"price": 30}


def test_bad_documents(client, index_name):
    client.indices.create(index=index_name, body={"settings": ONE_SHARD, "mappings": {
        "dynamic": "strict", "properties": {"price": {"type": "long"}, "small": {"type": "byte"}}}})
    with pytest.raises(RequestError) as err:
        client.index(index=index_name, id="1", body={"price": "abc"})
    assert err.value.error == "mapper_parsing_exception"
    assert err.value.info["error"]["caused_by"]["type"] == "illegal_argument_exception"
    with pytest.raises(RequestError) as err:
        client.index(index=index_name, id="1", body={"small": 300})
    assert err.value.error == "mapper_parsing_exception"
    with pytest.raises(RequestError) as err:
        client.index(index=index_name, id="1", body={"other": 1})
    assert err.value.error == "strict_dynamic_mapping_exception"


# ----------------------------------------------------------------------------------------- bulk helpers


def test_helpers_bulk(client, index_name):
    client.indices.create(index=index_name, body={"settings": ONE_SHARD, "mappings": MAPPING})
    actions = [{"_index": index_name, "_id": str(i), "_source": {"title": f"doc {i}", "price": i}} for i in range(50)]
    ok, errors = helpers.bulk(client, actions, chunk_size=20, refresh=True)
    assert ok == 50 and errors == []
    assert client.count(index=index_name)["count"] == 50

    bad = [{"_index": index_name, "_id": "good", "_source": {"price": 1}},
           {"_index": index_name, "_id": "bad", "_source": {"price": "not a number"}},
           {"_op_type": "delete", "_index": index_name, "_id": "0"}]
    with pytest.raises(BulkIndexError) as err:
        helpers.bulk(client, bad, refresh=True)
    assert len(err.value.errors) == 1
    failed = err.value.errors[0]["index"]
    assert failed["_id"] == "bad" and failed["status"] == 400
    assert failed["error"]["type"] == "mapper_parsing_exception"

    ok, errors = helpers.bulk(client, [{"_index": index_name, "_id": "bad2", "_source": {"price": "x"}}],
                              raise_on_error=False)
    assert ok == 0 and len(errors) == 1
    assert errors[0]["index"]["error"]["type"] == "mapper_parsing_exception"


def test_helpers_streaming_bulk_with_failing_item(client, index_name):
    client.indices.create(index=index_name, body={"settings": ONE_SHARD, "mappings": MAPPING})
    client.index(index=index_name, id="exists", body={"price": 1}, refresh=True)
    actions = [
        {"_index": index_name, "_id": "a", "_source": {"title": "a", "price": 1}},
        {"_index": index_name, "_id": "b", "_source": {"title": "b", "price": "oops"}},
        {"_op_type": "create", "_index": index_name, "_id": "exists", "_source": {"price": 2}},
        {"_op_type": "update", "_index": index_name, "_id": "a", "doc": {"price": 10}},
        {"_op_type": "update", "_index": index_name, "_id": "missing", "doc": {"price": 10}},
        {"_op_type": "delete", "_index": index_name, "_id": "never-existed"},
    ]
    results = list(helpers.streaming_bulk(client, actions, raise_on_error=False, refresh=True))
    assert [ok for ok, _ in results] == [True, False, False, True, False, False]
    items = [item for _, item in results]
    assert items[0]["index"]["status"] == 201 and items[0]["index"]["result"] == "created"
    assert items[1]["index"]["status"] == 400
    assert items[1]["index"]["error"]["type"] == "mapper_parsing_exception"
    assert items[2]["create"]["status"] == 409
    assert items[2]["create"]["error"]["type"] == "version_conflict_engine_exception"
    assert items[3]["update"]["status"] == 200 and items[3]["update"]["result"] == "updated"
    assert items[4]["update"]["status"] == 404
    assert items[4]["update"]["error"]["type"] == "document_missing_exception"
    # a delete of a missing doc is a 404 item with result not_found but no "error" (streaming_bulk reports it not ok)
    assert items[5]["delete"]["status"] == 404 and items[5]["delete"]["result"] == "not_found"
    assert "error" not in items[5]["delete"]
    assert client.get_source(index=index_name, id="a") == {"title": "a", "price": 10}


def test_raw_bulk_response_shape(client, index_name):
    client.indices.create(index=index_name, body={"settings": ONE_SHARD, "mappings": MAPPING})
    body = [{"index": {"_index": index_name, "_id": "1"}}, {"price": 1},
            {"delete": {"_index": index_name, "_id": "nope"}}]
    resp = client.bulk(body=body)
    assert isinstance(resp["took"], int)
    assert resp["errors"] is False  # not_found deletes do not count as errors
    assert resp["items"][0]["index"]["status"] == 201
    assert resp["items"][1]["delete"]["status"] == 404
    assert resp["items"][1]["delete"]["result"] == "not_found"


# ----------------------------------------------------------------------------------------- search


def test_search_response_shape_and_match(client, index_name):
    create_products(client, index_name)
    resp = client.search(index=index_name, body={"query": {"match": {"title": "fox"}}})
    assert resp["timed_out"] is False
    assert isinstance(resp["took"], int)
    assert resp["_shards"] == {"total": 1, "successful": 1, "skipped": 0, "failed": 0}
    assert resp["hits"]["total"] == {"value": 3, "relation": "eq"}
    assert hit_ids(resp) == ["1", "6", "3"]
    scores = [h["_score"] for h in resp["hits"]["hits"]]
    assert scores == pytest.approx([0.72615415, 0.66301036, 0.56478655], abs=1e-3)
    assert resp["hits"]["max_score"] == pytest.approx(0.72615415, abs=1e-3)
    hit = resp["hits"]["hits"][0]
    assert hit["_index"] == index_name
    assert hit["_source"] == DOCS[0]

    resp = client.search(index=index_name, body={"query": {"match": {"title": {"query": "quick brown",
                                                                                  "operator": "and"}}}})
    assert hit_ids(resp) == ["1"]
    resp = client.search(index=index_name, q="title:dog")
    assert sorted(hit_ids(resp)) == ["2", "6"]


def test_search_bool_and_range(client, index_name):
    create_products(client, index_name)
    resp = client.search(index=index_name, body={"query": {"bool": {
        "must": [{"match": {"title": "fox"}}],
        "filter": [{"term": {"in_stock": True}}, {"range": {"price": {"gte": 10, "lte": 30}}}],
        "must_not": [{"term": {"tag": "slow"}}]}}})
    assert hit_ids(resp) == ["1", "3"]
    resp = client.search(index=index_name, body={"query": {"bool": {"filter": [{"term": {"tag": "animal"}}]}}})
    assert resp["hits"]["total"]["value"] == 4
    assert all(h["_score"] == 0.0 for h in resp["hits"]["hits"])
    resp = client.search(index=index_name, body={
        "query": {"range": {"ts": {"gte": "2024-01-02", "lte": "2024-01-03"}}}, "sort": ["price"]})
    assert hit_ids(resp) == ["2", "3", "4"]  # date-only lte includes the whole day


def test_search_sort_paging_and_source_filtering(client, index_name):
    create_products(client, index_name)
    resp = client.search(index=index_name, body={"sort": [{"price": "desc"}], "from": 1, "size": 2,
                                                 "_source": ["title", "pr*"]})
    assert hit_ids(resp) == ["5", "4"]
    assert resp["hits"]["max_score"] is None
    assert [h["sort"] for h in resp["hits"]["hits"]] == [[50], [40]]
    assert [h["_score"] for h in resp["hits"]["hits"]] == [None, None]
    assert resp["hits"]["hits"][0]["_source"] == {"title": "Brown bears eat honey", "price": 50}
    resp = client.search(index=index_name, body={"size": 1, "_source": False})
    assert "_source" not in resp["hits"]["hits"][0]
    resp = client.search(index=index_name, body={"size": 1, "_source": {"excludes": ["t*"]}})
    assert set(resp["hits"]["hits"][0]["_source"]) == {"price", "rating", "in_stock"}
    resp = client.search(index=index_name, size=2, from_=4, sort="price:asc")
    assert hit_ids(resp) == ["5", "6"]


def test_search_after(client, index_name):
    create_products(client, index_name)
    seen = []
    body = {"size": 2, "sort": [{"rating": "desc"}, {"price": "asc"}]}
    while True:
        resp = client.search(index=index_name, body=body)
        hits = resp["hits"]["hits"]
        if not hits:
            break
        seen += [h["_id"] for h in hits]
        body["search_after"] = hits[-1]["sort"]
    assert seen == ["3", "1", "5", "6", "2", "4"]


def test_helpers_scan_reads_a_snapshot(client, index_name):
    client.indices.create(index=index_name, body={"settings": {"number_of_shards": 3}})
    helpers.bulk(client, ({"_index": index_name, "_id": str(i), "n": i} for i in range(250)), refresh=True)
    scanned = helpers.scan(client, index=index_name, size=40, scroll="1m")
    ids = []
    for i, hit in enumerate(scanned):
        if i == 10:
            # written after the scroll opened: not part of it
            client.index(index=index_name, id="late", body={"n": -1}, refresh=True)
        ids.append(hit["_id"])
    assert sorted(ids, key=int) == [str(i) for i in range(250)]
    ordered = [h["_source"]["n"] for h in helpers.scan(
        client, index=index_name, query={"sort": [{"n": "desc"}]}, preserve_order=True, size=30)]
    assert ordered == list(range(249, -2, -1))


def test_helpers_reindex(client, index_name):
    target = index_name + "-copy"
    client.indices.delete(index=target, ignore_unavailable=True)
    try:
        helpers.bulk(client, ({"_index": index_name, "_id": str(i), "n": i} for i in range(120)), refresh=True)
        ok, errors = helpers.reindex(client, index_name, target, query={"query": {"range": {"n": {"lt": 100}}}},
                                     chunk_size=30, scroll="1m")
        assert (ok, errors) == (100, 0)
        client.indices.refresh(index=target)
        assert client.count(index=target)["count"] == 100
    finally:
        client.indices.delete(index=target, ignore_unavailable=True)


def test_point_in_time_paging(client, index_name):
    create_products(client, index_name)
    pit = client.create_pit(index=index_name, params={"keep_alive": "1m"})["pit_id"]
    try:
        client.index(index=index_name, id="7", body={"price": 5}, refresh=True)
        seen = []
        body = {"size": 4, "pit": {"id": pit, "keep_alive": "1m"}, "sort": [{"price": "asc"}]}
        while True:
            resp = client.search(body=body)
            hits = resp["hits"]["hits"]
            if not hits:
                break
            seen += [h["_id"] for h in hits]
            body["search_after"] = hits[-1]["sort"]
        assert seen == ["1", "2", "3", "4", "5", "6"]
        assert pit in [p["pit_id"] for p in client.get_all_pits()["pits"]]
    finally:
        client.delete_pit(body={"pit_id": [pit]})
    with pytest.raises(NotFoundError):
        client.search(body={"pit": {"id": pit}})


def test_clear_scroll(client, index_name):
    create_products(client, index_name)
    first = client.search(index=index_name, scroll="1m", size=2)
    assert client.clear_scroll(scroll_id=first["_scroll_id"])["num_freed"] == 1
    with pytest.raises(NotFoundError):
        client.scroll(scroll_id=first["_scroll_id"], scroll="1m")


def test_track_total_hits(client, index_name):
    create_products(client, index_name)
    resp = client.search(index=index_name, body={"size": 0, "track_total_hits": 2})
    assert resp["hits"]["total"] == {"value": 2, "relation": "gte"}
    resp = client.search(index=index_name, body={"size": 1, "track_total_hits": False})
    assert "total" not in resp["hits"]
    resp = client.search(index=index_name, body={"size": 0}, track_total_hits=True)
    assert resp["hits"]["total"] == {"value": 6, "relation": "eq"}


def test_search_errors(client, index_name):
    create_products(client, index_name)
    with pytest.raises(RequestError) as err:
        client.search(index=index_name, body={"query": {"bogus": {}}})
    assert err.value.status_code == 400
    assert err.value.error == "parsing_exception"
    assert err.value.info["error"]["reason"] == "unknown query [bogus]"
    with pytest.raises(RequestError) as err:
        client.search(index=index_name, body={"query": {"term": {"price": "abc"}}})
    assert err.value.error == "search_phase_execution_exception"
    assert err.value.info["error"]["root_cause"][0]["type"] == "query_shard_exception"
    with pytest.raises(RequestError) as err:
        client.search(index=index_name, body={"sort": [{"title": "asc"}]})
    assert err.value.error == "search_phase_execution_exception"
    assert err.value.info["error"]["root_cause"][0]["type"] == "illegal_argument_exception"
    with pytest.raises(RequestError) as err:
        client.search(index=index_name, body={"from": 10000, "size": 1})
    assert err.value.info["error"]["root_cause"][0]["reason"].startswith("Result window is too large")


def test_msearch(client, index_name):
    create_products(client, index_name)
    resp = client.msearch(body=[
        {"index": index_name},
        {"query": {"term": {"tag": "slow"}}},
        {"index": index_name + "-missing"},
        {"query": {"match_all": {}}},
        {},
        {"size": 0, "aggs": {"tags": {"terms": {"field": "tag"}}}},
    ], index=index_name, typed_keys=True, max_concurrent_searches=2)
    first, missing, aggs = resp["responses"]
    assert first["status"] == 200
    assert hit_ids(first) == ["4"]
    assert missing["status"] == 404
    assert missing["error"]["type"] == "index_not_found_exception"
    assert missing["error"]["reason"] == f"no such index [{index_name}-missing]"
    assert aggs["status"] == 200 and aggs["hits"]["total"] == {"value": 6, "relation": "eq"}
    buckets = aggs["aggregations"]["sterms#tags"]["buckets"]
    assert buckets[0] == {"key": "animal", "doc_count": 4}
    # a malformed request fails as a whole
    with pytest.raises(RequestError) as err:
        client.msearch(body=[{"bogus": 1}, {}])
    assert err.value.status_code == 400
    assert err.value.info["error"]["reason"] == "key [bogus] is not supported in the metadata section"


def test_exists_apis_answer_false_for_what_is_missing(client, index_name):
    create_products(client, index_name)
    missing = index_name + "-missing"
    assert client.exists(index=index_name, id="nope") is False
    assert client.exists(index=missing, id="1") is False
    assert client.exists_source(index=index_name, id="nope") is False
    assert client.indices.exists(index=missing) is False
    assert client.indices.exists_alias(name="compat-py-no-such-alias") is False
    assert client.indices.exists_alias(index=index_name, name="compat-py-no-such-alias") is False
    assert client.indices.exists_template(name="compat-py-no-such-template") is False
    assert client.indices.exists_index_template(name="compat-py-no-such-template") is False
    assert client.cluster.exists_component_template(name="compat-py-no-such-template") is False


def test_count(client, index_name):
    create_products(client, index_name)
    resp = client.count(index=index_name)
    assert resp == {"count": 6, "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0}}
    assert client.count(index=index_name, body={"query": {"term": {"tag": "animal"}}})["count"] == 4
    assert client.count(index=index_name, q="tag:fast")["count"] == 2


def test_aliases(client, index_name):
    """The alias calls of opensearch-py: put, exists, get, update_aliases, delete; a search and a
    scan through a filtered alias; a write through an alias lands in its write index."""
    alias, filtered = index_name + "-alias", index_name + "-even"
    client.indices.create(index=index_name, body={"settings": {"number_of_shards": 2},
                                                  "aliases": {filtered: {"filter": {"term": {"even": True}}}}})
    helpers.bulk(client, ({"_index": index_name, "_id": str(i), "n": i, "even": i % 2 == 0} for i in range(60)),
                 refresh=True)
    assert client.indices.exists_alias(name=alias) is False
    assert client.indices.put_alias(index=index_name, name=alias) == {"acknowledged": True}
    assert client.indices.exists_alias(name=alias) is True
    assert client.indices.exists_alias(index=index_name, name=alias) is True
    assert client.indices.get_alias(name=alias) == {index_name: {"aliases": {alias: {}}}}
    assert client.count(index=alias)["count"] == 60
    assert client.count(index=filtered)["count"] == 30
    scanned = sorted(int(h["_id"]) for h in helpers.scan(client, index=filtered, size=7, scroll="1m"))
    assert scanned == list(range(0, 60, 2))
    written = client.index(index=alias, id="w", body={"n": -1, "even": True}, refresh=True)
    assert written["_index"] == index_name
    assert client.get(index=filtered, id="w")["_source"]["n"] == -1
    client.indices.update_aliases(body={"actions": [{"remove": {"index": index_name, "alias": alias}}]})
    assert client.indices.exists_alias(name=alias) is False
    with pytest.raises(NotFoundError):
        client.indices.delete_alias(index=index_name, name=alias)
    client.indices.delete_alias(index=index_name, name=filtered)
    assert client.indices.get_alias(index=index_name) == {index_name: {"aliases": {}}}


def test_templates(client, index_name):
    """Index, component and legacy templates through opensearch-py, applied to a new index."""
    component, template, legacy = index_name + "-ct", index_name + "-t", index_name + "-lg"
    try:
        client.cluster.put_component_template(name=component, body={
            "template": {"mappings": {"properties": {"tag": {"type": "keyword"}}}}})
        assert client.cluster.exists_component_template(name=component) is True
        client.indices.put_index_template(name=template, body={
            "index_patterns": [index_name + "-*"], "priority": 50, "composed_of": [component],
            "template": {"settings": {"number_of_shards": 2}, "aliases": {index_name + "-all": {}}}})
        assert client.indices.exists_index_template(name=template) is True
        got = client.indices.get_index_template(name=template)["index_templates"][0]
        assert got["index_template"]["composed_of"] == [component]
        client.indices.put_template(name=legacy, body={"index_patterns": [index_name + "-*"], "order": 3,
                                                         "settings": {"number_of_shards": 3}})
        assert legacy in client.indices.get_template(name=legacy)
        # the composable template wins over the legacy one
        client.index(index=index_name + "-a", id="1", body={"tag": "x"}, refresh=True)
        created = client.indices.get(index=index_name + "-a")[index_name + "-a"]
        assert created["settings"]["index"]["number_of_shards"] == "2"
        assert created["mappings"]["properties"]["tag"] == {"type": "keyword"}
        assert client.count(index=index_name + "-all")["count"] == 1
        simulated = client.indices.simulate_index_template(name=index_name + "-b")
        assert simulated["template"]["settings"]["index"]["number_of_shards"] == "2"
    finally:
        client.indices.delete(index=index_name + "-*", ignore=[404])
        client.indices.delete_index_template(name=template, ignore=[404])
        client.cluster.delete_component_template(name=component, ignore=[404])
        client.indices.delete_template(name=legacy, ignore=[404])
    assert client.indices.exists_index_template(name=template) is False
# ----------------------------------------------------------------------------------------- rewriting data


def test_reindex_delete_by_query_update_by_query(client, index_name):
    create_products(client, index_name)
    dest = index_name + "-copy"
    try:
        resp = client.reindex(body={"source": {"index": index_name, "query": {"term": {"tag": "animal"}}},
                                    "dest": {"index": dest}}, refresh=True)
        assert (resp["total"], resp["created"], resp["updated"], resp["failures"]) == (4, 4, 0, [])
        assert client.count(index=dest)["count"] == 4
        # op_type create: every document is there already
        with pytest.raises(ConflictError) as err:
            client.reindex(body={"source": {"index": index_name}, "dest": {"index": dest, "op_type": "create"}})
        assert err.value.info["version_conflicts"] == 4
        assert err.value.info["created"] == 2
        resp = client.reindex(body={"conflicts": "proceed", "source": {"index": index_name},
                                    "dest": {"index": dest, "op_type": "create"}})
        assert (resp["version_conflicts"], resp["created"]) == (6, 0)

        resp = client.update_by_query(index=index_name, body={"query": {"term": {"tag": "fast"}}}, refresh=True)
        assert (resp["total"], resp["updated"], resp["version_conflicts"]) == (2, 2, 0)
        assert "created" not in resp
        assert client.get(index=index_name, id="1")["_version"] == 2

        client.indices.refresh(index=dest)
        resp = client.delete_by_query(index=dest, body={"query": {"range": {"price": {"gte": 40}}}}, refresh=True)
        assert (resp["total"], resp["deleted"], resp["batches"]) == (3, 3, 1)
        assert "updated" not in resp
        assert client.count(index=dest)["count"] == 3
        with pytest.raises(RequestError) as err:
            client.delete_by_query(index=dest, body={})
        assert err.value.info["error"]["reason"] == "Validation Failed: 1: query is missing;"
    finally:
        client.indices.delete(index=dest, ignore_unavailable=True)


def test_tasks_get_of_a_request_that_did_not_wait(client, index_name):
    create_products(client, index_name)
    started = client.delete_by_query(index=index_name, body={"query": {"term": {"tag": "slow"}}},
                                     wait_for_completion=False, refresh=True)
    task = client.tasks.get(task_id=started["task"], wait_for_completion=True, timeout="30s", request_timeout=60)
    assert task["completed"] is True
    assert task["task"]["action"] == "indices:data/write/delete/byquery"
    assert task["response"]["deleted"] == 1
    assert client.count(index=index_name)["count"] == 5
    listed = client.tasks.list(actions="*byquery", group_by="none")
    assert listed == {"tasks": []}
    with pytest.raises(NotFoundError) as err:
        client.tasks.get(task_id="nonode:1")
    assert err.value.error == "resource_not_found_exception"
    with pytest.raises(RequestError):
        client.tasks.get(task_id="malformed")
# ----------------------------------------------------------------------------------------- ingest


def test_ingest_pipelines(client, index_name):
    pipeline = index_name + "-pipeline"
    client.ingest.delete_pipeline(id=pipeline, ignore=[404])
    try:
        body = {"description": "tidy", "processors": [
            {"set": {"field": "greeting", "value": "hi {{name}}"}},
            {"grok": {"field": "line", "patterns": ["%{IP:client} %{WORD:verb} %{NUMBER:bytes:int}"]}},
            {"remove": {"field": "line"}}]}
        assert client.ingest.put_pipeline(id=pipeline, body=body) == {"acknowledged": True}
        assert client.ingest.get_pipeline(id=pipeline) == {pipeline: body}
        client.indices.create(index=index_name, body={"settings": ONE_SHARD})
        resp = client.index(index=index_name, id="1", body={"name": "ann", "line": "10.0.0.1 GET 512"},
                            pipeline=pipeline, refresh=True)
        assert resp["result"] == "created"
        source = client.get(index=index_name, id="1")["_source"]
        assert source == {"name": "ann", "greeting": "hi ann", "client": "10.0.0.1", "verb": "GET", "bytes": 512}
        ok, errors = helpers.bulk(
            client, [{"_index": index_name, "_id": "2", "_source": {"name": "bob", "line": "::1 PUT 7"}}],
            pipeline=pipeline, refresh=True)
        assert ok == 1 and errors == []
        assert client.get(index=index_name, id="2")["_source"]["client"] == "::1"
        simulated = client.ingest.simulate(id=pipeline, body={"docs": [{"_source": {"name": "c", "line": "1.2.3.4 X 1"}}]})
        assert simulated["docs"][0]["doc"]["_source"]["greeting"] == "hi c"
        with pytest.raises(RequestError) as err:
            client.index(index=index_name, id="3", body={"a": 1}, pipeline=pipeline + "-nope")
        assert err.value.info["error"]["reason"] == f"pipeline with id [{pipeline}-nope] does not exist"
        with pytest.raises(RequestError) as err:
            client.ingest.put_pipeline(id=pipeline + "-bad", body={"processors": [{"nope": {}}]})
        assert err.value.info["error"]["type"] == "parse_exception"
    finally:
        client.ingest.delete_pipeline(id=pipeline, ignore=[404])
    with pytest.raises(NotFoundError):
        client.ingest.get_pipeline(id=pipeline)


# ----------------------------------------------------------------------------------------- search templates


def test_search_templates(client, index_name):
    """The client's template helpers: a stored mustache template, rendered, searched, and
    searched many at a time."""
    create_products(client, index_name)
    template_id = index_name + "-tpl"
    try:
        template = {"query": {"match": {"title": "{{q}}"}}, "size": "{{n}}", "sort": [{"price": "asc"}]}
        assert client.put_script(id=template_id, body={"script": {"lang": "mustache", "source": template}}) == {
            "acknowledged": True}
        rendered = client.render_search_template(id=template_id, body={"params": {"q": "fox", "n": 2}})
        assert rendered["template_output"] == {"query": {"match": {"title": "fox"}}, "size": "2",
                                               "sort": [{"price": "asc"}]}
        resp = client.search_template(index=index_name, body={"id": template_id, "params": {"q": "fox", "n": 2}})
        assert hit_ids(resp) == ["1", "3"] and resp["hits"]["total"]["value"] == 3
        inline = {"source": '{"query": {"terms": {"tag": {{#toJson}}tags{{/toJson}}}}, "size": 0}',
                  "params": {"tags": ["slow", "friends"]}}
        assert client.search_template(index=index_name, body=inline)["hits"]["total"]["value"] == 2
        many = client.msearch_template(index=index_name, body=[{}, {"id": template_id, "params": {"q": "dog", "n": 1}},
                                                                {}, inline])
        assert [r["hits"]["total"]["value"] for r in many["responses"]] == [2, 2]
        with pytest.raises(RequestError) as err:
            client.render_search_template(body={"source": "{{#a}}x"})
        assert err.value.info["error"]["caused_by"]["type"] == "mustache_exception"
    finally:
        client.delete_script(id=template_id, ignore=[404])
