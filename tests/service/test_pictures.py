"""Board pictures: GET /v1/games/{id}/board.{svg,png,txt} and /v1/analyses/{id}/board.*
(the drawing itself, with real games in a real Redis and analyses by a real RQ worker)."""

from __future__ import annotations

import io
import random
import time
import xml.etree.ElementTree as ET

from PIL import Image

from boxfish import engine
from boxfish.engine.cli import main as cli_main
from boxfish.engine.text import analysis_text, format_value, position_text
from boxfish.service.http.app import create_app
from boxfish.service.pictures import render
from boxfish.service.pictures.notes import labelled_moves

from .conftest import CheckedClient
from .test_analyses import waited

SVG = "{http://www.w3.org/2000/svg}"
IMMUTABLE = "public, max-age=31536000, immutable"


def _classes(el) -> set[str]:
    return set(el.get("class", "").split())


def _all(root, tag: str, *classes: str) -> list:
    return [el for el in root.iter(SVG + tag) if set(classes) <= _classes(el)]


def _moves(els) -> list[str]:
    return sorted(el.get("data-move") for el in els)


def _key(move) -> str:
    return ",".join(map(str, move))


def _play(client, game_id, auth, moves):
    for mv in moves:
        resp = client.post(f"/v1/games/{game_id}/moves", json={"move": list(mv)},
                           headers=auth)
        assert resp.status_code == 201, resp.json


def _svg(client, url):
    resp = client.get(url)
    assert resp.status_code == 200, resp.data
    assert resp.mimetype == "image/svg+xml"
    return ET.fromstring(resp.data)


DOTS_MOVES = [(1, 1, 1), (2, 1, 1), (1, 1, 2), (2, 1, 2), (1, 2, 1)]


def test_dots_svg_lines_slots_boxes(client, new_game):
    game_id, auth, _ = new_game()
    _play(client, game_id, auth, DOTS_MOVES)
    root = _svg(client, f"/v1/games/{game_id}/board.svg")
    assert root.get("class") == "boxfish-board"
    assert (root.get("data-game"), root.get("data-serial")) == ("dots-and-boxes", "5")
    assert root.get("viewBox") and root.get("width") is None
    assert _moves(_all(root, "line", "line", "drawn")) == sorted(map(_key, DOTS_MOVES))
    assert [el.get("data-move") for el in _all(root, "line", "last")] == ["1,2,1"]
    state = engine.load_game("dots-and-boxes", width=2, height=2).new_state()
    for mv in DOTS_MOVES:
        state.play(mv)
    assert _moves(_all(root, "line", "slot")) == sorted(map(_key, state.legal_moves()))
    assert len(_all(root, "circle", "dot")) == 9
    boxes = _all(root, "rect", "box")
    assert [(b.get("data-box"), _classes(b) - {"box"}) for b in boxes] == [("1,1", {"owner-0"})]
    status = [el.text for el in _all(root, "text", "status")]
    assert status == ["score 1-0 \u00b7 player 0 to move"]
    # an earlier serial: the picture of that point of the game
    root = _svg(client, f"/v1/games/{game_id}/board.svg?at=0")
    assert root.get("data-serial") == "0"
    assert not _all(root, "line", "drawn") and not _all(root, "line", "last")
    assert not _all(root, "rect", "box") and len(_all(root, "line", "slot")) == 12
    root = _svg(client, f"/v1/games/{game_id}/board.svg?at=2")
    assert _moves(_all(root, "line", "drawn")) == ["1,1,1", "2,1,1"]
    assert [el.get("data-move") for el in _all(root, "line", "last")] == ["2,1,1"]


def test_xttt_svg_marks_legal_cells(client, new_game):
    game_id, auth, _ = new_game("extreme-tictactoe")
    game = engine.load_game("extreme-tictactoe")
    state = game.new_state()
    rng = random.Random(7)
    for _ in range(9):
        mv = rng.choice(state.legal_moves())
        state.play(mv)
        _play(client, game_id, auth, [mv])
    root = _svg(client, f"/v1/games/{game_id}/board.svg")
    assert root.get("data-game") == "extreme-tictactoe"
    marks = _all(root, "text", "mark")
    assert _moves(marks) == sorted(map(_key, state.history))
    board = state.board()
    for m in marks:
        r, c = map(int, m.get("data-move").split(","))
        assert ("p0" if board[r][c] == "x" else "p1") in _classes(m)
    assert [m.get("data-move") for m in _all(root, "text", "mark", "last")] == [
        _key(state.last_move)]
    assert len(_all(root, "rect", "cell")) == 256
    assert _moves(_all(root, "rect", "cell", "legal")) == sorted(map(_key, state.legal_moves()))
    assert len(_all(root, "rect", "block")) == 16


def test_xttt_won_block_drawn_block_and_bonus():
    game = engine.load_game("extreme-tictactoe")
    board = ["." * 16 for _ in range(16)]
    board[0] = "xxxx" + "." * 12                       # block 0,0 won by x
    for r in range(4):                                  # block 0,1 full, no pattern: drawn
        board[r] = board[r][:4] + ["xoxo", "xoxo", "oxox", "oxox"][r] + board[r][8:]
    board[5] = "." * 9 + "o" + "." * 6                  # an o in block 1,2
    state = game.from_board(board, to_move=0, last_move=(0, 3), in_bonus=True)
    root = ET.fromstring(render("svg", state))
    blocks = {el.get("data-block"): _classes(el) - {"block"} for el in _all(root, "rect", "block")}
    assert blocks["0,0"] == {"won-0"} and blocks["0,1"] == {"drawn"}
    assert sum(1 for v in blocks.values() if v == {"open"}) == 14
    bonus = _all(root, "text", "bonus")
    assert len(bonus) == 1 and "X moves again" in bonus[0].text
    assert _moves(_all(root, "rect", "legal")) == sorted(map(_key, state.legal_moves()))
    after = state.copy()
    after.play(state.legal_moves()[0])
    assert not _all(ET.fromstring(render("svg", after)), "text", "bonus")


