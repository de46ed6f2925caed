"""API tokens looked up by their keyed hash: a ``digest`` column (HMAC-SHA256 under the board's
secret, unique and indexed); ``key`` and ``hash`` (argon2) stay for the tokens of an earlier rueval
until their first check rewrites them, so both become nullable.

Revision ID: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tokens") as batch:
        batch.add_column(sa.Column("digest", sa.String(64), nullable=True))
        batch.alter_column("key", existing_type=sa.String(40), nullable=True)
        batch.alter_column("hash", existing_type=sa.String(200), nullable=True)
        batch.create_index(batch.f("ix_tokens_digest"), ["digest"], unique=True)


def downgrade() -> None:
    # a keyed-hash token has no argon2 form: its team needs a new token after a downgrade
    op.execute(sa.text("DELETE FROM tokens WHERE hash IS NULL"))
    with op.batch_alter_table("tokens") as batch:
        batch.drop_index(batch.f("ix_tokens_digest"))
        batch.alter_column("hash", existing_type=sa.String(200), nullable=False)
        batch.alter_column("key", existing_type=sa.String(40), nullable=False)
        batch.drop_column("digest")
