#!/bin/sh
# Lab job (../shared/lab, run-cluster.sh, two nodes): the holds a mount keeps while the
# filesystem is mounted, seen by a trace that starts before `mount`.
#  - Both nodes: `glk trace --events gfs2,dlm --duration 60 -o trace.txt` from before
#    `mount` (the gfs2 module loaded first, so that its events exist), the mount's pid in
#    mount.pid (the `mount` that succeeded), then some work in a directory of the node's
#    own (create, list and remove files), then `glk capture --count 2 --interval 3 -o cap`
#    (no trace); once the trace ends it goes into the node's capture directory as
#    cap/NODE/trace_pipe.txt.
#  - On the host: `glk analyze` of both nodes' cap/NODE: part 7's glocks queued, not
#    dequeued at trace end are the mount's (`queued by pid N [mount]`, N in mount.pid),
#    each held in the last snapshot where the mount took it.
. /mnt/share/cluster.sh
lab_network
lab_cluster
cp $S/glk /usr/bin/glk; chmod +x /usr/bin/glk
modprobe gfs2
glk trace --events gfs2,dlm --duration 60 -o $OUT/trace.txt 2> $OUT/trace.err &
T=$!
sleep 2
if [ $N = n1 ]; then mkfs.gfs2 -O $(cat $S/mkfs_opts 2>/dev/null) -p lock_dlm -t lab:gfs -j 2 /dev/vda > $OUT/mkfs.txt 2>&1; touch $S/mark.mkfs; fi
lab_wait mkfs
mkdir -p /gfs; i=0
while :; do
  mount -t gfs2 /dev/vda /gfs & M=$!
  wait $M && break
  sleep 2; i=$((i+1)); [ $i -gt 60 ] && { echo MOUNT FAILED; poweroff -f; }
done
echo $M > $OUT/mount.pid
mkdir -p /gfs/$N
j=0
while [ $j -lt 50 ]; do touch /gfs/$N/f$j; ls /gfs/$N > /dev/null; j=$((j+1)); done
rm -f /gfs/$N/f1*
glk capture --count 2 --interval 3 -o $OUT/cap > $OUT/capture.txt 2>&1; echo "rc=$?" >> $OUT/capture.txt
wait $T; echo "rc=$?" >> $OUT/trace.err
cp $OUT/trace.txt $OUT/cap/$N/trace_pipe.txt
ps -eo pid,ppid,stat,comm,args > $OUT/ps.txt
lab_barrier done
ls -la $OUT