def test_png_width_serials_and_bad_input(client, new_game):
    game_id, auth, _ = new_game()
    _play(client, game_id, auth, DOTS_MOVES)
    shots = []
    for at in (1, 2):
        resp = client.get(f"/v1/games/{game_id}/board.png?at={at}&size=200")
        assert resp.status_code == 200 and resp.mimetype == "image/png"
        image = Image.open(io.BytesIO(resp.data))
        image.load()
        assert image.format == "PNG" and image.width == 200
        shots.append(image.tobytes())
    assert shots[0] != shots[1]
    big = Image.open(io.BytesIO(client.get(f"/v1/games/{game_id}/board.png?size=900").data))
    assert big.width == 900
    assert Image.open(io.BytesIO(client.get(f"/v1/games/{game_id}/board.png").data)).width == 480
    for query in ("size=63", "size=2049", "size=big", "at=6", "at=-1"):
        resp = client.get(f"/v1/games/{game_id}/board.png?{query}")
        assert resp.status_code == 422, query
        assert resp.mimetype == "application/problem+json"
    assert client.get(f"/v1/games/{game_id}/board.png?at=6").json["reason"] == "out_of_range"
    resp = client.get(f"/v1/games/{game_id}/board.gif", validate_spec=False)
    assert resp.status_code == 404 and resp.mimetype == "application/problem+json"
    assert client.get("/v1/games/nosuchgame/board.svg").status_code == 404


def test_board_txt_is_the_cli_rendering(client, new_game, capsys):
    game_id, auth, _ = new_game()
    _play(client, game_id, auth, DOTS_MOVES)
    resp = client.get(f"/v1/games/{game_id}/board.txt?at=3")
    assert resp.status_code == 200
    assert resp.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert cli_main(["--size", "2x2", "--moves", "1,1,1 2,1,1 1,1,2", "--time", "0"]) == 0
    cli = capsys.readouterr().out
    position = resp.data.decode()
    assert cli.startswith(position)
    assert cli[len(position):].startswith("best move")
    game = engine.load_game("dots-and-boxes", width=2, height=2)
    state = game.new_state()
    for mv in DOTS_MOVES[:3]:
        state.play(mv)
    assert position == position_text(game, state) + "\n"


def _without_stats(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if not ln.startswith("depth ")]


# 2x1 boxes with 4 of the 7 lines drawn: solved at once.
TRIVIAL = [[1, 1, 1], [2, 1, 1], [1, 2, 1], [2, 2, 1]]


def test_analysis_picture_best_move_and_values(client, rq_worker, capsys):
    body = {"game": "dots-and-boxes", "width": 2, "height": 1, "moves": TRIVIAL,
            "time_ms": 3000}
    job = waited(client, client.post("/v1/analyses?wait=8", json=body))
    assert job["status"] == "finished", job
    result = job["result"]
    root = _svg(client, f"/v1/analyses/{job['id']}/board.svg?labels=all")
    best = _all(root, "line", "best")
    assert [el.get("data-move") for el in best] == [_key(result["best_move"])]
    labels = {el.get("data-move"): el for el in _all(root, "text", "value")}
    game = engine.load_game("dots-and-boxes", width=2, height=1)
    state = game.new_state()
    for mv in TRIVIAL:
        state.play(tuple(mv))
    assert sorted(labels) == sorted(map(_key, state.legal_moves()))
    for mv in result["moves"]:
        label = labels[_key(mv["move"])]
        assert label.text == format_value(mv["value"], mv["exact"], mv["bound"])
        assert ("exact" if mv["exact"] else mv["bound"]) in _classes(label)
    assert [el.get("data-move") for el in _all(root, "line", "last")] == ["2,2,1"]
    # the text: the engine's rendering of the stored result, and the CLI's but for the stats
    txt = client.get(f"/v1/analyses/{job['id']}/board.txt").data.decode()
    assert txt == analysis_text(game, state, result) + "\n"
    assert cli_main(["--size", "2x1", "--moves", " ".join(_key(m) for m in TRIVIAL),
                     "--time", "0"]) == 0
    assert _without_stats(capsys.readouterr().out) == _without_stats(txt)
    png = client.get(f"/v1/analyses/{job['id']}/board.png?size=300")
    assert Image.open(io.BytesIO(png.data)).width == 300
    # caching: a finished analysis never changes
    svg = client.get(f"/v1/analyses/{job['id']}/board.svg")
    assert svg.headers["Cache-Control"] == IMMUTABLE
    again = client.get(f"/v1/analyses/{job['id']}/board.svg",
                       headers={"If-None-Match": svg.headers["ETag"]})
    assert again.status_code == 304 and again.data == b""
    assert again.headers["ETag"] == svg.headers["ETag"]
    assert png.headers["ETag"] != svg.headers["ETag"]


