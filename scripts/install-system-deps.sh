#!/usr/bin/env bash
# Debian packages the test suite needs, installed only when missing: Chromium (browser tests), the
# PostgreSQL server (the suite runs again on a throwaway cluster) and pdflatex with booktabs and tabularx
# (a test compiles the LaTeX export). Needs root, as on CI; otherwise it says
# what is missing and the tests that need it skip with that reason.
set -euo pipefail

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v pdflatex >/dev/null 2>&1 && kpsewhich booktabs.sty >/dev/null 2>&1 || missing+=(texlive-latex-recommended)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-system-deps: missing ${missing[*]} and cannot apt-get here; the tests that need them will skip" >&2
  exit 0
fi
echo "install-system-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
