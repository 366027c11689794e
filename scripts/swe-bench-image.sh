#!/usr/bin/env bash
# Builds a stand-in for SWE-bench's Docker image of pallets__flask-5014 (no registry can be reached
# from the machines swerl is tested on) and tags it with SWE-bench's name for the instance, which
# is what grading looks for when a task names no image (sweBenchImage in src/env/evaluate.ts):
#
#   swebench/sweb.eval.x86_64.pallets_1776_flask-5014:latest
#
# The image: Debian 12 minbase (debootstrap) with the Python packages Flask 2.3's tests need,
# imported into the engine at DOCKER_HOST; the repository at /testbed at the row's base commit
# (from shared/data/swe-bench/pallets__flask-5014.testbed.tgz), installed editable. Like SWE-bench's
# images it has a clean `git status` at /testbed and no node on PATH.
#
#   scripts/swe-bench-image.sh [--force]     # --force rebuilds an image that already exists
#
# Environment: DOCKER_HOST (the engine), SWERL_SWE_BENCH_DATA (default ../shared/data/swe-bench
# beside the checkout), SWERL_DEBIAN_MIRROR (default deb.debian.org), SWERL_DEBOOTSTRAP_CACHE (a
# directory to keep the downloaded .debs in between builds). Needs root (debootstrap).
set -euo pipefail

IMAGE='swebench/sweb.eval.x86_64.pallets_1776_flask-5014:latest'
PACKAGES='python3,python3-pytest,python-is-python3,python3-werkzeug,python3-jinja2,python3-itsdangerous,python3-click,python3-blinker,python3-asgiref,python3-dotenv,python3-greenlet,python3-pip,python3-setuptools,python3-wheel,git,ca-certificates'

here="$(cd "$(dirname "$0")" && pwd)"
data="${SWERL_SWE_BENCH_DATA:-$here/../../shared/data/swe-bench}"
testbed="$data/pallets__flask-5014.testbed.tgz"
mirror="${SWERL_DEBIAN_MIRROR:-http://deb.debian.org/debian}"

force=0
[ "${1:-}" = "--force" ] && force=1

if [ "$force" = 0 ] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "swe-bench-image: $IMAGE exists (--force rebuilds it)"
  exit 0
fi
[ -f "$testbed" ] || {
  echo "swe-bench-image: $testbed not found (set SWERL_SWE_BENCH_DATA)" >&2
  exit 1
}
[ "$(id -u)" = 0 ] || {
  echo "swe-bench-image: debootstrap needs root" >&2
  exit 1
}

work="$(mktemp -d "${TMPDIR:-/tmp}/swerl-image-XXXXXX")"
container="swerl-image-build-$$"
rootfs="swerl-build/flask-5014-rootfs:$$"
cleanup() {
  docker rm -f "$container" >/dev/null 2>&1 || true
  docker rmi "$rootfs" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

step() {
  echo "swe-bench-image: $1 took $(($(date +%s) - t0)) s"
  t0=$(date +%s)
}
t0=$(date +%s)

cache=()
if [ -n "${SWERL_DEBOOTSTRAP_CACHE:-}" ]; then
  mkdir -p "$SWERL_DEBOOTSTRAP_CACHE"
  cache=(--cache-dir="$(cd "$SWERL_DEBOOTSTRAP_CACHE" && pwd)")
fi
root="$work/root"
debootstrap --variant=minbase --include="$PACKAGES" "${cache[@]}" bookworm "$root" "$mirror" \
  >"$work/debootstrap.log" 2>&1 || {
  tail -n 40 "$work/debootstrap.log" >&2
  exit 1
}
# Smaller image: no package lists or downloaded archives.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
step debootstrap

# Owned by root (the container's user), so git has no "dubious ownership" complaint.
tar -C "$root" --no-same-owner -xzf "$testbed"
[ -d "$root/testbed/.git" ] || {
  echo "swe-bench-image: $testbed has no testbed/.git" >&2
  exit 1
}
tar -C "$root" -c . | docker import \
  -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  -c 'ENV LANG=C.UTF-8' \
  -c 'WORKDIR /testbed' \
  -c 'CMD ["bash"]' \
  - "$rootfs" >/dev/null
step import

# The editable install, inside the image; pip's metadata (src/*.egg-info) is kept out of git's
# view so the tree is clean, as in SWE-bench's images.
docker run --name "$container" --network none "$rootfs" bash -euc '
  cd /testbed
  pip install -q -e . --no-index --no-deps --no-build-isolation --break-system-packages
  git status --porcelain --untracked-files=all | sed -n "s/^?? //p" >> .git/info/exclude
  test -z "$(git status --porcelain --untracked-files=all)"
  python -c "import flask, sys; assert flask.__file__.startswith(\"/testbed/\"), flask.__file__"
  if command -v node; then echo "node is on PATH" >&2; exit 1; fi
'
docker commit -c 'CMD ["bash"]' -c 'WORKDIR /testbed' "$container" "$IMAGE" >/dev/null
docker rm -f "$container" >/dev/null
docker rmi "$rootfs" >/dev/null
step "pip install -e (in the image)"

echo "swe-bench-image: built $IMAGE ($(docker image inspect -f '{{.Size}}' "$IMAGE") bytes)"
