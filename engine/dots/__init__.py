"""Dots and Boxes: rules, board structures (seed 000 index, seed 004 chains) and search."""

from ..game import register
from .chains import Chain, ChainState
from .game import NAME, DotsGame, _factory, dots_and_boxes
from .geometry import Geometry, geometry
from .state import DotsState, Opportunity

register(NAME, _factory)

__all__ = ["DotsGame", "DotsState", "Chain", "ChainState", "Opportunity", "Geometry",
           "geometry", "dots_and_boxes"]
