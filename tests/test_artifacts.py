"""Child-side pieces the matrix's export and AOTI stages share, on the CPU: the legacy API's deprecation notice is
recorded (and nothing else is), and a run that passes under no_grad is checked again under inference_mode, whose
failure names the mode."""

import logging
import re
import warnings

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode, ShapeEnv

from compat.child import artifacts
from compat.child.checks import INFERENCE_MODE, check_batches, models
from compat.errors import HarnessError
from compat.evidence import outcomes
from compat.matrix.cells import Cell

CELL = Cell("silu", "triton_op_cpu_fallback", "export_nonstrict", "float32", "cpu")


def test_deprecations_records_the_aoti_api_notice_only():
    with artifacts.deprecations() as said:
        logging.getLogger("torch._export").warning(
            "torch._export.aot_compile()/torch._export.aot_load() is being deprecated, please switch"
        )
        logging.getLogger("torch._export").warning("an unrelated warning")
        warnings.warn("`isinstance(treespec, LeafSpec)` is deprecated", FutureWarning, stacklevel=1)
        warnings.warn("aot_load is deprecated", DeprecationWarning, stacklevel=1)
    assert said == [
        "torch._export.aot_compile()/torch._export.aot_load() is being deprecated, please switch",
        "DeprecationWarning: aot_load is deprecated",
    ]


def test_every_aoti_family_has_a_library_and_a_fresh_phase_pair():
    from compat.matrix.stages import BUILD_PHASES, FRESH_PHASES, PACKAGED

    assert set(artifacts.LIBRARIES) == set(PACKAGED)
    for family in PACKAGED:
        assert BUILD_PHASES[family] == (f"{family}_compile",) and FRESH_PHASES[family] == (
            f"{family}_load",
            f"{family}_run",
        )
    names = [filename for filename, _, _ in artifacts.LIBRARIES.values()]
    assert len(set(names)) == len(names)  # one build directory holds them all


@pytest.mark.parametrize("fails_in_inference_mode", [False, True])
def test_a_run_is_checked_under_no_grad_then_inference_mode(fails_in_inference_mode):
    _, reference = models(CELL)

    def run(*args):
        if fails_in_inference_mode and torch.is_inference_mode_enabled():
            raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed")
        return reference(*args)

    plain = check_batches(run, reference, CELL)
    both = check_batches(run, reference, CELL, inference_mode=True)
    assert plain.kind == "passed"
    if fails_in_inference_mode:
        assert both.kind == "failed" and both.error_type == "RuntimeError"
        assert both.message.startswith(INFERENCE_MODE) and "Inplace update to inference tensor" in both.message
        assert both.detail["grad_mode"] == "inference_mode"
    else:
        assert both.kind == "passed"


def _leaked(size_traced: bool):
    with FakeTensorMode(shape_env=ShapeEnv()):
        ones = torch.ones(8, 64)
        return ones.nonzero() if size_traced else ones  # a size that is an unbacked symbol; no values at all


@pytest.mark.parametrize("size_traced", [False, True])
def test_an_output_that_holds_no_values_fails_the_cell_not_the_comparison(size_traced):
    """The static strict export of a subclass built in forward returned a fake tensor on the H100: reading its
    values raises for a user too, so it is the cell's outcome; inside the comparison it was a harness error that
    ended the whole probe child."""
    leaked = _leaked(size_traced)
    _, reference = models(CELL)
    with pytest.raises(GuardOnDataDependentSymNode) as raised:  # the phase records it as the cell's outcome
        check_batches(lambda *args: leaked, reference, CELL)
    assert not isinstance(raised.value, HarnessError)
    outcome = outcomes.from_exception(raised.value)
    assert outcome.kind == "failed" and re.search(r"data-dependent expression u\d+", outcome.message)
