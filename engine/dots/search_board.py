"""Lean tables for the Dots-and-Boxes search, one set per board size, cached at module level.

A position in the search is one int: bit ``i`` set = line (OpenSpiel action id) ``i`` drawn.
Box valences are recomputed from it with ``int.bit_count`` (cheap for the sizes we search).
Line ids and box ids are the spec's; the basic tables come from ``engine/dots/geometry.py``
(which imports nothing of the game), so the search can still be used and tested on its own.
"""

from __future__ import annotations

from functools import cache

from .geometry import geometry

# boards with more lines than this (10x10 and up) get no symmetry tables
SYM_MAX_LINES = 200


class Tables:
    """Per-size constants for the search.

    ``box_mask[b]``: the 4 line bits of box b; ``line_boxes[l]``: the boxes line l borders;
    ``other[l]``: dict box -> box on the other side of l (-1 = border);
    ``syms``: line permutations of the board's symmetries (identity first; 4 on a rectangle,
    8 on a square); ``chunks[s]``: byte tables that apply permutation s to a whole bitboard.
    """

    __slots__ = ("w", "h", "nl", "nb", "nh", "full", "box_mask", "box_lines", "line_boxes",
                 "other", "syms", "inv", "chunks", "nchunks", "moves", "fill_order", "fill_orders",
                 "line_box_mask", "cbits", "ctabs", "nimg", "twin_groups",
                 "kswap", "kswap1", "centrality", "twin_pairs", "line_imgs",
                 "bit_tabs", "box_nbrs")

    def __init__(self, w: int, h: int) -> None:
        self.w, self.h = w, h
        nh = (h + 1) * w
        self.nh = nh
        nl = self.nl = nh + h * (w + 1)
        self.nb = w * h
        self.full = (1 << nl) - 1
        geo = geometry(w, h)  # the spec's line and box ids, built once per size
        self.moves = moves = geo.moves
        self.box_lines = geo.box_lines
        self.box_mask = geo.box_mask
        self.line_boxes = adj = geo.line_boxes
        self.line_box_mask = geo.line_box_mask
        other = []
        for a in adj:
            d = {}
            if len(a) == 2:
                d[a[0]] = a[1]
                d[a[1]] = a[0]
            else:
                d[a[0]] = -1
            other.append(d)
        self.other = tuple(other)
        # box_nbrs[b]: (line bit, box across it or -1) for each of box b's four lines
        self.box_nbrs = tuple(tuple((1 << ln, o) for ln, o in row) for row in geo.box_neighbours)
        # symmetries: maps of dot coordinates (0-based, x in 0..w, y in 0..h)
        maps = [lambda x, y: (x, y), lambda x, y: (w - x, y), lambda x, y: (x, h - y),
                lambda x, y: (w - x, h - y)]
        if w == h:
            maps += [lambda x, y: (y, x), lambda x, y: (h - y, x), lambda x, y: (y, w - x),
                     lambda x, y: (h - y, w - x)]
        seg = {}
        for ln, (x, y, o) in enumerate(moves):
            a = (x - 1, y - 1)
            b = (x, y - 1) if o == 1 else (x - 1, y)
            seg[frozenset((a, b))] = ln
        syms = []
        for f in maps:
            perm = []
            for x, y, o in moves:
                a = (x - 1, y - 1)
                b = (x, y - 1) if o == 1 else (x - 1, y)
                perm.append(seg[frozenset((f(*a), f(*b)))])
            syms.append(tuple(perm))
        # dedupe (1xN boards etc. keep distinct maps; equal permutations are dropped)
        uniq = []
        for p in syms:
            if p not in uniq:
                uniq.append(p)
        if nl > SYM_MAX_LINES:
            # big boards: a time-bounded search meets almost no mirrored transposition, and the
            # tables would cost more to build than they save
            uniq = uniq[:1]
        self.syms = tuple(uniq)
        inv = []
        for p in self.syms:
            q = [0] * nl
            for i, j in enumerate(p):
                q[j] = i
            inv.append(tuple(q))
        self.inv = tuple(inv)
        nchunks = self.nchunks = (nl + 7) // 8
        chunks = []
        for p in self.syms[1:]:
            tabs = []
            for c in range(nchunks):
                single = [1 << p[c * 8 + bit] if c * 8 + bit < nl else 0 for bit in range(8)]
                tab = [0] * 256
                for byte in range(1, 256):
                    low = byte & -byte
                    tab[byte] = tab[byte ^ low] | single[low.bit_length() - 1]
                tabs.append(tuple(tab))
            chunks.append(tuple(tabs))
        self.chunks = (None,) + tuple(chunks)  # no table for the identity
        # all the non-identity images at once: ctabs[c][piece] is the images of chunk c's
        # bits (value ``piece``) packed side by side, image s - 1 in bits [(s-1)*nl, s*nl)
        nimg = self.nimg = len(self.syms) - 1
        # (bigger boards: small chunks, so that building the tables costs next to nothing)
        cb = self.cbits = 12 if nl <= 36 else 8
        ctabs = []
        if nimg and nl <= 64:
            for c in range((nl + cb - 1) // cb):
                single = []
                for bit in range(cb):
                    ln = c * cb + bit
                    m = 0
                    if ln < nl:
                        for s in range(1, nimg + 1):
                            m |= 1 << (self.syms[s][ln] + (s - 1) * nl)
                    single.append(m)
                tab = [0] * (1 << cb)
                for piece in range(1, 1 << cb):
                    low = piece & -piece
                    tab[piece] = tab[piece ^ low] | single[low.bit_length() - 1]
                ctabs.append(tuple(tab))
        self.ctabs = tuple(ctabs)
        # bit_tabs[c][piece]: the line ids of the set bits of chunk c (``bits`` by table)
        if nl <= 64:
            # one step per entry: the entry without its lowest bit, that bit's line in front
            bit_tabs = []
            for c in range((nl + cb - 1) // cb):
                tab = [()] * (1 << cb)
                for piece in range(1, 1 << cb):
                    low = piece & -piece
                    tab[piece] = (c * cb + low.bit_length() - 1,) + tab[piece ^ low]
                bit_tabs.append(tuple(tab))
            self.bit_tabs = tuple(bit_tabs)
        else:
            self.bit_tabs = ()
        # line_imgs[l]: bit l with its images packed as in ``key`` (identity in the low slice)
        self.line_imgs = tuple(
            (1 << ln) | sum(1 << (self.syms[s][ln] + s * nl) for s in range(1, nimg + 1))
            for ln in range(nl)) if ctabs else ()
        # twin lines: the border lines of one box are parallel strings from the same coin to
        # the ground in strings-and-coins, so swapping them maps a position to an equivalent
        # one. Only the lowest undrawn twin is searched, and keys sort the drawn twins first.
        groups = []
        for bl in self.box_lines:
            g = sorted(ln for ln in bl if len(adj[ln]) == 1)
            if len(g) >= 2:
                groups.append(tuple(g))
        self.twin_groups = tuple(groups)
        net = []
        for g in groups:
            # a bubble-sort network on the group's bits: drawn lines move to the low ids
            for top in range(len(g) - 1, 0, -1):
                for i in range(top):
                    net.append((g[i], g[i + 1]))
        # (bit of a, b - a) for twins a < b: shifting the free a bits up masks out the b's
        self.twin_pairs = tuple((1 << g[i], g[j] - g[i]) for g in groups
                                for i in range(len(g)) for j in range(i + 1, len(g)))
        slices = nimg + 1 if ctabs else 1
        self.kswap = tuple((sum(1 << (a + k * nl) for k in range(slices)), b - a)
                           for a, b in net)
        self.kswap1 = tuple((1 << a, b - a) for a, b in net)
        # centrality of each line: minus its (scaled) squared distance from the board's centre
        cen = []
        for x, y, o in moves:
            mx, my = (2 * x + 1, 2 * y) if o == 1 else (2 * x, 2 * y + 1)
            cen.append(-((mx - (w + 2)) ** 2 + (my - (h + 2)) ** 2))
        self.centrality = tuple(cen)
        # a fixed, spread-out order for the evaluation's greedy fill of safe lines
        self.fill_order = tuple(sorted(range(nl), key=lambda ln: (ln * 7919) % (nl * 2 + 1)))
        import random as _random
        rng = _random.Random(nl)
        orders = [self.fill_order]
        for _ in range(4):
            o = list(range(nl))
            rng.shuffle(o)
            orders.append(tuple(o))
        self.fill_orders = tuple(orders)

    def permute(self, drawn: int, s: int) -> int:
        if s == 0:
            return drawn
        tabs = self.chunks[s]
        m = 0
        c = 0
        while drawn:
            m |= tabs[c][drawn & 255]
            drawn >>= 8
            c += 1
        return m

    def canonical(self, drawn: int) -> tuple[int, int]:
        """(smallest image of ``drawn`` under the board's symmetries, index of that symmetry)."""
        ctabs = self.ctabs
        if ctabs:
            cb = self.cbits
            mask = (1 << cb) - 1
            packed = 0
            d = drawn
            for tab in ctabs:
                packed |= tab[d & mask]
                d >>= cb
            nl = self.nl
            full = self.full
            best = drawn
            bs = 0
            for s in range(1, self.nimg + 1):
                m = packed & full
                if m < best:
                    best = m
                    bs = s
                packed >>= nl
            return best, bs
        best = drawn
        bs = 0
        chunks = self.chunks
        for s in range(1, len(chunks)):
            tabs = chunks[s]
            m = 0
            d = drawn
            c = 0
            while d:
                m |= tabs[c][d & 255]
                d >>= 8
                c += 1
            if m < best:
                best = m
                bs = s
        return best, bs

    def key(self, drawn: int, symmetry: bool = True) -> tuple[int, int]:
        """The transposition key of ``drawn``: the smallest twin-sorted image under the
        board's symmetries (``symmetry=False``: of ``drawn`` itself), and the index of the
        symmetry that gave it. Positions with equal keys have equal values."""
        ctabs = self.ctabs if symmetry else ()
        if ctabs:
            cb = self.cbits
            mask = (1 << cb) - 1
            nl = self.nl
            packed = 0
            d = drawn
            for tab in ctabs:
                packed |= tab[d & mask]
                d >>= cb
            packed = (packed << nl) | drawn
            for ma, sh in self.kswap:
                c = (packed >> sh) & ma & ~packed
                if c:
                    packed ^= c | (c << sh)
            full = self.full
            best = packed & full
            bs = 0
            for s in range(1, self.nimg + 1):
                packed >>= nl
                m = packed & full
                if m < best:
                    best = m
                    bs = s
            return best, bs
        if symmetry and len(self.syms) > 1:
            best, bs = self.canonical(drawn)
            drawn = self.permute(drawn, bs)
        else:
            bs = 0
        for ma, sh in self.kswap1:
            c = (drawn >> sh) & ma & ~drawn
            if c:
                drawn ^= c | (c << sh)
        return drawn, bs

    def from_key_frame(self, drawn: int, line: int, s: int) -> int:
        """The line of ``drawn`` that plays the role of ``line`` (a line of the key's frame,
        symmetry ``s``): its preimage, or, when the twin sort moved it, the lowest undrawn
        twin (all undrawn twins are worth the same). -1 when there is none."""
        ln = self.inv[s][line] if s else line
        if drawn >> ln & 1:
            for g in self.twin_groups:
                if ln in g:
                    for x in g:
                        if not drawn >> x & 1:
                            return x
            return -1
        return ln

    def line_id(self, x: int, y: int, o: int) -> int:
        if o == 1:
            return (y - 1) * self.w + (x - 1)
        return self.nh + (y - 1) * (self.w + 1) + (x - 1)

    def valences(self, drawn: int) -> list[int]:
        return [(drawn & m).bit_count() for m in self.box_mask]

    def completes(self, drawn: int, line: int) -> int:
        """Boxes drawing ``line`` completes (0, 1 or 2)."""
        n = 0
        for b in self.line_boxes[line]:
            if (drawn & self.box_mask[b]).bit_count() == 3:
                n += 1
        return n


@cache
def tables(w: int, h: int) -> Tables:
    return Tables(w, h)
