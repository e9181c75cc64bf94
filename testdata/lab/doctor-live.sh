#!/bin/sh
# Lab job (../shared/lab, run-cluster.sh, two nodes): `glk doctor live` on real trouble.
#  1. Both nodes: two writers append to and create files in one shared directory (a hot
#     directory and a demote storm) while `glk doctor live --json` runs on each node
#     (doctor-hot.json, its exit status in doctor-hot.rc), and `glk capture --trace 8`
#     records the same for `glk report` offline (cap-hot/).
#  2. A real two-node flock deadlock (as flock-deadlock.sh): n1 `flock A sh -c 'sleep 4;
#     flock B true'`, n2 the reverse; 40 s in (past the default --stuck-after of 30),
#     `glk doctor live` on each node, text and JSON (doctor-deadlock.txt/.json, exit status
#     in .rc), and `glk capture` on each (cap-deadlock/) for doctor and report offline.
# share/glk and share/glk-engine are the binaries under test.
set -x
N=$(hostname); S=/mnt/share; TAG=$(cat $S/tag); OUT=$S/out-$TAG-$N; rm -rf $OUT; mkdir -p $OUT
DELAY=$(cat $S/delay_ms 2>/dev/null || echo 25)
case $N in n1) IP=10.99.0.1;; n2) IP=10.99.0.2;; esac
uname -r > $OUT/kernel.txt
ip link set lo up; ip link set eth0 up; ip addr add $IP/24 dev eth0
[ $N = n2 ] && tc qdisc add dev eth0 root netem delay ${DELAY}ms
corosync -f > $OUT/corosync.log 2>&1 &
i=0; until corosync-quorumtool -s 2>/dev/null | grep -q 'Quorate: *Yes'; do sleep 1; i=$((i+1)); [ $i -gt 180 ] && break; done
mkdir -p /dev/misc; for d in dlm-control dlm-monitor dlm_plock; do m=$(awk -v n=$d '$2==n{print $1}' /proc/misc); [ -n "$m" ] && mknod /dev/misc/$d c 10 $m; done
dlm_controld -D 1 --enable_fencing 0 -r tcp > $OUT/dlm_controld.log 2>&1 &
i=0; until dlm_tool status 2>/dev/null | grep -q 'quorate 1'; do sleep 1; i=$((i+1)); [ $i -gt 180 ] && break; done
sleep 2
if [ $N = n1 ]; then mkfs.gfs2 -O -p lock_dlm -t lab:gfs -j 2 /dev/vda > $OUT/mkfs.txt 2>&1; touch $S/mark.mkfs; fi
while [ ! -f $S/mark.mkfs ]; do sleep 1; done
mkdir -p /gfs; i=0; until mount -t gfs2 /dev/vda /gfs; do sleep 2; i=$((i+1)); [ $i -gt 60 ] && { echo MOUNT FAILED; poweroff -f; }; done
cp $S/glk $S/glk-engine /usr/bin/; chmod +x /usr/bin/glk /usr/bin/glk-engine
touch $S/mark.mounted.$N
while [ ! -f $S/mark.mounted.n1 -o ! -f $S/mark.mounted.n2 ]; do sleep 1; done
if [ $N = n1 ]; then mkdir -p /gfs/shared; touch /gfs/shared/A /gfs/shared/B /gfs/shared/log; touch $S/mark.files; fi
while [ ! -f $S/mark.files ]; do sleep 1; done
ls -lid /gfs/shared /gfs/shared/* > $OUT/inodes.txt
touch $S/mark.ready.$N
while [ ! -f $S/mark.ready.n1 -o ! -f $S/mark.ready.n2 ]; do sleep 1; done
# 1. Hot directory.
writer() {
  i=0; end=$(( $(date +%s) + 25 ))
  while [ $(date +%s) -lt $end ]; do
    echo "$N $1 $i" >> /gfs/shared/log; touch /gfs/shared/$N-$1-$i; rm -f /gfs/shared/$N-$1-$((i - 10)); ls /gfs/shared > /dev/null
    i=$((i+1))
  done
}
writer a & A=$!; writer b & B=$!
sleep 3
glk doctor live --json > $OUT/doctor-hot.json 2> $OUT/doctor-hot.err; echo $? > $OUT/doctor-hot.rc
glk capture --trace 8 --count 2 --interval 4 -o $OUT/cap-hot 2> $OUT/capture-hot.txt
wait $A; wait $B
touch $S/mark.hot.$N
while [ ! -f $S/mark.hot.n1 -o ! -f $S/mark.hot.n2 ]; do sleep 1; done
# 2. The deadlock.
if [ $N = n1 ]; then flock -x /gfs/shared/A sh -c 'sleep 4; flock -x /gfs/shared/B true' & fi
if [ $N = n2 ]; then flock -x /gfs/shared/B sh -c 'sleep 4; flock -x /gfs/shared/A true' & fi
sleep 40
ps -eo pid,ppid,pgid,stat,wchan:32,comm > $OUT/ps-deadlock.txt
glk doctor live > $OUT/doctor-deadlock.txt 2> $OUT/doctor-deadlock.err; echo $? > $OUT/doctor-deadlock.rc
glk doctor live --json > $OUT/doctor-deadlock.json 2>> $OUT/doctor-deadlock.err; echo $? >> $OUT/doctor-deadlock.rc
glk capture --count 2 --interval 3 -o $OUT/cap-deadlock 2> $OUT/capture-deadlock.txt
touch $S/mark.done.$N
while [ ! -f $S/mark.done.n1 -o ! -f $S/mark.done.n2 ]; do sleep 1; done
ls -la $OUT
