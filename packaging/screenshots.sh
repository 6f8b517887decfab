#!/usr/bin/env bash
# Renders every panel of the real window on a demo lab under Xvfb, at 1024x700 and
# 1920x1080, into docs/screenshots/<panel>-<W>x<H>.png (the README shows them).
#   packaging/screenshots.sh BUILD_DIR [LAB]
# Without LAB a quick demo lab is built in a temporary folder (crosslab-cli demo --quick).
set -euo pipefail
build=${1:?usage: screenshots.sh BUILD_DIR [LAB]}
lab=${2:-}
out=docs/screenshots
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -z "$lab" ]; then
  lab=$tmp/demo
  "$build/app/crosslab-cli" demo "$lab" --quick >/dev/null
fi
mkdir -p "$out"
panels=(venues training benchmarks review ledger)
for size in 1024x700 1920x1080; do
  for i in "${!panels[@]}"; do
    file=$out/${panels[$i]}-$size.png
    # A settings folder of its own: no saved geometry or panel from the user's sessions.
    XDG_CONFIG_HOME=$tmp/config CROSSLAB_HOME=$tmp/home \
      xvfb-run -a -s "-screen 0 ${size}x24" "$build/app/crosslab" "$lab" \
      --panel $((i + 1)) --size "$size" --screenshot "$file" 2>"$tmp/log" ||
      { cat "$tmp/log" >&2; exit 1; }
    echo "$file"
  done
done
