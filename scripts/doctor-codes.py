#!/usr/bin/env python3
"""Rewrites the README's table of glk doctor's codes from analysis/src/findings.rs (CODES).
cli/tests/doctor.rs checks that the two agree."""
import pathlib
import re

root = pathlib.Path(__file__).resolve().parent.parent
src = (root / "analysis/src/findings.rs").read_text()
block = src[src.index("pub static CODES"):src.index("];\n\nimpl FindingCode")]
# FindingCode::X => "GLK-..." in the code's as_str.
names = dict(re.findall(r'FindingCode::(\w+) => "(GLK-[A-Z-]+)"', src))
rows = []
for entry in re.findall(r"Code \{(.*?)\n    \},", block, re.S):
    def field(name):
        m = re.search(name + r': (Severity::(\w+)|FindingCode::(\w+)|"((?:[^"\\]|\\.)*)")', entry, re.S)
        if m.group(2):
            return m.group(2).lower()
        if m.group(3):
            return names[m.group(3)]
        return m.group(4).replace('\\"', '"')
    rows.append("| `%s` | %s | %s | %s | %s | %s |" % tuple(
        field(k) for k in ("code", "severity", "means", "threshold", "evidence", "remedy")))
readme = root / "README.md"
lines = readme.read_text().split("\n")
at = [i for i, l in enumerate(lines) if l.startswith("| `GLK-")]
lines[at[0]:at[-1] + 1] = rows
readme.write_text("\n".join(lines))
