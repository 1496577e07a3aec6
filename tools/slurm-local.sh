#!/usr/bin/env bash
# tools/slurm-local.sh start|stop|status: a single-node Slurm on this machine, for trying and testing
# `stc dse --slurm` without a cluster. `start` installs Debian's slurm-wlm and munge when they are
# missing (needs root), writes /etc/slurm/slurm.conf for this host (one node, every core, one partition
# `local`), starts munged (unless one runs), slurmctld and slurmd, and waits for the node to take jobs.
# `stop` cancels the jobs, stops what `start` started and removes what it wrote; it touches nothing when
# the configuration is not its own. Without systemd: the daemons are started directly.
set -euo pipefail

conf=/etc/slurm/slurm.conf
marker="# written by tools/slurm-local.sh"
state=/var/lib/stc-slurm-local

die() {
  echo "slurm-local: error: $*" >&2
  exit 1
}

as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

ours() { [[ -f $conf ]] && grep -qF "$marker" "$conf"; }

install_packages() {
  if [[ -x /usr/bin/sbatch && -x /usr/sbin/slurmctld && -x /usr/sbin/slurmd && -x /usr/sbin/munged ]]; then
    return
  fi
  echo "slurm-local: installing slurm-wlm and munge"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null ||
    die "apt-get update failed"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge >/dev/null ||
    die "apt-get could not install slurm-wlm and munge"
}

write_config() {
  local host cpus mem
  host=$(hostname -s)
  cpus=$(nproc)
  mem=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 * 9 / 10))
  as_root mkdir -p /etc/slurm "$state"/{ctld,d,log}
  as_root tee "$conf" >/dev/null <<EOF
$marker
ClusterName=stc-local
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/d
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/log/slurmctld.log
SlurmdLogFile=$state/log/slurmd.log
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
  # cgroup.conf is read even with the cgroup plugins off; an empty one keeps slurmd quiet.
  [[ -f /etc/slurm/cgroup.conf ]] || echo "$marker" | as_root tee /etc/slurm/cgroup.conf >/dev/null
}

# munged: one already running is used and left alone; one started here is stopped by `stop`.
munge_works() { munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; }

start_munge() {
  for _ in $(seq 50); do # one that is leaving (stopped a moment ago): let it go
    munge_works && return
    pgrep -x munged >/dev/null || break
    sleep 0.1
  done
  pgrep -x munged >/dev/null && die "a munged runs here but does not answer (see /var/log/munge/munged.log)"
  as_root mkdir -p /run/munge /var/log/munge /var/lib/munge
  as_root chown munge:munge /run/munge /var/log/munge /var/lib/munge
  as_root chmod 0755 /run/munge
  if [[ ! -s /etc/munge/munge.key ]]; then
    as_root /usr/sbin/mungekey --create >/dev/null
    as_root touch "$state/munge-key.ours"
  fi
  as_root chown munge:munge /etc/munge/munge.key
  as_root chmod 0400 /etc/munge/munge.key
  as_root runuser -u munge -- /usr/sbin/munged
  as_root touch "$state/munged.ours"
  for _ in $(seq 50); do
    munge_works && return
    sleep 0.1
  done
  die "munged did not start (see /var/log/munge/munged.log)"
}

start() {
  if [[ -f $conf ]] && ! ours; then
    die "$conf exists and was not written by this script; not touching a real cluster's configuration"
  fi
  if ! ours && { pgrep -x slurmctld >/dev/null || pgrep -x slurmd >/dev/null; }; then
    die "Slurm daemons already run here, not started by this script; leaving them alone"
  fi
  install_packages
  as_root mkdir -p "$state"
  write_config
  start_munge
  if pgrep -x slurmctld >/dev/null; then
    as_root scontrol reconfigure >/dev/null 2>&1 || true # ours, already running: the new configuration
  else
    as_root /usr/sbin/slurmctld
  fi
  pgrep -x slurmd >/dev/null || as_root /usr/sbin/slurmd
  local host
  host=$(hostname -s)
  for _ in $(seq 300); do
    if sinfo -h -N -n "$host" -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then
      echo "slurm-local: running: partition local, node $host, $(nproc) CPUs (logs in $state/log)"
      return
    fi
    # A node left down by an earlier run on this machine: take it back.
    as_root scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true
    sleep 0.2
  done
  die "the node did not come up: see $state/log/slurmctld.log and $state/log/slurmd.log"
}

# Stops the process in a pid file: SIGTERM, then SIGKILL if it has not left within five seconds.
stop_pid() {
  local pid
  pid=$(cat "$1" 2>/dev/null) || return 0
  [[ -n $pid ]] || return 0
  as_root kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  as_root kill -KILL "$pid" 2>/dev/null || true
}

stop() {
  if ! ours; then
    echo "slurm-local: no Slurm of this script's runs here; nothing stopped"
    return
  fi
  # The jobs first, so that no task outlives its daemons.
  squeue -h -o %A 2>/dev/null | xargs -r scancel 2>/dev/null || true
  for _ in $(seq 50); do
    [[ -z $(squeue -h 2>/dev/null) ]] && break
    sleep 0.1
  done
  stop_pid "$state/slurmd.pid"
  stop_pid "$state/slurmctld.pid"
  if [[ -f $state/munged.ours ]]; then stop_pid /run/munge/munged.pid; fi
  if [[ -f $state/munge-key.ours ]]; then as_root rm -f /etc/munge/munge.key; fi
  as_root rm -f "$conf"
  if grep -qF "$marker" /etc/slurm/cgroup.conf 2>/dev/null; then as_root rm -f /etc/slurm/cgroup.conf; fi
  as_root rm -rf "$state"
  echo "slurm-local: stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) sinfo && squeue ;;
  *)
    echo "usage: tools/slurm-local.sh start|stop|status" >&2
    exit 1
    ;;
esac
