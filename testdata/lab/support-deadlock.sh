#!/bin/sh
# Lab job (../shared/lab, run-cluster.sh, two nodes; copy cluster.sh into share/ too): one
# moment collected by every tool support uses, during a two-node flock deadlock and a
# shared-file append storm. n1 runs `flock A sh -c 'sleep 4; flock B true'`, n2 `flock B sh
# -c 'sleep 4; flock A true'` (each shell's child waits for the lock the other node's parent
# holds; they never end); both nodes append to shared/log. Then on each node, side by side:
# `trace-cmd record -e gfs2 -e dlm` and `glk capture --count 2 --interval 5 --trace 12`,
# then `sos report -o gfs2,dlm,process` with both lock dump options, and
# `gfs2_lockcapture -r 1`; ps and /proc/locks beside them. Outputs in share/out-TAG-NODE.
. /mnt/share/cluster.sh
lab_up
lab_barrier mounted
lab_shared_files A B log
if [ $N = n1 ]; then flock -x /gfs/shared/A sh -c 'sleep 4; flock -x /gfs/shared/B true' & fi
if [ $N = n2 ]; then flock -x /gfs/shared/B sh -c 'sleep 4; flock -x /gfs/shared/A true' & fi
sleep 8
lab_both_recorders 12 5 1 10
ps -eo pid,ppid,pgid,stat,wchan:32,comm > $OUT/ps.txt
cat /proc/locks > $OUT/proc-locks.txt
mkdir -p $OUT/sos
timeout 300 sos report --batch --quiet -o gfs2,dlm,process -k gfs2.lockdump=on -k dlm.lockdump=on \
  --tmp-dir $OUT/sos --label $N > $OUT/sos.log 2>&1; echo $? > $OUT/sos.rc
timeout 200 gfs2_lockcapture -y -q -r 1 -s 1 -o $OUT/lockcapture > $OUT/lockcapture.log 2>&1; echo $? > $OUT/lockcapture.rc
lab_barrier done
poweroff -f
