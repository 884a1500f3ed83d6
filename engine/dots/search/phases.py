"""The phases of a search node, in the order both cores run them.

Each node of the search (the Python reference node, :mod:`node`, and the compiled core's
``search()``) runs these seven phases, in this order and under these names. A phase that
settles the node gives the value of the position after the forced captures; the node adds
the boxes they took. The captures come before the probe: the table keys the position after
them.

``node_captures``
    takes the forced captures (``capture_phase``), keeping the decision points; settles the
    node when the board is full or the boxes left cannot reach into the window.
``node_probe``
    keys the position (modulo symmetries and twins; a key handed down by the parent's cutoffs
    is used as is) and probes the table: settles the node when the entry is deep enough and
    decides the window; else gives the TT move (in a proof only a proven entry's).
``node_leaf``
    without decision points: settles the node by the chain DP when every box left has valence
    2, else by the chain graph (``chain_graph``) when no safe line is left (both stored as
    proven), or at depth 0 by the evaluation (a horizon value).
``node_generate``
    the moves to search, in order: the decision points' replies (take, and decline when there
    is one), or the safe lines best first (``gen_safe``); the TT move first (an unsafe one
    added in front, "tried"). The safe lines' generation order is kept for ``node_etc``,
    which probes in it.
``node_etc``
    enhanced transposition cutoffs (safe lines, at nodes with ``etc_min_free`` undrawn lines
    or more): keys every safe line's child and settles the node when one's entry refutes the
    window (the first in generation order); the keys are kept to be handed to the children.
``node_children``
    searches the moves (principal variation search; a capture keeps the turn), then the
    sacrifices (``gen_sacrifices``) when no safe line cut the node off, skipping a loony one
    whose bound cannot reach into the window (``loony_bound``): the best value and move, and
    whether they are proven (no horizon value used below). It calls the node of each child:
    the search stacks two frames per line it draws.
``node_store``
    stores the result in the table: exact, a lower or an upper bound, proven or at this
    depth, the best move in the key's frame.
"""

PHASES = ("node_captures", "node_probe", "node_leaf", "node_generate", "node_etc",
          "node_children", "node_store")
