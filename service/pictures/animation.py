"""The animated GIF of a whole game: one frame per position, from the empty board (serial 0)
to the last move, each frame the game's board picture (:mod:`.scene`, drawn by
:func:`.png.render_image`) with the move just played in words beneath it; with a review
(``GET /v1/reviews/{id}``'s ``moves``) also its judgement, the values before and after it
and, when it lost something, the better move marked as the best (dashed).

Every frame shares one palette (made from the first and last frames, where every colour of
the game shows), so the GIF stores each frame as its difference from the one before: a
60-move 5x5 game at 480 pixels is about 130 KB, 320 KB with a review's lines
(:data:`SIZE_BUDGET` is what the tests hold it to).
"""

from __future__ import annotations

import io

from PIL import Image

from .notes import judgement_line, move_line
from .png import render_image

#: The frames' durations in milliseconds: each move, and the last position (held longer
#: before a chat client's loop starts again).
FRAME_MS = 1000
LAST_FRAME_MS = 4000
#: The size a 60-move 5x5 game's GIF at the default width keeps within (bytes): well under
#: what chats take inline (Discord's 8 MB upload limit; Slack and Telegram show far larger).
SIZE_BUDGET = 512 * 1024
#: The shared palette's colours.
COLOURS = 96


def frame_notes(game_name: str, serial: int, event, review: dict | None):
    """The text beneath frame ``serial``: the move that led to it (``event``: with
    ``serial``, ``move`` and ``player``; None at serial 0), with its judgement when
    ``review`` (serial -> the review's move) has it; and the move to mark as the better one
    (a move that lost something), or None."""
    if event is None:
        return [("0. the start", ("judgement",))], None
    entry = (review or {}).get(serial)
    if entry is None:
        return [(move_line(serial, event.player, event.move, game_name), ("judgement",))], None
    text, judgement = judgement_line(entry)
    hint = None
    if judgement != "best" and entry.get("best_moves"):
        hint = entry["best_moves"][0]
    return [(text, ("judgement", judgement))], hint


def render_gif(game, events, width: int, review: dict | None = None) -> bytes:
    """The GIF of ``game`` (an engine Game) played through ``events`` (each with ``serial``,
    ``move``, ``player``; serials from 1 in order), ``width`` pixels wide: ``len(events) +
    1`` frames. ``review``: the review's moves by serial, or None."""
    from . import scene_of

    state = game.new_state()
    scenes = []
    notes, hint = frame_notes(game.name, 0, None, review)
    scenes.append(scene_of(state, notes=notes, hint=hint))
    for event in events:
        state.play(tuple(event.move))
        notes, hint = frame_notes(game.name, event.serial, event, review)
        scenes.append(scene_of(state, notes=notes, hint=hint))
    height = max(round(s.height * width / s.width) for s in scenes)
    frames = [render_image(s, width, height) for s in scenes]
    both = Image.new("RGB", (width, 2 * height), "white")
    both.paste(frames[0], (0, 0))
    both.paste(frames[-1], (0, height))
    palette = both.quantize(COLOURS, method=Image.Quantize.MEDIANCUT,
                            dither=Image.Dither.NONE)
    coded = [f.quantize(palette=palette, dither=Image.Dither.NONE) for f in frames]
    out = io.BytesIO()
    durations = [FRAME_MS] * (len(coded) - 1) + [LAST_FRAME_MS]
    coded[0].save(out, format="GIF", save_all=True, append_images=coded[1:],
                  duration=durations, loop=0, optimize=True, disposal=1)
    return out.getvalue()
