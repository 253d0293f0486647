"""Errors for bad input; each message names the file or entry at fault and what would be valid."""


class CompatError(ValueError):
    pass


class RegistryError(CompatError):
    """An unknown kernel, style, stage, dtype or device name."""


class ExpectationsError(CompatError):
    """A malformed expectations file."""


class ResultsError(CompatError):
    """A results file that cannot be written or read."""


class HarnessError(RuntimeError):
    """The harness itself failed (a child could not resolve its cell, a bug of ours): never a cell's outcome."""


class DeclarationError(HarnessError):
    """A user's declaration failed (its reference or another callback raised, it disagrees with what its op
    returns, its op launched nothing a graph could prove): a harness error naming it, never a cell's outcome."""
