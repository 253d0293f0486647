"""Parent side: start a child for a task, wait for it within its budget, and read what it recorded.

Two ways to start a child, chosen per run (`--compat-children`):
- `forked` (the default on Linux): a fork of the run's warm server for the device environment (compat.child.server,
  shared by the run's workers: compat.run.servers), which imported torch and the suite once; the run's CPU ISA
  detection is shared with it (compat.child.toolchain).
- `fresh`: a new interpreter per task (`python -m compat.child`), which imports everything and detects the ISAs
  itself: the old way, kept for the benchmark that measures the difference and for platforms without fork.

Either way a child runs in a process group of its own: a timeout kills the group, compilers included, and so does an
interrupt. A crash, hang or abort is the outcome of the phase it happened in (compat.child.journal); what fails
before the task began, or outside every phase, is a HarnessError.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..atomic import write_atomic
from ..child.protocol import COMPILES_ENV, IMPORTS_ENV, ISA_FILE_ENV, NVML_CHECK, USER_NVML_CHECK
from ..errors import DeclarationError, HarnessError
from ..evidence import outcomes
from ..evidence.outcomes import Outcome
from ..processes import kill_for_time, kill_group, parent_death_signal
from .options import DEFAULT_MODE, MODES
from .servers import Connection, connect, server_env, stop, tail

LAUNCHERS = "launchers"  # in the run directory: each process's count of the interpreters it started
INTERRUPTED = "INTERRUPTED"  # a file in the run directory: the run is being stopped, children die on purpose


@dataclass
class ChildResult:
    phases: dict[str, Outcome] = field(default_factory=dict)  # in the order they began
    seconds: dict[str, float] = field(default_factory=dict)
    cpu_seconds: dict[str, float] = field(default_factory=dict)  # per phase, where the child recorded it
    log: str = ""
    env: dict[str, str | None] = field(default_factory=dict)  # the child's CHILD_ENV, and its pid
    harness_error: str | None = None  # the harness failed in this child: no phase's outcome is the cell's
    declaration: bool = False  # that failure is a declaration's (compat.errors.DeclarationError): the user's to fix
    ready: bool = False  # the child imported its task's code
    cpu_s: float = 0.0  # the CPU time of the child and of the compilers it waited for
    span: tuple[float, float] | None = None  # (first, last) journal times; not recorded, read by Launcher.run

    def to_dict(self) -> dict[str, Any]:
        return {
            "phases": {name: o.to_dict() for name, o in self.phases.items()},
            "seconds": self.seconds,
            "cpu_seconds": self.cpu_seconds,
            "log": self.log,
            "env": self.env,
            "harness_error": self.harness_error,
            "declaration": self.declaration,
            "ready": self.ready,
            "cpu_s": self.cpu_s,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ChildResult":
        return cls(
            {n: Outcome.from_dict(o) for n, o in d["phases"].items()},
            d["seconds"],
            d.get("cpu_seconds", {}),
            d["log"],
            d["env"],
            d.get("harness_error"),
            d.get("declaration", False),
            d.get("ready", True),
            d.get("cpu_s", 0.0),
        )

    def _times(self) -> dict[str, dict[str, float]]:
        """The child's seconds and CPU seconds per phase (and its startup), on every outcome read from it."""
        return {"seconds": self.seconds, "cpu_seconds": self.cpu_seconds}

    def outcome(self, final: str, among: tuple[str, ...] | None = None) -> Outcome:
        """The first phase that did not pass, else `final`'s outcome (which holds its numerics).

        Phases are those up to `final`, or only those named in `among` when the child also did work for other cells;
        a phase that ended the child (crash, timeout) before `final` counts either way."""
        if self.harness_error:
            error = DeclarationError if self.declaration else HarnessError
            raise error(f"{self.harness_error} (child log: {self.log})")
        for name, outcome in self.phases.items():
            counts = among is None or name in among or outcome.kind in ("crashed", "timed_out")
            if counts and outcome.kind != "passed":
                return Outcome(
                    outcome.kind,
                    outcome.error_type,
                    outcome.message,
                    outcome.numerics,
                    {**outcome.detail, "phase": name, "child": self.env, **self._times()},
                )
            if name == final:
                return Outcome(
                    outcome.kind,
                    outcome.error_type,
                    outcome.message,
                    outcome.numerics,
                    {**outcome.detail, "child": self.env, **self._times()},
                )
        raise HarnessError(
            f"the child never reached phase {final!r} (phases: {list(self.phases)}; child log: {self.log})"
        )


