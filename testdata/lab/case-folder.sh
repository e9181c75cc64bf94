#!/bin/sh
# Lab job (../shared/lab, run-cluster.sh, two nodes; copy cluster.sh into share/ too, and
# an older glk as share/glk-old when comparing): glk analyze given what an administrator or
# support engineer gives it. Both nodes record the same appends with trace-cmd and glk
# capture side by side (lab_both_recorders), and trace-cmd report writes report.txt beside
# trace.dat; $OUT is then a case folder of one node: trace.dat, report.txt, capture/.
# Then each glk (glk, and glk-old when there) runs `analyze` on: the node's debugfs
# (/sys/kernel/debug, with tracefs automounted at its tracing/), the tracefs mount, its
# trace_pipe itself, and the case folder, each under `timeout 20`, with the gfs2 events of
# the top instance enabled (as a tracer would have them) so that a read of trace_pipe takes
# events. Saved per run in $OUT/runs: G-WHAT.out, G-WHAT.err, G-WHAT.rc (124: still reading
# at 20 s) and G-WHAT.secs. Expected of glk: every run ends at once; the debugfs one analyses the live
# glocks; the tracefs ones say there is nothing to read; the case folder is read for its
# trace.dat and names capture/ and report.txt as passed over.
. /mnt/share/cluster.sh
lab_up
lab_barrier mounted
lab_shared_files log
lab_both_recorders 12 5 1 10
lab_report
lab_barrier recorded
mount | grep -E 'tracefs|debugfs' > $OUT/mounts.txt
echo 1 > /sys/kernel/tracing/events/gfs2/enable
lab_appends 200 > /dev/null 2>&1 &
A=$!
R=$OUT/runs; mkdir -p $R
for G in glk glk-old; do
  [ $G = glk-old ] && { [ -f $S/glk-old ] || continue; cp $S/glk-old /usr/bin/glk-old; chmod +x /usr/bin/glk-old; }
  for W in debugfs:/sys/kernel/debug tracefs:/sys/kernel/tracing trace_pipe:/sys/kernel/tracing/trace_pipe case:$OUT; do
    what=${W%%:*}; path=${W#*:}
    t0=$(date +%s.%N)
    timeout 20 $G analyze $path > $R/$G-$what.out 2> $R/$G-$what.err
    echo $? > $R/$G-$what.rc
    awk -v a=$t0 -v b=$(date +%s.%N) 'BEGIN { print b - a }' > $R/$G-$what.secs
  done
done
kill $A
echo 0 > /sys/kernel/tracing/events/gfs2/enable
lab_barrier done
poweroff -f
