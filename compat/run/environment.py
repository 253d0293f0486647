"""What the run ran on, and the environment faults the suite recognises (with their remedies)."""

from __future__ import annotations

import datetime
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch
import triton

from ..evidence.outcomes import Outcome

LIBSTDCXX = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"


COMMIT_ENV = "COMPAT_COMMIT"  # the harness's commit where its checkout has no git (a copy on a GPU runner)


def describe(repository: Path | None = None) -> dict[str, Any]:
    """The versions, the machine and the date; for a run, the commits of the harness and of the `repository` it gates
    (`commits`: None where either is no git checkout)."""
    env: dict[str, Any] = {
        "torch": str(torch.__version__),
        "triton": str(triton.__version__),
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "ld_preload": os.environ.get("LD_PRELOAD", ""),
        "gpus": [],
        "driver": None,
    }
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            major, minor = torch.cuda.get_device_capability(i)
            env["gpus"].append({"index": i, "name": torch.cuda.get_device_name(i), "capability": f"{major}.{minor}"})
        env["driver"] = _driver_version()
    if repository is not None:
        harness, gated = Path(__file__).resolve().parents[2], Path(repository).resolve()
        given = os.environ.get(COMMIT_ENV)  # a copy's git, where it has one, may be older than the copy (a runner's)
        env["commits"] = {
            # an installed harness (not a checkout of its own) is named by the commit given, else none
            "compat": given or (_commit(harness) if (harness / ".git").exists() else None),
            "repository": "the harness's"
            if gated == harness
            else given
            if given and harness in gated.parents  # a repository in the harness's checkout (its examples)
            else _commit(gated),
        }
    return env


def _commit(path: Path) -> str | None:
    """The checkout's HEAD, with "+changes" where tracked files differ from it; None where it is no git checkout."""
    try:
        head = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30)
        if head.returncode != 0:
            return None
        changed = subprocess.run(
            ["git", "-C", str(path), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return head.stdout.strip() + ("+changes" if changed else "")


def _driver_version() -> str | None:
    if not shutil.which("nvidia-smi"):
        return None
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.strip().splitlines()[0] if out.strip() else None


def machine_label(env: dict[str, Any]) -> str:
    """A file-name-safe label: torch, triton and GPU (or cpu)."""
    gpus = env["gpus"]
    gpu = (f"{len(gpus)}x-" if len(gpus) > 1 else "") + gpus[0]["name"] if gpus else "cpu"
    label = f"torch-{env['torch']}_triton-{env['triton']}_{gpu}"
    return "".join(c if c.isalnum() or c in "._-" else "-" for c in label)


def crash_remedy(outcome: Outcome) -> str | None:
    """The remedy for a crash the suite recognises, or None."""
    phase = outcome.detail.get("phase", "")
    if (
        outcome.kind == "crashed"
        and outcome.detail.get("signal") == "SIGSEGV"
        and phase.startswith("aoti_load")
        and sys.platform.startswith("linux")
        and LIBSTDCXX not in os.environ.get("LD_PRELOAD", "")
    ):
        return (
            f"Known environment crash, not a wrapping-style fault: loading an AOTInductor package segfaults in "
            f"the generated wrapper .so (parse_device_str -> std::regex) when the process resolves an older "
            f"libstdc++ than the one the package was built against. Rerun with "
            f"LD_PRELOAD={LIBSTDCXX} (see README, 'AOTInductor segfaults on load')."
        )
    return None
