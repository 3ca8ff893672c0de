#!/usr/bin/env bash
# Install the Debian packages the tests use, once: poppler-utils (pdftoppm and
# pdftotext, to read the case reports' PDFs) and chromium with chromium-driver (the
# console's browser tests), and gcc with its ASan and UBSan runtimes (tests/fuzz/
# sanitize.sh). Packages already installed are skipped; ClickHouse is
# installed by deploy/clickhouse.sh and the Kafka jars by deploy/kafka.sh.
set -euo pipefail

PACKAGES=(poppler-utils chromium chromium-driver gcc)

missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0

sudo=()
if ((EUID != 0)); then
    command -v sudo >/dev/null || { echo "system-deps: installing ${missing[*]} needs root" >&2; exit 1; }
    sudo=(sudo)
fi
echo "system-deps: apt-get install ${missing[*]}"
# apt's own lock: wait for another install (e.g. ClickHouse's) instead of failing
if ! apt-cache policy "${missing[0]}" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=300 update -q
fi
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 \
    install -y -q --no-install-recommends "${missing[@]}"
