"""dtrexec.Session: a loaded model, run for inference or trained, over the C API."""
from __future__ import annotations

import ctypes
import math
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _capi, _dtypes
from ._errors import Error, InputError, error_for
from ._sim import Schedule

Budget = Union[None, int, str]
Feeds = Optional[Mapping[str, Any]]

OPTIMIZERS = ("sgd", "momentum", "adam", "adamw")
LOSSES = ("auto", "mse", "cross-entropy", "sum", "graph", "weighted-sum")
PLAN_KINDS = ("run", "recompute", "free")
_KINDS = ("tensor", "sequence", "optional")
_SIZE_MAX = 4611686018427387904  # 2^62 bytes, the command's largest budget


def _check(status: int) -> None:
    if status:
        raise error_for(status, _capi.last_error())


def _text(value: Optional[str]) -> Optional[bytes]:
    return None if value is None else os.fsencode(value) if isinstance(value, os.PathLike) else str(value).encode()


def _path(value: Union[str, "os.PathLike[str]"]) -> bytes:
    return os.fsencode(value)


def parse_budget(budget: Budget) -> Tuple[int, float]:
    """(bytes, ratio) of a budget as `dtrexec --budget` takes it: an int of bytes,
    "4GB", "512MiB", "1000" or "0.5x" (a fraction of the unbudgeted peak); None
    or 0 is no budget. The text goes through the C parser (dtrx_parse_budget)."""
    if budget is None:
        return 0, 0.0
    if isinstance(budget, bool) or not isinstance(budget, (int, str)):
        raise InputError(f"budget must be an int of bytes or a text like '4GB' or '0.5x', got {budget!r}")
    if isinstance(budget, int):
        if budget < 0 or budget > _SIZE_MAX:
            raise InputError(f"budget {budget} bytes is outside 0 to 2^62 bytes")
        return budget, 0.0
    b, r = ctypes.c_double(), ctypes.c_double()
    _check(_capi.lib().dtrx_parse_budget(budget.encode(), ctypes.byref(b), ctypes.byref(r)))
    return int(b.value), r.value


@dataclass(frozen=True)
class ValueInfo:
    """A graph input or output as the model declares it.

    kind: "tensor", "sequence" or "optional" (dtype and shape then describe the
    elements); dtype: numpy's name ("float32", "int64"; "bfloat16", "string");
    shape: None when undeclared, else one entry per axis: an int, the name of a
    symbolic dimension ("batch"), or None for an unnamed one."""

    name: str
    kind: str
    dtype: str
    shape: Optional[Tuple[Union[int, str, None], ...]]


def _desc(d: "_capi.ValueDesc") -> ValueInfo:
    shape: Optional[Tuple[Union[int, str, None], ...]] = None
    if d.rank >= 0:
        dims: List[Union[int, str, None]] = []
        for i in range(d.rank):
            if d.dims[i] >= 0:
                dims.append(int(d.dims[i]))
            else:
                n = d.dim_names[i]
                dims.append(n.decode() if n else None)
        shape = tuple(dims)
    kind = _KINDS[d.kind] if 0 <= d.kind < len(_KINDS) else f"kind-{d.kind}"
    return ValueInfo(d.name.decode(), kind, _dtypes.name(d.dtype), shape)


def _tensor_array(t: "_capi.Tensor") -> np.ndarray:
    """A numpy copy of a C tensor (the C memory is reused by the next run or step)."""
    dt = _dtypes.to_numpy(t.dtype)
    shape = tuple(int(t.dims[i]) for i in range(t.rank))
    n = math.prod(shape)
    if n == 0 or not t.data:
        return np.zeros(shape, dt)
    buf = (ctypes.c_char * (n * dt.itemsize)).from_address(t.data)
    out: np.ndarray = np.frombuffer(memoryview(buf), dt).reshape(shape).copy()
    return out


