"""The daemon's lifecycle around one Agent: reload on SIGHUP (a bad config keeps the old), stop.

Part of the wiring, like app.py: it owns what /metrics serves, the current agent's families
followed by npumon_config_last_reload_* and one registry's process_* and python_*.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector

from npumon.daemon.app import Agent
from npumon.daemon.config import Config, ConfigError
from npumon.daemon.logs import set_format, set_level
from npumon.daemon.model.snapshot import NodeSnapshot
from npumon.daemon.rendercache import RenderCache
from npumon.daemon.runner import terminate_all
from npumon.exporters.builtin import RELOAD
from npumon.exporters.spec import write

log = logging.getLogger(__name__)

# Settings a running HTTP server cannot change; a reload says so instead of pretending.
RESTART_ONLY = ("listen_address", "config_file", "max_requests", "max_connections")


class Supervisor:
    """The current agent behind stable callbacks for the HTTP server; swaps it on ``reload``."""

    def __init__(
        self,
        config: Config,
        load: Callable[[], Config],
        *,
        make_agent: Callable[..., Agent] = Agent,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._load = load
        self._make_agent = make_agent
        self._clock = clock
        self._lock = threading.Lock()  # one reload or stop at a time
        self.agent = make_agent(config)
        self.reload_successful = True
        self.reload_success_timestamp = clock()
        self._generation = object()
        self._identity: tuple[object, object] = (None, None)
        # what follows the agent's families and the reload outcome: process_* and python_*
        self.registry = CollectorRegistry(auto_describe=False)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self.edge: Callable[[bool], bytes] = lambda openmetrics: b""
        """The HTTP edge's own families, once it serves (exporters.http Connections)."""
        self.exposition = RenderCache(self._families, self.registry, self.identity)
        """The /metrics body (``exposition(openmetrics)``), rendered once per ``identity()``."""

    @property
    def config(self) -> Config:
        return self.agent.config

    def start(self) -> None:
        self.agent.start()

    def reload(self) -> bool:
        """Re-read the config; on success run a new agent with it, else keep the running one."""
        with self._lock:
            try:
                done = self._reload()
            finally:
                self._generation = object()  # the reload metrics changed: re-render
        return done

    def _reload(self) -> bool:
        try:
            config = self._load()
        except ConfigError as error:
            log.error(
                "event=reload_failed source=%s problems=%s action=kept_running_config",
                error.source,
                "; ".join(error.problems),
            )
            self.reload_successful = False
            return False
        self._warn_restart_only(config)
        old = self.agent
        old.stop()  # first: its profiler saves the state the new one loads
        try:
            new = self._make_agent(config, previous=old)
            new.start()
        except Exception:  # an agent that cannot start must not leave the node unmonitored
            log.exception("event=reload_failed action=restarted_previous_config")
            self.agent = self._make_agent(old.config, previous=old)
            self.agent.start()
            self.reload_successful = False
            return False
        self.agent = new
        set_level(config.logging.level)
        set_format(config.logging.format)
        self.reload_successful, self.reload_success_timestamp = True, self._clock()
        log.info("event=reloaded")
        return True

    def stop(self) -> None:
        """The daemon is ending: stop the agent and kill every child still running.

        Children refuse to start from here on, so a per-NPU loop cannot launch the next call;
        the scheduler's threads then finish at once and the interpreter can exit.
        """
        with self._lock:
            self.agent.stop()
            killed = terminate_all()
            if killed:
                log.info("event=children_killed count=%d", killed)

    def healthy(self) -> bool:
        return self.agent.running()

    def latest(self) -> NodeSnapshot:
        """The current agent's latest snapshot (the landing page's sources and versions)."""
        return self.agent.store.latest()

    def _families(self, openmetrics: bool) -> bytes:
        """The agent's families, then npumon_config_last_reload_*, then the edge's."""
        outcome = (self.reload_successful, self.reload_success_timestamp)
        reload = write(((f, outcome) for f in RELOAD), openmetrics)
        return self.agent.collector.exposition(openmetrics) + reload + self.edge(openmetrics)

    def identity(self) -> object:
        """Changes whenever the exposition would: a new snapshot, agent or reload outcome."""
        snapshot = self.latest()
        current = self._identity
        if current[0] is not snapshot or current[1] is not self._generation:
            current = self._identity = (snapshot, self._generation)
        return current

    def _warn_restart_only(self, config: Config) -> None:
        before, after = self.agent.config.web, config.web
        for name in RESTART_ONLY:
            if getattr(before, name, None) != getattr(after, name, None):
                log.warning("event=reload_ignored setting=web.%s reason=needs_a_restart", name)
