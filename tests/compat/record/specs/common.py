INDEX = "/compat-scripts"
SETUP = [
    {"desc": "an index with numbers, a date, keywords, a boolean and a geo point", "method": "PUT", "path": INDEX,
     "body": {"settings": {"number_of_shards": 1, "number_of_replicas": 0},
              "mappings": {"properties": {"n": {"type": "long"}, "f": {"type": "double"}, "price": {"type": "scaled_float", "scaling_factor": 100},
                                           "k": {"type": "keyword"}, "tags": {"type": "keyword"}, "b": {"type": "boolean"},
                                           "d": {"type": "date"}, "loc": {"type": "geo_point"}, "t": {"type": "text"}}}}},
    {"method": "POST", "path": "/_bulk", "params": {"refresh": "true"}, "ndjson": [
        {"index": {"_index": "compat-scripts", "_id": "1"}}, {"n": 3, "f": 1.5, "price": 10.25, "k": "a", "tags": ["x", "y"], "b": True, "d": "2021-03-04T05:06:07Z", "loc": {"lat": 40.0, "lon": -70.0}, "t": "hello world"},
        {"index": {"_index": "compat-scripts", "_id": "2"}}, {"n": 10, "f": 0.25, "price": 3.5, "k": "b", "tags": ["y"], "b": False, "d": "2022-12-31T23:59:59Z", "loc": {"lat": 41.0, "lon": -71.0}, "t": "hello"},
        {"index": {"_index": "compat-scripts", "_id": "3"}}, {"n": 7, "f": 2.0, "price": 1, "k": "c", "tags": [], "b": True, "d": "2020-01-01T00:00:00Z", "loc": {"lat": 0, "lon": 0}, "t": "world"},
        {"index": {"_index": "compat-scripts", "_id": "4"}}, {"k": "d", "t": "nothing else"},
    ], "keep": lambda b: {"errors": False}},
]
