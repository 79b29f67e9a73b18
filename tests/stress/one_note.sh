#!/bin/sh
# Heavy runs behind issue 12 item 10 (resource exhaustion by one note): not part of
# `cargo test`. Prints, per run, the peak RSS and wall time of each process.
#
#   1. a 30 MB note (the largest kind that is indexed: notes over 32 MiB are not) whose every line holds one of two query terms (the old snippet
#      code analysed every such line), searched by 8 `kb-index search --content`
#      processes at once;
#   2. a note with 200 KB of nested flow frontmatter and one with 50,000 aliases,
#      indexed (`kb-index build`).
#
# Usage: tests/stress/one_note.sh [BIN_DIR]   (default target/release; build it
# first with `cargo build --release`). Needs /usr/bin/time (GNU) and python3.
set -eu
BIN=${1:-target/release}
TIME=/usr/bin/time
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
vault="$work/vault"
mkdir -p "$vault/z"
python3 - "$vault" <<'PY'
import sys
vault = sys.argv[1]
line_a = "needle " + "filler words for a long note " * 3 + "\n"
line_b = "gamma " + "other words in another line " * 3 + "\n"
with open(f"{vault}/z/huge.md", "w") as f:
    f.write("# Huge\n\n")
    written = 0
    while written < 30_000_000:
        f.write(line_a); f.write(line_b)
        written += len(line_a) + len(line_b)
for i in range(50):
    with open(f"{vault}/z/small{i}.md", "w") as f:
        f.write(f"# Small {i}\n\nneedle and gamma in a small note {i}.\n")
depth = 100_000
with open(f"{vault}/z/nested.md", "w") as f:
    f.write("---\ntitle: Nested\nx: " + "[" * depth + "]" * depth + "\n---\n# Nested\n")
with open(f"{vault}/z/aliases.md", "w") as f:
    f.write("---\naliases:\n" + "".join(f"  - alias {i}\n" for i in range(50_000)) + "---\n# Aliases\n")
PY
echo "vault: $(du -sh "$vault" | cut -f1) in $work"
echo "== build (30 MB note, 200 KB nested frontmatter, 50,000 aliases)"
$TIME -f "build: peak RSS %M KiB, %e s" "$BIN/kb-index" build --vault "$vault" >/dev/null
echo "== one content search"
$TIME -f "search: peak RSS %M KiB, %e s" "$BIN/kb-index" search --vault "$vault" --content "needle gamma" >/dev/null || true
echo "== 8 concurrent content searches"
start=$(date +%s.%N)
for i in 1 2 3 4 5 6 7 8; do
    $TIME -f "search $i: peak RSS %M KiB, %e s" "$BIN/kb-index" search --vault "$vault" --content "needle gamma" >/dev/null &
done
wait
end=$(date +%s.%N)
echo "8 searches: $(echo "$end - $start" | bc) s wall"
