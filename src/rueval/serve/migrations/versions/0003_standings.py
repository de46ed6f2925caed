"""The board's tied-with-leader marks, one row per gold (rueval.serve.standings).

Revision ID: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "standings",
        sa.Column("gold", sa.String(64), primary_key=True),
        sa.Column("signature", sa.String(64), nullable=False),
        sa.Column("standings", sa.Text(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("standings")
