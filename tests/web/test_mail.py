"""Mail through a real SMTP server on loopback (aiosmtpd): password resets, address checks, invitations and
notifications, sent by jobs beside the request (JOB_QUEUE=inline runs them in a thread of the process)."""

from __future__ import annotations

import json
import re
import smtplib
from datetime import timedelta
from email.utils import parseaddr
from urllib.parse import urlsplit

import pytest
import time_machine

from app import synthetic
from app.db import db
from app.models import Job, Membership, Team, User, utcnow
from app.services import catalog
from app.services.jobs import transport
from app.services.mail import outbox, undeliverable
from app.services.maintenance import label_audits, maintainer_actions
from app.services.people import accounts, teams
from tests.support.blind_test_world import api_upload, public_split
from tests.support.browser import login, post_form, register
from tests.support.smtp_sink import SmtpSink, settled
from tests.support.users import PASSWORD, bearer, make_token, make_user

NEW_PASSWORD = "a brand new passphrase"


def path_of(link: str) -> str:
    parts = urlsplit(link)
    assert parts.scheme == "http" and parts.netloc == "localhost", link  # SITE_URL, never the request's Host
    return parts.path


def answer(response) -> str:
    return re.sub(
        r"\s+",
        " ",
        re.search(r'<div class="alert" role="status">(.*?)</div>', response.get_data(as_text=True), re.S).group(1),
    )


def test_a_reset_link_works_once_ends_every_session_and_unknown_addresses_get_the_same_answer(mail_app, sink):
    with mail_app.app_context():
        make_user("ada@example.org")
        accounts.create_token(db.session.scalar(db.select(User)), "script")[1]
    elsewhere = mail_app.test_client()
    assert login(elsewhere, "ada@example.org", PASSWORD).status_code == 302
    visitor = mail_app.test_client()
    assert 'href="/password/forgot"' in visitor.get("/login").get_data(as_text=True)

    known = post_form(visitor, "/password/forgot", {"email": "Ada@Example.org "})
    unknown = post_form(visitor, "/password/forgot", {"email": "nobody@example.org"})
    assert known.status_code == unknown.status_code == 200
    assert answer(known) == answer(unknown)
    settled()
    assert sink.to("nobody@example.org") == []
    (letter,) = sink.wait_for("ada@example.org")
    assert letter["Subject"] == "Reset your Holdout password"
    (link,) = [link for link in sink.links(letter) if "/password/reset/" in link]
    reset_path = path_of(link)
    with mail_app.app_context():
        generation = accounts.get_user_by_email("ada@example.org").reset_generation
    with mail_app.app_context():  # the jobs table never held the link
        assert all(reset_path.rsplit("/", 1)[1] not in job.args for job in db.session.scalars(db.select(Job)))

    page = visitor.get(reset_path)
    assert page.status_code == 200 and page.headers["Cache-Control"] == "no-store"
    assert page.headers["Referrer-Policy"] == "no-referrer"
    done = post_form(visitor, reset_path, {"new_password": NEW_PASSWORD})
    assert done.status_code == 303 and done.headers["Location"].endswith("/login")

    again = post_form(visitor, reset_path, {"new_password": "yet another passphrase"}, form_page="/login")
    assert again.status_code == 422 and "not valid" in again.get_data(as_text=True)
    assert visitor.get(reset_path).status_code == 422
    assert elsewhere.get("/account").status_code == 302  # the other browser's session ended
    assert login(mail_app.test_client(), "ada@example.org", PASSWORD).status_code == 401
    assert login(mail_app.test_client(), "ada@example.org", NEW_PASSWORD).status_code == 302
    with mail_app.app_context():  # API tokens stay unless asked
        assert accounts.get_user_by_email("ada@example.org").reset_generation == generation + 1
        assert all(token.revoked_at is None for token in db.session.scalar(db.select(User)).tokens)


