"""A hostile visitor's bodies against a real gunicorn: each is refused by its route's limit while it is read
(a 413 or 400 naming the limit, before the body is all sent), nothing is parsed before it is needed, no body
gives a 500, and the worker's peak memory stays under 300 MB.

The body is sent as a real client would: headers, then the body in 1 MB pieces, and the answer is read as
soon as it comes (a server that refuses on the headers answers before the body is sent). How much of a body
was sent before the answer is the bounded work checked, not seconds (issue 36): a server that read a large
body whole before refusing it would have taken all of it, while one that stops at its limit leaves the client
blocked once the connection's buffers are full (a few MB on loopback), with the rest unsent.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import urllib.request
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from app.http.request_limits import BODY_LIMIT, JSON_DEPTH_LIMIT
from tests.load.servers import Deployment, Gunicorn, multipart, prepare

MB = 1024 * 1024
WORKER_LIMIT_KIB = 300 * 1024


def _pieces(body: bytes | Iterable[bytes], size: int = MB) -> Iterator[bytes]:
    if isinstance(body, bytes):
        for start in range(0, len(body), size):
            yield body[start : start + size]
    else:
        yield from body


def flood(
    port: int, method: str, path: str, body: bytes | Iterable[bytes], headers: dict[str, str], chunked: bool = False
) -> tuple[int, bytes, float]:
    """(status, answer body, bytes of the body sent) of one request whose body is sent a piece at a time."""
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        lines = [f"{method} {path} HTTP/1.1", "Host: localhost", "Connection: close"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        lines.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {len(body)}")  # type: ignore[arg-type]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        answered = False
        try:
            for piece in _pieces(body):
                if select.select([sock], [], [], 0)[0]:
                    answered = True  # the server has answered: a real client stops sending too
                    break
                sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
                sent += len(piece)
            if chunked and not answered:
                sock.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused while sending: the answer is already in the socket
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except ConnectionResetError:
            pass
    head, _, payload = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 "), f"no answer to {method} {path}: {answer[:200]!r}"
    return int(head.split()[1]), payload, sent


def _peak_kib(pid: int) -> int:
    """The most memory the process has held (VmHWM), which no sampling can miss."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise ValueError(pid)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("floods")
    deployment = prepare(Deployment(f"sqlite:///{folder / 'holdout.sqlite3'}", folder), teams=1, per_day=None)
    gunicorn = Gunicorn(deployment.env, folder / "gunicorn.log", workers=1)
    gunicorn.wait_until_up()
    worker = next(iter(gunicorn.wait_for_workers(1)))
    yield gunicorn, deployment, worker
    gunicorn.stop()
    assert "Traceback" not in gunicorn.log.read_text(), gunicorn.log_tail()


def _check(server, status: int, payload: bytes, sent: int, expected: int, words: str, body_size: int = 0) -> None:
    """The answer, the worker alive and its memory bounded; for a body well over its limit (``body_size``),
    refused before it was all sent."""
    gunicorn, _deployment, worker = server
    assert status == expected, payload[:500]
    assert words in payload.decode("utf-8", "replace"), payload[:500]
    if body_size:
        assert sent < body_size, f"the server took all {body_size:,} bytes before answering"
    assert gunicorn.worker_pids() == {worker}, "the worker died"
    assert _peak_kib(worker) < WORKER_LIMIT_KIB, f"worker peaked at {_peak_kib(worker) // 1024} MB"


JSON = {"Content-Type": "application/json", "Accept": "application/json"}
FORM = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_50_mb_form_to_the_login_page_is_a_413(server, chunked):
    body = b"email=" + b"a" * (50 * MB)
    status, payload, sent = flood(server[0].port, "POST", "/login", body, FORM, chunked=chunked)
    _check(server, status, payload, sent, 413, f"larger than this address accepts ({BODY_LIMIT // 1024} KB)", len(body))


