"""The test kit, shared by every test package (import as ``tests.helpers.<module>``).

- ``wait``: ``wait_for``, the one way to wait on a live process' side effect;
- ``processes``: stopping child processes, reading the port a server bound (servers bind 0);
- ``http``: GET a URL from a server under test;
- ``exposition``: samples of a Prometheus exposition by (name, labels), promtool's lint.

Paths (ROOT, FIXTURES, NODES) and the fake npu-smi argv are in ``tests.support``.
"""
