#!/bin/sh
# Lab job (../shared/lab, run-nolock.sh, one node): a trace.dat made by trace-cmd on this
# kernel, read by glk itself and by trace-cmd. `trace-cmd record -e gfs2` runs while three
# writers work on a lock_nolock GFS2; then, in the VM, `trace-cmd report` and `glk trace
# --input trace.dat -o glk.txt`, and the same for the file converted to version 6 by
# `trace-cmd convert`: each event's time, task, CPU and name must be trace-cmd's.
S=/mnt/share; TAG=$(cat $S/tag); OUT=$S/out-$TAG; rm -rf $OUT; mkdir -p $OUT
cp $S/glk /usr/bin/glk; chmod +x /usr/bin/glk
uname -r > $OUT/kernel.txt
mkfs.gfs2 -O -p lock_nolock -j 1 /dev/vda > /dev/null; mkdir -p /gfs && mount -t gfs2 /dev/vda /gfs
cd $OUT
trace-cmd record -e gfs2 -o $OUT/trace.dat sleep 8 > $OUT/record.log 2>&1 &
T=$!
sleep 2
work() { d=/gfs/w$1; mkdir -p $d; i=0; while [ $i -lt 80 ]; do echo "data $i" > $d/f$i; i=$((i+1)); done; rm -f $d/f1*; }
work 1 & work 2 & work 3 & wait %2 %3 %4 2>/dev/null
wait $T
trace-cmd report -i $OUT/trace.dat > $OUT/report.txt 2> $OUT/report.err
glk trace --input $OUT/trace.dat -o $OUT/glk.txt > $OUT/glk.log 2>&1; echo $? > $OUT/glk.rc
trace-cmd convert -i $OUT/trace.dat --file-version 6 --compression none -o $OUT/v6.dat > /dev/null 2>&1
glk trace --input $OUT/v6.dat -o $OUT/glk-v6.txt > $OUT/glk-v6.log 2>&1; echo $? > $OUT/glk-v6.rc
umount /gfs
