"""Teams and how they prove who they are.

An API token is ``rueval_<key>_<secret>``: the key finds the token's row, and the row holds only an
argon2 hash of the whole token, so a copy of the database gives no token away. A check that
passed is remembered in the process by the token's SHA-256, so that polling does not pay argon2's
cost on every request.

The web pages sign a team in with the same token: a session cookie (HttpOnly, SameSite=Strict)
holds a random secret whose SHA-256 is stored, with the session's form token; every form that
changes something carries the form token (a forged form from another site has none). The sign-in
form itself is protected by a token in a cookie and the form alike (double submit).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
import unicodedata
from dataclasses import dataclass

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError

from rueval.core.errors import RuevalError
from rueval.serve.db import Database, SignIn, Team, Token

TOKEN_PREFIX = "rueval"
SESSION_S = 7 * 24 * 3600
MAX_NAME = 100
_REMEMBERED = 10_000  # verified tokens kept in memory (a digest and a team id each)
HASHER = PasswordHasher()


def check_team_name(name: str) -> str:
    name = name.strip()
    if not name or len(name) > MAX_NAME:
        raise RuevalError(f"team name {name!r:.120}: expected 1 to {MAX_NAME} characters")
    if any(unicodedata.category(ch).startswith("C") or ch in "/\\" for ch in name):
        raise RuevalError(f"team name {name!r:.120}: control characters and slashes are not allowed")
    return name


def add_team(db: Database, name: str) -> str:
    """Add a team and return its API token, which is not stored anywhere: shown once."""
    name = check_team_name(name)
    key, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
    token = f"{TOKEN_PREFIX}_{key}_{secret}"
    try:
        with db.session() as session:
            team = Team(name=name, created=time.time())
            session.add(team)
            session.flush()
            session.add(Token(team_id=team.id, key=key, hash=HASHER.hash(token), created=time.time()))
    except IntegrityError:
        raise RuevalError(f"a team named {name!r} exists already") from None
    return token


@dataclass(frozen=True)
class SignedIn:
    team: Team
    csrf: str


class Auth:
    """Tokens checked against the database (and remembered once checked), and browser sessions."""

    def __init__(self, db: Database):
        self.db = db
        self._verified: dict[str, int] = {}
        # argon2 takes 64 MiB and tens of milliseconds a check: a burst of requests checks a few at a
        # time, and a token checked meanwhile is not checked again
        self._checking = threading.Semaphore(2)

    def team_for_token(self, token: str) -> Team | None:
        digest = _digest(token)
        team_id = self._verified.get(digest)
        if team_id is None:
            with self._checking:
                team_id = self._verified.get(digest) or self._verify(token)
            if team_id is None:
                return None
            if len(self._verified) >= _REMEMBERED:
                self._verified.clear()
            self._verified[digest] = team_id
        with self.db.session(read_only=True) as session:
            return session.get(Team, team_id)

    def _verify(self, token: str) -> int | None:
        prefix, _, rest = token.partition("_")
        key, _, secret = rest.partition("_")
        if prefix != TOKEN_PREFIX or not key or not secret or len(token) > 200:
            return None
        with self.db.session(read_only=True) as session:
            row = session.scalars(select(Token).where(Token.key == key)).first()
        if row is None:
            return None
        try:
            HASHER.verify(row.hash, token)
        except (VerificationError, InvalidHashError):
            return None
        return row.team_id

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
            return SignedIn(session.get(Team, row.team_id), row.csrf)

    def sign_out(self, cookie: str | None) -> None:
        if cookie:
            with self.db.session() as session:
                session.execute(delete(SignIn).where(SignIn.digest == _digest(cookie)))


def same_token(given: str | None, expected: str | None) -> bool:
    """A form token compared in constant time; a missing one never matches."""
    return bool(given and expected) and hmac.compare_digest(given.encode(), expected.encode())


def new_form_token() -> str:
    return secrets.token_urlsafe(32)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "replace")).hexdigest()
