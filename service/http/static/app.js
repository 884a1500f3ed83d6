// Boxfish pages: the start page (create or open a game) and the live analysis board.
// Vanilla ES module, no build step; it calls only the public JSON API of the same origin.

const GAME_NAMES = { "dots-and-boxes": "Dots and Boxes", "extreme-tictactoe": "Extreme Tic-Tac-Toe" };
const TIME_CHOICES = [100, 250, 500, 1000, 2000, 5000, 10000, 30000];
const RECONNECT_MS = 2000;
const POLL_MS = 250;

const $ = (id) => document.getElementById(id);

/** The localStorage key of a game's write token (kept in this browser, never in a URL). */
const tokenKey = (gameId) => `boxfish:token:${gameId}`;

function storedToken(gameId) {
  try {
    return localStorage.getItem(tokenKey(gameId));
  } catch {
    return null; // storage disabled: watch only
  }
}

/** fetch, then the JSON body; throws an Error whose message is the problem's detail. */
async function api(path, options = {}) {
  const resp = await fetch(path, { ...options, headers: { Accept: "application/json", ...(options.headers || {}) } });
  const type = resp.headers.get("Content-Type") || "";
  const body = type.includes("json") ? await resp.json() : null;
  if (!resp.ok) {
    const err = new Error((body && (body.detail || body.title)) || `${resp.status} ${resp.statusText}`);
    err.status = resp.status;
    err.problem = body;
    throw err;
  }
  return body;
}

function newIdempotencyKey() {
  if (crypto.randomUUID) return crypto.randomUUID();
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
}

function fillTimeSelect(select, maxMs, defaultMs) {
  const choices = TIME_CHOICES.filter((t) => t <= maxMs);
  if (!choices.includes(defaultMs)) choices.push(defaultMs);
  choices.sort((a, b) => a - b);
  for (const t of choices) {
    const option = document.createElement("option");
    option.value = String(t);
    option.textContent = t < 1000 ? `${t} ms` : `${t / 1000} s`;
    option.selected = t === defaultMs;
    select.append(option);
  }
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else node.setAttribute(name, value);
  }
  node.append(...children);
  return node;
}

const moveText = (move) => (move ? `(${move.join(",")})` : "none");
// Players are numbered as in the API and on the board pictures: 0 moves first.
const playerName = (p) => `Player ${p}`;

// ---------------------------------------------------------------------------------------
// The start page

function homePage(body) {
  const maxMs = Number(body.dataset.maxTimeMs);
  const defaultMs = Number(body.dataset.defaultTimeMs);
  fillTimeSelect($("engine-time"), maxMs, defaultMs);
  const form = $("create");
  const message = $("create-message");
  const syncForm = () => {
    const dots = form.elements.game.value === "dots-and-boxes";
    $("dots-size").disabled = !dots;
    const engine = $("engine").checked;
    $("seat").disabled = !engine;
    $("engine-time").disabled = !engine;
  };
  form.addEventListener("change", syncForm);
  syncForm();

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const game = form.elements.game.value;
    const request = { game };
    if (game === "dots-and-boxes") {
      request.width = Number(form.elements.width.value);
      request.height = Number(form.elements.height.value);
    }
    if ($("engine").checked) {
      request.engine = { seat: Number($("seat").value), time_ms: Number($("engine-time").value) };
    }
    message.textContent = "creating…";
    try {
      const created = await api("/v1/games", {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(request),
      });
      try {
        localStorage.setItem(tokenKey(created.id), created.write_token);
      } catch {
        // storage disabled: the game can be watched, not played, from this browser
      }
      window.location.assign(`/games/${encodeURIComponent(created.id)}`);
    } catch (err) {
      message.textContent = `Could not create the game: ${err.message}`;
    }
  });

  $("open").addEventListener("submit", (event) => {
    event.preventDefault();
    const id = $("open-id").value.trim();
    if (id) window.location.assign(`/games/${encodeURIComponent(id)}`);
  });

  loadRecent();
}

