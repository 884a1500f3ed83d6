"""openapi.yaml and the real server agree: schemathesis against gunicorn, a real RQ worker
running the analyses.

* ``test_api``: every operation, with the examples, coverage and fuzzing phases, positive and
  negative data, and the checks: no 5xx, every status code documented, body, headers and
  content type as documented, schema-valid requests accepted and schema-violating ones refused,
  every error an RFC 9457 problem (:func:`problem_details`), every ``Location`` of a 201/202
  (or 200) found by a GET (:func:`location_found`).
* ``test_stateful``: schemathesis's state machine following the links of openapi.yaml (and
  those it infers) from created games and analyses, with the same checks.
* ``test_location_headers_resolve`` and ``test_event_streams_match_the_event_schema`` check
  the two things the fuzzing reaches least: each resource a ``Location`` names is the one just
  created, and every event of a live stream (and of resumed ones) matches the
  ``GameStreamEvent`` schema, its ``data`` the schema of its kind.

Deterministic: Hypothesis is derandomized (``derandomize=True``, no example database), the
games the cases aim at are made the same way each run, and the few liberties taken with the
generated data (see :func:`_aim`) depend on the data alone.

A schema-valid request may still be refused with a 422 for what a schema cannot say (an
illegal move, a serial beyond the game's, a limit of this server, a line string of the wrong
length, a ``core`` that cannot search the position):
:func:`refused_only_for_what_a_schema_cannot_say` allows exactly those reasons.
"""

from __future__ import annotations

import json
import threading
import time
import zlib
from pathlib import Path
from urllib.parse import urljoin

import hypothesis
import pytest
import requests
import schemathesis
import yaml
from hypothesis import HealthCheck, Phase, settings
from hypothesis.errors import Flaky, FlakyFailure
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012
from schemathesis.core.failures import FailureGroup
from schemathesis.core.parameters import ParameterLocation

from boxfish import engine

ROOT = Path(__file__).resolve().parents[2]
SPEC_PATH = ROOT / "openapi.yaml"
PROBLEM = "application/problem+json"
TIMEOUT_S = 10
STREAM_TIMEOUT_S = 5

CONFIG = schemathesis.Config.from_dict({
    "generation": {"mode": "all", "deterministic": True, "database": "none"},
    "checks": {
        # A 422 is a schema-valid request refused for what the schema cannot say (an illegal
        # move, a limit of the server, ...): refused_only_for_what_a_schema_cannot_say holds
        # it to exactly those reasons.
        "positive_data_acceptance": {
            "expected-statuses": ["2xx", "3xx", 401, 403, 404, 409, 422, 429, "5xx"]},
        # Schemathesis's defaults, and what gunicorn answers before the app sees a request: a
        # request line or header past its caps (a long generated query string) is 414 or 431
        "negative_data_rejection": {
            "expected-statuses": [400, 401, 403, 404, 405, 406, 409, 414, 415, 422, 428, 429,
                                  431, "5xx"]},
        # replaced by no_server_error_but_documented_overload: a server that holds its
        # maximum of event streams answers 503 (documented), which is no server error
        "not_a_server_error": {"enabled": False},
    },
    "request-timeout": TIMEOUT_S,
    # An event stream is read up to its first event (or the request timeout): an open game's
    # stream never ends. test_event_streams_match_the_event_schema reads whole streams.
    # STREAM_TIMEOUT_S is also how long the headers may take: a stream with no event to send
    # (after= an open game's last serial) is read that long.
    "operations": [{"include-operation-id": "streamEvents", "max-stream-events": 1,
                    "request-timeout": STREAM_TIMEOUT_S}],
})
schema = schemathesis.openapi.from_path(SPEC_PATH, config=CONFIG)
SPEC = yaml.safe_load(SPEC_PATH.read_text())

#: What a request that got no answer raises: the connection refused, reset or dropped
#: mid-answer, or no answer in time (requests' errors, and the builtins schemathesis's
#: transport raises while reading a stream).
TRANSPORT_ERRORS = (requests.exceptions.ConnectionError, requests.exceptions.Timeout,
                    requests.exceptions.ChunkedEncodingError, ConnectionError, TimeoutError)

