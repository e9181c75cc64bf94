# Sourced by the lab jobs (../shared/lab, run-cluster.sh, two nodes n1 and n2): what every
# job does to bring up its node, so that each job says only what it tests. Copy this file
# into the lab's share/ beside job.sh; a job starts with `. /mnt/share/cluster.sh`.
#
# Sets N (this node), S (the share), TAG, OUT (share/out-TAG-NODE, made empty).
set -x
N=$(hostname); S=/mnt/share; TAG=$(cat $S/tag); OUT=$S/out-$TAG-$N; rm -rf $OUT; mkdir -p $OUT
case $N in n1) IP=10.99.0.1;; n2) IP=10.99.0.2;; esac
uname -r > $OUT/kernel.txt

# The node's network: loopback and eth0 at 10.99.0.N.
lab_network() {
  ip link set lo up; ip link set eth0 up; ip addr add $IP/24 dev eth0
}

# Waits up to $2 tries, a second apart, for the command $1 to succeed.
lab_until() {
  i=0; until sh -c "$1" 2>/dev/null; do sleep 1; i=$((i+1)); [ $i -gt $2 ] && return 1; done
}

# corosync and dlm_controld, each waited for until quorate (3 minutes at most).
lab_cluster() {
  corosync -f > $OUT/corosync.log 2>&1 &
  lab_until "corosync-quorumtool -s | grep -q 'Quorate: *Yes'" 180
  mkdir -p /dev/misc
  for d in dlm-control dlm-monitor dlm_plock; do
    m=$(awk -v n=$d '$2==n{print $1}' /proc/misc); [ -n "$m" ] && mknod /dev/misc/$d c 10 $m
  done
  dlm_controld -D 1 --enable_fencing 0 -r tcp > $OUT/dlm_controld.log 2>&1 &
  lab_until "dlm_tool status | grep -q 'quorate 1'" 180
  sleep 2
}

# n1 makes the filesystem (lock_dlm, table lab:gfs, two journals); both mount it on /gfs.
# share/mkfs_opts, when there, adds mkfs.gfs2 options: kernel 5.10 mounts only format 1801,
# and the userland's gfs2-utils (3.5) makes 1802 unless told `-o format=1801`.
lab_mount() {
  if [ $N = n1 ]; then mkfs.gfs2 -O $(cat $S/mkfs_opts 2>/dev/null) -p lock_dlm -t lab:gfs -j 2 /dev/vda > $OUT/mkfs.txt 2>&1; touch $S/mark.mkfs; fi
  lab_wait mkfs
  mkdir -p /gfs; i=0; until mount -t gfs2 /dev/vda /gfs; do sleep 2; i=$((i+1)); [ $i -gt 60 ] && { echo MOUNT FAILED; poweroff -f; }; done
}

# Waits for share/mark.$1, made by one node.
lab_wait() {
  while [ ! -f $S/mark.$1 ]; do sleep 1; done
}

# Marks this node at step $1 and waits until both nodes are.
lab_barrier() {
  touch $S/mark.$1.$N
  while [ ! -f $S/mark.$1.n1 -o ! -f $S/mark.$1.n2 ]; do sleep 1; done
}

# The usual start: network, cluster, the filesystem mounted and glk installed.
lab_up() {
  lab_network
  lab_cluster
  lab_mount
  cp $S/glk /usr/bin/glk; chmod +x /usr/bin/glk
}

# ssh from n1 to n2 as root: the nodes' names in /etc/hosts, a key n1 makes and n2 takes,
# sshd started on n2 (after running $1, a function of the job, when given: more users),
# and n2's host key known to n1.
lab_ssh() {
  printf '10.99.0.1 n1\n10.99.0.2 n2\n' >> /etc/hosts
  if [ $N = n1 ]; then
    mkdir -p /root/.ssh; ssh-keygen -q -t ed25519 -N '' -f /root/.ssh/id_ed25519
    cp /root/.ssh/id_ed25519.pub $S/n1.pub; touch $S/mark.key
  else
    lab_wait key
    mkdir -p /root/.ssh /run/sshd; cat $S/n1.pub >> /root/.ssh/authorized_keys
    if [ -n "$1" ]; then "$1"; fi
    ssh-keygen -A; /usr/sbin/sshd; touch $S/mark.sshd
  fi
  lab_wait sshd
  if [ $N = n1 ]; then
    lab_until "ssh-keyscan -T 5 n2 > /root/.ssh/known_hosts 2>/dev/null && test -s /root/.ssh/known_hosts" 60
  fi
}

# n1 makes /gfs/shared and the files named (in /gfs/shared); both nodes wait for them and
# list their inode numbers (the glock numbers) in $OUT/inodes.txt.
lab_shared_files() {
  if [ $N = n1 ]; then mkdir -p /gfs/shared; for f in "$@"; do touch /gfs/shared/$f; done; touch $S/mark.files; fi
  lab_wait files
  ls -li /gfs/shared > $OUT/inodes.txt
}

# Both nodes' usual contention, for $1 s: a line appended to shared/log and shared/ stat'ed,
# over and over (their glocks go back and forth between the nodes); the appends made are
# counted in $OUT/appends.txt.
lab_appends() {
  end=$(($(date +%s) + $1)); i=0
  while [ $(date +%s) -lt $end ]; do i=$((i+1)); echo "$N $i" >> /gfs/shared/log; stat /gfs/shared > /dev/null; done
  echo $i > $OUT/appends.txt
}

# The same gfs2 and dlm events recorded by both tools at once, in $OUT: trace-cmd record -e
# gfs2 -e dlm (the top instance, for $1 + 2 s, into trace.dat) and glk capture --count 2
# --interval $2 --trace $1 (a private instance, into capture/) side by side; lab_appends for
# $4 s after $3 s. Each tool's exit status in capture.rc and trace-cmd.rc.
lab_both_recorders() {
  cd $OUT
  # dlm tracepoints came with 5.16: trace-cmd refuses to record an event system not there.
  EV="-e gfs2"; [ -d /sys/kernel/tracing/events/dlm ] && EV="$EV -e dlm"
  trace-cmd record $EV -o $OUT/trace.dat sleep $(($1 + 2)) > $OUT/trace-cmd-record.log 2>&1 &
  T=$!
  glk capture --count 2 --interval $2 --trace $1 -o $OUT/capture > $OUT/capture.log 2>&1 &
  G=$!
  sleep $3
  lab_appends $4
  wait $G; echo $? > $OUT/capture.rc
  wait $T; echo $? > $OUT/trace-cmd.rc
}

# trace-cmd's own report of $OUT/trace.dat, beside it: report.txt (its errors in
# report.err), the text support is often given in place of the trace.dat.
lab_report() {
  trace-cmd report -i $OUT/trace.dat > $OUT/report.txt 2> $OUT/report.err
}

# A cross-node flock wait on /gfs/shared/$1: n1 holds it for $2 s (flock -x $1 sh -c
# "sleep $2"; H is that flock's pid); once it does, n2 asks for it 2 s later and waits (W is
# the waiting flock's pid, also in $OUT/waiter.pid).
lab_flock_wait() {
  if [ $N = n1 ]; then flock -x /gfs/shared/$1 sh -c "sleep $2" & H=$!; touch $S/mark.held; fi
  lab_wait held
  if [ $N = n2 ]; then sleep 2; flock -x /gfs/shared/$1 true & W=$!; echo $W > $OUT/waiter.pid; fi
}