async function loadRecent() {
  const list = $("recent");
  const message = $("recent-message");
  try {
    const { games } = await api("/v1/games?limit=20");
    list.replaceChildren();
    if (!games.length) message.textContent = "No games yet.";
    for (const g of games) {
      const size = g.width ? ` ${g.width}×${g.height}` : "";
      const engine = g.engine ? ` · engine plays ${playerName(g.engine.seat)}` : "";
      const status = g.status === "finished" ? "finished" : "in progress";
      const mine = storedToken(g.id) ? " · yours" : "";
      const when = new Date(g.created_at).toLocaleString();
      list.append(el("li", {},
        el("a", { href: `/games/${encodeURIComponent(g.id)}` }, `${GAME_NAMES[g.game] || g.game}${size}`),
        el("span", { class: "meta", text: ` · ${g.serial} moves · ${status}${engine}${mine} · ${when}` })));
    }
  } catch (err) {
    message.textContent = `Could not list the games: ${err.message}`;
  }
}

// ---------------------------------------------------------------------------------------
// The game page

class GamePage {
  constructor(body) {
    this.id = body.dataset.gameId;
    this.base = `/v1/games/${encodeURIComponent(this.id)}`;
    this.token = storedToken(this.id);
    /** Move summaries (with scores, to_move, status when known), index = serial - 1. */
    this.moves = [];
    /** The serial shown; null: follow the live end. */
    this.fixed = null;
    this.view = null; // the game as GET /v1/games/{id} answered
    this.events = null;
    this.reconnectTimer = null;
    this.lost = false;
    this.boardRequest = 0;
    this.explorerRequest = 0;
    this.analysis = null; // {serial, result, svg} of the last finished analysis
    this.analysisRun = 0;
    /** The id (`<serial>.<head>`) of the last `game` event: the log position the moves were
     * reloaded from after the log was rewritten (null: never). The board pictures' URLs
     * carry it, so that no picture of a lost history is taken from the browser's cache
     * (pictures at `?at=` are revalidated, but a URL of its own needs no round trip). */
    this.history = null;
    this.reloadRun = 0;
    /** Stream moves that came while a reload was loading (merged after it), or null. */
    this.pending = null;
    fillTimeSelect($("analysis-time"), Number(body.dataset.maxTimeMs), Number(body.dataset.defaultTimeMs));
  }

  get live() {
    return this.moves.length;
  }

  get shown() {
    return this.fixed === null ? this.live : this.fixed;
  }

  async start() {
    this.bindControls();
    try {
      this.view = await api(this.base);
      const { moves } = await api(`${this.base}/moves`);
      this.merge(moves);
    } catch (err) {
      this.say(`Could not load the game: ${err.message}`);
      return;
    }
    const at = new URLSearchParams(window.location.search).get("at");
    if (at !== null && /^\d+$/.test(at) && Number(at) < this.live) this.fixed = Number(at);
    this.render();
    this.connect();
  }

  // -- the log ---------------------------------------------------------------------------

  /** Add moves (summaries or stream events) in serial order; a gap asks for a re-sync. */
  merge(events) {
    let added = false;
    for (const e of events) {
      if (e.serial <= this.live) {
        Object.assign(this.moves[e.serial - 1], e); // a later, fuller copy of a known move
      } else if (e.serial === this.live + 1) {
        this.moves.push({ ...e });
        added = true;
      } else {
        this.resync();
        break;
      }
    }
    return added;
  }

  async resync() {
    try {
      const { moves, serial } = await api(`${this.base}/moves?after=${this.live}`);
      const added = this.merge(moves);
      if (added || serial !== this.view.serial) await this.refreshView();
      else this.render();
    } catch (err) {
      this.setConnection(`reconnecting… (${err.message})`, "lost");
    }
  }

  /** The log no longer has moves this page holds (a `game` event whose id is `position`):
   * load the game and all its moves afresh, forget the analysis (of a position that may be
   * gone) and draw the boards anew; moves the stream brings meanwhile are merged after. */
  async reload(position) {
    const run = ++this.reloadRun;
    this.pending = this.pending || [];
    let view, moves;
    try {
      view = await api(this.base);
      ({ moves } = await api(`${this.base}/moves`));
    } catch (err) {
      if (run === this.reloadRun) {
        this.pending = null;
        this.setConnection(`reconnecting… (${err.message})`, "lost");
      }
      return;
    }
    if (run !== this.reloadRun) return; // a later game event reloads again
    const pending = this.pending;
    this.pending = null;
    this.history = position || `${view.serial}@${Date.now()}`;
    this.view = view;
    this.moves = [];
    if (this.analysis) $("analysis-status").textContent = "";
    this.analysis = null;
    this.merge(moves);
    this.merge(pending);
    if (this.fixed !== null && this.fixed > this.live) this.fixed = null;
    this.onNewMoves();
    if (this.finished()) {
      if (this.events) this.events.close();
      this.setConnection("game over", "done");
    }
  }

