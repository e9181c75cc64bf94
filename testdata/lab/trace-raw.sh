#!/bin/sh
# Lab job (../shared/lab, run-cluster.sh, two nodes; copy cluster.sh into share/ too): the
# same gfs2 and dlm events read two ways at once. On each node two `glk trace` run side by
# side, each with its private instance: `--reader raw` (trace_pipe_raw pages, the lines
# written by glk from the events' formats) and `--reader text` (the kernel's trace_pipe),
# while both nodes append to one shared file (remote demotes) and write files of their own
# (block allocation, bmap, iomap, log flushes). The two outputs must hold the same events.
# A third instance, `rawcheck`, made here by hand, records the same events; once stopped,
# its `trace` file (the kernel's text, which leaves the buffer as it is) and then its raw
# pages (`per_cpu/cpuN/trace_pipe_raw`) are saved with the formats, `header_page` and
# `saved_cmdlines`, in `pages/`: the same records twice, for traceparse's raw tests.
. /mnt/share/cluster.sh
lab_up
lab_barrier mounted
lab_shared_files log
cd $OUT
I=/sys/kernel/tracing/instances/rawcheck
mkdir $I; echo 8192 > $I/buffer_size_kb
echo 1 > $I/events/gfs2/enable; echo 1 > $I/events/dlm/enable
glk trace --events gfs2,dlm --reader raw --duration 24 -o $OUT/raw.txt > $OUT/raw.log 2>&1 &
R=$!
glk trace --events gfs2,dlm --reader text --duration 24 -o $OUT/text.txt > $OUT/text.log 2>&1 &
T=$!
sleep 3
mkdir -p /gfs/$N
end=$(($(date +%s) + 15)); i=0
while [ $(date +%s) -lt $end ]; do
  i=$((i+1)); echo "$N $i" >> /gfs/shared/log; stat /gfs/shared > /dev/null
  dd if=/dev/zero of=/gfs/$N/f$((i % 20)) bs=4k count=4 2>/dev/null
done
echo $i > $OUT/appends.txt
wait $R; echo $? > $OUT/raw.rc
wait $T; echo $? > $OUT/text.rc
echo 0 > $I/tracing_on
P=$OUT/pages; mkdir -p $P
cat $I/trace > $P/trace.txt
for c in $I/per_cpu/cpu*; do
  dd if=$c/trace_pipe_raw of=$P/$(basename $c).raw bs=4096 iflag=nonblock 2> /dev/null
done
T0=/sys/kernel/tracing
cat $T0/events/header_page > $P/header_page; cat $T0/saved_cmdlines > $P/saved_cmdlines
for f in $T0/events/gfs2/*/format $T0/events/dlm/*/format $T0/events/ftrace/print/format; do
  cp $f $P/format.$(basename $(dirname $f))
done
uname -r > $P/osrelease
rmdir $I
ls /sys/kernel/tracing/instances > $OUT/instances-after.txt 2>&1
lab_barrier done
poweroff -f
