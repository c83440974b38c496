"""The HTTP client's waits and reads are bounded as a whole (issue 43, finding 4): a server dripping one
byte every 2 s is ended by the request timeout, a 300 MB /v1/models is refused at a limit without being
read, a stream event that is not a JSON object fails the request with one line."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from eagle4.workload import http_client as hc
from eagle4.workload.http_client import HttpBenchError, Timeouts, make_client, probe, stream_one


def _serve(handler):
    """A raw TCP server answering each connection with ``handler(conn)`` in a thread."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    stop = threading.Event()

    def loop():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            threading.Thread(target=_guard, args=(handler, conn), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()
    return srv, stop, f"http://127.0.0.1:{srv.getsockname()[1]}"


def _guard(handler, conn):
    try:
        conn.recv(65536)
        handler(conn)
    except OSError:
        pass
    finally:
        conn.close()


@pytest.fixture
def server(request):
    srv, stop, url = _serve(request.param)
    yield url
    stop.set()
    srv.close()


def _drip(conn):
    for b in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" * 100:
        conn.sendall(bytes([b]))
        time.sleep(2.0)


def _huge_models(conn):
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")
    chunk = b" " * (1 << 20)
    for _ in range(300):  # 300 MB, no Content-Length
        conn.sendall(chunk)


def _list_events(conn):
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                 b"data: [1, 2]\n\ndata: 7\n\ndata: [DONE]\n\n")


@pytest.mark.parametrize("server", [_drip], indirect=True)
def test_dripping_server_is_ended_by_the_overall_timeout(server):
    t = Timeouts(request_s=5.0, connect_s=2.0)
    with make_client(t) as c:
        t0 = time.monotonic()
        with pytest.raises(HttpBenchError, match="within the timeout"):
            probe(c, server)
        assert time.monotonic() - t0 < 9
        t0 = time.monotonic()
        r = stream_one(c, server, "sglang", [1, 2], 4, model="m", temperature=0.0, timeouts=t)
        assert not r.ok and "no data within 5 s" in r.error and time.monotonic() - t0 < 9


@pytest.mark.parametrize("server", [_huge_models], indirect=True)
def test_huge_models_answer_is_refused_at_the_limit(server, monkeypatch):
    import tracemalloc

    tracemalloc.start()
    with make_client(Timeouts(30.0, 2.0)) as c, pytest.raises(HttpBenchError, match="byte limit"):
        probe(c, server)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 3 * hc.MAX_BODY_BYTES + (8 << 20), peak


@pytest.mark.parametrize("server", [_list_events], indirect=True)
def test_non_object_stream_event_is_one_line(server):
    t = Timeouts(5.0, 2.0)
    with make_client(t) as c:
        r = stream_one(c, server, "sglang", [1, 2], 4, model="m", temperature=0.0, timeouts=t)
    assert not r.ok and "not a JSON object" in r.error and "\n" not in r.error