def _value_object(v: "_capi.Value") -> Any:
    if v.kind == _capi.VALUE_TENSOR:
        return _tensor_array(v.tensor)
    elems = [_value_object(v.elems[i]) for i in range(v.n_elems)]
    if v.kind == _capi.VALUE_SEQUENCE:
        return elems
    return elems[0] if elems else None


def _c_tensor(arr: np.ndarray) -> "_capi.Tensor":
    """A C view of a C-contiguous array (no copy: the C side copies it in)."""
    if arr.ndim > _capi.MAX_RANK:
        raise InputError(f"rank {arr.ndim} is above dtrexec's largest, {_capi.MAX_RANK}")
    t = _capi.Tensor()
    t.dtype = _dtypes.to_onnx(arr.dtype)
    t.rank = arr.ndim
    for i, n in enumerate(arr.shape):
        t.dims[i] = n
    t.data = arr.ctypes.data if arr.size else None
    return t


def _as_array(x: Any, dtype: Optional[np.dtype]) -> np.ndarray:
    """x as a C-contiguous array: arrays keep their dtype (a mismatch is the C
    side's InputError, not a silent cast); lists and scalars take `dtype`."""
    if isinstance(x, np.ndarray):
        return np.ascontiguousarray(x)
    return np.ascontiguousarray(np.asarray(x, dtype=dtype))


class _CValue:
    """A dtrx_value tree built from Python (tensor, list = sequence, None or a
    1-tuple = optional), keeping its arrays alive while the C side reads it."""

    def __init__(self, obj: Any, kind: str, dtype: Optional[np.dtype]) -> None:
        self.keep: List[Any] = []
        self.value = self._build(obj, kind, dtype)

    def _build(self, obj: Any, kind: str, dtype: Optional[np.dtype]) -> "_capi.Value":
        v = _capi.Value()
        if kind == "sequence" or (kind == "optional" and isinstance(obj, (list, tuple)) and len(obj) > 1):
            items = list(obj)
            v.kind = _capi.VALUE_SEQUENCE
        elif kind == "optional":
            items = [] if obj is None else [obj[0] if isinstance(obj, tuple) else obj]
            v.kind = _capi.VALUE_OPTIONAL
        else:
            arr = _as_array(obj, dtype)
            self.keep.append(arr)
            v.kind = _capi.VALUE_TENSOR
            v.tensor = _c_tensor(arr)
            return v
        elems = (_capi.Value * max(len(items), 1))()
        for i, item in enumerate(items):
            elems[i] = self._build(item, "tensor" if not isinstance(item, (list, tuple)) else "sequence", dtype)
        self.keep.append(elems)
        v.n_elems = len(items)
        v.elems = ctypes.cast(elems, ctypes.POINTER(_capi.Value))
        return v


@dataclass
class _TrainConfig:
    options: "_capi.TrainOptions"
    keep: Tuple[Optional[bytes], Optional[bytes]]
    fresh_inputs: bool


