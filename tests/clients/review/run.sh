#!/usr/bin/env bash
# The review card, the review page and the OAuth consent page in a real browser (Debian's
# Chromium through playwright-core), against the real binaries: installs what is missing
# (install.sh), builds the binaries, runs card.mjs, page.mjs and consent.mjs. Prints one
# `ok`/`FAIL` line per check; exits non-zero if any check failed.
#
#   bash tests/clients/review/run.sh
#   KB_UPDATE_SCREENSHOTS=1 bash tests/clients/review/run.sh   # also rewrites docs/review-*.png
#   KB_REVIEW_BENCH=10000 bash tests/clients/review/run.sh     # also times a 10,000-link move
set -uo pipefail
cd "$(dirname "$0")/../../.."

tools=$(bash tests/clients/review/install.sh) || { echo "FAIL review: install.sh"; exit 1; }
export KB_REVIEW_TOOLS="$tools"
cargo build --quiet --bins || { echo "FAIL review: cargo build"; exit 1; }

status=0
node tests/clients/review/card.mjs || status=1
node tests/clients/review/page.mjs || status=1
node tests/clients/review/consent.mjs || status=1
exit $status