  async refreshView() {
    try {
      this.view = await api(this.base);
    } catch {
      // the last view stays; the next event tries again
    }
    this.render();
  }

  finished() {
    const last = this.moves[this.live - 1];
    return (last && last.status === "finished") || (this.view && this.view.status === "finished" && this.view.serial <= this.live);
  }

  // -- the event stream ------------------------------------------------------------------

  connect() {
    clearTimeout(this.reconnectTimer);
    if (this.events) this.events.close();
    if (this.finished()) {
      this.setConnection("game over", "done");
      return;
    }
    // The first stream: ?after= the serial of the moves just loaded, no opening `game` event,
    // only the moves after it. The browser resumes it with Last-Event-ID (`<serial>.<head>`,
    // which the server checks) after a lost connection. A stream started again here, after
    // the browser gave up (an error answer: a 503 while the store fails over, say), starts
    // afresh instead: a bare ?after= is trusted even if the log lost moves this page shows,
    // while a fresh stream's opening `game` event reloads the game from the log.
    const from = this.events ? "" : `?after=${this.live}`;
    const events = new EventSource(`${this.base}/events${from}`);
    this.events = events;
    events.addEventListener("open", () => {
      if (this.lost) this.resync(); // anything missed while the connection was down
      this.lost = false;
      this.setConnection("live", "live");
    });
    // A `game` event on a stream opened with ?after= (or resumed with Last-Event-ID) says
    // the log no longer has moves this page holds (a store failover lost them; see the
    // README); on a stream started afresh it is the log's state. Either way: load the game
    // and its moves afresh.
    events.addEventListener("game", (event) => this.reload(event.lastEventId));
    events.addEventListener("move", (event) => {
      const move = JSON.parse(event.data);
      if (this.pending) this.pending.push(move); // a reload is loading: merged after it
      else if (this.merge([move])) this.onNewMoves();
      if (move.status === "finished") {
        events.close();
        this.setConnection("game over", "done");
      }
    });
    events.addEventListener("error", () => {
      if (this.finished()) {
        events.close();
        return;
      }
      this.lost = true;
      this.setConnection("reconnecting…", "lost");
      if (events.readyState === EventSource.CLOSED) {
        // The browser gave up (an error answer): start a new stream after a pause.
        this.reconnectTimer = setTimeout(() => this.connect(), RECONNECT_MS);
      }
    });
  }

  onNewMoves() {
    const last = this.moves[this.live - 1];
    // (an entry of /moves has to_move but no status: only a move's answer or event has both)
    if (last && last.status !== undefined) {
      Object.assign(this.view, { serial: last.serial, to_move: last.to_move, status: last.status });
    }
    this.render();
    // The engine seat's status and a finished game's result come with the game's view.
    if (this.view.engine || (last && last.status === "finished")) this.refreshView();
  }

  setConnection(text, state) {
    const node = $("connection");
    node.textContent = text;
    node.dataset.state = state;
  }

  // -- what is shown ---------------------------------------------------------------------

  go(serial) {
    if (serial === null || serial >= this.live) this.fixed = null;
    else this.fixed = Math.max(0, serial);
    this.say("");
    this.render();
  }

  render() {
    const shown = this.shown;
    const url = new URL(window.location.href);
    if (this.fixed === null) url.searchParams.delete("at");
    else url.searchParams.set("at", String(this.fixed));
    history.replaceState(null, "", url.pathname + url.search);

    $("position").textContent = this.fixed === null
      ? `move ${shown} of ${this.live} · live`
      : `move ${shown} of ${this.live}`;
    $("first").disabled = $("prev").disabled = shown === 0;
    $("next").disabled = $("last").disabled = this.fixed === null;
    this.renderSummary(shown);
    this.renderMoves(shown);
    this.renderBoard(shown);
    this.renderAnalysisList(shown);
    this.renderExplorer(shown);
    this.renderHint();
  }

