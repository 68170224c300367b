#!/usr/bin/env bash
# Build the wheel of HEAD, install it with the test extras in a fresh venv, and run
# the fast tests against the installed package (the checkout's src/ is not on the
# path: the tests and the repository files they read are copied beside it).
# Usage: bash tools/check_wheel.sh   (needs the package index; about 5 minutes)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
git -C "$root" worktree add -q --detach "$work/src" HEAD
trap 'git -C "$root" worktree remove --force "$work/src"; rm -rf "$work"' EXIT
python3 -m venv "$work/build-venv"
"$work/build-venv/bin/pip" install -q build
"$work/build-venv/bin/python" -m build --wheel --outdir "$work/dist" "$work/src" >/dev/null
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$(ls "$work"/dist/*.whl)[test]"
mkdir "$work/proj"
for item in tests docs examples benchmarks .ci README.md CONTRIBUTING.md LICENSE CITATION.cff \
    CHANGELOG.md pyproject.toml; do
  cp -r "$work/src/$item" "$work/proj/"
done
cd "$work/proj"
"$work/venv/bin/python" -c "import fairpca; print('testing', fairpca.__file__)"
"$work/venv/bin/python" -m pytest -m "not slow" -q -p no:cacheprovider
