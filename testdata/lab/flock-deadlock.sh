#!/bin/sh
# Lab job (../shared/lab, run-cluster.sh, two nodes): a real two-node flock deadlock made
# by shell scripts, and a plain cross-node flock wait, each captured by `glk capture` on
# both nodes (process tables and /proc/locks included).
#  1. wait: n1 runs `flock A sh -c 'sleep 20'`; n2 asks for A and waits (no deadlock).
#     Captured as out-TAG-NODE/wait/NODE.
#  2. deadlock: n1 runs `flock A sh -c 'sleep 4; flock B true'`, n2 runs
#     `flock B sh -c 'sleep 4; flock A true'`: each shell's child waits for the lock the
#     other node's parent holds. Captured as out-TAG-NODE/deadlock/NODE. The deadlocked
#     tasks never end; the VM is powered off with them.
. /mnt/share/cluster.sh
lab_up
lab_barrier mounted
lab_shared_files A B
# 1. A plain wait: n1 holds A (through flock's child shell), n2 waits for it.
lab_flock_wait A 20
sleep 5
glk capture --count 2 --interval 3 -o $OUT/wait 2> $OUT/capture-wait.txt; echo "capture rc=$?" >> $OUT/capture-wait.txt
wait $H $W
lab_barrier waited
# 2. The deadlock: both nodes start at once.
if [ $N = n1 ]; then flock -x /gfs/shared/A sh -c 'sleep 4; flock -x /gfs/shared/B true' & fi
if [ $N = n2 ]; then flock -x /gfs/shared/B sh -c 'sleep 4; flock -x /gfs/shared/A true' & fi
sleep 12
ps -eo pid,ppid,pgid,stat,wchan:32,comm > $OUT/ps-deadlock.txt
cat /proc/locks > $OUT/proc-locks-deadlock.txt
glk capture --count 3 --interval 3 -o $OUT/deadlock 2> $OUT/capture-deadlock.txt; echo "capture rc=$?" >> $OUT/capture-deadlock.txt
lab_barrier done
ls -laR $OUT