  renderSummary(shown) {
    // Both games score a point per box (block) completed, and the side to move at a past
    // position is the player of the next move; at the live end the game's view says.
    const view = this.view;
    const scores = [0, 0];
    for (const m of this.moves.slice(0, shown)) scores[m.player] += m.completed;
    const atLive = shown === this.live;
    const finished = atLive ? this.finished() : false;
    const toMove = atLive ? (view.serial === this.live ? view.to_move : undefined) : this.moves[shown].player;
    const parts = [
      el("span", { class: "score p0" }, `${playerName(0)}: `, el("strong", { text: String(scores[0]) })),
      el("span", { class: "score p1" }, `${playerName(1)}: `, el("strong", { text: String(scores[1]) })),
    ];
    let turn = "";
    if (finished) {
      turn = "Game over";
      const result = view.serial === this.live ? view.result : null;
      if (result && result.winner !== undefined) {
        turn += result.winner === null ? ": a draw" : `: ${playerName(result.winner)} wins`;
      }
    } else if (toMove !== null && toMove !== undefined) {
      turn = `${playerName(toMove)} to move`;
      if (view.engine && view.engine.seat === toMove) {
        turn += atLive ? ` (the engine: ${view.engine.status})` : " (the engine)";
      }
    }
    parts.push(el("span", { class: "turn", id: "turn", text: turn }));
    $("summary").replaceChildren(...parts);
  }

  renderMoves(shown) {
    const list = $("moves");
    const items = [this.moveItem(0, "start", shown)];
    for (const m of this.moves) {
      const boxes = m.completed ? ` +${m.completed}` : "";
      items.push(this.moveItem(m.serial, `${playerName(m.player)} ${moveText(m.move)}${boxes}`, shown));
    }
    list.replaceChildren(...items);
    const current = list.querySelector("[aria-current]");
    if (current && list.scrollHeight > list.clientHeight) current.scrollIntoView({ block: "nearest" });
  }

  moveItem(serial, text, shown) {
    const button = el("button", { type: "button", "data-serial": String(serial) },
      el("span", { class: "serial", text: String(serial) }), ` ${text}`);
    if (serial === shown) button.setAttribute("aria-current", "step");
    return el("li", {}, button);
  }

  async renderBoard(shown) {
    const request = ++this.boardRequest;
    const analysed = this.analysis && this.analysis.serial === shown;
    const history = this.history ? `&log=${encodeURIComponent(this.history)}` : "";
    const url = analysed ? this.analysis.svgUrl : `${this.base}/board.svg?at=${shown}${history}`;
    let text;
    try {
      const resp = await fetch(url);
      if (!resp.ok) throw new Error(`${resp.status} ${resp.statusText}`);
      text = await resp.text();
    } catch (err) {
      if (request === this.boardRequest) this.say(`Could not draw the board: ${err.message}`);
      return;
    }
    if (request !== this.boardRequest) return; // a later view asked for another board
    const doc = new DOMParser().parseFromString(text, "image/svg+xml");
    const svg = doc.documentElement;
    if (svg.nodeName !== "svg") return;
    const node = document.importNode(svg, true);
    // The page's policy refuses inline styles: /board.css has the same rules.
    for (const style of node.querySelectorAll("style")) style.remove();
    node.removeAttribute("width");
    node.removeAttribute("height");
    node.setAttribute("role", "img");
    node.setAttribute("aria-label", `Board after move ${shown}`);
    if (this.canPlay()) {
      for (const target of node.querySelectorAll(".slot[data-move], .cell.legal[data-move]")) {
        target.setAttribute("tabindex", "0");
        target.setAttribute("role", "button");
        target.setAttribute("aria-label", `play ${moveText(target.dataset.move.split(","))}`);
      }
      node.classList.add("playable");
    }
    $("board").replaceChildren(node);
  }

  renderHint() {
    let hint;
    if (!this.token) hint = "Watching: this game was created in another browser, so it cannot be played from here.";
    else if (this.finished()) hint = "The game is over.";
    else if (this.fixed !== null) hint = "Go to the latest position (End) to play.";
    else hint = "Your game: click a line or cell (or Tab to it and press Enter) to play it.";
    $("play-hint").textContent = hint;
  }

  say(text) {
    $("message").textContent = text;
  }

