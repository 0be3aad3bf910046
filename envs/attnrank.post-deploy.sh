#!/bin/sh
# Post-deploy script of envs/attnrank.yaml: Snakemake runs it inside the new conda environment,
# from its working directory (the repository root), after creating the environment. It installs
# this repository's package there, as `make setup` does in .venv (no dependencies: the env file
# pins them all). Snakemake runs a copy of this file (.snakemake/conda/<hash>.post-deploy.sh, or
# under --conda-prefix), so the repository is found from the working directory, never from the
# script's own location: the first of $PWD and its parents whose pyproject.toml names the project
# attnrank. ATTNRANK_ROOT overrides the search (for --directory elsewhere).
#
# `sh attnrank.post-deploy.sh --print-root` prints the folder it would install and installs nothing.
set -eu

is_root() {  # $1: a folder; true when its pyproject.toml names the project attnrank
    [ -f "$1/pyproject.toml" ] &&
        grep -Eq '^name[[:space:]]*=[[:space:]]*"attnrank"[[:space:]]*$' "$1/pyproject.toml"
}

find_root() {  # the repository root on stdout, or one line on stderr and status 1
    if [ -n "${ATTNRANK_ROOT:-}" ]; then
        if is_root "$ATTNRANK_ROOT"; then
            (cd "$ATTNRANK_ROOT" && pwd -P)
            return 0
        fi
        echo "attnrank post-deploy: ATTNRANK_ROOT=$ATTNRANK_ROOT has no pyproject.toml naming" \
            "the project attnrank" >&2
        return 1
    fi
    dir=$(pwd -P)
    while :; do
        if is_root "$dir"; then
            echo "$dir"
            return 0
        fi
        [ "$dir" = / ] && break
        dir=$(dirname "$dir")
    done
    echo "attnrank post-deploy: no pyproject.toml naming the project attnrank in $(pwd -P) or" \
        "above; run Snakemake from the repository root or set ATTNRANK_ROOT" >&2
    return 1
}

root=$(find_root)
if [ "${1:-}" = "--print-root" ]; then
    echo "$root"
    exit 0
fi
echo "attnrank post-deploy: installing the package from $root" >&2
pip install --no-deps --no-build-isolation -e "$root"
