#!/usr/bin/env python3
"""Growth plot and tables from the criterion results of `benches/vault.rs` (stdlib only).

Reads `target/criterion/**/new/{benchmark,estimates}.json` (criterion's median
per benchmark) and `target/kb-bench/latency/*.json` (per-call p50/p99 written
by the benchmarks), and writes `benches/growth.svg`: time against vault size
in notes, log-log, one line per benchmark family, in three panels (index
builds, searches, other tools). The obsidian-help corpus, when measured, is
drawn as a hollow marker at its note count. A dashed grey line of slope 1
shows linear growth for comparison.

    python3 benches/scripts/plot.py [--out benches/growth.svg] [--table]

With `--table`, also prints Markdown tables of the medians, throughputs and
percentiles for BENCHMARKS.md.
"""

import argparse
import json
import math
import os
import sys
from html import escape
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
CRITERION = Path(os.environ.get("CRITERION_HOME", TARGET / "criterion"))
LATENCY = TARGET / "kb-bench" / "latency"
CORPUS = REPO.parent / "shared" / "corpora" / "obsidian-help"
CORPUS_LABEL = "obsidian-help"

PANELS = [
    ("Index builds and writes", ["parse_note", "full_build", "incremental", "apply_proposal"]),
    ("Searches (warm, 10 hits, snippets for content)", ["search_knowledge", "search_note_content"]),
    ("Other tools (warm)", ["read_note", "get_related_notes", "list_tags", "get_vault_overview"]),
]
COLOURS = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
    "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f",
]


def corpus_notes():
    if not CORPUS.is_dir():
        return None
    count = 0
    for _, dirs, names in os.walk(CORPUS):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        count += sum(1 for n in names if n.endswith(".md"))
    return count


def load():
    """[(group, function, label, notes, median_ns, throughput_bytes)]."""
    rows = []
    corpus = None
    for bench in sorted(CRITERION.glob("**/new/benchmark.json")):
        meta = json.loads(bench.read_text())
        estimates = json.loads((bench.parent / "estimates.json").read_text())
        label = meta.get("value_str") or ""
        if label.isdigit():
            notes = int(label)
        elif label == CORPUS_LABEL:
            corpus = corpus if corpus is not None else corpus_notes()
            notes = corpus
        else:
            continue
        if not notes:
            continue
        throughput = (meta.get("throughput") or {}).get("Bytes")
        rows.append(
            (
                meta["group_id"],
                meta.get("function_id"),
                label,
                notes,
                estimates["median"]["point_estimate"],
                throughput,
            )
        )
    return rows


def latency():
    out = {}
    if LATENCY.is_dir():
        for path in LATENCY.glob("*.json"):
            data = json.loads(path.read_text())
            out[data["id"]] = data
    return out


def family(group, function):
    return group if not function else f"{group}/{function}"


def fmt_time(ns):
    if ns >= 1e9:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e3:.1f} µs"


def decade_label(value, unit):
    if unit == "time":
        return fmt_time(value).replace(".00", "").replace(".0 ", " ")
    return f"{value:,.0f}" if value >= 1 else f"{value:g}"


def panel_svg(title, series, x0, y0, width, height):
    """One log-log panel; series = [(name, colour, dash, [(notes, ns, is_corpus)])]."""
    left, right, top, bottom = 70, 250, 30, 45
    plot_w, plot_h = width - left - right, height - top - bottom
    xs = [p[0] for _, _, _, pts in series for p in pts]
    ys = [p[1] for _, _, _, pts in series for p in pts]
    parts = [f'<g transform="translate({x0},{y0})">']
    parts.append(
        f'<text x="{left}" y="18" font-size="14" font-weight="bold">{escape(title)}</text>'
    )
    if not xs:
        parts.append(f'<text x="{left}" y="{top + 40}" font-size="12">no results</text></g>')
        return "\n".join(parts)
    lx0, lx1 = math.floor(math.log10(min(xs) * 0.8)), math.ceil(math.log10(max(xs) * 1.25))
    ly0, ly1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
    if ly1 == ly0:
        ly1 += 1

    def px(x):
        return left + (math.log10(x) - lx0) / (lx1 - lx0) * plot_w

    def py(y):
        return top + plot_h - (math.log10(y) - ly0) / (ly1 - ly0) * plot_h

    parts.append(
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#444"/>'
    )
    for d in range(lx0, lx1 + 1):
        x = px(10**d)
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + plot_h}" stroke="#ddd"/>')
        parts.append(
            f'<text x="{x:.1f}" y="{top + plot_h + 16}" font-size="11" text-anchor="middle">'
            f"{decade_label(10**d, 'count')}</text>"
        )
    for d in range(ly0, ly1 + 1):
        y = py(10**d)
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end">'
            f"{escape(decade_label(10**d, 'time'))}</text>"
        )
    parts.append(
        f'<text x="{left + plot_w / 2}" y="{top + plot_h + 36}" font-size="12" text-anchor="middle">'
        "vault size (notes, log scale)</text>"
    )
    parts.append(
        f'<text transform="translate(16,{top + plot_h / 2}) rotate(-90)" font-size="12" '
        'text-anchor="middle">median time per call (log scale)</text>'
    )
    # Linear growth for reference, through the first series' smallest point.
    first = sorted(p for p in series[0][3] if not p[2])
    if first:
        bx, by = first[0][0], first[0][1]
        ex = 10**lx1
        ey = by * ex / bx
        if ey > 10**ly1:
            ex, ey = bx * 10**ly1 / by, 10**ly1
        parts.append(
            f'<line x1="{px(bx):.1f}" y1="{py(by):.1f}" x2="{px(ex):.1f}" y2="{py(ey):.1f}" '
            'stroke="#999" stroke-dasharray="2,4"/>'
        )
    legend_y = top + 8
    for name, colour, dash, points in series:
        line = sorted(p for p in points if not p[2])
        if len(line) > 1:
            path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y, _ in line)
            parts.append(
                f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.8" '
                f'stroke-dasharray="{dash}"/>'
            )
        for x, y, is_corpus in points:
            if is_corpus:
                parts.append(
                    f'<rect x="{px(x) - 4:.1f}" y="{py(y) - 4:.1f}" width="8" height="8" fill="white" '
                    f'stroke="{colour}" stroke-width="1.5" transform="rotate(45 {px(x):.1f} {py(y):.1f})"/>'
                )
            else:
                parts.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{colour}"/>')
        lx = left + plot_w + 12
        parts.append(
            f'<line x1="{lx}" y1="{legend_y - 4}" x2="{lx + 22}" y2="{legend_y - 4}" stroke="{colour}" '
            f'stroke-width="2" stroke-dasharray="{dash}"/>'
        )
        parts.append(f'<text x="{lx + 28}" y="{legend_y}" font-size="11">{escape(name)}</text>')
        legend_y += 16
    legend_y += 6
    parts.append(
        f'<line x1="{left + plot_w + 12}" y1="{legend_y - 4}" x2="{left + plot_w + 34}" y2="{legend_y - 4}" '
        'stroke="#999" stroke-dasharray="2,4"/>'
        f'<text x="{left + plot_w + 40}" y="{legend_y}" font-size="11">linear growth</text>'
    )
    if any(p[2] for _, _, _, pts in series for p in pts):
        legend_y += 16
        parts.append(
            f'<rect x="{left + plot_w + 19}" y="{legend_y - 8}" width="7" height="7" fill="white" stroke="#444" '
            f'transform="rotate(45 {left + plot_w + 22.5} {legend_y - 4.5})"/>'
            f'<text x="{left + plot_w + 40}" y="{legend_y}" font-size="11">{CORPUS_LABEL} (real)</text>'
        )
    parts.append("</g>")
    return "\n".join(parts)


