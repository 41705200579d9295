"""The base class's waits on p4-switch's statistics endpoint, against a stand-in HTTP server:
they return as soon as the switch reports the state, and fail saying what it reported."""

import json

import pytest

from ptf_harness.base import LosslessTest


class _Stats(LosslessTest):
    __test__ = False

    def runTest(self):
        pass


def _port(n, paused=(), depth=0, pfc_rx=(0,) * 8):
    queues = [
        {"queue": q, "paused": q in paused, "depth_packets": depth if q == 0 else 0}
        for q in range(8)
    ]
    return {"port": n, "queues": queues, "pfc_rx": list(pfc_rx), "pause_rx": 0}


@pytest.fixture
def stats_server():
    """A stand-in for p4-switch's GET /stats whose answers the test sets, in order."""
    import http.server
    import threading

    answers: list[dict] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps(answers.pop(0) if len(answers) > 1 else answers[0]).encode()
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    test = _Stats()
    test.params = {"stats_url": f"http://127.0.0.1:{server.server_address[1]}"}
    yield test, answers
    server.shutdown()


def test_wait_paused_returns_once_the_switch_reports_the_queue_paused(stats_server):
    test, answers = stats_server
    answers += [{"tm": {"ports": [_port(3)]}}] * 3 + [{"tm": {"ports": [_port(3, paused={3})]}}]
    test.wait_paused(3, [3], "PFC XOFF for priority 3")
    assert answers == [{"tm": {"ports": [_port(3, paused={3})]}}], "polled until paused"
    with pytest.raises(AssertionError, match=r"queue\(s\) \[0, 1, 2, 3, 4, 5, 6, 7\] not paused"):
        test.wait_paused(3, None, "802.3x PAUSE", timeout=0.1)


def test_wait_paused_fails_saying_what_the_switch_received(stats_server):
    test, answers = stats_server
    answers.append({"tm": {"ports": [_port(3, pfc_rx=(0, 0, 0, 1, 0, 0, 0, 0))]}})
    with pytest.raises(AssertionError) as err:
        test.wait_paused(3, [3], "PFC XOFF for priority 3 into port 3", timeout=0.1)
    assert "not paused 0.1 s after the frame (paused: none; received PFC per priority " in str(
        err.value
    )
    assert "[0, 0, 0, 1, 0, 0, 0, 0], PAUSE 0)" in str(err.value)


def test_wait_queued_counts_every_queue(stats_server):
    test, answers = stats_server
    answers += [{"tm": {"ports": [_port(3, depth=2)]}}, {"tm": {"ports": [_port(3, depth=5)]}}]
    test.wait_queued(3, 5, "held")
    with pytest.raises(AssertionError, match="7 packet.s. expected queued on port 3"):
        test.wait_queued(3, 7, "held", timeout=0.1)
    answers[:] = [{"tm": None}]
    with pytest.raises(AssertionError, match="without a traffic manager"):
        test.wait_queued(3, 1, "held")
