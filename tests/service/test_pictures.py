"""Board pictures: GET /v1/games/{id}/board.{svg,png,txt} and /v1/analyses/{id}/board.*
(the drawing itself, with real games in a real Redis and analyses by a real RQ worker)."""

from __future__ import annotations

import io
import random
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