def test_analysis_picture_of_an_unfinished_analysis_is_409(settings, redis_client, spec,
                                                          work_here):
    """On a queue of the test's own, which no worker serves: the job stays queued until the
    test runs it (so its picture is 409 whatever the time), then has a picture."""
    own = settings.model_copy(update={"queue_name": f"{settings.queue_name}-pictures-409"})
    client = CheckedClient(create_app(own, connection=redis_client).test_client(), spec)
    # A time no other test asks for: an identical request would join that test's job, which
    # may have finished.
    time_ms = random.randrange(1501, 1700)
    job = client.post("/v1/analyses", json={"game": "extreme-tictactoe", "time_ms": time_ms}).json
    assert job["status"] == "queued", job
    resp = client.get(f"/v1/analyses/{job['id']}/board.png")
    assert resp.status_code == 409
    assert resp.json["reason"] == "not_finished" and resp.headers["Retry-After"] == "1"
    assert client.get("/v1/analyses/nosuchjob/board.svg").status_code == 404
    work_here(own.queue_name)
    done = client.post("/v1/analyses?wait=8",
                       json={"game": "extreme-tictactoe", "time_ms": time_ms}).json
    assert done["id"] == job["id"] and done["status"] == "finished"
    root = _svg(client, f"/v1/analyses/{job['id']}/board.svg")
    assert [el.get("data-move") for el in _all(root, "rect", "best")] == [
        _key(done["result"]["best_move"])]
    # By default only the best and the losing moves are labelled (issue 36); all on demand.
    assert _moves(_all(root, "text", "value")) == sorted(
        _key(m["move"]) for m in labelled_moves(done["result"], "best"))
    every = _svg(client, f"/v1/analyses/{job['id']}/board.svg?labels=all")
    assert len(_all(every, "text", "value")) == len(done["result"]["moves"])


def test_the_three_renderings_say_the_same_status(client, new_game):
    """``board.txt`` says what the SVG and the PNG (one scene) say: whose turn and the score
    while the game goes on, the result once it is over (not "player 1 to move")."""
    from boxfish.service.pictures import scene_of

    game_id, auth, _ = new_game(width=1, height=1)
    moves = [(1, 1, 1), (1, 2, 1), (1, 1, 2), (2, 1, 2)]  # player 1 draws the box's last line
    state = engine.load_game("dots-and-boxes", width=1, height=1).new_state()
    for at, mv in enumerate(moves, start=1):
        _play(client, game_id, auth, [mv])
        state.play(mv)
        svg = [el.text for el in _all(_svg(client, f"/v1/games/{game_id}/board.svg"),
                                      "text", "status")]
        png = [p.text for p in scene_of(state).items if "status" in p.classes]
        assert svg == png, at
        heading = client.get(f"/v1/games/{game_id}/board.txt").data.decode().splitlines()[-1]
        assert heading.endswith("  " + " \u00b7 ".join(svg)), (at, heading, svg)
    assert svg == ["game over \u00b7 player 1 wins 0-1"]
    assert "to move" not in heading
    xt = engine.load_game("extreme-tictactoe")
    board = ["." * 16 for _ in range(16)]
    board[0] = "xxxx" + "." * 12
    bonus = xt.from_board(board, to_move=0, last_move=(0, 3), in_bonus=True)
    status = [p.text for p in scene_of(bonus).items if "status" in p.classes or
              "bonus" in p.classes]
    assert render("txt", bonus).decode().splitlines()[-1].endswith(" \u00b7 ".join(status))


def test_etags_and_cache_control(client, new_game):
    game_id, auth, _ = new_game(width=1, height=1)
    _play(client, game_id, auth, [(1, 1, 1)])
    url = f"/v1/games/{game_id}/board.svg"
    live = client.get(url)
    assert live.headers["Cache-Control"] == "no-cache"
    etag = live.headers["ETag"]
    resp = client.get(url, headers={"If-None-Match": etag})
    assert resp.status_code == 304 and resp.headers["ETag"] == etag
    # A bare serial is revalidated (a failover may rewrite the log there); the position
    # named with its head (the game's ETag) is one history's: immutable.
    position = client.get(f"/v1/games/{game_id}").headers["ETag"].strip('"')
    assert position.startswith("1.")
    fixed = client.get(url + "?at=1")
    assert fixed.headers["Cache-Control"] == "no-cache"
    assert client.get(url + "?at=1", headers={"If-None-Match": fixed.headers["ETag"]}
                      ).status_code == 304
    named = client.get(url + f"?at={position}")
    assert named.headers["Cache-Control"] == IMMUTABLE and named.data == fixed.data
    assert named.headers["ETag"] == fixed.headers["ETag"] == etag
    _play(client, game_id, auth, [(1, 2, 1)])
    moved = client.get(url, headers={"If-None-Match": etag})
    assert moved.status_code == 200 and moved.headers["ETag"] != etag
    assert client.get(url + "?at=1").headers["ETag"] == fixed.headers["ETag"]
    assert client.get(url + f"?at={position}").headers["ETag"] == fixed.headers["ETag"]
    # a head the log does not have there: no such position
    other = client.get(url + "?at=1.0123456789abcdef")
    assert other.status_code == 404 and "another history at serial 1" in other.json["detail"]
    for bad in ("1.0123", "1.0123456789ABCDEF", "x.0123456789abcdef", "1."):
        resp = client.get(url + f"?at={bad}", validate_spec=False)
        assert resp.status_code == 422 and resp.json["errors"][0]["loc"] == ["query", "at"]
    # PNG sizes are pictures of their own
    assert client.get(url[:-3] + "png?size=100").headers["ETag"] != client.get(
        url[:-3] + "png?size=200").headers["ETag"]
    _play(client, game_id, auth, [(1, 1, 2), (2, 1, 2)])
    finished = client.get(url)
    # a finished game may still lose its last move in a failover: revalidated too
    assert finished.headers["Cache-Control"] == "no-cache"
    status = _all(ET.fromstring(finished.data), "text", "status")
    assert status[0].text.startswith("game over")


