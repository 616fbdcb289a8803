# scale.sh: source it after setup.sh, from the repo root, with OUT set:
#   . .devscript/setup.sh || exit 1; . .devscript/scale.sh
# Three `bench locomo` runs, each under `timeout`, all within KIT_BUDGET seconds from here:
#   main_w4  main, KIT_W1 workers, then one worker on a fresh stack (--scaling)
#   base_w1  the baseline tree ($KIT_BASE), one worker
#   main_w8  main, KIT_W3 workers, KIT_U3 users a file, against main_w4's one-worker rate
# Each writes $OUT/<step>.json (the report) and $OUT/<step>.log (stderr, timestamped); then
# $OUT/summary.json and a table on stdout. Results are also copied to /tmp/kitout, so a later
# call on the same warm machine can run what was skipped (KIT_STEPS=main_w8) and still
# summarise all three.
#
# Knobs (env), defaults in brackets:
#   KIT_STEPS [main_w4 base_w1 main_w8]   KIT_BUDGET [570] s for all steps
#   KIT_FILES [conv-26 conv-30 conv-41 conv-42 conv-43 conv-44] (in .devdata or /tmp/kitdata)
#   KIT_P [16] partitions; KIT_W1 [4], KIT_U1 [2]: workers, users a file of main_w4 (and
#   base_w1's users); KIT_W3 [8], KIT_U3 [4]: those of main_w8
#   KIT_CAP1/2/3 [330/270/280] s a step at most; KIT_NEED3 [190] s: main_w8 is skipped, not
#   started to be cut short, with less left (the others need 60 s)
#   KIT_RATE: main_w8's --single-worker-rate [main_w4.json's single_worker_turns_per_s]
#   EMBEDDER_THREADS: texts each worker's model embeds at once (unset: min(4, cores))

kit_step() {  # NAME CAP NEED DIR CMD...: CMD in DIR under timeout min(CAP, what is left - 5 s)
  local name=$1 cap=$2 need=$3 dir=$4 left limit rc t
  shift 4
  case " $kit_steps " in *" $name "*) ;; *) echo "== $name: not in KIT_STEPS"; return 0 ;; esac
  left=$((kit_budget - (SECONDS - kit_start) - 5))
  limit=$((cap < left ? cap : left))
  if [ "$limit" -lt "$need" ]; then
    echo "== $name: SKIPPED (only ${left}s left, it needs ${need}s; run it in a later call" \
         "with KIT_STEPS=$name)"
    echo "$name skipped 0" >> "$kit_steps_file"
    return 0
  fi
  echo "== $name: timeout ${limit}s: $*"
  t=$SECONDS
  (cd "$dir" && timeout -k 15 "$limit" "$@") > "$OUT/$name.json" \
    2> >(while IFS= read -r l; do printf '%(%T)T %s\n' -1 "$l"; done > "$OUT/$name.log")
  rc=$?
  sleep 0.2  # let the log's timestamping loop finish
  echo "== $name: rc=$rc in $((SECONDS - t))s$([ "$rc" = 124 ] && echo ' (TIMED OUT)')"
  [ "$rc" = 0 ] || tail -n 15 "$OUT/$name.log"
  echo "$name $rc $((SECONDS - t))" >> "$kit_steps_file"
  cp "$OUT/$name.json" "$OUT/$name.log" /tmp/kitout/ 2>/dev/null
}

kit_rate() {  # main_w4's one-worker turns/s, from this call's $OUT or an earlier call's
  local src
  for src in "$OUT/main_w4.json" /tmp/kitout/main_w4.json; do
    python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["scale_out"]["single_worker_turns_per_s"] or "")' \
      "$src" 2>/dev/null | grep . && return 0
  done
  return 0
}

