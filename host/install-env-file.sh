#!/usr/bin/env bash
# Installs a secret as VARNAME=value in a root-only env file. The value comes on stdin and
# is never echoed nor put on a command line (printf is a builtin: no process sees it in
# argv). Prints `changed` or `unchanged`. Sent as `bash -c '<text>' install-env-file.sh ARGS`.
set -euo pipefail

readonly USAGE="usage: install-env-file.sh PATH VARNAME  (the value on stdin)"
# The file is sourced by sh in the container's entrypoint and may be read by systemd or
# `docker --env-file`: only characters that all three take literally are allowed.
readonly VALUE_CHARS='A-Za-z0-9._+/=:-'

die() {
  printf 'install-env-file: %s\n' "$*" >&2
  exit 1
}

usage() {
  printf 'install-env-file.sh: %s\n%s\n' "$1" "$USAGE" >&2
  exit 2
}

parse_args() {
  (($# == 2)) || usage "expected 2 arguments, got $#"
  path=$1 var=$2
  [[ $path == /* && $path != */ ]] || usage "PATH must be an absolute file path, got '$path'"
  [[ $var =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || usage "VARNAME must be a shell variable name, got '$var'"
}

# Command substitution drops the trailing newline(s) the caller may have sent.
read_value() {
  value=$(cat)
  [[ -n $value ]] || die "no value for $var on stdin: refusing to install an empty secret"
  [[ $value =~ ^[$VALUE_CHARS]+$ ]] ||
    die "the value for $var must be one line of the characters [$VALUE_CHARS]"
}

ensure_dir() {
  [[ ! -d $path ]] || die "$path is a directory, expected a file path"
  dir=${path%/*}
  dir=${dir:-/}
  [[ -d $dir ]] || install -d -m 0700 -o root -g root "$dir"
}

is_current() {
  [[ -f $path && "$(stat -c '%a %u %g' "$path")" == "600 0 0" ]] && cmp -s "$tmp" "$path"
}

main() {
  parse_args "$@"
  read_value
  ensure_dir
  # umask 077: the temp file is never readable by others, not even for a moment.
  umask 077
  tmp=$(mktemp "$dir/.${path##*/}.XXXXXX")
  trap 'rm -f "$tmp"' EXIT
  printf '%s=%s\n' "$var" "$value" >"$tmp"
  if is_current; then
    echo unchanged
    return
  fi
  chown root:root "$tmp"
  chmod 0600 "$tmp"
  # rename(2) in the same directory: readers see the old file or the new one, never half.
  mv -f "$tmp" "$path"
  echo changed
}

main "$@"
