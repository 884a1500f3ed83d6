/* The chain graph (engine/dots/chain_graph.py): the exact value of a position with no safe
 * line and no box to take whose chains still meet at joints. The rules, the normal form and
 * the caps are the Python's; its graphs are memoised in the chain DP's memo (Memos.loony),
 * under keys that start with a byte no chain DP key starts with. */
#include "core.h"

#define GRAPH_PARTS 20  /* chain_graph.MAX_PARTS: edges and loops */
#define GRAPH_JOINTS 15 /* chain_graph.MAX_JOINTS: a key holds a joint in 4 bits */
#define GRAPH_KEY 0xFF  /* a chain DP key starts with a chain's length (< 64) or 0 */

/* A graph: ``ne`` chains from joint a[i] to b[i] (a <= b; 0: the ground) of n[i] boxes, and
 * ``nl`` loops of loop[i] boxes. Normal: no joint of two lines, joints 1..k canonically, edges
 * and loops sorted. */
typedef struct {
    int ne, nl;
    uint8_t a[GRAPH_PARTS], b[GRAPH_PARTS], n[GRAPH_PARTS], loop[GRAPH_PARTS];
} Graph;

static void graph_degrees(const Graph *g, int *deg, int nv)
{
    memset(deg, 0, nv * sizeof(int));
    for (int i = 0; i < g->ne; i++) {
        deg[g->a[i]]++;
        deg[g->b[i]]++;
    }
}

static void graph_drop_edge(Graph *g, int i)
{
    g->ne--;
    g->a[i] = g->a[g->ne];
    g->b[i] = g->b[g->ne];
    g->n[i] = g->n[g->ne];
}

static void graph_add_edge(Graph *g, int x, int y, int n)
{
    g->a[g->ne] = (uint8_t)(x < y ? x : y);
    g->b[g->ne] = (uint8_t)(x < y ? y : x);
    g->n[g->ne++] = (uint8_t)n;
}

DEFINE_SORT(sort_u16, uint16_t)
DEFINE_SORT(sort_u64, uint64_t)

/* The sorted 16-bit words (joint a, joint b, length) of the edges under ``label``. */
static void graph_words(const Graph *g, const uint8_t *label, uint16_t *w)
{
    for (int i = 0; i < g->ne; i++) {
        int x = label[g->a[i]], y = label[g->b[i]];
        w[i] = (uint16_t)(((x < y ? x : y) << 12) | ((x < y ? y : x) << 8) | g->n[i]);
    }
    sort_u16(w, g->ne);
}

/* A hash of the multiset of ``x`` (sorted here) and ``h``. */
static uint64_t sorted_hash(uint64_t *x, int n, uint64_t h)
{
    sort_u64(x, n);
    for (int i = 0; i < n; i++)
        h = mix64(h ^ x[i]) + 0x9E3779B97F4A7C15ULL;
    return h;
}

/* chain_graph._relabel: joints (labels 1..nv-1) renumbered by their invariants (hashed here),
 * tied ones in their order; the edges rewritten, sorted. */
static void graph_relabel(Graph *g, int nv)
{
    /* each joint's chains (a joint is a box: four at most): length, vertex at the other end */
    int deg[GRAPH_JOINTS + 1] = {0};
    uint8_t len[GRAPH_JOINTS + 1][4], to[GRAPH_JOINTS + 1][4];
    for (int i = 0; i < g->ne; i++)
        for (int e = 0; e < 2; e++) {
            int u = e ? g->b[i] : g->a[i];
            if (u) {
                len[u][deg[u]] = g->n[i];
                to[u][deg[u]++] = e ? g->a[i] : g->b[i];
            }
        }
    uint64_t s0[GRAPH_JOINTS + 1], s1[GRAPH_JOINTS + 1], tmp[4];
    for (int j = 1; j < nv; j++) {
        for (int d = 0; d < deg[j]; d++)
            tmp[d] = (uint64_t)len[j][d] << 8 | (to[j][d] == 0 ? 0 : to[j][d] == j ? 1 : 2);
        s0[j] = sorted_hash(tmp, deg[j], 1);
    }
    for (int j = 1; j < nv; j++) {
        int k = 0;
        for (int d = 0; d < deg[j]; d++)
            if (to[j][d] != j)
                tmp[k++] = mix64((uint64_t)len[j][d] << 8 ^ (to[j][d] ? s0[to[j][d]] : 0));
        s1[j] = sorted_hash(tmp, k, s0[j]);
    }
    uint8_t order[GRAPH_JOINTS + 1]; /* joints by (invariant, label) */
    int k = 0;
    for (int j = 1; j < nv; j++)
        if (deg[j]) {
            int i = k++;
            while (i > 0 && s1[order[i - 1]] > s1[j]) {
                order[i] = order[i - 1];
                i--;
            }
            order[i] = (uint8_t)j;
        }
    uint16_t best[GRAPH_PARTS];
    uint8_t label[GRAPH_JOINTS + 1] = {0};
    for (int i = 0; i < k; i++)
        label[order[i]] = (uint8_t)(i + 1);
    graph_words(g, label, best);
    for (int i = 0; i < g->ne; i++) {
        g->a[i] = (uint8_t)(best[i] >> 12);
        g->b[i] = (uint8_t)(best[i] >> 8 & 15);
        g->n[i] = (uint8_t)best[i];
    }
}

