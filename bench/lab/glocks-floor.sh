#!/bin/sh
# Lab job (../shared/lab, run-nolock.sh): the live glocks file with 10^5 cached inodes,
# `cat glocks` against `glk top --once`, alternated 5 times. Put glk in share/; a second
# build without read-ahead, if wanted for comparison, as share/glk-noprefetch.
set -x
S=/mnt/share; OUT=$S/out-floor; rm -rf $OUT; mkdir -p $OUT
cp $S/glk /usr/bin/glk
uname -r > $OUT/kernel.txt
mkfs.gfs2 -O -p lock_nolock -j 1 /dev/vda
mkdir -p /gfs && mount -t gfs2 /dev/vda /gfs
D=$(ls -d /sys/kernel/debug/gfs2/*)
python3 - <<'PY' > $OUT/create.txt 2>&1
import os, time
t = time.time()
for k in range(100):
    d = f'/gfs/d{k}'
    os.mkdir(d)
    for i in range(1000):
        open(f'{d}/f{i}', 'w').close()
print('created 100000 files in %.1f s' % (time.time() - t))
PY
[ -x $S/glk-noprefetch ] && cp $S/glk-noprefetch /usr/bin/glk-noprefetch
python3 - "$D/glocks" <<'PY' > $OUT/measure.txt 2>&1
import os, subprocess, sys, time
g = sys.argv[1]
def once(argv):
    t = time.time()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    return (time.time() - t) * 1e3, status
cmds = [('cat glocks', ['cat', g]), ('glk top --once glocks', ['glk', 'top', '--once', g]),
        ('glk (no read-ahead)', ['glk-noprefetch', 'top', '--once', g])]
if not os.path.exists('/usr/bin/glk-noprefetch'):
    cmds.pop()
res = {n: [] for n, _ in cmds}
for r in range(5):
    for n, argv in cmds:
        ms, st = once(argv)
        res[n].append(ms)
        print('%-24s %8.1f ms status %d' % (n, ms, st), flush=True)
for n, v in res.items():
    v.sort()
    print('%-24s best %8.1f  median %8.1f ms' % (n, v[0], v[len(v) // 2]))
subprocess.run(['cp', g, '/tmp/glocks.copy'])
for n, argv in [('cat copy', ['cat', '/tmp/glocks.copy']), ('wc -l copy', ['wc', '-l', '/tmp/glocks.copy']), ('glk top --once copy', ['glk', 'top', '--once', '/tmp/glocks.copy'])]:
    v = sorted(once(argv)[0] for _ in range(5))
    print('%-24s best %8.1f  median %8.1f ms' % (n, v[0], v[2]))
print('lines', sum(1 for _ in open('/tmp/glocks.copy')), 'bytes', os.path.getsize('/tmp/glocks.copy'))
PY
glk top --once $D/glocks > $OUT/top.txt 2>&1
umount /gfs
