#!/usr/bin/env bash
# Measures gemkit's IDE client side by side with the real Gemini CLI's
# client code (IdeClient from @google/gemini-cli-core) in the same run:
# choosing a discovery file among 200, and connect → first context.
# Needs Go, Node 20 and `npm install --no-save` done in interop/. Extra arguments go to the
# harness, e.g. -quick, -files 500, -connects 50, -gemkit /path/to/gemkit.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d interop/node_modules/@google/gemini-cli-core ]; then
  (cd interop && npm install --no-audit --no-fund --no-save --loglevel=error)
fi
exec go run ./bench/client "$@"
