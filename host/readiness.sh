#!/usr/bin/env bash
# Runs the readiness check on the GPU host, for a server that listens on loopback only:
# the check's Python runs in the engine image on the host network. The API key comes on
# stdin and goes on the container's stdin, never into an argument or a -e value (argv is
# visible in ps). When the check fails, the unit's journal tail follows its message.
# Sent as `bash -c '<text>' readiness.sh --image IMG --unit UNIT --code SRC -- ARGS...`.
set -euo pipefail

readonly USAGE="usage: readiness.sh --image IMAGE --unit UNIT_NAME [--generation ID] --code PYTHON_SOURCE -- [CHECK_ARGS...]  (the API key on stdin)"
# The engine image's virtualenv: its Python has requests/httpx, the host's may have neither.
readonly PYTHON=/opt/venv/bin/python
readonly JOURNAL_LINES=50

usage() {
  printf 'readiness.sh: %s\n%s\n' "$1" "$USAGE" >&2
  exit 2
}

parse_args() {
  image="" unit="" code=""
  while (($# > 0)) && [[ $1 != -- ]]; do
    case "$1" in
      --image | --unit | --code | --generation)
        (($# >= 2)) || usage "$1 needs a value"
        ;;&
      --image) image=$2 ;;
      --unit) unit=$2 ;;
      --code) code=$2 ;;
      # Only there so that each restart of the unit (a new generation) re-runs the check.
      --generation) ;;
      *) usage "unknown argument '$1'" ;;
    esac
    shift 2
  done
  (($# > 0)) || usage "missing -- before the check's arguments"
  [[ -n $image ]] || usage "--image is required"
  [[ -n $unit ]] || usage "--unit is required"
  [[ -n $code ]] || usage "--code is required"
  shift
  check_args=("$@")
}

main() {
  parse_args "$@"
  local rc=0
  # stdin (the key) is inherited by docker run -i and so reaches the check's stdin.
  docker run --rm -i --network host --entrypoint "$PYTHON" "$image" -c "$code" \
    "${check_args[@]}" || rc=$?
  if ((rc != 0)); then
    printf 'readiness: the check failed (exit %d); last %d lines of the %s journal:\n' \
      "$rc" "$JOURNAL_LINES" "$unit" >&2
    # The check's exit code is the error to report: an unreadable journal must not mask it.
    journalctl -u "$unit" -n "$JOURNAL_LINES" --no-pager >&2 || true
    exit "$rc"
  fi
}

main "$@"
