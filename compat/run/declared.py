"""The test a run adds per namespace its repository names in compat_require_declared: every op registered there has a
declaration as shipped, or is a helper of one."""

from __future__ import annotations

import pytest

from ..report import coverage


class NamespaceCoverage(pytest.Item):
    """Every op registered under a namespace has a declaration as shipped (compat.report.coverage)."""

    def __init__(self, *, namespace: str, **kwargs):
        super().__init__(**kwargs)
        self.namespace = namespace

    def runtest(self):
        if not coverage.registered(self.namespace):
            pytest.fail(
                f"no op is registered under {self.namespace!r}: is the package that registers them imported "
                f"by a compat_cases module?",
                pytrace=False,
            )
        missing = coverage.undeclared(self.namespace)
        if missing:
            pytest.fail(
                f"{len(missing)} op(s) of {self.namespace!r} have no declaration as shipped (compat.Op): "
                f"{', '.join(missing)}; declare each, or, where it is a helper your users never call (a "
                f"register_autograd backward op), list it in helpers=(...) of the Op that calls it",
                pytrace=False,
            )

    def reportinfo(self):
        return self.path, None, self.name
