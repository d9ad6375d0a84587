"""A client whose connection dies after the server committed its upload: the client sends it again with the
same Idempotency-Key and learns the id of the one stored submission, on SQLite and PostgreSQL.

Between the client and a real gunicorn sits a proxy that, on its first connection, passes the upload on,
waits for the server's whole answer (so the upload is stored) and then drops the connection unanswered.
"""

from __future__ import annotations

import socket
import sys
import threading

import pytest
from sqlalchemy import create_engine, text

from app import synthetic
from tests.client.conftest import CLIENT
from tests.load.servers import running_server

sys.path.insert(0, str(CLIENT))
from holdout_client import api  # noqa: E402  (the client is not installed in this venv)

# On SQLite alone: what is tested is the client's retry and the key's replay; the database's part (the key unique
# per account, found again under the team's lock) is tested on both in tests/api/test_idempotency.py.


class AnswerDroppingProxy:
    """Forwards connections to `upstream`; drops the answer of the first `drop` of them."""

    def __init__(self, upstream_port: int, drop: int = 1):
        self.upstream_port, self.drop = upstream_port, drop
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._relay, args=(client, self.connections <= self.drop), daemon=True).start()

    def _relay(self, client: socket.socket, drop: bool) -> None:
        with client, socket.create_connection(("127.0.0.1", self.upstream_port)) as upstream:
            request = _read_request(client)
            upstream.sendall(request)
            answer = b""
            while chunk := upstream.recv(65536):  # the server closes after its answer (sync workers do)
                answer += chunk
            if not drop:
                client.sendall(answer)
            # dropped: the upload is stored, and the client hears nothing but a closed connection

    def close(self) -> None:
        self.listener.close()


def _read_request(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


def test_the_retry_after_a_lost_answer_stores_nothing_new_and_a_refusal_is_not_retried(
    tmp_path, database_backend, monkeypatch
):
    monkeypatch.setattr(api, "RETRY_PAUSE", 0.05)
    with running_server(tmp_path, database_backend, "lost", teams=1, per_day=None, workers=2) as (server, deployment):
        proxy = AnswerDroppingProxy(server.port)
        try:
            client = api.Client(f"http://127.0.0.1:{proxy.port}", deployment.tokens["team-0"], timeout=60)
            data = synthetic.predictions("nlvr2", deployment.gold, 0.7, seed=3)
            fields = {"benchmark": "nlvr2", "split": "test-p", "model_name": "lost-answer"}
            created = client.upload(fields, "p.csv", data)
            assert proxy.connections == 2  # the first answer was lost; the retry was answered
            assert created["status"] == "scored"
            assert _stored_ids(deployment.database_url) == [created["id"]]
            # A refusal arrives: it is the answer, and it is not sent again.
            with pytest.raises(api.ApiError) as refused:
                client.upload({**fields, "model_name": "bad"}, "p.csv", b"x,y\n")
            assert refused.value.status == 422 and proxy.connections == 3
        finally:
            proxy.close()


def _stored_ids(database_url: str) -> list[int]:
    engine = create_engine(database_url)
    with engine.connect() as connection:
        rows = connection.execute(text("SELECT id FROM submissions WHERE status = 'scored'")).scalars().all()
    engine.dispose()
    return list(rows)