  // -- playing ---------------------------------------------------------------------------

  canPlay() {
    return Boolean(this.token) && this.fixed === null && !this.finished();
  }

  /** Why a click on the board cannot become a move, or null when it can be sent. */
  whyNot() {
    if (!this.token) return "You can only watch this game: its write token is not in this browser (it was created elsewhere).";
    if (this.finished()) return "The game is over: no more moves.";
    if (this.fixed !== null) return `You are looking at move ${this.fixed}; go to the latest position (End) to play.`;
    return null;
  }

  async play(target) {
    const why = this.whyNot();
    if (why) {
      this.say(why);
      return;
    }
    const move = target.dataset.move.split(",").map(Number);
    this.say(`playing ${moveText(move)}…`);
    try {
      const event = await api(`${this.base}/moves`, {
        method: "POST",
        headers: {
          "Content-Type": "application/json",
          Authorization: `Bearer ${this.token}`,
          "Idempotency-Key": newIdempotencyKey(),
        },
        body: JSON.stringify({ move, serial: this.live + 1 }),
      });
      this.say("");
      if (this.merge([event])) this.onNewMoves();
    } catch (err) {
      this.say(`${moveText(move)} was not played: ${err.message}`);
      if (err.status === 409) this.resync();
    }
  }

  // -- analysis --------------------------------------------------------------------------