def test_bounds_are_marked_on_the_labels():
    game = engine.load_game("dots-and-boxes", width=1, height=1)
    state = game.new_state()
    state.play((1, 1, 1))
    result = {"best_move": [1, 2, 1], "value": 1, "exact": False, "bound": "lower",
              "moves": [{"move": [1, 2, 1], "value": 1, "exact": False, "bound": "lower"},
                        {"move": [1, 1, 2], "value": -1, "exact": False, "bound": "upper"},
                        {"move": [2, 1, 2], "value": 0, "exact": True, "bound": "exact"}]}
    root = ET.fromstring(render("svg", state, result, labels="all"))
    labels = {el.get("data-move"): (el.text, _classes(el) - {"value"})
              for el in _all(root, "text", "value")}
    assert labels == {"1,2,1": (">=+1", {"lower", "positive"}),
                      "1,1,2": ("<=-1", {"upper", "negative"}),
                      "2,1,2": ("0", {"exact"})}
    assert [el.get("data-move") for el in _all(root, "line", "best")] == ["1,2,1"]


def test_analysis_picture_of_a_failed_analysis_is_409(settings, redis_client, spec, work_here):
    """A job whose request cannot be searched (a move off the board: the API would refuse it,
    so it is enqueued as an older or foreign client could have) fails in the worker; its
    picture is a 409 ``failed`` problem, in every format."""
    # A queue of the test's own: on the session's queue, the session's worker (started by
    # any earlier test) may take the job, and this process's worker find the queue empty
    # and return before the job has even started.
    own = settings.model_copy(update={"queue_name": f"{settings.queue_name}-failing"})
    app = create_app(own, connection=redis_client)
    client = CheckedClient(app.test_client(), spec)
    request = {"game": "dots-and-boxes", "params": {"width": 2, "height": 2},
               "moves": [[9, 9, 1]], "time_ms": 10}
    job = app.extensions["boxfish"].analyses.queue.enqueue(
        "boxfish.workers.analysis_job.run_analysis", request,
        job_id=f"failing-{random.randrange(10**9)}", result_ttl=60, failure_ttl=60)
    work_here(own.queue_name)
    assert client.get(f"/v1/analyses/{job.id}").json["status"] == "failed"
    for fmt in ("svg", "png", "txt"):
        resp = client.get(f"/v1/analyses/{job.id}/board.{fmt}")
        assert resp.status_code == 409, fmt
        assert resp.json["reason"] == "failed"


def _labelled(width: int, height: int, best, text_of):
    """A fresh ``width`` x ``height`` board analysed with every legal move labelled
    (``text_of(i)``: the i-th move's value, exact flag and bound) and ``best`` the best
    move: its state, result and scene."""
    from boxfish.service.pictures import scene_of

    state = engine.load_game("dots-and-boxes", width=width, height=height).new_state()
    moves = [dict(zip(("value", "exact", "bound"), text_of(i), strict=True), move=list(mv))
             for i, mv in enumerate(state.legal_moves())]
    result = {"best_move": list(best), "value": 1, "exact": True, "bound": "exact",
              "moves": moves}
    return state, result, scene_of(state, result, labels="all")


def _best_prims(scene, best):
    """The best line and the best move's value label of ``scene``."""
    key = ("move", _key(best))
    line = next(p for p in scene.items if p.kind == "line" and "best" in p.classes)
    label = next(p for p in scene.items
                 if p.kind == "text" and "value" in p.classes and key in p.data)
    return line, label


# Value labels from the shortest to the longest a board shows: "+1", ">=-3", "~+1.25",
# "<=-12.25".
LABEL_KINDS = [lambda i: (1, True, "exact"), lambda i: (-3, False, "lower"),
               lambda i: (1.25, False, "estimate"), lambda i: (-12.25, False, "upper")]


def test_best_value_label_is_beside_the_best_line_inside_the_board():
    """On every board from 2x2 to 7x7 (and two oblong ones), whichever line is best (edges,
    corners, inside; horizontal and vertical) and however long its label, the label's box
    does not touch the best line's stroke and stays inside the board and its margin (not on
    the status lines, not off the picture)."""
    from boxfish.service.pictures.dots import COORD, MARGIN
    from boxfish.service.pictures.scene import overlap, stroke_box, text_box

    sizes = [(n, n) for n in range(2, 8)] + [(2, 7), (7, 3)]
    for width, height in sizes:
        moves = engine.load_game("dots-and-boxes", width=width,
                                 height=height).new_state().legal_moves()
        for best in moves:
            for text_of in LABEL_KINDS:
                _, _, scene = _labelled(width, height, best, text_of)
                line, label = _best_prims(scene, best)
                box, stroke = text_box(label), stroke_box(line)
                where = (width, height, best, label.text, box)
                assert overlap(box, stroke) == 0, where
                # the board and its margin: below the column numbers, right of the row
                # numbers (issue 36's coordinates), above the text
                board_h = COORD + height + 2 * MARGIN
                coords = [text_box(p) for p in scene.items if "coord" in p.classes]
                assert not any(overlap(box, c) for c in coords), where
                assert box[0] >= 0 and box[2] <= scene.width, where
                assert box[1] >= COORD and box[3] <= board_h, where


def _png(scene, width: int = 480) -> Image.Image:
    from boxfish.service.pictures import render_png

    return Image.open(io.BytesIO(render_png(scene, width))).convert("RGB")


