#!/usr/bin/env bash
# Verifies a signed webhook request, read as JSON from stdin
# ({secret, headers, body}), with the standardwebhooks npm package, an
# independent implementation of the Standard Webhooks signature.
set -euo pipefail
dir=$(dirname "$0")/webhook-verify
if [ ! -d "$dir/node_modules/standardwebhooks" ]; then
  (cd "$dir" && npm ci --silent --no-audit --no-fund) >&2
fi
exec node "$dir/verify.mjs"
