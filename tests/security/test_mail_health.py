"""Mail and /healthz (issue 35): a recipient refused for now on every try does not make health degraded.

Each test reproduces what a red team found in issue 35 (FAILS: what the old code did) and guards the fix. Mail goes
to a real SMTP server on loopback (tests/support/smtp_sink.py); jobs run beside the request (JOB_QUEUE=inline)."""

from __future__ import annotations

from app.db import db
from app.models import Job
from app.services.mail import undeliverable
from tests.support.browser import register
from tests.support.smtp_sink import settled


def test_a_recipient_refused_for_now_on_every_try_does_not_make_health_degraded(mail_app, sink):
    """Anyone can register with an address at a domain whose name servers fail (a 450 from the site's mail
    server on each try): /healthz stayed degraded until a maintainer dismissed the job, one per address. Now a
    recipient refused on its last try is marked as a lasting refusal is (tests/web/test_mail.py: a 4xx before
    the last try is still tried again)."""
    mail_app.config["JOB_MAX_ATTEMPTS"] = 1  # the last try at once (by default the fourth, some 2 minutes on)
    client = mail_app.test_client()
    assert client.get("/healthz").get_json()["status"] == "ok"
    address = "someone@dns-fails.example"
    sink.refuse(address, f"450 4.1.2 <{address}>: Recipient address rejected: Domain not found")
    assert register(mail_app.test_client(), address, "a fresh passphrase").status_code == 200
    settled()
    assert client.get("/healthz").get_json()["status"] == "ok"
    with mail_app.app_context():
        job = db.session.scalar(db.select(Job).where(Job.kind == "mail"))
        assert job.state == "done" and "refused on every try (450" in job.result
        assert undeliverable.mark_of(address).code == 450