def test_best_value_label_paints_nothing_on_the_best_line():
    """The PNG of an analysis, drawn with and without the best move's value label: every
    pixel of the best line's stroke is the same in both (the label leaves the line alone),
    and the pixels the label does paint lie in its estimated box (the estimate the layout
    relies on holds for the PNG's font)."""
    from PIL import ImageChops

    from boxfish.service.pictures.scene import stroke_box, text_box

    cases = [(3, 3, (2, 2, 1)), (3, 3, (2, 2, 2)), (5, 5, (1, 1, 1)), (5, 5, (6, 5, 2)),
             (7, 7, (7, 8, 1)), (2, 2, (1, 1, 2))]
    for width, height, best in cases:
        for text_of in (LABEL_KINDS[1], LABEL_KINDS[3]):
            _, _, scene = _labelled(width, height, best, text_of)
            line, label = _best_prims(scene, best)
            with_label = _png(scene)
            scene.items.remove(label)
            diff = ImageChops.difference(with_label, _png(scene))
            scale = with_label.width / scene.width
            where = (width, height, best, label.text)
            stroke = tuple(round(v * scale) for v in stroke_box(line))
            assert diff.crop(stroke).getbbox() is None, where
            painted = diff.getbbox()
            assert painted is not None, where
            bx0, by0, bx1, by1 = (v * scale for v in text_box(label))
            # getbbox: (left, upper, right, lower), right and lower exclusive
            assert (bx0 - 1 <= painted[0] and by0 - 1 <= painted[1]
                    and painted[2] <= bx1 + 1 and painted[3] <= by1 + 1), (where, painted)


# --- issue 36: pictures a player can read ------------------------------------------------


def test_coordinates_name_the_dots_and_cells_as_moves_do(client, new_game):
    """Dots and Boxes: a number above every dot column (``x``) and left of every dot row
    (``y``), lined up with the dots, so the line ``3,4,2`` starts at the dot under column 3
    and beside row 4. Extreme Tic-Tac-Toe: rows and columns 0 to 15 lined up with the cells
    (``row,col``)."""
    game_id, auth, _ = new_game(width=5, height=5)
    _play(client, game_id, auth, [(3, 4, 2)])
    root = _svg(client, f"/v1/games/{game_id}/board.svg")
    columns = {int(el.get("data-column")): el for el in _all(root, "text", "coord", "column")}
    rows = {int(el.get("data-row")): el for el in _all(root, "text", "coord", "row")}
    assert sorted(columns) == list(range(1, 7)) and sorted(rows) == list(range(1, 7))
    assert all(columns[x].text == str(x) and rows[x].text == str(x) for x in range(1, 7))
    dots = {(float(d.get("cx")), float(d.get("cy"))) for d in _all(root, "circle", "dot")}
    xs, ys = sorted({x for x, _ in dots}), sorted({y for _, y in dots})
    assert [float(columns[x].get("x")) for x in range(1, 7)] == xs
    assert [float(rows[y].get("y")) for y in range(1, 7)] == ys
    # the numbers are above and left of every dot
    assert max(float(el.get("y")) for el in columns.values()) < ys[0]
    assert max(float(el.get("x")) for el in rows.values()) < xs[0]
    line = next(el for el in _all(root, "line", "drawn") if el.get("data-move") == "3,4,2")
    assert (float(line.get("x1")), float(line.get("y1"))) == (xs[2], ys[3])
    assert float(line.get("x1")) == float(line.get("x2"))  # o=2: down
    # Extreme Tic-Tac-Toe: the numbers lined up with the cells' centres
    xt = engine.load_game("extreme-tictactoe").new_state()
    xt.play((5, 9))
    root = ET.fromstring(render("svg", xt))
    cells = {el.get("data-move"): el for el in _all(root, "rect", "cell")}
    cols = {int(el.get("data-col")): el for el in _all(root, "text", "coord", "column")}
    xrows = {int(el.get("data-row")): el for el in _all(root, "text", "coord", "row")}
    assert sorted(cols) == sorted(xrows) == list(range(16))
    cell = cells["5,9"]
    assert float(cols[9].get("x")) == float(cell.get("x")) + 0.5
    assert float(xrows[5].get("y")) == float(cell.get("y")) + 0.5
    # in the PNG: the column numbers' band above the dots is painted (the numbers are drawn)
    png = Image.open(io.BytesIO(client.get(f"/v1/games/{game_id}/board.png").data))
    scale = png.width / float(root_width(client, game_id))
    band = png.convert("L").crop((0, 0, png.width, int(ys[0] * scale) - int(0.3 * scale)))
    assert band.getextrema()[0] < 160  # dark pixels: the numbers


def root_width(client, game_id) -> str:
    return _svg(client, f"/v1/games/{game_id}/board.svg").get("viewBox").split()[2]


def _result_of(state, rows, best=None):
    """An analysis result of ``state`` whose moves are ``rows``: ``(move, value, exact,
    bound, lower, upper)``; the best move the first row's unless ``best``."""
    moves = [{"move": list(m), "value": v, "exact": e, "bound": b, "lower": lo, "upper": hi}
             for m, v, e, b, lo, hi in rows]
    top = moves[0]
    return {"best_move": list(best or top["move"]), "value": top["value"],
            "exact": top["exact"], "bound": top["bound"], "lower": top["lower"],
            "upper": top["upper"], "moves": moves}


def test_labels_best_shows_the_best_three_proven_ties_and_losing_moves():
    """``labels=best`` (the default): of 12 moves, the best (exact +3), a proven tie
    (``>=+3``), the third best (an estimate), and the moves proven to lose (an exact -1, an
    ``<=+1``); not the estimates below the top three nor the ``<=+3`` that may only tie.
    ``labels=all``: every move."""
    state = engine.load_game("dots-and-boxes", width=2, height=2).new_state()
    legal = state.legal_moves()
    rows = [(legal[0], 3, True, "exact", 3, 3),
            (legal[1], 3, False, "lower", 3, None),
            (legal[2], 2.5, False, "estimate", None, None),
            (legal[3], 2.0, False, "estimate", None, None),
            (legal[4], -1, True, "exact", -1, -1),
            (legal[5], 1, False, "upper", None, 1)]
    rows += [(mv, 3, False, "upper", None, 3) for mv in legal[6:]]
    result = _result_of(state, rows)
    shown = _moves(_all(ET.fromstring(render("svg", state, result)), "text", "value"))
    assert shown == sorted(map(_key, [legal[0], legal[1], legal[2], legal[4], legal[5]]))
    every = _all(ET.fromstring(render("svg", state, result, labels="all")), "text", "value")
    assert _moves(every) == sorted(map(_key, legal))
    # an estimated best with nothing proven: the best three only
    estimates = [(mv, 1.0 - i / 10, False, "estimate", None, None) for i, mv in enumerate(legal)]
    shown = _all(ET.fromstring(render("svg", state, _result_of(state, estimates))),
                 "text", "value")
    assert _moves(shown) == sorted(map(_key, legal[:3]))


