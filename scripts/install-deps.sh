#!/bin/sh
# Installs the Debian packages the build needs, only when something is missing.
# Needed: a C compiler (gcc), cmake >= 3.20, make, pkg-config.
# Optional, installed when asked through the environment:
#   TOPOS_DEPS_EXTRA="clang libclang-rt-14-dev valgrind libopenblas-dev"
set -e
need=""
command -v cc >/dev/null 2>&1 || need="$need gcc libc6-dev"
command -v cmake >/dev/null 2>&1 || need="$need cmake"
command -v make >/dev/null 2>&1 || need="$need make"
command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config"
for p in ${TOPOS_DEPS_EXTRA:-}; do
  dpkg -s "$p" >/dev/null 2>&1 || need="$need $p"
done
[ -z "$need" ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "topos: missing build tools:$need — install them with your package manager" >&2
  exit 1
fi
echo "topos: installing$need" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends $need >/dev/null
