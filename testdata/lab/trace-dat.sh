#!/bin/sh
# Lab job (../shared/lab, run-cluster.sh, two nodes; copy cluster.sh into share/ too): the
# same gfs2 and dlm events recorded by trace-cmd and by glk at once. On each node,
# `glk capture --count 2 --interval 10 --trace 20` (a private tracefs instance) and
# `trace-cmd record -e gfs2 -e dlm` (the top instance) run side by side while both nodes
# append to one shared file for 15 s (remote demotes). The trace.dat is reported in the VM
# too (`trace-cmd report -i trace.dat`, and with -t for ns timestamps), for comparison.
. /mnt/share/cluster.sh
lab_up
lab_barrier mounted
lab_shared_files log
lab_both_recorders 20 10 3 15
lab_report
trace-cmd report -t -i $OUT/trace.dat > $OUT/report-t.txt 2>> $OUT/report.err
trace-cmd --version > $OUT/trace-cmd-version.txt 2>&1
ls /sys/kernel/tracing/instances > $OUT/instances-after.txt 2>&1
cat /sys/kernel/tracing/set_event > $OUT/set-event-after.txt 2>&1
lab_barrier done
poweroff -f
