#!/usr/bin/env bash
# Builds the Debian package with CPack and checks what it installs, that its desktop file
# and AppStream metainfo validate, that its dependencies name the Qt runtime parts and the
# BLAS the figures assume, and that the crosslab-cli installed from it (dpkg -x into a
# scratch root) computes with that BLAS, by the engine's own report.
# usage: test_deb.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cpack --config "$build/CPackConfig.cmake" -G DEB -B "$out" >"$out/cpack.log" 2>&1 || { cat "$out/cpack.log"; fail "cpack"; }
deb=$(ls "$out"/crosslab_*_amd64.deb) || fail "no .deb produced"
files=$(dpkg-deb -c "$deb" | awk '{print $6}')
for f in ./usr/bin/crosslab ./usr/bin/crosslab-cli \
         ./usr/share/applications/io.github.crosslab.Crosslab.desktop \
         ./usr/share/metainfo/io.github.crosslab.Crosslab.metainfo.xml \
         ./usr/share/icons/hicolor/scalable/apps/io.github.crosslab.Crosslab.svg \
         ./usr/share/icons/hicolor/48x48/apps/io.github.crosslab.Crosslab.png \
         ./usr/share/icons/hicolor/256x256/apps/io.github.crosslab.Crosslab.png; do
  grep -qxF "$f" <<<"$files" || fail "package lacks $f"
done
depends=$(dpkg-deb -f "$deb" Depends)
for d in libqt6widgets6 libsqlite3-0 qt6-qpa-plugins libopenblas0-openmp; do
  grep -q "$d" <<<"$depends" || fail "Depends lacks $d: $depends"
done
# The PNG icons are real images of the size their folder names.
mkdir "$out/x" && dpkg-deb -x "$deb" "$out/x"
head -c 24 "$out/x/usr/share/icons/hicolor/48x48/apps/io.github.crosslab.Crosslab.png" | od -An -tx1 | tr -d ' \n' \
  | grep -q '^89504e470d0a1a0a0000000d4948445200000030' || fail "48x48 icon is not a 48-pixel-wide PNG"
desktop-file-validate "$src/resources/desktop/io.github.crosslab.Crosslab.desktop" || fail "desktop file invalid"
appstreamcli validate --no-net --pedantic "$src/resources/desktop/io.github.crosslab.Crosslab.metainfo.xml" \
  >"$out/as.log" 2>&1 || { cat "$out/as.log"; fail "metainfo invalid"; }
"$out/x/usr/bin/crosslab-cli" version | grep -q '^crosslab ' || fail "packaged crosslab-cli does not run"
# The installed engine's own report of its BLAS: OpenBLAS, from the package the .deb depends on.
report=$("$out/x/usr/bin/crosslab-cli" version --json) || fail "packaged crosslab-cli version --json failed"
python3 - "$report" <<'PY' || fail "the installed crosslab-cli does not compute with libopenblas0-openmp: $report"
import json, subprocess, sys
e = json.loads(sys.argv[1])["engine"]
assert e["blas"] == "OpenBLAS" and e["fast_blas"] is True, e
assert e["blas_threading"] == "openmp", e
owner = subprocess.run(["dpkg", "-S", e["blas_library"]], capture_output=True, text=True).stdout
assert owner.startswith("libopenblas0-openmp:"), (e["blas_library"], owner)
print("installed engine BLAS:", e["blas_config"], "threads", e["threads"], "from", owner.split(":")[0])
PY
echo "package ok: $(basename "$deb") ($(wc -l <<<"$files") entries)"
