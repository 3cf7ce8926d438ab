#!/usr/bin/env bash
# Installs what histd needs to build, run and test on Debian 12.
# Usage: bash deploy/install-deps.sh [--test]   (--test adds the test tools)
set -euo pipefail
pkgs=(meson ninja-build pkg-config gcc libc6-dev
      libcjson-dev libuv1-dev libmicrohttpd-dev libsqlite3-dev libssl-dev
      libnetcdf-dev)   # libnetcdf: AMBER NetCDF trajectories (-Dnetcdf)
if [ "${1:-}" = "--test" ]; then
  pkgs+=(clang libclang-rt-14-dev curl libcurl4-openssl-dev python3 python3-yaml
         python3-jsonschema python3-numpy jq chromium chromium-driver
         # the Python client's suite (tests/python): its offline install,
         # progress bar, MDAnalysis and ASE objects, the executed notebook
         python3-pip python3-venv python3-setuptools python3-wheel python3-tqdm
         python3-mdanalysis python3-ase python3-matplotlib python3-nbconvert
         python3-ipykernel
         # tests/cluster/test_slurm.sh: a one-node Slurm cluster (about 25 s
         # to install: slurmctld, slurmd, slurm-client, munge)
         slurm-wlm)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