def read_journal(path: Path) -> ChildResult:
    result = ChildResult()
    if not path.exists():
        return result
    begun: dict[str, dict] = {}
    started = None
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        event = entry["event"]
        result.span = (result.span[0] if result.span else entry["t"], entry["t"])
        if event == "start":
            result.env, started = entry["env"], entry["t"]
        elif event == "ready":
            result.ready = True
            if started is not None:  # the child's imports of its task's code (the profile's "startup" phase)
                result.seconds["startup"] = round(entry["t"] - started, 3)
        elif event == "harness_error":
            result.harness_error, result.declaration = entry["error"], entry.get("declaration", False)
        elif event == "waited":  # the profile's phase of that name, with no outcome: no cell's stage
            name = f"waiting for {entry['what']}"
            result.seconds[name] = round(result.seconds.get(name, 0.0) + entry["s"], 3)
        elif event == "begin":
            begun[entry["phase"]] = entry
            # A placeholder keeps the order; its "end", or collect() for the phase the child died in, fills it.
            result.phases.setdefault(entry["phase"], None)  # type: ignore[arg-type]
        elif event == "end":
            result.phases[entry["phase"]] = Outcome.from_dict(entry["outcome"])
            start = begun.get(entry["phase"], entry)
            result.seconds[entry["phase"]] = round(entry["t"] - start["t"], 3)
            if "cpu" in entry and "cpu" in start:
                result.cpu_seconds[entry["phase"]] = round(entry["cpu"] - start["cpu"], 3)
    return result


# One thread's stack in faulthandler's dump; a dump is a run of them.
_THREAD = r"(?:Current thread|Thread) 0x[0-9a-f]+ \(most recent call first\):\n(?:  .*\n)*\n?"
_DUMP = re.compile(f"(?:{_THREAD})+")


def _stacks(path: Path, chars: int = 4000) -> str:
    """The stacks a child wrote when it was asked before being killed for its time (compat.processes.kill_for_time),
    innermost frames first; or its log's tail when it wrote none."""
    text = tail(path, 1 << 20)
    dumps = _DUMP.findall(text)
    return dumps[-1][:chars] if dumps else text[-chars:]


def collect(journal: Path, log: Path, rc: int | None, timed_out: bool, timeout: float) -> ChildResult:
    """What the child recorded, plus how it ended: a phase it died in is that phase's crash or timeout."""
    result = read_journal(journal)
    result.log = str(log)
    unfinished = [p for p, o in result.phases.items() if o is None]
    if timed_out or unfinished or rc:
        phase = unfinished[-1] if unfinished else "child (outside any phase)"
        if timed_out:
            died = outcomes.timed_out(timeout, phase, _stacks(log))
        else:  # exited 0 with a phase open is the child's own bug
            died = outcomes.from_exit(rc or 0, tail(log), phase)
        if not result.ready and not result.harness_error:
            result.harness_error = (
                f"the child ended before its task began ({died.message}); its log ends: {tail(log, 600).strip()}"
            )
        result.phases[phase] = died
    return result


def compiler_caches(directory: Path) -> dict[str, str]:
    """The environment that puts Inductor's and Triton's caches under `directory` (both read it at each use)."""
    return {"TORCHINDUCTOR_CACHE_DIR": str(directory / "inductor"), "TRITON_CACHE_DIR": str(directory / "triton")}


def _children_cpu() -> float:
    """The CPU seconds of every child this process has waited for (a fresh child's, once it ended)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _child_setup() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crashing CUDA process can dump gigabytes of core
    parent_death_signal(signal.SIGKILL)


def _child_env(env: dict[str, str], paths: tuple[str, ...] = ()) -> dict[str, str]:
    """This process's environment, with the child's own settings, and the suite and `paths` importable."""
    root = str(Path(__file__).resolve().parents[2])
    return {
        **os.environ,
        **env,
        "PYTHONUNBUFFERED": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [root, *paths, os.environ.get("PYTHONPATH")])),
    }


def start_isa_detection(path: Path) -> subprocess.Popen:
    """Start the run's one detection of the CPU ISAs (compat.child.toolchain), in the background."""
    with open(path.with_suffix(".log"), "w") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "compat.child.toolchain", str(path)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=_child_env({}),
            start_new_session=True,
            preexec_fn=_child_setup,
        )


