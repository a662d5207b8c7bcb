#!/usr/bin/env bash
# Property-based tests of acs-server against the OpenAPI document it serves (Schemathesis):
# every operation is called with generated requests, valid and invalid, and every response must
# be no 5xx and match the document (status, content type, headers, body schema); invalid requests
# must be refused, valid ones accepted, undeclared methods answered 405 with Allow.
#
#   scripts/schemathesis.sh [ST_RUN_OPTION...]     e.g. --max-examples 50, --include-tag threads
#
# Schemathesis comes from PyPI at a pinned version into a venv under .tools/schemathesis (ignored
# by git), installed once and reused; python3 with venv and pip is enough. The server runs from
# this checkout in memory on a free loopback port, with the dev credentials (contract §6) as the
# organization key, an admin token (so the /admin/v1 routes exist and are tested too) and a rate
# limit no run reaches. The run is reproducible: a fixed seed (SCHEMATHESIS_SEED, default 1) and
# a bounded number of examples per operation (SCHEMATHESIS_MAX_EXAMPLES, default 25). Settings
# and the reasons for them: scripts/schemathesis.toml. Exit status: Schemathesis's (0: no failure).
set -euo pipefail

# The one place the version is pinned.
SCHEMATHESIS_VERSION=4.32.5

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.tools/schemathesis/venv"
st="$venv/bin/st"

st_is_pinned() {
  # "st, version 4.32.5"
  [[ -x "$st" ]] && [[ "$("$st" --version 2>/dev/null)" == *", version $SCHEMATHESIS_VERSION" ]]
}

install_schemathesis() {
  st_is_pinned && return 0
  if ! command -v python3 >/dev/null 2>&1; then
    echo "schemathesis: python3 is required to install Schemathesis" >&2
    return 3
  fi
  mkdir -p "$(dirname "$venv")"
  (
    if command -v flock >/dev/null 2>&1; then
      exec 9>"$(dirname "$venv")/install.lock"
      flock 9
    fi
    # Another run may have finished the install while this one waited for the lock.
    st_is_pinned && exit 0
    echo "schemathesis: installing schemathesis==$SCHEMATHESIS_VERSION into $venv" >&2
    [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --disable-pip-version-check -q "schemathesis==$SCHEMATHESIS_VERSION"
    if ! st_is_pinned; then
      echo "schemathesis: $st does not report version $SCHEMATHESIS_VERSION after install" >&2
      exit 1
    fi
  )
}

install_schemathesis

work="$(mktemp -d)"
server_pid=""
receiver_pid=""
cleanup() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  if [[ -n "$receiver_pid" ]] && kill -0 "$receiver_pid" 2>/dev/null; then
    kill -TERM "$receiver_pid" 2>/dev/null || true
    wait "$receiver_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

ACS_ADMIN_TOKEN="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export ACS_ADMIN_TOKEN
# A rate limit no run reaches: 429s would only make the run depend on timing. The agent loop runs
# echo only: a generated agent of a vendor's provider must never call out to that vendor.
# Webhooks may point at loopback (the receiver below) and at whatever URL the run generates.
ACS_AGENT_PROVIDERS=echo "$root/node_modules/.bin/node" "$root/bin/acs-server.ts" start --in-memory --port 0 --rate-limit 10000000 \
  --webhook-allow-private --dev-credentials "$work/dev.json" >"$work/server.log" 2>&1 &
server_pid=$!

# A webhook receiver on loopback that accepts every delivery (200), so that the seeded webhook
# has deliveries to list and retry.
python3 - "$work/receiver.port" >"$work/receiver.log" 2>&1 <<'PY' &
import http.server, sys
class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
open(sys.argv[1], "w").write(str(server.server_address[1]))
server.serve_forever()
PY
receiver_pid=$!

for _ in $(seq 1 600); do
  [[ -s "$work/dev.json" ]] && break
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "schemathesis: acs-server exited before it was ready:" >&2
    cat "$work/server.log" >&2
    exit 1
  fi
  sleep 0.1
done
if [[ ! -s "$work/dev.json" ]]; then
  echo "schemathesis: acs-server wrote no dev credentials within 60 s" >&2
  exit 1
fi
read -r base_url ACS_API_KEY org_id < <(python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); print(c["base_url"], c["api_key"], c["org_id"])' "$work/dev.json")
export ACS_API_KEY
# The seed data, whose ids the configuration reads from dictionary files beside it. Two team graphs
# in the dev organization: each a team with two agents joined by an edge, a thread on the edge,
# and a human on no edge (with whom either agent may be joined); the "doomed" one, with a third
# agent on no edge and an MCP key of it, is for the DELETE routes. An attachment; an organization
# the dev key provisioned, for DELETE /organizations/{org_id} (the dev organization itself is 403
# there); a second organization key to rotate and revoke; a pending access request.
cp "$root/scripts/schemathesis.toml" "$work/schemathesis.toml"
for _ in $(seq 1 100); do [[ -s "$work/receiver.port" ]] && break; sleep 0.1; done
python3 - "$base_url" "$ACS_API_KEY" "$org_id" "$work" <<'PY'
import json, os, re, sys, time, urllib.error, urllib.parse, urllib.request

root, key, org_id, work = sys.argv[1:]
base = root + "/api/v1"

def post(path, body, url=None):
    request = urllib.request.Request((url or base) + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"content-type": "application/json", "x-api-key": key})
    with urllib.request.urlopen(request) as response:
        return json.load(response)

