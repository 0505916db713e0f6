#!/usr/bin/env bash
# Validates an OpenAPI document with @apidevtools/swagger-parser, an independent implementation.
set -euo pipefail
spec=$(realpath "$1")
dir=$(dirname "$0")/openapi-lint
if [ ! -d "$dir/node_modules/@apidevtools/swagger-parser" ]; then
  (cd "$dir" && npm ci --silent --no-audit --no-fund)
fi
node "$dir/validate.mjs" "$spec"
