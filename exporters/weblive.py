"""The web config in force: re-read when its file changes, certificates re-read on handshake."""

from __future__ import annotations

import logging
import os
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path

from npumon.exporters.auth import BasicAuth
from npumon.exporters.webconfig import (
    TLSServerConfig,
    WebConfig,
    WebConfigError,
    load_web_config,
    ssl_context,
)

log = logging.getLogger(__name__)

Stamp = tuple[int, int, int] | None  # (mtime_ns, size, inode); None when the file is missing


def _stamp(path: str | os.PathLike[str]) -> Stamp:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


@dataclass(frozen=True)
class Active:
    """One loaded web config with what requests need of it."""

    config: WebConfig
    auth: BasicAuth | None
    headers: tuple[tuple[bytes, bytes], ...]


def _activate(config: WebConfig) -> Active:
    auth = BasicAuth(config.basic_auth_users) if config.basic_auth_users else None
    headers = tuple(
        (name.lower().encode(), value.encode())
        for name, value in config.http_server_config.headers.items()
    )
    return Active(config, auth, headers)


def _fixed(tls: TLSServerConfig | None) -> tuple[str, str, str] | None:
    """What a running TLS listener cannot change per connection (Python's ssl keeps these)."""
    return None if tls is None else (tls.client_auth_type, tls.min_version, tls.max_version)


class LiveWebConfig:
    """``current()`` is the config in force, or None while the file is broken (answer 500, as
    exporter-toolkit does). The file is stat()ed per request; when it changed, a thread re-reads
    it (a user's bcrypt cost makes that up to seconds) and the old config serves until then.

    TLS itself is on or off from the start; the certificate, key and client CA are re-read on
    a handshake after any of their files changed. A change of client_auth_type or the TLS
    versions needs a restart: until then handshakes are refused (logged), never weakened.
    """

    def __init__(self, source: WebConfig | str | os.PathLike[str] | None) -> None:
        """``source``: a web-config.yml path (re-read when it changes), a loaded WebConfig
        (fixed) or None (plain HTTP, no auth)."""
        self._path = None if source is None or isinstance(source, WebConfig) else Path(source)
        self._stamp: Stamp = None
        self._active: Active | None = _activate(
            source if isinstance(source, WebConfig) else WebConfig()
        )
        if self._path is not None:
            self._stamp = _stamp(self._path)
            self._active = _activate(load_web_config(self._path))  # raises when broken
        config = self._active.config
        self._tls_fixed = _fixed(config.tls_server_config)
        self._context: ssl.SSLContext | None = None
        self._context_stamps: tuple[Stamp, ...] = ()
        self._refused_for: Stamp = None
        self._reloading = False  # only the event loop starts reloads; one at a time

    def current(self) -> Active | None:
        """The config in force; a reload starts when the file changed."""
        if self._path is not None and not self._reloading:
            stamp = _stamp(self._path)
            if stamp != self._stamp:
                self._stamp, self._reloading = stamp, True
                name = "npumon-web-config"
                threading.Thread(
                    target=self._reload, args=(self._path,), name=name, daemon=True
                ).start()
        return self._active

    def _reload(self, path: Path) -> None:
        try:
            active: Active | None = _activate(load_web_config(path))
            log.info("event=web_config_reloaded file=%s", path)
        except WebConfigError as error:
            active = None
            log.error("event=web_config_reload_failed file=%s error=%r", path, str(error))
        self._active, self._reloading = active, False

    def server_context(self) -> ssl.SSLContext | None:
        """The listener's SSLContext (None: plain HTTP); it re-reads certificates on handshake."""
        active = self._active
        if active is None or active.config.tls_server_config is None:
            return None
        context = self._context_for(active.config.tls_server_config)
        context.sni_callback = self._on_hello
        return context

    def _context_for(self, tls: TLSServerConfig) -> ssl.SSLContext:
        files = (tls.cert_file, tls.key_file, tls.client_ca_file)
        stamps = tuple(_stamp(f) if f else None for f in files)
        if self._context is None or stamps != self._context_stamps:
            self._context = ssl_context(tls)
            self._context_stamps = stamps
        return self._context

    def _on_hello(
        self, conn: ssl.SSLObject | ssl.SSLSocket, server_name: str | None, outer: ssl.SSLContext
    ) -> int | None:
        """OpenSSL's ClientHello callback: hand this connection the newest certificates."""
        try:
            active = self.current()
            tls = None if active is None else active.config.tls_server_config
            if tls is None or _fixed(tls) != self._tls_fixed:
                self._refuse_once()
                return ssl.ALERT_DESCRIPTION_INTERNAL_ERROR
            context = self._context_for(tls)
        except (ssl.SSLError, OSError) as exc:
            log.error("event=tls_reload_failed error=%r", exc)
            return ssl.ALERT_DESCRIPTION_INTERNAL_ERROR
        if context is not outer:
            conn.context = context
        return None

    def _refuse_once(self) -> None:
        if self._refused_for != self._stamp:
            self._refused_for = self._stamp
            log.error(
                "event=tls_handshake_refused file=%s reason=%r",
                self._path,
                "web config broken, or TLS, client_auth_type or TLS versions changed:"
                " restart npumon to apply",
            )
