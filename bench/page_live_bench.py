"""How soon a move appended through the API shows on the game's page, in headless Chromium.

Starts ``boxfish serve --workers 0`` (embedded Redis and gunicorn; no analysis worker is
needed) on a free port and Debian's ``chromium`` with its ``chromium-driver`` (Selenium, as the
page tests drive it), opens the page of a ``--size`` x ``--size`` game, and once the page says
``live`` appends ``--moves`` moves through the API, one at a time: for each, the time from
just before the POST until the page lists it (the page is asked every ``--poll-ms`` ms with
one script call). Prints each figure, then min, p50, p90 and max. The page tests
(``tests/web/test_pages.py``) only wait for a live move, with a generous deadline; this is the
figure (issue 30). No figure is asserted: it only prints.

    python bench/page_live_bench.py --moves 40 --size 5
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import httpx
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from boxfish import engine
from boxfish.service.runtime.embedded_redis import free_port

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from service_bench import launch_serve, pct, stop_serve

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
LISTED = "return document.querySelectorAll('#moves button[data-serial]').length"
CONNECTION = "const c = document.getElementById('connection'); return c && c.textContent"


def browser() -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1200,1000"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)


def until(what: str, condition, timeout_s: float, poll_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"the page did not show {what} within {timeout_s:g} s")
        time.sleep(poll_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--moves", type=int, default=40)
    parser.add_argument("--size", type=int, default=5, help="boxes per side of the board")
    parser.add_argument("--poll-ms", type=float, default=5.0)
    args = parser.parse_args()
    game = engine.load_game("dots-and-boxes", width=args.size, height=args.size)
    state = game.new_state()
    if args.moves >= len(state.legal_moves()):
        raise SystemExit(f"a {args.size}x{args.size} board has fewer lines than --moves + 1")
    poll_s = args.poll_ms / 1000
    port = free_port()
    serve = launch_serve(port, workers=0, threads=8, http_workers=1)
    driver = None
    try:
        base = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=base, timeout=30) as api:
            created = api.post("/v1/games", json={"game": "dots-and-boxes",
                                                  "width": args.size, "height": args.size})
            created.raise_for_status()
            gid = created.json()["id"]
            auth = {"Authorization": f"Bearer {created.json()['write_token']}"}
            driver = browser()
            driver.get(f"{base}/games/{gid}")
            until("the live stream", lambda: driver.execute_script(CONNECTION) == "live", 60,
                  poll_s)
            figures = []
            for serial in range(1, args.moves + 1):
                move = list(state.legal_moves()[0])
                started = time.perf_counter()
                resp = api.post(f"/v1/games/{gid}/moves", headers=auth,
                                json={"move": move, "serial": serial})
                resp.raise_for_status()
                # the list holds serial 0 (the start) and every move
                until(f"move {serial}",
                      lambda serial=serial: driver.execute_script(LISTED) >= serial + 1, 60,
                      poll_s)
                figures.append((time.perf_counter() - started) * 1000)
                state.play(tuple(move))
                print(f"move {serial}: shown after {figures[-1]:.1f} ms", flush=True)
    finally:
        if driver is not None:
            driver.quit()
        stop_serve(serve)
    ordered = sorted(figures)
    print(f"{len(figures)} moves, append to shown (ms): min {ordered[0]:.1f}, "
          f"p50 {pct(figures, 50):.1f}, p90 {pct(figures, 90):.1f}, max {ordered[-1]:.1f}")


if __name__ == "__main__":
    main()
