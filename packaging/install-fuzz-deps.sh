#!/usr/bin/env bash
# What `make fuzz` needs on top of packaging/install-deps.sh: clang and its libFuzzer, ASan and
# UBSan runtimes (Debian 12: clang-14, libclang-rt-14-dev). Idempotent; root or sudo.
set -euo pipefail
packages=(clang libclang-rt-14-dev)
if [ "$(id -u)" -eq 0 ]; then SUDO=(); else SUDO=(sudo); fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-fuzz-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-fuzz-deps: installing ${missing[*]}"
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