def test_a_reset_link_dies_after_30_minutes_and_can_revoke_the_tokens(mail_app, sink):
    with mail_app.app_context():
        user = make_user("bo@example.org")
        _, plaintext = accounts.create_token(user, "script")
    client = mail_app.test_client()
    post_form(client, "/password/forgot", {"email": "bo@example.org"})
    (first,) = sink.wait_for("bo@example.org")
    late = path_of(next(link for link in sink.links(first) if "/password/reset/" in link))
    with time_machine.travel(utcnow() + timedelta(minutes=31)):
        assert client.get(late).status_code == 422
    post_form(client, "/password/forgot", {"email": "bo@example.org"})
    second = sink.wait_for("bo@example.org", 2)[1]
    fresh = path_of(next(link for link in sink.links(second) if "/password/reset/" in link))
    assert post_form(client, fresh, {"new_password": NEW_PASSWORD, "revoke_tokens": "y"}).status_code == 303
    assert client.get("/api/v1/me", headers=bearer(plaintext)).status_code == 401
    assert client.get(late).status_code == 422  # an older link dies with the use of a newer one


def test_asking_too_often_for_one_address_sends_no_more_and_says_the_same(mail_app, sink):
    with mail_app.app_context():
        make_user("cy@example.org")
    answers = set()
    for _ in range(5):
        client = mail_app.test_client()  # as if from several browsers
        answers.add(answer(post_form(client, "/password/forgot", {"email": "cy@example.org"})))
    settled()
    assert len(answers) == 1
    assert len(sink.to("cy@example.org")) == 3


def test_a_new_account_gets_a_confirmation_mail_and_cannot_upload_or_publish_before_following_it(mail_app, sink):
    with mail_app.app_context():
        gold = public_split()
    browser = mail_app.test_client()
    assert register(browser, "dee@example.org", PASSWORD).status_code == 200
    assert login(browser, "dee@example.org", PASSWORD).status_code == 302
    page = browser.get("/teams").get_data(as_text=True)
    assert "Confirm your address to make or join a team, upload and publish" in page
    with mail_app.app_context():
        user = accounts.get_user_by_email("dee@example.org")
        assert user.email_verified_at is None
        # A team and a token as an unconfirmed account could have made them before issue 35 (now refused).
        lab = Team(name="Dee's lab", slug="dees-lab")
        db.session.add_all([lab, Membership(user=user, team=lab)])
        db.session.commit()
        token = make_token(user)

    refused = api_upload(browser, token, gold)
    assert refused.status_code == 403 and "confirm your email address" in refused.get_json()["error"]
    with mail_app.app_context():
        assert db.session.scalar(db.select(db.func.count()).select_from(db.text("submissions"))) == 0

    (letter,) = sink.wait_for("dee@example.org")
    (link,) = [link for link in sink.links(letter) if "/account/verify/" in link]
    assert browser.get(path_of(link)).status_code == 200
    assert "Confirm your address" not in browser.get("/teams").get_data(as_text=True)
    assert api_upload(browser, token, gold, description="a model").status_code == 201
    # The resend button does nothing once verified, and a tampered link is refused.
    assert post_form(browser, "/account/verify/resend", form_page="/account").status_code == 303
    settled()
    assert len(sink.to("dee@example.org")) == 1
    assert browser.get(path_of(link)[:-3] + "xyz").status_code == 422


def test_accounts_made_with_the_cli_are_verified(mail_app, sink):
    result = mail_app.test_cli_runner().invoke(args=["users", "create", "eve@example.org", "--password", PASSWORD])
    assert result.exit_code == 0, result.output
    with mail_app.app_context():
        assert accounts.get_user_by_email("eve@example.org").email_verified_at is not None
    settled()
    assert sink.messages == []