#: Scenarios (chains of calls) of the stateful test, and its first seed.
STATEFUL_SCENARIOS = 50
STATEFUL_SEED = 20_240_601

#: 422 reasons that a schema cannot foresee (see the module docstring); ``core_unavailable``:
#: ``"core": "c"`` for a game or board size the compiled core does not take.
#: ``invalid_url`` / ``private_address``: a webhook or callback URL whose host does not resolve,
#: or resolves to an address that is not public.
SEMANTIC_REASONS = {"limit_exceeded", "invalid_position", "out_of_range",
                    "idempotency_key_reused", "core_unavailable", "invalid_url",
                    "private_address"}


# -- custom checks -----------------------------------------------------------------------------


def _body(response) -> object:
    try:
        return json.loads(response.content)
    except ValueError:
        return None


def problem_details(ctx, response, case) -> None:
    """Every error (4xx, 5xx) is an RFC 9457 problem whose ``status`` is the answer's; but a
    page's (tag ``pages``: HTML for people, e.g. the 404 page of an unknown game) is HTML."""
    if response.status_code < 400:
        return
    if "pages" in (case.operation.definition.raw.get("tags") or []):
        ctype = (response.headers.get("content-type") or [""])[0].split(";")[0].strip()
        assert ctype in ("text/html", PROBLEM), f"a page's error answered with {ctype!r}"
        return
    ctype = (response.headers.get("content-type") or [""])[0].split(";")[0].strip()
    assert ctype == PROBLEM, (
        f"{response.status_code} answered with Content-Type {ctype!r}, not {PROBLEM}")
    body = _body(response)
    assert isinstance(body, dict), "a problem is a JSON object"
    for field in ("type", "title", "detail"):
        assert isinstance(body.get(field), str), f"problem member {field!r} missing"
    assert body.get("status") == response.status_code, (
        f"problem status {body.get('status')!r} on a {response.status_code} answer")


def location_found(ctx, response, case) -> None:
    """The ``Location`` of a 201 or 202 (or of a 200 that has one) is found by a GET (with the
    request's ``Authorization``: a webhook is read with the game's write token)."""
    location = (response.headers.get("location") or [None])[0]
    if response.status_code not in (200, 201, 202) or (
            location is None and response.status_code == 200):
        return
    assert location, f"{response.status_code} without a Location header"
    url = urljoin(response.request.url, location)
    auth = {k: v for k, v in (case.headers or {}).items() if k.lower() == "authorization"}
    got = requests.get(url, headers=auth, timeout=TIMEOUT_S)
    assert got.status_code == 200, f"GET {location} (the Location) answered {got.status_code}"


def refused_only_for_what_a_schema_cannot_say(ctx, response, case) -> None:
    """A schema-valid request is refused with a 422 only for what a schema cannot say: an
    illegal move, or a ``reason`` in :data:`SEMANTIC_REASONS`; never as malformed
    (``invalid_request``, a bad header or a wrong type)."""
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code != 422:
        return
    body = _body(response) or {}
    if str(body.get("type", "")).endswith((":illegal-move", ":invalid-record")):
        return  # an illegal move, or a record's text that is no legal game
    assert body.get("reason") in SEMANTIC_REASONS, (
        f"a schema-valid request refused as {body.get('reason')!r}: {body.get('detail')}")


#: The 5xx answers that are no server error: overload, documented, with a Retry-After.
OVERLOAD_TYPES = {"urn:boxfish:problem:too-many-streams"}


def no_server_error_but_documented_overload(ctx, response, case) -> None:
    """No 5xx, except a 503 for overload (the event streams' slots all taken: the checks
    open and drop streams faster than the server's keep-alive notices them closed), which
    must say so as a problem with ``Retry-After``."""
    if response.status_code < 500:
        return
    body = _body(response) or {}
    assert response.status_code == 503 and body.get("type") in OVERLOAD_TYPES, (
        f"server error {response.status_code}: {body}")
    assert response.headers.get("retry-after"), "a 503 without Retry-After"


