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


@pytest.fixture(params=["MAIL_USE_TLS", "MAIL_USE_SSL"])
def tls_server(request, certificate):
    """An SMTP server that wants a login, by STARTTLS (MAIL_USE_TLS) or TLS from the start (MAIL_USE_SSL):
    (sink, logins seen, the setting that reaches it)."""
    logins, context = _Logins(), _server_context(certificate)
    if request.param == "MAIL_USE_TLS":
        options = {"tls_context": context, "require_starttls": True}
    else:
        # aiosmtpd counts only STARTTLS as TLS when it offers AUTH; the login records what the connection was.
        options = {"ssl_context": context, "auth_require_tls": False}
    sink = SmtpSink(authenticator=logins, auth_required=True, **options).start()
    yield sink, logins, request.param
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


def test_a_server_whose_certificate_is_trusted_gets_the_letter_with_the_login_inside_tls(
    app, tls_server, certificate, monkeypatch
):
    sink, logins, mode = tls_server
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))  # as an operator names the CA of a private server
    _ask_for_a_reset(app, sink, **{mode: True})
    (letter,) = sink.wait_for("tls@example.org")
    assert "/password/reset/" in letter.get_content()
    assert logins.seen == [(LOGIN, SECRET, True)]


def test_a_server_with_a_certificate_nobody_vouches_for_gets_no_password_and_no_letter(app, tls_server):
    """The system's CAs do not know the certificate (someone on the path answering for the mail server)."""
    sink, logins, mode = tls_server
    _ask_for_a_reset(app, sink, **{mode: True})
    job = _job(app)
    assert job.state == "queued" and "CERTIFICATE_VERIFY_FAILED" in job.error, job.error
    assert logins.seen == [] and sink.to("tls@example.org") == []
