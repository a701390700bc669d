"""Data sources: the code that runs commands and hands their output to parsers."""
