#!/usr/bin/env bash
# Parses a metrics exposition with Prometheus's own Python client library (prometheus_client), the
# kept parser the metrics tests check acs-server's and the worker's output against (issue 42).
#
#   scripts/prometheus-parse.sh text|openmetrics < EXPOSITION    parse stdin; print its families as JSON
#   scripts/prometheus-parse.sh --install                          install only (print the venv's python)
#
# `text` is the Prometheus text format 0.0.4 (prometheus_client.parser), `openmetrics` OpenMetrics
# 1.0.0 (prometheus_client.openmetrics.parser, which also checks the closing `# EOF`). The output is
# one JSON array: [{"name", "type", "samples": [{"name", "labels", "value"}]}] (a value that is not
# finite as a string: "nan", "inf"). A malformed
# exposition fails the parse: the parser's message on stderr, exit 1.
#
# prometheus_client comes from PyPI at a pinned version into a venv under .tools/prometheus-client
# (ignored by git), installed once and reused, as scripts/schemathesis.sh installs Schemathesis;
# python3 with venv and pip is enough. Exit 3 when python3 is missing.
set -euo pipefail

# The one place the version is pinned.
PROMETHEUS_CLIENT_VERSION=0.26.0

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.tools/prometheus-client/venv"
python="$venv/bin/python"

is_pinned() {
  [[ -x "$python" ]] && [[ "$("$python" -c 'import importlib.metadata as m; print(m.version("prometheus_client"))' 2>/dev/null)" == "$PROMETHEUS_CLIENT_VERSION" ]]
}

install() {
  is_pinned && return 0
  if ! command -v python3 >/dev/null 2>&1; then
    echo "prometheus-parse: python3 is required to install prometheus_client" >&2
    return 3
  fi
  mkdir -p "$(dirname "$venv")"
  (
    # Test files run at once may all ask for it: one installs, the others wait and reuse it.
    if command -v flock >/dev/null 2>&1; then
      exec 9>"$(dirname "$venv")/install.lock"
      flock 9
    fi
    is_pinned && exit 0
    echo "prometheus-parse: installing prometheus_client==$PROMETHEUS_CLIENT_VERSION into $venv" >&2
    [[ -x "$python" ]] || python3 -m venv "$venv"
    "$python" -m pip install --disable-pip-version-check -q "prometheus_client==$PROMETHEUS_CLIENT_VERSION" >&2
    if ! is_pinned; then
      echo "prometheus-parse: $venv does not hold prometheus_client $PROMETHEUS_CLIENT_VERSION after install" >&2
      exit 1
    fi
  )
}

case "${1:-}" in
  --install)
    install
    echo "$python"
    ;;
  text | openmetrics)
    install
    exec "$python" - "$1" 3<&0 <<'PY'
import json, math, os, sys

fmt = sys.argv[1]
if fmt == "openmetrics":
    from prometheus_client.openmetrics.parser import text_string_to_metric_families
else:
    from prometheus_client.parser import text_string_to_metric_families

text = os.fdopen(3).read()
try:
    families = [
        {
            "name": family.name,
            "type": family.type,
            "samples": [{"name": s.name, "labels": s.labels, "value": s.value if math.isfinite(s.value) else str(s.value)} for s in family.samples],
        }
        for family in text_string_to_metric_families(text)
    ]
except Exception as error:  # the parser raises ValueError and others for malformed input
    print(f"prometheus-parse: the {fmt} exposition does not parse: {error}", file=sys.stderr)
    sys.exit(1)
json.dump(families, sys.stdout, allow_nan=False)
PY
    ;;
  *)
    echo "usage: scripts/prometheus-parse.sh text|openmetrics < EXPOSITION, or --install" >&2
    exit 2
    ;;
esac
