#!/bin/sh
# Lab job (../shared/lab, run-cluster.sh, two nodes; copy cluster.sh into share/ too): glk
# exporter on both live nodes during a cross-node flock wait. Each node runs
# `glk exporter --stuck-after 15 --min-interval 1` on :9929. n1 holds an flock on shared/A
# for 50 s (flock -x A sh -c "sleep 50"); n2 asks for it 2 s later and waits. Every 5 s for
# 35 s each node scrapes its own exporter with curl (scrape-T.prom); n1 also scrapes n2's
# over the network (n2-from-n1.prom), as a Prometheus server would. The tracefs state
# (tracing_on, current_tracer, set_event, instances) is recorded before the exporter starts
# and after it stops (tracefs-before.txt, tracefs-after.txt): they must be equal. Also a
# textfile write (glk.prom), ps, /proc/locks and the DLM dump made without glk.
. /mnt/share/cluster.sh
lab_up
tracefs_state() {
  T=/sys/kernel/tracing
  echo "tracing_on $(cat $T/tracing_on)"; echo "current_tracer $(cat $T/current_tracer)"
  echo "set_event:"; cat $T/set_event; echo "instances:"; ls $T/instances
}
tracefs_state > $OUT/tracefs-before.txt 2>&1
glk exporter --trace --stuck-after 15 --min-interval 1 > $OUT/exporter.out 2> $OUT/exporter.err &
E=$!
lab_until "curl -sf http://127.0.0.1:9929/metrics > /dev/null" 30
lab_barrier mounted
lab_shared_files A
lab_flock_wait A 50
lab_appends 20 &
for t in 0 5 10 15 20 25 30 35; do
  curl -s -w '%{http_code} %{time_total}\n' -o $OUT/scrape-$t.prom http://127.0.0.1:9929/metrics >> $OUT/curl.txt
  sleep 5
done
if [ $N = n1 ]; then curl -s -o $OUT/n2-from-n1.prom http://10.99.0.2:9929/metrics; echo $? > $OUT/n2-from-n1.rc; fi
ps -eo pid,ppid,stat,wchan:32,comm > $OUT/ps.txt
cat /proc/locks > $OUT/proc-locks.txt
cat /sys/kernel/debug/dlm/gfs_locks > $OUT/dlm_locks.txt 2>&1
glk exporter --once --textfile $OUT/glk.prom --stuck-after 15 2> $OUT/textfile.err; echo $? > $OUT/textfile.rc
lab_barrier scraped
kill -TERM $E; wait $E; echo $? > $OUT/exporter.rc
tracefs_state > $OUT/tracefs-after.txt 2>&1
ls /sys/kernel/tracing/instances > $OUT/instances-after.txt 2>&1
lab_barrier done
poweroff -f
