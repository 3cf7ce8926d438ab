#!/usr/bin/env python3
"""api-types.py -- writes api/js/api.d.ts, the TypeScript types of histd's
JSON documents, from api/openapi.yaml (the contract): every schema under
components.schemas (Job as JobDoc: the client's Job is the handle) and
GET /v1/schema's field (SchemaField).

JSON Schema to TypeScript: integer is Int (number | bigint: the client
reads integers beyond 2^53 as BigInts), a list of types or oneOf/anyOf a
union, allOf an intersection, enum and const literals, an object's
properties those of an interface (optional unless required), its
additionalProperties schema an index signature; descriptions become doc
comments.

  python3 api/js/tools/api-types.py           # writes api/js/api.d.ts
  python3 api/js/tools/api-types.py --check   # exit 1 if api.d.ts is not what openapi.yaml gives

Needs PyYAML (Debian: python3-yaml).
"""
import json
import os
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
SPEC = os.path.join(ROOT, "api", "openapi.yaml")
OUT = os.path.join(HERE, "..", "api.d.ts")
RENAME = {"Job": "JobDoc"}
PRIMITIVE = {"integer": "Int", "number": "number", "string": "string", "boolean": "boolean",
             "null": "null"}


def name_of(ref):
    n = ref.rsplit("/", 1)[1]
    return RENAME.get(n, n)


def literal(v):
    return "null" if v is None else json.dumps(v)


def doc(text, indent):
    """A description as a /** */ comment, one line a paragraph line."""
    if not text:
        return ""
    lines = [l.rstrip() for l in str(text).strip().replace("*/", "*\\/").split("\n")]
    if len(lines) == 1:
        return indent + "/** " + lines[0] + " */\n"
    return indent + "/**\n" + "".join(indent + " * " + l + "\n" if l else indent + " *\n" for l in lines) + indent + " */\n"


def ts(s, indent=""):
    """The TypeScript type of schema s."""
    if "$ref" in s:
        return name_of(s["$ref"])
    if "const" in s:
        return literal(s["const"])
    if "enum" in s:
        return " | ".join(literal(v) for v in s["enum"])
    if "allOf" in s:
        return " & ".join(wrap(ts(x, indent)) for x in s["allOf"])
    for key in ("oneOf", "anyOf"):
        if key in s:
            return " | ".join(wrap(ts(x, indent)) for x in s[key])
    types = s.get("type")
    if isinstance(types, list):
        return " | ".join(wrap(one(dict(s, type=t), indent)) for t in types)
    if types is None and "properties" in s:
        return one(dict(s, type="object"), indent)
    if types is None:
        return "unknown"
    return one(s, indent)


def wrap(t):
    """t in parentheses where a | or & stands outside its braces and brackets."""
    depth = 0
    for k, c in enumerate(t):
        depth += c in "{<(" and 1 or c in "}>)" and -1 or 0
        if depth == 0 and t[k:k + 3] in (" | ", " & "):
            return "(" + t + ")"
    return t


def one(s, indent):
    t = s["type"]
    if t in PRIMITIVE:
        return PRIMITIVE[t]
    if t == "array":
        items = s.get("items")
        return "Array<" + (ts(items, indent) if items else "unknown") + ">"
    if t == "object":
        return obj(s, indent)
    raise SystemExit("api-types.py: no TypeScript for the type %r" % t)


def obj(s, indent):
    props = s.get("properties") or {}
    req = set(s.get("required") or [])
    extra = s.get("additionalProperties")
    if not props and not isinstance(extra, dict):
        return "Record<string, unknown>" if extra is not False else "{}"
    inner = indent + "  "
    out = "{\n"
    for k, v in props.items():
        out += doc(v.get("description"), inner)
        out += inner + k + ("" if k in req else "?") + ": " + ts(v, inner) + ";\n"
    if isinstance(extra, dict):
        out += inner + "[key: string]: " + ts(extra, inner) + ";\n"
    return out + indent + "}"


def generate():
    with open(SPEC, encoding="utf-8") as f:
        spec = yaml.safe_load(f)
    out = ["// api.d.ts -- the types of histd's JSON documents, generated from api/openapi.yaml",
           "// by api/js/tools/api-types.py: do not edit; run it again when the contract changes.",
           "",
           "/** An integer: a Number, or a BigInt beyond 2^53 (Number.MAX_SAFE_INTEGER), every digit kept. */",
           "export type Int = number | bigint;", ""]
    schemas = dict(spec["components"]["schemas"])
    field = spec["paths"]["/v1/schema"]["get"]["responses"]["200"]["content"]["application/json"]
    schemas["SchemaField"] = dict(field["schema"]["properties"]["fields"]["items"],
                                  description="One field of a result, as GET /v1/schema lists it.")
    for name, s in schemas.items():
        out.append(doc(s.get("description"), "").rstrip("\n"))
        body = ts(s)
        if body.startswith("{"):
            out.append("export interface %s %s" % (RENAME.get(name, name), body))
        else:
            out.append("export type %s = %s;" % (RENAME.get(name, name), body))
        out.append("")
    return "\n".join(l for l in out if l is not None).replace("\n\n\n", "\n\n")


def main():
    text = generate()
    if sys.argv[1:] == ["--check"]:
        try:
            with open(OUT, encoding="utf-8") as f:
                have = f.read()
        except OSError:
            have = ""
        if have != text:
            print("api/js/api.d.ts is not what api/openapi.yaml gives: run python3 api/js/tools/api-types.py")
            import difflib
            sys.stdout.writelines(list(difflib.unified_diff(have.splitlines(True), text.splitlines(True),
                                                            "api.d.ts (committed)", "api.d.ts (from openapi.yaml)"))[:80])
            return 1
        print("ok - api/js/api.d.ts is what api/openapi.yaml gives")
        return 0
    if sys.argv[1:]:
        raise SystemExit(__doc__)
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
