"""The shipped proxy config (serving/nginx.conf) keeps secrets (issue 35, finding 10): Debian's nginx accepts it
(`nginx -t`), and a real nginx run from it on loopback, in front of a stub app server, logs no link token, no
query string and no Referer, and passes no client-sent X-Forwarded-Host to the app."""

from __future__ import annotations

import getpass
import http.server
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)

pytestmark = pytest.mark.skipif(
    NGINX is None or shutil.which("openssl") is None,
    reason="nginx and openssl come from Debian (make system-deps installs them)",
)

SECRETS = ("RESETTOKEN1", "VERIFYTOKEN2", "INVITETOKEN3", "QUERYSECRET4", "REFERERSECRET5")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _Upstream(http.server.BaseHTTPRequestHandler):
    """A stand-in app server: answers 200 and keeps the headers each request arrived with."""

    seen: list[dict[str, str]] = []

    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        type(self).seen.append({name.lower(): value for name, value in self.headers.items()})
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args) -> None:
        pass


def _site(folder: Path, listen: int, upstream: int) -> Path:
    """The shipped config with this machine's paths: loopback ports, a throwaway certificate and folders."""
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost"]
        + ["-keyout", str(folder / "key.pem"), "-out", str(folder / "cert.pem")],
        check=True,
        capture_output=True,
    )
    text = (ROOT / "serving" / "nginx.conf").read_text()
    replaced = {
        "/var/cache/nginx/holdout": str(folder / "cache"),
        "/var/log/nginx/holdout.access.log": str(folder / "access.log"),
        "listen 443 ssl;": f"listen 127.0.0.1:{listen} ssl;",
        "# ssl_certificate /etc/ssl/holdout.pem; ssl_certificate_key /etc/ssl/holdout.key;": (
            f"ssl_certificate {folder / 'cert.pem'}; ssl_certificate_key {folder / 'key.pem'};"
        ),
        "server 10.0.0.11:8000": f"server 127.0.0.1:{upstream}",
        "server 10.0.0.12:8000": f"server 127.0.0.1:{upstream}",
    }
    for old, new in replaced.items():
        assert old in text, f"serving/nginx.conf no longer holds {old!r}: update this test's stand-ins"
        text = text.replace(old, new)
    (folder / "site.conf").write_text(text)
    wrapper = folder / "nginx.conf"
    temp = {name: folder / name for name in ("body", "proxy", "fastcgi", "uwsgi", "scgi")}
    wrapper.write_text(
        # Workers as the test's own user: they write the cache and temporary files under its private folder.
        f"daemon off;\nuser {getpass.getuser()};\npid {folder / 'nginx.pid'};\n"
        f"error_log {folder / 'error.log'};\nevents {{}}\nhttp {{\n"
        f"    client_body_temp_path {temp['body']};\n    proxy_temp_path {temp['proxy']};\n"
        f"    fastcgi_temp_path {temp['fastcgi']};\n    uwsgi_temp_path {temp['uwsgi']};\n"
        f"    scgi_temp_path {temp['scgi']};\n    include {folder / 'site.conf'};\n}}\n"
    )
    return wrapper


def test_nginx_accepts_the_config_and_logs_no_secret(tmp_path):
    listen, upstream_port = _free_port(), _free_port()
    wrapper = _site(tmp_path, listen, upstream_port)
    checked = subprocess.run([NGINX, "-t", "-c", str(wrapper), "-p", str(tmp_path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr

    _Upstream.seen = []
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", upstream_port), _Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    proxy = subprocess.Popen([NGINX, "-c", str(wrapper), "-p", str(tmp_path)], stderr=subprocess.PIPE)
    try:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # the throwaway certificate
        base = f"https://127.0.0.1:{listen}"
        for _ in range(100):  # nginx is up once it answers
            try:
                urllib.request.urlopen(f"{base}/healthz", context=context, timeout=2).read()
                break
            except OSError:
                time.sleep(0.05)
        paths = (
            "/password/reset/RESETTOKEN1?next=/account",
            "/account/verify/VERIFYTOKEN2",
            "/invites/INVITETOKEN3",
            "/leaderboards/nlvr2/dev?q=QUERYSECRET4",
        )
        for path in paths:
            request = urllib.request.Request(
                base + path,
                headers={"X-Forwarded-Host": "evil.example", "Referer": f"{base}/invites/REFERERSECRET5"},
            )
            assert urllib.request.urlopen(request, context=context, timeout=5).status == 200
    finally:
        proxy.send_signal(signal.SIGQUIT)  # a graceful stop writes the log out
        proxy.wait(timeout=10)
        upstream.shutdown()
    log = (tmp_path / "access.log").read_text()
    assert log.count("\n") >= len(paths), log
    for secret in SECRETS:
        assert secret not in log, log
    assert "?" not in log, log  # no query string at all
    for redacted in ("/password/reset/<redacted>", "/account/verify/<redacted>", "/invites/<redacted>"):
        assert redacted in log, log
    assert "/leaderboards/nlvr2/dev" in log  # other paths are logged as they are
    # The app never sees a host the client chose; it sees the client's address and the scheme.
    assert len(_Upstream.seen) >= len(paths)
    assert all("x-forwarded-host" not in headers for headers in _Upstream.seen), _Upstream.seen
    assert all(headers.get("x-forwarded-proto") == "https" for headers in _Upstream.seen)
