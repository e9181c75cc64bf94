#!/bin/sh
# Lab job (../shared/lab, run-cluster.sh, two nodes; copy cluster.sh into share/ too, and an
# older glk as share/glk-old to compare): `glk top --cluster` over real ssh while a
# directory and two files go back and forth between the nodes every few tens of
# milliseconds, with a cross-node flock wait beside them.
#  - n2's link gets 25 ms of netem delay; both nodes run two writers until the end (append
#    to shared/log, create and remove shared/NODE-W-I, list shared/, as doctor-live.sh).
#  - n1 holds shared/w (flock -x w sleep 300); n2 asks for it 2 s later and waits.
#  - n1, 8 s in: 12 rounds of `glk top --cluster --once --json --limit 0`, with this glk
#    (top-new-I.json) and with share/glk-old (top-old-I.json) in turn, and `glk top --once
#    --limit 0` alone (alone-I.txt): does a request ever wait for its own node's lock, and
#    does the text say when a pid shown is only the DLM's?
#  - Both nodes: `glk doctor live --json --for 6` (doctor.json, doctor.rc), then `glk
#    capture --count 2 --interval 4 --trace 8 -o cap` (capture.txt) for analyze on the host.
#  - n1, after: `glk doctor live --cluster --json --for 6 --keep cluster-cap`
#    (doctor-cluster.json, .err, .rc): both nodes' capture kept, every cited file in it.
#  - Truth: ps at the end (ps.txt), /proc/locks (locks.txt), inodes.txt.
. /mnt/share/cluster.sh
lab_network
[ $N = n2 ] && tc qdisc add dev eth0 root netem delay 25ms
lab_cluster
lab_mount
cp $S/glk /usr/bin/glk; chmod +x /usr/bin/glk
lab_ssh
lab_shared_files log w
lab_barrier ready
writer() {
  i=0; end=$(( $(date +%s) + 400 ))
  while [ $(date +%s) -lt $end ] && [ ! -e /tmp/stop-writers ]; do
    echo "$N $1 $i" >> /gfs/shared/log; touch /gfs/shared/$N-$1-$i
    rm -f /gfs/shared/$N-$1-$((i - 10)); ls /gfs/shared > /dev/null
    i=$((i+1))
  done
  echo $i > $OUT/writer-$1.iterations
}
writer a & A=$!; writer b & B=$!
lab_flock_wait w 300
sleep 8
if [ $N = n1 ]; then
  i=0
  while [ $i -lt 12 ]; do
    glk top --cluster --once --json --limit 0 > $OUT/top-new-$i.json 2> $OUT/top-new-$i.err
    echo $? >> $OUT/top-new.rc
    if [ -x $S/glk-old ]; then
      $S/glk-old top --cluster --once --json --limit 0 > $OUT/top-old-$i.json 2> $OUT/top-old-$i.err
      echo $? >> $OUT/top-old.rc
    fi
    glk top --once --limit 0 > $OUT/alone-$i.txt 2>&1
    i=$((i+1))
  done
fi
lab_barrier tops
glk doctor live --json --for 6 > $OUT/doctor.json 2> $OUT/doctor.err; echo $? > $OUT/doctor.rc
glk capture --count 2 --interval 4 --trace 8 -o $OUT/cap > $OUT/capture.txt 2>&1; echo "rc=$?" >> $OUT/capture.txt
lab_barrier captured
if [ $N = n1 ]; then
  glk doctor live --cluster --json --for 6 --keep $OUT/cluster-cap > $OUT/doctor-cluster.json 2> $OUT/doctor-cluster.err; echo $? > $OUT/doctor-cluster.rc
fi
ps -eo pid,ppid,stat,wchan:32,comm,args > $OUT/ps.txt
cat /proc/locks > $OUT/locks.txt
touch /tmp/stop-writers; wait $A; wait $B
lab_barrier done
ls -la $OUT
