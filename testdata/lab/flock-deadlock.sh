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
set -x
N=$(hostname); S=/mnt/share; TAG=$(cat $S/tag); OUT=$S/out-$TAG-$N; rm -rf $OUT; mkdir -p $OUT
case $N in n1) IP=10.99.0.1;; n2) IP=10.99.0.2;; esac
uname -r > $OUT/kernel.txt
ip link set lo up; ip link set eth0 up; ip addr add $IP/24 dev eth0
corosync -f > $OUT/corosync.log 2>&1 &
i=0; until corosync-quorumtool -s 2>/dev/null | grep -q 'Quorate: *Yes'; do sleep 1; i=$((i+1)); [ $i -gt 180 ] && break; done
mkdir -p /dev/misc; for d in dlm-control dlm-monitor dlm_plock; do m=$(awk -v n=$d '$2==n{print $1}' /proc/misc); [ -n "$m" ] && mknod /dev/misc/$d c 10 $m; done
dlm_controld -D 1 --enable_fencing 0 -r tcp > $OUT/dlm_controld.log 2>&1 &
i=0; until dlm_tool status 2>/dev/null | grep -q 'quorate 1'; do sleep 1; i=$((i+1)); [ $i -gt 180 ] && break; done
sleep 2
if [ $N = n1 ]; then mkfs.gfs2 -O -p lock_dlm -t lab:gfs -j 2 /dev/vda > $OUT/mkfs.txt 2>&1; touch $S/mark.mkfs; fi
while [ ! -f $S/mark.mkfs ]; do sleep 1; done
mkdir -p /gfs; i=0; until mount -t gfs2 /dev/vda /gfs; do sleep 2; i=$((i+1)); [ $i -gt 60 ] && { echo MOUNT FAILED; poweroff -f; }; done
cp $S/glk /usr/bin/glk; chmod +x /usr/bin/glk
touch $S/mark.mounted.$N
while [ ! -f $S/mark.mounted.n1 -o ! -f $S/mark.mounted.n2 ]; do sleep 1; done
if [ $N = n1 ]; then mkdir -p /gfs/shared; touch /gfs/shared/A /gfs/shared/B; touch $S/mark.files; fi
while [ ! -f $S/mark.files ]; do sleep 1; done
ls -li /gfs/shared > $OUT/inodes.txt
# 1. A plain wait: n1 holds A (through flock's child shell), n2 waits for it.
if [ $N = n1 ]; then flock -x /gfs/shared/A sh -c 'sleep 20' & F=$!; touch $S/mark.held; fi
while [ ! -f $S/mark.held ]; do sleep 1; done
if [ $N = n2 ]; then sleep 2; flock -x /gfs/shared/A true & F=$!; fi
sleep 5
glk capture --count 2 --interval 3 -o $OUT/wait 2> $OUT/capture-wait.txt; echo "capture rc=$?" >> $OUT/capture-wait.txt
wait $F
touch $S/mark.waited.$N
while [ ! -f $S/mark.waited.n1 -o ! -f $S/mark.waited.n2 ]; do sleep 1; done
# 2. The deadlock: both nodes start at once.
if [ $N = n1 ]; then flock -x /gfs/shared/A sh -c 'sleep 4; flock -x /gfs/shared/B true' & fi
if [ $N = n2 ]; then flock -x /gfs/shared/B sh -c 'sleep 4; flock -x /gfs/shared/A true' & fi
sleep 12
ps -eo pid,ppid,pgid,stat,wchan:32,comm > $OUT/ps-deadlock.txt
cat /proc/locks > $OUT/proc-locks-deadlock.txt
glk capture --count 3 --interval 3 -o $OUT/deadlock 2> $OUT/capture-deadlock.txt; echo "capture rc=$?" >> $OUT/capture-deadlock.txt
touch $S/mark.done.$N
while [ ! -f $S/mark.done.n1 -o ! -f $S/mark.done.n2 ]; do sleep 1; done
ls -laR $OUT
