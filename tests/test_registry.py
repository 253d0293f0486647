"""The matrix is the product of the registries, less the combinations that do not apply; names are validated."""

import itertools

import pytest

from compat.errors import RegistryError
from compat.matrix.cells import (
    DEVICES,
    Cell,
    applicable,
    check_names,
    dtypes_braced,
    matrix,
    parse_cell_id,
    registries,
)
from compat.matrix.kernels import KERNELS
from compat.matrix.stages import STAGES
from compat.matrix.styles import STYLES


def test_matrix_is_the_applicable_part_of_the_product():
    cells = matrix()
    product = [Cell(*axes) for axes in itertools.product(KERNELS, STYLES, STAGES, registries()["dtype"], DEVICES)]
    assert sorted(cells) == sorted(c for c in product if applicable(c))
    assert len(cells) == len(set(cells))
    assert all(parse_cell_id(c.id, "test") == c for c in cells)


def test_what_does_not_apply():
    assert not applicable(Cell("silu", "raw_jit", "eager", "float32", "cpu"))  # no CPU kernel
    assert applicable(Cell("silu", "triton_op_cpu_fallback", "eager", "float32", "cpu"))
    assert not applicable(Cell("silu", "raw_jit", "opcheck", "float32", "cuda"))  # no op to check
    assert not applicable(Cell("silu_out", "autograd_function", "eager", "float32", "cuda"))  # no backward kernel
    assert not applicable(Cell("silu_out", "triton_op_subclass", "eager", "float32", "cuda"))  # mutates out
    with pytest.raises(RegistryError, match="is not in the matrix"):
        parse_cell_id("silu-raw_jit-eager-float32-cpu", "test")


def test_every_kernel_runs_every_dtype_and_every_style_some_kernel():
    cells = matrix()
    for kernel in KERNELS.values():
        assert {c.dtype for c in cells if c.kernel == kernel.name} == {"float32", "float16", "bfloat16"}
    # as_shipped runs ops declared as shipped, which live in users' repositories (examples/my_kernels), not here.
    wrapping = {name for name, style in STYLES.items() if "shipped" not in style.needs}
    assert {c.style for c in cells} == wrapping and {c.stage for c in cells} == set(STAGES)


def test_selection_restricts_each_axis():
    cells = matrix(
        {
            "kernel": ["silu"],
            "style": ["triton_op"],
            "stage": ["eager", "aoti_strict"],
            "dtype": ["bfloat16"],
            "device": ["cuda"],
        }
    )
    # AOTI stages first: their long builds start while the rest runs.
    assert [c.id for c in cells] == ["silu-triton_op-aoti_strict-bfloat16-cuda", "silu-triton_op-eager-bfloat16-cuda"]


def test_names_use_no_separator_and_ids_read_well():
    for axis, names in registries().items():
        assert all("-" not in n for n in names), axis
    assert "silu-raw_jit-export_nonstrict-bfloat16-cuda" in {c.id for c in matrix()}


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(
        RegistryError,
        match=r"--compat-styles: unknown style name\(s\) 'jit'; valid style names: "
        r"raw_jit, wrap_triton, triton_op",
    ):
        check_names("style", ["jit"], "--compat-styles")


def test_export_based_stages_name_their_export_mode():
    for stage in STAGES.values():
        if stage.export_mode is not None:
            assert stage.name.endswith(f"_{stage.export_mode}")
        elif stage.name.endswith(("_strict", "_nonstrict")):  # a probe that exports (export_static_*) in its own way
            assert stage.probe and stage.group == "export"
        assert stage.packaged == stage.name.startswith("aoti_")
        assert stage.probe == (stage.export_mode is None)


def test_a_style_names_a_documented_family():
    from compat.matrix.styles import FAMILIES, Style

    assert {s.family for s in STYLES.values()} <= set(FAMILIES)
    with pytest.raises(RegistryError, match=r"style 'x': family 'misc' is none of registration"):
        Style("x", "doc", lambda k: None, lambda k: "x", family="misc")


def test_every_style_but_as_shipped_is_or_varies_a_canonical_style():
    from compat.matrix.styles import CANONICAL_STYLES, Style

    assert {s.canonical for s in STYLES.values()} == set(CANONICAL_STYLES) | {None}
    assert [n for n, s in STYLES.items() if s.canonical is None] == ["as_shipped"]
    assert STYLES["register_autograd"].canonical == "triton_op"
    assert STYLES["library_define"].canonical == "custom_op"
    assert STYLES["autograd_wrap_triton"].canonical == "autograd_function"
    with pytest.raises(RegistryError, match=r"style 'x': variant_of 'jit' is none of the canonical styles"):
        Style("x", "doc", lambda k: None, lambda k: "x", variant_of="jit")


def test_a_compiling_stage_says_how_it_compiles_on_the_stage_itself():
    """torch.compile's arguments live on the Stage: its check and its fuzz tests both read them from there, and a
    probe without them runs the model eagerly."""
    from compat.matrix.stages import Stage

    compiling = {n for n, s in STAGES.items() if s.compiler is not None}
    assert compiling == {n for n, s in STAGES.items() if s.probe and n.startswith("compile_")}
    assert STAGES["compile_dynamic_backward"].compiler == {"backend": "inductor", "dynamic": True}
    assert STAGES["compile_cudagraphs"].compiler["mode"] == "reduce-overhead"
    with pytest.raises(RegistryError, match=r"stage 'x': only a probe stage compiles the model"):
        Stage("x", "doc", "export", 1.0, export_mode="strict", compiler={"backend": "inductor"})


def test_a_stage_narrowed_to_dtypes_or_devices_says_so_instead_of_skipping():
    from compat.matrix.cells import why_not_applicable
    from compat.matrix.stages import ONE_DTYPE

    assert STAGES["compile_max_autotune"].dtypes == ONE_DTYPE
    assert "runs float32 only" in why_not_applicable(
        Cell("silu", "triton_op", "compile_max_autotune", "float16", "cuda")
    )
    assert why_not_applicable(Cell("silu", "triton_op", "compile_max_autotune", "float32", "cuda")) is None
    assert "applies to cuda only" in why_not_applicable(
        Cell("silu", "triton_op", "compile_cudagraphs", "float32", "cpu_interpret")
    )
    assert STAGES["aoti_legacy_nonstrict"].packaged and STAGES["aoti_legacy_nonstrict"].group == "AOTI"
    assert STAGES["export_static_strict"].group == "export" and not STAGES["export_static_strict"].fuzzed


def test_autotune_styles_that_name_written_pointers_apply_to_in_place_kernels_only():
    assert KERNELS["axpy_inplace"].mutated_pointers() == ("y_ptr",)
    assert KERNELS["silu_out"].mutated_pointers() == ("out_ptr",)
    assert KERNELS["silu"].mutated_pointers() == ()
    style = STYLES["autotune_restore_value_triton_op"]
    assert style.applies_to(KERNELS["axpy_inplace"]) and not style.applies_to(KERNELS["silu"])
    assert "restore_value" in style.why_not(KERNELS["silu"])


def test_ids_that_differ_in_the_dtype_only_are_spelled_once():
    ids = [
        "silu-triton_op-eager-bfloat16-cuda",
        "silu-raw_jit-eager-float32-cuda",
        "silu-triton_op-eager-float32-cuda",
        "silu-triton_op-aoti_strict-float32-cuda",
    ]
    assert dtypes_braced(ids) == [
        "silu-triton_op-eager-{bfloat16,float32}-cuda",
        "silu-raw_jit-eager-float32-cuda",
        "silu-triton_op-aoti_strict-float32-cuda",
    ]
