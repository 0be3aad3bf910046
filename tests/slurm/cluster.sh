#!/usr/bin/env bash
# A single-node Slurm cluster on localhost, from Debian 12's packages, with no systemd and no
# cgroups: munged, MariaDB, slurmdbd (accounting, so `sacct` and `sacctmgr` work), slurmctld and
# slurmd with two fake GPUs. For the real-Slurm test (tests/slurm/run.sh); run as root.
#
#   bash tests/slurm/cluster.sh up      install what is missing, write the config, start daemons
#   bash tests/slurm/cluster.sh down    cancel jobs, stop every daemon `up` started
#   bash tests/slurm/cluster.sh status
#
# `up` is idempotent: it first stops whatever an earlier `up` left running, then starts from a
# wiped state directory. It never touches daemons it did not start (a munged that already
# answers is used as it is and left running). Every wait is bounded.
#
# The Slurm config must live at /etc/slurm/slurm.conf: the Slurm executor's jobstep drops
# SLURM_CONF before its inner `srun`. The files it writes there carry a marker line; it refuses
# to overwrite a slurm.conf without that marker, and `down` removes them again.
set -euo pipefail

STATE=${SLURM_CI_STATE:-/var/lib/attnrank-slurm}
ETC=/etc/slurm
MARK="# written by attnrank tests/slurm/cluster.sh"
CLUSTER=attnrank-ci
ACCOUNT=${SLURM_CI_ACCOUNT:-attnrank}
DB_PORT=${SLURM_CI_DB_PORT:-13306}
DB_PASS=attnrank-ci-only
FAKE_GPUS=(/dev/attnrank-fakegpu0 /dev/attnrank-fakegpu1)   # two, so two training jobs run at once
MUNGE_SOCKET=/run/munge/munge.socket.2
PIDS=$STATE/started.pids     # "name pid" of every daemon this script started

log() { printf '[slurm-ci %s] %s\n' "$(date +%T)" "$*"; }
die() { log "ERROR: $*"; exit 1; }

# wait_for SECONDS DESCRIPTION COMMAND...: poll COMMAND every 0.5 s until it succeeds; give up
# at once when a daemon this script started has died.
wait_for() {
    local limit=$1 what=$2; shift 2
    local deadline=$((SECONDS + limit))
    until "$@" >/dev/null 2>&1; do
        if ((SECONDS >= deadline)); then
            log "timed out after ${limit}s waiting for $what"
            return 1
        fi
        if [[ -f $PIDS ]]; then
            local name pid
            while read -r name pid; do
                if ! alive "$pid"; then
                    log "$name (pid $pid) died while waiting for $what"
                    return 1
                fi
            done <"$PIDS"
        fi
        sleep 0.5
    done
}

