"""Built-in simulator: npu-smi (and later msprof) stand-ins driven by a scenario file."""
