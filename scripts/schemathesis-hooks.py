"""Schemathesis hooks of scripts/schemathesis.sh (loaded through SCHEMATHESIS_HOOKS).

Sign-out: `POST /me/sign-out` ends the session it is sent with, and every other console route runs
with one seeded session (ACS_SESSION). Sign-out is sent with a second session of its own
(ACS_SIGN_OUT_SESSION; its CSRF token is the operation's header in the configuration), so that
it does not end the run's.

Participants of an edge: the configuration draws each of the two from the seeded participants
(participant.dict, in the working directory), and Schemathesis does not check `uniqueItems` again
after such draws, so it would send the same participant twice as a valid request. The second is
then replaced by another seeded participant, so that the request is what the schema says it is.

Idempotency-Key: a client sends one key per request it means (contract section 1), and the
server answers a key reused with another body 422 `idempotency_key_mismatch`. Schemathesis draws
the header from its schema (any 1-255 characters), so its boundary cases send the same few values
("0", the longest string) with every body of an operation, and most of an operation's requests
were refused for a reason of the test, not of the data. So each key is given its own request: a
key already sent on the same route and path with another body is replaced, before the call, by
one of the same length (at least 4) not yet sent there; a repeat of the same request keeps its key (a replay,
which the server answers with the stored response). Keys outside 1-255 characters are left alone:
those cases test the refusal.
"""

import json
import os
import secrets
import string

import schemathesis

_ALPHABET = string.ascii_letters + string.digits
# (method, path) -> {key sent: the body it was sent with}
_sent: dict[tuple[str, str], dict[str, str]] = {}
# (method, path, generated key, body) -> the key sent for it, so that a repeat is a replay
_given: dict[tuple[str, str, str, str], str] = {}


def _body_of(case) -> str:
    try:
        return json.dumps(case.body, sort_keys=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return repr(case.body)


def _fresh(length: int, taken: dict[str, str]) -> str:
    # A key of 1-3 characters has too few values for every body a boundary run sends on one route:
    # the replacement is longer then (the length itself was tested by the key's first request).
    length = length if length >= 4 else 16
    candidate = ""
    for _ in range(16):
        candidate = "".join(secrets.choice(_ALPHABET) for _ in range(length))
        if candidate not in taken:
            break
    return candidate


@schemathesis.hook
def before_call(context, case, kwargs):
    headers = case.headers
    if not headers:
        return
    name = next((h for h in headers if h.lower() == "idempotency-key"), None)
    if name is None:
        return
    key = headers[name]
    if not isinstance(key, str) or not 1 <= len(key) <= 255:
        return
    scope = (case.method.upper(), str(case.formatted_path))
    body = _body_of(case)
    taken = _sent.setdefault(scope, {})
    given = _given.get((*scope, key, body))
    if given is None:
        given = key if taken.get(key, body) == body else _fresh(len(key), taken)
        _given[(*scope, key, body)] = given
        taken.setdefault(given, body)
    headers[name] = given


def _participants() -> list[str]:
    try:
        with open(os.path.join(os.getcwd(), "participant.dict")) as file:
            return [line.strip().strip('"') for line in file if line.strip()]
    except OSError:
        return []


_SEEDED = _participants()


@schemathesis.hook("before_call")
def distinct_participants(context, case, kwargs):
    body = case.body
    if not (isinstance(body, dict) and isinstance(body.get("participants"), list) and len(body["participants"]) == 2):
        return
    first, second = body["participants"]
    if first == second and first in _SEEDED and len(_SEEDED) > 1:
        body["participants"][1] = secrets.choice([p for p in _SEEDED if p != first])


@schemathesis.hook("before_call")
def own_session_for_sign_out(context, case, kwargs):
    if case.method.upper() != "POST" or not str(case.path).endswith("/me/sign-out"):
        return
    cookie = os.environ.get("ACS_SIGN_OUT_SESSION")
    # Only where the run's session is sent: a case without one tests the refusal.
    if cookie and case.cookies is not None and "acs_session" in case.cookies:
        case.cookies["acs_session"] = cookie
