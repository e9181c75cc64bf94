#!/bin/sh
# Lab job (../shared/lab, run-cluster.sh, two nodes; copy cluster.sh into share/ too): the
# state around the locks as support collects it, with a filesystem withdrawn. Both nodes
# mount and append to shared/log; n2 then withdraws at the user's request (`echo 1 >
# /sys/fs/gfs2/lab:gfs/withdraw`, which the kernel logs and obeys) and n1 goes on. Then on
# each node the truth without glk (dmesg, the sysfs `withdraw`, `corosync-quorumtool -s`,
# `dlm_tool ls`), `glk doctor live --json`, `glk capture --count 1`, and `sos report -o
# gfs2,dlm,kernel,corosync` with the DLM lock dump option. Outputs in share/out-TAG-NODE.
. /mnt/share/cluster.sh
lab_up
lab_barrier mounted
lab_shared_files log
for i in $(seq 1 50); do echo "$N $i" >> /gfs/shared/log; done
lab_barrier appended
# The write returns only when the withdraw is complete, which waits for the journal's
# recovery: in the background, so that the node is collected while it withdraws.
if [ $N = n2 ]; then
  (echo 1 > /sys/fs/gfs2/lab:gfs/withdraw; echo $? > $OUT/withdraw.rc) &
fi
sleep 15
lab_barrier withdrawn
dmesg > $OUT/dmesg.txt
cat /sys/fs/gfs2/lab:gfs/withdraw > $OUT/withdraw.txt 2>&1
corosync-quorumtool -s > $OUT/quorum.txt 2>&1
dlm_tool ls > $OUT/dlm_tool_ls.txt 2>&1
timeout 120 glk doctor live --json > $OUT/doctor-live.json 2> $OUT/doctor-live.err; echo $? > $OUT/doctor-live.rc
timeout 120 glk capture --count 1 -o $OUT/capture > $OUT/capture.log 2>&1; echo $? > $OUT/capture.rc
mkdir -p $OUT/sos
timeout 300 sos report --batch --quiet -o gfs2,dlm,kernel,corosync -k dlm.lockdump=on \
  --tmp-dir $OUT/sos --label $N > $OUT/sos.log 2>&1; echo $? > $OUT/sos.rc
lab_barrier done
poweroff -f
