#!/usr/bin/env bash
# Starts a private Docker engine (Debian's docker.io, as root) for swerl's Docker tests and prints
# the DOCKER_HOST to export. Everything it owns lives under one directory: the socket, the
# data-root (images, layers), the exec-root (runtime state), the pid file and the log.
#
#   export DOCKER_HOST="$(scripts/start-dockerd.sh DIR)"   # start, or reuse one already answering
#   scripts/start-dockerd.sh --stop DIR                    # stop it (the data-root is kept)
#
# The engine runs without iptables, masquerading or the default bridge (--bridge=none): machines
# like CI runners and nested containers often cannot change the host's firewall, and the sandbox
# runs containers with networking off anyway. Storage is overlay2.
set -euo pipefail

usage() {
  echo "usage: $0 [--stop] DIR" >&2
  exit 2
}

stop=0
if [ "${1:-}" = "--stop" ]; then
  stop=1
  shift
fi
[ $# -eq 1 ] || usage
mkdir -p "$1"
dir="$(cd "$1" && pwd)"
sock="$dir/docker.sock"
pidfile="$dir/dockerd.pid"
log="$dir/dockerd.log"
host="unix://$sock"

# The socket of containerd that dockerd starts sits under the exec-root; a Unix socket path has
# at most 107 bytes.
if [ ${#dir} -gt 60 ]; then
  echo "start-dockerd: $dir is too long for the engine's sockets (60 characters at most)" >&2
  exit 2
fi

answers() {
  docker -H "$host" version --format '{{.Server.Version}}' >/dev/null 2>&1
}

running_pid() {
  [ -f "$pidfile" ] || return 1
  local pid
  pid="$(cat "$pidfile")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

if [ "$stop" = 1 ]; then
  if pid="$(running_pid)"; then
    kill -TERM "$pid"
    # dockerd stops its containers (10 s grace each) and containerd before it exits.
    for _ in $(seq 300); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "start-dockerd: dockerd $pid did not stop in 30 s; killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$pidfile"
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  echo "start-dockerd: dockerd needs root" >&2
  exit 1
fi
command -v dockerd >/dev/null || {
  echo "start-dockerd: dockerd not found (apt-get install docker.io)" >&2
  exit 1
}

# Idempotent: an engine that already answers on this socket is reused.
if answers; then
  echo "$host"
  exit 0
fi
# A dockerd of ours that runs but does not answer yet may still be starting; otherwise a stale
# pid file or socket from a killed run is removed (dockerd refuses to start over its pid file).
if ! running_pid >/dev/null; then
  rm -f "$pidfile" "$sock"
  mkdir -p "$dir/data" "$dir/exec"
  # setsid: the engine outlives the shell that started it (CI stops it with --stop).
  setsid dockerd \
    -H "$host" \
    --data-root "$dir/data" \
    --exec-root "$dir/exec" \
    --pidfile "$pidfile" \
    --iptables=false --ip-masq=false --bridge=none \
    --storage-driver overlay2 \
    >>"$log" 2>&1 </dev/null &
fi

for _ in $(seq 300); do
  if answers; then
    echo "$host"
    exit 0
  fi
  sleep 0.1
done
echo "start-dockerd: the engine did not answer on $sock within 30 s; the end of $log:" >&2
tail -n 30 "$log" >&2 || true
exit 1
