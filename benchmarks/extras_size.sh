#!/usr/bin/env bash
# Installed size of each extra (README, "Optional extras"): the site-packages of a
# fresh venv after `pip install --no-compile "fairpca[extra]"` from this checkout's
# HEAD, less that of an empty venv, in MB. Needs the package index.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/src"
git -C "$root" archive --format=tar HEAD | tar -x -C "$work/src"
python3 -m venv "$work/empty"
empty=$(du -sm "$work"/empty/lib/python3*/site-packages | cut -f1)
for extra in core sdp dask dask-dataframe plot datasets fairness cli all; do
  rm -rf "$work/v" && python3 -m venv "$work/v"
  spec="$work/src"
  [ "$extra" != core ] && spec="$work/src[$extra]"
  "$work/v/bin/pip" install -q --no-compile "$spec" >/dev/null
  size=$(du -sm "$work"/v/lib/python3*/site-packages | cut -f1)
  echo "$extra $((size - empty)) MB"
done
