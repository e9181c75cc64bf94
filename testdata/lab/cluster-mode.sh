#!/bin/sh
# Lab job (../shared/lab, run-cluster.sh, two nodes; copy cluster.sh into share/ too; the
# rootfs needs sudo: `chroot $LAB/rootfs apt-get install sudo`, then build.sh again): glk's
# cluster mode over real ssh, run on n1, reaching n2 (n1 itself runs without ssh).
#  - ssh: n1 makes a key, n2 takes it for root and for the unprivileged user glkop (who may
#    run /usr/bin/glk through sudo without a password), and starts sshd; n1 learns n2's host
#    key. Node names come from /etc/hosts, members from corosync (--cluster). glkop may run
#    `glk agent` as root and nothing else: `sudo glk top` is refused (sudo-refused.txt).
#  - locks: a two-node flock cycle (n1 locks m then n, n2 locks n then m) and a cross-node
#    wait (n1 holds w for the whole run, n2 waits for it from 2 s on).
#  - n1: top --cluster --once (JSON and text), stats --cluster, doctor live --cluster, and
#    top as glkop with --sudo; ground truth: ps on each node at the same moment.
#  - capture: n1 runs capture --cluster --trace 20 while each node runs its own glk capture
#    of the same length (pcap): the host compares their glk doctor.
#  - faults, with n2's tracefs recorded before and after each: (a) n2 kills every sshd
#    (its listener and n1's session) 6 s into a capture --cluster --trace 30; (b) n2 stops
#    (SIGSTOP) every sshd 6 s into another, as a paused VM would, and resumes them once n1's
#    command has ended. n1's command must end on its own, naming n2 missing.
. /mnt/share/cluster.sh
lab_up
# Every 10 s: the kernel log, and where each glk process is (its kernel stack).
( while :; do
    dmesg > $OUT/dmesg.txt
    for p in $(pgrep glk); do
      echo "== $p $(tr '\0' ' ' < /proc/$p/cmdline) [$(cat /proc/$p/wchan)]"; cat /proc/$p/stack
    done > $OUT/glk-stacks.txt 2>&1
    sleep 10
  done ) &
# n2: the unprivileged glkop, who may run `glk agent` as root through sudo.
glkop() {
  useradd -m -s /bin/sh glkop; mkdir -p /home/glkop/.ssh; cp $S/n1.pub /home/glkop/.ssh/authorized_keys
  chown -R glkop /home/glkop/.ssh
  echo 'glkop ALL=(root) NOPASSWD: /usr/bin/glk agent *' > /etc/sudoers.d/glk; chmod 440 /etc/sudoers.d/glk
}
lab_ssh glkop
if [ $N = n1 ]; then
  ssh -o BatchMode=yes n2 true; echo $? > $OUT/ssh-n2.rc
  useradd -m -s /bin/sh glkop; cp -r /root/.ssh /home/glkop/; chown -R glkop /home/glkop/.ssh
fi
lab_shared_files m n w
D=/gfs/shared
lab_barrier go
if [ $N = n1 ]; then
  flock -x $D/m sh -c "sleep 4; flock -x $D/n true" &
  flock -x $D/w sleep 900 &
else
  flock -x $D/n sh -c "sleep 4; flock -x $D/m true" &
  (sleep 2; flock -x $D/w true) &
fi
sleep 12
tracefs() { # $1: label; what a dropped session must leave as it was
  T=/sys/kernel/tracing; [ -d $T/instances ] || T=/sys/kernel/debug/tracing
  { echo "== $1"; ls $T/instances; echo "tracing_on $(cat $T/tracing_on)"; echo "set_event:"; cat $T/set_event; } >> $OUT/tracefs.txt
}
lab_barrier truth
ps -eo pid,ppid,stat,wchan:32,comm,args > $OUT/ps.txt
tracefs before
lab_barrier measured
if [ $N = n1 ]; then
  glk top --cluster --once --json > $OUT/top.json 2> $OUT/top.err; echo $? > $OUT/top.rc
  glk top --cluster --once --plain > $OUT/top.txt 2>&1
  glk stats --cluster --limit 5 > $OUT/stats.txt 2>&1; echo $? > $OUT/stats.rc
  su glkop -c 'glk top --nodes glkop@n2 --sudo --once --json' > $OUT/top-sudo.json 2> $OUT/top-sudo.err; echo $? > $OUT/top-sudo.rc
  su glkop -c 'ssh -o BatchMode=yes n2 sudo -n glk top --once' > $OUT/sudo-refused.txt 2>&1; echo $? >> $OUT/sudo-refused.txt
  su glkop -c 'glk capture --nodes glkop@n2 --sudo --count 1 --trace 2 --trace-events syscalls:sys_enter_getppid -o /tmp/sudo-cap' > $OUT/sudo-trace.txt 2>&1; echo $? >> $OUT/sudo-trace.txt
  glk doctor live --cluster --for 8 > $OUT/doctor.txt 2>&1; echo $? > $OUT/doctor.rc
  glk doctor live --cluster --for 8 --json > $OUT/doctor.json 2> $OUT/doctor.err
fi
lab_barrier capture
glk capture --count 2 --interval 10 --trace 20 -o $OUT/pcap > $OUT/pcap.log 2>&1 &
PC=$!
if [ $N = n1 ]; then
  glk capture --cluster --count 2 --interval 10 --trace 20 -o $OUT/ccap > $OUT/ccap.log 2>&1; echo $? > $OUT/ccap.rc
fi
wait $PC; echo $? > $OUT/pcap.rc
tracefs after-captures
# (a) n2's sshd killed mid-capture.
lab_barrier fault-a
if [ $N = n1 ]; then
  S0=$(date +%s); glk capture --cluster --count 1 --trace 30 --node-timeout 10 -o $OUT/fault-a > $OUT/fault-a.log 2>&1
  echo "$? $(( $(date +%s) - S0 ))" > $OUT/fault-a.rc
else
  sleep 6; tracefs during-a; pkill -KILL sshd; sleep 3; tracefs after-a-kill
  /usr/sbin/sshd
fi
lab_barrier fault-a-done
sleep 2; tracefs after-a
# (b) n2 paused: every sshd stopped, resumed when n1's command has ended.
lab_barrier fault-b
if [ $N = n1 ]; then
  S0=$(date +%s); glk capture --cluster --count 1 --trace 30 --node-timeout 10 -o $OUT/fault-b > $OUT/fault-b.log 2>&1
  echo "$? $(( $(date +%s) - S0 ))" > $OUT/fault-b.rc
  touch $S/mark.fault-b-ended
else
  sleep 6; tracefs during-b; pkill -STOP sshd
  lab_wait fault-b-ended; pkill -CONT sshd; sleep 5
fi
lab_barrier fault-b-done
tracefs after-b
lab_barrier done
poweroff -f