def get(path):
    request = urllib.request.Request(base + path, headers={"x-api-key": key})
    with urllib.request.urlopen(request) as response:
        return json.load(response)

class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None

def session(human):
    """A console session of `human`: its cookie value (from a sign-in link: its page, then its
    button, as a browser posts it) and CSRF token."""
    link = post(f"/humans/{human}/sign-in-links", {})["url"]
    with urllib.request.urlopen(link) as page:
        html = page.read().decode()
        csrf_cookie = page.headers["set-cookie"].split(";")[0]
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', html))
    origin = urllib.parse.urlsplit(link)
    form = urllib.request.Request(f"{origin.scheme}://{origin.netloc}/sign-in/link", data=urllib.parse.urlencode(fields).encode(), method="POST",
                                  headers={"content-type": "application/x-www-form-urlencoded", "cookie": csrf_cookie, "origin": f"{origin.scheme}://{origin.netloc}"})
    opener = urllib.request.build_opener(NoRedirect)
    try:
        opener.open(form)
        raise SystemExit("schemathesis: the sign-in link set no session")
    except urllib.error.HTTPError as redirect:
        cookie = next(line for line in redirect.headers.get_all("set-cookie") if line.startswith("acs_session=")).split(";")[0].split("=", 1)[1]
    me = urllib.request.Request(base + "/me", headers={"cookie": f"acs_session={cookie}"})
    with urllib.request.urlopen(me) as response:
        return cookie, json.load(response)["csrf_token"]

def person_cursor(cookie, sender, thread):
    """The id of an event of a person's stream: its ids are opaque cursors that only the server
    makes, so one is read from the stream (a message from `sender` in the person's `thread`)."""
    request = urllib.request.Request(base + "/me/events/stream", headers={"cookie": f"acs_session={cookie}"})
    with urllib.request.urlopen(request, timeout=30) as stream:
        for line in stream:
            if line.startswith(b": connected"):
                post(f"/threads/{thread}/messages", {"sender_agent_id": sender, "content": "for the person's stream"})
            elif line.startswith(b"id: "):
                return line[4:].decode().strip()
    raise SystemExit("schemathesis: the person's event stream sent no event")

def write(name, values):
    with open(f"{work}/{name}.dict", "w") as file:
        file.writelines(f'"{value}"\n' for value in values)

