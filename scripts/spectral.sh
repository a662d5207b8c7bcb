#!/usr/bin/env bash
# Lints the OpenAPI document acs-server serves with Spectral (the pinned @stoplight/spectral-cli
# devDependency) and the committed ruleset .spectral.yaml (spectral:oas; a rule turned off says
# why there). The document is the one the server serves: scripts/write-openapi.ts starts an
# in-memory server (with the admin routes), fetches /api/v1/openapi.json and writes it to a
# scratch file. Fails on any error or warning.
#
#   scripts/spectral.sh            needs `npm ci` first; no network, no database
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The project's Node 24 (the `node` devDependency) runs both: first on PATH, as under npm scripts.
export PATH="$root/node_modules/.bin:$PATH"
node "$root/scripts/write-openapi.ts" "$work/openapi.json"
spectral lint "$work/openapi.json" --ruleset "$root/.spectral.yaml" --fail-severity warn