class Launcher:
    """Starts the children of one process (an xdist worker, or the CLI): forked by the run's warm server for their
    device environment, or a fresh interpreter per task."""

    def __init__(
        self,
        run_dir: Path,
        mode: str = DEFAULT_MODE,
        imports: tuple[str, ...] = (),
        paths: tuple[str, ...] = (),
        isa_file: str | None = None,
        private_caches: tuple[str, ...] = (),
        after_fork: tuple[str, ...] = (),
        owner: int | None = None,
        compiles: bool = True,
    ):
        """`imports`: modules every child imports first (the user's kernels); `paths`: where to find them;
        `private_caches`: the compiler caches (their variables) each child starts empty, removed when it ends;
        `after_fork`: those of `imports` the warm servers leave to each child (their import touches CUDA); `owner`: the
        process that owns the run's warm servers (they end with it), None for this one, which then stops them when it
        closes; `compiles`: whether any of its children may compile with Inductor (its warm servers import it)."""
        if mode not in MODES:
            raise ValueError(f"children are started {' or '.join(MODES)}, not {mode!r}")
        self.run_dir, self.mode, self.isa_file = Path(run_dir), mode, isa_file
        self.imports, self.paths, self.private_caches = tuple(imports), tuple(paths), private_caches
        self.after_fork = tuple(after_fork)
        self.owner, self.compiles = owner, compiles
        self.connections: dict[tuple, Connection] = {}  # per server environment
        self.servers: list[subprocess.Popen] = []  # the servers this process started, to reap
        self.prestarting: list[threading.Thread] = []  # the servers started ahead of the first child (prestart)
        self.spawned: list[subprocess.Popen] = []  # their processes, from before their imports
        self.started = 0  # interpreters this launcher started: servers, or fresh children
        self.cpu_seconds = 0.0  # the CPU time of every child this launcher ran, compilers included

    def _env(self, env: dict[str, str]) -> dict[str, str]:
        """A child's environment, forked or fresh: the run's one CPU ISA detection is every child's (without it each
        fresh child that compiles C++ detected again, 40-70 s on the H100)."""
        return _child_env(env, self.paths) | ({ISA_FILE_ENV: self.isa_file} if self.isa_file else {})

    def _server_env(self, env: dict[str, str]) -> dict[str, str]:
        """The environment of the warm server that forks the children of device environment `env`."""
        preloaded = [m for m in self.imports if m not in self.after_fork]
        compiles = "1" if self.compiles else "0"
        full = self._env(env) | {IMPORTS_ENV: ",".join(preloaded), COMPILES_ENV: compiles, NVML_CHECK: "1"}
        if NVML_CHECK in os.environ:
            full[USER_NVML_CHECK] = os.environ[NVML_CHECK]
        return full

    def _connect(self, full: dict[str, str], spawned=lambda proc: None) -> Connection:
        connection, started = connect(self.run_dir, full, self.owner or os.getpid(), spawned)
        if started is not None:
            self.servers.append(started)
            self.started += 1
        return connection

    def _connection(self, env: dict[str, str]) -> Connection:
        full = self._server_env(env)
        key = tuple(sorted(server_env(full).items()))
        if key not in self.connections:
            self.connections[key] = self._connect(full)
        return self.connections[key]

    def prestart(self, envs: list[dict[str, str]]) -> None:
        """Start the warm servers of these device environments now, in the background, so that they import while
        the workers start and collect, instead of after, when the first child of every worker waits for them (16-22
        s on one H100). A worker asking meanwhile waits on the server's lock as it would have waited for its start."""
        for env in envs if self.mode == "forked" else ():
            thread = threading.Thread(target=self._prestart, args=(self._server_env(env),), daemon=True)
            thread.start()
            self.prestarting.append(thread)

    def _prestart(self, full: dict[str, str]) -> None:
        try:
            self._connect(full, self.spawned.append).close()
        except HarnessError:
            pass  # it could not start (or close stopped it): its record says why, to every worker that asks for it

    def run(
        self, task: str, args: dict[str, Any], *, workdir: Path, env: dict[str, str], timeout: float
    ) -> ChildResult:
        """Run the child task `task` (compat.child.tasks) with `args`; never raises for what the child does."""
        workdir.mkdir(parents=True, exist_ok=True)
        journal, log, spec = workdir / "journal.jsonl", workdir / "child.log", workdir / "task.json"
        journal.unlink(missing_ok=True)
        caches = workdir / "cache"
        spec.write_text(
            json.dumps(
                {
                    "task": task,
                    "args": args,
                    "imports": list(self.imports),
                    "env": {var: path for var, path in compiler_caches(caches).items() if var in self.private_caches},
                }
            )
        )
        self._stop_if_interrupted()
        launched = time.time()
        try:
            if self.mode == "forked":
                rc, timed_out, cpu_s = self._connection(env).run(spec, journal, log, timeout)
            else:
                rc, timed_out, cpu_s = self._fresh(spec, journal, log, env, timeout)
        except HarnessError:
            self._stop_if_interrupted()  # the server was killed because the run is stopping
            raise
        finally:
            if self.private_caches:
                shutil.rmtree(caches, ignore_errors=True)  # gigabytes over a run
        self._stop_if_interrupted()  # the child was killed because the run is stopping: no outcome of the cell's
        self.cpu_seconds += cpu_s
        result = collect(journal, log, rc, timed_out, timeout)
        result.cpu_s = round(cpu_s, 2)
        # The profile's: until the child's first word (a server's start on its first use), and after its last.
        if result.span:
            result.seconds["launch"] = round(result.span[0] - launched, 3)
            result.seconds["exit"] = round(time.time() - result.span[1], 3)
        return result

    def _stop_if_interrupted(self) -> None:
        if (self.run_dir / INTERRUPTED).exists():
            raise KeyboardInterrupt("the run was interrupted")

    def _fresh(
        self, spec: Path, journal: Path, log: Path, env: dict[str, str], timeout: float
    ) -> tuple[int | None, bool, float]:
        self.started += 1
        before = _children_cpu()
        cmd = [sys.executable, "-X", "faulthandler", "-m", "compat.child", str(spec), str(journal)]
        with open(log, "w") as logf:
            proc = subprocess.Popen(
                cmd,
                stdout=logf,
                stderr=subprocess.STDOUT,
                env=self._env(env),
                start_new_session=True,
                preexec_fn=_child_setup,
            )
            try:
                return proc.wait(timeout=timeout), False, _children_cpu() - before
            except subprocess.TimeoutExpired:
                kill_for_time(proc.pid)
                proc.wait()
                return None, True, _children_cpu() - before
            except BaseException:
                kill_group(proc.pid)
                raise

    def close(self) -> None:
        """Stop this process's warm servers, and say how many interpreters it started (the run's count)."""
        for proc in self.spawned:  # a prestarted server still importing: no child of the run needed it
            if proc.poll() is None and proc not in self.servers:
                kill_group(proc.pid)
        for thread in self.prestarting:  # each writes its server's record, which `stop` reads
            thread.join()
        self.prestarting.clear()
        for connection in self.connections.values():
            connection.close()
        self.connections.clear()
        if self.owner is None:  # a worker's servers outlive it: the owner stops them (a worker keeps their Popen)
            stop(self.run_dir)
            for server in self.servers:
                server.wait()
            self.servers.clear()
        if self.started:
            # The owner is the session's process, whose environment may hold the PYTEST_XDIST_WORKER of an outer run.
            name = "main" if self.owner is None else os.environ.get("PYTEST_XDIST_WORKER", str(os.getpid()))
            (self.run_dir / LAUNCHERS).mkdir(parents=True, exist_ok=True)
            write_atomic(
                self.run_dir / LAUNCHERS / f"{name}.json",
                json.dumps({"mode": self.mode, "interpreters": self.started}),
            )