for prefix in ("", "doomed-"):
    team = post(f"/organizations/{org_id}/teams", {"team_name": f"schemathesis {prefix}team"})["team_id"]
    agents = [post(f"/teams/{team}/agents", {"name": name})["agent_id"] for name in ("ada", "bob")]
    humans = [post(f"/teams/{team}/humans", {"name": name})["human_id"] for name in ("hal", "ivy")]
    edge = post(f"/teams/{team}/edges", {"participants": agents})["edge_id"]
    thread = post(f"/edges/{edge}/threads", {"sender_agent_id": agents[0], "content": "hello"})["thread_id"]
    ids = {"team": [team], "agent": agents, "human": humans, "edge": [edge], "thread": [thread]}
    if prefix:
        loner = post(f"/teams/{team}/agents", {"name": "carl"})["agent_id"]
        ids["agent"] = [loner]
        ids["mcp-key"] = [post(f"/agents/{loner}/mcp-keys", {})["key_id"]]
    else:
        # Participants of the team: a pair of them not joined yet makes an edge (a 201 once).
        ids["participant"] = [*agents, *humans]
        # The person the console's routes run as (cora, with her own edge and thread beside ada),
        # and MCP keys of ada (an external agent of cora's team) for the console to revoke.
        cora = post(f"/teams/{team}/humans", {"name": "cora"})["human_id"]
        cora_edge = post(f"/teams/{team}/edges", {"participants": [cora, agents[0]]})["edge_id"]
        ids["edge"].append(cora_edge)
        ids["thread"].append(post(f"/edges/{cora_edge}/threads", {"sender_agent_id": cora, "content": "hello"})["thread_id"])
        ids["console-agent"] = [agents[0]]
        ids["console-mcp-key"] = [post(f"/agents/{agents[0]}/mcp-keys", {})["key_id"] for _ in range(3)]
        # Agents to create MCP keys for, with room: an agent holds at most 10 active keys (409
        # `mcp_key_limit`), and had ada taken every create, the stateful phase's create → revoke
        # links would start from a 409 and its revokes find nothing (missing test data).
        ids["key-agent"] = [post(f"/teams/{team}/agents", {"name": f"kay{n}"})["agent_id"] for n in range(6)]
        # Tasks ada asks of bob (neither has a provider, so they stay submitted until a request
        # changes them): a cancel or a final status spends one, after which the others still
        # take every change (a final task is 409 `task_final`).
        ids["task"] = [post(f"/edges/{edge}/tasks", {"requester_id": agents[0], "parts": [{"text": f"task {n}"}]})["task_id"] for n in range(8)]
        sessions = {"ACS_SESSION": session(cora), "ACS_SIGN_OUT_SESSION": session(cora)}
        # An id of cora's event stream, to resume it from (`after`).
        cursor = person_cursor(sessions["ACS_SESSION"][0], agents[0], ids["thread"][-1])
    for name, values in ids.items():
        write(prefix + name, values)
write("org", [org_id])
write("doomed-org", [post("/organizations", {"org_name": f"schemathesis doomed organization {n}"})["org_id"] for n in range(3)])
write("attachment", [post("/attachments", {"filename": "a.txt", "content_type": "text/plain", "data_base64": "aGk="})["attachment_id"]])
# Organizations with room for keys (10 at most each), one spare key apiece to rotate or revoke.
key_orgs = [post("/organizations", {"org_name": f"schemathesis keys {n}"})["org_id"] for n in range(3)]
write("key-org", key_orgs)
write("org-key", [post(f"/organizations/{org}/keys", {"name": "schemathesis spare"})["key_id"] for org in key_orgs])
# An organization whose keys are there to be revoked (the last one stays: 409 `last_key`).
revoke_org = post("/organizations", {"org_name": "schemathesis revocations"})["org_id"]
write("revoke-org", [revoke_org])
write("revoke-key", [post(f"/organizations/{revoke_org}/keys", {"name": f"doomed {n}"})["key_id"] for n in range(6)])
write("access-request", [post("/access-requests", {"email": "ops@example.com", "org_name": f"schemathesis applicant {n}", "intended_use": "testing"})["request_id"] for n in range(3)])
# Webhooks to the receiver: one with a delivery (an event it subscribes to, delivered), one to delete.
receiver = "http://127.0.0.1:" + open(f"{work}/receiver.port").read().strip() + "/hook"
webhook = post(f"/organizations/{org_id}/webhooks", {"url": receiver, "events": ["team.*"]})["webhook_id"]
write("webhook", [webhook])
write("doomed-webhook", [post(f"/organizations/{org_id}/webhooks", {"url": receiver, "events": ["team.*"]})["webhook_id"]])
post(f"/organizations/{org_id}/teams", {"team_name": "schemathesis webhook trigger"})
for _ in range(100):
    deliveries = get(f"/webhooks/{webhook}/deliveries")["deliveries"]
    if deliveries:
        break
    time.sleep(0.1)
else:
    raise SystemExit("schemathesis: the seeded webhook got no delivery within 10 s")
write("delivery", [d["delivery_id"] for d in deliveries])
# An operator's session (the admin token signs in), for the one route that shows it.
admin_token = os.environ["ACS_ADMIN_TOKEN"]
sign_in = urllib.request.Request(root + "/admin/v1/sign-in", data=b"{}", method="POST", headers={"content-type": "application/json", "authorization": f"Bearer {admin_token}"})
with urllib.request.urlopen(sign_in) as response:
    operator_cookie = response.headers["set-cookie"].split(";")[0].split("=", 1)[1]
    sessions["ACS_OPERATOR_SESSION"] = (operator_cookie, json.load(response)["csrf_token"])