def test_invitations_reveals_and_rescorings_are_mailed_to_those_who_want_them(mail_app, sink):
    with mail_app.app_context():
        catalog.add_benchmark("nlvr2", "nlvr2", "NLVR2")
        gold = synthetic.nlvr2_gold(120, split="test", seed=5)
        catalog.add_split("nlvr2", "test-u", gold, hidden=True)
        catalog.set_policy("nlvr2", "test-u", feedback="none")
        lab = Team(name="Lab", slug="lab")
        db.session.add(lab)
        db.session.commit()
        ann, quiet = make_user("ann@example.org", team=lab), make_user("quiet@example.org", team=lab)
        make_user("unconfirmed@example.org", team=lab, verified=False)  # a member since before issue 35
        accounts.set_notifications(quiet, reveal=False, rescore=False, invite=False)
        make_user("optout@example.org")
        accounts.set_notifications(
            accounts.get_user_by_email("optout@example.org"), reveal=True, rescore=True, invite=False
        )
        _, token = accounts.create_token(ann, "script")
    client = mail_app.test_client()
    uploaded = api_upload(client, token, gold, wrong=range(10), split="test-u")
    assert uploaded.status_code == 201, uploaded.get_data(as_text=True)

    # An invitation by mail: its link joins the team; an account that turned invitations off gets none.
    assert login(client, "ann@example.org", PASSWORD).status_code == 302
    invited = post_form(client, "/teams/1/invites", {"email": "new@example.org"}, form_page="/teams/1")
    assert invited.status_code == 200 and "mailed to new@example.org" in invited.get_data(as_text=True)
    post_form(client, "/teams/1/invites", {"email": "optout@example.org"}, form_page="/teams/1")
    (invitation,) = sink.wait_for("new@example.org")
    assert invitation["Subject"] == "An invitation to join Lab on Holdout"
    (link,) = [link for link in sink.links(invitation) if "/invites/" in link]
    newcomer = mail_app.test_client()
    register(newcomer, "new@example.org", PASSWORD)
    (welcome,) = sink.wait_for("new@example.org", 2)[1:]
    confirm = next(link for link in sink.links(welcome) if "/account/verify/" in link)
    assert newcomer.get(path_of(confirm)).status_code == 200  # joining needs a confirmed address
    assert login(newcomer, "new@example.org", PASSWORD).status_code == 302
    assert post_form(newcomer, path_of(link)).status_code == 302
    with mail_app.app_context():
        assert accounts.get_user_by_email("new@example.org").is_member(1)

    # The reveal of the held board, and a label correction that moves the score (public once revealed).
    settled()  # the invitation's job: SQLite has one writer at a time (a deferred reader may not become one)
    with mail_app.app_context():
        maintainer_actions.reveal_split(None, "nlvr2", "test-u", via="cli")
    (revealed,) = sink.wait_for("ann@example.org", 1)
    settled()
    assert "board is revealed" in revealed["Subject"] and "/leaderboards/nlvr2/test-u" in revealed.get_content()
    with mail_app.app_context():
        rows = [json.loads(line) for line in gold.decode().splitlines()]
        for row in rows[20:23]:  # labels the submission had right: its score drops
            row["label"] = "False" if row["label"] == "True" else "True"
        corrected = "".join(json.dumps(row) + "\n" for row in rows).encode()
        label_audits.correct_labels(None, "nlvr2", "test-u", corrected, "3 labels fixed")
    rescored = sink.wait_for("ann@example.org", 2)[1]
    assert rescored["Subject"] == "Your NLVR2 test-u submission #1 was rescored"
    assert "->" in rescored.get_content()
    settled()
    assert sink.to("quiet@example.org") == []
    assert sink.to("optout@example.org") == []
    # The newcomer confirmed the address to join: the invitation, the confirmation link and both notices; a
    # member who never confirmed gets no notification.
    assert len(sink.to("new@example.org")) == 4
    assert sink.to("unconfirmed@example.org") == []


