#!/bin/sh
# Lab job (../shared/lab, run-cluster.sh, two nodes; copy cluster.sh into share/ too): the
# deadlocks programs really make, all at once on separate files, so that one capture must
# tell each apart from the others and from waits that are not deadlocks.
#  - cycle3 (under `timeout 45`, as scripts run things): on n1 P1 locks x then asks for y,
#    P3 locks z then asks for x (a local edge: P3 waits behind P1 on n1); on n2 P2 locks y
#    then asks for z. At 45 s timeout kills the outer flocks: their children keep the open
#    files, and so the locks, as orphans.
#  - cycle4: n1 locks a then b, and d then a; n2 locks b then c, and c then d (two local
#    edges, two remote).
#  - cycle2: n1 locks m then n, n2 locks n then m.
#  - posix: the same two-node cycle with fcntl (POSIX) locks on p and q, through
#    dlm_controld's plocks (python3's fcntl.lockf).
#  - wait: n1 holds w for the whole run, n2 waits for it: stuck, but no cycle.
#  - slow: n1 holds s for 25 s, n2 waits for it from 2 s on: slow, not stuck.
# Every "A then B" is `flock -x A sh -c 'sleep 4; flock -x B true'` (the inner flock, a
# grandchild of the process holding A, asks for B).
# Ground truth without glk at 12 s and at 50 s (ps, /proc/locks, each locking process's open
# files (fds.txt: kernels before 6.1 have no glockfd), and a plain copy of the
# debugfs files, `dlm_tool lockdebug` and `dlm_tool plocks` as support's procedures take
# them); glk capture from 12 s over 38 s (--count 3 --interval 19), and a short one at 55 s;
# then glk top --once and glk doctor live (6 s, and --for 20) on each node (live-*), and on
# n1 glk top --cluster over ssh (live-cluster-top.*).
. /mnt/share/cluster.sh
lab_up
lab_ssh
lab_barrier mounted
lab_shared_files x y z a b c d m n p q w s
D=/gfs/shared
then_() { flock -x $D/$1 sh -c "sleep 4; flock -x $D/$2 true"; }
posix() {
  python3 -c 'import fcntl, sys, time
a = open(sys.argv[1], "r+"); fcntl.lockf(a, fcntl.LOCK_EX); time.sleep(4)
b = open(sys.argv[2], "r+"); fcntl.lockf(b, fcntl.LOCK_EX)' $D/$1 $D/$2
}
lab_barrier go
date +%s.%N > $OUT/go.txt
if [ $N = n1 ]; then
  timeout 45 flock -x $D/x sh -c "sleep 4; flock -x $D/y true" &
  timeout 45 flock -x $D/z sh -c "sleep 4; flock -x $D/x true" &
  then_ a b & then_ d a &
  then_ m n &
  posix p q &
  flock -x $D/w sleep 600 &
  flock -x $D/s sleep 25 &
else
  timeout 45 flock -x $D/y sh -c "sleep 4; flock -x $D/z true" &
  then_ b c & then_ c d &
  then_ n m &
  posix q p &
  (sleep 2; flock -x $D/w true; date +%s.%N > $OUT/wait-granted.txt) &
  (sleep 2; date +%s.%N > $OUT/slow-asked.txt; flock -x $D/s true; date +%s.%N > $OUT/slow-granted.txt) &
fi
# The ground truth at a moment, without glk: what support's procedures copy.
truth() {
  T=$OUT/$1; mkdir -p $T; FS=$(ls /sys/kernel/debug/gfs2/)
  ps -eo pid,ppid,pgid,stat,wchan:32,comm > $T/ps.txt
  cat /proc/locks > $T/proc-locks.txt
  for f in glocks glockfd; do
    [ -e /sys/kernel/debug/gfs2/$FS/$f ] && cat /sys/kernel/debug/gfs2/$FS/$f > $T/$f
  done
  # Which files each locking process has open, for kernels without glockfd (before 6.1).
  for p in $(ps -eo pid=,comm= | awk '$2 ~ /^(flock|sh|timeout|python3|sleep)$/ {print $1}'); do
    for fd in /proc/$p/fd/*; do
      f=$(readlink $fd) && case $f in $D/*) echo "$p ${f#$D/}";; esac
    done
  done > $T/fds.txt 2>/dev/null
  cat /sys/kernel/debug/dlm/gfs_locks > $T/dlm_locks
  dlm_tool lockdebug -svw gfs > $T/lockdebug.txt 2>&1
  dlm_tool plocks gfs > $T/plocks.txt 2>&1
  for p in $(ps -eo pid=,stat= | awk '$2 ~ /^D/ {print $1}'); do
    echo "== $p $(cat /proc/$p/comm)"; cat /proc/$p/stack
  done > $T/stacks.txt 2>&1
}
sleep 12
truth truth-12s
glk capture --count 3 --interval 19 -o $OUT/capture > $OUT/capture.log 2>&1; echo $? > $OUT/capture.rc
truth truth-50s
sleep 3
glk capture --count 2 --interval 3 -o $OUT/late > $OUT/late.log 2>&1; echo $? > $OUT/late.rc
# glk live on the node itself: top (POSIX waits from dlm_tool plocks) and doctor live.
glk top --once --plain > $OUT/live-top.txt 2>&1; echo $? > $OUT/live-top.rc
glk top --once --json > $OUT/live-top.json 2> $OUT/live-top.err
glk doctor live > $OUT/live-doctor.txt 2>&1; echo $? > $OUT/live-doctor.rc
glk doctor live --for 20 --stuck-after 15 > $OUT/live-doctor-for.txt 2>&1; echo $? > $OUT/live-doctor-for.rc
# The whole cluster from n1, over ssh: n2's holders as n2's agent names them.
if [ $N = n1 ]; then
  glk top --cluster --once --plain > $OUT/live-cluster-top.txt 2>&1; echo $? > $OUT/live-cluster-top.rc
  glk top --cluster --once --json > $OUT/live-cluster-top.json 2> $OUT/live-cluster-top.err
  ps -eo pid,ppid,pgid,stat,comm > $OUT/ps-end.txt; ssh n2 ps -eo pid,ppid,pgid,stat,comm > $OUT/ps-end-n2.txt
fi
lab_barrier done
poweroff -f
