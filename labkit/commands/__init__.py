"""The ``labkit`` command: ``serve``, ``lab``, ``doctor`` (``cli``), and ``labkit lab``'s JupyterLab (``launcher``).

Holds the console entry point (``labkit = "labkit.commands.cli:main"``; ``python -m labkit`` runs the
same), the launcher of JupyterLab on the lesson notebooks with one shared endpoint, and the settings
JupyterLab starts with (``jupyter_settings/``).

May import: shared, endpoint, engine_plugins, embedded, races, patterns, lab.

Importing this package imports none of its modules.
"""
