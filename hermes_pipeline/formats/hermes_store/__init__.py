"""Hermes' SQLite session store (state.db): read its sessions, write compactions back as Hermes does."""
from hermes_pipeline.formats.hermes_store.format import STORE, HermesStoreFormat, StoreLog
from hermes_pipeline.formats.hermes_store.store import is_store

__all__ = ["STORE", "HermesStoreFormat", "StoreLog", "is_store"]
