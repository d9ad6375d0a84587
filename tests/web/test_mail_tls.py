"""Mail over TLS against a real SMTP server on loopback (aiosmtpd with a certificate made here): STARTTLS
(MAIL_USE_TLS) and TLS from the start (MAIL_USE_SSL) deliver, with the login sent only inside TLS; a server
whose certificate nobody vouches for gets neither the password nor the letter (smtplib's own TLS, which
Flask-Mail uses, would have accepted any certificate and sent both)."""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
from pathlib import Path

import pytest
from aiosmtpd.smtp import AuthResult

from app.db import db
from app.models import Job
from tests.support.browser import post_form
from tests.support.smtp_sink import SmtpSink, settled
from tests.support.users import make_user

LOGIN, SECRET = b"holdout", b"smtp-password"

# The implicit-TLS sink offers AUTH without STARTTLS (see implicit_tls), which aiosmtpd warns about.
pytestmark = pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost: (certificate, key)."""
    if shutil.which("openssl") is None:
        reason = "openssl is not installed (make test installs it)"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI is set, so the TLS tests must run", pytrace=False)
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


class _Logins:
    def __init__(self) -> None:
        self.seen: list[tuple[bytes, bytes, bool]] = []

    def __call__(self, server, session, envelope, mechanism, auth_data):
        encrypted = server.transport.get_extra_info("ssl_object") is not None
        self.seen.append((auth_data.login, auth_data.password, encrypted))
        return AuthResult(success=(auth_data.login, auth_data.password) == (LOGIN, SECRET))


def _server_context(certificate) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*map(str, certificate))
    return context


@pytest.fixture
def starttls(certificate):
    logins = _Logins()
    sink = SmtpSink(
        tls_context=_server_context(certificate), require_starttls=True, authenticator=logins, auth_required=True
    ).start()
    yield sink, logins
    sink.stop()


@pytest.fixture
def implicit_tls(certificate):
    logins = _Logins()
    # aiosmtpd counts only STARTTLS as TLS when it offers AUTH; the login records what the connection was.
    sink = SmtpSink(
        ssl_context=_server_context(certificate), authenticator=logins, auth_required=True, auth_require_tls=False
    ).start()
    yield sink, logins
    sink.stop()


def _ask_for_a_reset(app, sink: SmtpSink, **settings) -> None:
    app.config.update(sink.config() | {"MAIL_USERNAME": LOGIN.decode(), "MAIL_PASSWORD": SECRET.decode(), **settings})
    with app.app_context():
        make_user("tls@example.org")
    assert post_form(app.test_client(), "/password/forgot", {"email": "tls@example.org"}).status_code == 200
    settled()


def _job(app) -> Job:
    with app.app_context():
        return db.session.scalar(db.select(Job).where(Job.kind == "mail"))


def test_starttls_to_a_server_whose_certificate_is_trusted_delivers_with_the_login_inside_tls(
    app, starttls, certificate, monkeypatch
):
    sink, logins = starttls
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))  # as an operator names the CA of a private server
    _ask_for_a_reset(app, sink, MAIL_USE_TLS=True)
    (letter,) = sink.wait_for("tls@example.org")
    assert "/password/reset/" in letter.get_content()
    assert logins.seen == [(LOGIN, SECRET, True)]


def test_tls_from_the_start_delivers_too(app, implicit_tls, certificate, monkeypatch):
    sink, logins = implicit_tls
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    _ask_for_a_reset(app, sink, MAIL_USE_SSL=True)
    sink.wait_for("tls@example.org")
    assert logins.seen == [(LOGIN, SECRET, True)]


@pytest.mark.parametrize("mode", ["MAIL_USE_TLS", "MAIL_USE_SSL"])
def test_a_server_with_a_certificate_nobody_vouches_for_gets_no_password_and_no_letter(
    app, starttls, implicit_tls, mode
):
    """The system's CAs do not know the certificate (someone on the path answering for the mail server)."""
    sink, logins = starttls if mode == "MAIL_USE_TLS" else implicit_tls
    _ask_for_a_reset(app, sink, **{mode: True})
    job = _job(app)
    assert job.state == "queued" and "CERTIFICATE_VERIFY_FAILED" in job.error, job.error
    assert logins.seen == [] and sink.to("tls@example.org") == []
