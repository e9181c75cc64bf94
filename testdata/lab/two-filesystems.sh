#!/bin/sh
# Lab job (../shared/lab, run-cluster.sh, two nodes; copy cluster.sh into share/ too, and
# an older glk as share/glk-old when comparing): a node with two GFS2 filesystems, as
# production nodes often have. n1 splits the shared disk in two (an MBR written with
# python3: the lab has no sfdisk) and makes lab:gfs on /dev/vda1 and lab:data on
# /dev/vda2; both nodes mount both (/gfs, /data). On lab:gfs, a two-node flock deadlock
# (n1 holds A and waits for B, n2 holds B and waits for A; they never end). On lab:data,
# both nodes append to data/hot over and over: its inode glock goes back and forth, and
# nothing waits for long. They append to gfs/hot as well, the first file of lab:gfs as
# data/hot is of lab:data: the two filesystems are alike, so the two files have the same
# inode number and glock (2/...), and a trace holds both devices' DLM round trips of it.
# Each node captures (glk capture --count 3 --interval 3 --trace 8: DIR/lab_data/NODE and
# DIR/lab_gfs/NODE, the trace beside the first), runs gfs2_lockcapture once and `sos report
# -o gfs2,dlm,process` with the lock dump options (sos/); inodes.txt has the files' inode
# numbers. Then on n1, saved in
# $OUT/runs as G-WHAT.out, .err and .rc:
#   both        glk analyze on both nodes' captures, no --fs
#   gfs, data   glk analyze --json --fs gfs|data on both nodes' captures
#   doctor-gfs, doctor-data    glk doctor --json --fs ... on the same
#   lockcapture glk analyze --json --fs data on both nodes' gfs2_lockcapture outputs
#   sos-both, sos-data, sos-gfs    glk analyze of both nodes' sos reports: no --fs
#               (refused, naming both), --json --fs data, --json --fs gfs
#   doctor-live glk doctor live, and doctor-live-cluster glk doctor live --cluster (no
#               --fs: refused before they capture), and doctor-live-data glk doctor live
#               --fs data --for 4 --json
#   ccap-gfs    glk capture --cluster (over ssh: n2's agent) into $OUT/ccap, then glk
#               analyze --json --fs gfs on it
#   top-live, top-live-gfs, top-debugfs-gfs, top-live-nosuch    glk top --once --json
#               on this node's live debugfs: both filesystems; --fs gfs; --fs lab:gfs of
#               /sys/kernel/debug/gfs2; --fs lab:nosuch (refused, naming both). Beside
#               them live-glocks-FS.txt, each filesystem's G: lines counted at once after
#   stats-live-data    glk stats --json --limit 0 --fs data
#   top-caps-gfs       glk top --once --json --limit 0 --fs gfs on both nodes' captures
#   top-cluster-gfs, stats-cluster-data    glk top --cluster --fs gfs and glk stats
#               --cluster --fs data (over ssh: n2's agent)
#   trace-live  first of all, while both nodes append to both hot files again: glk trace
#               --events gfs2,dlm --summary --duration 8 --output runs/trace-live.txt (both
#               filesystems' events; tracing_on.txt and instances.txt after it), then
#               analyze-trace (glk analyze of that trace alone: refused, it names no
#               filesystem) and stats-trace-live (glk stats --trace of it); the truth
#               beside it: sysfs-ids.txt (each /sys/fs/gfs2/TABLE/id), dlm-ids.txt (each
#               /sys/kernel/dlm/LOCKSPACE/id), dlm_tool_ls.txt
#   trace-capture, trace-alone    glk trace --summary of this node's captured trace, in
#               its capture (rows named by lock table) and copied out of it (by device
#               and lockspace)
#   data-nols   glk analyze --json --fs data on a copy of the captures whose cluster.txt
#               has no dlm_tool ls (the lockspace id derived from its name): as data
#   stats-trace, stats-trace-json    glk stats --trace of both nodes' traces (both
#               filesystems' events, kept apart by lock table), text and --json --limit 0;
#               stats-trace-alone, of copies of both out of their captures (by device)
#   old         glk-old analyze --json on both nodes' captures (when share/glk-old is there)
# With share/n2-loop, n2 mounts lab:data through a loop device over /dev/vda2 (direct I/O,
# so no page cache stands between it and n1's writes): the same filesystem is 254,2 on n1
# and 7,N on n2, and glk must join the nodes' traces by lock table, not device number. The
# lab's initrd has no loop module: put the kernel's, uncompressed, in share/loop.ko.
# Expected: no --fs names both filesystems and reads neither; --fs gfs has the flock waiters
# stuck and none of lab:data's glocks, --fs data has data/hot's inode glock contended, no
# stuck waiter, and no lab:gfs glock in its traces; stats --trace has the hot glock once per
# device, each with its device's gfs2_glock_lock_time lines.
. /mnt/share/cluster.sh
lab_network
lab_cluster
if [ $N = n1 ]; then
  python3 -c "
