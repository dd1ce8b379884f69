#!/bin/sh
# findTodos: lists TODO comments under --dir as file:line:text.
set -eu
dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir="$2"; shift 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
if [ -z "$dir" ]; then
  echo "usage: find_todos.sh --dir DIR" >&2
  exit 2
fi
grep -rnI --exclude-dir=.git 'TODO' -- "$dir" || true
