#!/bin/sh
# Lab job (../shared/lab, run-cluster.sh, two nodes; copy cluster.sh into share/ too): two
# `glk trace` and a `glk exporter --trace` started at once on a node where tracefs is not
# mounted (neither at /sys/kernel/tracing nor under a debugfs, both unmounted here once
# the filesystem is up): one trace `--reader raw`, one `--reader text`, on the gfs2 and
# dlm events while both nodes append to one shared file, and the exporter on :9929,
# scraped once (scrape.prom). One glk mounts tracefs, the others use that mount; text is
# stopped first, then the exporter, then raw. Saved per node: the outputs and what each
# glk said (raw.log, text.log, exporter.log, exit codes), the mounts before and after
# (mounts-before.txt, mounts-after.txt) and the instances left (instances-after.txt).
# Expected: all exit 0, the two traces with the same events, the scrape with gfs2 trace
# metrics; the glk that mounted tracefs unmounts it, or, when it ended while another
# still used it, says `stays mounted` and the last to end unmounts it: the mounts
# afterwards are those before (no tracefs, debugfs only as the exporter's two binds), and
# no glk-PID instance is left. Then a glk whose mount another program holds when it ends
# says so and leaves it mounted (mounts-foreign-held.txt), and the next glk unmounts it.
. /mnt/share/cluster.sh
lab_up
lab_barrier mounted
lab_shared_files log
cd $OUT
umount /sys/kernel/tracing
umount /sys/kernel/debug
# The exporter reads glocks and DLM dumps from debugfs, and a mounted debugfs would give
# tracefs at its tracing/ (an automount): it gets debugfs's gfs2/ and dlm/ alone, bound
# into a directory of their own, through --debugfs.
mkdir -p /tmp/dbg /run/glkdbg/gfs2 /run/glkdbg/dlm
mount -t debugfs none /tmp/dbg
mount --bind /tmp/dbg/gfs2 /run/glkdbg/gfs2
mount --bind /tmp/dbg/dlm /run/glkdbg/dlm
umount /tmp/dbg
grep -E 'tracefs|debugfs' /proc/self/mounts > $OUT/mounts-before.txt
glk trace --events gfs2,dlm --reader raw -o $OUT/raw.txt > $OUT/raw.log 2>&1 &
R=$!
glk trace --events gfs2,dlm --reader text -o $OUT/text.txt > $OUT/text.log 2>&1 &
T=$!
glk exporter --trace --min-interval 1 --debugfs /run/glkdbg > /dev/null 2> $OUT/exporter.log &
E=$!
sleep 4
end=$(($(date +%s) + 15)); i=0
while [ $(date +%s) -lt $end ]; do
  i=$((i+1)); echo "$N $i" >> /gfs/shared/log; stat /gfs/shared > /dev/null
done
echo $i > $OUT/appends.txt
curl -s -o $OUT/scrape.prom http://127.0.0.1:9929/metrics; echo $? > $OUT/scrape.rc
sleep 2
kill -INT $T; wait $T; echo $? > $OUT/text.rc
kill -TERM $E; wait $E; echo $? > $OUT/exporter.rc
kill -INT $R; wait $R; echo $? > $OUT/raw.rc
grep -E 'tracefs|debugfs' /proc/self/mounts > $OUT/mounts-after.txt
# A program other than glk (a shell's working directory) in the mount a glk made when
# that glk ends: the mount stays and glk says so (foreign.log); once the program is
# gone, the next glk unmounts it (mounts-foreign-after.txt, as mounts-after.txt).
glk trace --events gfs2 -o $OUT/foreign.txt > $OUT/foreign.log 2>&1 &
F=$!
for _ in $(seq 50); do grep -q tracefs /proc/self/mounts && break; sleep 0.2; done
(cd /sys/kernel/tracing && exec sleep 120) &
HOLDER=$!
sleep 2
kill -INT $F; wait $F; echo $? > $OUT/foreign.rc
grep -E 'tracefs|debugfs' /proc/self/mounts > $OUT/mounts-foreign-held.txt
kill $HOLDER; wait $HOLDER
glk trace --events gfs2 --duration 1 -o $OUT/next.txt > $OUT/next.log 2>&1; echo $? > $OUT/next.rc
grep -E 'tracefs|debugfs' /proc/self/mounts > $OUT/mounts-foreign-after.txt
umount /run/glkdbg/gfs2 /run/glkdbg/dlm
mount -t tracefs none /sys/kernel/tracing 2>/dev/null
ls /sys/kernel/tracing/instances > $OUT/instances-after.txt 2>&1
mount -t debugfs none /sys/kernel/debug
lab_barrier done
poweroff -f
