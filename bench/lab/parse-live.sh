#!/bin/sh
# Lab job (run-nolock.sh): the live paths issue 14 touched, end to end on a real kernel
# while files are written: glk trace --summary (live gfs2 events), glk top --once, two
# plain refreshes (live glocks read ahead while glstats is) and one run with a text
# filter, glk capture with a trace and its trace read back with --summary; then whether
# tracefs was left as found.
set -x
S=/mnt/share; OUT=$S/out-parse-live; rm -rf $OUT; mkdir -p $OUT
cp $S/glk /usr/bin/glk
uname -r > $OUT/kernel.txt
# Whether the guest CPU offers AVX2 (glk's skim then reads lines through it).
grep -m1 -o -w avx2 /proc/cpuinfo > $OUT/cpu-avx2.txt || echo "no avx2" > $OUT/cpu-avx2.txt
mkfs.gfs2 -O -p lock_nolock -j 1 /dev/vda
mkdir -p /gfs && mount -t gfs2 /dev/vda /gfs
D=$(ls -d /sys/kernel/debug/gfs2/*)
T=/sys/kernel/tracing
state() { cat $T/tracing_on; cat $T/events/gfs2/enable; ls $T/instances; }
state > $OUT/tracefs-before.txt 2>&1
work() { d=/gfs/w$1; mkdir -p $d; i=0; while [ $i -lt 300 ]; do echo "data $i" > $d/f$i; i=$((i+1)); done; cat $d/* > /dev/null; }
# Under QEMU/TCG, switching tracepoints on or off while other CPUs run the patched gfs2
# code can oops the guest (int3 in gfs2_glock_dq: the kernel's live text patching racing
# TCG's translated code): the writers run only once tracing is on, and end before it is
# switched off.
glk trace --duration 20 --summary > $OUT/trace-summary.txt 2> $OUT/trace-stderr.txt &
G=$!
sleep 4; work 1 & W1=$!; work 2 & W2=$!; wait $W1 $W2
wait $G; echo "rc $?" >> $OUT/trace-stderr.txt
work 3 & W3=$!
glk top --once $D/glocks > $OUT/top-once.txt 2>&1; echo "rc $?" >> $OUT/top-once.txt
glk top --plain -n 2 -d 1 --held $D/glocks > $OUT/top-plain.txt 2>&1; echo "rc $?" >> $OUT/top-plain.txt
glk top --once --held --filter dir_search $D/glocks > $OUT/top-filter.txt 2>&1; echo "rc $?" >> $OUT/top-filter.txt
wait $W3
glk capture --output $OUT/cap --count 2 --interval 2 --trace 20 > $OUT/capture.txt 2>&1 &
C=$!
sleep 4; work 4 & W4=$!; wait $W4
wait $C; echo "rc $?" >> $OUT/capture.txt
T1=$(find $OUT/cap -name 'trace*' -type f | head -1)
glk trace --input "$T1" --summary > $OUT/capture-trace-summary.txt 2>&1; echo "rc $? ($T1)" >> $OUT/capture-trace-summary.txt
state > $OUT/tracefs-after.txt 2>&1
cmp $OUT/tracefs-before.txt $OUT/tracefs-after.txt > $OUT/tracefs-same.txt 2>&1; echo "rc $?" >> $OUT/tracefs-same.txt
umount /gfs
