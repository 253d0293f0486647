# The plugin lives in compat/plugin.py; loading it here lets a plain `pytest` in a checkout work without installing.
# pytester drives the plugin end to end in tests/test_plugin.py.
pytest_plugins = ("compat.plugin", "pytester")