def svg(rows):
    width, height = 820, 360
    body = []
    for n, (title, groups) in enumerate(PANELS):
        families = {}
        for group, function, label, notes, median, _ in rows:
            if group in groups:
                families.setdefault(family(group, function), []).append(
                    (notes, median, label == CORPUS_LABEL)
                )
        series = []
        for i, name in enumerate(sorted(families, key=lambda f: (groups.index(f.split("/")[0]), f))):
            dash = "6,3" if name.startswith("search_knowledge") else "none"
            colour = COLOURS[(i % 5 if len(families) == 10 else i) % len(COLOURS)]
            series.append((name, colour, dash, families[name]))
        body.append(panel_svg(title, series, 0, n * height, width, height))
    total_h = height * len(PANELS) + 20
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total_h}" '
        f'viewBox="0 0 {width} {total_h}" font-family="sans-serif">\n'
        f'<rect width="{width}" height="{total_h}" fill="white"/>\n'
        + "\n".join(body)
        + f'\n<text x="{width - 10}" y="{total_h - 6}" font-size="10" text-anchor="end" fill="#666">'
        "kb-mcp benches/vault.rs, criterion medians; generated by benches/scripts/plot.py</text>\n</svg>\n"
    )


def order(label):
    return (1, 0) if not label.isdigit() else (0, int(label))


def tables(rows, lat):
    out = []
    labels = sorted({r[2] for r in rows}, key=order)
    out.append("### Throughput (criterion median)\n")
    out.append("| benchmark | " + " | ".join(labels) + " |")
    out.append("|---|" + "---:|" * len(labels))
    fams = sorted({family(g, f) for g, f, _, _, _, t in rows if t})
    for fam in fams:
        cells = []
        for label in labels:
            hit = [r for r in rows if family(r[0], r[1]) == fam and r[2] == label]
            if hit:
                _, _, _, _, median, bytes_ = hit[0]
                cells.append(f"{fmt_time(median)} ({bytes_ / 1e6 / (median / 1e9):.1f} MB/s)")
            else:
                cells.append("–")
        out.append(f"| {fam} | " + " | ".join(cells) + " |")
    out.append("\n### Latency (criterion median; p50 / p99 of every timed call)\n")
    out.append("| benchmark | " + " | ".join(labels) + " |")
    out.append("|---|" + "---:|" * len(labels))
    fams = sorted({family(g, f) for g, f, _, _, _, t in rows if not t})
    for fam in fams:
        cells = []
        for label in labels:
            hit = [r for r in rows if family(r[0], r[1]) == fam and r[2] == label]
            if not hit:
                cells.append("–")
                continue
            cell = fmt_time(hit[0][4])
            extra = lat.get(f"{fam}/{label}")
            if extra:
                cell += f"; {fmt_time(extra['p50_ns'])} / {fmt_time(extra['p99_ns'])}"
            cells.append(cell)
        out.append(f"| {fam} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "benches" / "growth.svg"))
    parser.add_argument("--table", action="store_true", help="also print Markdown tables")
    args = parser.parse_args()
    rows = load()
    if not rows:
        sys.exit(f"plot.py: no criterion results under {CRITERION}; run `cargo bench -p kb-bench` first")
    Path(args.out).write_text(svg(rows))
    print(f"plot.py: wrote {args.out} ({len(rows)} results)", file=sys.stderr)
    if args.table:
        print(tables(rows, latency()))


if __name__ == "__main__":
    main()
