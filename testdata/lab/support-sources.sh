#!/bin/sh
# Lab job (../shared/lab, run-cluster.sh, two nodes; copy cluster.sh into share/ too): what
# support collects, at one moment, during a cross-node flock wait. n1 holds an flock on
# shared/A for 300 s; n2 asks for it 2 s later and waits. Then each node runs, one after the
# other: `glk capture` (2 snapshots 5 s apart), `dlm_tool lockdebug -svw gfs` and a copy of
# the debugfs DLM dump (the same locks in both layouts), `sos report` with the gfs2 and dlm
# lock dump options (-o gfs2,dlm,process; sos 4.0 as Debian ships it) and
# `gfs2_lockcapture` (1 run). Outputs in share/out-TAG-NODE.
. /mnt/share/cluster.sh
lab_up
lab_barrier mounted
lab_shared_files A
lab_flock_wait A 300
sleep 5
date +%s.%N > $OUT/t-start.txt
glk capture --count 2 --interval 5 -o $OUT/capture > $OUT/capture.log 2>&1
dlm_tool lockdebug -svw gfs > $OUT/lockdebug-svw.txt 2>&1
cat /sys/kernel/debug/dlm/gfs_locks > $OUT/dlm_gfs_locks.txt 2>&1
ps -eo pid,ppid,stat,wchan:32,comm > $OUT/ps.txt
cat /proc/locks > $OUT/proc-locks.txt
date +%s.%N > $OUT/t-sos.txt
mkdir -p $OUT/sos
timeout 300 sos report --batch --quiet -o gfs2,dlm,process -k gfs2.lockdump=on -k dlm.lockdump=on \
  --tmp-dir $OUT/sos --label $N > $OUT/sos.log 2>&1; echo $? > $OUT/sos.rc
date +%s.%N > $OUT/t-lockcapture.txt
timeout 200 gfs2_lockcapture -y -q -r 1 -s 1 -o $OUT/lockcapture > $OUT/lockcapture.log 2>&1; echo $? > $OUT/lockcapture.rc
date +%s.%N > $OUT/t-end.txt
ls -laR $OUT/sos $OUT/lockcapture > $OUT/listing.txt 2>&1
lab_barrier done
poweroff -f