def test_tokens_expire_when_asked_and_the_account_page_keeps_the_mail_settings(mail_app):
    with mail_app.app_context():
        make_user("fay@example.org")
    client = mail_app.test_client()
    login(client, "fay@example.org", PASSWORD)
    created = post_form(client, "/account/tokens", {"name": "ci", "expires_in_days": "7"}, form_page="/account")
    plaintext = re.search(r'id="new-token"[^>]*value="([^"]+)"', created.get_data(as_text=True)).group(1)
    assert client.get("/api/v1/me", headers=bearer(plaintext)).status_code == 200
    with time_machine.travel(utcnow() + timedelta(days=8)):
        assert client.get("/api/v1/me", headers=bearer(plaintext)).status_code == 401
        page = client.get("/account").get_data(as_text=True)
        assert "expired" in page
    assert "Last used" in page and "Expires" in page

    saved = post_form(client, "/account/notifications", {"notify_rescore": "y"}, form_page="/account")
    assert saved.status_code == 303
    with mail_app.app_context():
        fay = accounts.get_user_by_email("fay@example.org")
        assert (fay.notify_reveal, fay.notify_rescore, fay.notify_invite) == (False, True, False)


def test_an_smtp_server_that_is_down_fails_the_job_not_the_request_and_the_retry_sends(mail_app, sink):
    with mail_app.app_context():
        make_user("gil@example.org")
    mail_app.config["MAIL_PORT"] = SmtpSink().port  # nothing listens there
    client = mail_app.test_client()
    assert post_form(client, "/password/forgot", {"email": "gil@example.org"}).status_code == 200
    settled()
    with mail_app.app_context():
        job = db.session.scalar(db.select(Job).where(Job.kind == "mail"))
        assert (job.state, job.attempts) == ("queued", 1) and "refused" in job.error.lower()
    mail_app.config["MAIL_PORT"] = sink.port
    with time_machine.travel(utcnow() + timedelta(seconds=30)), mail_app.app_context():
        assert transport.run_due_here() == 1  # `flask jobs run`, or a worker after the backoff
    (letter,) = sink.wait_for("gil@example.org")
    assert "/password/reset/" in letter.get_content()


def test_no_transaction_is_open_while_a_letter_goes_to_the_smtp_server(mail_app, sink, monkeypatch):
    """Inline on SQLite the job's transactions begin as writers: one held open while the SMTP server answers
    (up to MAIL_TIMEOUT) would make every upload of the site wait for the mail."""

    seen: list[bool] = []
    real = outbox.deliver

    def watched(letter):
        seen.append(db.session().in_transaction())
        return real(letter)

    monkeypatch.setattr(outbox, "deliver", watched)
    with mail_app.app_context():
        make_user("hal@example.org")
    client = mail_app.test_client()
    assert post_form(client, "/password/forgot", {"email": "hal@example.org"}).status_code == 200
    sink.wait_for("hal@example.org")
    settled()
    assert seen == [False]


def test_without_workers_a_failed_mail_is_tried_again_in_the_process_after_its_backoff(mail_app, sink, monkeypatch):
    """Inline (SQLite, `make run`) no worker takes the retry: the process does, once the backoff is over."""
    from app.services.jobs import queue

    monkeypatch.setattr(queue, "BACKOFF_SECONDS", 0.5)
    with mail_app.app_context():
        make_user("ida@example.org")
    mail_app.config["MAIL_PORT"] = SmtpSink().port  # nothing listens there
    client = mail_app.test_client()
    assert post_form(client, "/password/forgot", {"email": "ida@example.org"}).status_code == 200
    with mail_app.app_context():
        job = db.session.scalar(db.select(Job).where(Job.kind == "mail"))
        assert (job.state, job.attempts) == ("queued", 1)
    mail_app.config["MAIL_PORT"] = sink.port
    (letter,) = sink.wait_for("ida@example.org")  # nobody ran `flask jobs run`
    assert "/password/reset/" in letter.get_content()
    settled()
    with mail_app.app_context():
        db.session.expire_all()
        assert db.session.scalar(db.select(Job.state).where(Job.id == job.id)) == "done"