def test_labels_over_http_and_a_bad_value_is_a_problem(client, rq_worker):
    body = {"game": "dots-and-boxes", "width": 2, "height": 1, "moves": TRIVIAL,
            "time_ms": 3000}
    job = waited(client, client.post("/v1/analyses?wait=8", json=body))
    assert job["status"] == "finished", job
    url = f"/v1/analyses/{job['id']}/board"
    best = _svg(client, url + ".svg")
    every = _svg(client, url + ".svg?labels=all")
    assert _moves(_all(best, "text", "value")) == sorted(
        _key(m["move"]) for m in labelled_moves(job["result"], "best"))
    assert _moves(_all(every, "text", "value")) == sorted(
        _key(m["move"]) for m in job["result"]["moves"])
    assert _svg(client, url + ".svg?labels=best").get("viewBox") == best.get("viewBox")
    png = {v: client.get(url + f".png?labels={v}") for v in ("best", "all")}
    assert png["best"].headers["ETag"] != png["all"].headers["ETag"]
    for fmt in ("svg", "png", "txt"):
        resp = client.get(url + f".{fmt}?labels=some", validate_spec=False)
        assert resp.status_code == 422, fmt
        assert resp.mimetype == "application/problem+json"
        assert resp.json["errors"][0]["loc"] == ["query", "labels"]


def test_the_legend_says_whose_view_and_what_the_labels_mean(client, rq_worker):
    """The legend beneath an analysis: the values are the player to move's, what exact, a
    bound and an estimate look like, how many labels ``labels=best`` left out, how a move is
    written; and it is painted in the PNG (the rows below the analysis line are not
    blank)."""
    game = engine.load_game("dots-and-boxes", width=2, height=1)
    state = game.new_state()
    for mv in TRIVIAL:
        state.play(tuple(mv))
    body = {"game": "dots-and-boxes", "width": 2, "height": 1, "moves": TRIVIAL,
            "time_ms": 3000}
    job = waited(client, client.post("/v1/analyses?wait=8", json=body))
    legend = [el.text for el in _all(_svg(client, f"/v1/analyses/{job['id']}/board.svg"),
                                      "text", "legend")]
    text = " ".join(legend)
    assert f"values for player {state.to_move} (to move)" in text
    for words in ("+3 exact", ">=+3 at least", "<=+3 at most", "~+3 an estimate",
                  "move x,y,o", "o=1 right, o=2 down"):
        assert words in text, (words, legend)
    # labels left out are counted, on a result with more moves than the best ones
    state2 = engine.load_game("dots-and-boxes", width=2, height=2).new_state()
    rows = [(mv, 1.0 - i / 10, False, "estimate", None, None)
            for i, mv in enumerate(state2.legal_moves())]
    scene = _scene(state2, _result_of(state2, rows))
    notes = " ".join(p.text for p in scene.items if "legend" in p.classes)
    assert "9 more with ?labels=all" in notes
    xt = engine.load_game("extreme-tictactoe").new_state()
    xt_result = _result_of(xt, [((5, 5), 100.0, False, "estimate", None, None)])
    notes = " ".join(p.text for p in _scene(xt, xt_result).items if "legend" in p.classes)
    assert "values for X (to move)" in notes and "move row,col" in notes
    # painted: the legend's rows of the PNG hold dark pixels
    png = _png(scene)
    scale = png.width / scene.width
    first = next(p for p in scene.items if "legend" in p.classes)
    row = png.convert("L").crop((0, round((first.y - 0.1) * scale), png.width,
                                 round((first.y + 0.1) * scale)))
    assert row.getextrema()[0] < 160


def _scene(state, result, **kw):
    from boxfish.service.pictures import scene_of

    return scene_of(state, result, **kw)


def test_an_estimates_caption_carries_its_proven_bounds(client, rq_worker):
    """``~+3 (estimate; proven >=+1)``: the analysis line says what ``lower`` and ``upper``
    prove, as ``board.txt`` does; the same line over HTTP for a real analysis."""
    from boxfish.service.pictures.notes import analysis_line

    state = engine.load_game("dots-and-boxes", width=2, height=2).new_state()
    legal = state.legal_moves()
    result = _result_of(state, [(legal[0], 3.0, False, "estimate", 1, None),
                                (legal[1], 2.0, False, "estimate", None, 4)])
    # (wrapped to the picture's width: one line in one or more texts)
    line = " ".join(p.text for p in _scene(state, result).items if "analysis" in p.classes)
    assert line == f"best {_key(legal[0])} \u00b7 value ~+3.00 (estimate; proven >=+1)"
    both = _result_of(state, [(legal[0], 2, False, "lower", 2, 5)])
    assert analysis_line(both).endswith("value >=+2 (lower; proven <=+5)")
    from boxfish.engine.text import analysis_lines

    assert analysis_lines(result, stats=False)[0].endswith("(estimate; proven >=+1)")
    body = {"game": "dots-and-boxes", "width": 2, "height": 1, "moves": TRIVIAL,
            "time_ms": 3000}
    job = waited(client, client.post("/v1/analyses?wait=8", json=body))
    svg = _svg(client, f"/v1/analyses/{job['id']}/board.svg")
    assert " ".join(el.text for el in _all(svg, "text", "analysis")) == analysis_line(
        job["result"])


