"""Units of the webhooks: the Standard Webhooks signature (checked with the ``standardwebhooks``
package), the URL checks, the retry backoff and ``Retry-After``."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from email.utils import format_datetime

import pytest
import standardwebhooks

from boxfish.service.application.webhook_urls import UrlRefused, address_is_public, check_url
from boxfish.service.application.webhooks import move_events, new_secret, signed_headers
from boxfish.service.store.events import MoveEvent
from boxfish.workers.webhook_delivery import parse_retry_after, retry_delay


def test_signed_headers_verify_with_standardwebhooks():
    secret = new_secret()
    body = json.dumps({"type": "move.appended", "timestamp": "2025-01-01T00:00:00.000Z",
                       "data": {"game": "g", "serial": 1}})
    now = datetime.now(UTC).timestamp()
    headers = signed_headers(secret, "msg_wh_1_1_move.appended", body, now)
    assert headers["webhook-id"] == "msg_wh_1_1_move.appended"
    assert headers["webhook-timestamp"] == str(int(now))
    assert standardwebhooks.Webhook(secret).verify(body, headers) == json.loads(body)
    with pytest.raises(standardwebhooks.WebhookVerificationError):
        standardwebhooks.Webhook(secret).verify(body.replace('"serial": 1', '"serial": 2'),
                                                headers)
    with pytest.raises(standardwebhooks.WebhookVerificationError):
        standardwebhooks.Webhook(new_secret()).verify(body, headers)


def test_a_finishing_move_makes_two_events():
    event = MoveEvent(serial=4, move=(1, 2, 0), player=1, completed=1, scores=(0, 1),
                      to_move=None, status="finished", at=1_700_000_000_123)
    (t1, b1), (t2, b2) = move_events("g1", event)
    assert (t1, t2) == ("move.appended", "game.finished")
    one, two = json.loads(b1), json.loads(b2)
    assert one == {"type": "move.appended", "timestamp": "2023-11-14T22:13:20.123Z",
                   "data": {"game": "g1", "serial": 4, "move": [1, 2, 0], "player": 1,
                            "completed": 1, "scores": [0, 1], "to_move": None,
                            "status": "finished"}}
    assert two["data"] == {"game": "g1", "serial": 4, "scores": [0, 1], "status": "finished",
                           "winner": 1}
    assert move_events("g1", MoveEvent(1, (1, 1, 1), 0, 0, (0, 0), 1, "in_progress", 0))[0][0] \
        == "move.appended"


@pytest.mark.parametrize("url", [
    "http://127.0.0.1/hook", "http://localhost:8080/", "https://10.1.2.3/", "http://172.16.0.1/",
    "http://172.31.255.255/", "http://192.168.1.1/", "http://169.254.169.254/latest/meta-data",
    "http://[::1]/", "http://[fe80::1]/", "http://[::ffff:127.0.0.1]/", "http://0.0.0.0/",
    "http://100.64.0.1/", "http://224.0.0.1/", "http://[fd00:ec2::254]/",
    "http://[64:ff9b::a00:1]/", "http://[2002:7f00:1::]/", "http://192.0.2.1/"])
def test_private_addresses_are_refused(url):
    with pytest.raises(UrlRefused) as exc:
        check_url(url, allow_private=False)
    assert exc.value.reason == "private_address"
    assert check_url(url, allow_private=True) == url


@pytest.mark.parametrize("url", ["http://93.184.215.14/hook", "https://[2606:4700::1]:8443/x"])
def test_public_literals_are_accepted_without_dns(url):
    assert check_url(url, allow_private=False) == url


@pytest.mark.parametrize("url", ["ftp://93.184.215.14/", "93.184.215.14/hook", "https://",
                                 "https://user:pw@93.184.215.14/", "https://a b/",
                                 "http://93.184.215.14:99999/", "https://host.invalid/"])
def test_malformed_urls_are_refused(url):
    with pytest.raises(UrlRefused) as exc:
        check_url(url, allow_private=False)
    assert exc.value.reason == "invalid_url"


def test_address_is_public():
    assert address_is_public("8.8.8.8") and address_is_public("2001:4860:4860::8888")
    assert not address_is_public("::ffff:10.0.0.1")


def test_backoff_is_full_jitter_doubling_and_capped():
    assert retry_delay(1, 1.0, 3600, None, rand=lambda: 1.0) == 1.0
    assert retry_delay(4, 1.0, 3600, None, rand=lambda: 1.0) == 8.0
    assert retry_delay(4, 1.0, 3600, None, rand=lambda: 0.25) == 2.0
    assert retry_delay(30, 1.0, 60, None, rand=lambda: 1.0) == 60


def test_backoff_honours_retry_after():
    assert retry_delay(1, 0.2, 3600, 1.0, rand=lambda: 1.0) == 1.0  # longer than the backoff
    assert retry_delay(6, 1.0, 3600, 3.0, rand=lambda: 1.0) == 32.0  # shorter: backoff
    assert retry_delay(1, 1.0, 60, 600.0, rand=lambda: 0.0) == 60  # capped


def test_retry_after_seconds_and_http_dates():
    now = 1_700_000_000.0
    assert parse_retry_after("7", now) == 7.0
    date = format_datetime(datetime.fromtimestamp(now + 30, UTC), usegmt=True)
    assert parse_retry_after(date, now) == pytest.approx(30.0)
    assert parse_retry_after(format_datetime(datetime.fromtimestamp(now - 30, UTC),
                                             usegmt=True), now) == 0.0
    assert parse_retry_after("soon", now) is None and parse_retry_after(None, now) is None


def test_a_message_is_enqueued_once_and_never_lost(settings, redis_client):
    """The first attempt's job is enqueued before the message's marker is set, and only if it
    does not exist: a process that died between the two (job there, no marker) leaves a
    replay nothing to double; a second call finds the marker."""
    from rq import Queue

    from boxfish.service.application.webhooks import Webhooks
    from boxfish.service.store.keys import KeySpace

    webhooks = Webhooks.from_settings(redis_client, settings, KeySpace(settings.key_prefix))
    queue = Queue(settings.webhook_queue_name, connection=redis_client)
    target = {"game": "g-once", "webhook": "wh_once"}
    body = '{"type": "move.appended", "timestamp": "t", "data": {"serial": 1}}'
    before = queue.count
    # What a process that died after enqueueing, before its marker, leaves behind:
    assert webhooks.enqueue_attempt(target, "msg_once_1", body, 1)
    assert not redis_client.exists(webhooks.keys.webhook_enqueued("msg_once_1"))
    assert not webhooks.enqueue_once(target, "msg_once_1", body)  # its replay
    assert not webhooks.enqueue_once(target, "msg_once_1", body)  # and another
    assert webhooks.enqueue_once(target, "msg_once_2", body)
    assert queue.count == before + 2
    for message_id in ("msg_once_1", "msg_once_2"):
        queue.fetch_job(webhooks.job_id(message_id, 1)).delete()
    assert queue.count == before
