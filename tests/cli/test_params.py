"""test_params.py -- the parameter table (src/io/params.c, listed by
`sdh --list-params`) and api/openapi.yaml agree: every row is a property of
JobParams and of the rendered Params, with a JSON type that matches the
row's type, and the schemas name no parameter the table lacks.

usage: test_params.py SDH_EXE OPENAPI_YAML
"""
import subprocess
import sys

import yaml

JSON_TYPES = {"number": "number", "count": "integer", "string": "string",
              "bool": "boolean", "numbers": "array"}


def types_of(schema):
    t = schema.get("type")
    if t is None and "enum" in schema:
        return {"string"}
    return set(t if isinstance(t, list) else [t]) - {"null"}


def main():
    sdh, api = sys.argv[1], sys.argv[2]
    out = subprocess.run([sdh, "--list-params"], check=True, capture_output=True, text=True).stdout
    rows = [line.split("\t") for line in out.splitlines()]
    assert len(rows) >= 10, out
    spec = yaml.safe_load(open(api))["components"]["schemas"]
    failures = []
    for schema_name in ("JobParams", "Params"):
        props = spec[schema_name]["properties"]
        names = {r[0] for r in rows}
        for name, flag, typ, help_ in rows:
            if name not in props:
                failures.append("%s lacks %s (%s)" % (schema_name, name, help_))
                continue
            want = JSON_TYPES[typ]
            got = types_of(props[name])
            if want not in got and not (want == "number" and "integer" in got):
                failures.append("%s.%s is %s, the table says %s" % (schema_name, name, got, typ))
        for name in props:
            if name not in names:
                failures.append("%s.%s is not in the table" % (schema_name, name))
    for f in failures:
        print("FAIL:", f)
    if failures:
        sys.exit(1)
    print("test_params: %d parameters, the table and the OpenAPI document agree" % len(rows))


if __name__ == "__main__":
    main()
