#!/usr/bin/env bash
# Debian packages the test suite needs, installed only when missing: Chromium (browser tests), the
# PostgreSQL server (the suite runs again on a throwaway cluster), pdflatex with booktabs and tabularx
# (a test compiles the LaTeX export), openssl (a certificate for the mail-over-TLS tests), nginx (the shipped
# proxy config is checked and run) and Node.js with
# npm, which install s3rver (a Node.js S3 server that keeps objects on disk) for the S3 upload-store tests:
# SeaweedFS has no Debian package and its releases cannot be downloaded here. s3rver goes into a cache
# folder outside the clone, like the virtualenv. Needs root for apt-get, as on CI; otherwise it says what is
# missing and the tests that need it skip with that reason.
set -euo pipefail

S3RVER_VERSION=3.7.1
S3RVER_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/holdout/s3rver-${S3RVER_VERSION}"
s3rver_installed() { [ -f "${S3RVER_DIR}/node_modules/s3rver/bin/s3rver.js" ]; }

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v pdflatex >/dev/null 2>&1 && kpsewhich booktabs.sty >/dev/null 2>&1 || missing+=(texlive-latex-recommended)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)  # a certificate for the mail-over-TLS tests
# nginx checks and runs the shipped proxy config (serving/nginx.conf); Debian's package is not started here.
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
# npm only to install s3rver: not needed once it is there.
s3rver_installed || command -v npm >/dev/null 2>&1 || missing+=(npm)

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

if ! s3rver_installed; then
  if command -v npm >/dev/null 2>&1; then
    echo "install-system-deps: installing s3rver ${S3RVER_VERSION} into ${S3RVER_DIR}"
    mkdir -p "${S3RVER_DIR}"
    npm install --prefix "${S3RVER_DIR}" --no-audit --no-fund --silent "s3rver@${S3RVER_VERSION}" >/dev/null ||
      echo "install-system-deps: npm could not install s3rver; the S3 tests will skip" >&2
  else
    echo "install-system-deps: no npm to install s3rver with; the S3 tests will skip" >&2
  fi
fi
