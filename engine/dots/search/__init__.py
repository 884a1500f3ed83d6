"""The Dots-and-Boxes search: negamax alpha-beta over the future-box margin, in two cores.

``driver`` (``analyse``, iterative deepening, proofs, the answer); ``node`` (the searcher and
the Python reference node); ``phases`` (the node's phases, one list for both cores);
``board`` (the tables of a board size and the transposition key); ``table`` (the Python
transposition table); ``evaluate`` (the horizon evaluation); ``caches`` (what a search
remembers, and its budget); ``compiled`` (the bridge to the C core, ``_core``, which runs
the same node node for node). Import the modules themselves: this package imports nothing,
as ``engine.dots.chain_dp`` imports ``board``.
"""
