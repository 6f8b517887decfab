#!/usr/bin/env bash
# Installs every Debian 12 package that crosslab's build, tests and demo need.
# Idempotent: packages already present are left alone. Works as root or through sudo.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config git
  # Qt 6: widgets, charts, svg icons, platform plugins (xcb + offscreen)
  qt6-base-dev qt6-base-dev-tools qt6-charts-dev qt6-svg-dev qt6-qpa-plugins libqt6opengl6-dev
  libgl-dev fonts-dejavu-core
  # engine: libtorch with a fast BLAS (reference BLAS is ~30x slower)
  libtorch-dev libopenblas0-openmp
  # store, JSON, logging, YAML, HTTP, SSH
  libsqlite3-dev sqlite3 nlohmann-json3-dev libspdlog-dev libfmt-dev
  libyaml-cpp-dev libcpp-httplib-dev libssh-dev libssl-dev
  # API keys from the OS keyring (Secret Service / KWallet) where one runs
  qtkeychain-qt6-dev
  # SSH tests run a real OpenSSH server on loopback
  openssh-server openssh-client
  # GUI under a virtual X server (screenshots, `make run` without a display)
  xvfb xauth x11-utils
)

if [ "$(id -u)" -eq 0 ]; then SUDO=(); else SUDO=(sudo); fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
