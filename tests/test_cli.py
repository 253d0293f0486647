"""The command line as a user meets it: defaults that never overwrite committed files, bad input named with exit 2,
one rule for exit codes, and help that says what each command and option does."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from compat import __main__ as cli
from compat import __version__
from compat.report.report import KERNEL_PAGES
from compat.run.commands import DOCS

from .docs_fixtures import writeup

ROOT = Path(__file__).resolve().parent.parent
NOT_RESULTS = {"schema": 1}  # valid JSON, the right schema, and still no results file


def stand_in_for_the_run(monkeypatch, run):
    """pytest.main replaced for the matrix run the CLI starts (`run(args)` answers it); the CLI's reading of its
    configuration (compat.run.configuration, with a plugin of its own) still goes to pytest."""
    real = pytest.main

    def main(args, plugins=None):
        return real(args, plugins=plugins) if plugins else run(args)

    monkeypatch.setattr(pytest, "main", main)


def write(tmp_path, name, doc) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def test_run_writes_to_the_users_runs_folder_never_the_committed_results(monkeypatch, tmp_path):
    seen = []
    stand_in_for_the_run(monkeypatch, lambda args: seen.append(args) or 0)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pytest.ini").write_text("[pytest]\ncompat_cases = compat.matrix.kernels\n")
    assert cli.main(["run"]) == 0
    # No file named: the plugin writes a file of its own under the rootdir's compat-results/ (compat.run.runfiles).
    assert not [a for a in seen[0] if a.startswith("--compat-results")] and seen[0][2] == str(tmp_path)
    assert cli.main(["run", "--results", "results/mine.json"]) == 0  # the committed folder only when named
    assert "--compat-results=results/mine.json" in seen[1]


@pytest.mark.parametrize("pytest_code, ours", [(0, 0), (1, 1), (2, 130), (3, 3), (4, 2), (5, 2)])
def test_run_follows_the_one_exit_code_rule(monkeypatch, pytest_code, ours):
    stand_in_for_the_run(monkeypatch, lambda args: pytest_code)
    assert cli.main(["run", "--results", "x.json"]) == ours


def test_a_signal_after_pytest_ended_exits_130_without_a_traceback(monkeypatch, capsys):
    """`timeout` signals the run, then its process group: on the H200 the second reached the CLI after pytest's own
    handling ended, and printed a traceback."""

    def interrupted(args):
        raise KeyboardInterrupt("SIGINT")

    stand_in_for_the_run(monkeypatch, interrupted)
    assert cli.main(["run", "--results", "x.json"]) == 130
    assert capsys.readouterr().err.strip().endswith("interrupted")


def test_report_writes_to_the_users_report_folder_unless_told_docs(monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    results = write(tmp_path, "r.json", writeup())
    assert cli.main(["report", results]) == 0
    assert sorted(p.name for p in (tmp_path / cli.REPORT_DIR).iterdir()) == sorted([*DOCS.values(), KERNEL_PAGES])
    assert not (tmp_path / "docs").exists()


@pytest.mark.parametrize(
    "command", [["report", "{r}"], ["diff", "{r}", "{r}"], ["accept", "{r}"], ["merge", "{tmp}/out.json", "{r}"]]
)
def test_a_json_file_that_is_no_results_file_is_named_with_exit_2(tmp_path, capsys, command):
    bad = write(tmp_path, "not-results.json", NOT_RESULTS)
    args = [a.format(r=bad, tmp=tmp_path) for a in command]
    assert cli.main(args) == 2
    assert "not-results.json: not a results file written by a run: 'environment' is missing" in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()


def test_a_fuzz_reproducer_with_a_malformed_sequence_is_exit_2(capsys):
    example = '{"shape":[4],"layout":"contiguous","seed":0,"scale":1.0,"sign":"mixed","specials":[]}'
    args = ["fuzz", "silu-raw_jit-compile_inductor-float32-cpu_interpret", "--example", example, "--after", "[1]"]
    assert cli.main(args) == 2
    assert "--after: not a sequence of calls" in capsys.readouterr().err


def test_diff_output_to_a_folder_that_cannot_be_written_is_exit_2_and_writes_nothing(tmp_path, capsys):
    results = write(tmp_path, "r.json", writeup())
    (tmp_path / "blocker").write_text("a file, not a folder")
    assert cli.main(["diff", results, results, "--output", str(tmp_path / "blocker" / "d.md")]) == 2
    err = capsys.readouterr().err
    assert "--output" in err and "cannot be written" in err and "Traceback" not in err


def test_help_describes_the_tool_the_diff_arguments_and_the_forwarded_options(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    top = capsys.readouterr().out
    assert "which ways of wrapping a Triton kernel" in top and "Exit status" in top
    with pytest.raises(SystemExit):
        cli.main(["diff", "--help"])
    assert "the results before" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    assert "--compat-stages" in capsys.readouterr().out


@pytest.mark.slow
def test_version_and_the_installed_script_name_itself(tmp_path):
    out = subprocess.run([sys.executable, "-m", "compat", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == f"triton-export-compat {__version__}"
    script = Path(sys.executable).parent / "triton-export-compat"
    if not script.exists():
        pytest.skip("the package is not installed in this environment (pip install -e .)")
    usage = subprocess.run([str(script), "bogus"], capture_output=True, text=True, cwd=tmp_path)
    assert usage.returncode == 2 and usage.stderr.startswith("usage: triton-export-compat")


def test_shard_takes_the_directorys_own_selection_and_refuses_a_count_it_cannot_deal(monkeypatch, tmp_path, capsys):
    from compat.matrix.cells import matrix

    from .projects import write_results

    monkeypatch.chdir(tmp_path)
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\ncompat_cases = compat.matrix.kernels\ncompat_kernels = silu\n"
        "compat_styles = raw_jit,triton_op\n"
        "compat_devices = cuda\n"
    )
    write_results(tmp_path / "r.json", {"silu-triton_op-eager-float32-cuda": 60.0})
    assert cli.main(["shard", "--count", "2", "--durations", "r.json"]) == 0
    lists = [(tmp_path / cli.SHARDS_DIR / f"shard-{i}-of-2.txt").read_text().split() for i in (1, 2)]
    want = matrix({"kernel": ["silu"], "style": ["raw_jit", "triton_op"], "device": ["cuda"]})
    assert sorted(lists[0] + lists[1]) == sorted(c.id for c in want) and all(lists)
    assert cli.main(["shard", "--count", "999", "--durations", "r.json", "--out-dir", "other"]) == 2
    assert "between 1 and" in capsys.readouterr().err and not (tmp_path / "other").exists()
    # --cells: the rest of a cut shard, split again; its cells only, whole shared children kept together
    rest = [c.id for c in want if c.style == "triton_op"]
    (tmp_path / "rest.txt").write_text("\n".join(rest))
    assert cli.main(["shard", "--count", "2", "--durations", "r.json", "--cells", "rest.txt", "--out-dir", "rest"]) == 0
    lists = [(tmp_path / "rest" / f"shard-{i}-of-2.txt").read_text().split() for i in (1, 2)]
    assert sorted(lists[0] + lists[1]) == sorted(rest) and all(lists)
    (tmp_path / "other.txt").write_text("silu-raw_jit-eager-float32-cpu_interpret\n")
    assert cli.main(["shard", "--count", "1", "--durations", "r.json", "--cells", "other.txt"]) == 2
    assert "none of its cells is in the selection" in capsys.readouterr().err


@pytest.fixture
def repository(tmp_path, monkeypatch):
    """A user's repository: its pytest ini in pyproject.toml names its cases and expectations; a tests/ folder."""
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\ncompat_cases = ["compat.matrix.kernels"]\n'
        'compat_expectations = "gate.yaml"\ncompat_kernels = "silu"\n'
    )
    (tmp_path / "elsewhere").mkdir()
    return repo