CHECKS = [problem_details, location_found, refused_only_for_what_a_schema_cannot_say,
          no_server_error_but_documented_overload]


@schema.hook
def filter_failure(context, failure, case, response) -> bool:
    """The stateful check that a created resource is found follows POST /v1/games to
    GET /v1/games/{id}/index; an Extreme Tic-Tac-Toe game has no move index, and says so
    (404, ``no-index``, as openapi.yaml documents and test_games pins). Only that is let
    through: a game that is not found (``not-found``) still fails."""
    if type(failure).__name__ == "EnsureResourceAvailability":
        body = _body(response) or {}
        return body.get("type") != "urn:boxfish:problem:no-index"
    return True


# -- the games the cases aim at ----------------------------------------------------------------


def _post(base: str, path: str, body=None, headers=None) -> requests.Response:
    return requests.post(base + path, json=body, headers=headers, timeout=TIMEOUT_S)


def _new_game(base: str, body: dict) -> tuple[str, str]:
    resp = _post(base, "/v1/games", body)
    assert resp.status_code == 201, resp.text
    return resp.json()["id"], resp.json()["write_token"]


def _play(base: str, game_id: str, token: str, moves) -> None:
    auth = {"Authorization": f"Bearer {token}"}
    for move in moves:
        resp = _post(base, f"/v1/games/{game_id}/moves", {"move": list(move)}, auth)
        assert resp.status_code == 201, resp.text


def _full_game(name: str, **params) -> list:
    """The moves of a whole game, the first legal move each time."""
    state = engine.load_game(name, **params).new_state()
    while not state.is_terminal():
        state.play(state.legal_moves()[0])
    return [list(m) for m in state.history]


class Games:
    """Games made the same way each run: ``open`` ones (moves can be appended, fresh or played
    a little) and ``finished`` ones (their event streams end)."""

    def __init__(self, base: str) -> None:
        self.tokens: dict[str, str] = {}
        self.open: list[str] = []
        self.finished: list[str] = []
        for body, moves, done in (
                ({"game": "dots-and-boxes", "width": 3, "height": 3}, [], False),
                ({"game": "dots-and-boxes", "width": 2, "height": 2}, [[1, 1, 1], [1, 2, 1]],
                 False),
                ({"game": "extreme-tictactoe"}, [], False),
                ({"game": "extreme-tictactoe"}, [[0, 0], [1, 1], [5, 5]], False),
                ({"game": "dots-and-boxes", "width": 1, "height": 2},
                 _full_game("dots-and-boxes", width=1, height=2), True),
                ({"game": "extreme-tictactoe"}, _full_game("extreme-tictactoe"), True)):
            game_id, token = _new_game(base, body)
            _play(base, game_id, token, moves)
            self.tokens[game_id] = token
            (self.finished if done else self.open).append(game_id)


def _pick(key: str, choices: list[str]) -> str:
    return choices[zlib.crc32(key.encode()) % len(choices)]


