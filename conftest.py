# The plugin lives in compat/plugin.py; loading it here lets a plain `pytest` in a checkout work without installing.
pytest_plugins = ("compat.plugin",)
