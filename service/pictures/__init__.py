"""Board pictures: a position (and optionally an analysis of it) drawn as SVG or PNG, or
written as text.

:func:`scene_of` builds the one drawing model (:mod:`.scene`) of a position of either game;
:func:`.svg.render_svg` and :func:`.png.render_png` draw it; :func:`render` picks the format.
Text is the engine's own rendering (:mod:`boxfish.engine.text`), the one ``boxfish analyse``
prints. A component of its own: it imports the engine only (no Flask, no Redis); the HTTP
views serve what it draws.
"""

from __future__ import annotations

from boxfish.engine.text import analysis_text, position_text

from .dots import dots_scene
from .png import render_png
from .scene import Scene
from .svg import render_svg
from .xttt import xttt_scene

#: The picture formats and their media types.
MEDIA_TYPES = {"svg": "image/svg+xml", "png": "image/png", "txt": "text/plain; charset=utf-8"}


def scene_of(state, result: dict | None = None, labels: str = "best", notes=(),
             hint=None) -> Scene:
    """The scene of ``state`` (a Dots-and-Boxes or Extreme Tic-Tac-Toe state), with the
    analysis ``result`` (``Analysis.to_dict()``) drawn when given, its value labels as
    ``labels`` says (:data:`.notes.LABELS`); ``notes``: more text lines beneath the board
    (``(text, classes)``); ``hint``: a move marked best without an analysis. Raises
    ValueError for a game it cannot draw."""
    name = state.game.name
    if name == "dots-and-boxes":
        return dots_scene(state, result, labels, notes, hint)
    if name == "extreme-tictactoe":
        return xttt_scene(state, result, labels, notes, hint)
    raise ValueError(f"no pictures of {name!r} games")


def render(fmt: str, state, result: dict | None = None, width: int = 480,
           labels: str = "best") -> bytes:
    """The picture of ``state`` (and ``result``) in ``fmt`` (a key of :data:`MEDIA_TYPES`;
    ``width``: the PNG's width in pixels; ``labels``: which moves carry a value label in SVG
    and PNG, the text lists every one). Raises ValueError for an unknown format."""
    if fmt == "txt":
        game = state.game
        text = (position_text(game, state) if result is None
                else analysis_text(game, state, result))
        return (text + "\n").encode()
    if fmt == "svg":
        return render_svg(scene_of(state, result, labels))
    if fmt == "png":
        return render_png(scene_of(state, result, labels), width)
    raise ValueError(f"unknown picture format {fmt!r}")


__all__ = ["MEDIA_TYPES", "Scene", "render", "render_png", "render_svg", "scene_of"]