def _whole_to_int(value):
    """Integral floats (``2.0``) as ints, all through a JSON value."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= 2**53:
        return int(value)
    if isinstance(value, list):
        return [_whole_to_int(v) for v in value]
    if isinstance(value, dict):
        return {k: _whole_to_int(v) for k, v in value.items()}
    return value


def _aim(case, games: Games | None) -> None:
    """Aim ``case`` at real games, keep it cheap, and write its integers as integers.

    * Unless ``games`` is None, a game id in the path is replaced by one of ``games`` four
      times in five (chosen by the generated id): ``finished`` games for event streams (an
      open game's stream never ends), any for the rest; an append (or a webhook request)
      that carries an ``Authorization`` carries the game's write token six times in seven
      (one that carries none stays without). A negative (schema-violating) path is left alone.
    * ``time_ms`` beyond 20 (and within the server's 10 s) is 20, the engine seat's
      (``engine.time_ms`` of a new game) too, ``?wait=`` beyond 0.5 s
      is 0.5 s: the values stay valid and the run stays short (one worker serves all).
    * JSON Schema counts ``2.0`` as an integer; this service refuses it on purpose (ints are
      strict; test_games pins ``height: 2.0`` -> 422) and openapi.yaml says so in words, which
      is all a schema can do. So the integral floats schemathesis generates for integers are
      sent as integers.
    """
    op = case.operation.path
    params = case.path_parameters or {}
    negative_path = case.meta is not None and case.meta.is_negative_at(ParameterLocation.PATH)
    if games is not None and op.startswith("/v1/games/{id}") and \
            isinstance(params.get("id"), str) and not negative_path:
        key = params["id"]
        if zlib.crc32(key.encode()) % 5:
            pool = games.finished if op.endswith("/events") else games.open + games.finished
            game_id = _pick(key, pool)
            case.path_parameters = {**params, "id": game_id}
            headers = case.headers or {}
            auth = [k for k in headers if k.lower() == "authorization"]
            if auth and (op.endswith("/moves") or "/webhooks" in op) and \
                    zlib.crc32(key.encode()) % 7:
                case.headers = {**headers, auth[0]: f"Bearer {games.tokens[game_id]}"}
    if isinstance(case.body, dict):
        body = _whole_to_int(case.body)
        for limits in (body, body.get("engine")):
            time_ms = limits.get("time_ms") if isinstance(limits, dict) else None
            if isinstance(time_ms, int) and not isinstance(time_ms, bool) and \
                    20 < time_ms <= 10_000:
                limits["time_ms"] = 20
        case.body = body
    query = case.query or {}
    wait = query.get("wait")
    if isinstance(wait, (int, float)) and not isinstance(wait, bool) and 0.5 < wait <= 10:
        case.query = {**query, "wait": 0.5}


@pytest.fixture(scope="module")
def games(server_url, rq_worker) -> Games:
    return Games(server_url)


# -- the tests ---------------------------------------------------------------------------------


@schema.parametrize()
@settings(max_examples=300, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
def test_api(case, server_url, games):
    _aim(case, games)
    case.call_and_validate(base_url=server_url, additional_checks=CHECKS)


def test_stateful(server_url, rq_worker):
    """Schemathesis's state machine: chains of calls along the links of openapi.yaml (and the
    ones it infers: a created game's id into every /v1/games/{id} operation, an analysis's
    into GET /v1/analyses/{id}), with the same checks; the ids are the linked ones (no
    aiming), and appends to a game created in the chain carry its write token.

    Which rules a chain can take next depends on the server's answers (a job done in time is
    a 200, else a 202; a game made in the chain may be finished by it), and Hypothesis calls
    a draw that goes otherwise than an earlier one with the same choices ``Flaky``. Like
    schemathesis's own runner, the failures are recorded as the checks find them, and such a
    ``Flaky`` (a draw that went otherwise, no failure in it) ends the suite: another suite
    (the next seed) runs until enough scenarios ran, each counted as it ran.

    What ``Flaky`` must not hide fails the test, whatever Hypothesis makes of it: a request
    without an answer (:data:`TRANSPORT_ERRORS`: refused, reset, timed out), recorded where it
    was sent, and a ``FlakyFailure`` (an error seen once that its replay did not repeat)."""
    tokens: dict[str, str] = {}
    failures: list[str] = []
    transport_errors: list[str] = []
    counts = {"scenarios": 0, "steps": 0, "flaky_suites": 0}

    class Machine(schema.as_state_machine()):
        def setup(self):
            counts["scenarios"] += 1

        def before_call(self, case):
            game_id = (case.path_parameters or {}).get("id")
            headers = case.headers or {}
            auth = [k for k in headers if k.lower() == "authorization"]
            if auth and game_id in tokens:
                case.headers = {**headers, auth[0]: f"Bearer {tokens[game_id]}"}
            _aim(case, None)

        def after_call(self, response, case):
            counts["steps"] += 1
            if case.operation.label == "POST /v1/games" and response.status_code == 201:
                body = response.json()
                tokens[body["id"]] = body["write_token"]

        def get_call_kwargs(self, case):
            return {"base_url": server_url}

        def call(self, case, **kwargs):
            try:
                return super().call(case, **kwargs)
            except TRANSPORT_ERRORS as exc:
                transport_errors.append(f"{case.operation.label}: {exc!r}")
                raise

        def validate_response(self, response, case, additional_checks=None, **kwargs):
            try:
                super().validate_response(response, case, additional_checks=CHECKS, **kwargs)
            except FailureGroup as exc:
                failures.append(f"{case.operation.label}: {exc}")
                raise
            except TRANSPORT_ERRORS as exc:  # a check's own request (location_found's GET)
                transport_errors.append(f"{case.operation.label}, checking: {exc!r}")
                raise

    # No shrinking: a replayed chain need not draw the same (see above); the failure is
    # reported as found.
    run_settings = settings(max_examples=STATEFUL_SCENARIOS, stateful_step_count=6,
                            deadline=None, database=None,
                            phases=[Phase.explicit, Phase.generate], report_multiple_bugs=False,
                            suppress_health_check=list(HealthCheck))
    suite = 0
    while counts["scenarios"] < STATEFUL_SCENARIOS and not failures and \
            not transport_errors and suite < 20:
        try:
            hypothesis.seed(STATEFUL_SEED + suite)(Machine).run(settings=run_settings)
        except FlakyFailure as exc:
            failures.append(f"an error its replay did not repeat: {exc!r}: "
                            + "; ".join(repr(e) for e in exc.exceptions))
        except Flaky:  # FlakyStrategyDefinition, FlakyReplay: the draw went otherwise
            counts["flaky_suites"] += 1
        except FailureGroup:
            break
        suite += 1
    assert not transport_errors, "requests without an answer:\n" + "\n".join(transport_errors)
    assert not failures, "\n\n".join(failures)
    assert counts["scenarios"] >= STATEFUL_SCENARIOS and counts["steps"] >= counts["scenarios"], \
        counts


def test_location_headers_resolve(server_url, rq_worker):
    """Every ``Location`` of a created game, an appended move (plain, with a serial, with an
    Idempotency-Key, and that key's replay) and an analysis (both routes, answered 202 or,
    after ``?wait=``, 200) is found by a GET, and what it finds is what was created."""
    base = server_url

    def follow(resp) -> dict:
        location = resp.headers.get("Location")
        assert location, f"{resp.request.method} {resp.request.url}: no Location"
        got = requests.get(urljoin(resp.url, location), timeout=TIMEOUT_S)
        assert got.status_code == 200, (location, got.status_code, got.text)
        return got.json()

    for body in ({"game": "dots-and-boxes", "width": 2, "height": 2},
                 {"game": "extreme-tictactoe"}):
        resp = _post(base, "/v1/games", body)
        assert resp.status_code == 201
        found = follow(resp)
        assert found["id"] == resp.json()["id"] and found["game"] == body["game"]

    game_id, token = _new_game(base, {"game": "dots-and-boxes", "width": 2, "height": 2})
    auth = {"Authorization": f"Bearer {token}"}
    for body, headers in (({"move": [1, 1, 1]}, {}),
                          ({"move": [1, 2, 1], "serial": 2}, {}),
                          ({"move": [1, 3, 1]}, {"Idempotency-Key": "location-test"}),
                          ({"move": [1, 3, 1]}, {"Idempotency-Key": "location-test"})):
        resp = _post(base, f"/v1/games/{game_id}/moves", body, {**auth, **headers})
        assert resp.status_code == 201, resp.text
        created = resp.json()
        first = follow(resp)["moves"][0]
        assert first == {k: created[k] for k in ("serial", "move", "player", "completed",
                                                 "to_move")}
    assert resp.headers.get("Idempotent-Replayed") == "true"

    for path, body in (("/v1/analyses", {"game": "extreme-tictactoe", "moves": [[7, 7]],
                                         "time_ms": 50}),
                       ("/v1/analyses", {"game": "dots-and-boxes", "width": 2, "height": 2,
                                         "lines": "100000000000", "to_move": 1,
                                         "time_ms": 50}),
                       (f"/v1/games/{game_id}/analyses", {"time_ms": 50}),
                       (f"/v1/games/{game_id}/analyses", {"at": 1, "time_ms": 50})):
        for query in ("", "?wait=10"):
            resp = _post(base, path + query, body)
            assert resp.status_code in (200, 202), resp.text
            assert follow(resp)["id"] == resp.json()["id"]


def _spec_validator(pointer: str) -> Draft202012Validator:
    """A validator for the schema at ``pointer`` in openapi.yaml (its ``$ref``s resolved in
    the document)."""
    uri = "urn:boxfish:openapi"
    registry = Registry().with_resource(
        uri, Resource.from_contents(SPEC, default_specification=DRAFT202012))
    return Draft202012Validator({"$ref": f"{uri}#{pointer}"}, registry=registry)


class EventSchema:
    """``GameStreamEvent`` of openapi.yaml: an event's fields, and its ``data`` (JSON) against
    the ``contentSchema`` of the event's kind."""

    POINTER = "/components/schemas/GameStreamEvent"

    def __init__(self) -> None:
        self.envelope = _spec_validator(self.POINTER)
        self.data = {}
        for i, branch in enumerate(SPEC["components"]["schemas"]["GameStreamEvent"]["oneOf"]):
            kind = branch["properties"]["event"]["const"]
            self.data[kind] = _spec_validator(
                f"{self.POINTER}/oneOf/{i}/properties/data/contentSchema")

    def check(self, event: dict) -> dict:
        errors = [e.message for e in self.envelope.iter_errors(event)]
        assert not errors, (event, errors)
        data = json.loads(event["data"])
        errors = [f"{list(e.absolute_path)}: {e.message}"
                  for e in self.data[event["event"]].iter_errors(data)]
        assert not errors, (event["event"], event.get("id"), errors)
        return data