/* chain_graph.normal_form of a graph whose joints are labelled below ``nv``. */
static void graph_normal(Graph *g, int nv)
{
    int deg[GRAPH_JOINTS + 1];
    for (;;) {
        graph_degrees(g, deg, nv);
        int j = 1;
        while (j < nv && deg[j] != 2)
            j++;
        if (j == nv)
            break;
        int at[2], na = 0;
        for (int i = 0; i < g->ne && na < 2; i++)
            if (g->a[i] == j || g->b[i] == j)
                at[na++] = i;
        if (na == 1) { /* a chain from j back to j: with j, a loop */
            g->loop[g->nl++] = (uint8_t)(g->n[at[0]] + 1);
            graph_drop_edge(g, at[0]);
            continue;
        }
        int x = g->a[at[0]] == j ? g->b[at[0]] : g->a[at[0]];
        int y = g->a[at[1]] == j ? g->b[at[1]] : g->a[at[1]];
        int n = g->n[at[0]] + 1 + g->n[at[1]];
        graph_drop_edge(g, at[1]); /* the later one first: dropping moves the last edge */
        graph_drop_edge(g, at[0]);
        graph_add_edge(g, x, y, n);
    }
    graph_relabel(g, nv);
    sort_u8(g->loop, g->nl);
}

/* ChainGraph.f: what the player not to move nets from a normal graph. ``solved``: counts
 * the graphs solved (memo misses). */
static int graph_f(Memos *M, const Graph *g, long long *solved)
{
    int joints = 0;
    for (int i = 0; i < g->ne; i++)
        if (g->b[i] > joints)
            joints = g->b[i];
    if (!joints) { /* independent chains and loops */
        uint8_t ch[GRAPH_PARTS], lp[GRAPH_PARTS];
        for (int i = 0; i < g->ne; i++)
            ch[i] = g->n[i];
        memcpy(lp, g->loop, g->nl);
        sort_u8(ch, g->ne);
        return loony_value(M, ch, g->ne, lp, g->nl);
    }
    uint8_t key[LKEY];
    int klen = 2 + 2 * g->ne + g->nl;
    key[0] = GRAPH_KEY;
    key[1] = (uint8_t)g->ne;
    for (int i = 0; i < g->ne; i++) {
        key[2 + 2 * i] = (uint8_t)(g->a[i] << 4 | g->b[i]);
        key[3 + 2 * i] = g->n[i];
    }
    memcpy(key + 2 + 2 * g->ne, g->loop, g->nl);
    LoonyMemo *m = loony_slot(M, key, klen);
    if (m && m->used)
        return m->value;
    (*solved)++;
    int deg[GRAPH_JOINTS + 1];
    graph_degrees(g, deg, joints + 1);
    int best = 1 << 30;
    for (int i = 0; i < g->ne; i++) {
        if (i && g->a[i] == g->a[i - 1] && g->b[i] == g->b[i - 1] && g->n[i] == g->n[i - 1])
            continue;
        Graph c = *g;
        int a = g->a[i], n = g->n[i];
        graph_drop_edge(&c, i);
        if (a && a == g->b[i] && deg[a] == 3) {
            /* the loop through joint a: a and the chain of its third line go with it */
            int s = 0;
            while (c.a[s] != a && c.b[s] != a)
                s++;
            n += 1 + c.n[s];
            graph_drop_edge(&c, s);
        }
        graph_normal(&c, joints + 1);
        int r = graph_f(M, &c, solved);
        int v = n <= 2 ? n - r : n - 2 + abs(2 - r);
        if (v < best)
            best = v;
    }
    for (int i = 0; i < g->nl; i++) {
        if (i && g->loop[i] == g->loop[i - 1])
            continue;
        Graph c = *g;
        memmove(c.loop + i, c.loop + i + 1, --c.nl - i);
        int n = g->loop[i], r = graph_f(M, &c, solved);
        int v = n - 4 + abs(4 - r);
        if (v < best)
            best = v;
    }
    loony_put(M, key, klen, best);
    return best;
}

/* ChainGraph.position_value of a position with no safe line and no box to take (the caller
 * checks both): 1 and the value for the player to move in *value when it has a joint, at most
 * GRAPH_JOINTS joints and GRAPH_PARTS chains and loops; else 0. Counts the calls, memo hits
 * and graphs solved in S. */
static int graph_position_value(Core *S, bb_t drawn, const uint8_t *vals, int *value)
{
    const Board *B = S->B;
    uint8_t label[MAXB];
    int k = 0;
    for (int b = 0; b < B->nb; b++)
        label[b] = vals[b] < 2 ? (uint8_t)++k : 0;
    if (!k || k > GRAPH_JOINTS)
        return 0;
    Graph g;
    g.ne = g.nl = 0;
    uint64_t seen = 0;
    for (int b0 = 0; b0 < B->nb; b0++) {
        if (vals[b0] != 2 || ((seen >> b0) & 1))
            continue;
        if (g.ne + g.nl == GRAPH_PARTS)
            return 0;
        Chain ch;
        walk_chain(B, drawn, vals, b0, &ch);
        seen |= ch.boxes;
        if (ch.loop)
            g.loop[g.nl++] = (uint8_t)ch.n;
        else
            graph_add_edge(&g, ch.end[0] < 0 ? 0 : label[ch.end[0]],
                           ch.end[1] < 0 ? 0 : label[ch.end[1]], ch.n);
    }
    graph_normal(&g, k + 1);
    S->graph_calls++;
    /* (a hit when the memo holds the graph: graph_f then returns it without solving) */
    long long solved = S->graph_solved;
    *value = -graph_f(S->M, &g, &S->graph_solved);
    S->graph_hits += S->graph_solved == solved;
    return 1;
}
