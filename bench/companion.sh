#!/usr/bin/env bash
# Measures gemkit's IDE companion side by side with the Node reference
# companion (bench/reference) and prints the figures with ratios.
# Needs Go, Node 20 and `npm install --no-save` done in interop/. Extra arguments go to the
# harness, e.g. -quick, -diffs 2000, -gemkit /path/to/gemkit.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d interop/node_modules/@modelcontextprotocol/sdk ]; then
  (cd interop && npm install --no-audit --no-fund --no-save --loglevel=error)
fi
exec go run ./bench/companion "$@"
