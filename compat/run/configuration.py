"""The repository's pytest configuration as pytest itself reads it, for the CLI's commands: the ini file found from
the working folder upward, the rootdir, and the values typed as the plugin declares them (compat.plugin's
`addini`). A command then finds the configuration that a run of pytest from the same folder finds."""

from __future__ import annotations

import pytest

from ..errors import CompatError


class _Reader:
    """A plugin that keeps the parsed configuration and ends pytest before it collects or runs anything."""

    config: pytest.Config | None = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_cmdline_main(self, config: pytest.Config) -> int:
        self.config = config
        return 0


def read() -> pytest.Config:
    """pytest's configuration from the working folder (its ini, rootdir, options' defaults and the ini's addopts)."""
    reader = _Reader()
    # No conftest: its imports may need the folder it lives in on sys.path, and a command runs from any folder; the
    # ini alone holds what the commands read. The plugin named, for a checkout that is not pip-installed.
    code = pytest.main(["--noconftest", "-p", "compat.plugin", "-p", "no:cacheprovider"], plugins=[reader])
    if reader.config is None:
        raise CompatError(f"pytest could not read its configuration here (exit {code}): its message is above")
    return reader.config
