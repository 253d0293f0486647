"""The catalogue of known failures: well-formed, narrow entries first, and every entry earns its place."""

import re
from pathlib import Path

import pytest

from compat.evidence.catalogue import KNOWN, Known, explain, register_known
from compat.evidence.expectations import Expectations
from compat.evidence.outcomes import Outcome
from compat.matrix.cells import Cell

ROOT = Path(__file__).resolve().parent.parent


def test_entries_are_valid_regexes_naming_real_axes():
    from compat.matrix.cells import registries

    reg = registries()
    for k in KNOWN:
        re.compile(k.error)
        re.compile(k.match)
        assert k.kind in ("failed", "mismatch", "crashed") and k.reason
        for axis, values in (("kernel", k.kernels), ("style", k.styles), ("device", k.devices), ("dtype", k.dtypes)):
            assert values is None or set(values) <= set(reg[axis]), (k.reason, axis, values)


def test_every_entry_explains_a_committed_row_or_cites_its_source():
    reasons = {
        str(e.full.get("reason")) for rows in Expectations.load(ROOT / "expectations.yaml").rows.values() for e in rows
    }
    for k in KNOWN:
        assert k.source or any(r.startswith(k.reason) for r in reasons), f"unused and uncited: {k.reason}"


def test_the_same_message_has_a_different_cause_under_the_interpreter():
    msg = "Cannot access data pointer of Tensor (e.g. FakeTensor, FunctionalTensor). If you're using ..."
    failed = Outcome("failed", "RuntimeError", msg)
    gpu = explain(failed, Cell("silu", "raw_jit", "export_nonstrict", "float32", "cuda"))
    interp = explain(failed, Cell("silu", "raw_jit", "export_nonstrict", "float32", "cpu_interpret"))
    assert gpu.source == "pytorch/pytorch#146066" and "TRITON_INTERPRET" in interp.reason


def test_a_mismatch_is_explained_only_for_the_cells_it_names():
    mismatch = Outcome("mismatch")
    assert explain(mismatch, Cell("silu_tma", "triton_op", "compile_inductor", "float32", "cuda")) is not None
    assert explain(mismatch, Cell("silu", "triton_op", "compile_inductor", "float32", "cuda")) is None
    assert explain(Outcome("passed"), Cell("silu_tma", "triton_op", "compile_inductor", "float32", "cuda")) is None


def test_every_entry_has_a_key_of_its_own():
    keys = [k.key for k in KNOWN]
    assert all(keys) and len(set(keys)) == len(keys)
    with pytest.raises(ValueError, match="names another entry already"):
        register_known(Known("RuntimeError", "x", key=keys[0], reason="another"))


def test_the_expectations_file_names_catalogue_entries_and_stays_small():
    """A row refers to its entry by key: a reviewer reads an upgrade's accepted rows, not copies of the catalogue."""
    text = (ROOT / "expectations.yaml").read_text()
    # Every committed version's rows, the fuzz findings of old versions too. The bound follows the whole CUDA gate:
    # its 3,344 fuzz tests add a row for each GPU finding, with its example (1.97 MB once 3,325 had run, with each
    # row's reproducer; 0.84 MB without it, rows that then agree sharing one entry).
    assert len(text.encode()) <= 1_200_000
    exp = Expectations.load(ROOT / "expectations.yaml")
    keyed = [k for k in KNOWN if k.key]
    copies = [
        e.cell_id
        for rows in exp.rows.values()
        for e in rows
        if "known" not in e.row and any(e.row.get("reason") in (k.reason, f"{k.reason} ({k.source})") for k in keyed)
    ]
    assert not copies, copies[:3]
