#!/usr/bin/env bash
# Installs what histd needs to build, run and test on Debian 12.
# Usage: bash deploy/install-deps.sh [--test | --container]   (--test adds the
# test tools; --container what tests/deploy/test_container.py needs)
set -euo pipefail
pkgs=(meson ninja-build pkg-config gcc libc6-dev
      libcjson-dev libuv1-dev libmicrohttpd-dev libsqlite3-dev libssl-dev
      libcurl4-openssl-dev   # the cluster's shared store reaches S3 with libcurl
      libpq-dev              # the cluster's coordinator, PostgreSQL
      libnetcdf-dev    # libnetcdf: AMBER NetCDF trajectories (-Dnetcdf)
      libcfitsio-dev)  # cfitsio: FITS sky catalogues (-Dcfitsio)
if [ "${1:-}" = "--test" ]; then
  pkgs+=(clang libclang-rt-14-dev curl python3 python3-yaml
         postgresql   # the cluster suite starts a throwaway PostgreSQL (initdb, pg_ctl)
         python3-jsonschema python3-numpy jq chromium chromium-driver
         # the Python client's suite (tests/python): its offline install,
         # progress bar, MDAnalysis and ASE objects, the executed notebook
         python3-pip python3-venv python3-setuptools python3-wheel python3-tqdm
         python3-mdanalysis python3-ase python3-matplotlib python3-nbconvert
         python3-ipykernel
         # tests/service/test_sky.py: the comoving distance by QUADPACK (scipy)
         python3-scipy
         # tests/js's tsc: the JavaScript client's types (7 MB, no dependencies)
         node-typescript
         # tests/cluster/test_slurm.sh: a one-node Slurm cluster (about 25 s
         # to install: slurmctld, slurmd, slurm-client, munge)
         slurm-wlm)
  # tests/cluster's S3 server (s3rver) runs on node: Debian's, unless
  # there is a node already
  command -v node >/dev/null 2>&1 || pkgs+=(nodejs npm)
fi
if [ "${1:-}" = "--container" ]; then
  # suite 'container': podman builds the image and runs it with runc (Debian
  # 12's crun 1.8 refuses hosts with cgroup v1 and v2 both mounted);
  # mmdebstrap makes its Ubuntu 24.04 base from the Ubuntu archive;
  # slirp4netns is the network of a podman run by a user other than root
  pkgs+=(podman runc mmdebstrap slirp4netns python3)
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
if [ "${1:-}" = "--test" ]; then
  # s3rver and its dependencies, pinned by tests/cluster/package-lock.json,
  # into tests/cluster/node_modules (git-ignored)
  cluster="$(cd "$(dirname "$0")/.." && pwd)/tests/cluster"
  if ! grep -qs '"version": "3.7.1"' "$cluster/node_modules/s3rver/package.json"; then
    npm ci --prefix "$cluster" --no-audit --no-fund --loglevel=error
  fi
fi
