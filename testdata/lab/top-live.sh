#!/bin/sh
# Lab job (../shared/lab, run-cluster.sh, two nodes; copy cluster.sh into share/ too): glk top
# live on both nodes during a cross-node flock wait, with the truth beside it. n1 holds an
# flock on shared/A (flock -x A sh -c "sleep 60"); n2 asks for it 2 s later and waits. 20 s
# in, each node writes `glk top --plain/--json --once --stuck-after 10` (top.txt, top.json)
# and, made without glk, /proc/locks, ps (state, wchan), glockfd, the DLM lock dump and the
# tracing instances (none may be left).
. /mnt/share/cluster.sh
lab_up
lab_barrier mounted
lab_shared_files A
lab_flock_wait A 60
sleep 20
glk top --plain --once --stuck-after 10 > $OUT/top.txt 2> $OUT/top.err; echo $? > $OUT/top.rc
glk top --json --once --stuck-after 10 > $OUT/top.json 2>> $OUT/top.err
cat /proc/locks > $OUT/proc-locks.txt
ps -eo pid,ppid,stat,wchan:32,comm > $OUT/ps.txt
cat /sys/kernel/debug/gfs2/*/glockfd > $OUT/glockfd.txt 2>&1
cat /sys/kernel/debug/dlm/gfs_locks > $OUT/dlm_locks.txt 2>&1
ls /sys/kernel/tracing/instances > $OUT/instances.txt 2>&1
lab_barrier done
poweroff -f