def test_run_from_a_subfolder_gates_the_repository_and_refuses_a_folder_of_no_repository(
    repository, monkeypatch, capsys
):
    seen = []
    stand_in_for_the_run(monkeypatch, lambda args: seen.append(args) or 0)
    monkeypatch.chdir(repository / "tests")
    assert cli.main(["run"]) == 0
    args = seen[0]
    assert args[args.index("-c") + 1] == str(repository / "pyproject.toml")
    assert args[args.index("--rootdir") + 1] == str(repository)
    assert f"configuration: {repository / 'pyproject.toml'}" in capsys.readouterr().out
    monkeypatch.chdir(repository.parent / "elsewhere")  # no ini up to the root: it would gate the suite's kernels
    assert cli.main(["run"]) == 2 and len(seen) == 1
    assert "no pytest configuration" in capsys.readouterr().err
    assert cli.main(["run", "--compat-kernels=silu"]) == 0  # unless the suite's kernels are named


def test_accept_cells_coverage_and_shard_find_the_repository_from_a_subfolder_or_refuse(
    repository, monkeypatch, tmp_path, capsys
):
    results = write(tmp_path, "r.json", writeup())
    monkeypatch.chdir(repository / "tests")
    assert cli.main(["accept", results]) == 0  # the ini's compat_expectations, created as a run's accept creates it
    assert (repository / "gate.yaml").is_file() and not (repository / "tests" / "gate.yaml").exists()
    capsys.readouterr()
    assert cli.main(["cells", "--stages=eager", "--devices=cuda", "--styles=triton_op"]) == 0
    assert capsys.readouterr().out.split() == [
        f"silu-triton_op-eager-{d}-cuda" for d in ("float32", "float16", "bfloat16")
    ]
    monkeypatch.chdir(repository.parent / "elsewhere")
    for command in (
        ["accept", results],
        ["cells"],
        ["coverage", "compat"],
        ["shard", "--count", "1", "--durations", results],
    ):
        assert cli.main(command) == 2, command
        assert "no pytest configuration" in capsys.readouterr().err
    assert cli.main(["accept", results, "--expectations", "new.yaml"]) == 0  # a file named: created
    assert (repository.parent / "elsewhere" / "new.yaml").is_file()
    capsys.readouterr()
    assert (
        cli.main(
            ["cells", "--kernels=silu", "--styles=raw_jit", "--stages=eager", "--devices=cuda", "--dtypes=float32"]
        )
        == 0
    )  # the suite's kernels named on purpose
    assert capsys.readouterr().out.split() == ["silu-raw_jit-eager-float32-cuda"]


