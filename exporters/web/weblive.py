"""The web config in force: re-read when its file changes, certificates per new connection."""

from __future__ import annotations

import logging
import os
import ssl
import threading
from pathlib import Path

from npumon.exporters.web.auth import BasicAuth
from npumon.exporters.web.webconfig import WebConfig, WebConfigError, load_web_config, ssl_context

log = logging.getLogger(__name__)

Stamp = tuple[int, int, int] | None  # (mtime_ns, size, inode); None when the file is missing


def _stamp(path: str | os.PathLike[str]) -> Stamp:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


class Active:
    """One loaded web config with what requests need of it: its basic auth and headers."""

    def __init__(self, config: WebConfig, previous: Active | None = None) -> None:
        users, headers = config.basic_auth_users, config.http_server_config.headers
        kept = None if previous is None else previous.auth  # unchanged users stay cached
        self.config = config
        self.auth: BasicAuth | None = BasicAuth(users, kept) if users else None
        self.headers = tuple((n.lower().encode(), v.encode()) for n, v in headers.items())


class LiveWebConfig:
    """The web config from ``source``: a web-config.yml path (re-read when it changes,
    WebConfigError at start when broken), a loaded WebConfig (fixed) or None (plain HTTP).

    ``current()`` is the config in force. The file is stat()ed per request; when it changed, a
    thread re-reads it (a user's bcrypt cost makes that up to seconds) and the old config serves
    until then; a file that does not load is logged and the last good config stays in force
    (as a bad SIGHUP reload keeps the running config), and the next change is read again.
    TLS is on or off from the start; ``tls_context()`` gives each new TLS connection the files
    and settings in force, re-read after any of them changed."""

    def __init__(self, source: WebConfig | str | os.PathLike[str] | None) -> None:
        self._path = None if source is None or isinstance(source, WebConfig) else Path(source)
        self._stamp = None if self._path is None else _stamp(self._path)  # before the read
        fixed = source if isinstance(source, WebConfig) else WebConfig()
        config = fixed if self._path is None else load_web_config(self._path)
        self._active = Active(config)
        self.tls = config.tls_server_config is not None
        self._context: tuple[object, ssl.SSLContext | None] = (None, None)
        self._reloading = False  # only the event loop starts reloads; one at a time

    def current(self) -> Active:
        """The config in force; a reload starts when the file changed."""
        if self._path is not None and not self._reloading:
            stamp = _stamp(self._path)
            if stamp != self._stamp:
                self._stamp, self._reloading = stamp, True
                threading.Thread(target=self._reload, args=(self._path,), daemon=True).start()
        return self._active

    def _reload(self, path: Path) -> None:
        try:
            self._active = Active(load_web_config(path), self._active)
            log.info("event=web_config_reloaded file=%s", path)
        except WebConfigError as error:
            log.error(
                "event=web_config_reload_failed file=%s error=%r action=kept_last_good_config",
                path,
                str(error),
            )
        except Exception as error:  # anything else must not end reloads for good either
            log.error(
                "event=web_config_reload_failed file=%s error=%r action=kept_last_good_config",
                path,
                repr(error),
            )
        finally:
            self._reloading = False

    def tls_context(self) -> ssl.SSLContext | None:
        """The SSLContext for a new connection; None (refuse it) while the config in force has
        no TLS or its files do not load (logged once per change of them)."""
        tls = self.current().config.tls_server_config
        files = () if tls is None else (tls.cert_file, tls.key_file, tls.client_ca_file)
        key = (tls, tuple(_stamp(f) if f else None for f in files))
        if key != self._context[0]:
            try:
                self._context = (key, None if tls is None else ssl_context(tls))
            except (ssl.SSLError, OSError) as exc:
                self._context = (key, None)
                log.error("event=tls_reload_failed error=%r", exc)
        return self._context[1]
