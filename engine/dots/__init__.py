"""Dots and Boxes: rules, board structures (the move index, the chain state) and search."""

from ..game import register
from .chains import Chain, ChainKind, ChainState, Phase
from .game import NAME, DotsGame, _factory, dots_and_boxes
from .geometry import Geometry, geometry
from .state import DotsState, Opportunity

register(NAME, _factory)

__all__ = ["DotsGame", "DotsState", "Chain", "ChainKind", "ChainState", "Phase", "Opportunity",
           "Geometry", "geometry", "dots_and_boxes"]
