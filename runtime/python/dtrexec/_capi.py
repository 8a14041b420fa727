"""ctypes declarations of the public C API (runtime/dtrexec.h), loaded once.

The structs mirror dtrexec.h field for field; a change there needs the same
change here. ctypes releases the GIL around every call, so runs and training
steps of different sessions proceed in parallel threads.
"""
from __future__ import annotations

import ctypes
import os
from ctypes import POINTER, Structure, c_char_p, c_double, c_float, c_int, c_int64, c_longlong, c_size_t, c_uint64, c_void_p

MAX_RANK = 8

OK, ERR_INPUT, ERR_BUDGET, ERR_INTERNAL, ERR_NONFINITE = 0, 1, 2, 3, 4
VALUE_TENSOR, VALUE_SEQUENCE, VALUE_OPTIONAL = 0, 1, 2


class Tensor(Structure):
    _fields_ = [("dtype", c_int), ("rank", c_int), ("dims", c_int64 * MAX_RANK), ("data", c_void_p)]


class Value(Structure):
    pass


Value._fields_ = [("kind", c_int), ("tensor", Tensor), ("n_elems", c_int), ("elems", POINTER(Value))]


class ValueDesc(Structure):
    _fields_ = [("name", c_char_p), ("kind", c_int), ("dtype", c_int), ("rank", c_int),
                ("dims", c_int64 * MAX_RANK), ("dim_names", c_char_p * MAX_RANK)]


class Options(Structure):
    _fields_ = [("threads", c_int), ("seed", c_uint64), ("device", c_char_p), ("budget_bytes", c_size_t),
                ("heuristic", c_char_p), ("dealloc", c_char_p), ("trace_path", c_char_p), ("verify_remat", c_int),
                ("measured_costs", c_int), ("optimize_inference", c_int)]


class TrainOptions(Structure):
    _fields_ = [("optimizer", c_int), ("loss", c_int), ("lr", c_float), ("momentum", c_float), ("nesterov", c_int),
                ("beta1", c_float), ("beta2", c_float), ("eps", c_float), ("weight_decay", c_float),
                ("hf_bias_correction", c_int), ("freeze", c_char_p), ("trainable", c_char_p),
                ("grad_inputs", c_int), ("fresh_targets", c_int),
                ("update_after_backward", c_int)]


class ParamInfo(Structure):
    _fields_ = [("name", c_char_p), ("dtype", c_int), ("rank", c_int), ("dims", c_int64 * MAX_RANK),
                ("numel", c_int64), ("trainable", c_int), ("reason", c_char_p), ("warning", c_char_p)]


class PlanStep(Structure):
    _fields_ = [("kind", c_int), ("node", c_char_p)]


class Stats(Structure):
    _fields_ = [("peak_bytes", c_size_t), ("budget_bytes", c_size_t), ("pinned_bytes", c_size_t),
                ("baseline_compute", c_double), ("total_compute", c_double), ("remat_compute", c_double),
                ("dtr_overhead_seconds", c_double), ("evictions", c_longlong), ("window_evictions", c_longlong),
                ("compactions", c_longlong), ("compaction_bytes", c_double), ("compaction_seconds", c_double),
                ("remats", c_longlong), ("view_remats", c_longlong), ("op_calls", c_longlong), ("runs", c_int),
                ("step_seconds", POINTER(c_double)), ("losses", POINTER(c_double)),
                ("updates_in_backward", c_longlong), ("in_place_calls", c_longlong)]


def _library_path() -> str:
    """DTREXEC_LIBRARY (a built tree's libdtrexec.so), else the one inside the package."""
    env = os.environ.get("DTREXEC_LIBRARY")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "libdtrexec.so")


def _declare(lib: ctypes.CDLL) -> None:
    S = c_void_p  # struct dtrx_session *
    st = c_int
    sigs = {
        "dtrx_last_error": (c_char_p, []),
        "dtrx_dtype_size": (c_size_t, [c_int]),
        "dtrx_value_clear": (None, [POINTER(Value)]),
        "dtrx_options_init": (None, [POINTER(Options)]),
        "dtrx_parse_budget": (st, [c_char_p, POINTER(c_double), POINTER(c_double)]),
        "dtrx_device_check": (st, [c_char_p]),
        "dtrx_session_create": (st, [c_char_p, POINTER(Options), POINTER(S)]),
        "dtrx_session_destroy": (None, [S]),
        "dtrx_session_input_count": (c_int, [S]),
        "dtrx_session_output_count": (c_int, [S]),
        "dtrx_session_input": (POINTER(ValueDesc), [S, c_int]),
        "dtrx_session_output": (POINTER(ValueDesc), [S, c_int]),
        "dtrx_session_input_index": (c_int, [S, c_char_p]),
        "dtrx_session_bind_dim": (st, [S, c_char_p, c_int64]),
        "dtrx_session_set_input": (st, [S, c_int, POINTER(Tensor)]),
        "dtrx_session_set_input_value": (st, [S, c_int, POINTER(Value)]),
        "dtrx_session_redraw_inputs": (st, [S, c_uint64]),
        "dtrx_session_fill_inputs": (st, [S]),
        "dtrx_session_tensor": (st, [S, c_char_p, POINTER(Tensor)]),
        "dtrx_session_run": (st, [S]),
        "dtrx_session_get_output": (st, [S, c_int, POINTER(Tensor)]),
        "dtrx_session_get_output_value": (st, [S, c_int, POINTER(Value)]),
        "dtrx_train_options_init": (None, [POINTER(TrainOptions)]),
        "dtrx_session_params": (st, [S, POINTER(TrainOptions), POINTER(POINTER(ParamInfo)), POINTER(c_int)]),
        "dtrx_session_train_begin": (st, [S, POINTER(TrainOptions)]),
        "dtrx_session_set_labels": (st, [S, POINTER(Tensor)]),
        "dtrx_session_backward": (st, [S, POINTER(c_double)]),
        "dtrx_session_train_step": (st, [S, POINTER(c_double)]),
        "dtrx_session_loss_description": (c_char_p, [S]),
        "dtrx_session_get_grad": (st, [S, c_char_p, POINTER(Tensor)]),
        "dtrx_session_export_graph": (st, [S, c_char_p]),
        "dtrx_session_set_plan": (st, [S, POINTER(PlanStep), c_int]),
        "dtrx_session_save": (st, [S, c_char_p]),
        "dtrx_session_stats": (None, [S, POINTER(Stats)]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args


_lib: ctypes.CDLL | None = None


def lib() -> ctypes.CDLL:
    """The C library, loaded on first use."""
    global _lib
    if _lib is None:
        path = _library_path()
        try:
            loaded = ctypes.CDLL(path)
        except OSError as e:
            raise ImportError(f"dtrexec: cannot load the C library {path}: {e}") from e
        _declare(loaded)
        _lib = loaded
    return _lib


def last_error() -> str:
    """dtrx_last_error() of this thread."""
    msg = lib().dtrx_last_error()
    return msg.decode("utf-8", "replace") if msg else ""
