"""This repository's config-leak check, a pytest plugin of its own (loaded by tests/conftest.py): a test that leaves
torch._dynamo.config or torch._inductor.config changed fails at teardown, naming the keys.

Restore with torch._inductor.config.patch(...): under torch 2.13 (pytest 9.2), monkeypatch's undo deletes a
ConfigModule value instead of restoring it (found by this check; under torch 2.11 it restores)."""

# The configs are imported as the plugin loads, in every process of a run alike: their import sets
# TORCHINDUCTOR_CACHE_DIR in the environment, and a worker that set it at its first test's setup no longer matched the
# warm servers its controller had started (compat.run.servers keys a server by its environment): it started its own,
# and those idled.
import pytest
import torch._dynamo.config
import torch._inductor.config


def _config_snapshot() -> dict[str, str]:
    return {
        f"{module.__name__}.{key}": repr(value)
        for module in (torch._dynamo.config, torch._inductor.config)
        for key, value in module.get_config_copy().items()
    }


_CONFIG_BEFORE = pytest.StashKey[dict]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    item.stash[_CONFIG_BEFORE] = _config_snapshot()  # before any fixture of the test is set up
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Checked after every fixture is torn down, so fixtures have restored what they patched."""
    result = yield
    before, after = item.stash.get(_CONFIG_BEFORE, None), _config_snapshot()
    leaked = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k)) if before else []
    if leaked:
        pytest.fail(
            f"this test leaked config changes into the next: {', '.join(leaked)}; restore them with "
            f"torch._dynamo.config.patch / torch._inductor.config.patch",
            pytrace=False,
        )
    return result
