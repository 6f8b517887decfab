#!/usr/bin/env bash
# Starts the crosslab GUI. With no display (a server, CI, a container) it runs under
# xvfb-run. CROSSLAB_SCREENSHOT=FILE saves a screenshot of the screen and quits.
set -euo pipefail
bin=${1:?usage: run-gui.sh PATH/TO/crosslab [ARGS]}
shift
args=("$@")
if [ -n "${CROSSLAB_SCREENSHOT:-}" ]; then
  mkdir -p "$(dirname "$CROSSLAB_SCREENSHOT")"
  args+=(--screenshot "$CROSSLAB_SCREENSHOT")
fi
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
  echo "run-gui: no display; running under Xvfb (set DISPLAY to use a real one)" >&2
  exec xvfb-run -a -s "-screen 0 1280x800x24" "$bin" "${args[@]}"
fi
exec "$bin" "${args[@]}"
