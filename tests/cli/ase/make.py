# Writes frames.extxyz with ASE (Debian python3-ase 3.22.1), then reads it
# back with ASE into frames.json (each frame's cell rows a, b, c, pbc,
# positions and w as ASE reads them): what histd must read too.
# Run: /usr/bin/python3 make.py  (in tests/cli/ase)
import json
import numpy as np
from ase import Atoms
from ase.io import read, write
rng = np.random.default_rng(10)
cells = [[[9.0, 0, 0], [2.0, 8.0, 0], [-1.0, 0.5, 7.0]], [[9.5, 0, 0], [0, 9.5, 0], [0, 0, 9.5]]]
frames, doc = [], []
for cell, n in zip(cells, (30, 24)):
    pos = rng.uniform(0, 1, (n, 3)) @ np.array(cell)
    a = Atoms("Ar%d" % n, positions=pos, cell=cell, pbc=True)
    a.new_array("w", rng.uniform(-1, 2, n))
    frames.append(a)
write("frames.extxyz", frames, format="extxyz")
for a in read("frames.extxyz", index=":"):
    doc.append({"cell": a.cell[:].tolist(), "pbc": a.pbc.tolist(),
                "positions": a.get_positions().tolist(), "w": a.arrays["w"].tolist()})
json.dump(doc, open("frames.json", "w"))
