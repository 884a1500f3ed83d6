"""Held-out checks: every first move's value on boards whose values are published.

Boards are counted in boxes (3x3: three boxes wide, three high), as Berlekamp, Wilson and
Barker and Korf count them. A value is the first player's margin of boxes under best play.
"""

from __future__ import annotations

import pytest

from boxfish.engine import analyse, load_game


@pytest.mark.parametrize("w, h, value", [(3, 3, -3)])
def test_every_first_move_has_its_published_value(w, h, value):
    """3x3: the second player wins by 3 whatever the first move (Berlekamp, *The Dots and
    Boxes Game*, ch. 3; Wilson's 3x3 tables): every one of the 24 first moves is worth -3."""
    state = load_game("dots-and-boxes", width=w, height=h).new_state()
    a = analyse(state, time_ms=None)
    assert len(a.moves) == len(state.legal_moves()) == 24
    assert all(m.exact and m.value == value for m in a.moves), a.moves
    assert a.exact and a.value == value
