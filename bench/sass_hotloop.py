#!/usr/bin/env python3
"""sass_hotloop.py LISTING -- instructions per pair in a kernel's hot loop.

LISTING is `cuobjdump -sass -fun NAME` output (or any text with one SASS
instruction per line after a /*offset*/ tag). The float32 kernels meet
partners in branch-free groups of 32 pairs (one MUFU.RSQ each); a group
runs from the last branch/reconvergence before its first MUFU to the first
branch after its last. Prints the instructions per pair and the opcode mix
of each such group (those holding float64 code, i.e. the rare path, are
left out)."""
import collections
import re
import sys

lines = [l for l in open(sys.argv[1]) if re.search(r'/\*[0-9a-f]{4,5}\*/\s+\S', l)]
ops = []
for l in lines:
    body = re.search(r'\*/\s+(.*?)\s*;?\s*/\*', l)
    text = body.group(1) if body else l
    toks = text.split()
    op = toks[1] if toks and toks[0].startswith('@') else (toks[0] if toks else '?')
    ops.append(op)
mu = [i for i, o in enumerate(ops) if o.startswith('MUFU.RSQ')]
seen = set()
for s in range(len(mu) - 31):
    if mu[s + 31] - mu[s] >= 32 * 16:
        continue
    a = mu[s]
    while a > 0 and not re.match(r'(BRA|BSYNC|BSSY|YIELD)', ops[a - 1]):
        a -= 1
    b = mu[s + 31]
    while b + 1 < len(ops) and not ops[b].startswith('BRA'):
        b += 1
    if a in seen:
        continue
    seen.add(a)
    seg = ops[a:b + 1]
    if any(o.startswith(('DFMA', 'DADD', 'DMUL', 'BSSY')) for o in seg):
        continue
    mix = collections.Counter(o.split('.')[0] for o in seg)
    print("group of 32 pairs at %d: %d SASS instructions, %.2f per pair: %s"
          % (a, len(seg), len(seg) / 32, dict(mix.most_common())))
if not seen:
    print("no group of 32 MUFU.RSQ found")
