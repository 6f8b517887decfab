#!/usr/bin/env bash
# Before a build: says plainly when the disk looks too full for it, instead of a compiler's
# "error writing to /tmp/cc….s: No space left on device" minutes into the build.
#   check-disk.sh BUILD_DIR NEED_GIB
# NEED_GIB: what a full build with its tests takes. What BUILD_DIR already holds counts as
# done (an incremental build needs far less), so this warns and goes on; it never stops a build
# (the Makefile ignores its exit status, should df or du fail).
set -euo pipefail
dir=${1:-build}
need_gib=${2:-4}
probe=$dir
while [ ! -d "$probe" ]; do probe=$(dirname "$probe"); done
free_kib() { df -Pk "$1" | awk 'NR == 2 { print $4 }'; }
built_kib=0
if [ -d "$dir" ]; then built_kib=$(du -sk "$dir" | cut -f1); fi
need_kib=$(( need_gib * 1024 * 1024 - built_kib ))
have_kib=$(free_kib "$probe")
if (( need_kib > 0 && have_kib < need_kib )); then
  echo "crosslab: warning: $(( have_kib / 1024 )) MiB free on the disk of $dir; a full build" \
       "with tests takes about $need_gib GiB there. The build may stop with 'No space left on device'." >&2
fi
tmp=${TMPDIR:-/tmp}
tmp_kib=$(free_kib "$tmp")
if (( tmp_kib < 512 * 1024 )); then
  echo "crosslab: warning: $(( tmp_kib / 1024 )) MiB free in $tmp, where the compiler and the" \
       "tests write their temporary files; 512 MiB or more is safe." >&2
fi
