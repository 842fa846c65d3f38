#!/usr/bin/env bash
# Readiness gate, run from where `pulumi up` runs (the server listens beyond loopback).
#
#   check-ready.sh --ssh USER@HOST --ssh-port PORT [--ssh-identity FILE] [--sudo] \
#                  --unit UNIT [--generation ID] -- <components/readiness.py arguments>
#
# The API key arrives on stdin and goes on to the check's stdin, never into argv. When the
# check fails, the unit's journal tail is fetched over ssh (the same access the Docker
# provider uses) so that the failed `pulumi up` says why the server did not come up.
set -euo pipefail

usage() {
    echo "usage: $0 --ssh USER@HOST --ssh-port PORT [--ssh-identity FILE] [--sudo] --unit UNIT [--generation ID] -- CHECK-ARGS..." >&2
    exit 2
}

target="" port="22" identity="" sudo="" unit=""
while [ $# -gt 0 ]; do
    case "$1" in
        --ssh) target="${2:?}"; shift 2 ;;
        --ssh-port) port="${2:?}"; shift 2 ;;
        --ssh-identity) identity="${2:?}"; shift 2 ;;
        --sudo) sudo="sudo -n"; shift ;;
        --unit) unit="${2:?}"; shift 2 ;;
        --generation) shift 2 ;;  # only there to re-run the check after a restart
        --) shift; break ;;
        *) usage ;;
    esac
done
if [ -z "$target" ] || [ -z "$unit" ] || [ $# -eq 0 ]; then
    usage
fi

python="${QWEN38_PYTHON:-./.venv/bin/python}"
if "$python" components/readiness.py "$@"; then
    exit 0
else
    status=$?
fi

ssh_command=(ssh -o BatchMode=yes -o ConnectTimeout=15 -p "$port")
if [ -n "$identity" ]; then
    ssh_command+=(-i "$identity" -o IdentitiesOnly=yes)
fi
echo "last 50 lines of the $unit journal:" >&2
# shellcheck disable=SC2086  # $sudo is empty or two words on purpose
"${ssh_command[@]}" "$target" $sudo journalctl -u "$unit" -n 50 --no-pager >&2 \
    || echo "(could not read the journal over ssh from $target)" >&2
exit "$status"
