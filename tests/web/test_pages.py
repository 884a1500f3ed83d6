"""The pages in a real headless Chromium (Debian's ``chromium`` and ``chromium-driver``, driven
by Selenium), against a real gunicorn, a real analysis worker and Redis.

Each step saves a screenshot under ``test-artifacts/web/`` at the repository root (or
``$BOXFISH_TEST_ARTIFACTS/web/``), which git ignores. Chromium must be installed
(``scripts/test`` installs it): without it these tests fail, they are not skipped.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import httpx
import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.select import Select
from selenium.webdriver.support.ui import WebDriverWait

from boxfish.engine import load_game
from boxfish.service.runtime.embedded_redis import free_port
from tests.lost_moves import lose_moves
from tests.service.conftest import start_gunicorn, stop_process

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
#: How long the page may take to show what it is waited on for: a generous deadline, not a
#: figure (bench/page_live_bench.py measures how soon a live move shows).
SLOW_S = 30.0


@pytest.fixture(scope="module")
def artifacts() -> Path:
    folder = Path(os.environ.get("BOXFISH_TEST_ARTIFACTS") or ROOT / "test-artifacts") / "web"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Server:
    """A gunicorn serving the app on a fixed port, which a test may stop and start again."""

    def __init__(self, settings, log_path: Path) -> None:
        self.settings = settings
        self.log_path = log_path
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = start_gunicorn(settings, self.port, log_path)

    def stop(self) -> None:
        stop_process(self.proc)

    def start(self) -> None:
        self.proc = start_gunicorn(self.settings, self.port, self.log_path)


@pytest.fixture(scope="module")
def server(settings, rq_worker, tmp_path_factory):
    srv = Server(settings, tmp_path_factory.mktemp("web") / "gunicorn.log")
    yield srv
    stop_process(srv.proc)


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1200,1000"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


@pytest.fixture
def api(server):
    with httpx.Client(base_url=server.url, timeout=10) as client:
        yield client


def new_game(api, **body) -> tuple[str, dict]:
    resp = api.post("/v1/games", json={"game": "dots-and-boxes", "width": 2, "height": 2,
                                        **body})
    assert resp.status_code == 201, resp.text
    return resp.json()["id"], {"Authorization": f"Bearer {resp.json()['write_token']}"}


def append(api, gid: str, auth: dict, move: list, serial: int) -> None:
    resp = api.post(f"/v1/games/{gid}/moves", json={"move": move, "serial": serial},
                    headers=auth)
    assert resp.status_code == 201, resp.text


def board_moves(driver, selector: str) -> set[str]:
    """The ``data-move`` of the inlined board's elements matching ``selector``."""
    try:
        return {e.get_attribute("data-move")
                for e in driver.find_elements(By.CSS_SELECTOR, f"#board svg {selector}")}
    except StaleElementReferenceException:  # the board was redrawn meanwhile: look again
        return set()


def listed_serials(driver) -> list[int]:
    try:
        return [int(b.get_attribute("data-serial"))
                for b in driver.find_elements(By.CSS_SELECTOR, "#moves button[data-serial]")]
    except StaleElementReferenceException:
        return []


def listed_text(driver) -> str:
    """The whole text of the move list (``textContent``: the rows scrolled away too)."""
    return driver.find_element(By.ID, "moves").get_attribute("textContent")


def text_of(driver, element_id: str) -> str:
    try:
        return driver.find_element(By.ID, element_id).text
    except StaleElementReferenceException:
        return ""


def click_board(driver, selector: str, move: str) -> None:
    """Click the board's ``selector`` element of ``move`` as a mouse would, at its centre: a
    horizontal or vertical line has an empty box, which WebDriver's element click refuses."""
    target = driver.find_element(By.CSS_SELECTOR, f'#board svg {selector}[data-move="{move}"]')
    ActionChains(driver).move_to_element(target).click().perform()


