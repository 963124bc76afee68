#!/usr/bin/env bash
# with_cpu_burners.sh N CMD...: run CMD with N CPU-burning processes beside it (the suite must pass on a
# loaded machine); the burners are stopped by their own PIDs when CMD ends, fails or is interrupted.
set -uo pipefail
count=$1
shift
pids=()
stop_burners() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop_burners EXIT
trap 'exit 130' INT TERM
for _ in $(seq 1 "$count"); do
  python3 -c 'while True: pass' &
  pids+=("$!")
done
echo ">> $count CPU burner(s) running beside the command (pids ${pids[*]})"
"$@"
