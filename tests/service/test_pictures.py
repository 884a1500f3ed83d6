"""Board pictures: GET /v1/games/{id}/board.{svg,png,txt} and /v1/analyses/{id}/board.*."""

from __future__ import annotations

import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def _classes(el) -> set[str]:
    return set(el.get("class", "").split())


def _all(root, tag: str, *classes: str) -> list:
    return [el for el in root.iter(SVG + tag) if set(classes) <= _classes(el)]


def _play(client, game_id, auth, moves):
    for mv in moves:
        resp = client.post(f"/v1/games/{game_id}/moves", json={"move": list(mv)},
                           headers=auth)
        assert resp.status_code == 201, resp.json


DOTS_MOVES = [(1, 1, 1), (2, 1, 1), (1, 1, 2), (2, 1, 2), (1, 2, 1)]


def test_dots_svg_lines_slots_boxes(client, new_game):
    game_id, auth, _ = new_game()
    _play(client, game_id, auth, DOTS_MOVES)
    resp = client.get(f"/v1/games/{game_id}/board.svg")
    assert resp.status_code == 200
    assert resp.mimetype == "image/svg+xml"
    root = ET.fromstring(resp.data)
    assert root.get("class") == "boxfish-board"
    assert root.get("data-game") == "dots-and-boxes"
    assert root.get("data-serial") == "5"
    drawn = _all(root, "line", "line", "drawn")
    assert sorted(el.get("data-move") for el in drawn) == sorted(
        ",".join(map(str, m)) for m in DOTS_MOVES)
    assert [el.get("data-move") for el in _all(root, "line", "last")] == ["1,2,1"]
    assert len(_all(root, "line", "slot")) == 12 - len(DOTS_MOVES)
    assert len(_all(root, "circle", "dot")) == 9
    boxes = _all(root, "rect", "box")
    assert [(b.get("data-box"), _classes(b) - {"box"}) for b in boxes] == [
        ("1,1", {"owner-0"})]
    assert _all(root, "text", "status")
