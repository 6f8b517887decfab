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
  libtorch-dev libopenblas0-openmp libicu-dev
  # Debian's reference BLAS, only so that a test can show the engine's report tells it apart
  libblas3
  # engine tests: an independent PyTorch reference (tests/model/ref_llama.py) and node,
  # which runs the real Llama 3 tokenizer (npm @lenml/tokenizers) for conformance
  python3-torch python3-numpy nodejs
  # store, JSON, logging, YAML, HTTP, SSH
  libsqlite3-dev sqlite3 nlohmann-json3-dev libspdlog-dev libfmt-dev
  libyaml-cpp-dev libcpp-httplib-dev libssh-dev
  # benchmark client: HTTP/1.1 response parser (nodejs http-parser), on-demand JSON for SSE chunks
  libhttp-parser-dev libsimdjson-dev
  # (test_bench_metrics' numpy re-implementation of vLLM's formulas uses python3-numpy above)
  # eval: Unicode NFC + case mapping for quote checks, SHA-256 of eval sets (libcrypto)
  libutf8proc-dev libssl-dev
  # API keys from the OS keyring (Secret Service / KWallet) where one runs
  qtkeychain-qt6-dev
  # SSH tests run a real OpenSSH server on loopback
  openssh-server openssh-client
  # independent references in tests (Debian's python3, not a virtualenv)
  python3 python3-yaml
  # GUI under a virtual X server (screenshots, `make run` without a display)
  xvfb xauth x11-utils
  # the report's HTML opened in a real headless browser (test_report_browser)
  chromium
  # packaging checks: the .deb, its desktop file and AppStream metainfo
  dpkg-dev desktop-file-utils appstream
)

if [ "$(id -u)" -eq 0 ]; then SUDO=(); else SUDO=(sudo); fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# npm: bundled with NodeSource's nodejs (this image); Debian's nodejs needs the npm package.
if ! command -v npm >/dev/null 2>&1; then missing+=(npm); fi

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
