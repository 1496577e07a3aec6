#!/usr/bin/env bash
# tools/slurm-local.sh start|stop|status: a single-node Slurm on this machine, for trying and testing
# `stc dse --slurm` without a cluster. `start` installs Debian's slurm-wlm and munge when they are
# missing (needs root), writes /etc/slurm/slurm.conf for this host (one node, every core, one partition
# `local`), starts munged, slurmctld and slurmd, and waits for the node to take jobs. `stop` stops the
# daemons and removes what `start` wrote. Without systemd: the daemons are started directly.
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

install_packages() {
  if command -v sbatch >/dev/null && command -v slurmctld >/dev/null && command -v munged >/dev/null; then
    return
  fi
  echo "slurm-local: installing slurm-wlm and munge"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null ||
    die "apt-get update failed"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge >/dev/null ||
    die "apt-get could not install slurm-wlm and munge"
}

write_config() {
  if [[ -f $conf ]] && ! grep -qF "$marker" "$conf"; then
    die "$conf exists and was not written by this script; not touching a real cluster's configuration"
  fi
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
MaxArraySize=100001
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
  # cgroup.conf is read even with the cgroup plugins off; an empty one keeps slurmd quiet.
  [[ -f /etc/slurm/cgroup.conf ]] || echo "$marker" | as_root tee /etc/slurm/cgroup.conf >/dev/null
}

start_munge() {
  if pgrep -x munged >/dev/null; then return; fi
  as_root mkdir -p /run/munge /var/log/munge /var/lib/munge
  as_root chown munge:munge /run/munge /var/log/munge /var/lib/munge
  as_root chmod 0755 /run/munge
  [[ -s /etc/munge/munge.key ]] || as_root /usr/sbin/mungekey --create >/dev/null
  as_root chown munge:munge /etc/munge/munge.key
  as_root chmod 0400 /etc/munge/munge.key
  as_root runuser -u munge -- /usr/sbin/munged
  for _ in $(seq 50); do
    munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && return
    sleep 0.1
  done
  die "munged did not start (see /var/log/munge/munged.log)"
}

start() {
  install_packages
  write_config
  start_munge
  pgrep -x slurmctld >/dev/null || as_root /usr/sbin/slurmctld
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

stop() {
  # SIGTERM, then SIGKILL for a daemon that does not leave within five seconds (slurmd waiting on a
  # controller that has gone, say).
  local daemon
  for daemon in slurmd slurmctld munged; do
    as_root pkill -x "$daemon" 2>/dev/null || true
    for _ in $(seq 50); do
      pgrep -x "$daemon" >/dev/null || break
      sleep 0.1
    done
    as_root pkill -KILL -x "$daemon" 2>/dev/null || true
  done
  if [[ -f $conf ]] && grep -qF "$marker" "$conf"; then
    as_root rm -f "$conf"
    if grep -qF "$marker" /etc/slurm/cgroup.conf 2>/dev/null; then as_root rm -f /etc/slurm/cgroup.conf; fi
    as_root rm -rf "$state"
  fi
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
