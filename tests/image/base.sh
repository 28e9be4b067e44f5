#!/usr/bin/env bash
# A local stand-in for the Dockerfile's base image, python:3.11-slim-bookworm, for machines that
# reach Debian's package mirror but no container registry (this project's CI machines).
#
#   tests/image/base.sh CACHE_DIR
#
# Leaves the stand-in in podman's storage under the base's own short name (so the Dockerfile
# builds unchanged) and its root filesystem as CACHE_DIR/stand-in-RECIPE.tar, RECIPE being a hash
# of this script: a warm run imports the tar (seconds) instead of running debootstrap (a minute).
# An image of that name that this script did not make (the real base, pulled or loaded by hand)
# is used as it is.
#
# How the stand-in differs from the official image, which builds CPython from source into
# /usr/local on debian:bookworm-slim:
# - Python is Debian's python3 3.11.2 in /usr/bin (the official image has the latest 3.11.x),
#   with `python`, `python3`, `pip` and `pip3` links in /usr/local/bin where the official image
#   has its own; pip is Debian's 23.0 (the official image: the pip bundled with that CPython).
# - Debian's EXTERNALLY-MANAGED marker is removed, as the official image has none.
# - CA certificates: Debian's ca-certificates package (a dependency of python3-pip); the official
#   image has the same package.
# - Trimmed as a slim image is: no apt lists or caches, no docs, man or info pages, no locales.
# - Its config carries the official ENV PATH, LANG and CMD, plus the label
#   org.muster.base-stand-in (inherited by images built on it, so they say what they stand on).
set -euo pipefail

cache=${1:?usage: base.sh CACHE_DIR}
base_name=python:3.11-slim-bookworm
recipe=$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)
label=org.muster.base-stand-in
tarball="$cache/stand-in-$recipe.tar"

say() { printf 'base.sh: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

if podman image exists "$base_name"; then
  have=$(podman image inspect --format "{{ index .Labels \"$label\" }}" "$base_name")
  if [[ -z "$have" || "$have" == "<no value>" ]]; then
    say "using $base_name as found in podman's storage (not a stand-in made here)"
    exit 0
  fi
  if [[ "$have" == "$recipe" ]]; then
    say "stand-in $base_name (recipe $recipe) already in podman's storage"
    exit 0
  fi
  say "stand-in $base_name has recipe $have, this script is $recipe: making it anew"
  podman image rm --force "$base_name" >/dev/null
fi

import_tarball() {
  podman import \
    --change 'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change "LABEL $label=$recipe" \
    --change 'CMD ["python3"]' \
    --quiet "$tarball" "$base_name" >/dev/null
  say "imported $tarball as $base_name"
}

if [[ -f "$tarball" ]]; then
  import_tarball
  exit 0
fi

[[ "$(id -u)" == 0 ]] || die "making the stand-in base needs root (debootstrap); run as root, or \
put the real $base_name into podman's storage (podman pull / podman load)"
command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"

# The mirror apt uses on this machine, read now so that no host is written into the repository:
# the first source of the main component for bookworm, deb822 (*.sources) or one-line (*.list).
mirror_line=$(
  {
    for f in /etc/apt/sources.list.d/*.sources; do [[ -f "$f" ]] && cat "$f" && echo; done
  } | awk '
    /^[[:space:]]*$/ { if (uri != "" && suites ~ /(^| )bookworm( |$)/ && comps ~ /(^| )main( |$)/) \
                         { print uri, keyring; exit } uri = suites = comps = keyring = ""; next }
    tolower($1) == "uris:" { uri = $2 }
    tolower($1) == "suites:" { $1 = ""; suites = $0 }
    tolower($1) == "components:" { $1 = ""; comps = $0 }
    tolower($1) == "signed-by:" { keyring = $2 }
  '
)
if [[ -z "$mirror_line" ]]; then
  mirror_line=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
    | awk '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
                          if ($(i + 1) == "bookworm") { print $i; exit } }')
fi
mirror=${mirror_line%% *}
keyring=${mirror_line#"$mirror"}
keyring=${keyring# }
[[ -n "$mirror" ]] || die "no apt source for bookworm main in /etc/apt/sources.list*: \
debootstrap needs a Debian mirror"

root=$(mktemp -d "$cache/rootfs.XXXXXX")
trap 'rm -rf "$root"' EXIT
say "debootstrap bookworm (minbase, python3) from apt's mirror into $root"
debootstrap --variant=minbase --include=python3,python3-venv,python3-pip \
  ${keyring:+--keyring="$keyring"} bookworm "$root" "$mirror" >"$cache/debootstrap.log" 2>&1 \
  || { tail -20 "$cache/debootstrap.log" >&2; die "debootstrap failed (log: $cache/debootstrap.log)"; }

# What a slim image does not carry.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/var/cache/debconf/*-old \
  "$root"/var/log/* "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
  "$root"/usr/share/locale/* "$root"/usr/share/lintian "$root"/usr/share/common-licenses \
  "$root"/var/lib/dpkg/*-old
rm -f "$root"/usr/lib/python3.11/EXTERNALLY-MANAGED
for name in python python3; do ln -sf /usr/bin/python3 "$root/usr/local/bin/$name"; done
for name in pip pip3; do ln -sf /usr/bin/pip3 "$root/usr/local/bin/$name"; done
# The build machine's resolver and host name do not belong in the image.
: >"$root/etc/resolv.conf"
rm -f "$root/etc/hostname"

tar --numeric-owner -C "$root" -cf "$tarball.part" .
mv "$tarball.part" "$tarball"
rm -f "$cache"/stand-in-*.tar.part
for old in "$cache"/stand-in-*.tar; do [[ "$old" == "$tarball" ]] || rm -f "$old"; done
import_tarball
