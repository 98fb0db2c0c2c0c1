#!/usr/bin/env python3
"""scripts/doc_snippets.py: the code in the docs is taken from the examples.

In README.md and docs/*.md, a fenced code block right after a line

    <!-- snippet: examples/NAME.cpp -->         the whole file
    <!-- snippet: examples/NAME.cpp#TAG -->     the lines between "// [TAG]"
                                                and "// [/TAG]" (dedented)

must hold exactly that code; the examples are compiled and run by the tests,
so the docs show code that builds and works.

usage: doc_snippets.py --check     exit 1 and list every block that differs
       doc_snippets.py --update    rewrite the blocks from the examples
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARK = re.compile(r"^<!-- snippet: (\S+?)(?:#(\w+))? -->\s*$")


def extract(source: Path, tag: str | None) -> list[str]:
    lines = source.read_text(encoding="utf-8").splitlines()
    if tag is None:
        body = lines
    else:
        begin = [i for i, l in enumerate(lines) if l.strip() == f"// [{tag}]"]
        end = [i for i, l in enumerate(lines) if l.strip() == f"// [/{tag}]"]
        if len(begin) != 1 or len(end) != 1 or end[0] < begin[0]:
            raise ValueError(f"{source.relative_to(ROOT)}: needs one '// [{tag}]' and one '// [/{tag}]' after it")
        body = lines[begin[0] + 1 : end[0]]
        body = [l for l in body if not re.match(r"^\s*// \[/?\w+\]\s*$", l)]  # nested markers
    indent = min((len(l) - len(l.lstrip()) for l in body if l.strip()), default=0)
    return [l[indent:] for l in body]


def process(doc: Path, update: bool) -> list[str]:
    lines = doc.read_text(encoding="utf-8").splitlines()
    out, problems, i = [], [], 0
    while i < len(lines):
        m = MARK.match(lines[i])
        out.append(lines[i])
        i += 1
        if not m:
            continue
        where = f"{doc.relative_to(ROOT)}:{i}"
        if i >= len(lines) or not lines[i].startswith("```"):
            problems.append(f"{where}: a snippet mark must be followed by a fenced code block")
            continue
        fence = lines[i]
        j = i + 1
        while j < len(lines) and lines[j] != "```":
            j += 1
        if j == len(lines):
            problems.append(f"{where}: the code block is not closed")
            break
        try:
            want = extract(ROOT / m.group(1), m.group(2))
        except (OSError, ValueError) as e:
            problems.append(f"{where}: {e}")
            want = lines[i + 1 : j]
        if lines[i + 1 : j] != want:
            problems.append(f"{where}: the block differs from {m.group(1)}{'#' + m.group(2) if m.group(2) else ''}")
        out.append(fence)
        out.extend(want if update else lines[i + 1 : j])
        out.append("```")
        i = j + 1
    if update:
        doc.write_text("\n".join(out) + "\n", encoding="utf-8")
    return problems


def main() -> int:
    if len(sys.argv) != 2 or sys.argv[1] not in ("--check", "--update"):
        print(__doc__)
        return 2
    update = sys.argv[1] == "--update"
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    problems, marks = [], 0
    for d in docs:
        marks += sum(1 for l in d.read_text(encoding="utf-8").splitlines() if MARK.match(l))
        problems += process(d, update)
    if update:
        print(f"{marks} snippets written from the examples")
        return 0
    for p in problems:
        print(p)
    if not problems:
        print(f"{marks} snippets in the docs match the examples")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
