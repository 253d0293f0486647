"""The GitHub Actions workflow example (examples/github-actions/compat-gate.yml): valid for GitHub, clean for an
Actions linter, and every command it runs is one the CLI takes."""

import shlex
import shutil
import subprocess

import pytest
import yaml

from compat.__main__ import parser
from compat.run.options import OPTIONS
from tests.projects import ROOT

WORKFLOW = ROOT / "examples" / "github-actions" / "compat-gate.yml"
LINT = "pip install -e '.[lint]' (check-jsonschema, zizmor)"


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed: {LINT}")
    return path


@pytest.mark.slow
def test_the_workflow_is_valid_against_githubs_schema():
    subprocess.run(
        [_tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
        check=True,
        capture_output=True,
        text=True,
    )


@pytest.mark.slow
def test_an_actions_linter_finds_nothing():
    result = subprocess.run(
        [_tool("zizmor"), "--offline", "--no-progress", str(WORKFLOW)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _compat_commands() -> list[list[str]]:
    """The CLI's commands in the workflow's steps, the workflow's own variables put in."""
    workflow = yaml.safe_load(WORKFLOW.read_text())
    variables = {f"${k}": str(v) for k, v in workflow["env"].items()} | {"$SHARD": "1"}
    steps = [s for job in workflow["jobs"].values() for s in job["steps"] if "run" in s]
    commands = []
    for step in steps:
        for line in step["run"].replace("\\\n", " ").splitlines():
            for name, value in variables.items():
                line = line.replace(name, value)
            words = shlex.split(line, comments=True)
            if words[:3] == ["python", "-m", "compat"]:
                commands.append(words[3:])
    return commands


def test_every_command_it_runs_is_one_the_cli_takes():
    commands = _compat_commands()
    assert {c[0] for c in commands} == {"shard", "run", "merge", "diff"}
    pytest_options = {flag for flags, _ in OPTIONS for flag in flags} | {"-n"}
    for words in commands:
        args, extra = parser("python -m compat").parse_known_args(words)
        if args.command == "run":  # what it does not take itself goes to pytest: the plugin's options
            assert {w for w in extra if w.startswith("-")} <= pytest_options, words
        else:
            assert not extra, words
