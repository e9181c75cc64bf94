#!/bin/sh
# Lab job (../shared/lab, run-nolock.sh, one node): system call events as raw pages and as
# the kernel's text. An instance records syscalls:sys_enter/sys_exit of getppid, openat
# and read while a few commands run (two CPUs: their pages are merged); once
# stopped, its `trace` text and then its raw pages are saved with the events' formats,
# `header_page` and `saved_cmdlines` in `pages/`, for traceparse's raw tests (before 6.18
# the kernel prints these events with its own code: `sys_openat(dfd: ffffff9c, ...)`).
S=/mnt/share; TAG=$(cat $S/tag); OUT=$S/out-$TAG; rm -rf $OUT; mkdir -p $OUT
T=/sys/kernel/tracing; I=$T/instances/rawcheck; P=$OUT/pages; mkdir -p $P
mkdir $I; echo 4096 > $I/buffer_size_kb
for e in sys_enter_getppid sys_exit_getppid sys_enter_openat sys_exit_openat sys_enter_read sys_exit_read; do
  echo 1 > $I/events/syscalls/$e/enable
done
for i in 1 2 3 4 5 6 7 8; do cat /etc/hostname > /dev/null; head -c 100 /proc/self/status > /dev/null; done
echo 0 > $I/tracing_on
cat $I/trace > $P/trace.txt
for c in $I/per_cpu/cpu*; do
  dd if=$c/trace_pipe_raw of=$P/$(basename $c).raw bs=4096 iflag=nonblock 2> /dev/null
done
cat $T/events/header_page > $P/header_page; cat $T/saved_cmdlines > $P/saved_cmdlines
for e in sys_enter_getppid sys_exit_getppid sys_enter_openat sys_exit_openat sys_enter_read sys_exit_read; do
  cp $T/events/syscalls/$e/format $P/format.$e
done
cp $T/events/ftrace/print/format $P/format.print
uname -r > $P/osrelease
rmdir $I
