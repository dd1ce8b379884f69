#!/usr/bin/env bash
# Measures the tool sandbox's cost: builds gemkit (whose re-executed copy
# sets up the sandbox) and the bench program into a world-readable folder,
# then runs the bench as the current user and, when root, as uid 65534.
# Usage: bench/sandbox/run.sh [iterations]
set -euo pipefail
cd "$(dirname "$0")/../.."
n="${1:-300}"
dir="$(mktemp -d /tmp/gemkit-bench-bin.XXXXXX)"
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
# The shipped binary is static; a dynamically linked one starts ~1 ms slower.
CGO_ENABLED=0 go build -o "$dir/gemkit" ./cmd/gemkit
go build -o "$dir/bench" ./bench/sandbox
"$dir/bench" -n "$n" -gemkit "$dir/gemkit"
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
  echo
  echo "== unprivileged (uid 65534) =="
  (cd "$dir" && HOME="$dir" TMPDIR=/tmp setpriv --reuid=65534 --regid=65534 --clear-groups "$dir/bench" -n "$n" -gemkit "$dir/gemkit")
fi
