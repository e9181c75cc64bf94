#!/bin/sh
# Lab job (../shared/lab, run-cluster.sh, two nodes; copy cluster.sh into share/ too):
# glockfd longer than one page on n2, seen from n1 through cluster mode over real ssh. n2
# starts 160 `flock -s FILE sleep 90` pairs on the shared GFS2; n1 runs `glk top
# --cluster --once --json` and `glk capture --cluster --count 1`, which must name n2's
# glockfd as one page (the agent sends the note with n2's files); beside them n2 reads its
# glockfd with dd in exactly one read, and both kernels' logs are kept.
. /mnt/share/cluster.sh
lab_up
lab_ssh
lab_barrier mounted
if [ $N = n2 ]; then
  mkdir -p /gfs/many
  i=0; while [ $i -lt 160 ]; do : > /gfs/many/f$i; flock -s /gfs/many/f$i sleep 90 & i=$((i+1)); done
  sleep 5
  dd if=$(ls -d /sys/kernel/debug/gfs2/*)/glockfd of=$OUT/glockfd.dd bs=1M count=1 2> $OUT/dd.err
  touch $S/mark.many
fi
lab_wait many
if [ $N = n1 ]; then
  glk top --cluster --once --json > $OUT/top.json 2> $OUT/top.err; echo $? > $OUT/top.rc
  glk capture --cluster --count 1 -o $OUT/ccap > $OUT/capture.out 2> $OUT/capture.err
  echo $? > $OUT/capture.rc
  touch $S/mark.asked
fi
lab_wait asked
if [ $N = n2 ]; then pkill -f 'sleep 90'; sleep 1; fi
dmesg > $OUT/dmesg.txt
lab_barrier done
poweroff -f
