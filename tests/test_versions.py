"""The support matrix across versions: per style and stage, the versions where it works, how each is known, the
cause changes between versions, and the tutorial chart's claims where the measurement disagrees."""

import copy

import pytest

from compat.report import versions

from .docs_fixtures import DATA_PTR, ENV, cell, doc, versions_page_files

CPU_ENV = {**ENV, "gpus": []}


def _run(torch, env, cells):
    return doc(cells, env={**copy.deepcopy(env), "torch": torch})


def test_a_cause_that_changes_between_versions_is_named_with_the_versions_on_each_side():
    runs = [
        (
            "a.json",
            _run(
                "2.11.0",
                CPU_ENV,
                [
                    cell(
                        "export_nonstrict",
                        "failed",
                        device="cpu",
                        error="RuntimeError",
                        message="wrap_triton only works on functions",
                    )
                ],
            ),
        ),
        (
            "b.json",
            _run(
                "2.13.0",
                CPU_ENV,
                [cell("export_nonstrict", "failed", device="cpu", error="RuntimeError", message=DATA_PTR)],
            ),
        ),
        ("c.json", _run("2.14.0", CPU_ENV, [cell("export_nonstrict", "passed", device="cpu")])),
    ]
    table = versions.collect(runs)
    text = versions.sentence("raw_jit", "export_nonstrict", "cpu", table[("raw_jit", "export_nonstrict", "cpu")])
    assert text.startswith("`raw_jit` · `export_nonstrict` on cpu: fails with an error on 2.11 (wrap_triton only works")
    assert "fails with an error on 2.13 (Cannot access data pointer" in text
    assert text.endswith("works on the model's inputs, not fuzz-verified on 2.14 [CPU]")  # no fuzz test ran
    md = versions.markdown(runs)
    assert "| `raw_jit` · `export_nonstrict` | ❌C | ❌C | ☑️C |" in md


def test_a_gpu_measurement_and_the_charts_claim_side_by_side_where_they_disagree():
    gpu = _run(
        "2.11.0",
        ENV,
        [
            cell("aoti_strict", "failed", error="RuntimeError", message="no"),
            cell("aoti_nonstrict", "passed"),
            cell("eager", "passed"),
        ],
    )
    rows = versions.chart_rows(versions.collect([("g.json", gpu)]))
    assert rows == [
        (
            "Supports AOTInductor",
            "Triton kernel (no explicit torch.library wrapper) (`raw_jit`)",
            "Yes",
            "In some cases: 1 of 2 cells work",
        )
    ]  # inference agrees with the chart: not listed
    assert "The tutorial's chart against the GPU measurement" in versions.html_page([("g.json", gpu)])


@pytest.mark.parametrize("found", ["mismatch", "failed"])
def test_a_cell_the_fuzz_tests_proved_wrong_is_not_shown_as_working(found):
    gpu = _run("2.11.0", ENV, [cell("eager", "passed")])
    gpu["fuzz"] = [{**gpu["cells"][0], "outcome": {**gpu["cells"][0]["outcome"], "kind": found}}]
    (entry,) = versions.collect([("g.json", gpu)])[("raw_jit", "eager", "cuda")].values()
    assert entry.state == {"mismatch": "wrong_some", "failed": "errors_some"}[found]


def test_a_version_works_fuzz_verified_only_where_every_cell_is():
    gpu = _run("2.11.0", ENV, [cell("eager", "passed"), cell("eager", "passed", dtype="float16")])
    gpu["fuzz"] = [gpu["cells"][0]]
    (entry,) = versions.collect([("g.json", gpu)])[("raw_jit", "eager", "cuda")].values()
    assert (entry.verified, entry.state) == (1, "unfuzzed")
    gpu["fuzz"] = gpu["cells"]
    (entry,) = versions.collect([("g.json", gpu)])[("raw_jit", "eager", "cuda")].values()
    assert (entry.verified, entry.state) == (2, "verified")