def _read_stream(url: str, headers=None, limit_s: float = 60,
                 events: list[dict] | None = None) -> list[dict]:
    """The events of an SSE stream that ends (a finished game's), parsed as the SSE standard
    says: ``field: value`` lines, an empty line ends an event, ``:`` lines are comments.
    Each event is appended to ``events`` (a new list by default) as it arrives."""
    events = [] if events is None else events
    with requests.get(url, headers=headers, stream=True, timeout=TIMEOUT_S) as resp:
        assert resp.status_code == 200, resp.text
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        deadline = time.monotonic() + limit_s
        event: dict = {}
        for line in resp.iter_lines(decode_unicode=True):
            assert time.monotonic() < deadline, "the stream did not end"
            if line == "":
                if "data" in event:
                    events.append(event)
                event = {}
            elif not line.startswith(":"):
                field, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                event[field] = event[field] + "\n" + value if field == "data" and \
                    field in event else value
    return events


@pytest.mark.parametrize("game", [{"game": "dots-and-boxes", "width": 2, "height": 3},
                                  {"game": "extreme-tictactoe"}], ids=lambda g: g["game"])
def test_event_streams_match_the_event_schema(server_url, game):
    """A stream opened on a new game sees the ``game`` event and then one ``move`` event per
    move to the end of the game (and ends); resumed streams (``Last-Event-ID``, ``?after=``)
    and one opened on the finished game too: every event matches ``GameStreamEvent``."""
    schema_ = EventSchema()
    game_id, token = _new_game(server_url, game)
    url = f"{server_url}/v1/games/{game_id}/events"
    moves = _full_game(game["game"], **{k: v for k, v in game.items() if k != "game"})
    live: list[dict] = []
    reader = threading.Thread(target=_read_stream, args=(url,), kwargs={"events": live},
                              daemon=True)
    reader.start()
    deadline = time.monotonic() + 60
    while not live:  # the stream is open: its first event, the game at serial 0, arrived
        assert reader.is_alive() and time.monotonic() < deadline, "no first event"
        time.sleep(0.05)
    _play(server_url, game_id, token, moves)
    reader.join(60)
    assert not reader.is_alive(), "the stream did not end with the game"

    datas = [schema_.check(e) for e in live]
    assert [e["event"] for e in live] == ["game"] + ["move"] * (len(live) - 1)
    assert [_serial(e["id"]) for e in live] == list(range(len(moves) + 1))
    assert datas[0]["id"] == game_id and datas[0]["serial"] == 0
    assert datas[-1]["status"] == "finished" and datas[-1]["to_move"] is None

    n = len(moves)
    ids = {_serial(e["id"]): e["id"] for e in live}
    for headers, query, expect in (({"Last-Event-ID": str(n - 3)}, "", list(range(n - 2, n + 1))),
                                   ({"Last-Event-ID": ids[n - 2]}, "", [n - 1, n]),
                                   ({}, f"?after={n - 2}", [n - 1, n]),
                                   ({"Last-Event-ID": ""}, "?after=1", list(range(2, n + 1))),
                                   ({"Last-Event-ID": str(n)}, "", [])):
        resumed = _read_stream(url + query, headers)
        for event in resumed:
            schema_.check(event)
        assert [(e["event"], _serial(e["id"])) for e in resumed] == [("move", s) for s in expect]
        assert [e["id"] for e in resumed] == [ids[s] for s in expect]
    (whole,) = _read_stream(url)
    assert whole["event"] == "game" and schema_.check(whole)["status"] == "finished"


