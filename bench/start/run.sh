#!/usr/bin/env bash
# bench/start/run.sh: the instructions `gemkit --version` executes (every
# thread, the Go runtime's start included), beside a bare Go program that
# prints one line, built by the same toolchain in the same run. The count
# is valgrind's (lackey's guest instructions): unlike wall time it does not
# move with the machine's load. Issue 47's bound: 5 M for gemkit.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install valgrind)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/gemkit" ./cmd/gemkit
mkdir "$tmp/hello"
cat >"$tmp/hello/main.go" <<'GO'
package main

import "fmt"

func main() { fmt.Println("hello") }
GO
(cd "$tmp/hello" && go mod init hello >/dev/null 2>&1 && go build -o "$tmp/hello-bin" .)
count() {
  valgrind --tool=lackey --basic-counts=yes "$@" 2>&1 >/dev/null | awk -F: '/guest instrs:/{gsub(/[ ,]/,"",$2); print $2; exit}'
}
g=$(count "$tmp/gemkit" --version)
h=$(count "$tmp/hello-bin")
printf 'gemkit --version: %s instructions\nbare Go hello:    %s instructions\ngemkit over bare: %s\n' "$g" "$h" "$((g - h))"
