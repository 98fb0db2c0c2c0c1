#!/usr/bin/env python3
"""docs/guide.md lists every option struct's fields in declaration order.

Designated initializers must name fields in the order a struct declares them,
so the guide's table ("Every option struct, its fields in declaration order")
is what users write by. This check reads each struct's data members from its
header and compares them with the table's row, and fails when a public
header declares an option struct (a struct named config, options,
*_config or *_options) that the table leaves out.

usage: options_doc.py SOURCE_DIR
"""

import os
import re
import sys

ROW = re.compile(r"^\| `troupe::([\w:]+)` \| `([\w/.]+)` \| (.*) \|$")
OPTION_STRUCT = re.compile(r"^(?:template <[^>]*>\s*)?struct (config|options|\w+_config|\w+_options|dac) \{", re.M)


def data_members(text, name):
    """The data members of struct `name` in `text`, in declaration order."""
    # Comments go, string literals stay (a default may hold "//": a URL).
    text = re.sub(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*', lambda m: m.group(0) if m.group(0).startswith('"') else "", text)
    m = re.search(r"\bstruct " + re.escape(name) + r"\s*(:[^{;]*)?\{", text)
    if not m:
        return None
    i, depth, statements, cur = m.end(), 1, [], ""
    while depth:
        c = text[i]
        i += 1
        if c == "{":
            depth += 1
            if depth == 2:
                cur += "{}"
        elif c == "}":
            depth -= 1
            if depth == 1 and re.search(r"\)\s*(const\s*)?(noexcept\s*)?\{\}$", cur.strip()):
                statements.append(cur)  # a member function's body
                cur = ""
        elif depth == 1:
            if c == ";":
                statements.append(cur)
                cur = ""
            else:
                cur += c
    members = []
    for s in statements:
        s = re.sub(r"^(public|private|protected):", "", " ".join(s.split())).strip()
        if not s or re.match(r"(using|static|friend|template|enum|struct|class)\b", s):
            continue
        while re.search(r"<[^<>]*>", s):  # template arguments, std::function<void(int)> included
            s = re.sub(r"<[^<>]*>", "", s)
        head = re.split(r"=|\{\}", s)[0]
        if "(" in head:
            continue  # a member function
        got = re.match(r".*?([A-Za-z_]\w*)\s*$", head)
        if got:
            members.append(got.group(1))
    return members


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    guide = open(os.path.join(root, "docs", "guide.md"), encoding="utf-8").read()
    rows = {}
    for line in guide.splitlines():
        m = ROW.match(line)
        if m:
            rows[m.group(1)] = (m.group(2), re.findall(r"`(\w+)`", m.group(3)))
    problems = []
    if not rows:
        problems.append("docs/guide.md has no table of option structs")
    for qualified, (header, listed) in sorted(rows.items()):
        path = os.path.join(root, "include", header)
        if not os.path.exists(path):
            problems.append(f"{qualified}: {header} does not exist")
            continue
        declared = data_members(open(path, encoding="utf-8").read(), qualified.split("::")[-1])
        if declared is None:
            problems.append(f"{qualified}: no struct {qualified.split('::')[-1]} in {header}")
        elif declared != listed:
            problems.append(f"{qualified}: the guide lists {listed}, {header} declares {declared}")
    documented = {(h, q.split("::")[-1]) for q, (h, _) in rows.items()}
    for folder, _, files in os.walk(os.path.join(root, "include", "troupe")):
        if os.sep + "detail" in folder:
            continue
        for f in files:
            if not f.endswith(".hpp"):
                continue
            header = os.path.relpath(os.path.join(folder, f), os.path.join(root, "include"))
            for m in OPTION_STRUCT.finditer(open(os.path.join(folder, f), encoding="utf-8").read()):
                if (header, m.group(1)) not in documented:
                    problems.append(f"struct {m.group(1)} in {header} is not in docs/guide.md's table")
    for p in problems:
        print(p)
    print(f"{len(rows)} option structs checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