def test_a_stale_compat_kernels_in_the_ini_is_a_usage_error_naming_it(repository, monkeypatch, capsys):
    (repository / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\ncompat_cases = ["compat.matrix.kernels"]\ncompat_kernels = "silu,renamed_kernel"\n'
    )
    monkeypatch.chdir(repository)
    assert cli.main(["cells"]) == 2
    err = capsys.readouterr().err
    assert "compat_kernels in" in err and "pyproject.toml" in err and "'renamed_kernel'" in err


def test_accept_refuses_a_read_only_file_writes_through_a_symlink_and_keeps_modes(
    repository, monkeypatch, tmp_path, capsys
):
    from .docs_fixtures import cell, doc

    results = write(tmp_path, "r.json", doc([cell("eager", "timed_out", dtype="float32")]))  # no row says so
    monkeypatch.chdir(repository)
    target = tmp_path / "shared" / "gate.yaml"
    target.parent.mkdir()
    target.write_text("schema: 1\ncells: {}\n")
    (repository / "gate.yaml").symlink_to(target)
    assert cli.main(["accept", results]) == 0
    assert (repository / "gate.yaml").is_symlink() and "silu-" in target.read_text()  # the target got the rows
    target.chmod(0o444)
    before = target.read_text()
    assert cli.main(["accept", results]) == 2 and "read-only" in capsys.readouterr().err
    assert target.read_text() == before
    assert cli.main(["accept", results, "--overwrite-read-only"]) == 0
    assert target.stat().st_mode & 0o777 == 0o444


def _describe(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "compat", "describe", *args], capture_output=True, text=True, cwd=cwd)


@pytest.mark.slow
def test_the_axes_page_is_generated_from_the_registries_and_held_fresh(tmp_path):
    """docs/AXES.md is what `describe` writes from the suite's registries (a fresh process: only the suite's own
    kernels and catalogue entries registered)."""
    done = _describe("--out-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "AXES.md").read_text() == (ROOT / "docs" / "AXES.md").read_text(), (
        "docs/AXES.md is stale: run `python -m compat describe`"
    )


@pytest.mark.slow
def test_describe_a_cell_says_what_it_does_its_row_its_catalogue_entry_its_evidence_and_how_to_rerun_it():
    done = _describe("silu-raw_jit-export_nonstrict-float32-cuda")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "silu-raw_jit-export_nonstrict-float32-cuda"
    assert lines[2].startswith("  style   raw_jit: `kernel[grid](...)` launched from a plain Python function")
    row = next(i for i, line in enumerate(lines) if line.startswith("expectation where it last ran: failed"))
    assert "Cannot access data pointer of Tensor" in lines[row]
    assert any(line.startswith("  catalogue: ") for line in lines[row:])
    assert any(line.startswith("evidence: failed: RuntimeError: Cannot access data pointer") for line in lines)
    assert lines[-1] == (
        "reproduce: python -m compat run --compat-kernels=silu --compat-styles=raw_jit "
        "--compat-stages=export_nonstrict --compat-dtypes=float32 --compat-devices=cuda"
    )
    # A combination that is not in the matrix: what it would be, and why it is not there; an unknown name: exit 2.
    absent = _describe("silu_out-autograd_function-eager-float32-cuda")
    assert absent.returncode == 0 and absent.stdout.splitlines()[-1].startswith("not in the matrix: it varies")
    bad = _describe("silu-nope-eager-float32-cuda")
    assert bad.returncode == 2 and "unknown style name(s) 'nope'" in bad.stderr and not bad.stdout


@pytest.mark.slow
def test_describe_a_users_op_from_their_repository():
    repo = ROOT / "examples" / "my_kernels"
    results = (
        ROOT / "results" / "examples" / "my_kernels" / "torch-2.11.0-cu130_triton-3.6.0_NVIDIA-H100-80GB-HBM3.json.gz"
    )
    done = _describe("my_rms_norm-as_shipped-export_strict-float32-cuda", "--results", str(results), cwd=repo)
    assert done.returncode == 0, done.stderr
    assert "  kernel  my_rms_norm: torch.ops.my_kernels.rms_norm" in done.stdout
    assert "expectation where it last ran: " in done.stdout and f"in {results} (torch 2.11.0+cu130" in done.stdout