def until(driver, timeout: float, condition, message: str):
    """Wait for ``condition(driver)``; on a timeout, print what the page shows (the serials
    listed, the lines drawn, the connection) before raising."""
    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.05).until(
            lambda d: condition(d), message)
    except TimeoutException:
        print(f"the page at the timeout: serials {listed_serials(driver)}, drawn "
              f"{sorted(board_moves(driver, 'line.drawn'))}, connection "
              f"{text_of(driver, 'connection')!r}")
        raise


def test_live_moves_time_travel_and_analysis(server, api, browser, artifacts):
    gid, auth = new_game(api)
    append(api, gid, auth, [1, 1, 1], 1)
    browser.get(f"{server.url}/games/{gid}")
    until(browser, SLOW_S, lambda d: "1,1,1" in board_moves(d, "line.drawn")
          and text_of(d, "connection") == "live", "the board with move 1, live")
    assert listed_serials(browser) == [0, 1]
    assert "Player 1 to move" in text_of(browser, "summary")
    browser.save_screenshot(str(artifacts / "1-opened.png"))

    # A move appended through the API shows up, from the live stream: in the list and drawn
    # on the board.
    append(api, gid, auth, [1, 2, 1], 2)
    until(browser, SLOW_S, lambda d: listed_serials(d) == [0, 1, 2]
          and "1,2,1" in board_moves(d, "line.drawn.last")
          and text_of(d, "connection") == "live", "move 2 on the page, still live")
    assert "Player 0 to move" in text_of(browser, "summary")
    assert "1,2,1" not in board_moves(browser, "line.slot")
    browser.save_screenshot(str(artifacts / "2-live-move.png"))

    # Left arrow: the position before it, and the URL says which.
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ARROW_LEFT)
    until(browser, SLOW_S, lambda d: d.current_url.endswith(f"/games/{gid}?at=1")
          and "1,2,1" not in board_moves(d, "line.drawn")
          and "1,1,1" in board_moves(d, "line.drawn"), "the position at serial 1")
    assert "1,2,1" in board_moves(browser, "line.slot")
    assert browser.find_element(By.CSS_SELECTOR, "#moves [aria-current]") \
        .get_attribute("data-serial") == "1"
    browser.save_screenshot(str(artifacts / "3-stepped-back.png"))

    # A move appended while looking back extends the list but does not move the view.
    append(api, gid, auth, [2, 1, 1], 3)
    until(browser, SLOW_S, lambda d: listed_serials(d) == [0, 1, 2, 3], "move 3 listed")
    assert browser.current_url.endswith("?at=1")
    assert "2,1,1" not in board_moves(browser, "line.drawn")

    # A shared URL opens at its serial.
    browser.get(f"{server.url}/games/{gid}?at=2")
    until(browser, SLOW_S, lambda d: "1,2,1" in board_moves(d, "line.drawn")
          and "2,1,1" not in board_moves(d, "line.drawn"), "the page opened at serial 2")
    assert text_of(browser, "position").startswith("move 2 of 3")

    # Analysis of the position shown: progress, then the best move marked and every move's
    # value listed.
    Select(browser.find_element(By.ID, "analysis-time")).select_by_value("250")
    browser.find_element(By.ID, "analyse").click()
    until(browser, SLOW_S, lambda d: board_moves(d, ".best"), "the best move marked")
    best = board_moves(browser, ".best")
    rows = browser.find_elements(By.CSS_SELECTOR, "#analysis-moves .value-row")
    legal = board_moves(browser, "line.slot")
    assert {r.get_attribute("data-move") for r in rows} == legal and len(legal) == 10
    best_rows = [r for r in rows if "best" in r.get_attribute("class").split()]
    assert {r.get_attribute("data-move") for r in best_rows} <= best and best_rows
    values = [r.find_element(By.CSS_SELECTOR, ".value").text for r in rows]
    assert all(re.fullmatch(r"(≥ |≤ |≈ )?([+−]\d+(\.\d)?|0)", v) for v in values), values
    assert board_moves(browser, "text.value") == legal  # every value drawn on its line
    assert text_of(browser, "analysis-status").startswith("Move 2: best")
    browser.save_screenshot(str(artifacts / "4-analysis.png"))
    # The analysis is of serial 2: another position shows its own board again.
    browser.find_element(By.ID, "last").click()
    until(browser, SLOW_S, lambda d: "2,1,1" in board_moves(d, "line.drawn")
          and not board_moves(d, ".best"), "the live board without the analysis")
    assert "?at=" not in browser.current_url