kit_summary() {
  python3 - "$OUT" "$kit_steps_file" <<'EOF'
import json, os, sys
out, steps_file = sys.argv[1], sys.argv[2]
steps = {}
for line in open(steps_file) if os.path.exists(steps_file) else []:
    name, rc, secs = line.split()
    steps[name] = {"rc": int(rc) if rc.lstrip("-").isdigit() else rc, "seconds": int(secs)}

def get(d, *path):
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return None
        d = d[p]
    return d

rows = {}
for name in ("main_w4", "base_w1", "main_w8"):
    row = dict(steps.get(name, {"rc": "not run"}))
    r = None
    for where in (out, "/tmp/kitout"):  # /tmp/kitout: a step of an earlier call, same machine
        try:
            r = json.load(open(os.path.join(where, name + ".json")))
        except (OSError, ValueError):
            continue
        if where != out:
            row["rc"] = "earlier call"
        break
    if r:
        so = r.get("scale_out") or {}
        row.update({
            "turns": r.get("turns"), "workers": so.get("workers"), "users": so.get("users"),
            "turns_per_s": so.get("turns_per_s", r.get("ingest_turns_per_s")),
            "single_worker_turns_per_s": so.get("single_worker_turns_per_s"),
            "scaling_efficiency": so.get("scaling_efficiency"),
            "broker_cores_busy": so.get("broker_cores_busy"),
            "worker_ms_per_turn": get(r, "cpu", "ms_per_turn", "worker"),
            "model_ms_per_turn": get(r, "cpu", "model_ms_per_turn"),
            "e2e_p50_ms": get(r, "e2e_latency_ms", "p50"), "e2e_p95_ms": get(r, "e2e_latency_ms", "p95"),
            "recall_any@10": get(r, "recall_any", "10"), "recall_all@10": get(r, "recall_all", "10"),
            "questions": r.get("questions"), "memories_written": r.get("memories_written"),
            "baseline_raw_recall_any@10": get(r, "baseline_raw_turns", "recall_any", "10"),
            "query_p95_ms": get(r, "query_latency_ms", "p95"),
        })
    if len(row) > 1 or name in steps:
        rows[name] = row
json.dump({"nproc": os.cpu_count(), "steps": rows},
          open(os.path.join(out, "summary.json"), "w"), indent=1)

print("== summary (also in summary.json)")
keys = ["rc", "seconds", "turns", "workers", "turns_per_s", "single_worker_turns_per_s",
        "scaling_efficiency", "broker_cores_busy", "worker_ms_per_turn", "model_ms_per_turn",
        "e2e_p95_ms", "recall_any@10", "recall_all@10", "questions", "baseline_raw_recall_any@10"]
cell = lambda v: f"{v:.4g}" if isinstance(v, float) else str(v)
print(f"{'':28}" + "".join(f"{n:>14}" for n in rows))
for k in keys:
    print(f"{k:28}" + "".join(f"{cell(rows[n].get(k)):>14}" for n in rows))
EOF
}

kit_scale() {
  local kit_start=$SECONDS kit_budget=${KIT_BUDGET:-570}
  local kit_steps=${KIT_STEPS:-main_w4 base_w1 main_w8}
  local files=${KIT_FILES:-"conv-26 conv-30 conv-41 conv-42 conv-43 conv-44"}
  local P=${KIT_P:-16} W1=${KIT_W1:-4} U1=${KIT_U1:-2} W3=${KIT_W3:-8} U3=${KIT_U3:-4}
  local kit_steps_file=/tmp/kitout/.steps data=.devdata f rate
  local paths=()
  [ -d .devdata ] || data=/tmp/kitdata  # a later call that did not carry .devdata
  data=$(cd "$data" && pwd) || { echo "KIT ERROR: no data (.devdata or /tmp/kitdata)" >&2; return 1; }
  for f in $files; do paths+=("$data/$f.json"); done
  mkdir -p "$OUT" /tmp/kitout && rm -f "$kit_steps_file"
  echo "== scale: nproc=$(nproc) files=[$files] partitions=$P budget=${kit_budget}s" \
       "EMBEDDER_THREADS=${EMBEDDER_THREADS:-unset}"

  kit_step main_w4 "${KIT_CAP1:-330}" 60 "$KIT_ROOT" \
    python3 -m streams bench locomo "${paths[@]}" --partitions "$P" --workers "$W1" \
      --users-per-file "$U1" --scaling --json

  PYTHONPATH=$KIT_SITE:$KIT_BASE kit_step base_w1 "${KIT_CAP2:-270}" 60 "$KIT_BASE" \
    python3 -m streams bench locomo "${paths[@]}" --partitions "$P" --workers 1 \
      --users-per-file "$U1" --json

  rate=${KIT_RATE:-$(kit_rate)}
  echo "== one-worker rate from main_w4: ${rate:-none (main_w8 runs without --single-worker-rate)}"
  kit_step main_w8 "${KIT_CAP3:-280}" "${KIT_NEED3:-190}" "$KIT_ROOT" \
    python3 -m streams bench locomo "${paths[@]}" --partitions "$P" --workers "$W3" \
      --users-per-file "$U3" ${rate:+--single-worker-rate "$rate"} --json

  kit_summary
  rm -f "$kit_steps_file"
  echo "== scale done in $((SECONDS - kit_start)) s"
}

kit_scale
