#!/usr/bin/env bash
# The real-Slurm test: a one-node Slurm on localhost (tests/slurm/cluster.sh), the
# project's profile workflow/profiles/slurm plus the CI overlay tests/slurm/ci-profile, and
#   1. a training job killed by SIGKILL and one cancelled with scancel are reported as failed
#      within a minute (never a hang), and each retry asks for more memory and time;
#   2. a wrong SBATCH_ACCOUNT or GPU type stops the run at once with a clear message;
#   3. the real DAG through sbatch, on a copy of a fresh local smoke run: one training job
#      retrained (its GPU request) and every CPU rule forced, so each CPU bundle is submitted once
#      (about 10 sbatch jobs; their number is the dry-run's, asserted); every job is in sacct as
#      COMPLETED, every training job held the (fake) GPU and trained on the CPU, and the Parquet
#      tables equal the local run's.
# 1 and 2 use the throwaway DAG in tests/slurm/toy (seconds); 3 the real one, in a copy of the
# repository, so that results/ here is never touched.
#
#   bash tests/slurm/run.sh             # everything; as root
#   bash tests/slurm/run.sh --full-dag  # 3 with the whole smoke DAG through sbatch (38 jobs)
#   bash tests/slurm/run.sh --toy       # 1, 2 and a full run of the toy DAG instead of 3
#
# The local smoke run is never made here: ATTNRANK_SMOKE_RUN (or ATTNRANK_LOCAL_SMOKE) names it
# (CI: the one pytest made), else the copy pytest left or this repository; it must be current
# (`snakemake -n` has nothing to do), or the test fails saying so.
# Every daemon started is stopped on exit; every wait and run is bounded by a timeout.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$REPO/tests/slurm
VENV=$REPO/.venv
PY=$VENV/bin/python
CI_PROFILE=$HERE/ci-profile
WORK=$(mktemp -d /tmp/attnrank-slurm.XXXXXX)
MODE=${1:-small}
case $MODE in small | --full-dag | --toy) ;; *) echo "usage: $0 [--full-dag | --toy]" >&2; exit 2 ;; esac
RETRAIN=minip/train/length_sweep/N2  # the training job the small Slurm DAG reruns
SMOKE_LIMIT=${SLURM_TEST_SMOKE_LIMIT:-1800}  # seconds for one smoke run (a hang bound; ≈ 700 s alone)
export PATH=$VENV/bin:$PATH
unset SNAKEMAKE_PROFILE                      # no user profile in the way

T0=$SECONDS
declare -a TIMES=()
PASSED=0 CURRENT=""
log() { printf '[slurm-test %s] %s\n' "$(date +%T)" "$*"; }
timed() {  # timed NAME COMMAND...: run, record the wall time
    local name=$1 t=$SECONDS; shift
    log "== $name"
    CURRENT=$name
    "$@"
    TIMES+=("$(printf '%-50s %4ds' "$name" $((SECONDS - t)))")
    echo "ci: Slurm test, $name took $((SECONDS - t)) s"
    CURRENT=""
}
check() { timed "$@"; PASSED=$((PASSED + 1)); }  # a step that is a test

finish() {
    local rc=$?
    set +e
    if ((rc != 0)); then
        log "FAILED (exit $rc); cluster daemons' logs:"
        bash "$HERE/cluster.sh" logs
    fi
    bash "$HERE/cluster.sh" down
    log "wall times:"
    printf '    %s\n' "${TIMES[@]}"
    printf '    %-50s %4ds\n' "total" $((SECONDS - T0))
    if ((rc == 0)) && [[ -z ${KEEP_WORK:-} ]]; then rm -rf "$WORK"; else log "kept $WORK"; fi
    if ((rc == 0)); then
        log "PASSED"
        echo "slurm: $PASSED passed, 0 failed"
    else
        log "FAILED${CURRENT:+ in: $CURRENT}"
        echo "slurm: $PASSED passed, 1 failed"
    fi
    exit "$rc"
}
trap finish EXIT

# snakemake_in DIR LOG LIMIT ARGS...: run Snakemake in DIR, bounded; its exit status is returned.
snakemake_in() {
    local dir=$1 out=$2 limit=$3; shift 3
    local rc=0
    (cd "$dir" && timeout -k 20 "$limit" "$VENV/bin/snakemake" "$@") >"$out" 2>&1 </dev/null \
        || rc=$?
    if ((rc == 124 || rc == 137)); then
        log "Snakemake ran past ${limit}s (a hang?); last lines of $out:"
        tail -n 40 "$out"
        exit 1
    fi
    return "$rc"
}

