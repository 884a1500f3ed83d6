# Sourced by scripts/run and scripts/test: make .venv with the project installed (idempotent).
# $1 = the extras to install ("" or "dev").
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
py=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$py" -m venv .venv
fi
extras=${1:-}
spec="."
[ -n "$extras" ] && spec=".[$extras]"
# reinstalled (and the compiled core rebuilt) when the project's metadata or a C unit change
stamp=".venv/.boxfish-installed-$(cat pyproject.toml setup.py engine/dots/search/core/*.[ch] | sha1sum | cut -c1-12)-${extras:-base}"
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e "$spec"
  touch "$stamp"
fi
