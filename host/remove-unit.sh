#!/usr/bin/env bash
# Takes the service off the host: stops and disables the unit, removes its file and the env
# file. Already gone is fine (a destroy may be retried). Docker volumes are never touched:
# the model cache outlives the service, and deleting it is the Pulumi program's decision.
# Prints `changed` or `unchanged`. Sent as `bash -c '<text>' remove-unit.sh ARGS`.
set -euo pipefail

readonly USAGE="usage: remove-unit.sh UNIT_NAME UNIT_DIR ENV_FILE"

usage() {
  printf 'remove-unit.sh: %s\n%s\n' "$1" "$USAGE" >&2
  exit 2
}

parse_args() {
  (($# == 3)) || usage "expected 3 arguments, got $#"
  unit=$1 unit_dir=$2 env_file=$3
  [[ $unit =~ ^[A-Za-z0-9@_.:-]+\.(service|socket|timer|target|path|mount)$ ]] ||
    usage "UNIT_NAME must be a unit file name like qwen38.service, got '$unit'"
  [[ $unit_dir == /* ]] || usage "UNIT_DIR must be an absolute path, got '$unit_dir'"
  [[ $env_file == /* ]] || usage "ENV_FILE must be an absolute path, got '$env_file'"
}

# systemctl's own messages go to stderr: stdout is the contract.
run_systemctl() {
  systemctl "$@" >&2
}

# A unit with a file can always be stopped; without one, only what systemd still holds
# in memory: anything but inactive/failed, which includes `activating`, the wait between
# two tries of Restart=on-failure. Stopping a unit systemd does not know is an error.
may_run() {
  local state
  state=$(systemctl is-active "$unit") || true
  [[ -e $unit_dir/$unit || ! $state =~ ^(inactive|failed)$ ]]
}

main() {
  parse_args "$@"
  local path=$unit_dir/$unit changed=false
  if may_run; then
    run_systemctl stop "$unit"
    changed=true
  fi
  if [[ -e $path ]]; then
    run_systemctl disable "$unit"
    rm -f "$path"
    run_systemctl daemon-reload
    changed=true
  fi
  if [[ -e $env_file ]]; then
    rm -f "$env_file"
    changed=true
  fi
  if [[ $changed == true ]]; then echo changed; else echo unchanged; fi
}

main "$@"
