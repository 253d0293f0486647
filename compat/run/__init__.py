"""The run, parent side: what decides which work runs where. The pytest controller and worker (compat.plugin registers
one), the run session (directory, shared groups, locks, each cell's outcome read from its children), the launcher of
children and the run's shared warm servers, xdist's worker count and GPU pinning, the plugin's options, the environment's description,
and the doctor.

May import: compat.matrix, compat.evidence, compat.report (the terminal summary), compat.child.protocol alone (the
names of the child's tasks, files and environment, and its timeouts; never the child's work), and the shared modules.
Nothing else imports it but compat.plugin and the CLI."""
