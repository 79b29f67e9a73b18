#!/bin/sh
# The long run of issue 12 item 2: >= 300 applies racing a person's saves, 0 lost.
# Runs the same test as `cargo test` (tests/it/write.rs, a_save_racing_an_apply_is_never_lost)
# with more applies, first with a save every 20 ms whatever the applies do, then
# with one save aimed at a random moment of each apply. Prints the figures.
# Usage: tests/stress/racing-saves.sh [applies]   (default 300)
set -eu
cd "$(dirname "$0")/../.."
applies="${1:-300}"
run() {
    cargo test --quiet --test it write::a_save_racing_an_apply_is_never_lost -- --nocapture 2>&1 \
        | grep -E '^racing saves|saves lost|panicked' || true
}
echo "== steady: a save every 20 ms"
KB_RACE_APPLIES="$applies" KB_RACE_SAVE_MS=20 run
echo "== aimed: one save at a random moment within 60 ms of each apply's start"
KB_RACE_APPLIES="$applies" KB_RACE_AIM_MS=60 run
