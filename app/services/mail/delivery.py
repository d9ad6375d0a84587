"""Delivering one letter: SMTP through Flask-Mail (MAIL_SERVER, MAIL_PORT, MAIL_USE_TLS/SSL, MAIL_USERNAME,
MAIL_PASSWORD, MAIL_DEFAULT_SENDER), or the log when no server is set."""

from __future__ import annotations

import logging
import smtplib
import ssl
from dataclasses import dataclass
from email.utils import parseaddr
from typing import cast

from flask_mail import Connection, Mail, Message

from app import settings

log = logging.getLogger("holdout.mail")

mail = Mail()


@dataclass(frozen=True)
class Letter:
    to: str
    subject: str
    body: str


class Undeliverable(Exception):
    """The letter's address was refused for good: a 5xx to its recipient (RCPT) or to its content (DATA), or
    an address no mail software may be given. Sending it again would get the same answer, so it is not a
    failure to retry but an outcome (app/services/mail/undeliverable.py). A 4xx, a lost connection, or a
    refusal of the site itself (its sender, its login: a 5xx to MAIL FROM or AUTH) stays a failure: those
    are tried again, and an operator must see them."""

    def __init__(self, address: str, code: int | None, reply: str):
        super().__init__(f"{address} refused{f' ({code})' if code else ''}: {reply}")
        self.address, self.code, self.reply = address, code, reply


def _reply_text(reply: bytes | str) -> str:
    text = reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply)
    return " ".join(text.split())[:300]


def _refusal(address: str, exc: smtplib.SMTPRecipientsRefused | smtplib.SMTPDataError) -> Undeliverable | None:
    """The permanent refusal an SMTP error is (None: a temporary one, 4xx)."""
    reply: bytes | str
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        # One recipient a letter: its (code, reply) is the only entry.
        code, reply = next(iter(exc.recipients.values()), (0, b""))
    else:
        code, reply = exc.smtp_code, exc.smtp_error
    return Undeliverable(address, code, _reply_text(reply)) if 500 <= code <= 599 else None


class RecipientDeferred(Exception):
    """The server refused the letter's recipient for now (a 4xx to RCPT: "450 domain not found", recipient
    verification not answering): a retry may get through, so it is a failure until the last try, and then
    an outcome about the address (outbox.py), not something an operator of the site can fix."""

    def __init__(self, address: str, code: int, reply: str):
        super().__init__(f"{address} refused for now ({code}): {reply}")
        self.address, self.code, self.reply = address, code, reply


class _TimedConnection(Connection):
    """Flask-Mail's connection with a timeout (it opens SMTP without one, and a silent server would hold a
    worker, or in-process a thread, for ever) and with the server's certificate checked: smtplib's own TLS
    (Flask-Mail's) accepts any certificate, so anyone on the path could read the reset links it carries."""

    def configure_host(self) -> smtplib.SMTP | smtplib.SMTP_SSL:
        state, timeout = self.mail, settings.current().mail_timeout
        # The system's CAs (SSL_CERT_FILE names others) and the server's name checked against MAIL_SERVER.
        context = ssl.create_default_context()
        host: smtplib.SMTP | smtplib.SMTP_SSL
        if state.use_ssl:
            host = smtplib.SMTP_SSL(state.server, state.port, timeout=timeout, context=context)
        else:
            host = smtplib.SMTP(state.server, state.port, timeout=timeout)
        if state.use_tls:
            host.starttls(context=context)
        if state.username and state.password:
            host.login(state.username, state.password)
        return host


def deliver(letter: Letter) -> str:
    """Send it; returns how it went, for the job's record. Raises Undeliverable when the address is refused
    for good, RecipientDeferred when it is refused for now, any other error on a failure to try again (the
    job's retry)."""
    if not settings.current().mail_server:
        # A warning: the demo's way to read its mail, and on a real site a mail nobody received.
        log.warning(
            "mail not sent (no MAIL_SERVER), written here instead:\nTo: %s\nSubject: %s\n\n%s",
            letter.to,
            letter.subject,
            letter.body,
        )
        return "written to the log (no MAIL_SERVER)"
    if parseaddr(letter.to)[1] != letter.to:
        # Mail software would deliver "Bob<ann@x.org>" to ann@x.org: only a plain address is written to.
        raise Undeliverable(letter.to, None, "not a plain address")
    # A subject is one line: names in it (a benchmark's, a team's) may hold line breaks, which Flask-Mail
    # would refuse as header injection on every attempt, and the letter would never go.
    subject = " ".join(letter.subject.split())
    message = Message(subject=subject, recipients=[letter.to], body=letter.body)
    # Read from the settings at each letter (not once at start-up), like every other setting.
    # (Connection is typed for the extension object; it reads the same attributes from the settings' state.)
    state = cast(Mail, mail.init_mail(dict(settings.current().mail_options)))
    try:
        with _TimedConnection(state) as connection:
            connection.send(message)
    except (smtplib.SMTPRecipientsRefused, smtplib.SMTPDataError) as exc:
        refused = _refusal(letter.to, exc)
        if refused is not None:
            raise refused from exc
        if isinstance(exc, smtplib.SMTPRecipientsRefused):
            code, reply = next(iter(exc.recipients.values()), (0, b""))
            raise RecipientDeferred(letter.to, code, _reply_text(reply)) from exc
        raise
    return "sent"
