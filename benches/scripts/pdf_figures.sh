#!/usr/bin/env bash
# Build time and index size of a generated vault with and without PDFs (BENCHMARKS.md,
# "PDFs"): a vault of NOTES notes (default 10000), a copy with generated PDFs making SHARE
# of its files (default 0.08), each built by the release kb-index: the plain vault, the
# PDF vault with nothing kept (every PDF extracted), and again with the texts kept in
# .kb/pdf-text/ (a rebuild), then a sync of the unchanged vault. Prints one line a run.
#
#   cargo build --release --locked -p kb-mcp --bins -p kb-bench --example gen-vault --example pdf-vault
#   bash benches/scripts/pdf_figures.sh [NOTES] [SHARE]
set -euo pipefail
notes="${1:-10000}"
share="${2:-0.08}"
target="${CARGO_TARGET_DIR:-target}/release"
work="${KB_BENCH_DIR:-/tmp/kb-bench}/pdf-figures-$notes"
rm -rf "$work"
mkdir -p "$work"
"$target/examples/gen-vault" --notes "$notes" --out "$work/plain" >/dev/null
cp -r "$work/plain" "$work/pdf"
"$target/examples/pdf-vault" --vault "$work/pdf" --share "$share"

run() { # name vault args…
    local name="$1" vault="$2"
    shift 2
    local log="$work/$name.time"
    /usr/bin/time -f "%e %M" -o "$log" "$target/kb-index" --vault "$vault" build "$@" >/dev/null
    read -r seconds rss <"$log"
    local index pdf_text=0
    index=$(du -sb "$vault/.kb" | cut -f1)
    if [ -d "$vault/.kb/pdf-text" ]; then pdf_text=$(du -sb "$vault/.kb/pdf-text" | cut -f1); fi
    printf '%-22s %7.2f s  peak RSS %5d MiB  .kb %6.1f MB (pdf-text %5.1f MB)\n' \
        "$name" "$seconds" $((rss / 1024)) "$(echo "$index / 1000000" | bc -l)" "$(echo "$pdf_text / 1000000" | bc -l)"
}

for round in 1 2 3; do
    echo "round $round (load $(cut -d' ' -f1-3 /proc/loadavg))"
    rm -rf "$work/plain/.kb" "$work/pdf/.kb"
    run "plain --full" "$work/plain" --full
    run "pdf --full (extract)" "$work/pdf" --full
    run "pdf --full (kept)" "$work/pdf" --full
    run "pdf sync (unchanged)" "$work/pdf"
done
echo "markdown: $(find "$work/plain" -name '*.md' | wc -l) notes, $(du -sb --exclude=.kb "$work/plain" | cut -f1) bytes"
echo "pdfs: $(find "$work/pdf" -name '*.pdf' | wc -l) files, $(find "$work/pdf" -name '*.pdf' -print0 | du -cb --files0-from=- | tail -1 | cut -f1) bytes"
