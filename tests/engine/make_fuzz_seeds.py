#!/usr/bin/env python3
"""Writes tests/engine/corpus/engine/*: seed inputs of fuzz_engine.c, among
them the cases issue #28 reported (a box of side 1e-300 or 1e200, edges
from 5e-324 or 1e-200 to 1e200, log bins from 1e-300 to 1e300, weights of
1e308). The layout is fuzz_engine.c's header; a value is two bytes: the
table entry (its index in T below, as fuzz_engine.c's table), a sign and a
multiplier, then the ulps."""
import os

# fuzz_engine.c's table, by name: the index of each entry used here
T = {'0': 0, '5e-324': 1, '1e-300': 5, '2^-250': 8, '1e-200': 10, '1e-10': 13, '0.1': 16,
     '0.25': 17, '0.5': 19, '1': 22, '1.5': 24, '2': 25, '2.5': 26, '3': 27, '4': 28, '5': 29, '10': 31,
     '100': 33, '1000': 36, '23000': 38, '1e13': 44, '2^52': 45, '1e50': 49, '1e100': 50, '2^250': 52,
     '1e200': 54, '1e300': 56, 'DBL_MAX/4': 58, 'DBL_MAX': 60, '1e308': 60}


def value(name, neg=False, mult=1, ulps=0):
    """Two bytes: entry (bit 6 sign, bit 7 multiplier), then ulps and the multiplier."""
    b0 = T[name] | (64 if neg else 0)
    b1 = (ulps + 3) & 7
    if mult != 1:
        assert 2 <= mult <= 33
        b0 |= 128
        b1 |= (mult - 2) << 3
    return bytes([b0, b1])


# with radial (a statistic of a radius), bins says which: 0 within R, 1 a
# count per point, 2 the nearest point, 3 the pairs within R
WITHIN, PER_POINT, NEAREST, PAIRS = 0, 1, 2, 3


def shape(box=0, bins=0, within=False, weighted=False, cross=False, frames=False):
    return bytes([box | bins << 2 | within << 4 | weighted << 5 | cross << 6 | frames << 7])


def head(box=0, bins=0, n_a=6, n_b=4, count=4, how=0, **kw):
    return shape(box, bins, **kw) + bytes([n_a - 1, n_b - 1, count - 1, how])


def points(n, names, offset='0', weights=None):
    """n points whose coordinates cycle through names (value() tuples or names)."""
    out = value(offset)
    k = 0
    for _ in range(3 * n):
        v = names[k % len(names)]
        out += value(*v) if isinstance(v, tuple) else value(v)
        k += 1
    for i in range(n if weights else 0):
        out += value(weights, neg=i % 2 == 1)
    return out


SMALL = ['0', '1', '2', '3', '0.5', '1.5', ('1', True), ('2', False, 3), '0.25', ('3', True)]
seeds = {
    # the boxes: 1e-300 (widths 0/0) and 1e200 (inf/inf), ortho and
    # triclinic, with the grid among the kernels
    'box-1e-300': head(box=1, count=1) + value('1e-300') * 3 + value('1e-300') +
    points(6, ['0', '1e-300', '5e-324']),
    'box-1e200': head(box=1, count=10) + value('1e200') * 3 + value('1') + points(6, SMALL),
    'triclinic-1e200': head(box=2, count=10) + value('1e200') + value('1') * 5 + value('1') +
    points(6, SMALL),
    'box-2to250-edge': head(box=1, count=3) + value('2^250') * 3 + value('1e50') +
    points(8, ['2^250', '1e50', ('1e50', True), '0', ('2^250', True)]),
    # edges of a huge range (the 16 GiB edge table), and log bins
    'edges-5e-324': head(bins=2, count=3) + value('5e-324') + value('1') + value('2') +
    value('3') + points(8, SMALL),
    'edges-1e-200-1e200': head(bins=2, count=3) + value('1e-200') + value('1') + value('2') +
    value('1e200') + points(8, SMALL),
    'log-1e-300-1e300': head(bins=3, count=12) + value('1e-300') + value('1e300') +
    points(10, SMALL + ['1e-200', '1e100']),
    # weights whose products overflow, and within R
    'weights-1e308': head(bins=0, count=4, weighted=True) + value('1') +
    points(6, SMALL, weights='1e308'),
    'within-0-periodic': head(box=1, within=True) + value('10') * 3 + value('0') +
    points(8, ['0', '10', ('10', True), '1', '0']),  # radius 0: collisions
    'within-R-cross': head(within=True, cross=True, weighted=True) + value('1.5') +
    points(6, SMALL, weights='0.5') + points(5, SMALL, weights='3'),
    # a count per point, the nearest point and the pairs within R
    'per-point-weighted': head(box=2, bins=PER_POINT, within=True, weighted=True, cross=True) +
    value('10') + value('1') + value('10') + value('2') + value('0.5') + value('10') +
    value('2') + points(8, SMALL) + points(6, SMALL, weights='1e300'),
    'nearest-anywhere': head(bins=NEAREST, within=True, n_a=12) + value('0') +
    points(12, SMALL + ['DBL_MAX', ('DBL_MAX', True)]),
    'nearest-within-frames': head(box=1, bins=NEAREST, within=True, n_a=12, frames=True) +
    value('10') * 3 + value('5') * 3 + value('1.5') + points(12, SMALL),
    'pairs-within': head(box=1, bins=PAIRS, within=True, n_a=20) + value('10') * 3 +
    value('2.5') + points(20, SMALL + [('10', False, 3), ('1e13', True)]),
    # far points in a periodic box; the extremes of binary64 in open space
    'far-periodic': head(box=1, count=5) + value('10') * 3 + value('1') +
    points(6, ['1e13', ('1e13', True), '1', '0', ('1e300', True)]),
    'open-extremes': head(count=6, how=1 | 1 << 4) + value('1e100') +
    points(10, ['DBL_MAX', ('DBL_MAX', True), 'DBL_MAX/4', '5e-324', '0', ('0', True)]),
    'default-count': head(bins=1) + value('0.25') + points(12, SMALL),
    'frames-boxes': head(box=2, count=4, frames=True) + value('10') + value('1') +
    value('10') + value('2') + value('0.5') + value('10') + value('5') + value('0.25') +
    value('5') + value('0') + value('0') + value('5') + value('0.5', ulps=1) +
    points(12, SMALL),
    'knobs-generic-tiles': head(count=8, n_a=40, how=1 << 2 | 1 << 5) + value('0.5') +
    points(40, SMALL + ['4', '5', ('4', True)]),
    'knobs-avx2-edges': head(bins=2, count=4, n_a=33, how=2 << 2 | 2 << 6) + value('0') +
    value('0.5') + value('1', ulps=1) + value('2') + value('3') + points(33, SMALL),
    # the fuzzer's findings, as it wrote them
    # the grid cut points 2^-1021 and a few ulps apart (every square
    # underflows: d = 0, bin 0) into cells and called the pairs it skipped
    # overflow; fixed by grid.h's floor of 2^-500 on a cell's side
    'found-grid-underflow': bytes.fromhex(
        '4401050302003403340334033103000334033103710300037403340331037103'
        '0003740334033103710300037403340331000000000000000003310371030003'),
}

here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, 'corpus', 'engine')
os.makedirs(out, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(out, name), 'wb') as f:
        f.write(data)
print(f'{len(seeds)} seeds in {out}')
