"""npumon agent: config, scheduling, npu-smi sources, parsers, state and CLI."""

__version__ = "0.1.0"