def test_an_invitation_opt_out_holds_for_the_mailbox_whatever_its_tag(mail_app, sink):
    """Issue 35, finding 9: victim@example.org turned invitation mail off, so neither victim+x@example.org nor
    VICTIM+y@example.org is mailed an invitation (the same mailbox); an address with a trailing dot, which passed
    the check and then failed at SMTP (553) as a failed job, is refused at entry with a 422."""
    with mail_app.app_context():
        lab = Team(name="Lab", slug="lab")
        db.session.add(lab)
        db.session.commit()
        make_user("ann@example.org", team=lab)
        victim = make_user("victim@example.org")
        accounts.set_notifications(victim, reveal=True, rescore=True, invite=False)
    client = mail_app.test_client()
    assert login(client, "ann@example.org", PASSWORD).status_code == 302
    for address in ("victim+x@example.org", "VICTIM+y@example.org", "other@example.org"):
        sent = post_form(client, "/teams/1/invites", {"email": address}, form_page="/teams/1")
        assert sent.status_code == 200, sent.get_data(as_text=True)
    sink.wait_for("other@example.org")
    settled()
    assert sink.to("victim+x@example.org") == [] and sink.to("victim+y@example.org") == []
    assert sink.to("victim@example.org") == []
    dotted = post_form(client, "/teams/1/invites", {"email": "x@example.org."}, form_page="/teams/1")
    assert dotted.status_code == 422 and "valid email address" in dotted.get_data(as_text=True)


def _health(app) -> dict:
    return app.test_client().get("/healthz").get_json()


def test_an_address_the_server_refuses_for_good_is_marked_for_its_owner_and_keeps_the_health_check_ok(mail_app, sink):
    """Issue 35, finding 2: registering with an address the mail server refuses (550) made the confirmation
    letter a failed job of a key of its own, and /healthz degraded for good. Now the refusal is recorded against
    the address (the owner's account page and the console say so), the job ends done with that outcome, later
    letters the site sends on its own are not sent there, and a confirmation the owner asks for is tried and,
    delivered, clears the mark."""
    mail_app.config["JOB_MAX_ATTEMPTS"] = 1  # the old code's refused letter failed at once
    sink.refuse("nora@example.org", "550 5.1.1 <nora@example.org>: Recipient address rejected")
    browser = mail_app.test_client()
    assert register(browser, "nora@example.org", PASSWORD).status_code == 200  # "a mail is on its way"
    assert login(browser, "nora@example.org", PASSWORD).status_code == 302  # unconfirmed: may look around
    settled()
    assert _health(mail_app)["status"] == "ok"

    with mail_app.app_context():
        job = db.session.scalar(db.select(Job).where(Job.kind == "mail"))
        assert job.state == "done" and "refused for good (550" in job.result
        mark = undeliverable.mark_of("Nora@Example.org")
        assert mark is not None and mark.code == 550 and "Recipient address rejected" in mark.reply
    page = browser.get("/account").get_data(as_text=True)
    assert "We could not deliver to this address" in page and "(550: 5.1.1" in page
    with mail_app.app_context():
        make_user("root@example.org", admin=True)
    maintainer = mail_app.test_client()
    login(maintainer, "root@example.org", PASSWORD)
    console = maintainer.get("/console/jobs").get_data(as_text=True)
    assert "Undeliverable addresses" in console and "nora@example.org" in console

    # The mailbox works again, but the site does not know: an invitation is recorded as not sent.
    sink.forgive("nora@example.org")
    with mail_app.app_context():
        lab = Team(name="Lab", slug="lab")
        db.session.add(lab)
        db.session.commit()
        teams.create_invite(lab, make_user("ann@example.org", team=lab), "nora@example.org")
    settled()
    assert sink.to("nora@example.org") == []
    with mail_app.app_context():
        assert undeliverable.mark_of("nora@example.org").skipped == 1
        assert db.session.scalar(db.select(Job.state).order_by(Job.id.desc()).limit(1)) == "done"
    # The owner asks for the confirmation letter again: tried, delivered, and the mark is gone.
    assert post_form(browser, "/account/verify/resend", form_page="/account").status_code == 303
    (letter,) = sink.wait_for("nora@example.org")
    settled()
    assert "/account/verify/" in letter.get_content()
    assert "We could not deliver" not in browser.get("/account").get_data(as_text=True)
    assert _health(mail_app)["status"] == "ok"


