#!/usr/bin/env bash
# Checks the GPU host before anything is written on it: the right GPU, a driver new enough
# for the CUDA 12.8 runtime, Docker with the NVIDIA runtime, and disk for what is still to
# be downloaded. On success prints key=value lines (the program exports them), nothing else.
# The program sends this text as `bash -c '<text>' preflight.sh ARGS`: no own path is used.
set -euo pipefail

readonly USAGE="usage: preflight.sh --gpu-name NAME --min-driver VERSION --need-bytes N --cache-volume VOLUME [--image IMAGE]"
# The order of these fields is the order of the values on each line nvidia-smi prints.
readonly GPU_QUERY="name,memory.total,driver_version,compute_cap"
readonly GIB=1073741824

die() {
  printf 'preflight: %s\n' "$*" >&2
  exit 1
}

usage() {
  printf 'preflight.sh: %s\n%s\n' "$1" "$USAGE" >&2
  exit 2
}

parse_args() {
  gpu_name="" min_driver="" need_bytes="" cache_volume="" image=""
  while (($# > 0)); do
    case "$1" in
      --gpu-name | --min-driver | --need-bytes | --cache-volume | --image)
        (($# >= 2)) || usage "$1 needs a value"
        ;;&
      --gpu-name) gpu_name=$2 ;;
      --min-driver) min_driver=$2 ;;
      --need-bytes) need_bytes=$2 ;;
      --cache-volume) cache_volume=$2 ;;
      --image) image=$2 ;;
      *) usage "unknown argument '$1'" ;;
    esac
    shift 2
  done
  [[ -n $gpu_name ]] || usage "--gpu-name is required"
  [[ $min_driver =~ ^[0-9]+(\.[0-9]+)*$ ]] || usage "--min-driver must be a version like 525.60.13, got '$min_driver'"
  [[ $need_bytes =~ ^[0-9]+$ ]] || usage "--need-bytes must be a whole number of bytes, got '$need_bytes'"
  [[ -n $cache_volume ]] || usage "--cache-volume is required"
}

# The first non-blank line: docker info prints an empty line before its error.
first_line() {
  awk 'NF { print; exit }' <<<"$1"
}

trim() {
  local s=$1
  s=${s#"${s%%[![:space:]]*}"}
  printf '%s' "${s%"${s##*[![:space:]]}"}"
}

gib() {
  awk -v b="$1" -v g="$GIB" 'BEGIN { printf "%.2f GiB", b / g }'
}

# True when version $1 >= version $2, compared field by field as numbers.
version_at_least() {
  printf '%s\n%s\n' "$2" "$1" | sort --version-sort --check=quiet
}

read_gpus() {
  command -v nvidia-smi >/dev/null ||
    die "nvidia-smi not found: install the NVIDIA driver ($min_driver or newer) on this host"
  if ! gpu_lines=$(nvidia-smi --query-gpu="$GPU_QUERY" --format=csv,noheader,nounits 2>&1) ||
    [[ -z $gpu_lines ]]; then
    die "nvidia-smi lists no GPU ($(first_line "${gpu_lines:-no output}")): check that the card is seen (lspci) and the NVIDIA driver is loaded"
  fi
}

# Every card must be the configured one (a mixed pair cannot run tensor-parallel);
# the first card's values are what the program exports.
check_gpus() {
  local name memory driver cap
  gpu_count=0
  while IFS=',' read -r name memory driver cap; do
    name=$(trim "$name")
    [[ $name == "$gpu_name" ]] ||
      die "GPU $gpu_count is '$name', not the configured '$gpu_name': deploy on a host with that card or change gpu.name in the stack config"
    if ((gpu_count == 0)); then
      gpu_memory_mib=$(trim "$memory") driver_version=$(trim "$driver") compute_cap=$(trim "$cap")
    fi
    gpu_count=$((gpu_count + 1))
  done <<<"$gpu_lines"
}

check_driver() {
  version_at_least "$driver_version" "$min_driver" ||
    die "NVIDIA driver $driver_version is older than $min_driver, the oldest that runs the CUDA 12.8 runtime through minor-version compatibility: install driver $min_driver or newer and reboot"
}

check_docker() {
  local out
  command -v docker >/dev/null ||
    die "docker not found: install Docker Engine and the NVIDIA Container Toolkit"
  out=$(docker info --format '{{.DockerRootDir}}' 2>&1) ||
    die "the Docker daemon does not answer ($(first_line "$out")): start it with 'systemctl start docker'"
  docker_root_dir=$out
  out=$(docker info --format '{{json .Runtimes}}' 2>&1) || die "docker info failed: $(first_line "$out")"
  [[ $out == *'"nvidia":'* ]] ||
    die "the nvidia runtime is not registered with Docker: run 'nvidia-ctk runtime configure --runtime=docker' and restart docker"
}

# Bytes already on disk for this deployment: the model cache volume and the engine image
# count against the need, so a re-run after the download or the build still passes.
measure_held_bytes() {
  local mountpoint size
  held=0
  if mountpoint=$(docker volume inspect --format '{{.Mountpoint}}' "$cache_volume" 2>/dev/null) &&
    [[ -d $mountpoint ]]; then
    held=$(du -sb "$mountpoint" | cut -f1) || die "cannot measure volume $cache_volume at $mountpoint"
  fi
  if [[ -n $image ]] && size=$(docker image inspect --format '{{.Size}}' "$image" 2>/dev/null); then
    held=$((held + size))
  fi
}

check_disk() {
  local free still_needed
  free=$(df -P -B1 "$docker_root_dir" | awk 'NR == 2 { print $4 }') ||
    die "cannot read the free space at Docker's root dir $docker_root_dir"
  measure_held_bytes
  still_needed=$((need_bytes > held ? need_bytes - held : 0))
  ((free >= still_needed)) ||
    die "$(gib "$free") free at $docker_root_dir, $(gib "$still_needed") still needed ($(gib "$need_bytes") in all, $(gib "$held") already held by volume $cache_volume${image:+ and image $image}): free disk space or grow the disk"
}

main() {
  parse_args "$@"
  read_gpus
  check_gpus
  check_driver
  check_docker
  check_disk
  printf 'gpu_name=%s\ngpu_memory_mib=%s\ndriver_version=%s\ncompute_cap=%s\ngpu_count=%s\n' \
    "$gpu_name" "$gpu_memory_mib" "$driver_version" "$compute_cap" "$gpu_count"
}

main "$@"