show_logs() {
    for f in "$STATE"/log/*.log "$STATE"/mysql-run/*.log; do
        [[ -f $f ]] || continue
        echo "----- tail of $f"
        tail -n 25 "$f" || true
    done
}

# start NAME COMMAND...: run a daemon in the foreground of a background process, log to
# $STATE/log/NAME.log, remember its pid.
start() {
    local name=$1; shift
    "$@" >>"$STATE/log/$name.log" 2>&1 </dev/null &
    echo "$name $!" >>"$PIDS"
    log "started $name (pid $!)"
}

alive() { kill -0 "$1" 2>/dev/null; }

stop_one() {
    local name=$1 pid=$2
    alive "$pid" || return 0
    # only a process that still is the daemon we started (pids get reused)
    local exe=$name; [[ $name == mariadb ]] && exe=mariadbd
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "$exe" || return 0
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + 15))
    while alive "$pid" && ((SECONDS < deadline)); do sleep 0.2; done
    if alive "$pid"; then
        log "$name (pid $pid) ignored SIGTERM for 15s; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    log "stopped $name (pid $pid)"
}

install_packages() {
    local pkgs=(slurm-wlm slurmdbd munge mariadb-server) missing=()
    for p in "${pkgs[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
            || missing+=("$p")
    done
    if ((${#missing[@]})); then
        log "installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        timeout 300 apt-get update -qq
        timeout 600 apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
    fi
    command -v slurmctld >/dev/null || die "slurmctld missing after install"
}

# The config must not outlive the daemons: with a slurm.conf whose controller is gone, every
# `scontrol` waits ~10 s for it, and the executor plugin runs `scontrol show config` whenever it is
# imported, i.e. at every start of Snakemake in a venv that has the plugin installed.
remove_configs() {
    local f
    for f in "$ETC/slurm.conf" "$ETC/gres.conf" "$ETC/slurmdbd.conf"; do
        [[ -f $f ]] && grep -qF "$MARK" "$f" && rm -f "$f"
    done
    rm -f "${FAKE_GPUS[@]}"
}

cmd_down() {
    if command -v scancel >/dev/null && [[ -f $PIDS ]] && grep -q '^slurmctld ' "$PIDS"; then
        # Jobs still running would leave slurmstepd processes behind once slurmd is gone.
        timeout 10 scancel --full --quiet --user root 2>/dev/null || true
        wait_for 20 "jobs to leave the queue" \
            bash -c '[[ -z $(squeue -h -o %i 2>/dev/null) ]]' || true
    fi
    [[ -f $PIDS ]] || { remove_configs; log "nothing to stop"; return 0; }
    # Slurm first (slurmd, slurmctld together), then what it needed (slurmdbd, mariadb, munged).
    local name pid stage
    for stage in "slurmd slurmctld" "slurmdbd mariadb munged"; do
        while read -r name pid; do
            [[ " $stage " == *" $name "* ]] && stop_one "$name" "$pid" &
        done <"$PIDS"
        wait
    done
    rm -f "$PIDS"
    remove_configs
}

write_configs() {
    mkdir -p "$ETC"
    if [[ -f $ETC/slurm.conf ]] && ! grep -qF "$MARK" "$ETC/slurm.conf"; then
        die "$ETC/slurm.conf exists and was not written by this script; not overwriting it"
    fi
    local node; node=$(hostname -s)
    # CPUs, sockets, cores, threads and RealMemory exactly as slurmd sees them.
    local hw; hw=$(slurmd -C | head -n 1 | sed -e 's/^NodeName=[^ ]* //')
    [[ $hw == *CPUs=* ]] || die "slurmd -C printed no hardware line"

    # Fake GPUs: a gres needs a File= that is a character device (a gres without a File leaves
    # jobs pending forever). Same numbers as /dev/null, so nothing can misuse them. The jobs see
    # CUDA_VISIBLE_DEVICES, find no CUDA, and train on the CPU.
    local dev gres_lines=""
    for dev in "${FAKE_GPUS[@]}"; do
        if [[ ! -c $dev ]]; then
            rm -f "$dev"
            mknod -m 666 "$dev" c 1 3
        fi
        gres_lines+="NodeName=$node Name=gpu Type=fake File=$dev"$'\n'
    done

    cat >"$ETC/slurm.conf" <<EOF
$MARK
ClusterName=$CLUSTER
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# no systemd, no cgroups
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
KillWait=5
InactiveLimit=0
MinJobAge=300
SchedulerParameters=sched_interval=2
# accounting through slurmdbd: sacct (the test's checks, the plugin's fallback status command)
# and sacctmgr (accounts; a job under an unknown account is refused) need it
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePass=$MUNGE_SOCKET
AccountingStorageEnforce=associations
AccountingStorageTRES=gres/gpu
AccountingStoreFlags=job_comment
JobCompType=jobcomp/none
GresTypes=gpu
NodeName=$node NodeAddr=127.0.0.1 $hw Gres=gpu:fake:${#FAKE_GPUS[@]} State=UNKNOWN
PartitionName=ci Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
    cat >"$ETC/gres.conf" <<EOF
$MARK
$gres_lines
EOF
    cat >"$ETC/slurmdbd.conf" <<EOF
$MARK
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
DbdHost=localhost
DbdAddr=127.0.0.1
SlurmUser=root
PidFile=$STATE/run/slurmdbd.pid
LogFile=$STATE/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
EOF
    chmod 600 "$ETC/slurmdbd.conf"
}

start_munge() {
    if [[ -S $MUNGE_SOCKET ]] && munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
        log "munged already answers on $MUNGE_SOCKET; using it"
        return 0
    fi
    [[ -f /etc/munge/munge.key ]] || { mungekey --create --keyfile /etc/munge/munge.key; }
    chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
    # munged refuses a socket whose parent directories are not world-executable
    install -d -o munge -g munge -m 0755 /run/munge /var/lib/munge /var/log/munge
    rm -f "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock"
    start munged setpriv --reuid=munge --regid=munge --init-groups /usr/sbin/munged --foreground
    wait_for 15 munged bash -c "munge -n </dev/null | unmunge" || { show_logs; die "munged"; }
}

start_mariadb() {
    local data=$STATE/mysql run=$STATE/mysql-run
    local sock=$run/mysqld.sock
    install -d -o mysql -g mysql "$data" "$run"
    mariadb-install-db --no-defaults --user=mysql --datadir="$data" \
        --auth-root-authentication-method=socket --skip-test-db >"$STATE/log/mariadb-install.log" 2>&1 \
        || { tail "$STATE/log/mariadb-install.log"; die "mariadb-install-db failed"; }
    start mariadb /usr/sbin/mariadbd --no-defaults --user=mysql --datadir="$data" \
        --socket="$sock" --port="$DB_PORT" --bind-address=127.0.0.1 --skip-name-resolve \
        --pid-file="$run/mariadb.pid" --log-error="$run/mariadb.log" \
        --innodb-buffer-pool-size=64M --skip-log-bin
    wait_for 60 "mariadb" mariadb-admin --no-defaults --socket="$sock" -u root ping \
        || { show_logs; die "mariadb did not come up"; }
    mariadb --no-defaults --socket="$sock" -u root <<EOF
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
FLUSH PRIVILEGES;
EOF
}

cmd_up() {
    [[ $(id -u) == 0 ]] || die "run as root"
    local t0=$SECONDS
    trap 'if (($? != 0)); then log "bring-up failed; stopping what it started"; cmd_down; fi' EXIT
    install_packages
    cmd_down >/dev/null 2>&1 || true     # whatever an earlier `up` left running
    rm -rf "$STATE"
    mkdir -p "$STATE"/{ctld,d,run,log}
    chmod 755 "$STATE" "$STATE/run" "$STATE/log"
    : >"$PIDS"
    write_configs
    start_munge
    start_mariadb
    start slurmdbd /usr/sbin/slurmdbd -D
    wait_for 60 "slurmdbd" sacctmgr -n list cluster || { show_logs; die "slurmdbd did not answer"; }
    sacctmgr -i -Q add cluster "$CLUSTER" >/dev/null
    sacctmgr -i -Q add account "$ACCOUNT" cluster="$CLUSTER" Description="attnrank CI" \
        Organization=attnrank >/dev/null
    sacctmgr -i -Q add user root account="$ACCOUNT" DefaultAccount="$ACCOUNT" \
        cluster="$CLUSTER" >/dev/null
    start slurmctld /usr/sbin/slurmctld -D -i
    wait_for 60 "slurmctld" scontrol ping || { show_logs; die "slurmctld did not answer"; }
    start slurmd /usr/sbin/slurmd -D
    wait_for 60 "the node to become idle" \
        bash -c '[[ $(sinfo -h -N -o %T) == idle ]]' || {
        sinfo -N -l || true; show_logs; die "the node did not become idle"; }
    trap - EXIT
    log "cluster up in $((SECONDS - t0))s: $(sinfo -h -N -o '%N %T cpus=%c mem=%m gres=%G')"
}

cmd_status() {
    [[ -f $PIDS ]] && while read -r name pid; do
        if alive "$pid"; then echo "$name $pid running"; else echo "$name $pid dead"; fi
    done <"$PIDS"
    sinfo -N -l 2>/dev/null || true
}

case ${1:-} in
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    logs) show_logs ;;
    *) echo "usage: $0 up|down|status|logs" >&2; exit 2 ;;
esac