def test_a_refusal_for_now_4xx_is_tried_again_and_marks_nothing(mail_app, sink):

    with mail_app.app_context():
        make_user("otto@example.org")
    sink.refuse("otto@example.org", "450 4.2.1 Mailbox busy, try again later")
    assert post_form(mail_app.test_client(), "/password/forgot", {"email": "otto@example.org"}).status_code == 200
    settled()
    with mail_app.app_context():
        job = db.session.scalar(db.select(Job).where(Job.kind == "mail"))
        assert (job.state, job.attempts) == ("queued", 1) and "450" in job.error
        assert undeliverable.mark_of("otto@example.org") is None
    sink.forgive()
    with time_machine.travel(utcnow() + timedelta(seconds=30)), mail_app.app_context():
        assert transport.run_due_here() == 1
    (letter,) = sink.wait_for("otto@example.org")
    assert "/password/reset/" in letter.get_content()


def test_a_failed_letter_is_cleared_by_the_next_letter_of_its_purpose(mail_app, sink):
    """Each letter is a job of its own (two resets are two letters), but letters of one kind to one account
    share a purpose: the newest one's outcome is what the health check counts."""
    mail_app.config["JOB_MAX_ATTEMPTS"] = 1
    with mail_app.app_context():
        make_user("pia@example.org")
    mail_app.config["MAIL_PORT"] = SmtpSink().port  # nothing listens there
    client = mail_app.test_client()
    post_form(client, "/password/forgot", {"email": "pia@example.org"})
    settled()
    assert _health(mail_app)["queue"]["failed"] == 1
    mail_app.config["MAIL_PORT"] = sink.port
    post_form(client, "/password/forgot", {"email": "pia@example.org"})
    sink.wait_for("pia@example.org")
    settled()
    assert _health(mail_app)["status"] == "ok"
    with mail_app.app_context():
        jobs = list(db.session.scalars(db.select(Job).order_by(Job.id)))
        assert [job.state for job in jobs] == ["failed", "done"] and jobs[0].key != jobs[1].key
        assert jobs[0].purpose == jobs[1].purpose == outbox.purpose_of("reset", {"email": "pia@example.org"})

    # About several things: all their ids; about an address alone: its digest; about neither: the key.
    assert outbox.purpose_of("reveal", {"user_id": 3, "split_id": 5}) == "mail:reveal:5:3"
    assert outbox.purpose_of("notice", {"text": "hello"}) is None


def test_only_a_refusal_of_the_recipient_or_its_letter_for_good_is_undeliverable(mail_app, sink):
    """A 5xx to RCPT or DATA is about this address; a 4xx is for now; a refusal of the site's own sender or login
    (MAIL FROM, AUTH) is the operator's to fix, so it stays a failing job that /healthz shows."""
    from app.services.mail.delivery import Letter, Undeliverable, _refusal, deliver

    to = "x@example.org"
    rcpt = _refusal(to, smtplib.SMTPRecipientsRefused({to: (550, b"5.1.1 no such user")}))
    assert rcpt is not None and (rcpt.address, rcpt.code, rcpt.reply) == (to, 550, "5.1.1 no such user")
    data = _refusal(to, smtplib.SMTPDataError(554, b"5.7.1 message refused"))
    assert data is not None and data.code == 554
    assert _refusal(to, smtplib.SMTPRecipientsRefused({to: (450, b"4.2.1 busy")})) is None
    assert _refusal(to, smtplib.SMTPDataError(451, b"4.3.0 try later")) is None
    letter = Letter(to=to, subject="s", body="b")
    with mail_app.app_context():
        sink.refuse(to)
        with pytest.raises(Undeliverable):
            deliver(letter)
        sink.forgive()
        sink.refuse(parseaddr(mail_app.config["MAIL_DEFAULT_SENDER"])[1])
        with pytest.raises(smtplib.SMTPSenderRefused):
            deliver(letter)