# The pipeline's working tree (what git tracks or would track), without results/ and tests/.
copy_repo() {
    mkdir -p "$1"
    (cd "$REPO" && git ls-files -z --cached --others --exclude-standard \
        | grep -zv -e '^results/' -e '^tests/' | xargs -0 cp --parents -t "$1" 2>/dev/null) || true
    [[ -f $1/Snakefile ]] || { log "copying the repository to $1 failed"; exit 1; }
}

toy_copy() {
    mkdir -p "$1/workflow/profiles"
    cp "$HERE"/toy/* "$1/"
    cp -r "$REPO/workflow/profiles/slurm" "$1/workflow/profiles/"
}

prepare() {
    [[ $(id -u) == 0 ]] || { log "run as root (it installs packages and starts daemons)"; exit 1; }
    [[ -x $PY ]] || make -C "$REPO" setup
    # find_spec, not import: importing the plugin asks scontrol, which waits for a controller
    if ! "$PY" -c "import importlib.util as u, sys
sys.exit(not (u.find_spec('snakemake_executor_plugin_slurm')
              and u.find_spec('snakemake_executor_plugin_slurm_jobstep')))"; then
        "$PY" -m pip install -q -r "$REPO/requirements-slurm.lock"
    fi
}

test_failures() {
    local dir=$WORK/toy-fail rc=0
    toy_copy "$dir"
    # with a GPU type, so that this also covers `gpu_model` (--gpus=fake:1)
    TOY_FAIL=a:kill,b:scancel ATTNRANK_SLURM_GPU_MODEL=fake snakemake_in "$dir" "$WORK/toy-fail.log" 300 \
        --profile "$CI_PROFILE" --workflow-profile workflow/profiles/slurm \
        --retries 1 --keep-going results/toy/train/a.parquet results/toy/train/b.parquet || rc=$?
    ((rc != 0)) || { log "the failing jobs did not fail the run"; exit 1; }
    "$PY" "$HERE/check.py" failures "$WORK/toy-fail.log"
}

test_wrong_settings() {
    local dir=$WORK/toy-settings var rc
    toy_copy "$dir"
    for var in SBATCH_ACCOUNT=no_such_account ATTNRANK_SLURM_GPU_MODEL=no_such_gpu; do
        rc=0
        (export "${var?}"; snakemake_in "$dir" "$WORK/toy-${var%%=*}.log" 120 \
            --profile "$CI_PROFILE" --workflow-profile workflow/profiles/slurm) || rc=$?
        ((rc != 0)) || { log "$var did not stop the run"; exit 1; }
        "$PY" "$HERE/check.py" settings-error "$WORK/toy-${var%%=*}.log" "$var"
    done
}

test_toy_run() {
    local dir=$WORK/toy
    toy_copy "$dir"
    snakemake_in "$dir" "$WORK/toy.log" 300 \
        --profile "$CI_PROFILE" --workflow-profile workflow/profiles/slurm \
        || { tail -n 60 "$WORK/toy.log"; exit 1; }
    "$PY" "$HERE/check.py" slurm-run "$WORK/toy.log"
    grep -q '"CUDA_VISIBLE_DEVICES": "[0-9]' "$dir"/results/toy/train/*.device.json \
        || { log "training jobs did not see a GPU"; exit 1; }
}

# Does DIR hold the same pipeline (code, rules, config) as this repository?
same_pipeline() {
    (cd "$REPO" && git ls-files -z --cached --others --exclude-standard -- \
        Snakefile config.yaml src workflow ':(exclude)workflow/profiles' \
        | xargs -0 -I{} cmp -s {} "$1/{}")
}

# Where a fresh local smoke run is, if any: same code and config as here, nothing left to do.
fresh_local_smoke() {
    local cand pytest_copies
    # without ATTNRANK_SMOKE_RUN, pytest makes its smoke run in a temporary folder, newest first
    pytest_copies=$(ls -dt /tmp/attnrank-smoke-* 2>/dev/null | head -n 3 || true)
    for cand in ${ATTNRANK_SMOKE_RUN:-} ${ATTNRANK_LOCAL_SMOKE:-} $pytest_copies "$REPO"; do
        [[ -d $cand/results/smoke/tables ]] || continue
        [[ $cand == "$REPO" ]] || same_pipeline "$cand" || continue
        if (cd "$cand" && timeout -k 10 300 "$VENV/bin/snakemake" -n --nolock \
                --cores 2 --config scale=smoke 2>&1) | grep -q "Nothing to be done"; then
            echo "$cand"
            return 0
        fi
    done
    return 1
}

local_smoke() {
    local ref
    if ! ref=$(fresh_local_smoke); then
        log "no current local smoke run (looked at ATTNRANK_SMOKE_RUN=${ATTNRANK_SMOKE_RUN:-unset}," \
            "ATTNRANK_LOCAL_SMOKE=${ATTNRANK_LOCAL_SMOKE:-unset}, /tmp/attnrank-smoke-*, $REPO):" \
            "make one first (pytest does, or: snakemake --cores 2 --config scale=smoke)"
        exit 1
    fi
    log "comparing with the local smoke run in $ref"
    LOCAL_REF=$ref
}

# The CPU rules (every rule but *_train and all), from the registry the rules are made from.
cpu_rules() {
    (cd "$REPO" && PYTHONPATH=src "$PY" -c "from attnrank.pipeline.registry import rule_names
print(' '.join(r for r in rule_names() if not r.endswith('_train') and r != 'all'))")
}

slurm_smoke() {
    local dir=$WORK/slurm
    local -a args=(--profile "$CI_PROFILE" --workflow-profile workflow/profiles/slurm
                   --config scale=smoke)
    copy_repo "$dir"
    if [[ $MODE == small ]]; then
        # the local run's artifacts (mtimes kept, no Snakemake metadata: as `make restore`
        # leaves them); one training job's outputs removed, every CPU rule forced
        cp -a "$LOCAL_REF/results" "$dir/"
        rm -f "$dir/results/smoke/$RETRAIN"/*.parquet* "$dir/results/smoke/$RETRAIN"/*.npz*
        touch "$WORK/copied"
        # shellcheck disable=SC2207
        args+=(--forcerun $(cpu_rules))
    fi
    snakemake_in "$dir" "$WORK/slurm-dry.log" 300 -n "${args[@]}" \
        || { tail -n 40 "$WORK/slurm-dry.log"; exit 1; }
    "$PY" "$HERE/check.py" count "$WORK/slurm-dry.log" | tee "$WORK/slurm-count.txt"
    snakemake_in "$dir" "$WORK/slurm.log" "$SMOKE_LIMIT" "${args[@]}" \
        || { tail -n 80 "$WORK/slurm.log"; exit 1; }
    "$PY" "$HERE/check.py" slurm-run "$WORK/slurm.log" \
        "$(sed -n 's/.*Slurm jobs: \([0-9]*\).*/\1/p' "$WORK/slurm-count.txt")"
    "$PY" "$HERE/check.py" provenance "$dir/results/smoke"
    if [[ $MODE == small ]]; then  # what the tables check compares was made by these jobs
        local old
        old=$(find "$dir/results/smoke/tables" "$dir/results/smoke/figures" \
            "$dir/results/smoke/$RETRAIN" -type f ! -newer "$WORK/copied")
        [[ -z $old ]] || { log "not rewritten by the Slurm run: $old"; exit 1; }
    fi
    SLURM_DIR=$dir
}

timed "install the Slurm plugin" prepare
timed "bring up Slurm (munge, mariadb, slurmdbd, ctld, d)" bash "$HERE/cluster.sh" up
check "toy: killed and cancelled jobs are reported" test_failures
check "toy: a wrong account or GPU type is a clear error" test_wrong_settings
if [[ $MODE == --toy ]]; then
    check "toy DAG through Slurm" test_toy_run
else
    timed "the local smoke run (current, made by pytest)" local_smoke
    check "smoke DAG through Slurm ($MODE)" slurm_smoke
    check "tables: Slurm == local" \
        "$PY" "$HERE/check.py" tables "$LOCAL_REF/results/smoke/tables" "$SLURM_DIR/results/smoke/tables"
fi
timed "stop every daemon" bash "$HERE/cluster.sh" down
