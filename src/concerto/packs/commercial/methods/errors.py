"""What the statistics raise when they cannot answer from the inputs they were given.

Every error is a `MethodError` (a `ValueError`): its message says what is wrong, `suggestion`
what to change, `error_type` names the problem in the words the pack's answers use
(`too_few_clusters`, `infeasible_constraints`, ...) and `details` hold the values involved.
The methods know nothing of agents; the agent layer turns a `MethodError` into the
contract's error (`concerto.packs.commercial.base.errors.failure`), so a method's message
reaches the user unchanged. `inputs_at_fault` says whose the fault is: the inputs (a
validation error, the default) or the method, which found no answer for valid inputs
(`NoSolution`).
"""

from __future__ import annotations

from typing import Any, ClassVar


class MethodError(ValueError):
    """A method cannot answer from these inputs; the message says why, `suggestion` what to change."""

    error_type: str = "invalid_input"
    inputs_at_fault: ClassVar[bool] = True

    def __init__(self, message: str, suggestion: str | None = None, *, error_type: str | None = None, **details: Any):
        super().__init__(message)
        self.suggestion = suggestion
        if error_type is not None:
            self.error_type = error_type
        self.details = details


class NoSolution(MethodError):
    """The inputs are valid, but the method finds no answer for them (a power equation without a root)."""

    error_type = "no_solution"
    inputs_at_fault = False


class SeparationError(MethodError):
    """A covariate (or a combination) predicts the treatment exactly; `column` names it when one alone does."""

    error_type = "perfect_separation"

    def __init__(self, message: str, column: str | None = None) -> None:
        super().__init__(message)
        self.column = column


class OverlapError(MethodError):
    """Too few rows of an arm have a comparable row in the other."""

    error_type = "no_overlap"


class TreatmentError(MethodError):
    """A treatment column cannot be coded as treated / untreated."""

    error_type = "invalid_treatment"


class GraphError(MethodError):
    """A causal graph that cannot be used: not a graph, a cycle, the treatment missing from it."""

    error_type = "invalid_graph"


class Infeasible(MethodError):
    """Constraints no allocation can meet; `constraint` names which (budget, max_below_min, ...)."""

    error_type = "infeasible_constraints"

    def __init__(self, message: str, suggestion: str, constraint: str, unit: str | None = None) -> None:
        super().__init__(message, suggestion, constraint=constraint, **({"unit": unit} if unit else {}))
        self.constraint = constraint
        self.unit = unit


class PeriodError(MethodError):
    """Two periods cannot be had from the rows (one period only, an unknown period value)."""

    error_type = "invalid_period"


class FitError(MethodError):
    """No model could be fitted to the data."""

    error_type = "model_failed"
    inputs_at_fault = False
