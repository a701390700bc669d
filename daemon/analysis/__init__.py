"""Profile analysis with pandas: the library behind `npumon analyze` and the analysis worker."""
