#!/bin/sh
# Lab job (../shared/lab, run-cluster.sh, two nodes; copy cluster.sh into share/ too, and
# an older glk as share/glk-old when comparing): glk top and glk stats given each node's
# capture from a folder of its own, as support collects them, and given debugfs as an
# administrator types it. A two-node flock deadlock (as support-deadlock.sh: n1 holds A
# and its grandchild waits for B, n2 holds B and its grandchild waits for A; they never
# end). Each node captures into $OUT/capture (glk capture --count 2 --interval 3), with
# ps.txt and proc-locks.txt beside it. Then on n1, each glk (glk, and glk-old when there)
# runs, saved in $OUT/runs as G-WHAT.out, G-WHAT.err and G-WHAT.rc:
#   folders      glk top --once --json n1's capture n2's capture (two folders)
#   debugfs      glk top --once /sys/kernel/debug (the debugfs root)
#   gfs2         glk top --once /sys/kernel/debug/gfs2
#   stats        glk stats /sys/kernel/debug
# and glk alone: cluster (glk top --cluster --once --json, over ssh: n2's agent) and ccap
# (glk capture --cluster --count 1 into $OUT/ccap, then glk top --once --json on it).
# Expected of glk: in folders, n1's waiter on B is held on n2 by the pid n2's /proc/locks
# shows holding B, and n2's waiter on A on n1 by n1's; the debugfs runs show the live
# glocks and statistics; every capture's node directory says its lock table (`table`:
# lab:gfs).
. /mnt/share/cluster.sh
lab_up
lab_ssh
lab_barrier mounted
lab_shared_files A B
if [ $N = n1 ]; then flock -x /gfs/shared/A sh -c 'sleep 4; flock -x /gfs/shared/B true' & fi
if [ $N = n2 ]; then flock -x /gfs/shared/B sh -c 'sleep 4; flock -x /gfs/shared/A true' & fi
sleep 8
glk capture --count 2 --interval 3 -o $OUT/capture > $OUT/capture.log 2>&1; echo $? > $OUT/capture.rc
ps -eo pid,ppid,pgid,stat,wchan:32,comm > $OUT/ps.txt
cat /proc/locks > $OUT/proc-locks.txt
lab_barrier captured
if [ $N = n1 ]; then
  R=$OUT/runs; mkdir -p $R
  THERE=$S/out-$TAG-n2/capture
  for G in glk glk-old; do
    [ $G = glk-old ] && { [ -f $S/glk-old ] || continue; cp $S/glk-old /usr/bin/glk-old; chmod +x /usr/bin/glk-old; }
    timeout 60 $G top --once --json $OUT/capture $THERE > $R/$G-folders.out 2> $R/$G-folders.err; echo $? > $R/$G-folders.rc
    timeout 60 $G top --once /sys/kernel/debug > $R/$G-debugfs.out 2> $R/$G-debugfs.err; echo $? > $R/$G-debugfs.rc
    timeout 60 $G top --once /sys/kernel/debug/gfs2 > $R/$G-gfs2.out 2> $R/$G-gfs2.err; echo $? > $R/$G-gfs2.rc
    timeout 60 $G stats /sys/kernel/debug > $R/$G-stats.out 2> $R/$G-stats.err; echo $? > $R/$G-stats.rc
  done
  timeout 120 glk top --cluster --once --json > $R/glk-cluster.out 2> $R/glk-cluster.err; echo $? > $R/glk-cluster.rc
  timeout 120 glk capture --cluster --count 1 -o $OUT/ccap > $R/glk-ccap-capture.err 2>&1; echo $? > $R/glk-ccap-capture.rc
  timeout 60 glk top --once --json $OUT/ccap > $R/glk-ccap.out 2> $R/glk-ccap.err; echo $? > $R/glk-ccap.rc
fi
lab_barrier done
poweroff -f
