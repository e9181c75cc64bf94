"""The script a GFS2 engineer would write instead of glk analyze: one regular expression
per trace line, remote demotes counted per glock, queue -> promote waits paired per glock
and mode, node by node. The baseline `glk-bench analyze --python` times glk against."""

import collections
import os
import re
import sys

LINE = re.compile(
    r"^\s*(?P<comm>.+?)-(?P<pid>\d+)\s+\[\d+\]\s+\S+\s+(?P<ts>\d+\.\d+): gfs2_(?P<ev>\w+): "
    r"\S+ glock (?P<type>\d+):(?P<num>\d+) (?P<rest>.*)$"
)


def node(path):
    demotes = collections.Counter()
    waiting = collections.defaultdict(collections.deque)
    wait_ns = collections.Counter()
    with open(path, errors="replace") as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            ev, glock, rest = m["ev"], (m["type"], m["num"]), m["rest"]
            ts = int(float(m["ts"]) * 1e9)
            if ev == "demote_rq" and rest.endswith("remote"):
                demotes[glock] += 1
            elif ev == "glock_queue" and rest.startswith("queue"):
                waiting[(glock, rest.split()[-1])].append(ts)
            elif ev == "promote":
                q = waiting.get((glock, rest.split()[-1]))
                if q:
                    wait_ns[glock] += ts - q.popleft()
    return demotes, wait_ns


def main(root):
    total = collections.Counter()
    waits = collections.Counter()
    for d in sorted(os.listdir(root)):
        p = os.path.join(root, d, "trace_pipe.txt")
        if os.path.exists(p):
            dm, w = node(p)
            total.update(dm)
            waits.update(w)
    for glock, n in total.most_common(5):
        print(glock, n, waits[glock])


if __name__ == "__main__":
    main(sys.argv[1])
