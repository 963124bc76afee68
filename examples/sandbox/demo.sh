#!/usr/bin/env bash
# make demo: sandbox up (done by make) -> migrate the example workload -> wait for two checkpoints ->
# guarded stop -> resume from the last complete step into the new Job's own directory -> verify ->
# resume again (already resumed) -> prove the original's directory gained no step -> summary of what
# happened and where the records are. Every run uses a fresh Job name and experiment directory.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
# shellcheck disable=SC1091
source .sandbox/env
export ANSIBLE_COLLECTIONS_PATH="$ROOT/.build/collections"
export ANSIBLE_STDOUT_CALLBACK=ansible.builtin.default ANSIBLE_DISPLAY_SKIPPED_HOSTS=false ANSIBLE_NOCOLOR=1
PLAY="$ROOT/.venv/bin/ansible-playbook -i $ROOT/examples/sandbox/inventory.yml"
STAMP=$(date -u +%m%d%H%M%S)
JOB="demo-$STAMP"
WORK="$ROOT/.build/demo/$JOB"
export RLARK_RECORDS_DIR="$ROOT/.build/records"
mkdir -p "$WORK" "$RLARK_RECORDS_DIR"
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
started=$(date +%s)
# run LOG PATTERN PLAYBOOK ARGS...: full output to LOG, the lines matching PATTERN on screen, stop on failure.
run() {
  local log=$1 pattern=$2 rc
  shift 2
  set +e
  $PLAY "$@" >"$log" 2>&1
  rc=$?
  set -e
  grep -E "$pattern" "$log" | sed 's/^/   /' || true
  if [ "$rc" -ne 0 ]; then
    echo "   FAILED (exit $rc); full output: $log" >&2
    exit "$rc"
  fi
}

say "0. Sandbox admin steps: free the GPUs of earlier demo/molecule/bench runs, create the approved hostPath on a100-01"
$PLAY "$ROOT/examples/sandbox/demo_cleanup.yml" >"$WORK/cleanup.log"
mkdir -p "$RLARK_SANDBOX_DIR/nodes/a100-01/data/rlinf"
# This run's own experiment directory (same manifest otherwise), so checkpoints of earlier runs never mix in.
"$ROOT/.venv/bin/python" - "$ROOT/examples/sandbox/launch_manifest.yml" "$WORK/launch_manifest.yml" "$JOB" <<'PY'
import sys, yaml
src, dst, job = sys.argv[1:]
m = yaml.safe_load(open(src))
m["job"]["name"] = job
for o in m["hydra"]["overrides"]:
    if o["override"].startswith("runner.logger.experiment_name="):
        o["override"] = "runner.logger.experiment_name=%s" % job
root = m.get("checkpoint", {}).get("root")
if root:
    m["checkpoint"]["root"] = root.replace("/demo/", "/%s/" % job)
yaml.safe_dump(m, open(dst, "w"), sort_keys=False)
PY
VARS=(-e "rlark_launch_manifest=$WORK/launch_manifest.yml")

say "1. Migrate: preflight -> selector proof -> hostPath check -> submit -> verify (Job $JOB)"
run "$WORK/migrate.log" '^(PLAY RECAP|localhost|fatal)' "$ROOT/playbooks/migrate.yml" "${VARS[@]}"

CKPT="$RLARK_SANDBOX_DIR/nodes/a100-01/data/rlinf/logs/$JOB/checkpoints"
say "2. Wait for two checkpoints in $CKPT"
for _ in $(seq 1 90); do
  n=$( (find "$CKPT" -maxdepth 1 -name 'global_step_*' 2>/dev/null || true) | wc -l)
  [ "$n" -ge 3 ] && break   # the 2nd is complete once the 3rd has started
  sleep 1
done
find "$CKPT" -maxdepth 1 -name 'global_step_*' -printf '   %f\n' | sort -V

say "3. Guarded stop: gate the newest checkpoint, record, stop, wait for every Pod CR to go"
run "$WORK/guarded_stop.log" '^ +"(JOB|[a-z0-9-]+ +(stopped|already|refused)|[0-9]+ stopped)|fatal' \
  "$ROOT/playbooks/guarded_stop.yml" "${VARS[@]}" -e "{\"rlark_jobs\": [\"$JOB\"]}"