def _serial(event_id: str) -> int:
    """The serial of an event id (``<serial>.<head>``, or the bare serial)."""
    return int(event_id.partition(".")[0])


# -- what schemathesis found, pinned ------------------------------------------------------------


@pytest.mark.parametrize("path, body", [
    ("/v1/analyses", {"game": "extreme-tictactoe", "multipv": None}),
    ("/v1/analyses", {"game": "extreme-tictactoe", "time_ms": None}),
    ("/v1/analyses", {"game": "dots-and-boxes", "width": 2, "height": 2, "moves": None}),
    ("/v1/analyses", {"game": "dots-and-boxes", "width": 2, "height": 2,
                      "lines": "100000000000", "to_move": False}),
    ("/v1/analyses", {"game": "dots-and-boxes", "width": 2, "height": 2,
                      "lines": "100000000000", "to_move": True}),
    ("{game}/analyses", {"time_ms": None}),
    ("{game}/analyses", {"at": None}),
    ("{game}/moves", {"move": [1, 1, 1], "serial": None}),
])
def test_null_and_booleans_are_refused(client, new_game, path, body):
    """Schema-violating bodies the service took: a null for an optional field (openapi.yaml
    has no nullable request field; leaving the field out is the way) and ``false``/``true``
    for ``to_move`` (an integer)."""
    game_id, auth, _ = new_game()
    resp = client.post(path.replace("{game}", f"/v1/games/{game_id}"), json=body,
                       headers=auth)
    assert resp.status_code == 422 and resp.json["reason"] == "invalid_request", resp.json
    (field,) = (k for k, v in body.items() if v is None or isinstance(v, bool))
    assert [e["loc"] for e in resp.json["errors"]] == [[field]]