def test_the_page_recovers_when_the_stream_is_cut(server, api, browser, artifacts):
    gid, auth = new_game(api)
    browser.get(f"{server.url}/games/{gid}")
    until(browser, SLOW_S, lambda d: text_of(d, "connection") == "live", "live")
    server.stop()  # every connection dropped, the event stream's too
    try:
        until(browser, SLOW_S, lambda d: text_of(d, "connection").startswith("reconnecting"),
              "the page saying it lost the stream")
        browser.save_screenshot(str(artifacts / "5-stream-cut.png"))
    finally:
        server.start()
    append(api, gid, auth, [1, 1, 2], 1)
    until(browser, SLOW_S, lambda d: listed_serials(d) == [0, 1]
          and "1,1,2" in board_moves(d, "line.drawn"), "the move made after the restart")
    until(browser, SLOW_S, lambda d: text_of(d, "connection") == "live", "live again")
    append(api, gid, auth, [1, 1, 1], 2)  # and the new stream carries the next moves
    until(browser, SLOW_S, lambda d: listed_serials(d) == [0, 1, 2], "move 2 after recovery")
    browser.save_screenshot(str(artifacts / "6-recovered.png"))


def test_create_from_the_start_page_and_play_by_clicking(server, api, browser, artifacts):
    browser.get(f"{server.url}/")
    for name in ("width", "height"):
        field = browser.find_element(By.NAME, name)
        field.clear()
        field.send_keys("2")
    browser.find_element(By.CSS_SELECTOR, "#create button[type=submit]").click()
    until(browser, SLOW_S, lambda d: re.search(r"/games/[A-Za-z0-9_-]+$", d.current_url),
          "the new game's page")
    gid = browser.current_url.rsplit("/", 1)[1]
    token = browser.execute_script(f"return localStorage.getItem('boxfish:token:{gid}')")
    assert token and token not in browser.current_url
    until(browser, SLOW_S, lambda d: len(board_moves(d, "line.slot")) == 12, "an empty board")
    browser.save_screenshot(str(artifacts / "7-created.png"))

    click_board(browser, "line.slot", "1,1,1")
    until(browser, SLOW_S, lambda d: "1,1,1" in board_moves(d, "line.drawn")
          and listed_serials(d) == [0, 1], "the clicked move played")
    assert api.get(f"/v1/games/{gid}/moves").json()["moves"][0]["move"] == [1, 1, 1]

    # The keyboard plays too: a line takes the focus (as Tab gives it) and Enter plays it.
    slot = browser.find_element(By.CSS_SELECTOR, '#board line.slot[data-move="2,1,1"]')
    assert slot.get_attribute("tabindex") == "0"
    browser.execute_script("arguments[0].focus()", slot)
    ActionChains(browser).send_keys(Keys.ENTER).perform()
    until(browser, SLOW_S, lambda d: listed_serials(d) == [0, 1, 2], "the move by keyboard")

    # A drawn line is illegal: the server's reason is shown, nothing changes.
    click_board(browser, "line.drawn", "1,1,1")
    until(browser, SLOW_S, lambda d: "not played" in text_of(d, "message"), "the refusal")
    assert "drawn" in text_of(browser, "message")
    browser.save_screenshot(str(artifacts / "8-illegal-click.png"))

    # Looking back, a click explains that moves are played at the latest position.
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ARROW_LEFT)
    until(browser, SLOW_S, lambda d: d.current_url.endswith("?at=1")
          and "2,1,1" in board_moves(d, "line.slot"), "the position at serial 1")
    click_board(browser, "line.slot", "2,1,1")
    until(browser, SLOW_S, lambda d: "latest position" in text_of(d, "message"),
          "why a click in the past is not a move")
    assert api.get(f"/v1/games/{gid}").json()["serial"] == 2

    # The start page lists the game; another browser (no token) can only watch.
    browser.get(f"{server.url}/")
    until(browser, SLOW_S, lambda d: d.find_elements(
        By.CSS_SELECTOR, f'#recent a[href="/games/{gid}"]'), "the game in the recent list")
    browser.execute_script("localStorage.clear()")
    browser.get(f"{server.url}/games/{gid}")
    until(browser, SLOW_S, lambda d: len(board_moves(d, "line.slot")) == 10, "the board")
    click_board(browser, "line.slot", "2,2,1")
    until(browser, SLOW_S, lambda d: "only watch" in text_of(d, "message"), "watch only")
    assert api.get(f"/v1/games/{gid}").json()["serial"] == 2


