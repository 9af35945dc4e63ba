#!/usr/bin/env bash
# Installs every Debian 12 package tessel needs, then configures and builds it.
#   scripts/setup.sh [build-dir] [cmake options...]
# Packages only: nothing is downloaded from anywhere else, nothing is vendored.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true

packages=(build-essential cmake ninja-build pkg-config libsqlite3-dev
          libxbyak-dev libtbb-dev doctest-dev
          libblas-test python3-numpy)  # code nobody here wrote, for the BLAS tests
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y "${missing[@]}"
fi

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} "$@"
cmake --build "$build" -j "$(nproc)"