def test_the_committed_versions_page_matches_the_results_it_names():
    from pathlib import Path

    from compat.evidence import results
    from compat.evidence.expectations import Expectations
    from compat.run.commands import render_versions

    root = Path(__file__).resolve().parent.parent
    committed = (root / "docs" / "VERSIONS.md").read_text()
    named = versions_page_files()
    assert len(named) >= 7, "the page names every torch version's CPU results and the GPU's"
    docs = [(p, results.load(root / p)) for p in named]
    pages = render_versions(docs, Expectations.load(root / "expectations.yaml"), root / "docs")
    assert pages["VERSIONS.md"] == committed, (
        f"docs/VERSIONS.md is out of sync: run `python -m compat versions {' '.join(named)} --out-dir docs`"
    )


def test_silent_wrong_values_have_their_own_mark_and_cause_never_a_clean_errors():
    wrong = cell("eager", "mismatch", device="cpu")
    wrong["outcome"]["numerics"] = [
        {
            "input": "batch 1",
            "ok": False,
            "max_rel_err": 1.6e19,
            "why": "batch 1: max abs err 1.6e+19 > 0.04 x scale 56.8",
        }
    ]
    runs = [
        ("a.json", _run("2.9.0", CPU_ENV, [wrong])),
        ("b.json", _run("2.10.0", CPU_ENV, [cell("eager", "failed", device="cpu", error="E", message="refused")])),
    ]
    md = versions.markdown(runs)
    assert "| `raw_jit` · `eager` | ≠C | ❌C |" in md  # ≠: wrong values, as in the chart and the grids
    entry = versions.collect(runs)[("raw_jit", "eager", "cpu")]["2.9"]
    assert entry.state == "wrong" and entry.causes == {"no error, values beyond tolerance"}
    page = versions.html_page(runs)
    assert "class=m-wrong " in page and "`" not in page.split("<h2 id=cpu>")[1]  # backticks rendered as <code>


def test_the_charts_rows_are_quoted_verbatim_and_only_real_disagreements_listed():
    def run(*cells):
        return versions.collect([("g.json", _run("2.11.0", ENV, list(cells)))])

    # "In all cases" is what the measurement calls Yes; a hedged claim is refuted only by less.
    assert not versions.chart_rows(run(*(cell(s, "passed", style="custom_op") for s in versions.COMPILE)))
    assert not versions.chart_rows(run(*(cell(s, "passed") for s in versions.COMPILE)))
    rows = versions.chart_rows(
        run(
            cell("compile_eager", "failed", error="E", message="x"),
            cell("compile_inductor", "failed", error="E", message="x"),
        )
    )
    assert rows[0][0] == "Supports torch.compile(fullgraph=True)" and rows[0][3].startswith("No: 0 of 2")
    # Training and FLOPs of a custom_op assume registrations no style here makes: never compared.
    assert not versions.chart_rows(
        run(
            cell("compile_backward", "failed", style="custom_op", error="E", message="x"),
            cell("flop_count", "failed", style="custom_op", error="E", message="x"),
        )
    )
    # custom_op's "no AOTInductor" holds without Python: said so beside what Python measured.
    (row,) = versions.chart_rows(
        run(
            cell("aoti_strict", "passed", style="custom_op"),
            cell("aoti_cpp_strict", "failed", style="custom_op", error="E", message="x"),
        )
    )
    assert row[2] == "No" and "from C++ No: 0 of 1 cells work (the chart holds without Python)" in row[3]


def test_the_versions_page_says_in_words_which_versions_a_gpu_measured():
    import gzip
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    gpu = json.load(gzip.open(root / "results/torch-2.11.0-cu130_triton-3.6.0_NVIDIA-H200.json.gz"))
    cpu = json.load(gzip.open(root / "results/torch-2.13.0-cpu_triton-3.7.1_cpu.json.gz"))
    said = versions.gpu_evidence([("g", gpu), ("c", cpu)])
    assert said.startswith("**GPU evidence:** torch 2.11.0+cu130 on NVIDIA H200 only")
    assert "none" in versions.gpu_evidence([("c", cpu)])
