#!/usr/bin/env bash
# Builds the Debian package with CPack and checks what it installs, that its desktop file
# and AppStream metainfo validate, and that its dependencies name the Qt runtime parts.
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
for d in libqt6widgets6 libsqlite3-0 qt6-qpa-plugins; do
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
echo "package ok: $(basename "$deb") ($(wc -l <<<"$files") entries)"
