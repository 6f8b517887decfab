#!/usr/bin/env bash
# SFTP push/pull throughput of crosslab-cli against a real sshd on loopback, and the
# same file through OpenSSH's scp for comparison. Prints one JSON line per figure.
# Usage: bench/venues_transfer.sh [BUILD_DIR] [MEGABYTES]
set -euo pipefail
build=${1:-build}
mb=${2:-256}
cli=$(realpath "$build/app/crosslab-cli")
work=$(mktemp -d)
trap 'kill $(cat "$work/sshd.pid" 2>/dev/null) 2>/dev/null || true; rm -rf "$work"' EXIT
[ "$(id -u)" -eq 0 ] && mkdir -p /run/sshd
ssh-keygen -q -t ed25519 -N '' -f "$work/host"
ssh-keygen -q -t ed25519 -N '' -f "$work/user"
cp "$work/user.pub" "$work/authorized_keys"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 22222)
cat > "$work/sshd_config" <<CFG
ListenAddress 127.0.0.1
HostKey $work/host
PidFile $work/sshd.pid
AuthorizedKeysFile $work/authorized_keys
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
Subsystem sftp internal-sftp
CFG
/usr/sbin/sshd -f "$work/sshd_config" -p "$port"
sleep 1
export CROSSLAB_HOME="$work/home"
"$cli" box add bench --host 127.0.0.1 --port "$port" --user "$(id -un)" --key "$work/user" >/dev/null
"$cli" box exec bench --accept-new -- true
head -c "${mb}M" /dev/urandom > "$work/blob"
t0=$(date +%s.%N); "$cli" box push bench "$work/blob" "$work/remote.bin" 2>/dev/null; t1=$(date +%s.%N)
t2=$(date +%s.%N); "$cli" box pull bench "$work/remote.bin" "$work/back.bin" 2>/dev/null; t3=$(date +%s.%N)
cmp -s "$work/blob" "$work/back.bin" || { echo "round trip differs" >&2; exit 1; }
t4=$(date +%s.%N)
scp -q -P "$port" -i "$work/user" -o StrictHostKeyChecking=no -o UserKnownHostsFile="$work/kh" "$work/blob" "$(id -un)@127.0.0.1:$work/scp.bin"
t5=$(date +%s.%N)
awk -v mb="$mb" -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" -v e="$t4" -v f="$t5" 'BEGIN {
  printf "{\"figure\": \"crosslab push\", \"MB\": %d, \"MB_per_s\": %.1f}\n", mb, mb * 1.048576 / (b - a);
  printf "{\"figure\": \"crosslab pull\", \"MB\": %d, \"MB_per_s\": %.1f}\n", mb, mb * 1.048576 / (d - c);
  printf "{\"figure\": \"openssh scp push\", \"MB\": %d, \"MB_per_s\": %.1f}\n", mb, mb * 1.048576 / (f - e);
}'