def test_the_board_caption_is_in_words_everywhere(client, new_game, capsys):
    """"Dots and Boxes, 2x2 boxes, 3 lines drawn" in the SVG, ``board.txt`` and
    ``boxfish analyse``; no Python repr (``load_game(...)``) anywhere."""
    game_id, auth, _ = new_game()
    _play(client, game_id, auth, DOTS_MOVES[:3])
    caption = "Dots and Boxes, 2x2 boxes, 3 lines drawn"
    svg = _svg(client, f"/v1/games/{game_id}/board.svg")
    assert [el.text for el in _all(svg, "text", "caption")] == [caption]
    txt = client.get(f"/v1/games/{game_id}/board.txt").data.decode()
    assert txt.splitlines()[-1] == f"{caption}  score 0-0 \u00b7 player 1 to move"
    assert cli_main(["--size", "2x2", "--moves", "1,1,1 2,1,1 1,1,2", "--time", "0"]) == 0
    out = capsys.readouterr().out
    assert f"\n{caption}  " in out and "load_game(" not in out + txt
    xt = engine.load_game("extreme-tictactoe").new_state()
    xt.play((5, 9))
    assert render("txt", xt).decode().splitlines()[-1].startswith(
        "Extreme Tic-Tac-Toe, 16x16 cells, 1 mark  ")
    assert [p.text for p in _scene(xt, None).items if "caption" in p.classes] == [
        "Extreme Tic-Tac-Toe, 16x16 cells, 1 mark"]


def _frames(data: bytes) -> list[Image.Image]:
    gif = Image.open(io.BytesIO(data))
    assert gif.format == "GIF"
    frames = []
    for i in range(gif.n_frames):
        gif.seek(i)
        frames.append(gif.convert("RGB"))
    return frames


def _last_line_pixel(state, width: int) -> tuple[int, int]:
    """The pixel in the middle of the last move's line in ``state``'s picture."""
    from boxfish.service.pictures import scene_of

    scene = scene_of(state)
    line = next(p for p in scene.items if p.kind == "line" and "last" in p.classes)
    scale = width / scene.width
    return round((line.x + line.x2) / 2 * scale), round((line.y + line.y2) / 2 * scale)


def test_animation_gif_a_frame_per_position(client, new_game):
    """``animation.gif``: moves + 1 frames that Pillow decodes, each showing its move (the
    middle of the move's line in the highlight colour), ``?at=`` stops there, the ETag and
    Cache-Control as for board pictures, an unknown game a 404 problem."""
    from boxfish.service.pictures.scene import HIGHLIGHT

    game_id, auth, _ = new_game(width=3, height=3)
    state = engine.load_game("dots-and-boxes", width=3, height=3).new_state()
    rng = random.Random(36)
    states = [state.copy()]
    for _ in range(10):
        mv = rng.choice(state.legal_moves())
        state.play(mv)
        _play(client, game_id, auth, [mv])
        states.append(state.copy())
    url = f"/v1/games/{game_id}/animation.gif"
    resp = client.get(url + "?size=300")
    assert resp.status_code == 200 and resp.mimetype == "image/gif"
    assert resp.headers["Cache-Control"] == "no-cache"
    frames = _frames(resp.data)
    assert len(frames) == 11 and all(f.width == 300 for f in frames)
    want = tuple(int(HIGHLIGHT[i:i + 2], 16) for i in (1, 3, 5))
    for k in range(1, 11):
        x, y = _last_line_pixel(states[k], 300)
        got = frames[k].getpixel((x, y))
        assert max(abs(a - b) for a, b in zip(got, want, strict=True)) < 40, (k, got)
    assert frames[0].tobytes() != frames[1].tobytes()
    # ?at=: the game up to there; the position named with its head is immutable
    assert len(_frames(client.get(url + "?at=4&size=300").data)) == 5
    position = client.get(f"/v1/games/{game_id}").headers["ETag"].strip('"')
    named = client.get(url + f"?at={position}&size=300")
    assert named.headers["Cache-Control"] == IMMUTABLE
    assert named.headers["ETag"] == resp.headers["ETag"] and named.data == resp.data
    again = client.get(url + "?size=300", headers={"If-None-Match": resp.headers["ETag"]})
    assert again.status_code == 304 and again.data == b""
    assert client.get(url).headers["ETag"] != resp.headers["ETag"]  # another width
    _play(client, game_id, auth, [state.legal_moves()[0]])
    moved = client.get(url + "?size=300", headers={"If-None-Match": resp.headers["ETag"]})
    assert moved.status_code == 200 and len(_frames(moved.data)) == 12
    for query in ("at=99", "size=10", "at=x"):
        bad = client.get(url + f"?{query}", validate_spec=False)
        assert bad.status_code == 422 and bad.mimetype == "application/problem+json", query
    missing = client.get("/v1/games/nosuchgame/animation.gif")
    assert missing.status_code == 404 and missing.mimetype == "application/problem+json"
    other = client.get(url + "?at=1.0123456789abcdef")
    assert other.status_code == 404
    # Extreme Tic-Tac-Toe: the last mark of each frame outlined in the highlight colour
    xt_id, xt_auth, _ = new_game("extreme-tictactoe")
    xt = engine.load_game("extreme-tictactoe").new_state()
    for _ in range(4):
        mv = rng.choice(xt.legal_moves())
        xt.play(mv)
        _play(client, xt_id, xt_auth, [mv])
    frames = _frames(client.get(f"/v1/games/{xt_id}/animation.gif?size=400").data)
    assert len(frames) == 5 and frames[0].width == 400
    from boxfish.service.pictures import scene_of

    scene = scene_of(xt)
    recent = next(p for p in scene.items if "recent" in p.classes)
    scale = 400 / scene.width
    y = round((recent.y + 0.5) * scale)  # the outline's left side, two or three pixels wide
    got = [frames[4].getpixel((round(recent.x * scale) + dx, y)) for dx in range(-2, 4)]
    assert any(max(abs(a - b) for a, b in zip(px, want, strict=True)) < 40 for px in got), got


