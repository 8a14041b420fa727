"""ONNX element types (TensorProto.DataType numbers) <-> numpy dtypes."""
from __future__ import annotations

from typing import Any, Dict

import numpy as np

try:  # bfloat16 has no numpy dtype of its own; ml_dtypes provides one
    import ml_dtypes as _ml_dtypes

    _BFLOAT16: "np.dtype[Any] | None" = np.dtype(_ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - depends on the environment
    _BFLOAT16 = None

_ONNX_TO_NUMPY: Dict[int, "np.dtype[Any]"] = {
    1: np.dtype(np.float32), 2: np.dtype(np.uint8), 3: np.dtype(np.int8), 4: np.dtype(np.uint16),
    5: np.dtype(np.int16), 6: np.dtype(np.int32), 7: np.dtype(np.int64), 9: np.dtype(np.bool_),
    10: np.dtype(np.float16), 11: np.dtype(np.float64), 12: np.dtype(np.uint32), 13: np.dtype(np.uint64),
    14: np.dtype(np.complex64), 15: np.dtype(np.complex128),
}
if _BFLOAT16 is not None:
    _ONNX_TO_NUMPY[16] = _BFLOAT16
_NUMPY_TO_ONNX = {v: k for k, v in _ONNX_TO_NUMPY.items()}
_NAMES = {8: "string", 16: "bfloat16"}


def to_numpy(dtype: int) -> "np.dtype[Any]":
    """The numpy dtype of an ONNX element type; TypeError when numpy has none."""
    try:
        return _ONNX_TO_NUMPY[dtype]
    except KeyError:
        raise TypeError(f"dtrexec: element type {name(dtype)} has no numpy dtype here"
                        + (" (install ml_dtypes for bfloat16)" if dtype == 16 else "")) from None


def to_onnx(dtype: "np.dtype[Any]") -> int:
    """The ONNX element type of a numpy dtype; TypeError when ONNX has none."""
    try:
        return _NUMPY_TO_ONNX[np.dtype(dtype)]
    except KeyError:
        raise TypeError(f"dtrexec: numpy dtype {np.dtype(dtype)} has no ONNX element type") from None


def name(dtype: int) -> str:
    """A readable name: numpy's where it has one ("float32"), else ONNX's ("bfloat16")."""
    if dtype in _NAMES:
        return _NAMES[dtype]
    t = _ONNX_TO_NUMPY.get(dtype)
    return t.name if t is not None else f"onnx-type-{dtype}"
