#!/usr/bin/env bash
# Lists and calls the MCP endpoint's tools with the official MCP Inspector's CLI mode, as a user
# of another MCP client would, against a live in-memory acs-server (scripts/mcp-inspector.ts
# starts it, makes a team for the agent and runs each call).
#
#   scripts/mcp-inspector.sh
#
# The Inspector comes from npm at a pinned version into .tools/mcp-inspector (ignored by git),
# installed once and reused (it is a tool, not a dependency of the project: it brings a web UI's
# worth of packages). The project's Node 24 runs it. Exit status: 0 when every check passed.
set -euo pipefail

# The one place the version is pinned.
INSPECTOR_VERSION=2.12.0

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="$root/.tools/mcp-inspector"
package="$prefix/node_modules/@modelcontextprotocol/inspector/package.json"
export PATH="$root/node_modules/.bin:$PATH"

inspector_is_pinned() {
  [[ -f "$package" ]] && [[ "$(node -p "require(process.argv[1]).version" "$package" 2>/dev/null)" == "$INSPECTOR_VERSION" ]]
}

if ! inspector_is_pinned; then
  mkdir -p "$prefix"
  (
    if command -v flock >/dev/null 2>&1; then
      exec 9>"$prefix/install.lock"
      flock 9
    fi
    # Another run may have finished the install while this one waited for the lock.
    inspector_is_pinned && exit 0
    echo "mcp-inspector: installing @modelcontextprotocol/inspector@$INSPECTOR_VERSION into $prefix" >&2
    # Its own package.json, so npm does not climb up to the project's.
    [[ -f "$prefix/package.json" ]] || echo '{"private": true}' >"$prefix/package.json"
    npm install --prefix "$prefix" --no-audit --no-fund --no-save "@modelcontextprotocol/inspector@$INSPECTOR_VERSION" >&2
    if ! inspector_is_pinned; then
      echo "mcp-inspector: $package does not report version $INSPECTOR_VERSION after install" >&2
      exit 1
    fi
  )
fi

exec node "$root/scripts/mcp-inspector.ts" "$prefix/node_modules/.bin/inspector"
