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
