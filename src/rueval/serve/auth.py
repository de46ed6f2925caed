"""Teams and how they prove who they are.

An API token is ``rueval_<secret>``, 256 random bits. The database holds only its keyed hash
(HMAC-SHA256 under the board's secret, rueval.serve.secret), by which the token's row is found in
one indexed lookup: a check costs microseconds whatever is sent, and a copy of the database gives
no token away (nor lets anyone test guesses without the secret). Tokens made by an earlier rueval
(``rueval_<key>_<secret>``, an argon2 hash found by the key) are checked once with argon2 and their
row rewritten to the keyed hash.

A correct token is always taken. A wrong one counts against the client's address: beyond
``FailureLimit`` a client gets 429 without any check until its window has passed. The address is the
connection's, or the one a trusted proxy forwarded (rueval.serve.app).

The web pages sign a team in with the same token: a session cookie (HttpOnly, SameSite=Strict)
holds a random secret whose SHA-256 is stored, with the session's form token; every form that
changes something carries the form token (a forged form from another site has none). The sign-in
form itself is protected by a token in a cookie and the form alike (double submit).

Team names are checked when a team is added: no control or format characters, no slash, not only
dots (``.``, ``..`` are path steps), and none confusable with an existing team's (the same Unicode
TR39 skeleton, as the disarm library computes it: ``аlpha`` with a Cyrillic а is ``alpha``).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
import threading
import time
import unicodedata
from collections import OrderedDict, deque
from collections.abc import Collection
from dataclasses import dataclass

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from disarm import skeleton_key
from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError

from rueval.core.errors import RuevalError
from rueval.serve.db import Database, SignIn, Team, Token
from rueval.serve.secret import keyed_digest

TOKEN_PREFIX = "rueval"
SESSION_S = 7 * 24 * 3600
MAX_NAME = 100
MAX_TOKEN = 200
LEGACY_HASHER = PasswordHasher()  # only to check tokens made by an earlier rueval, once each


class RateLimited(RuevalError):
    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


def name_skeleton(name: str) -> str:
    """What a name looks like (UTS #39 skeleton, case and spacing folded): confusable names share it."""
    return skeleton_key(name, digit_policy="tr39")


def check_team_name(name: str, taken: Collection[str] = ()) -> str:
    """The name as stored (NFC, trimmed), or a one-line error; ``taken``: the existing teams' names."""
    name = unicodedata.normalize("NFC", name.strip())
    shown = f"team name {name!r:.120}"
    if not name or len(name) > MAX_NAME:
        raise RuevalError(f"{shown}: expected 1 to {MAX_NAME} characters")
    if any(unicodedata.category(ch).startswith("C") or ch in "/\\" for ch in name):
        raise RuevalError(f"{shown}: control characters and slashes are not allowed")
    if not name.strip("."):
        raise RuevalError(f"{shown}: a name of dots only is a path step; choose another")
    skeleton = name_skeleton(name)
    for other in taken:
        if name_skeleton(other) == skeleton:
            raise RuevalError(f"{shown}: looks like the team {other!r:.120}; choose a name that reads differently")
    return name


def add_team(db: Database, name: str, secret: bytes) -> str:
    """Add a team and return its API token, which is not stored anywhere: shown once."""
    token = f"{TOKEN_PREFIX}_{secrets.token_urlsafe(32)}"
    try:
        with db.session() as session:
            name = check_team_name(name, list(session.scalars(select(Team.name))))
            team = Team(name=name, created=time.time())
            session.add(team)
            session.flush()
            session.add(Token(team_id=team.id, digest=token_digest(secret, token), created=time.time()))
    except IntegrityError:
        raise RuevalError(f"a team named {name!r} exists already") from None
    return token


def token_digest(secret: bytes, token: str) -> str:
    return keyed_digest(secret, "token", token.encode("utf-8", "replace")).hex()


class FailureLimit:
    """At most ``failures`` wrong tokens per client address in any ``window_s`` seconds; the
    addresses seen last are kept, at most ``addresses`` of them."""

    def __init__(self, failures: int = 10, window_s: float = 60.0, addresses: int = 10_000):
        self.failures, self.window_s, self.addresses = failures, window_s, addresses
        self._seen: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def check(self, client: str) -> None:
        """RateLimited if the client has used up its failures."""
        with self._lock:
            times = self._recent(client)
            if len(times) >= self.failures:
                wait = max(1, math.ceil(times[0] + self.window_s - time.monotonic()))
                raise RateLimited(f"too many wrong tokens from {client}; try again in {wait} s", wait)

    def failed(self, client: str) -> None:
        with self._lock:
            self._recent(client).append(time.monotonic())
            self._seen.move_to_end(client)
            while len(self._seen) > self.addresses:
                self._seen.popitem(last=False)

    def _recent(self, client: str) -> deque[float]:
        times = self._seen.setdefault(client, deque())
        while times and times[0] <= time.monotonic() - self.window_s:
            times.popleft()
        return times


@dataclass(frozen=True)
class SignedIn:
    team: Team
    csrf: str


class Auth:
    """Tokens looked up by their keyed hash, and browser sessions."""

    def __init__(self, db: Database, secret: bytes, failures: FailureLimit | None = None):
        self.db, self.secret = db, secret
        self.failures = failures or FailureLimit()
        self._legacy_checks = threading.Semaphore(2)  # argon2 takes 64 MiB a check

    def team_for_token(self, token: str, client: str) -> Team | None:
        """The team the token names; None for a wrong token (counted against ``client``);
        RateLimited for a wrong one from a client over its limit."""
        if len(token) > MAX_TOKEN:  # no team's: counted as a wrong one
            self.failures.check(client)
            self.failures.failed(client)
            return None
        digest = token_digest(self.secret, token)
        with self.db.session(read_only=True) as session:
            team = session.scalars(
                select(Team).join(Token, Token.team_id == Team.id).where(Token.digest == digest)
            ).first()
        if team is not None:
            return team
        self.failures.check(client)
        team = self._legacy(token, digest)
        if team is None:
            self.failures.failed(client)
        return team

    def _legacy(self, token: str, digest: str) -> Team | None:
        """A token of an earlier rueval checked with argon2, its row then rewritten to the keyed hash."""
        prefix, _, rest = token.partition("_")
        key, _, secret = rest.partition("_")
        if prefix != TOKEN_PREFIX or not key or not secret:
            return None
        with self._legacy_checks, self.db.session() as session:
            row = session.scalars(select(Token).where(Token.key == key, Token.hash.is_not(None))).first()
            if row is None:
                return None
            try:
                LEGACY_HASHER.verify(row.hash or "", token)
            except (VerificationError, InvalidHashError):
                return None
            row.digest, row.hash, row.key = digest, None, None
            return session.get(Team, row.team_id)

    def sign_in(self, team: Team) -> str:
        """A new session for the team; returns the cookie's value."""
        secret = secrets.token_urlsafe(32)
        with self.db.session() as session:
            session.execute(delete(SignIn).where(SignIn.expires < time.time()))
            session.add(
                SignIn(
                    digest=_digest(secret),
                    team_id=team.id,
                    csrf=secrets.token_urlsafe(32),
                    expires=time.time() + SESSION_S,
                )
            )
        return secret

    def signed_in(self, cookie: str | None) -> SignedIn | None:
        if not cookie or len(cookie) > 200:
            return None
        with self.db.session(read_only=True) as session:
            row = session.scalars(select(SignIn).where(SignIn.digest == _digest(cookie))).first()
            if row is None or row.expires < time.time():
                return None
            return SignedIn(session.get_one(Team, row.team_id), row.csrf)

    def sign_out(self, cookie: str | None) -> None:
        if cookie:
            with self.db.session() as session:
                session.execute(delete(SignIn).where(SignIn.digest == _digest(cookie)))


def same_token(given: str | None, expected: str | None) -> bool:
    """A form token compared in constant time; a missing one never matches."""
    if not given or not expected:
        return False
    return hmac.compare_digest(given.encode(), expected.encode())


def new_form_token() -> str:
    return secrets.token_urlsafe(32)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "replace")).hexdigest()
