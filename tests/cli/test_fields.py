"""test_fields.py -- the result schema (src/engine/schema.c, printed by
`sdh --list-fields`) and api/openapi.yaml's Result agree: every field the
JSON output carries is a property of Result (a grouped one a property of
its group's object), with a JSON type that matches the field's type, and
Result names no property the schema lacks.

usage: test_fields.py SDH_EXE OPENAPI_YAML
"""
import json
import subprocess
import sys

import yaml

JSON_TYPES = {"u64": "integer", "i64": "integer", "f64": "number", "str": "string",
              "bool": "boolean"}


def types_of(schema):
    t = schema.get("type")
    if t is None and "enum" in schema:
        return {"string"}
    if t is None and "$ref" in schema:
        return {"object"}
    return set(t if isinstance(t, list) else [t]) - {"null"}


def main():
    sdh, api = sys.argv[1], sys.argv[2]
    out = subprocess.run([sdh, "--list-fields"], check=True, capture_output=True, text=True).stdout
    fields = [f for f in json.loads(out)["fields"] if "json" in f["outputs"]]
    assert len(fields) >= 40, len(fields)
    spec = yaml.safe_load(open(api))["components"]["schemas"]
    props = spec["Result"]["properties"]
    failures = []
    seen = set()
    # every shape by its name; an array's JSON nesting follows from it
    nested = {"frames x bins", "blocks x bins", "partials x bins", "frames x points",
              "points x bins", "regions x bins"}
    flat = {"bins", "edges", "edges2", "frames", "points", "partials", "regions", "pairs"}
    for f in fields:
        if f["shape"] not in nested | flat | {"scalar"}:
            failures.append("%s.%s: shape %r is not one of histd's" % (f["group"], f["name"],
                                                                        f["shape"]))
        if f["group"] == "partial" and f["shape"] not in ("partials", "partials x bins"):
            failures.append("partial.%s: shape %r" % (f["name"], f["shape"]))
        if f["group"] == "jackknife" and f["shape"] not in ("regions", "regions x bins"):
            failures.append("jackknife.%s: shape %r" % (f["name"], f["shape"]))
        if f["group"] == "block" and f["shape"] not in ("bins", "blocks x bins"):
            failures.append("block.%s: shape %r" % (f["name"], f["shape"]))
        if f["group"] == "point" and f["shape"] not in ("points", "points x bins"):
            failures.append("point.%s: shape %r" % (f["name"], f["shape"]))
    for f in fields:
        where = props
        if f["group"] is not None:
            group = props.get(f["group"])
            if group is None:
                failures.append("Result lacks the group %s (for %s)" % (f["group"], f["name"]))
                continue
            if "$ref" in group:
                group = spec[group["$ref"].rsplit("/", 1)[1]]
            where = group.get("properties", {})
            seen.add(f["group"])
        else:
            seen.add(f["name"])
        p = where.get(f["name"])
        if p is None:
            failures.append("Result lacks %s%s (%s)" % (f["group"] + "." if f["group"] else "",
                                                       f["name"], f["help"]))
            continue
        want = JSON_TYPES[f["type"]]
        got = types_of(p)
        if f["shape"] != "scalar":
            ok = "array" in got
        else:
            ok = want in got or (want == "number" and "integer" in got)
        if not ok:
            failures.append("Result's %s is %s, the schema's %s %s" % (f["name"], sorted(got),
                                                                       f["shape"], f["type"]))
    for name in props:
        if name not in seen:
            failures.append("Result names %s, which the schema lacks" % name)
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print("test_fields: %d fields of the schema agree with openapi.yaml's Result" % len(fields))


if __name__ == "__main__":
    main()
