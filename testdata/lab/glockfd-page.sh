#!/bin/sh
# Lab job (../shared/lab, run-nolock.sh, one node, lock_nolock): glockfd longer than one
# page. 160 `flock -s FILE sleep 90` pairs on GFS2 (each flock and its sleep child hold the
# file open: an iopen and a flock line each), then `glk capture --count 1` and
# `glk top --once --plain`, which must say that the kernel gave one page; beside them,
# glockfd read by dd in exactly one read (never cat: its second read sets off the kernel's
# double put, docs/kernel-formats.md 1.10), the processes, and the kernel log (no WARNING).
set -x
S=/mnt/share; TAG=$(cat $S/tag 2>/dev/null || echo glockfd); OUT=$S/out-$TAG; rm -rf $OUT; mkdir -p $OUT
PATH=$S:$PATH
uname -r > $OUT/kernel.txt
mkfs.gfs2 -O -p lock_nolock -j 1 /dev/vda
mkdir -p /gfs && mount -t gfs2 /dev/vda /gfs
D=$(ls -d /sys/kernel/debug/gfs2/*)
i=0; while [ $i -lt 160 ]; do : > /gfs/f$i; flock -s /gfs/f$i sleep 90 & i=$((i+1)); done
sleep 5
dd if=$D/glockfd of=$OUT/glockfd.dd bs=1M count=1 2> $OUT/dd.err
ps -eo pid,comm | grep -c sleep > $OUT/sleepers.txt
glk capture --count 1 -o $OUT/cap > $OUT/capture.out 2> $OUT/capture.err; echo $? > $OUT/capture.rc
glk top --once --plain > $OUT/top.txt 2> $OUT/top.err; echo $? > $OUT/top.rc
glk top --once --json > $OUT/top.json 2>> $OUT/top.err
dmesg > $OUT/dmesg.txt
# The flock holders and their sleep children (which hold the files open too).
pkill -f 'sleep 90'; kill $(jobs -p) 2>/dev/null
sleep 1
umount /gfs; echo $? > $OUT/umount.rc
echo done > $OUT/done