# The original's steps at the stop: nothing above the newest of them may ever appear in its directory.
steps_in() { (find "$1" -maxdepth 1 -name 'global_step_*' -printf '%f\n' 2>/dev/null || true) | sed 's/global_step_//' | sort -n; }
STOP_STEP=$(steps_in "$CKPT" | tail -1)

say "4+5. Resume as a new Job from the last complete step (its own directory), then verify the resume"
run "$WORK/resume.log" '"msg": "(Resuming|[^"]* resumes )|fatal|PLAY RECAP|^localhost' "$ROOT/playbooks/resume.yml" "${VARS[@]}" \
  -e "rlark_resume_source=$JOB"
NEW=$(grep -o "$JOB-r[0-9]*" "$WORK/resume.log" | head -1)
NEW_CKPT="$RLARK_SANDBOX_DIR/nodes/a100-01/data/rlinf/logs/$NEW/checkpoints"

say "6. Resume again: the original is already resumed, nothing is created"
run "$WORK/resume-again.log" '"msg": ".* already resumed as .*; verified|fatal|^localhost' "$ROOT/playbooks/resume.yml" "${VARS[@]}" \
  -e "rlark_resume_source=$JOB"

say "7. The old run is untouched: its directory holds no step above its stop step ($STOP_STEP)"
for _ in $(seq 1 60); do
  [ "$(steps_in "$NEW_CKPT" | wc -l)" -ge 2 ] && break   # the new Job has saved twice in its own directory
  sleep 1
done
echo "   original $JOB: $(steps_in "$CKPT" | tr '\n' ' ')"
echo "   resumed  $NEW (own directory): $(steps_in "$NEW_CKPT" | tr '\n' ' ')"
ABOVE=$(steps_in "$CKPT" | awk -v s="$STOP_STEP" '$1 > s' | tr '\n' ' ')
if [ -n "$ABOVE" ]; then
  echo "   FAILED: the original's directory $CKPT holds steps above $STOP_STEP: $ABOVE" >&2
  exit 1
fi

say "Summary ($(( $(date +%s) - started )) s)"
echo "   migrated $JOB; stopped it after a complete checkpoint; resumed it as $NEW (original kept as is)."
# The verify record of the new Job: its metrics against the old run's after the checkpoint (issue 28).
CONTINUITY=$(find "$RLARK_RECORDS_DIR/$NEW" -name verify.yml -exec grep -h -o -m1 'verdict: continuity-[a-z-]*' {} + \
  2>/dev/null | head -1 | sed 's/verdict: //')
echo "   continuity of $NEW with the old run: ${CONTINUITY:-not judged} (verify record: resume.continuity)"
echo "   records:"
find "$RLARK_RECORDS_DIR/$JOB" "$RLARK_RECORDS_DIR/$NEW" -name '*.yml' -printf '     %p\n' 2>/dev/null | sort | grep -v '/log-' || true
echo "   exported logs: $(find "$RLARK_RECORDS_DIR/$JOB" -name 'log-*.log' | wc -l) pod log(s) in the stop record directory"
echo "   playbook output: $WORK/*.log"

# What the demo leaves behind: the resumed Job keeps training (max_steps 100000) and holds its GPUs.
if [ "${DEMO_STOP:-0}" = "1" ]; then
  say "Stopping: deleting Jobs $JOB and $NEW (DEMO_STOP=1; checkpoints and records stay)"
  $PLAY "$ROOT/examples/sandbox/demo_cleanup.yml" -e "rlark_sandbox_free_pattern=^$JOB" >"$WORK/stop.log"
  echo "   nothing of this demo is running now; the sandbox itself still runs (make sandbox-down stops it)."
else
  say "Left running"
  echo "   Job $NEW (resumed from $JOB) is training on the sandbox and holds the a100 GPUs;"
  echo "   Job $JOB is kept stopped (spec.stopped=true, no pods). The sandbox keeps running."
  echo "   Stop the demo's Jobs:  make demo-stop   (deletes demo-*/molecule-*/bench-* Jobs; checkpoints stay)"
  echo "   Next time stop at the end:  DEMO_STOP=1 make demo.   Stop the sandbox too:  make sandbox-down"
  echo "   make demo, make molecule and make bench free these GPUs themselves before they start."
fi
