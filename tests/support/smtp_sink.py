"""A real SMTP server on loopback (aiosmtpd) that keeps every message it receives, for the mail tests."""

from __future__ import annotations

import email
import email.policy
import re
import socket
import threading
import time
from email.message import EmailMessage

from aiosmtpd.controller import Controller

LINK = re.compile(r"https?://\S+")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class _Keeper:
    def __init__(self, sink: SmtpSink):
        self.sink = sink

    async def handle_MAIL(self, server, session, envelope, address, mail_options):
        with self.sink.lock:
            refusal = self.sink.refused.get(address.lower())
        if refusal is not None:
            return refusal
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 OK"

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        with self.sink.lock:
            refusal = self.sink.refused.get(address.lower())
        if refusal is not None:
            return refusal
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with self.sink.lock:
            self.sink.messages.append((list(envelope.rcpt_tos), message))
        return "250 Message accepted for delivery"


class SmtpSink:
    def __init__(self, **smtp_options) -> None:
        """`smtp_options` go to aiosmtpd's Controller: tls_context and require_starttls (STARTTLS),
        ssl_context (TLS from the start), authenticator (AUTH), ..."""
        self.messages: list[tuple[list[str], EmailMessage]] = []
        # address -> the reply to its RCPT TO, or MAIL FROM for a sender ("550 5.1.1 no such user")
        self.refused: dict[str, str] = {}
        self.lock = threading.Lock()
        self._port = _free_port()
        self.controller = Controller(_Keeper(self), hostname="127.0.0.1", port=self._port, **smtp_options)

    def start(self) -> SmtpSink:
        self.controller.start()
        return self

    def stop(self) -> None:
        self.controller.stop()

    @property
    def port(self) -> int:
        return self._port

    def config(self) -> dict:
        """The app settings that send to this sink."""
        return {"MAIL_SERVER": "127.0.0.1", "MAIL_PORT": self.port, "SITE_URL": "http://localhost"}

    def refuse(self, address: str, reply: str = "550 5.1.1 No such user here") -> None:
        """Answer RCPT TO (or MAIL FROM) for this address with `reply` (a 5xx for good, a 4xx for now) until
        forgiven."""
        with self.lock:
            self.refused[address.lower()] = reply

    def forgive(self, address: str | None = None) -> None:
        """Accept this address again (every address: None)."""
        with self.lock:
            if address is None:
                self.refused.clear()
            else:
                self.refused.pop(address.lower(), None)

    def to(self, address: str) -> list[EmailMessage]:
        with self.lock:
            return [message for rcpt, message in self.messages if address in rcpt]

    def wait_for(self, address: str, count: int = 1, timeout: float = 10.0) -> list[EmailMessage]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.to(address)
            if len(found) >= count:
                return found
            time.sleep(0.02)
        raise AssertionError(f"{count} mail(s) to {address} expected, {len(self.to(address))} arrived")

    @staticmethod
    def links(message: EmailMessage) -> list[str]:
        return LINK.findall(message.get_content())


def settled() -> None:
    """Every mail job queued so far in this process has run (inline, they run in threads beside the requests)."""
    from app.services.jobs import transport

    assert transport.wait_beside(), "a mail job is still running"
