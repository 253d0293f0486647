"""The matrix is the product of the registries; names are validated against them."""

import pytest

from compat.cells import DEVICES, check_names, matrix, parse_cell_id, registries
from compat.errors import RegistryError
from compat.kernels import KERNELS
from compat.stages import STAGES
from compat.styles import STYLES


def test_matrix_is_the_product_of_the_axes():
    cells = matrix()
    n = sum(len(k.dtypes) for k in KERNELS.values()) * len(STYLES) * len(STAGES) * len(DEVICES)
    assert len(cells) == len(set(cells)) == n
    assert all(parse_cell_id(c.id, "test") == c for c in cells)


def test_selection_restricts_each_axis():
    cells = matrix({"style": ["triton_op"], "stage": ["eager", "aoti_strict"], "device": ["cuda"]})
    assert sorted(c.id for c in cells) == ["silu-triton_op-aoti_strict-bfloat16-cuda",
                                           "silu-triton_op-eager-bfloat16-cuda"]


def test_names_use_no_separator_and_ids_read_well():
    for axis, names in registries().items():
        assert all("-" not in n for n in names), axis
    assert "silu-raw_jit-export_nonstrict-bfloat16-cuda" in {c.id for c in matrix()}


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(RegistryError, match=r"--compat-styles: unknown style name\(s\) 'jit'; valid style names: "
                                            r"raw_jit, triton_op"):
        check_names("style", ["jit"], "--compat-styles")


def test_export_and_aoti_stages_name_their_export_mode():
    for stage in STAGES.values():
        assert (stage.export_mode is not None) == (stage.name.startswith(("export_", "aoti_")))
        assert stage.packaged == stage.name.startswith("aoti_")
