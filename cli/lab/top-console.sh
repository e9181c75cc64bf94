#!/bin/sh
# Lab job (../shared/lab, run-cluster.sh, two nodes): the `glk top` console live on a real
# two-node GFS2, driven in tmux. n1 holds an flock for 45 s while n2 waits for it; both
# nodes run the console on live debugfs (no path: every mounted GFS2) and save screens as
# the waiter appears, grows past --stuck-after, is opened in the detail pane, and goes away.
# Needs in $S: glk, tmux and its libraries in lib/ (libevent_core, libutempter; the lab
# userland is bookworm, like the host's tmux). Screens land in out-TAG-NODE/screen-*.txt.
. /mnt/share/cluster.sh
lab_network
lab_cluster
lab_mount
cp $S/glk /usr/bin/glk; cp $S/tmux /usr/bin/tmux; chmod +x /usr/bin/glk /usr/bin/tmux
export LD_LIBRARY_PATH=$S/lib TERM=xterm-256color
lab_barrier mounted
mkdir -p /gfs/shared; touch /gfs/shared/lockfile
screen() { tmux capture-pane -p -t top > $OUT/screen-$1.txt; }
# The console, live, refreshed every second; waits over 15 s are stuck.
tmux new-session -d -s top -x 150 -y 46 "glk top -d 1 --stuck-after 15 2> $OUT/top-stderr.txt; echo EXIT=\$? > $OUT/top-exit.txt"
sleep 4; screen 0-start
# Some contention first: both nodes append to one file (DLM traffic, remote demotes).
i=0; while [ $i -lt 60 ]; do echo "$N $i" >> /gfs/shared/log; i=$((i+1)); done
lab_barrier work
if [ $N = n1 ]; then flock -x /gfs/shared/lockfile sleep 45 & F=$!; touch $S/mark.flock; fi
lab_wait flock
if [ $N = n2 ]; then sleep 2; flock -x /gfs/shared/lockfile sleep 3 & F=$!; fi
sleep 6; screen 1-waiting
glk top --once --json > $OUT/top-once.json 2> $OUT/top-once.stderr
glk top --once > $OUT/top-once.txt 2>&1
sleep 14; screen 2-stuck
tmux send-keys -t top Enter; sleep 3; screen 3-detail
tmux send-keys -t top Escape; sleep 1
wait $F
sleep 6; screen 4-after
tmux send-keys -t top q; sleep 2
cat $OUT/top-exit.txt
# SIGTERM while the console runs: it must exit cleanly.
tmux new-session -d -s term -x 150 -y 46 "glk top -d 1; echo EXIT=\$? > $OUT/term-exit.txt; stty -a > $OUT/term-stty.txt"
sleep 4; pkill -TERM -x glk; sleep 2
cat $OUT/term-exit.txt; grep -o -- '-\?icanon' $OUT/term-stty.txt
lab_barrier done
umount /gfs
ls -la $OUT