def test_event_stream_parameters(client, new_game):
    """An empty ``Last-Event-ID`` is none (the stream starts with the game, or after
    ``?after=``); ``?after=`` is checked even when ``Last-Event-ID`` is given."""
    game_id, auth, _ = new_game(width=1, height=1)
    for move in ([1, 1, 1], [1, 2, 1], [1, 1, 2], [2, 1, 2]):
        assert client.post(f"/v1/games/{game_id}/moves", json={"move": move},
                           headers=auth).status_code == 201
    url = f"/v1/games/{game_id}/events"
    tag = client.get(f"/v1/games/{game_id}").headers["ETag"].strip('"')  # "4.<head>"
    fresh = client.get(url, headers={"Last-Event-ID": ""}, validate_spec=False)
    assert fresh.status_code == 200 and fresh.get_data(as_text=True).startswith(
        f"id: {tag}\nevent: game\n")
    after = client.get(url + "?after=3", headers={"Last-Event-ID": ""}, validate_spec=False)
    assert after.get_data(as_text=True).startswith(f"id: {tag}\nevent: move\n")
    for query in ("?after=-1", "?after=x", f"?after={2**63}"):
        bad = client.get(url + query, headers={"Last-Event-ID": "2"})
        assert bad.status_code == 422 and bad.json["errors"][0]["loc"] == ["query", "after"]
