"""HTTP basic auth against bcrypt hashes, with successful checks cached so scrapes stay fast."""

from __future__ import annotations

import base64
import binascii
import hashlib
import threading
from collections.abc import Mapping

import bcrypt

# Checked for unknown users too, so a wrong user name costs as much time as a wrong password.
_DUMMY_HASH = b"$2b$10$Qdbxou3JzlRR3J5lt8ZKEORK4lm8nzt42FxuPXxulPfafeeetf6xm"
_MAX_CACHE = 1024  # only valid credentials get cached; the bound is a belt and braces


class BasicAuth:
    """``check(Authorization header)``; a bcrypt check (tens of ms at cost 10) runs once per
    distinct valid credential, later requests hit a cache keyed by a SHA-256 of user,
    password and stored hash (the password itself is never kept)."""

    def __init__(self, users: Mapping[str, str], realm: str = "npumon") -> None:
        self._users = {user: hashed.encode() for user, hashed in users.items()}
        self._realm = realm
        self._ok: set[bytes] = set()
        self._lock = threading.Lock()

    def challenge(self) -> dict[str, str]:
        """The 401 header that makes clients send credentials."""
        return {"WWW-Authenticate": f'Basic realm="{self._realm}", charset="UTF-8"'}

    def check(self, header: str | None) -> bool:
        """True when the header carries a configured user and matching password."""
        creds = _decode(header)
        if creds is None:
            return False
        user, password = creds
        hashed = self._users.get(user)
        key = hashlib.sha256(b"\0".join((user.encode(), password, hashed or b""))).digest()
        with self._lock:
            if key in self._ok:
                return True
        try:
            ok = bcrypt.checkpw(password, hashed or _DUMMY_HASH) and hashed is not None
        except ValueError:  # e.g. a password over bcrypt's 72 bytes
            return False
        if ok:
            with self._lock:
                if len(self._ok) < _MAX_CACHE:
                    self._ok.add(key)
        return ok


def _decode(header: str | None) -> tuple[str, bytes] | None:
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        raw = base64.b64decode(token.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None
    user, sep, password = raw.partition(b":")
    if not sep:
        return None
    try:
        return user.decode("utf-8"), password
    except UnicodeDecodeError:
        return None