import struct
m = bytearray(512)
for i, (lba, n) in enumerate([(2048, 2095104), (2097152, 2095104)]):
    m[446 + 16 * i:462 + 16 * i] = struct.pack('<B3sB3sII', 0, bytes(3), 0x83, bytes(3), lba, n)
m[510:512] = b'\x55\xaa'
with open('/dev/vda', 'r+b') as f:
    f.write(m)
"
  blockdev --flushbufs /dev/vda; blockdev --rereadpt /dev/vda
  mkfs.gfs2 -O $(cat $S/mkfs_opts 2>/dev/null) -p lock_dlm -t lab:gfs -j 2 /dev/vda1 > $OUT/mkfs.txt 2>&1
  mkfs.gfs2 -O $(cat $S/mkfs_opts 2>/dev/null) -p lock_dlm -t lab:data -j 2 /dev/vda2 >> $OUT/mkfs.txt 2>&1
  touch $S/mark.mkfs
fi
lab_wait mkfs
[ $N = n2 ] && { blockdev --flushbufs /dev/vda; blockdev --rereadpt /dev/vda; }
ls -l /dev/vda* > $OUT/devices.txt
for m in "vda1 /gfs" "vda2 /data"; do
  set -- $m; mkdir -p $2; i=0; dev=/dev/$1
  if [ $N = n2 ] && [ $1 = vda2 ] && [ -f $S/n2-loop ]; then
    insmod $S/loop.ko 2>/dev/null || modprobe loop 2>/dev/null; dev=$(losetup --direct-io=on -f --show /dev/vda2) || dev=/dev/vda2
    echo "$dev" > $OUT/loop.txt; losetup -l >> $OUT/loop.txt 2>&1
  fi
  until mount -t gfs2 $dev $2; do sleep 2; i=$((i+1)); [ $i -gt 60 ] && { echo MOUNT FAILED; poweroff -f; }; done
done
cp $S/glk /usr/bin/glk; chmod +x /usr/bin/glk
lab_ssh
lab_barrier mounted
if [ $N = n1 ]; then touch /gfs/hot /data/hot; mkdir -p /gfs/shared; touch /gfs/shared/A /gfs/shared/B; touch $S/mark.files; fi
lab_wait files
ls -li /gfs /gfs/shared /data > $OUT/inodes.txt
if [ $N = n1 ]; then flock -x /gfs/shared/A sh -c 'sleep 4; flock -x /gfs/shared/B true' & fi
if [ $N = n2 ]; then flock -x /gfs/shared/B sh -c 'sleep 4; flock -x /gfs/shared/A true' & fi
( end=$(($(date +%s) + 40)); i=0
  while [ $(date +%s) -lt $end ]; do i=$((i+1)); echo "$N $i" >> /data/hot; echo "$N $i" >> /gfs/hot; done
  echo $i > $OUT/appends.txt ) &
sleep 8
glk capture --count 3 --interval 3 --trace 8 -o $OUT/capture > $OUT/capture.log 2>&1; echo $? > $OUT/capture.rc
timeout 300 gfs2_lockcapture -y -q -r 1 -s 1 -o $OUT/lockcapture > $OUT/lockcapture.log 2>&1; echo $? > $OUT/lockcapture.rc
mkdir -p $OUT/sos
timeout 300 sos report --batch --quiet -o gfs2,dlm,process -k gfs2.lockdump=on -k dlm.lockdump=on \
  --tmp-dir $OUT/sos --label $N > $OUT/sos.log 2>&1; echo $? > $OUT/sos.rc
cat /proc/locks > $OUT/proc-locks.txt
find $OUT/capture $OUT/lockcapture $OUT/sos > $OUT/listing.txt 2>&1
lab_barrier captured
# Both nodes append to both hot files again for 15 s, for n1's live trace below.
( end=$(($(date +%s) + 15))
  while [ $(date +%s) -lt $end ]; do echo "$N" >> /data/hot; echo "$N" >> /gfs/hot; done ) &
