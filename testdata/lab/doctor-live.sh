#!/bin/sh
# Lab job (../shared/lab, run-cluster.sh, two nodes): `glk doctor live` on real trouble.
#  1. Both nodes: two writers append to and create files in one shared directory (a hot
#     directory and a demote storm) while `glk doctor live --json --keep doctor-hot-cap`
#     runs on each node (doctor-hot.json, its exit status in doctor-hot.rc), then `glk
#     doctor doctor-hot-cap --json --resolve-paths` reads the kept capture again
#     (doctor-hot-again.json: the same findings, and the files their evidence cites), and
#     `--keep` to the same place once more must refuse (doctor-hot-twice.err, .rc); `glk
#     capture --trace 8` records the same for `glk report` offline (cap-hot/).
#  2. A real two-node flock deadlock (as flock-deadlock.sh): n1 `flock A sh -c 'sleep 4;
#     flock B true'`, n2 the reverse; 40 s in (past the default --stuck-after of 30),
#     `glk doctor live` on each node, text kept in a tarball (`--keep
#     doctor-deadlock-cap.tar.zst`) and JSON not kept (doctor-deadlock.txt/.json, .err,
#     exit status in .rc), and `glk capture` on each (cap-deadlock/) for doctor and report
#     offline.
# share/glk is the binary under test (glk runs doctor and report itself; no engine).
. /mnt/share/cluster.sh
DELAY=$(cat $S/delay_ms 2>/dev/null || echo 25)
lab_network
[ $N = n2 ] && tc qdisc add dev eth0 root netem delay ${DELAY}ms
lab_cluster
lab_mount
cp $S/glk /usr/bin/glk; chmod +x /usr/bin/glk
lab_barrier mounted
lab_shared_files A B log
ls -lid /gfs/shared /gfs/shared/* > $OUT/inodes.txt
lab_barrier ready
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
glk doctor live --json --keep $OUT/doctor-hot-cap > $OUT/doctor-hot.json 2> $OUT/doctor-hot.err; echo $? > $OUT/doctor-hot.rc
glk doctor $OUT/doctor-hot-cap --json --resolve-paths > $OUT/doctor-hot-again.json 2> $OUT/doctor-hot-again.err; echo $? > $OUT/doctor-hot-again.rc
glk doctor live --json --keep $OUT/doctor-hot-cap > $OUT/doctor-hot-twice.json 2> $OUT/doctor-hot-twice.err; echo $? > $OUT/doctor-hot-twice.rc
glk capture --trace 8 --count 2 --interval 4 -o $OUT/cap-hot 2> $OUT/capture-hot.txt
wait $A; wait $B
lab_barrier hot
# 2. The deadlock.
if [ $N = n1 ]; then flock -x /gfs/shared/A sh -c 'sleep 4; flock -x /gfs/shared/B true' & fi
if [ $N = n2 ]; then flock -x /gfs/shared/B sh -c 'sleep 4; flock -x /gfs/shared/A true' & fi
sleep 40
ps -eo pid,ppid,pgid,stat,wchan:32,comm > $OUT/ps-deadlock.txt
glk doctor live --keep $OUT/doctor-deadlock-cap.tar.zst > $OUT/doctor-deadlock.txt 2> $OUT/doctor-deadlock.err; echo $? > $OUT/doctor-deadlock.rc
glk doctor live --json > $OUT/doctor-deadlock.json 2>> $OUT/doctor-deadlock.err; echo $? >> $OUT/doctor-deadlock.rc
glk capture --count 2 --interval 3 -o $OUT/cap-deadlock 2> $OUT/capture-deadlock.txt
lab_barrier done
ls -la $OUT
