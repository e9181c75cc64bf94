#!/bin/sh
# Lab job (../shared/lab, run-cluster.sh, two nodes; copy cluster.sh into share/ too): two
# `glk trace` started at once on a node where tracefs is not mounted (neither at
# /sys/kernel/tracing nor under a debugfs, both unmounted here once the filesystem is up),
# one `--reader raw`, one `--reader text`, on the gfs2 and dlm events while both nodes
# append to one shared file. One glk mounts tracefs, the other uses that mount; text is
# stopped first, then raw. Saved per node: both outputs and what glk said (raw.log,
# text.log, exit codes), the mounts before and after (mounts-before.txt, mounts-after.txt)
# and the instances left (instances-after.txt). Expected: both exit 0 with the same
# events; the glk that mounted tracefs unmounts it, or, when it ended while the other
# still used it, says `stays mounted` and the other unmounts it when it ends: neither
# tracefs nor debugfs is mounted afterwards, and no glk-PID instance is left.
. /mnt/share/cluster.sh
lab_up
lab_barrier mounted
lab_shared_files log
cd $OUT
umount /sys/kernel/tracing
umount /sys/kernel/debug
grep -E 'tracefs|debugfs' /proc/self/mounts > $OUT/mounts-before.txt
glk trace --events gfs2,dlm --reader raw -o $OUT/raw.txt > $OUT/raw.log 2>&1 &
R=$!
glk trace --events gfs2,dlm --reader text -o $OUT/text.txt > $OUT/text.log 2>&1 &
T=$!
sleep 4
end=$(($(date +%s) + 15)); i=0
while [ $(date +%s) -lt $end ]; do
  i=$((i+1)); echo "$N $i" >> /gfs/shared/log; stat /gfs/shared > /dev/null
done
echo $i > $OUT/appends.txt
sleep 2
kill -INT $T; wait $T; echo $? > $OUT/text.rc
kill -INT $R; wait $R; echo $? > $OUT/raw.rc
grep -E 'tracefs|debugfs' /proc/self/mounts > $OUT/mounts-after.txt
mount -t tracefs none /sys/kernel/tracing 2>/dev/null
ls /sys/kernel/tracing/instances > $OUT/instances-after.txt 2>&1
mount -t debugfs none /sys/kernel/debug
lab_barrier done
poweroff -f