if [ $N = n1 ]; then
  R=$OUT/runs; mkdir -p $R
  CAPS="$OUT/capture $S/out-$TAG-n2/capture"
  LOCKCAPS="$(ls -d $OUT/lockcapture/* $S/out-$TAG-n2/lockcapture/* | head -2)"
  run() { w=$1; shift; timeout 120 "$@" > $R/$w.out 2> $R/$w.err; echo $? > $R/$w.rc; }
  run glk-trace-live glk trace --events gfs2,dlm --summary --duration 8 --output $R/trace-live.txt
  cat /sys/kernel/tracing/tracing_on > $R/tracing_on.txt 2>&1; ls /sys/kernel/tracing/instances > $R/instances.txt 2>&1
  run glk-analyze-trace glk analyze $R/trace-live.txt
  run glk-stats-trace-live glk stats --trace $R/trace-live.txt
  for d in /sys/fs/gfs2/*; do echo "${d##*/} $(cat $d/id)"; done > $R/sysfs-ids.txt 2>&1
  for d in /sys/kernel/dlm/*; do echo "${d##*/} $(cat $d/id)"; done > $R/dlm-ids.txt 2>&1
  dlm_tool ls > $R/dlm_tool_ls.txt 2>&1
  run glk-trace-capture glk trace --input $OUT/capture/lab_data/n1/trace_pipe.txt --summary
  mkdir -p $OUT/alone; cp $OUT/capture/lab_data/n1/trace_pipe.txt $OUT/alone/
  run glk-trace-alone glk trace --input $OUT/alone/trace_pipe.txt --summary
  mkdir -p $OUT/nols; cp -r $OUT/capture $OUT/nols/n1; cp -r $S/out-$TAG-n2/capture $OUT/nols/n2
  for f in $(find $OUT/nols -name cluster.txt); do sed -i '/^## dlm_tool ls/,$d' $f; done
  grep -c dlm_tool $(find $OUT/nols -name cluster.txt) > $R/nols-check.txt
  run glk-both glk analyze $CAPS
  run glk-gfs glk analyze --json --limit 0 --fs gfs $CAPS
  run glk-data glk analyze --json --limit 0 --fs data $CAPS
  run glk-data-nols glk analyze --json --limit 0 --fs data $OUT/nols/n1 $OUT/nols/n2
  run glk-doctor-gfs glk doctor --json --fs lab:gfs $CAPS
  run glk-doctor-data glk doctor --json --fs lab:data $CAPS
  run glk-lockcapture glk analyze --json --limit 0 --fs data $LOCKCAPS
  SOS="$(ls $OUT/sos/sosreport-*.tar.* $S/out-$TAG-n2/sos/sosreport-*.tar.* | grep -v -e '\.md5$' -e '\.sha256$')"
  run glk-sos-both glk analyze $SOS
  run glk-sos-data glk analyze --json --limit 0 --fs data $SOS
  run glk-sos-gfs glk analyze --json --limit 0 --fs gfs $SOS
  run glk-doctor-live glk doctor live
  run glk-doctor-live-cluster glk doctor live --cluster
  run glk-doctor-live-data glk doctor live --fs data --for 4 --json
  run glk-ccap-capture glk capture --cluster --count 2 --interval 2 -o $OUT/ccap
  find $OUT/ccap > $R/ccap-listing.txt
  run glk-ccap-gfs glk analyze --json --limit 0 --fs gfs $OUT/ccap
  run glk-top-live glk top --once --json --limit 0
  run glk-top-live-gfs glk top --once --json --limit 0 --fs gfs
  for fs in lab:gfs lab:data; do grep -c '^G:' "/sys/kernel/debug/gfs2/$fs/glocks" > $R/live-glocks-$fs.txt; done
  run glk-top-debugfs-gfs glk top --once --json --limit 0 --fs lab:gfs /sys/kernel/debug/gfs2
  run glk-top-live-nosuch glk top --once --fs lab:nosuch
  run glk-stats-live-data glk stats --json --limit 0 --fs data
  run glk-top-caps-gfs glk top --once --json --limit 0 --fs gfs $CAPS
  TRACES="$OUT/capture/lab_data/n1/trace_pipe.txt $S/out-$TAG-n2/capture/lab_data/n2/trace_pipe.txt"
  run glk-stats-trace glk stats --limit 0 $(for t in $TRACES; do echo --trace $t; done)
  run glk-stats-trace-json glk stats --json --limit 0 $(for t in $TRACES; do echo --trace $t; done)
  mkdir -p $OUT/alone2; cp $S/out-$TAG-n2/capture/lab_data/n2/trace_pipe.txt $OUT/alone2/
  run glk-stats-trace-alone glk stats --json --limit 0 --trace $OUT/alone/trace_pipe.txt --trace $OUT/alone2/trace_pipe.txt
  run glk-top-cluster-gfs glk top --cluster --once --json --limit 0 --fs gfs
  run glk-stats-cluster-data glk stats --cluster --json --limit 0 --fs data
  if [ -f $S/glk-old ]; then
    cp $S/glk-old /usr/bin/glk-old; chmod +x /usr/bin/glk-old
    run glk-old-both glk-old analyze --json --limit 0 $CAPS
  fi
fi
lab_barrier done
poweroff -f
