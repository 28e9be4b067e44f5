# syntax=docker/dockerfile:1
# The muster image: what runs in a cluster, one entry point for it (`muster scheduler`,
# `muster controller`, `muster queue`, `muster status|explain|whatif`). The test bench, `muster
# sim` and `muster demo` (the muster_sim package and the sim extra), is not in it: those two
# exit saying how to get them (docs/design.md, Processes). Build: `make image` (docker build
# where a Docker engine runs, else buildah on a local stand-in base: tests/image/build.sh);
# check: `make image-test`.
# Both stages start from `base`, so the venv built in the first one (whose python is
# a symlink to the base image's interpreter) runs unchanged in the second. Python 3.11,
# the version muster is tested on.
FROM python:3.11-slim-bookworm AS base

FROM base AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
# In this stage only, so not in the image: `strip` (binutils) for the trim step below, and a C
# compiler for mypyc, which compiles the scheduling core (setup.py, scheduler/build.py). The
# compiler needs the interpreter's headers: the official base has them, Debian's python3 (the
# stand-in base of tests/image/base.sh) has them in python3-dev.
RUN apt-get update \
 && apt-get install -y --no-install-recommends binutils gcc libc6-dev \
 && { python -c "import os, sysconfig; os.stat(sysconfig.get_paths()['include'] + '/Python.h')" \
      || apt-get install -y --no-install-recommends python3-dev; } \
 && rm -rf /var/lib/apt/lists/*
# mypyc comes with mypy (pinned, so an image build compiles the same way each time), used
# at build time only: the compiled modules need nothing of it at run time. It type-checks
# the core as `make typecheck` does, so it needs the stubs the test extra installs too.
RUN pip install 'mypy==1.20.2' 'setuptools>=68' wheel 'types-PyYAML>=6,<7'
WORKDIR /src
# Every dependency ships manylinux wheels: the compiler is for muster's own core only.
COPY pyproject.toml setup.py README.md ./
# scheduler/ alone: the wheel built from it has no muster_sim, and its dependencies are the main
# ones, not the sim extra's.
COPY scheduler ./scheduler
# pyproject.toml puts the CRDs in the wheel (share/muster/crds, for the test bench), so the
# build needs them; trim_venv.py takes them out of the image again.
COPY crds/*.yaml ./crds/
COPY crds/autoscaler/*.yaml ./crds/autoscaler/
COPY tests/image/trim_venv.py /usr/local/lib/muster-build/
# muster's dependencies as wheels, fetched once: mypyc checks the core against them (so they
# are installed here too) and the venv installs them from the same files. Then a wheel of
# muster with its core compiled, and a venv with no pip in it: the builder's pip installs
# into it through --python. Then the venv is trimmed to what muster's processes load, each
# module compiled in advance (the root filesystem is read-only at run time, so Python could
# not cache bytecode there; tests/image/trim_venv.py says what goes and why; `make image-test`
# runs every process in the trimmed image).
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > /tmp/requirements.txt \
 && pip wheel --wheel-dir /wheels -r /tmp/requirements.txt \
 && pip install --no-index --find-links /wheels -r /tmp/requirements.txt \
 && MUSTER_COMPILE=1 pip wheel --no-deps --no-build-isolation --wheel-dir /wheels . \
 && python -m venv --without-pip /opt/muster \
 && pip --python /opt/muster/bin/python install --no-compile --no-index --find-links /wheels muster \
 && python /usr/local/lib/muster-build/trim_venv.py /opt/muster

FROM base
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="muster" \
      org.opencontainers.image.description="A gang scheduler for Kubernetes that speaks Volcano's PodGroup and Queue API" \
      org.opencontainers.image.source="https://github.com/muster-sched/muster" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}"
ENV PATH=/opt/muster/bin:${PATH} \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
COPY --from=builder /opt/muster /opt/muster
# A numeric UID (distroless's "nonroot"), so that runAsNonRoot can verify it.
USER 65532:65532
# 8080: the scheduler's metrics and probes, the controller's probes; 8081: the controller's
# metrics; 9443: its webhooks (deploy/; tests/image checks that they agree).
EXPOSE 8080 8081 9443
# checkov:skip=CKV_DOCKER_2: no HEALTHCHECK: Kubernetes ignores it and probes /healthz and /readyz itself (deploy/), and of the image's processes only `muster scheduler` and `muster controller` serve them
ENTRYPOINT ["muster"]
CMD ["scheduler"]