def test_extreme_tictactoe_against_the_engine(server, api, browser, artifacts):
    browser.get(f"{server.url}/")
    browser.find_element(By.CSS_SELECTOR, 'input[name=game][value="extreme-tictactoe"]').click()
    browser.find_element(By.ID, "engine").click()  # the engine plays player 1
    Select(browser.find_element(By.ID, "engine-time")).select_by_value("100")
    browser.find_element(By.CSS_SELECTOR, "#create button[type=submit]").click()
    until(browser, SLOW_S, lambda d: re.search(r"/games/[A-Za-z0-9_-]+$", d.current_url)
          and len(board_moves(d, "rect.cell.legal")) == 256, "the new game's board")
    gid = browser.current_url.rsplit("/", 1)[1]
    assert api.get(f"/v1/games/{gid}").json()["engine"]["seat"] == 1
    click_board(browser, "rect.cell.legal", "5,6")
    # The engine answers through the event stream, like any player.
    # (the list is drawn at once, the board when its picture has loaded: wait for both)
    until(browser, SLOW_S, lambda d: listed_serials(d) == [0, 1, 2]
          and board_moves(d, "text.mark.p1"), "the engine's move")
    assert {"5,6"} <= board_moves(browser, "text.mark.p0")
    assert len(board_moves(browser, "text.mark.p1")) == 1
    assert "Player 0 to move" in text_of(browser, "summary")
    browser.save_screenshot(str(artifacts / "9-xttt-engine.png"))


def test_the_game_page_fits_a_phone(server, api, browser, artifacts):
    """At a phone's width (390 px) nothing scrolls sideways, the board fits the screen and
    the panels stack under it."""
    gid, auth = new_game(api, game="dots-and-boxes", width=5, height=5)
    append(api, gid, auth, [1, 1, 1], 1)
    browser.set_window_size(390, 844)
    try:
        browser.get(f"{server.url}/games/{gid}")
        until(browser, SLOW_S, lambda d: "1,1,1" in board_moves(d, "line.drawn"),
              "the board did not load")
        inner = browser.execute_script("return window.innerWidth")
        assert browser.execute_script(
            "return document.documentElement.scrollWidth") <= inner
        board = browser.find_element(By.CSS_SELECTOR, "svg.boxfish-board").rect
        assert board["x"] >= 0 and board["x"] + board["width"] <= inner
        panels = browser.find_element(By.CSS_SELECTOR, "svg.boxfish-board")
        analyse = browser.find_element(By.XPATH, "//button[normalize-space()='Analyse']").rect
        assert analyse["y"] > panels.rect["y"] + panels.rect["height"] - 1  # stacked below
        browser.save_screenshot(str(artifacts / "10-phone.png"))
    finally:
        browser.set_window_size(1200, 1000)


