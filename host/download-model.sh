#!/usr/bin/env bash
# Downloads one pinned model snapshot into the cache volume, inside the engine image (its
# Python 3.12 and huggingface_hub; the host's Python may be too old or absent). The
# downloader program comes on stdin. Prints the snapshot directory, as the container sees
# it, as its last stdout line. Sent as `bash -c '<text>' download-model.sh ARGS`.
set -euo pipefail

readonly USAGE="usage: download-model.sh --image IMAGE --volume VOLUME --endpoint URL --repo ORG/NAME --revision COMMIT --max-workers N  (the downloader on stdin)"
readonly PYTHON=/opt/venv/bin/python
# HF_HOME is set explicitly so the files land in the volume whatever the image defaults to.
readonly HF_HOME_IN_CONTAINER=/root/.cache/huggingface

usage() {
  printf 'download-model.sh: %s\n%s\n' "$1" "$USAGE" >&2
  exit 2
}

parse_args() {
  image="" volume="" endpoint="" repo="" revision="" max_workers=""
  while (($# > 0)); do
    case "$1" in
      --image | --volume | --endpoint | --repo | --revision | --max-workers)
        (($# >= 2)) || usage "$1 needs a value"
        ;;&
      --image) image=$2 ;;
      --volume) volume=$2 ;;
      --endpoint) endpoint=$2 ;;
      --repo) repo=$2 ;;
      --revision) revision=$2 ;;
      --max-workers) max_workers=$2 ;;
      *) usage "unknown argument '$1'" ;;
    esac
    shift 2
  done
  [[ -n $image ]] || usage "--image is required"
  [[ $volume =~ ^[A-Za-z0-9][A-Za-z0-9_.-]+$ ]] || usage "--volume must be a Docker volume name, got '$volume'"
  [[ $endpoint =~ ^https?://[^[:space:]]+$ ]] || usage "--endpoint must be an http(s) URL, got '$endpoint'"
  [[ $repo =~ ^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$ ]] || usage "--repo must be ORG/NAME, got '$repo'"
  [[ $revision =~ ^[0-9a-f]{40}$ ]] || usage "--revision must be a 40-hex commit, got '$revision'"
  [[ $max_workers =~ ^[1-9][0-9]*$ ]] || usage "--max-workers must be a positive integer, got '$max_workers'"
}

main() {
  parse_args "$@"
  # HF_HUB_DISABLE_XET=1: the xet protocol fails behind the firewall with
  # "CAS Client Error: 401 Unauthorized"; plain HTTP through the mirror works.
  docker run --rm -i --entrypoint "$PYTHON" \
    -v "$volume:$HF_HOME_IN_CONTAINER" \
    -e "HF_HOME=$HF_HOME_IN_CONTAINER" \
    -e "HF_ENDPOINT=$endpoint" \
    -e HF_HUB_DISABLE_XET=1 \
    "$image" - --repo "$repo" --revision "$revision" --max-workers "$max_workers"
}

main "$@"