def test_animation_gif_of_a_60_move_5x5_game_is_within_its_size_budget(server_url):
    """Through gunicorn: a 5x5 game of 60 moves at the default width is a GIF of 61 frames
    within :data:`~service.pictures.animation.SIZE_BUDGET` (512 KB)."""
    import httpx

    from boxfish.service.pictures.animation import SIZE_BUDGET

    with httpx.Client(base_url=server_url, timeout=60) as http:
        game = http.post("/v1/games", json={"game": "dots-and-boxes", "width": 5,
                                            "height": 5}).json()
        auth = {"Authorization": f"Bearer {game['write_token']}"}
        state = engine.load_game("dots-and-boxes", width=5, height=5).new_state()
        rng = random.Random(60)
        for _ in range(60):
            mv = rng.choice(state.legal_moves())
            state.play(mv)
            r = http.post(f"/v1/games/{game['id']}/moves", json={"move": list(mv)},
                          headers=auth)
            assert r.status_code == 201, r.text
        resp = http.get(f"/v1/games/{game['id']}/animation.gif")
        assert resp.status_code == 200 and resp.headers["content-type"] == "image/gif"
        assert len(resp.content) <= SIZE_BUDGET, len(resp.content)
        frames = _frames(resp.content)
        assert len(frames) == 61 and frames[0].width == 480
        missing = http.get("/v1/games/nosuchgame/animation.gif")
        assert missing.status_code == 404
        assert missing.headers["content-type"] == "application/problem+json"
    # with a review's judgement on every frame (and a better move marked on three of four):
    # the same game drawn by the renderer the route calls, within the budget too
    from types import SimpleNamespace

    from boxfish.service.pictures.animation import render_gif

    game = engine.load_game("dots-and-boxes", width=5, height=5)
    events = [SimpleNamespace(serial=i + 1, move=mv, player=p) for i, (mv, p) in
              enumerate(zip(state.history, _players(game, state.history), strict=True))]
    kinds = ["best", "inaccuracy", "mistake", "blunder"]
    review = {ev.serial: {"serial": ev.serial, "move": list(ev.move), "player": ev.player,
                          "value_before": 3, "value_played": 3 - [0, 1, 2, 4][i % 4],
                          "loss": [0, 1, 2, 4][i % 4], "exact": i % 2 == 0,
                          "judgement": kinds[i % 4],
                          "best_moves": [list(events[(i + 1) % 60].move)]}
              for i, ev in enumerate(events)}
    data = render_gif(game, events, 480, review)
    assert len(data) <= SIZE_BUDGET and len(_frames(data)) == 61, len(data)


def _players(game, moves) -> list[int]:
    """The player who made each of ``moves``."""
    state = game.new_state()
    out = []
    for mv in moves:
        out.append(state.to_move)
        state.play(mv)
    return out


def test_animation_gif_with_a_review_shows_each_moves_judgement(client, new_game, rq_worker):
    """With ``?review=``: each frame names its move's judgement and values, as the review
    has them (checked on the frames' scenes), the GIF differs from the one without and has
    another ETag; a review that is not of this game is a 422, an unknown one a 404."""
    from boxfish.service.pictures.animation import frame_notes
    from boxfish.service.pictures.notes import judgement_line

    game_id, auth, _ = new_game()
    state = engine.load_game("dots-and-boxes", width=2, height=2).new_state()
    rng = random.Random(5)
    while not state.is_terminal():
        mv = rng.choice(state.legal_moves())
        state.play(mv)
        _play(client, game_id, auth, [mv])
    resp = client.post(f"/v1/games/{game_id}/reviews", json={"time_ms": 200})
    assert resp.status_code == 202, resp.json
    review_id = resp.json["id"]
    deadline = time.monotonic() + 120
    while (view := client.get(f"/v1/reviews/{review_id}?wait=5").json)["status"] != "finished":
        assert view["status"] in ("queued", "started") and time.monotonic() < deadline, view
    url = f"/v1/games/{game_id}/animation.gif"
    plain = client.get(url + "?size=240")
    reviewed = client.get(url + f"?size=240&review={review_id}")
    assert reviewed.status_code == 200, reviewed.data
    assert reviewed.headers["ETag"] != plain.headers["ETag"]
    frames = _frames(reviewed.data)
    assert len(frames) == 13
    assert [f.tobytes() for f in frames] != [f.tobytes() for f in _frames(plain.data)]
    by_serial = {m["serial"]: m for m in view["moves"]}
    events = client.get(f"/v1/games/{game_id}/moves").json["moves"]
    for ev in events:
        event = type("E", (), {"serial": ev["serial"], "move": ev["move"],
                               "player": ev["player"]})
        notes, hint = frame_notes("dots-and-boxes", ev["serial"], event, by_serial)
        entry = by_serial[ev["serial"]]
        assert notes[0][0] == judgement_line(entry)[0]
        assert entry["judgement"] in notes[0][1]
        assert (hint is None) == (entry["judgement"] == "best")
    other_id, other_auth, _ = new_game()
    _play(client, other_id, other_auth, [(1, 1, 1)])
    wrong = client.get(f"/v1/games/{other_id}/animation.gif?review={review_id}")
    assert wrong.status_code == 422 and wrong.json["errors"][0]["loc"] == ["query", "review"]
    assert client.get(url + f"?review=rv_{'0' * 32}").status_code == 404
