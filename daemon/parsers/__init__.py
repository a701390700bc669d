"""Pure parsers for npu-smi output: text in, frozen dataclasses out."""