def test_a_game_event_makes_the_page_show_the_log_that_replaced_what_it_showed(
        server, api, browser, artifacts, settings, redis_client):
    """The store loses moves the page shows, as a failover that lost them would, and other
    moves take their serials. The server tells the page with a ``game`` event on its stream:
    on the open stream (which notices when idle) and on the stream the browser resumes with
    ``Last-Event-ID: <serial>.<head>`` after the connection dropped. Each time the page must
    show the log's moves, list and board, never the lost ones."""
    gid, auth = new_game(api)
    for serial, move in enumerate(([1, 1, 1], [1, 2, 1], [1, 3, 1]), start=1):
        append(api, gid, auth, move, serial)
    browser.get(f"{server.url}/games/{gid}")
    until(browser, SLOW_S, lambda d: listed_serials(d) == [0, 1, 2, 3]
          and "1,3,1" in board_moves(d, "line.drawn.last")
          and text_of(d, "connection") == "live", "moves 1 to 3, live")
    # Look back at serial 2 and forth again: the page has drawn both positions.
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ARROW_LEFT)
    until(browser, SLOW_S, lambda d: "1,3,1" in board_moves(d, "line.slot"), "serial 2")
    browser.find_element(By.ID, "last").click()
    until(browser, SLOW_S, lambda d: "1,3,1" in board_moves(d, "line.drawn.last"), "serial 3")

    # The open stream: move 3 lost under it. The page goes back to serial 2.
    lose_moves(redis_client, settings.key_prefix, gid, keep=2)
    until(browser, SLOW_S, lambda d: listed_serials(d) == [0, 1, 2]
          and "1,3,1" in board_moves(d, "line.slot")
          and "1,2,1" in board_moves(d, "line.drawn"), "the log cut back to serial 2")
    assert "Player 0 to move" in text_of(browser, "summary")
    browser.save_screenshot(str(artifacts / "11-log-cut-back.png"))
    # Another move takes serial 3: listed and drawn, the lost one nowhere.
    append(api, gid, auth, [2, 1, 2], 3)
    until(browser, SLOW_S, lambda d: listed_serials(d) == [0, 1, 2, 3]
          and "2,1,2" in board_moves(d, "line.drawn.last")
          and "1,3,1" in board_moves(d, "line.slot"), "the move that took serial 3")
    assert "(1,3,1)" not in listed_text(browser)
    assert text_of(browser, "connection") == "live"

    # The resumed stream: the connection drops; meanwhile the store loses move 3 again and
    # another server of the store appends two moves in its place. The browser resumes with
    # the id of move 3, which the log no longer has.
    append(api, gid, auth, [2, 2, 2], 4)
    until(browser, SLOW_S, lambda d: listed_serials(d) == [0, 1, 2, 3, 4], "move 4")
    other = Server(settings, server.log_path)
    server.stop()
    try:
        until(browser, SLOW_S, lambda d: text_of(d, "connection").startswith("reconnecting"),
              "the page saying it lost the stream")
        lose_moves(redis_client, settings.key_prefix, gid, keep=2)
        with httpx.Client(base_url=other.url, timeout=10) as writer:
            append(writer, gid, auth, [3, 1, 2], 3)
            append(writer, gid, auth, [1, 1, 2], 4)
    finally:
        stop_process(other.proc)
        server.start()
    until(browser, SLOW_S, lambda d: listed_serials(d) == [0, 1, 2, 3, 4]
          and "1,1,2" in board_moves(d, "line.drawn.last")
          and "3,1,2" in board_moves(d, "line.drawn")
          and {"2,1,2", "2,2,2"} <= board_moves(d, "line.slot")
          and text_of(d, "connection") == "live", "the log that replaced moves 3 and 4")
    listed = listed_text(browser)
    assert "(3,1,2)" in listed and "(2,2,2)" not in listed, listed
    # Stepping back shows the new serial 3, not a picture of the lost one.
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ARROW_LEFT)
    until(browser, SLOW_S, lambda d: d.current_url.endswith("?at=3")
          and "3,1,2" in board_moves(d, "line.drawn.last")
          and "2,1,2" in board_moves(d, "line.slot"), "the new position at serial 3")
    browser.save_screenshot(str(artifacts / "12-log-replaced.png"))


