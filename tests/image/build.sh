#!/usr/bin/env bash
# `make image`: build the Dockerfile as IMAGE (default muster:dev).
#
#   tests/image/build.sh [IMAGE]
#
# With a Docker engine (`docker info` answers): `docker build`. Without one: buildah, as on this
# project's CI machines, which reach package mirrors but no container registry:
# - the base image comes from tests/image/base.sh (a debootstrap stand-in, cached in
#   .image-cache/; see that script for how it differs from the official base);
# - the RUN steps reach the package index the way this machine's pip does: its pip settings are
#   read now (`pip config list`) and handed to the build as a pip.conf, with this machine's CA
#   bundle, in a directory bind-mounted for the RUN steps only (not part of any layer: the final
#   image copies nothing but /opt/muster from the build stage);
# - chroot isolation: no user namespace, network or cgroup setup is needed to build.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"
image=${1:-muster:dev}
cache="$repo/.image-cache"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' pyproject.toml | head -1)
[[ -n "$version" ]] || { echo "build.sh: no version in pyproject.toml" >&2; exit 1; }

say() { printf 'build.sh: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  say "docker build -t $image (a Docker engine answers)"
  exec docker build --build-arg "VERSION=$version" --tag "$image" .
fi

for tool in buildah podman; do
  command -v "$tool" >/dev/null \
    || die "no Docker engine and no $tool: apt-get install podman buildah runc debootstrap"
done
mkdir -p "$cache"
tests/image/base.sh "$cache"

# The build's pip settings: this machine's, minus what names files of this machine (find-links,
# constraint files, file:// indexes), with the CA bundle replaced by the mounted copy.
pip_dir=$(mktemp -d)
trap 'rm -rf "$pip_dir"' EXIT
host_settings=$( (python3 -m pip config list 2>/dev/null || true) | sort -u)
setting() { # the value of pip setting $1 (env over files), quotes stripped
  printf '%s\n' "$host_settings" | sed -n "s/^[^.]*\.$1='\(.*\)'$/\1/p" | tail -1
}
ca=$(setting cert)
ca=${ca:-${PIP_CERT:-${REQUESTS_CA_BUNDLE:-${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}}}}
[[ -f "$ca" ]] || die "the CA bundle pip trusts here ($ca) does not exist"
cp "$ca" "$pip_dir/ca.crt"
{
  echo "[global]"
  echo "cert = /etc/xdg/pip/ca.crt"
  for key in index-url extra-index-url trusted-host proxy timeout default-timeout retries; do
    value=$(setting "$key")
    urls=()
    for word in $value; do [[ "$word" == file:* || "$word" == /* ]] || urls+=("$word"); done
    [[ ${#urls[@]} -gt 0 ]] && echo "$key = ${urls[*]}"
  done
} >"$pip_dir/pip.conf"
say "pip in the build: $(grep -c = "$pip_dir/pip.conf") setting(s) from this machine's pip \
config ($(sed -n 's/ =.*//p' "$pip_dir/pip.conf" | tr '\n' ' '))"

say "buildah bud -t $image (no Docker engine here; base: the stand-in or a local python image)"
log="$cache/build.log"
previous=$(podman image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
if ! buildah bud --isolation chroot --layers --pull=never \
  --volume "$pip_dir:/etc/xdg/pip:ro" \
  --build-arg "VERSION=$version" --tag "$image" . >"$log" 2>&1; then
  tail -40 "$log" >&2
  die "buildah bud failed (whole log: $log)"
fi
grep '^trim_venv:' "$log" >&2 || true
# The image this build replaced, now untagged, would only take room (about 50 MB a build).
current=$(podman image inspect --format '{{.Id}}' "$image")
if [[ -n "$previous" && "$previous" != "$current" ]] \
  && [[ "$(podman image inspect --format '{{len .RepoTags}}' "$previous" 2>/dev/null)" == 0 ]]; then
  podman image rm "$previous" >/dev/null 2>&1 || true
fi
say "built $image: $(podman image inspect --format '{{.Size}}' "$image" | awk '{printf "%.1f MB", $1/1e6}')"
