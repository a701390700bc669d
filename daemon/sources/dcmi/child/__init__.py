"""What runs in the DCMI helper process (`python -m npumon.daemon.sources.dcmi.child LIBRARY`):
libdcmi's structs and functions (`abi`) and the request loop that calls them (`helper`).

Nothing here imports the daemon: the helper loads only this folder and the standard library
(`.importlinter`, contract dcmi-child), and the daemon reaches it only through its pipe.
"""
