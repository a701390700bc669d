"""The DCMI backend: the chip queries answered through libdcmi, npu-smi behind it.

``serving`` is the one module the rest of npumon imports (``open_chips``, ``DcmiBackend``): who
answers each query. The daemon's side below it: ``reader`` (per query kind its calls, their
conversion and addressing), ``readings`` (the calls npu-smi makes per chip type and the
conversion into the model), ``fields`` (which model fields each function fills),
``crosscheck`` (the comparisons with npu-smi's answers), ``library`` (finding and trusting
libdcmi.so) and ``client`` (starting and asking the helper). ``child/`` is what runs in the
helper process. The contracts in ``.importlinter`` (dcmi-*) keep it so.
"""
