#!/bin/sh
# make_gmx.sh -- GROMACS's gmx rdf of the water box gmx solvate wrote
# (tests/io/data/water.gro), for tests/cli/test_gro_rdf.py. Run with
# Debian 12's GROMACS (apt-get install gromacs: gmx 2022.5):
#
#     cd tests/cli/gro && sh make_gmx.sh
#
# writes gmx_rdf_NORM.xvg for -norm rdf, number_density and none: OW around
# OW, bins of 0.8/70 nm to 0.8 nm (gmx rdf centres bin k on k * bin: it
# holds [k - 1/2, k + 1/2) bins, bin 0 [0, 1/2)), one line a bin: its
# centre and the value, as gmx prints them (3 decimals).
set -e
for norm in rdf number_density none; do
  gmx rdf -f ../../io/data/water.gro -s ../../io/data/water.gro -ref 'name OW' -sel 'name OW' \
    -bin 0.011428571428571429 -rmax 0.8 -norm "$norm" -o "gmx_rdf_$norm.xvg" -xvg none \
    -quiet > /dev/null 2>&1
done