  async analyse() {
    const serial = this.shown;
    const run = ++this.analysisRun;
    const status = $("analysis-status");
    const timeMs = Number($("analysis-time").value);
    $("analyse").disabled = true;
    status.textContent = `analysing move ${serial}…`;
    $("analysis-moves").replaceChildren();
    try {
      let job = await api(`${this.base}/analyses`, {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ at: serial, time_ms: timeMs }),
      });
      while (job.status === "queued" || job.status === "started") {
        if (run !== this.analysisRun) return;
        status.textContent = this.progressText(job, serial);
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
        job = await api(`/v1/analyses/${encodeURIComponent(job.id)}`);
      }
      if (run !== this.analysisRun) return;
      if (job.status === "failed") throw new Error(job.error || "the analysis failed");
      const result = job.result;
      this.analysis = { serial, result, svgUrl: `/v1/analyses/${encodeURIComponent(job.id)}/board.svg?labels=all` };
      status.textContent = `Move ${serial}: best ${moveText(result.best_move)}, ${valueText(result.value, result.bound, result.mate_in)}`
        + ` · depth ${result.depth} · ${result.nodes.toLocaleString()} nodes`;
      status.dataset.state = "done";
      this.render();
    } catch (err) {
      status.textContent = `Analysis failed: ${err.message}`;
    } finally {
      if (run === this.analysisRun) $("analyse").disabled = false;
    }
  }

  progressText(job, serial) {
    const p = job.progress;
    if (job.status === "queued" || !p) return `analysing move ${serial}: waiting for a worker…`;
    const best = p.best_move ? ` · best so far ${moveText(p.best_move)} ${valueText(p.value, p.exact ? "exact" : "estimate", p.mate_in)}` : "";
    return `analysing move ${serial}: depth ${p.depth} · ${(p.nodes || 0).toLocaleString()} nodes${best}`;
  }

  renderAnalysisList(shown) {
    const list = $("analysis-moves");
    const a = this.analysis;
    if (!a || a.serial !== shown) {
      list.replaceChildren();
      if (a) $("analysis-status").textContent = `The analysis is of move ${a.serial}: go there to see it.`;
      return;
    }
    const best = a.result.best_move ? a.result.best_move.join(",") : null;
    const rows = [...a.result.moves].sort((x, y) => y.value - x.value).map((m) => {
      const bound = m.bound || (m.exact ? "exact" : "estimate");
      const isBest = m.move.join(",") === best;
      const button = el("button", { type: "button", class: `value-row ${bound}${isBest ? " best" : ""}`, "data-move": m.move.join(",") },
        el("span", { class: "move", text: moveText(m.move) }),
        el("span", { class: "value", text: valueText(m.value, bound, m.mate_in) }),
        el("span", { class: "kind", text: isBest ? `${bound} · best` : bound }));
      return el("li", {}, button);
    });
    list.replaceChildren(...rows);
  }

  // -- the opening explorer (GET /v1/explorer) --------------------------------------------

  async renderExplorer(shown) {
    const request = ++this.explorerRequest;
    const v = this.view;
    const params = new URLSearchParams({ game: v.game });
    if (v.width !== undefined) params.set("width", String(v.width));
    if (v.height !== undefined) params.set("height", String(v.height));
    params.set("moves", JSON.stringify(this.moves.slice(0, shown).map((m) => m.move)));
    let answer;
    try {
      answer = await api(`/v1/explorer?${params}`);
    } catch (err) {
      if (request === this.explorerRequest) $("explorer-status").textContent = `The explorer did not answer: ${err.message}`;
      return;
    }
    if (request !== this.explorerRequest) return; // a later view asked for another position
    const status = $("explorer-status");
    if (shown >= answer.max_moves) status.textContent = `The explorer goes ${answer.max_moves} moves deep.`;
    else if (!answer.moves.length) status.textContent = "No finished game has reached this position yet.";
    else status.textContent = `${answer.games} finished game${answer.games === 1 ? "" : "s"} from here:`;
    const rows = answer.moves.map((m) => {
      const margin = m.mean_margin > 0 ? `+${m.mean_margin}` : String(m.mean_margin);
      return el("li", {},
        el("span", { class: "value-row explorer-row", "data-move": m.move.join(",") },
          el("span", { class: "move", text: moveText(m.move) }),
          el("span", { class: "value", text: `${m.games} game${m.games === 1 ? "" : "s"}` }),
          el("span", { class: "kind", text: `${m.wins[0]}–${m.draws}–${m.wins[1]} · margin ${margin}` })));
    });
    $("explorer-moves").replaceChildren(...rows);
  }

  // -- controls --------------------------------------------------------------------------

  bindControls() {
    $("first").addEventListener("click", () => this.go(0));
    $("prev").addEventListener("click", () => this.go(this.shown - 1));
    $("next").addEventListener("click", () => this.go(this.shown + 1));
    $("last").addEventListener("click", () => this.go(null));
    $("moves").addEventListener("click", (event) => {
      const button = event.target.closest("button[data-serial]");
      if (button) this.go(Number(button.dataset.serial));
    });
    $("analyse-form").addEventListener("submit", (event) => {
      event.preventDefault();
      this.analyse();
    });
    $("analysis-moves").addEventListener("click", (event) => {
      const row = event.target.closest("[data-move]");
      if (row && this.canPlay()) this.play(row);
    });
    const board = $("board");
    board.addEventListener("click", (event) => {
      const target = event.target.closest("[data-move]");
      if (target && board.contains(target)) this.play(target);
    });
    board.addEventListener("keydown", (event) => {
      const target = event.target.closest && event.target.closest("[data-move]");
      if (target && (event.key === "Enter" || event.key === " ")) {
        event.preventDefault();
        this.play(target);
      }
    });
    document.addEventListener("keydown", (event) => {
      if (event.altKey || event.ctrlKey || event.metaKey) return;
      const tag = event.target.tagName;
      if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA") return;
      const keys = {
        ArrowLeft: () => this.go(this.shown - 1),
        ArrowRight: () => this.go(this.shown + 1),
        Home: () => this.go(0),
        End: () => this.go(null),
      };
      if (keys[event.key]) {
        event.preventDefault();
        keys[event.key]();
      }
    });
  }
}

/** A value for the side to move: "+2" exact, "≥ +1" / "≤ +1" bounds, "≈ +0.5" estimates. */
function valueText(value, bound, mateIn) {
  if (mateIn !== null && mateIn !== undefined) {
    if (mateIn > 0) return `wins in ${mateIn}`;
    if (mateIn < 0) return `loses in ${-mateIn}`;
    return value > 0 ? "won" : "lost";
  }
  const number = Number.isInteger(value) ? String(Math.abs(value)) : Math.abs(value).toFixed(1);
  const signed = value > 0 ? `+${number}` : value < 0 ? `−${number}` : "0";
  const prefix = { exact: "", lower: "≥ ", upper: "≤ ", estimate: "≈ " }[bound] ?? "";
  return prefix + signed;
}

const body = document.body;
if (body.dataset.page === "home") homePage(body);
else if (body.dataset.page === "game") new GamePage(body).start();