def test_a_10_mb_body_sent_with_a_get_is_never_read(server):
    status, payload, sent = flood(server[0].port, "GET", "/healthz", b"x=" + b"1" * (10 * MB), FORM)
    # Nothing reads a GET's body, so the address answers as usual (10 MB fit the buffers: no count of it).
    _check(server, status, payload, sent, 200, "ok")


def test_parallel_25_mb_bodies_do_not_stall_the_health_check(server):
    gunicorn = server[0]
    results: list[tuple[int, bytes, float]] = []
    threads = [
        threading.Thread(
            target=lambda: results.append(flood(gunicorn.port, "POST", "/login", b"p=" + b"9" * (25 * MB), FORM))
        )
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    with urllib.request.urlopen(f"{gunicorn.base}/healthz", timeout=30) as response:
        assert response.status == 200
    for thread in threads:
        thread.join()
    assert [status for status, _, _ in results] == [413] * 4
    # None was read whole: the worker was not kept from the health check reading 100 MB.
    _check(server, 413, results[0][1], max(sent for _, _, sent in results), 413, "larger than this address", 25 * MB)


def test_deeply_nested_json_is_refused_on_any_route(server):
    gunicorn, deployment, _ = server
    deep = b"[" * 100_000
    # A page takes forms only: a JSON body is refused before it is parsed.
    status, payload, sent = flood(gunicorn.port, "POST", "/login", deep, JSON)
    _check(server, status, payload, sent, 415, "takes a form (urlencoded or multipart), not JSON")
    for path, headers in (
        ("/api/v1/submissions/1/publish", {**JSON, "Authorization": f"Bearer {deployment.tokens['team-0']}"}),
        ("/api/v1/submissions/1/publish", {"Authorization": f"Bearer {deployment.tokens['team-0']}"}),  # force=True
    ):
        status, payload, sent = flood(gunicorn.port, "POST", path, deep, headers)
        _check(server, status, payload, sent, 400, f"nests deeper than {JSON_DEPTH_LIMIT} levels")


def test_json_of_ten_million_strings_is_a_413(server):
    body = b"[" + b'"a",' * 10_000_000 + b'"a"]'
    status, payload, sent = flood(server[0].port, "POST", "/api/v1/submissions/1/publish", body, JSON)
    _check(server, status, payload, sent, 413, "larger than this address accepts", len(body))


def test_a_50_mb_text_field_of_an_upload_is_a_413_naming_the_field_limit(server):
    gunicorn, deployment, _ = server
    body, content_type = multipart(
        {"benchmark": "nlvr2", "split": "test-p", "model_name": "m", "description": "d" * (45 * MB)}, b"x,True\n"
    )
    headers = {"Content-Type": content_type, "Authorization": f"Bearer {deployment.tokens['team-0']}"}
    status, payload, sent = flood(gunicorn.port, "POST", "/api/v1/submissions", body, headers)
    _check(server, status, payload, sent, 413, "text field of this form is over", len(body))
    assert json.loads(payload)["error"]


def test_an_anonymous_page_upload_is_sent_to_log_in_before_its_body_is_read(server):
    body, content_type = multipart({"model_name": "m"}, b"x" * (45 * MB))
    status, payload, sent = flood(server[0].port, "POST", "/submit", body, {"Content-Type": content_type})
    _check(server, status, payload, sent, 302, "", len(body))


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_an_upload_over_the_cap_is_a_413_while_it_is_read(server, chunked):
    gunicorn, deployment, _ = server
    body, content_type = multipart({"benchmark": "nlvr2", "split": "test-p", "model_name": "m"}, b"x" * (51 * MB))
    headers = {"Content-Type": content_type, "Authorization": f"Bearer {deployment.tokens['team-0']}"}
    status, payload, sent = flood(gunicorn.port, "POST", "/api/v1/submissions", body, headers, chunked=chunked)
    # Read up to the cap (1 MB under the body: within the buffers, so no count of what was sent).
    _check(server, status, payload, sent, 413, "The upload is larger than this server accepts (50 MB)")
