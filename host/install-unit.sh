#!/usr/bin/env bash
# Installs a systemd unit from the text on stdin, enables it and makes it run the current
# text: restarts it when the text changed (or with --restart), else starts it, which is a
# no-op when it already runs. Prints `changed` or `unchanged` and nothing else on stdout.
# Sent as `bash -c '<text>' install-unit.sh ARGS`.
set -euo pipefail

readonly USAGE="usage: install-unit.sh UNIT_NAME UNIT_DIR [--restart] [--generation ID]  (the unit text on stdin)"

die() {
  printf 'install-unit: %s\n' "$*" >&2
  exit 1
}

usage() {
  printf 'install-unit.sh: %s\n%s\n' "$1" "$USAGE" >&2
  exit 2
}

# --generation names what the unit runs (container and key ids). The script does not use
# it: it is in the command line so that a new container or key changes the command, which
# makes the deployment re-run this script (with --restart) instead of replacing it.
parse_args() {
  (($# >= 2)) || usage "expected UNIT_NAME and UNIT_DIR, got $# arguments"
  unit=$1 unit_dir=$2 restart=false
  shift 2
  while (($# > 0)); do
    case "$1" in
      --restart) restart=true; shift ;;
      --generation)
        (($# >= 2)) || usage "--generation needs a value"
        shift 2
        ;;
      *) usage "unknown argument '$1'" ;;
    esac
  done
  [[ $unit =~ ^[A-Za-z0-9@_.:-]+\.(service|socket|timer|target|path|mount)$ ]] ||
    usage "UNIT_NAME must be a unit file name like qwen38.service, got '$unit'"
  [[ $unit_dir == /* ]] || usage "UNIT_DIR must be an absolute path, got '$unit_dir'"
}

# systemctl's own messages ("Created symlink ...") go to stderr: stdout is the contract.
run_systemctl() {
  systemctl "$@" >&2
}

# Writes the text from stdin to the unit file when it differs; sets `changed`.
write_unit() {
  local path=$unit_dir/$unit
  [[ -d $unit_dir ]] || die "unit directory $unit_dir does not exist"
  tmp=$(mktemp "$unit_dir/.$unit.XXXXXX")
  trap 'rm -f "$tmp"' EXIT
  cat >"$tmp"
  [[ -s $tmp ]] || die "no unit text on stdin for $unit"
  changed=false
  if [[ -f $path ]] && cmp -s "$tmp" "$path"; then
    chmod 0644 "$path"
    return
  fi
  chmod 0644 "$tmp"
  mv -f "$tmp" "$path"
  changed=true
}

main() {
  parse_args "$@"
  write_unit
  if [[ $changed == true ]]; then
    run_systemctl daemon-reload
  fi
  run_systemctl enable "$unit"
  if [[ $changed == true || $restart == true ]]; then
    run_systemctl restart "$unit"
  else
    run_systemctl start "$unit"
  fi
  if [[ $changed == true ]]; then echo changed; else echo unchanged; fi
}

main "$@"
