"""The exceptions: one per status code of the C API (the command's exit codes)."""
from __future__ import annotations


class Error(Exception):
    """A dtrexec failure; str() is dtrexec's message, `status` the C status code
    (the `dtrexec` command's exit code: 1 input, 2 budget, 3 internal, 4 non-finite)."""

    status: int = 3

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


class InputError(Error, ValueError):
    """Bad model, input, option or file (exit code 1)."""

    status = 1


class BudgetError(Error, MemoryError):
    """The budget is infeasible, or memory ran out (exit code 2)."""

    status = 2


class NonFiniteError(Error, ArithmeticError):
    """Training diverged: a step's loss was NaN or infinite (exit code 4); the
    message names the step's first call whose output was not finite."""

    status = 4


_BY_STATUS = {1: InputError, 2: BudgetError, 4: NonFiniteError}


def error_for(status: int, message: str) -> Error:
    """The exception for a C status code."""
    cls = _BY_STATUS.get(status, Error)
    return cls(message or f"dtrexec failed with status {status}", status)
