"""HTTP basic auth against bcrypt hashes, recent results cached, checks queued with a bound."""

from __future__ import annotations

import asyncio
import base64
import functools
import hashlib
import hmac
import secrets
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

import bcrypt

_MAX_OK = 1024  # valid credentials; failures cannot evict them
_MAX_FAILED = 256  # recent failures, the oldest dropped first
# bcrypt checks waited for at once: each holds a connection with a request in flight (never shed,
# see privileges.md), so their count bounds what clients can park behind the one bcrypt thread
MAX_PENDING_CHECKS = 64


@functools.lru_cache(maxsize=32)  # one per cost (BCRYPT_MIN_COST..BCRYPT_MAX_COST)
def _dummy_hash(cost: int) -> bytes:
    """A hash of a random password at ``cost``: unknown users cost as much as known ones."""
    return bcrypt.hashpw(secrets.token_bytes(16), bcrypt.gensalt(rounds=cost))


class BasicAuth:
    """``cached(header)`` answers from recent results; ``check(header)`` runs bcrypt if needed.
    Results are keyed by a SHA-256 of user, password and stored hash (the password itself is
    never kept); a wrong password is cached too, so a client retrying it costs a lookup. Only
    ``check`` writes the caches, on the edge's one bcrypt thread; the event loop only reads.

    ``previous``: the BasicAuth of the config this one replaces; its results for the users
    whose hash is unchanged carry over (the key holds the hash: a changed or removed user's
    results could not match anyway), so a reload costs cached scrapers no bcrypt."""

    def __init__(self, users: Mapping[str, str], previous: BasicAuth | None = None) -> None:
        self._users = {user: hashed.encode() for user, hashed in users.items()}
        # An unknown user is checked against a dummy hash of one of the configured costs ($2b$10$
        # ...: validated as bcrypt), picked by a keyed hash of the name: with users of mixed
        # costs, a fixed dummy cost would tell the users of other costs from unknown names.
        # The key is a digest of the configured hashes: stable across restarts (a name's cost
        # does not change) and not computable by a client.
        costs = sorted(int(h[4:6]) for h in self._users.values()) or [10]
        self._dummies = [_dummy_hash(cost) for cost in costs]
        self._dummy_key = hashlib.sha256(b"\0".join(sorted(self._users.values()))).digest()
        self._lock = threading.Lock()  # the bcrypt thread writes while a reload copies
        self._ok: dict[bytes, str] = {}  # key -> user
        self._failed: dict[bytes, str] = {}  # key -> user, oldest first
        if previous is not None:
            with previous._lock:
                for mine, theirs in ((self._ok, previous._ok), (self._failed, previous._failed)):
                    mine.update(
                        (key, user)
                        for key, user in theirs.items()
                        if previous._users.get(user) == self._users.get(user)
                    )

    def cached(self, header: str | None) -> bool | None:
        """True/False when known without bcrypt (cached, or not decodable); None otherwise."""
        creds = _decode(header)
        return False if creds is None else self._known(self._key(*creds))

    def check(self, header: str | None) -> bool:
        """True when the header carries a configured user and matching password (a check
        decided while this one queued is answered from the cache)."""
        creds = _decode(header)
        if creds is None:
            return False
        key, (user, password) = self._key(*creds), creds
        if (known := self._known(key)) is not None:
            return known
        hashed = self._users.get(user)
        try:
            ok = bcrypt.checkpw(password, hashed or self._dummy(user)) and hashed is not None
        except ValueError:  # e.g. a password over bcrypt's 72 bytes
            ok = False
        with self._lock:
            if ok and len(self._ok) < _MAX_OK:
                self._ok[key] = user
            elif not ok:
                self._failed[key] = user
                if len(self._failed) > _MAX_FAILED:
                    del self._failed[next(iter(self._failed))]
        return ok

    def _dummy(self, user: str) -> bytes:
        pick = hmac.digest(self._dummy_key, user.encode(), "sha256")
        return self._dummies[int.from_bytes(pick[:8], "big") % len(self._dummies)]

    def _known(self, key: bytes) -> bool | None:
        return True if key in self._ok else False if key in self._failed else None

    def _key(self, user: str, password: bytes) -> bytes:
        hashed = self._users.get(user, b"")
        return hashlib.sha256(b"\0".join((user.encode(), password, hashed))).digest()


class BcryptQueue:
    """One bcrypt check at a time (exporter-toolkit's rule: a wrong-password flood costs one
    core at most), at most ``limit`` waited for at once. ``check`` answers from the cache when
    it can; else it queues a check, dropped when ``gone`` completes first (a client that left);
    beyond ``limit`` checks waited for it answers None at once, for a 503: the requests parked
    behind bcrypt, and what their connections buffer, stay bounded. ``pending`` counts them."""

    def __init__(self, limit: int = MAX_PENDING_CHECKS) -> None:
        self.limit, self.pending = limit, 0  # only the event loop thread counts
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="npumon-bcrypt")

    async def check(
        self, auth: BasicAuth, header: str | None, gone: asyncio.Future[None]
    ) -> bool | None:
        known = auth.cached(header)
        if known is not None:
            return known
        if self.pending >= self.limit:
            return None
        if gone.done():  # the client left (EOF) before its check was queued: never start it
            return False
        self.pending += 1
        try:
            check = asyncio.get_running_loop().run_in_executor(self._thread, auth.check, header)
            await asyncio.wait((check, gone), return_when=asyncio.FIRST_COMPLETED)
            check.cancel()  # a queued check never runs; a running one ends unobserved
            return check.done() and not check.cancelled() and check.result()
        finally:
            self.pending -= 1

    def close(self) -> None:
        self._thread.shutdown(wait=False, cancel_futures=True)


def _decode(header: str | None) -> tuple[str, bytes] | None:
    """(user, password) from a well-formed ``Basic`` header, else None."""
    scheme, _, token = (header or "").partition(" ")
    try:  # binascii.Error and UnicodeDecodeError are ValueErrors
        user, sep, password = base64.b64decode(token.strip(), validate=True).partition(b":")
        return (user.decode("utf-8"), password) if scheme.lower() == "basic" and sep else None
    except ValueError:
        return None