class Session:
    """A model loaded for inference or training under an optional memory budget.

    Session(path, budget="0.5x") behaves like `dtrexec path --budget 0.5x`: a
    ratio is of the peak of one unbudgeted run (or training step, after
    train()), measured on first use in a throwaway session, as the command
    does. Inputs not fed are seeded random data of their declared shapes
    (`seed`), as the command draws them; symbolic dimensions are bound with
    `dims` or bind_dim(). A session is used by one thread at a time; sessions
    in different threads run in parallel (the GIL is released during runs).
    `threads` (0: the machine's cores) applies to runs in the creating thread.

    Errors raise InputError (bad model, input, option or file), BudgetError
    (infeasible budget, out of memory), NonFiniteError (a non-finite loss) or
    Error, with dtrexec's message.
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"], *, budget: Budget = None, heuristic: str = "dtr",
                 dealloc: str = "eager", threads: int = 0, seed: int = 0, device: str = "cpu",
                 verify_remat: bool = False, trace: Optional[Union[str, "os.PathLike[str]"]] = None,
                 measured_costs: bool = False, optimize_inference: bool = False,
                 dims: Optional[Mapping[str, int]] = None) -> None:
        self._s: Optional[int] = None
        self._lib = _capi.lib()
        if not isinstance(threads, int) or not 0 <= threads <= 1024:
            raise InputError(f"threads must be an int from 0 to 1024, got {threads!r}")
        if not isinstance(seed, int) or seed < 0:
            raise InputError(f"seed must be a non-negative int, got {seed!r}")
        self._model = _path(path)
        self._budget_bytes, self._ratio = parse_budget(budget)
        self._heuristic, self._dealloc, self._device = heuristic, dealloc, device
        self._keep = [_text(heuristic), _text(dealloc), _text(device),
                      None if trace is None else os.fsencode(trace)]
        o = _capi.Options()
        self._lib.dtrx_options_init(ctypes.byref(o))
        o.threads, o.seed, o.device = threads, seed, self._keep[2]
        o.heuristic, o.dealloc, o.trace_path = self._keep[0], self._keep[1], self._keep[3]
        o.verify_remat, o.measured_costs = int(bool(verify_remat)), int(bool(measured_costs))
        o.optimize_inference = int(bool(optimize_inference))
        o.budget_bytes = self._budget_bytes
        self._options = o
        self._dims: Dict[str, int] = {}
        self._writes: List[Tuple[str, np.ndarray]] = []   # set_tensor calls, replayed after a ratio's measurement
        self._train: Optional[_TrainConfig] = None
        self._trained = False
        self._steps = 0
        self._used = False   # a run, step or export happened (the session can no longer be made again)
        # A ratio budget: an unbudgeted session now (descriptions, early errors),
        # the budgeted one once the first run or step says what to measure.
        self._pending = self._ratio > 0
        self._s = self._create(budgeted=not self._pending)
        for k, v in (dims or {}).items():
            self.bind_dim(k, v)

    # ---- life cycle ----

    def _create(self, budgeted: bool) -> int:
        o = _capi.Options.from_buffer_copy(self._options)
        if not budgeted:
            o.budget_bytes = 0
            o.trace_path = None
        s = ctypes.c_void_p()
        _check(self._lib.dtrx_session_create(self._model, ctypes.byref(o), ctypes.byref(s)))
        return int(s.value)  # type: ignore[arg-type]

    def close(self) -> None:
        """Frees the session (also done when it is garbage collected)."""
        if self._s is not None:
            self._lib.dtrx_session_destroy(self._s)
            self._s = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def _h(self) -> int:
        if self._s is None:
            raise Error("the session is closed")
        return self._s

    # ---- descriptions ----

    @property
    def inputs(self) -> List[ValueInfo]:
        """The graph inputs (initializers excluded), in order."""
        return [_desc(self._lib.dtrx_session_input(self._h, i).contents)
                for i in range(self._lib.dtrx_session_input_count(self._h))]

    @property
    def outputs(self) -> List[ValueInfo]:
        """The graph outputs, in order: run() returns their values in this order."""
        return [_desc(self._lib.dtrx_session_output(self._h, i).contents)
                for i in range(self._lib.dtrx_session_output_count(self._h))]

    @property
    def budget_bytes(self) -> int:
        """The budget in bytes (0: none); a ratio's bytes once measured, else 0."""
        st = _capi.Stats()
        self._lib.dtrx_session_stats(self._h, ctypes.byref(st))
        return int(st.budget_bytes)

    def bind_dim(self, name: str, value: int) -> None:
        """Binds a symbolic dimension for the random inputs (like --dim NAME=N)."""
        _check(self._lib.dtrx_session_bind_dim(self._h, name.encode(), int(value)))
        self._dims[name] = int(value)

    # ---- inputs ----

    def _set_feeds(self, feeds: Feeds) -> None:
        if not feeds:
            return
        infos = {i.name: (k, i) for k, i in enumerate(self.inputs)}
        for name, x in feeds.items():
            if name not in infos:
                raise InputError(f"the model has no input named '{name}' (inputs: {', '.join(infos) or 'none'})")
            k, info = infos[name]
            dtype = np.dtype(info.dtype) if info.dtype not in ("string", "bfloat16") else None
            if info.kind == "tensor":
                arr = _as_array(x, dtype)
                t = _c_tensor(arr)
                _check(self._lib.dtrx_session_set_input(self._h, k, ctypes.byref(t)))
            else:
                cv = _CValue(x, info.kind, dtype)
                _check(self._lib.dtrx_session_set_input_value(self._h, k, ctypes.byref(cv.value)))

    def _prepare(self, feeds: Feeds, labels: Any) -> None:
        """Feeds, then seeded random data for inputs never set, then labels."""
        self._set_feeds(feeds)
        _check(self._lib.dtrx_session_fill_inputs(self._h))
        if self._train is not None and self._train.fresh_inputs:
            _check(self._lib.dtrx_session_redraw_inputs(self._h, self._steps))
        if labels is not None:
            arr = _as_array(labels, None)
            t = _c_tensor(arr)
            _check(self._lib.dtrx_session_set_labels(self._h, ctypes.byref(t)))

    def _realize(self, feeds: Feeds, labels: Any) -> None:
        """A ratio budget's measurement (as `dtrexec --budget Rx` makes it): one
        unbudgeted run or training step on the same inputs, in the session made
        so far; then the budgeted session, with the weights written so far."""
        if not self._pending:
            return
        if self._train is not None:
            _check(self._lib.dtrx_session_train_begin(self._h, ctypes.byref(self._train.options)))
            self._prepare(feeds, labels)
            loss = ctypes.c_double()
            status = self._lib.dtrx_session_train_step(self._h, ctypes.byref(loss))
        else:
            self._prepare(feeds, labels)
            status = self._lib.dtrx_session_run(self._h)
        if status:
            raise error_for(status, "measuring the unbudgeted peak: " + _capi.last_error())
        st = _capi.Stats()
        self._lib.dtrx_session_stats(self._h, ctypes.byref(st))
        b = math.floor(self._ratio * st.peak_bytes)
        if not 1 <= b <= _SIZE_MAX:
            raise InputError(f"budget {self._ratio:g}x of the unbudgeted peak {st.peak_bytes} bytes is {b} bytes, "
                             "outside 1 byte to 2^62 bytes")
        self._rebuild(b)

    def _mark_used(self) -> None:
        """A run, step or export is about to happen: the session is no longer
        made again, so the writes kept for that go."""
        self._used = True
        if not self._pending:
            self._writes.clear()

    def _rebuild(self, budget_bytes: int) -> None:
        """The session made again with this budget, before its first run or
        step: the dimensions bound, the weights written and train() so far."""
        self._options.budget_bytes = budget_bytes
        new = self._create(budgeted=True)
        self.close()
        self._s = new
        self._pending = False
        self._budget_bytes = budget_bytes
        for k, v in self._dims.items():
            _check(self._lib.dtrx_session_bind_dim(self._h, k.encode(), v))
        for name, arr in self._writes:
            self._write(name, arr)
        self._writes.clear()
        if self._train is not None:
            _check(self._lib.dtrx_session_train_begin(self._h, ctypes.byref(self._train.options)))

    # ---- inference ----

    def run(self, feeds: Feeds = None) -> List[Any]:
        """Runs the graph once; returns the outputs in graph-output order (numpy
        arrays; a list for a sequence; an array or None for an optional).

        feeds maps input names to arrays (or lists for sequences); inputs keep
        their last value between runs, and those never given are seeded random
        data, as the command draws them."""
        self._realize(feeds, None)
        self._prepare(feeds, None)
        self._mark_used()
        _check(self._lib.dtrx_session_run(self._h))
        return [self._output(i) for i in range(self._lib.dtrx_session_output_count(self._h))]

    def _output(self, i: int) -> Any:
        d = self._lib.dtrx_session_output(self._h, i).contents
        if d.kind == _capi.VALUE_TENSOR:
            t = _capi.Tensor()
            _check(self._lib.dtrx_session_get_output(self._h, i, ctypes.byref(t)))
            return _tensor_array(t)
        v = _capi.Value()
        _check(self._lib.dtrx_session_get_output_value(self._h, i, ctypes.byref(v)))
        try:
            return _value_object(v)
        finally:
            self._lib.dtrx_value_clear(ctypes.byref(v))

    # ---- weights ----

    def tensor(self, name: str) -> np.ndarray:
        """A copy of the named initializer or input as it is now (trained weights
        after steps); a copy because training changes the live memory."""
        t = _capi.Tensor()
        _check(self._lib.dtrx_session_tensor(self._h, name.encode(), ctypes.byref(t)))
        return _tensor_array(t)

    def set_tensor(self, name: str, array: Any) -> None:
        """Overwrites the named initializer or input in place: same dtype and shape."""
        arr = self._write(name, array)
        if self._pending or not self._used:   # replayed if the session is made again (_rebuild)
            self._writes.append((name, arr.copy()))

    def _write(self, name: str, array: Any) -> np.ndarray:
        t = _capi.Tensor()
        _check(self._lib.dtrx_session_tensor(self._h, name.encode(), ctypes.byref(t)))
        dt = _dtypes.to_numpy(t.dtype)
        shape = tuple(int(t.dims[i]) for i in range(t.rank))
        arr = _as_array(array, dt)
        if arr.dtype != dt or arr.shape != shape:
            raise InputError(f"'{name}' is {dt.name}{list(shape)}, got {arr.dtype.name}{list(arr.shape)}")
        if arr.size:
            ctypes.memmove(t.data, arr.ctypes.data, arr.nbytes)
        return arr

    # ---- training ----

    def params(self, *, freeze: Union[None, str, Sequence[str]] = None,
               trainable: Union[None, str, Sequence[str]] = None) -> List[Dict[str, Any]]:
        """Which initializers training trains, and why (`dtrexec params`): a dict
        per initializer with name, dtype, shape, trainable, reason, warning."""
        o, _ = self._train_options(freeze=freeze, trainable=trainable)
        p = ctypes.POINTER(_capi.ParamInfo)()
        n = ctypes.c_int()
        _check(self._lib.dtrx_session_params(self._h, ctypes.byref(o), ctypes.byref(p), ctypes.byref(n)))
        out = []
        for i in range(n.value):
            q = p[i]
            out.append({"name": q.name.decode(), "dtype": _dtypes.name(q.dtype),
                        "shape": tuple(int(q.dims[k]) for k in range(q.rank)), "trainable": bool(q.trainable),
                        "reason": q.reason.decode() if q.reason else "",
                        "warning": q.warning.decode() if q.warning else None})
        return out

    def _train_options(self, optimizer: str = "sgd", lr: Optional[float] = None, momentum: Optional[float] = None,
                       weight_decay: Optional[float] = None, loss: str = "auto", freeze: Any = None,
                       trainable: Any = None, nesterov: bool = False, betas: Optional[Tuple[float, float]] = None,
                       eps: Optional[float] = None, adam_bias_correction: str = "pytorch",
                       grad_inputs: bool = False, fresh_targets: bool = False, update: str = "in-backward"
                       ) -> Tuple["_capi.TrainOptions", Tuple[Optional[bytes], Optional[bytes]]]:
        if optimizer not in OPTIMIZERS:
            raise InputError(f"unknown optimizer '{optimizer}' (one of: {' '.join(OPTIMIZERS)})")
        if loss not in LOSSES:
            raise InputError(f"unknown loss '{loss}' (one of: {' '.join(LOSSES)})")
        if update not in ("in-backward", "after-backward"):
            raise InputError(f"unknown update '{update}' (one of: in-backward after-backward)")
        if adam_bias_correction not in ("pytorch", "hf"):
            raise InputError(f"unknown adam_bias_correction '{adam_bias_correction}' (one of: pytorch hf)")
        o = _capi.TrainOptions()
        self._lib.dtrx_train_options_init(ctypes.byref(o))
        o.optimizer, o.loss = OPTIMIZERS.index(optimizer), LOSSES.index(loss)
        for field, value, hi in (("lr", lr, 1e6), ("momentum", momentum, 1), ("weight_decay", weight_decay, 1e6),
                                 ("eps", eps, 1)):
            if value is None:
                continue
            v = float(value)
            if not (math.isfinite(v) and 0 <= v <= hi):
                raise InputError(f"{field} expects a finite number from 0 to {hi:g}, got {value!r}")
            setattr(o, field, v)
        if betas is not None:
            o.beta1, o.beta2 = float(betas[0]), float(betas[1])
        o.nesterov, o.hf_bias_correction = int(bool(nesterov)), int(adam_bias_correction == "hf")
        o.grad_inputs, o.fresh_targets = int(bool(grad_inputs)), int(bool(fresh_targets))
        o.update_after_backward = int(update == "after-backward")

        def patterns(p: Any) -> Optional[bytes]:
            if p is None:
                return None
            return (p if isinstance(p, str) else ",".join(p)).encode()

        keep = (patterns(freeze), patterns(trainable))
        o.freeze, o.trainable = keep
        return o, keep

    def train(self, optimizer: str = "sgd", lr: Optional[float] = None, momentum: Optional[float] = None,
              weight_decay: Optional[float] = None, loss: str = "auto",
              freeze: Union[None, str, Sequence[str]] = None, *, trainable: Union[None, str, Sequence[str]] = None,
              nesterov: bool = False, betas: Optional[Tuple[float, float]] = None, eps: Optional[float] = None,
              adam_bias_correction: str = "pytorch", grad_inputs: bool = False, fresh_inputs: bool = False,
              update: str = "in-backward") -> None:
        """Switches the session to training, like `dtrexec --train`.

        optimizer: sgd, momentum, adam, adamw; lr (default 0.01), momentum (0.9),
        weight_decay (0), betas (0.9, 0.999), eps (1e-8) as the command's
        options; loss: auto, mse, cross-entropy, sum, graph, weighted-sum;
        freeze / trainable: glob patterns over initializer names (a text,
        comma-separated, or a list); fresh_inputs: new random inputs and
        targets every step (--fresh-inputs); update: in-backward (each
        parameter updated as soon as its gradient is final, the gradient
        freed) or after-backward (--update); the results are the same."""
        if self._train is not None:
            raise InputError("the session is already training")
        o, keep = self._train_options(optimizer, lr, momentum, weight_decay, loss, freeze, trainable, nesterov, betas,
                                      eps, adam_bias_correction, grad_inputs, fresh_inputs, update)
        if not self._pending:
            _check(self._lib.dtrx_session_train_begin(self._h, ctypes.byref(o)))
        self._train = _TrainConfig(o, keep, fresh_inputs)

    def _need_train(self, what: str) -> None:
        if self._train is None:
            raise InputError(f"{what} needs a training session: call train() first")

    def step(self, feeds: Feeds = None, labels: Any = None) -> float:
        """One training step (forward, loss, backward, optimizer update); returns
        the loss. labels: targets for the loss (class indices for
        cross-entropy); seeded random targets when never given."""
        self._need_train("step()")
        self._realize(feeds, labels)
        self._prepare(feeds, labels)
        loss = ctypes.c_double()
        self._mark_used()
        _check(self._lib.dtrx_session_train_step(self._h, ctypes.byref(loss)))
        self._steps += 1
        return loss.value

    def backward(self, feeds: Feeds = None, labels: Any = None) -> float:
        """Forward, loss and backward without updating anything; returns the loss.
        grad(name) then gives each gradient, for an optimizer of your own."""
        self._need_train("backward()")
        self._realize(feeds, labels)
        self._prepare(feeds, labels)
        loss = ctypes.c_double()
        self._mark_used()
        _check(self._lib.dtrx_session_backward(self._h, ctypes.byref(loss)))
        self._steps += 1
        return loss.value

    def grad(self, name: str) -> np.ndarray:
        """A copy of the named parameter's (or input's) gradient from the last
        step or backward()."""
        t = _capi.Tensor()
        _check(self._lib.dtrx_session_get_grad(self._h, name.encode(), ctypes.byref(t)))
        return _tensor_array(t)

    @property
    def loss_description(self) -> str:
        """Which loss the last step took and why; "" before any."""
        d = self._lib.dtrx_session_loss_description(self._h)
        return d.decode() if d else ""

    # ---- files, plans, statistics ----

    def save(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the model with the current (trained) weights (like --save)."""
        _check(self._lib.dtrx_session_save(self._h, _path(path)))

    def export_graph(self, path: Union[str, "os.PathLike[str]"], feeds: Feeds = None, labels: Any = None) -> None:
        """Records one training step (no update) and writes it as a static graph
        (node-link JSON, `dtrexec export`); needs train()."""
        self._need_train("export_graph()")
        self._realize(feeds, labels)
        self._prepare(feeds, labels)
        self._mark_used()
        _check(self._lib.dtrx_session_export_graph(self._h, _path(path)))

    def set_plan(self, schedule: Union["Schedule", Sequence[Tuple[str, str]]]) -> None:
        """Trains by a static schedule instead of DTR's heuristic (`dtrexec
        --plan`): a Schedule (dtrexec.plan, Schedule.load), or steps ("run" |
        "recompute" | "free", node name) over the node names export_graph()
        writes. The session needs a budget: a Schedule's budget_bytes when the
        session was made without one (before its first run or step, as the
        command takes the schedule's). Each training step must then call
        exactly the schedule's runs, in order."""
        if isinstance(schedule, Schedule) and not self._pending and self._budget_bytes == 0 \
                and schedule.budget_bytes > 0:
            if self._used:
                raise InputError("set_plan(): the session has no budget and has run already; make it with "
                                 f"budget={schedule.budget_bytes} (the schedule's budget_bytes)")
            self._rebuild(schedule.budget_bytes)
        steps = list(schedule)
        arr = (_capi.PlanStep * max(len(steps), 1))()
        keep = []
        for i, item in enumerate(steps):
            kind, node = item
            if kind not in PLAN_KINDS:
                raise InputError(f"schedule step {i}: kind '{kind}' is not one of {', '.join(PLAN_KINDS)}")
            keep.append(str(node).encode())
            arr[i].kind, arr[i].node = PLAN_KINDS.index(kind), keep[-1]
        if self._pending:
            raise InputError("set_plan() needs a budget in bytes: a ratio is only known after the first step")
        _check(self._lib.dtrx_session_set_plan(self._h, arr, len(steps)))   # copies the names

    def stats(self) -> Dict[str, Any]:
        """The statistics `dtrexec --stats` writes: peak/budget/pinned bytes,
        compute (baseline, total, remat), evictions, remats, compactions,
        op_calls, DTR overhead, step_seconds, and loss when training."""
        st = _capi.Stats()
        self._lib.dtrx_session_stats(self._h, ctypes.byref(st))
        budgeted = st.budget_bytes > 0
        out: Dict[str, Any] = {"device": self._device}
        out["heuristic"] = (self._heuristic or "dtr") if budgeted else None
        if budgeted:
            out["dealloc"] = self._dealloc or "eager"
        for f in ("peak_bytes", "budget_bytes", "pinned_bytes", "baseline_compute", "total_compute", "remat_compute",
                  "evictions", "window_evictions", "compactions", "compaction_bytes", "remats", "view_remats",
                  "op_calls", "dtr_overhead_seconds", "compaction_seconds", "runs", "updates_in_backward",
                  "in_place_calls"):
            v = getattr(st, f)
            out[f] = int(v) if isinstance(v, int) else float(v)
        out["step_seconds"] = [st.step_seconds[i] for i in range(st.runs)] if st.step_seconds else []
        if self._train is not None:
            out["loss"] = [st.losses[i] for i in range(st.runs)] if st.losses else []
        return out
