# syntax=docker/dockerfile:1
#
# histd in a container: the daemon, its CUDA kernels and the dashboard.
#
#   docker build -t histd:0.1.0 .
#   docker run -d --gpus all -p 8080:8080 -v histd-data:/var/lib/histd histd:0.1.0   # GPU workers
#   docker run -d            -p 8080:8080 -v histd-data:/var/lib/histd histd:0.1.0   # CPU engine
#
# Why these bases: NVIDIA publishes its CUDA images on Ubuntu (there is no
# Debian 12 CUDA image), so both stages use the same CUDA and Ubuntu release.
# The devel stage has nvcc; the runtime stage has only the CUDA runtime
# libraries (the driver comes from the host through the NVIDIA Container
# Toolkit when the container runs with --gpus). Without --gpus the CUDA
# runtime finds no device and histd runs its CPU engine; /v1/devices says why.
# Ubuntu 24.04's meson, libmicrohttpd, libuv, cJSON and SQLite are the same
# generation as Debian 12's, which the project builds and tests on.
#
# Configuration is by environment: every flag has a HISTD_* variable
# (HISTD_WORKERS, HISTD_TOKEN, HISTD_CORS_ORIGIN, HISTD_MAX_UPLOAD_BYTES, ...;
# see `docker run --rm histd:0.1.0 --help`).

ARG CUDA_VERSION=13.0.0
ARG UBUNTU_VERSION=24.04
# histd links the CUDA runtime statically (cudart_static) and the driver
# comes from the host, so the small "base" flavour runs it too:
#   docker build --build-arg RUNTIME_FLAVOR=base -t histd:0.1.0-base .
ARG RUNTIME_FLAVOR=runtime
# The two base images. Without GPUs, plain Ubuntu and CUDA=disabled make a
# CPU-only image of the same packages, user, paths and environment
# (tests/deploy/test_container.py builds it so, on an Ubuntu made by mmdebstrap):
#   docker build --build-arg BUILD_IMAGE=ubuntu:24.04 \
#     --build-arg RUNTIME_IMAGE=ubuntu:24.04 --build-arg CUDA=disabled -t histd:0.1.0-cpu .
ARG BUILD_IMAGE=nvidia/cuda:${CUDA_VERSION}-devel-ubuntu${UBUNTU_VERSION}
ARG RUNTIME_IMAGE=nvidia/cuda:${CUDA_VERSION}-${RUNTIME_FLAVOR}-ubuntu${UBUNTU_VERSION}

# ---- build -------------------------------------------------------------------
FROM ${BUILD_IMAGE} AS build

# GPU architectures to compile machine code for (compute capabilities);
# 80 = A100, 86 = RTX 30xx/A40, 89 = L4/L40, 90 = H100/H200.
ARG GPU_ARCH=80,86,89,90
# enabled: the CUDA kernels (needs the devel image's nvcc); disabled: CPU only
ARG CUDA=enabled

RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      meson ninja-build pkg-config gcc libc6-dev \
      libcjson-dev libuv1-dev libmicrohttpd-dev libsqlite3-dev libssl-dev \
      libcurl4-openssl-dev libpq-dev libnetcdf-dev libcfitsio-dev \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY . .
# -Dwerror=false: the project's builds and CI (Debian 12, GCC 12) treat
# warnings as errors; Ubuntu 24.04's GCC 13 (_FORTIFY_SOURCE=3) warns where
# GCC 12 does not, and a user's image build must not stop on a newer
# compiler's warning (tests/deploy/test_container.py lists them).
RUN meson setup /build --prefix=/opt/histd --buildtype=release \
      "-Dcuda=${CUDA}" -Dservice=enabled -Dnetcdf=enabled -Dcfitsio=enabled -Dwerror=false "-Dgpu_arch=${GPU_ARCH}" \
 && ninja -C /build \
 && meson install -C /build --skip-subprojects \
 && test -x /opt/histd/bin/histd \
 && test -f /opt/histd/share/histd/dashboard/index.html \
 && test -f /opt/histd/share/histd/dashboard/js/histd.js \
 && /opt/histd/bin/histd --version

# ---- runtime -----------------------------------------------------------------
FROM ${RUNTIME_IMAGE}

LABEL org.opencontainers.image.title="histd" \
      org.opencontainers.image.description="Spatial distance histograms over HTTP, on CUDA GPUs or the CPU" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.licenses="MIT"

# The libraries histd links (Ubuntu 24.04 names; libssl for the SHA-256 of
# dataset ids, libcurl4t64 for the cluster's S3 store, libnetcdf19t64 for
# AMBER NetCDF trajectories, libcfitsio10t64 for FITS sky catalogues) and
# curl for the HEALTHCHECK.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libcjson1 libuv1t64 libmicrohttpd12t64 libsqlite3-0 libssl3t64 libcurl4t64 libpq5 \
      libnetcdf19t64 libcfitsio10t64 \
      curl ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 histd \
 && useradd --system --uid 10001 --gid histd --home-dir /var/lib/histd \
      --no-create-home --shell /usr/sbin/nologin histd \
 && install -d -o histd -g histd -m 0750 /var/lib/histd

COPY --from=build /opt/histd /opt/histd
# Fail the build, not the first start, if a shared library is missing.
RUN if ldd /opt/histd/bin/histd | grep 'not found'; then exit 1; fi \
 && /opt/histd/bin/histd --version

# In the container histd listens on every interface, so it refuses to start
# without a token: pass it at run time from a file kept out of the image,
#   docker run --env-file deploy/histd.env -p 127.0.0.1:8080:8080 histd:0.1.0
# (HISTD_TOKEN=...; see deploy/histd.env.example). Names other than
# localhost and IP addresses that clients use go in HISTD_ALLOWED_HOSTS.
ENV HISTD_LISTEN=0.0.0.0:8080 \
    HISTD_DATA_DIR=/var/lib/histd \
    HISTD_STATIC_DIR=/opt/histd/share/histd/dashboard \
    PATH=/opt/histd/bin:$PATH

VOLUME ["/var/lib/histd"]
EXPOSE 8080
USER 10001:10001
WORKDIR /var/lib/histd

# /healthz needs no token; the port follows HISTD_LISTEN.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD curl -fsS -o /dev/null "http://127.0.0.1:${HISTD_LISTEN##*:}/healthz" || exit 1

# SIGTERM stops accepting, lets running jobs finish or requeue, and exits 0.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/opt/histd/bin/histd"]
