#!/usr/bin/env bash
# Times a hook through gemkit against the same hook run bare: builds gemkit
# and the bench program into a world-readable folder, then runs the bench
# as the current user and, when root, as uid 65534.
# Usage: bench/hooks/run.sh [runs]   (REF=BIN adds another gemkit binary, an
# earlier commit's, measured in the same rounds; it must be world-readable)
set -euo pipefail
cd "$(dirname "$0")/../.."
n="${1:-200}"
dir="$(mktemp -d /tmp/gemkit-bench-hooks-bin.XXXXXX)"
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
# The shipped binary is static.
CGO_ENABLED=0 go build -o "$dir/gemkit" ./cmd/gemkit
go build -o "$dir/bench" ./bench/hooks
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
"$dir/bench" -n "$n" -gemkit "$dir/gemkit" ${REF:+-ref "$REF"}
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
  echo
  echo "== unprivileged (uid 65534) =="
  (cd "$dir" && HOME="$dir" TMPDIR=/tmp setpriv --reuid=65534 --regid=65534 --clear-groups "$dir/bench" -n "$n" -gemkit "$dir/gemkit" ${REF:+-ref "$REF"})
fi
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