# The sessions, for the configuration (read from the environment by scripts/schemathesis.sh).
with open(f"{work}/sessions.env", "w") as file:
    file.writelines(f"{name}={cookie}\n{name}_CSRF={csrf}\n" for name, (cookie, csrf) in sessions.items())
    # Where the person's stream resumes from, and its organization (the configuration's streamMyEvents).
    file.write(f"ACS_PERSON_CURSOR={cursor}\nACS_ORG_ID={org_id}\n")
PY
# The console's sessions: ACS_SESSION and its CSRF token for the /me routes, another for sign-out.
set -a
# shellcheck disable=SC1091
source "$work/sessions.env"
set +a
# Idempotency-Keys unique per request, as clients send them (scripts/schemathesis-hooks.py says why).
export SCHEMATHESIS_HOOKS="${SCHEMATHESIS_HOOKS:-$root/scripts/schemathesis-hooks.py}"

echo "schemathesis: testing $base_url/api/v1/openapi.json (schemathesis $SCHEMATHESIS_VERSION)" >&2
status=0
# From the scratch directory: Schemathesis keeps its own state (.schemathesis/) in the working directory.
# Its section rules ("=== 2 warnings in 28.66s ===") are printed as "-- … --": they have the shape
# of a pytest summary, and a log reader that looks for one would take the run for a test run that
# passed no test.
(
  cd "$work"
  "$st" --config-file "$work/schemathesis.toml" run "$base_url/api/v1/openapi.json" \
    --checks all \
    --seed "${SCHEMATHESIS_SEED:-1}" \
    --max-examples "${SCHEMATHESIS_MAX_EXAMPLES:-25}" \
    --workers 1 \
    "$@"
) 2>&1 | sed -E 's/^=+ (.*[^ =]) =+$/-- \1 --/' | tee "$work/run.txt" || status=$?
# One plain closing line with the counts of test cases ("Test cases: G generated, P passed, …" or
# "G generated, F found …"), so that a reader of the log need not find them in the summary.
counts="$(grep -A1 '^Test cases:' "$work/run.txt" | tail -n 1 || true)"
if grep -q 'Warnings fail the run' "$work/run.txt"; then
  echo "schemathesis: a warning failed the run (see WARNINGS above): the document does not state a rule the server enforces, or the run lacks seed data"
fi
if [[ "$counts" =~ ([0-9]+)\ generated,\ ([0-9]+)\ passed ]]; then
  echo "schemathesis: ${BASH_REMATCH[2]} passed, 0 failed"
elif [[ "$counts" =~ ([0-9]+)\ generated,\ ([0-9]+)\ found ]]; then
  echo "schemathesis: $(( BASH_REMATCH[1] - BASH_REMATCH[2] )) passed, ${BASH_REMATCH[2]} failed"
fi
# The stateful phase follows the document's links (every create to the operations that use what it
# created); it must walk at least 80% of them, or the run fails ("API Links: C covered / S selected").
links="$(grep -Eo 'API Links: +[0-9]+ covered / [0-9]+ selected' "$work/run.txt" | tail -n 1 || true)"
if [[ "$links" =~ ([0-9]+)\ covered\ /\ ([0-9]+)\ selected ]]; then
  covered="${BASH_REMATCH[1]}" selected="${BASH_REMATCH[2]}"
  echo "schemathesis: the stateful phase covered $covered of $selected links"
  if (( selected > 0 && covered * 100 < selected * ${SCHEMATHESIS_MIN_LINK_COVERAGE:-80} )); then
    echo "schemathesis: fewer than ${SCHEMATHESIS_MIN_LINK_COVERAGE:-80}% of the links were covered" >&2
    [[ $status -ne 0 ]] || status=1
  fi
elif [[ "$*" != *--phases* ]]; then
  echo "schemathesis: the run printed no link coverage (no stateful phase?)" >&2
  [[ $status -ne 0 ]] || status=1
fi
if [[ $status -ne 0 ]]; then
  # Server-side detail of 5xx (pino level 50 and above: error, fatal) for whoever reads the failure.
  echo "schemathesis: acs-server errors logged during the run:" >&2
  grep -E '"level":(50|60)' "$work/server.log" | tail -n 20 >&2 || echo "(none)" >&2
fi
exit "$status"
