#!/bin/sh
# Lab job (run-nolock.sh): where glk top --once spends its system time on a live glocks
# file with 10^5 cached inodes, against cat. Needs strace (with its libunwind libraries)
# in share/strace-lib/, copied from the lab rootfs after `apt-get install strace` there.
set -x
S=/mnt/share; OUT=$S/out-syscalls; rm -rf $OUT; mkdir -p $OUT
cp $S/glk /usr/bin/glk
export LD_LIBRARY_PATH=$S/strace-lib
ST=$S/strace-lib/strace
mkfs.gfs2 -O -p lock_nolock -j 1 /dev/vda
mkdir -p /gfs && mount -t gfs2 /dev/vda /gfs
D=$(ls -d /sys/kernel/debug/gfs2/*)
python3 -c "
import os
for k in range(100):
    os.mkdir(f'/gfs/d{k}')
    for i in range(1000):
        open(f'/gfs/d{k}/f{i}', 'w').close()
"
$ST -f -c -o $OUT/cat-glocks.txt cat $D/glocks > /dev/null
$ST -f -c -o $OUT/cat-glstats.txt cat $D/glstats > /dev/null
$ST -f -c -o $OUT/glk.txt glk top --once $D/glocks > /dev/null
# Every file glk opens and how much it reads from each.
$ST -f -e trace=openat,read,pread64,close -e abbrev=all -o $OUT/glk-files.txt glk top --once $D/glocks > /dev/null
python3 - $OUT/glk-files.txt > $OUT/glk-reads.txt <<'PY'
import re, sys, collections
# File descriptors are shared by the threads: keyed by number, forgotten at close.
fds, per, calls = {}, collections.Counter(), collections.Counter()
for l in open(sys.argv[1]):
    m = re.search(r'openat\(AT_FDCWD, "([^"]+)".*= (\d+)$', l)
    if m:
        fds[m.group(2)] = m.group(1)
        continue
    m = re.search(r'close\((\d+)\)', l)
    if m:
        fds.pop(m.group(1), None)
        continue
    m = re.search(r'(?:pread64|read)\((\d+),.*= (\d+)$', l)
    if m:
        name = fds.get(m.group(1), '?fd%s' % m.group(1))
        per[name] += int(m.group(2)); calls[name] += 1
for name, n in per.most_common():
    print('%12d bytes %6d reads  %s' % (n, calls[name], name))
PY
umount /gfs
