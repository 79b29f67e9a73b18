#!/usr/bin/env python3
"""Checks the rule of the "questions in other words" suites (issues 13 and 37).

A question in other words shares no content word with the names of any note
that answers it: not with its title (an opening H1 or the file name), its file
name, its frontmatter `title` and `aliases`, nor any of its headings. Words are
compared the way `tests/it/eval.rs` compares them:

* English: lower-cased runs of ASCII letters, digits and apostrophes, without
  the function words below; two words are the same when equal, when equal
  without a common ending (-s, -es, -ed, -e, -er, -ers, -ing, -ings, -ion,
  -ions, -ly, leaving three letters: `cope`/`coping`, `key`/`keys`) or, from
  five letters on, when their first five letters agree (`stored`/`stores`,
  `recorder`/`record`). Crude stems, erring toward calling words the same.
* Chinese: every run of two Han characters (a Chinese word is mostly two).

    python3 benches/scripts/check_other_words.py SUITE.json --vault VAULT [SUITE.json --vault VAULT ...]
    python3 benches/scripts/check_other_words.py --self-test

Prints each violation (case, shared words, note, the name that holds them) and
exits 1 when there is one, 2 when a suite names a note the vault lacks, else 0.
`--self-test` shows that a violating question is caught.
"""

import argparse
import json
import re
import sys
from pathlib import Path

import yaml

# Words that carry no topic (kept equal to FUNCTION_WORDS in tests/it/eval.rs).
FUNCTION_WORDS = set("""
a an the i i'm me my we our you your it its is are was be am do does did how what which who
where when why can could should would will to of in on at by for from with into over about as
and or but if so than then that this there not no up out off just only too very all any some
each every other one same get gets go make have has after before way something
""".split())


def content_words(text):
    words = re.split(r"[^a-z0-9']", text.lower())
    words = [w.strip("'") for w in words]
    return [w for w in words if w and w not in FUNCTION_WORDS]


SUFFIXES = ("ings", "ing", "ions", "ion", "ers", "er", "ed", "es", "ly", "s", "e")


def stem(word):
    """The word without its first matching ending of SUFFIXES, when three letters are left."""
    for suffix in SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[:-len(suffix)]
    return word


def same_word(a, b):
    return (a == b or stem(a) == stem(b)
            or (len(a) >= 5 and len(b) >= 5 and a[:5] == b[:5]))


def is_han(c):
    return "\u3400" <= c <= "\u9fff"


def han_pairs(text):
    return {text[i:i + 2] for i in range(len(text) - 1) if is_han(text[i]) and is_han(text[i + 1])}


def shared(query, name):
    """What `query` shares with one name: English words and Han pairs."""
    name_words = content_words(name)
    found = [w for w in content_words(query) if any(same_word(w, n) for n in name_words)]
    found.extend(sorted(han_pairs(query) & han_pairs(name)))
    return found


FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")


def note_names(path):
    """(kind, text) of every name of a note: file name, frontmatter title and
    aliases, and every ATX heading outside code fences (an opening H1 is the title)."""
    names = [("file name", path.stem)]
    text = path.read_text(encoding="utf-8", errors="replace").replace("\r\n", "\n")
    body = text
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end != -1:
            try:
                front = yaml.safe_load(text[4:end]) or {}
            except yaml.YAMLError:
                front = {}
            if isinstance(front, dict):
                if isinstance(front.get("title"), str):
                    names.append(("title", front["title"]))
                aliases = front.get("aliases") or front.get("alias") or []
                if isinstance(aliases, str):
                    aliases = [a.strip() for a in aliases.split(",")]
                names.extend(("alias", str(a)) for a in aliases if a)
            body = text[end + 4:]
    fenced = False
    for line in body.split("\n"):
        if FENCE.match(line):
            fenced = not fenced
            continue
        match = None if fenced else HEADING.match(line)
        if match and match.group(2):
            names.append(("heading", match.group(2)))
    return names


def check(suite, vault):
    """Violations of one suite as lines, and the notes it names that the vault lacks."""
    violations, missing = [], []
    for case in suite["cases"]:
        for note in case.get("acceptable", []):
            path = vault / note
            if not path.is_file():
                missing.append(f"{case['id']}: {note} is not in {vault}")
                continue
            for kind, name in note_names(path):
                words = shared(case["query"], name)
                if words:
                    violations.append(
                        f"{case['id']}: {case['query']!r} shares {words} with {note} ({kind} {name!r})")
    return violations, missing


def self_test():
    assert shared("where are my notes stored", "How Obsidian stores data") == ["stored"]
    assert shared("can I record my voice", "Audio recorder") == ["record"]
    assert shared("how do I cope in winter", "Coping with depression") == ["cope"]
    assert shared("where is my key", "Rotating SSH keys") == ["key"]
    assert not shared("how do I see which notes mention this one", "Backlinks")
    assert shared("怎么把界面换成深色", "用户界面/外观") == ["界面"]
    assert not shared("怎么用麦克风录一段语音", "录音机")
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp)
        (vault / "Backlinks.md").write_text(
            "---\naliases: [Linked mentions]\n---\nText.\n\n## Show unlinked mentions\n\n"
            "```\n# not a heading: a comment\n```\n", encoding="utf-8")
        suite = {"cases": [
            {"id": "ok", "query": "which notes point at this one", "acceptable": ["Backlinks.md"]},
            {"id": "heading", "query": "how do I show what points here", "acceptable": ["Backlinks.md"]},
            {"id": "alias", "query": "which pages are linked", "acceptable": ["Backlinks.md"]},
            {"id": "fenced", "query": "where is the comment", "acceptable": ["Backlinks.md"]},
        ]}
        violations, missing = check(suite, vault)
        assert not missing, missing
        caught = sorted({v.split(":")[0] for v in violations})
        assert caught == ["alias", "heading"], violations
    print("self-test passed: a question sharing a heading or an alias word is caught")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("suite", nargs="*", type=Path)
    parser.add_argument("--vault", action="append", type=Path, default=[],
                        help="the vault of each suite, in order")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_intermixed_args()
    if args.self_test:
        self_test()
        if not args.suite:
            return 0
    if not args.suite or len(args.suite) != len(args.vault):
        parser.error("give each suite its --vault")
    violations, missing = [], []
    for suite_path, vault in zip(args.suite, args.vault):
        suite = json.loads(suite_path.read_text(encoding="utf-8"))
        v, m = check(suite, vault)
        violations += v
        missing += m
        print(f"{suite_path}: {len(suite['cases'])} questions, {len(v)} violation(s)")
    for line in missing + violations:
        print(line)
    return 2 if missing else 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
