"""The run's store of AOTI libraries (compat.child.packages), on the CPU: what makes two programs one library, and
that a key is compiled once however many children ask for it."""

import dataclasses
import json
import threading
import types

import pytest
import torch
import triton
import triton.language as tl

from compat.child import packages, protocol
from compat.child.checks import models
from compat.matrix import model as workload
from compat.matrix.cells import Cell
from compat.matrix.kernels import KERNELS

CELL = Cell("silu", "custom_op", "aoti_strict", "float32", "cpu_interpret")


def _export(cell: Cell, strict: bool, scale_weights: float = 1.0):
    model, _ = models(cell)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(scale_weights)
    kernel = KERNELS[cell.kernel]
    return torch.export.export(
        model,
        workload.example_inputs(kernel, cell.dtype, cell.device),
        dynamic_shapes=workload.dynamic_shapes(kernel),
        strict=strict,
    )


def test_a_strict_and_a_non_strict_export_of_one_graph_are_one_library():
    strict, nonstrict = _export(CELL, True), _export(CELL, False)
    # They differ in symbol names and source comments only, which the key leaves out.
    assert strict.graph_module.print_readable(print_output=False) != nonstrict.graph_module.print_readable(
        print_output=False
    )
    assert packages.program_key(strict, "aoti") == packages.program_key(nonstrict, "aoti")


def test_what_inductor_reads_is_in_the_key():
    key = packages.program_key(_export(CELL, False), "aoti")
    assert packages.program_key(_export(CELL, False), "aoti_max_autotune") != key  # the family's compile options
    assert packages.program_key(_export(CELL, False, scale_weights=2.0), "aoti") != key  # the parameters' bytes
    half = dataclasses.replace(CELL, dtype="float16")
    assert packages.program_key(_export(half, False), "aoti") != key  # the values' dtypes


def test_symbols_are_renumbered_in_order_of_appearance():
    assert packages._canonical("f32[s6, 64] u3 s33 s6\n    # File: a.py:1") == packages._canonical(
        "f32[s40, 64] u9 s2 s40\n    # File: b.py:7"
    )
    assert packages._canonical("s6 s33") != packages._canonical("s6 s6")


def _source_a(x_ptr, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(x_ptr + i, tl.load(x_ptr + i, mask=i < n) * 2, mask=i < n)


def _source_b(x_ptr, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(x_ptr + i, tl.load(x_ptr + i, mask=i < n) * 3, mask=i < n)


def test_a_traced_launch_is_keyed_by_its_kernel_not_by_its_index_in_the_side_table():
    """The graph holds only `kernel_idx`, an index into this process's table: two processes may give one index to
    two kernels. The key reads the kernel (Triton's cache key: its source and what it calls) and its constants."""
    from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

    def program(kernel, constants):
        graph = torch.fx.Graph()
        x = graph.placeholder("x")
        graph.call_function(
            print,
            (x,),
            {
                "kernel_idx": kernel_side_table.add_kernel(kernel),
                "constant_args_idx": kernel_side_table.add_constant_args(constants),
            },
        )
        graph.output(x)
        return types.SimpleNamespace(graph_module=torch.fx.GraphModule({}, graph))

    a, b = triton.jit(_source_a), triton.jit(_source_b)
    tuned = triton.autotune([triton.Config({"BLOCK": 64})], key=["n"])(triton.jit(_source_a))
    assert packages._launches(program(a, {"BLOCK": 64})) == packages._launches(program(a, {"BLOCK": 64}))
    assert packages._launches(program(a, {"BLOCK": 64})) != packages._launches(program(b, {"BLOCK": 64}))
    assert packages._launches(program(a, {"BLOCK": 64})) != packages._launches(program(a, {"BLOCK": 128}))
    assert packages._launches(program(tuned, {})) != packages._launches(program(a, {}))


def test_a_key_is_compiled_once_and_linked_for_every_other_child(tmp_path, monkeypatch):
    monkeypatch.setenv(protocol.PACKAGE_STORE_ENV, str(tmp_path / "store"))
    compiled = []

    def compile_here(path):
        def make():
            compiled.append(path)
            (tmp_path / path).write_bytes(b"library")
            return {"compile_seconds": 9.5}

        return make

    results = {}

    def child(name):
        results[name] = packages.compiled_once("k" * 32, str(tmp_path / name), compile_here(name))

    threads = [threading.Thread(target=child, args=(f"build-{i}.pt2",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(compiled) == 1 and len(results) == 4
    for name, detail in results.items():
        assert (tmp_path / name).read_bytes() == b"library"
        assert detail["compile_seconds"] == 9.5 and detail["package_key"] == "k" * 32
        assert ("reused_from" in detail) == (name != compiled[0])
    record = json.loads((tmp_path / "store" / ("k" * 32) / "record.json").read_text())
    assert record["compiled_at"] == str(tmp_path / compiled[0])


def test_a_failed_compile_is_not_stored(tmp_path, monkeypatch):
    monkeypatch.setenv(protocol.PACKAGE_STORE_ENV, str(tmp_path / "store"))

    def fails():
        raise RuntimeError("C++ compile error")

    for _ in range(2):
        with pytest.raises(RuntimeError, match="C\\+\\+ compile error"):
            packages.compiled_once("f" * 32, str(tmp_path / "p.pt2"), fails)
    assert not (tmp_path / "store" / ("f" * 32) / "record.json").exists()


def test_outside_a_run_the_library_is_compiled_here(tmp_path, monkeypatch):
    monkeypatch.delenv(protocol.PACKAGE_STORE_ENV, raising=False)
    assert packages.compiled_once("k" * 32, str(tmp_path / "p"), lambda: {"compile_seconds": 1.0}) == {
        "compile_seconds": 1.0
    }


def test_a_program_the_key_cannot_read_is_compiled_unshared_with_the_compilers_own_outcome(tmp_path, monkeypatch):
    """On the H100 a tensor subclass's constant stopped the key (`.numpy() is not supported for tensor subclasses`)
    and that error became the AOTI cells' outcome in place of Inductor's own: the key never decides an outcome."""
    from compat.child import artifacts

    monkeypatch.setenv(protocol.PACKAGE_STORE_ENV, str(tmp_path / "store"))
    ep = _export(CELL, False)

    def unreadable(*args):
        raise RuntimeError(".numpy() is not supported for tensor subclasses.")

    def inductor_fails(ep, path):
        raise RuntimeError("Cannot access data pointer of Tensor (e.g. FakeTensor, FunctionalTensor)")

    monkeypatch.setattr(packages, "program_key", unreadable)
    monkeypatch.setitem(artifacts.LIBRARIES, "aoti", (protocol.PACKAGE, inductor_fails, None))
    with pytest.raises(RuntimeError, match="Cannot access data pointer"):
        artifacts.compile_library("aoti", ep, str(tmp_path / "p.pt2"))
    monkeypatch.setitem(
        artifacts.LIBRARIES, "aoti", (protocol.PACKAGE, lambda ep, path: {"compile_seconds": 1.0}, None)
    )
    detail = artifacts.compile_library("aoti", ep, str(tmp_path / "p.pt2"))
    assert detail["compile_seconds"] == 1.0 and detail["package_key"] is None and ".numpy()" in detail["unkeyed"]
    assert not (tmp_path / "store").exists()


def test_a_kernel_nothing_identifies_stops_the_key_rather_than_sharing_a_library():
    class Opaque:  # no cache key, no function under it
        pass

    with pytest.raises(ValueError, match="without a cache key or function"):
        packages._kernel_identity(Opaque())
