"""The Dask runner: the same work on `dask.distributed`, for more than one machine.

With no address it starts a LocalCluster on this machine; with
`runner.address=tcp://host:8786` it joins an existing scheduler (started by
dask-jobqueue on a batch cluster, dask-kubernetes, or `dask scheduler` by
hand). Workers only compact; this process (the client) keeps everything that
must stay in one place and in order: reading, incremental state, the manifest,
the output files. So output bytes are those of the local runner.
"""
from __future__ import annotations

import hashlib
import logging
import os
import pickle
from functools import partial
from typing import Any, Callable, Iterable, Iterator

from hermes_pipeline.config import ConfigError
from hermes_pipeline.config.schema import DaskRunnerConfig as Options
from hermes_pipeline.run.runners.base import Runner
from hermes_pipeline.run.runners.batches import work_on_blobs
from hermes_pipeline.run.runners.local import in_order_batched

TASKS_PER_THREAD = 4     # submitted ahead per worker thread: no worker idles behind a slow head, bounded memory
_engines: dict[str, Any] = {}   # on a worker: engines built so far, by config token


def _on_worker(make_engine: Callable[[], Any], token: str, work: Callable, packed: list[bytes]) -> list:
    """Runs on a worker: the engine is built once per worker process and config."""
    engine = _engines.get(token)
    if engine is None:
        engine = _engines[token] = make_engine()
    return work_on_blobs(work, engine, packed)


class DaskRunner(Runner):
    def __init__(self, name: str = Options.name, address: str | None = Options.address,
                 n_workers: int = Options.n_workers, threads_per_worker: int = Options.threads_per_worker,
                 dashboard_address: str = Options.dashboard_address, start_method: str = Options.start_method):
        self.name = name
        self.address = address
        self.n_workers, self.threads_per_worker = int(n_workers), int(threads_per_worker)
        self.dashboard_address = dashboard_address
        self.start_method = start_method
        self.client = self.cluster = None

    def start(self, engine, make_engine: Callable[[], Any], auto_concurrency: int) -> None:
        if not logging.getLogger("hermes_pipeline").isEnabledFor(logging.DEBUG):
            # the scheduler and workers log every connection at INFO; workers read this at start
            os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "warning")
            for name in ("distributed", "tornado", "bokeh"):
                logging.getLogger(name).setLevel(logging.WARNING)
        import dask
        from dask.distributed import Client, LocalCluster  # imported only when asked for: it costs seconds
        if self.address:
            try:
                self.client = Client(self.address, timeout="10s")
            except (OSError, TimeoutError) as error:
                raise ConfigError(f"runner.address={self.address}: no Dask scheduler answered there "
                                  f"({type(error).__name__}: {error})") from None
        else:
            # local workers forked from this process start with every module already imported
            with dask.config.set({"distributed.worker.multiprocessing-method": self.start_method}):
                self.cluster = LocalCluster(n_workers=self.n_workers, threads_per_worker=self.threads_per_worker,
                                            processes=True, dashboard_address=self.dashboard_address)
            self.client = Client(self.cluster)
        # the resolved config goes to every worker once; tasks only carry a reference to it
        self.token = hashlib.sha256(pickle.dumps(make_engine)).hexdigest()[:16]
        [self.make_engine] = self.client.scatter([make_engine], broadcast=True)

    def threads(self) -> int:
        return max(1, sum(self.client.nthreads().values()))

    def map(self, work: Callable[[Any, Any], Any], items: Iterable, needs_work: Callable[[Any], bool]) -> Iterator:
        send = lambda blobs: self.client.submit(_on_worker, self.make_engine, self.token, work, blobs,
                                                pure=False).result
        return in_order_batched(send, items, self.threads() * TASKS_PER_THREAD, needs_work, partial(work, None))

    def describe(self) -> str:
        where = self.address or f"LocalCluster of {self.n_workers} worker(s) x {self.threads_per_worker} thread(s)"
        return f"runner: dask, {where}; dashboard: {self.client.dashboard_link}"

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()
        self.client = self.cluster = None
