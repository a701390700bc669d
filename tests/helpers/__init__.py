"""The test kit: one way to wait on a live process, shared by every test package."""
