"""Where conversations are compacted: this machine (local) or a Dask cluster, behind one Runner protocol."""
