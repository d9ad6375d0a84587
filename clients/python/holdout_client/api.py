"""Talking to a Holdout server with the standard library (urllib): its JSON API v1, and the public exports of a
board (CSV, Markdown, LaTeX), which the server writes as its pages do."""

from __future__ import annotations

import http.client
import json
import secrets
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from typing import IO, Any

from holdout_client import __version__

TIMEOUT = 300  # seconds: a 50 MB upload over a slow link, then scoring
CHUNK = 64 * 1024
PROGRESS_FROM = 1024 * 1024  # files at least this large get a progress bar (on a terminal)
RETRIES = 2  # an upload whose answer was lost is sent again this many times, with the same Idempotency-Key
RETRY_PAUSE = 1.0  # seconds before the first retry; the pause grows with each


class ApiError(Exception):
    """The server answered with an error, or could not be reached (status None)."""

    def __init__(self, status: int | None, message: str, details: list | None = None, body: dict | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.details = details or []
        self.body = body or {}


class Progress:
    """A one-line progress bar on a stream, redrawn in place; silent unless enabled."""

    def __init__(
        self, label: str, total: int, stream: IO[str] | None = None, enabled: bool | None = None, width: int = 30
    ):
        self.stream = stream or sys.stderr
        self.label, self.total, self.width, self.done = label, total, width, 0
        if enabled is None:
            enabled = total >= PROGRESS_FROM and getattr(self.stream, "isatty", lambda: False)()
        self.enabled = enabled

    def restart(self) -> None:
        """From zero again, for a retry of the same upload."""
        self.done = 0

    def advance(self, count: int) -> None:
        self.done = min(self.total, self.done + count)
        if not self.enabled:
            return
        share = self.done / self.total if self.total else 1.0
        filled = int(share * self.width)
        self.stream.write(
            f"\r{self.label} [{'#' * filled}{'.' * (self.width - filled)}] {int(share * 100):3d}% "
            f"{self.done / 1048576:.1f}/{self.total / 1048576:.1f} MB"
        )
        if self.done >= self.total:
            self.stream.write("\n")
        self.stream.flush()


def multipart(fields: dict[str, str], file_name: str, file_data: bytes) -> tuple[list[bytes], str]:
    """The parts of a multipart/form-data body (text fields, then the file) and its content type."""
    boundary = "holdout-" + secrets.token_hex(16)
    head = b"".join(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode()
        + value.encode("utf-8")
        + b"\r\n"
        for name, value in fields.items()
    )
    safe_name = file_name.replace('"', "_").replace("\r", "_").replace("\n", "_")
    head += (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{safe_name}"\r\n'
        "Content-Type: text/csv\r\n\r\n"
    ).encode()
    return [head, file_data, f"\r\n--{boundary}--\r\n".encode()], f"multipart/form-data; boundary={boundary}"


def _chunks(parts: list[bytes], progress: Progress) -> Iterator[bytes]:
    for part in parts:
        view = memoryview(part)
        for start in range(0, len(view), CHUNK):
            piece = view[start : start + CHUNK]
            yield bytes(piece)
            progress.advance(len(piece))


class Client:
    def __init__(self, url: str, token: str | None = None, timeout: float = TIMEOUT):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def _fetch(self, request: urllib.request.Request, authorized: bool = True) -> bytes:
        """The body of the server's answer; ApiError for an error status or no answer. The token goes to the
        API only (`authorized`), never to a public page."""
        request.add_header("User-Agent", f"holdout-client/{__version__}")
        if self.token and authorized:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.read()
        except urllib.error.HTTPError as exc:
            raise _error(exc.code, exc.read()) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ApiError(None, f"cannot reach {self.url}: {reason}") from None

    def _send(self, request: urllib.request.Request) -> Any:
        request.add_header("Accept", "application/json")
        payload = self._fetch(request)
        try:
            return json.loads(payload)
        except ValueError:
            raise ApiError(None, f"{self.url} did not answer with JSON; is it a Holdout server?") from None

    def get(self, path: str, query: dict[str, str] | list[tuple[str, str]] | None = None) -> Any:
        """An API answer; `query` a mapping, or pairs where a parameter repeats (`where`)."""
        url = f"{self.url}/api/v1{path}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        return self._send(urllib.request.Request(url, method="GET"))

    def get_export(self, path: str, query: list[tuple[str, str]] | None = None) -> bytes:
        """A public page outside the API (a board's export), its bytes as the server sent them; `query` as pairs,
        as a parameter may repeat (one `columns` a column, as the page's chooser sends them)."""
        url = f"{self.url}{path}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        request = urllib.request.Request(url, method="GET")
        # JSON after the export's own types: a refusal (an unknown column, say) then comes as the server's words.
        request.add_header("Accept", "text/csv, text/markdown, application/x-tex, text/plain, application/json;q=0.5")
        return self._fetch(request, authorized=False)

    def post_json(self, path: str, body: dict | None = None) -> Any:
        data = json.dumps(body or {}).encode()
        return self._send(
            urllib.request.Request(
                f"{self.url}/api/v1{path}", data=data, method="POST", headers={"Content-Type": "application/json"}
            )
        )

    def upload(
        self,
        fields: dict[str, str],
        file_name: str,
        file_data: bytes,
        progress: Progress | None = None,
        idempotency_key: str | None = None,
        attempts: int = RETRIES + 1,
    ) -> Any:
        """POST /submissions with an Idempotency-Key (a new random one unless given). When the connection
        breaks before the answer arrives, the upload may have been stored: it is sent again with the same
        key, up to `attempts` times in all, and the server answers a repeat as it answered the first."""
        key = idempotency_key or str(uuid.uuid4())
        for attempt in range(1, attempts + 1):
            try:
                return self._upload_once(fields, file_name, file_data, progress, key)
            except _ConnectionLost as lost:
                if attempt == attempts or not lost.retry:
                    raise ApiError(None, lost.message) from None
                if progress is not None:
                    progress.restart()
                time.sleep(RETRY_PAUSE * attempt)  # a server restarting needs a moment
        raise AssertionError("unreachable")  # the loop returns or raises

    def _upload_once(
        self, fields: dict[str, str], file_name: str, file_data: bytes, progress: Progress | None, key: str
    ) -> Any:
        """One POST, streamed in chunks (for the progress bar). http.client rather than urllib: a server that
        refuses the body part way (413, over its size limit) answers and closes, and its answer can still be
        read after the write fails."""
        parts, content_type = multipart(fields, file_name, file_data)
        length = sum(len(part) for part in parts)
        progress = progress or Progress(f"uploading {file_name}", length)
        progress.total = length
        target = urllib.parse.urlsplit(f"{self.url}/api/v1/submissions")
        kind = http.client.HTTPSConnection if target.scheme == "https" else http.client.HTTPConnection
        connection = kind(target.hostname, target.port, timeout=self.timeout)
        try:
            try:
                connection.putrequest("POST", target.path)
                for name, value in (
                    ("Content-Type", content_type),
                    ("Content-Length", str(length)),
                    ("Accept", "application/json"),
                    ("User-Agent", f"holdout-client/{__version__}"),
                    ("Idempotency-Key", key),
                    *((("Authorization", f"Bearer {self.token}"),) if self.token else ()),
                ):
                    connection.putheader(name, value)
                connection.endheaders()
            except OSError as exc:
                raise _ConnectionLost(f"cannot reach {self.url}: {exc}", retry=True) from None
            stopped = None
            try:
                for chunk in _chunks(parts, progress):
                    connection.send(chunk)
            except OSError as exc:  # the server stopped reading; its answer, if any, says why
                stopped = exc
            try:
                response = connection.getresponse()
                status, payload = response.status, response.read()
            except OSError as exc:
                if stopped is not None:  # refused while sending: most likely over the size limit
                    raise _ConnectionLost(
                        f"the connection to {self.url} broke during the upload ({stopped}); "
                        "the file may be over the server's size limit",
                        retry=False,
                    ) from None
                raise _ConnectionLost(
                    f"the connection to {self.url} broke before its answer ({exc}); "
                    f"sent with Idempotency-Key {key}, so it is stored at most once however often it is sent",
                    retry=True,
                ) from None
        finally:
            connection.close()
        if status >= 400:
            raise _error(status, payload)
        try:
            return json.loads(payload)
        except ValueError:
            raise ApiError(None, f"{self.url} did not answer with JSON; is it a Holdout server?") from None


class _ConnectionLost(Exception):
    def __init__(self, message: str, retry: bool):
        super().__init__(message)
        self.message = message
        self.retry = retry


def _error(status: int, payload: bytes) -> ApiError:
    try:
        body = json.loads(payload)
    except ValueError:
        body = None
    if not isinstance(body, dict) or "error" not in body:
        return ApiError(status, f"the server answered HTTP {status}")
    details = body.get("details") if isinstance(body.get("details"), list) else []
    return ApiError(status, str(body["error"]), details, body)
