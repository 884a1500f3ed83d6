"""Reading the whole feed of every game over HTTP (``GET /v1/feed``, NDJSON pages) as an
operator's reader does, for the tests that hold the feed against the games' logs."""

from __future__ import annotations

from dataclasses import dataclass, field

OPERATOR_TOKEN = "operator-token-of-the-tests"
OPERATOR = {"Authorization": f"Bearer {OPERATOR_TOKEN}"}


@dataclass
class FeedView:
    """What a reader built from the feed: per game its moves as ``(serial, move,
    position)`` (``position`` the game log's, ``<serial>.<head>``) and its created entry; the
    rewritten items it met; its position."""

    moves: dict[str, list[tuple[int, tuple, str]]] = field(default_factory=dict)
    created: dict[str, dict] = field(default_factory=dict)
    rewritten: list[dict] = field(default_factory=list)
    position: str = ""
    partition_of: dict[str, int] = field(default_factory=dict)

    def apply(self, item: dict) -> None:
        """One item, as a reader idempotent per game and head applies it."""
        self.position = item["position"]
        if item["kind"] == "rewritten":
            self.rewritten.append(item)
            # the partition is read again from its start: forget what it gave
            for gid in [g for g, p in self.partition_of.items() if p == item["partition"]]:
                self.moves.pop(gid, None)
                self.created.pop(gid, None)
                del self.partition_of[gid]
            return
        gid = item["game_id"]
        self.partition_of[gid] = item["partition"]
        if item["kind"] == "created":
            self.created[gid] = item["game"]
            self.moves.setdefault(gid, [])
        else:
            e = item["event"]
            self.moves.setdefault(gid, []).append(
                (e["serial"], tuple(e["move"]), f"{e['serial']}.{e['head']}"))


def read_feed(get, view: FeedView | None = None, limit: int = 1000) -> FeedView:
    """Read the feed to its end from ``view``'s position (None: a new view from the start).
    ``get(path, headers)`` makes a GET and returns ``(status, headers, body text)``."""
    import json
    from urllib.parse import quote

    view = view or FeedView()
    while True:
        status, headers, text = get(
            f"/v1/feed?limit={limit}&after={quote(view.position)}", OPERATOR)
        assert status == 200, text
        lines = [json.loads(line) for line in text.splitlines() if line]
        for item in lines:
            view.apply(item)
        assert headers["Feed-Position"] == view.position
        if len(lines) < limit:
            return view


def http_get(base: str):
    """A ``get`` for :func:`read_feed` over a real HTTP server at ``base``."""
    import http.client
    from urllib.parse import urlparse

    u = urlparse(base)

    def get(path, headers):
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=20)
        try:
            conn.request("GET", path, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.headers, resp.read().decode()
        finally:
            conn.close()
    return get


def app_get(client):
    """A ``get`` for :func:`read_feed` through a Flask test client."""
    def get(path, headers):
        resp = client.get(path, headers=headers)
        return resp.status_code, resp.headers, resp.get_data(as_text=True)
    return get
