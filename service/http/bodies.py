"""Reading request bodies and integer parameters at the HTTP edge, with limits that hold before
any work is done:

- :func:`read_body`: at most ``max_body_bytes`` (+1 byte, to know it is too long) are read,
  with a ``Content-Length`` or chunked (``Transfer-Encoding: chunked``, no length); beyond, 413.
- :func:`parse_json`: the nesting depth of arrays and objects is measured on the text before
  ``json.loads`` (which recurses once per level, as does validation), so a body nested deeper
  than ``max_json_depth`` is a 400 (``reason`` ``too_deep``), never a ``RecursionError``.
  ``NaN`` and ``Infinity``, which Python's parser takes but JSON does not have, are malformed.
- :func:`parse_int`: a decimal integer of ASCII digits (no sign but ``-``, no spaces, no
  underscores) of at most 64 bits (:data:`service.http.models.MAX_INT`).
"""

from __future__ import annotations

import json
import re

from flask import Request
from werkzeug.exceptions import RequestEntityTooLarge

from ..application.games import HEAD_RE
from .models import MAX_INT
from .problems import Problem

#: What the depth scan looks at: brackets, and the quotes and backslashes that say whether a
#: bracket is inside a string.
_SIGNIFICANT = re.compile(r'[\[\]{}"\\]')
_INT = re.compile(r"-?[0-9]{1,19}")
#: Chunk size of reads from a chunked request body.
_READ_CHUNK = 16 * 1024


def read_body(request: Request, limit: int) -> bytes:
    """The request body, at most ``limit`` bytes: ``RequestEntityTooLarge`` (413) beyond.

    With a ``Content-Length``, Werkzeug reads exactly that (and refuses one over the limit
    before reading). Without one (a chunked body), the server's decoded input is read here,
    never more than ``limit + 1`` bytes; Werkzeug's own stream would stop at the limit
    silently and hand on a truncated body. A server that does not mark its input as ending
    (``wsgi.input_terminated``) gives no body without a length, as before."""
    environ = request.environ
    if request.content_length is not None or not environ.get("wsgi.input_terminated"):
        return request.get_data(cache=True)
    stream = environ["wsgi.input"]
    chunks, size = [], 0
    while size <= limit:
        chunk = stream.read(min(_READ_CHUNK, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size > limit:
        raise RequestEntityTooLarge()
    return b"".join(chunks)


def nesting_depth(text: str, cap: int) -> int:
    """The deepest nesting of arrays and objects in ``text`` outside strings, or ``cap + 1``
    as soon as it is deeper than ``cap`` (no need to look further). For text that is not JSON
    the number is an upper bound of how deep a parser gets before it fails.

    One pass over the brackets, quotes and backslashes, in time linear in the text whatever
    it holds (a regular expression for whole strings backtracks from every quote of an
    unterminated one: quadratic, 20 s of CPU for 64 KB of escaped quotes)."""
    depth = deepest = 0
    in_string = False
    escaped = -1  # the position of a character a backslash escapes
    for m in _SIGNIFICANT.finditer(text):
        i = m.start()
        if i == escaped:
            continue
        c = m.group()
        if in_string:
            if c == "\\":
                escaped = i + 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c == "[" or c == "{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > cap:
                    return deepest
        elif c == "]" or c == "}":
            depth = max(depth - 1, 0)
    return deepest


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def parse_json(raw: bytes, max_depth: int):
    """``raw`` parsed as JSON (UTF-8, -16 or -32, as ``json.loads`` detects): a 400 problem
    ``malformed-json`` if it is not, with ``reason`` ``too_deep`` if it nests deeper than
    ``max_depth``."""
    try:
        text = raw.decode(json.detect_encoding(raw), "surrogatepass")
    except (UnicodeDecodeError, LookupError) as exc:
        raise Problem(400, "malformed-json", "Malformed JSON",
                      f"the body is not JSON: {exc}") from None
    # Cheap first: text cannot nest deeper than it has opening brackets.
    if (text.count("[") + text.count("{") > max_depth
            and nesting_depth(text, max_depth) > max_depth):
        raise Problem(400, "malformed-json", "Malformed JSON",
                      f"the body nests arrays and objects more than {max_depth} levels deep",
                      reason="too_deep")
    try:
        return json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise Problem(400, "malformed-json", "Malformed JSON",
                      f"the body is not JSON: {exc}") from None


def parse_int(raw: str, minimum: int = 0, maximum: int = MAX_INT) -> int:
    """``raw`` as an integer from ``minimum`` to ``maximum``; ValueError (with a message for
    the client) otherwise."""
    if not _INT.fullmatch(raw):
        raise ValueError("not an integer")
    value = int(raw)
    if value < minimum:
        raise ValueError(f">= {minimum}")
    if value > maximum:
        raise ValueError(f"<= {maximum}")
    return value


def parse_position_tag(text: str) -> tuple[int, str | None]:
    """``(serial, head)`` of a :func:`service.store.events.position_tag` (an ``ETag`` or an
    event id), or ``(serial, None)`` of a bare serial (the old form). Raises ValueError (with a
    message for the client) on anything else."""
    serial, dot, head = text.partition(".")
    value = parse_int(serial)
    if dot and not HEAD_RE.fullmatch(head):
        raise ValueError("the head after the '.' must be 16 lowercase hex digits")
    return value, (head if dot else None)
