#!/bin/sh
# Lab job (../shared/lab, run-cluster.sh, two nodes): contended hand-offs between two nodes,
# recorded by `glk capture --trace` (gfs2 and dlm events, clock markers) on both nodes at
# once, for `glk analyze`'s clock alignment, hand-off timelines and DLM latency by master.
#  - n2's link gets DELAY ms of netem delay (share/delay_ms, default 25): messages from n2
#    to n1 are slower, so remotely mastered requests from n2 are slow.
#  - Workload (both nodes, 30 s): two writers per node append to shared/log0 and log1 in
#    turn, create shared/NODE-W-I, unlink the one from 20 iterations back and list shared/;
#    one private writer per node in own-NODE/.
#  - The dlm and gfs2 event formats of the kernel go to OUT/formats/.
#  - Then, live on both nodes while the writers run 12 s more: `glk trace --events gfs2,dlm
#    -o live.jsonl`, stopped by SIGINT after 8 s, with the tracefs state (instances, the dlm
#    and gfs2 enable files, tracing_on) recorded before and after (tracefs-before.txt,
#    tracefs-after.txt), and `glk trace --events gfs2,dlm --duration 4 --summary`.
# Output: out-TAG-NODE/cap/NODE (the capture), inodes.txt, formats/, tc.txt, date.txt,
# live.jsonl, live-stderr.txt, summary.txt, tracefs-*.txt.
. /mnt/share/cluster.sh
DELAY=$(cat $S/delay_ms 2>/dev/null || echo 25)
lab_network
[ $N = n2 ] && tc qdisc add dev eth0 root netem delay ${DELAY}ms
tc qdisc show dev eth0 > $OUT/tc.txt
lab_cluster
lab_mount
cp $S/glk /usr/bin/glk; chmod +x /usr/bin/glk
T=/sys/kernel/tracing; [ -d $T/events ] || T=/sys/kernel/debug/tracing
mkdir -p $OUT/formats; for f in $T/events/dlm/*/format $T/events/gfs2/*/format; do [ -f $f ] && cp $f $OUT/formats/$(basename $(dirname $f)); done
ls $T/events/dlm > $OUT/dlm-events.txt 2>&1
lab_barrier mounted
lab_shared_files log0 log1
mkdir -p /gfs/own-$N
date +%s.%N > $OUT/date.txt
lab_barrier ready
glk capture --trace 40 --count 4 --interval 10 -o $OUT/cap 2> $OUT/capture.txt & C=$!
sleep 3
writer() {
  i=0; end=$(( $(date +%s) + ${2:-30} ))
  while [ $(date +%s) -lt $end ]; do
    echo "$N $1 $i" >> /gfs/shared/log$((i % 2))
    touch /gfs/shared/$N-$1-$i
    rm -f /gfs/shared/$N-$1-$((i - 20))
    ls /gfs/shared > /dev/null
    i=$((i+1))
  done
  echo $i > $OUT/writer-$1.iterations
}
private() {
  i=0; end=$(( $(date +%s) + 30 ))
  while [ $(date +%s) -lt $end ]; do echo $i > /gfs/own-$N/f$((i % 50)); cat /gfs/own-$N/f$((i % 50)) > /dev/null; i=$((i+1)); done
  echo $i > $OUT/private.iterations
}
writer a & A=$!; writer b & B=$!; private & P=$!
wait $A; wait $B; wait $P
wait $C; echo "capture rc=$?" >> $OUT/capture.txt
date +%s.%N >> $OUT/date.txt
lab_barrier phase2
tstate() { ls $T/instances; cat $T/events/dlm/enable $T/events/gfs2/enable $T/tracing_on; }
tstate > $OUT/tracefs-before.txt 2>&1
writer c 12 & A=$!
glk trace --events gfs2,dlm -o $OUT/live.jsonl 2> $OUT/live-stderr.txt & G=$!
sleep 8; kill -INT $G; wait $G; echo "trace rc=$?" >> $OUT/live-stderr.txt
tstate > $OUT/tracefs-after.txt 2>&1
glk trace --events gfs2,dlm --duration 4 --summary > $OUT/summary.txt 2>&1; echo "summary rc=$?" >> $OUT/summary.txt
wait $A
lab_barrier done
ls -laR $OUT
