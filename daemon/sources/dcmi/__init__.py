"""The DCMI backend: the chip queries answered through libdcmi, npu-smi behind it.

``backend`` is the one module the rest of npumon imports (``DcmiBackend``, ``open_dcmi``). The
daemon's side: ``readings`` (the calls of each query and their conversion into the model),
``fields`` (which model fields each function fills), ``library`` (finding and trusting
libdcmi.so) and ``client`` (starting and asking the helper). ``child/`` is what runs in the
helper process. The contracts in ``.importlinter`` (dcmi-*) keep it so.
"""