def test_a_stream_started_again_after_an_error_answer_reloads_the_log(
        server, api, browser, artifacts, settings, redis_client):
    """The page's stream is refused (503: every stream slot of the server is taken) and the
    browser gives up on it; meanwhile the store loses move 3 and another move takes serial 3.
    The stream the page starts again must not resume from its bare serial (which the server
    trusts): it starts afresh, and its ``game`` event shows the log's moves."""
    gid, auth = new_game(api)
    for serial, move in enumerate(([1, 1, 1], [1, 2, 1], [1, 3, 1]), start=1):
        append(api, gid, auth, move, serial)
    held = []
    try:
        with httpx.Client(base_url=server.url, timeout=10) as streams:
            for _ in range(settings.sse_max_streams + 1):  # every slot taken, then one more
                resp = streams.send(streams.build_request("GET", f"/v1/games/{gid}/events"),
                                    stream=True)
                if resp.status_code == 503:
                    resp.close()
                    break
                held.append(resp)
            else:
                raise AssertionError("the server never refused a stream")
            browser.get(f"{server.url}/games/{gid}")
            until(browser, SLOW_S, lambda d: listed_serials(d) == [0, 1, 2, 3]
                  and "1,3,1" in board_moves(d, "line.drawn.last")
                  and text_of(d, "connection").startswith("reconnecting"),
                  "moves 1 to 3, the stream refused")
            lose_moves(redis_client, settings.key_prefix, gid, keep=2)
            append(api, gid, auth, [2, 1, 2], 3)
            for resp in held:
                resp.close()
            held.clear()
    finally:
        for resp in held:
            resp.close()
    until(browser, SLOW_S, lambda d: listed_serials(d) == [0, 1, 2, 3]
          and "2,1,2" in board_moves(d, "line.drawn.last")
          and "1,3,1" in board_moves(d, "line.slot")
          and text_of(d, "connection") == "live", "the move that took serial 3")
    assert "(1,3,1)" not in listed_text(browser)
    append(api, gid, auth, [2, 2, 2], 4)  # and the new stream carries the next moves
    until(browser, SLOW_S, lambda d: listed_serials(d) == [0, 1, 2, 3, 4]
          and "2,2,2" in board_moves(d, "line.drawn.last"), "move 4 on the new stream")
    browser.save_screenshot(str(artifacts / "13-restarted-stream.png"))


def test_the_explorer_panel_shows_the_moves_played(server, api, browser, artifacts):
    """A finished game, counted by the explorer's projector: the page of another game at
    its start lists the first move played, with its games and results."""
    from boxfish.service.application.projections import POINTER_TTL_S
    from boxfish.service.application.wiring import projection_runner

    gid, auth = new_game(api)
    game = load_game("dots-and-boxes", width=2, height=2)
    state = game.new_state()
    while not state.is_terminal():
        move = state.legal_moves()[0]
        append(api, gid, auth, list(move), state.serial + 1)
        state.play(move)
    projection_runner(server.settings, "explorer").catch_up()
    other, _ = new_game(api)
    # The first version was just built: the server reads the pointer at most every
    # POINTER_TTL_S (it read "none yet" for the pages of the test before).
    time.sleep(POINTER_TTL_S + 0.1)
    browser.get(f"{server.url}/games/{other}")
    until(browser, SLOW_S, lambda d: d.find_elements(By.CSS_SELECTOR,
                                                      "#explorer-moves .explorer-row"),
          "the explorer's moves")
    rows = browser.find_elements(By.CSS_SELECTOR, "#explorer-moves .explorer-row")
    answer = api.get("/v1/explorer", params={"width": 2, "height": 2}).json()
    assert [r.get_attribute("data-move") for r in rows] == [
        ",".join(map(str, m["move"])) for m in answer["moves"]]
    assert "finished game" in text_of(browser, "explorer-status")
    browser.save_screenshot(str(artifacts / "explorer.png"))
