"""What the parent (compat.run) and its children agree on: the tasks a parent asks for, the files a child leaves in
its work directory, the environment variables the parent sets, and the timeouts it waits by. It imports nothing, so
the parent reads it without torch; it is the only module of compat.child the parent imports (tests/test_layout.py).
"""

# The suite's child tasks (compat.child.tasks registers a body under each; tests and users may add their own).
TASKS = (
    "probe",
    "build",
    "load_program",
    "run_library",
    "run_cpp",
    "cpp_runner_build",
    "fuzz_probe",
    "fuzz_export",
    "canary_build",
    "canary_run",
    "canary_cpp",
)

# Files in the work directory of the child that makes them.
PROGRAM, PACKAGE = "program.pt2", "package.pt2"
# Each AOTI family's library (compat.child.artifacts.LIBRARIES compiles and loads them), in the order they are built.
LIBRARY_FILES = {"aoti": PACKAGE, "aoti_max_autotune": "package_max_autotune.pt2", "aoti_legacy": "legacy.so"}
CPP_RUNNER = "aoti_runner"  # the C++ runner's binary (compat.child.cpp)

# Environment variables the parent sets for every child.
IMPORTS_ENV = "COMPAT_IMPORTS"  # comma-separated modules of the user's (kernels, tasks) every child imports first
COMPILES_ENV = "COMPAT_COMPILES"  # "1" where a selected stage compiles with Inductor: the warm server imports it
NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"  # torch's own: set in a warm server, so a fork can use CUDA
USER_NVML_CHECK = "COMPAT_USER_NVML_CHECK"  # the user's own value of NVML_CHECK, restored in each child
ISA_FILE_ENV = "COMPAT_ISA_FILE"  # where the run's one detection of the CPU ISAs writes (compat.child.toolchain)
LOCK_DIR_ENV = "COMPAT_TIMING_LOCK_DIR"  # where the run's timing locks are (compat.child.latency)
TIMED_ENV = "COMPAT_TIMED_STAGES"  # comma-separated stages whose latency is measured
# The threads max-autotune compiles its template choices on, in a child that compiles on one thread otherwise
# (compat.child.compile_threads).
AUTOTUNE_THREADS_ENV = "COMPAT_AUTOTUNE_THREADS"
PACKAGE_STORE_ENV = "COMPAT_PACKAGE_STORE"  # the run's store of AOTI libraries, by content (compat.child.packages)

# Timeouts of the C++ runner's build and of one run of a package from C++, in seconds.
CPP_BUILD_TIMEOUT_S = 600.0
CPP_RUN_TIMEOUT_S = 240.0  # a load and a run of seconds, and the steady state's few hundred calls


def unix_address(address: str) -> str:
    """A warm server's socket address as the socket module takes it: '@name' is Linux's abstract namespace (no file,
    gone with the server), anything else a path."""
    return "\0" + address[1:] if address.startswith("@") else address
