"""The board's first schema: teams and their tokens, sign-ins, uploads, submissions, the job queue
and the reference models' predictions per gold.

Revision ID: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "teams",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(100), nullable=False, unique=True),
        sa.Column("created", sa.Float(), nullable=False),
    )
    op.create_table(
        "tokens",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("team_id", sa.Integer(), sa.ForeignKey("teams.id"), nullable=False, index=True),
        sa.Column("key", sa.String(40), nullable=False, unique=True),
        sa.Column("hash", sa.String(200), nullable=False),
        sa.Column("created", sa.Float(), nullable=False),
    )
    op.create_table(
        "sign_ins",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("digest", sa.String(64), nullable=False, unique=True),
        sa.Column("team_id", sa.Integer(), sa.ForeignKey("teams.id"), nullable=False, index=True),
        sa.Column("csrf", sa.String(64), nullable=False),
        sa.Column("expires", sa.Float(), nullable=False),
    )
    op.create_table(
        "uploads",
        sa.Column("sha256", sa.String(64), primary_key=True),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("created", sa.Float(), nullable=False),
    )
    _submissions_and_jobs()
    op.create_table(
        "baselines",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("gold", sa.String(64), nullable=False),
        sa.Column("name", sa.String(40), nullable=False),
        sa.Column("task", sa.String(40), nullable=False),
        sa.Column("predictions", sa.LargeBinary(), nullable=False),
        sa.Column("metrics", sa.Text(), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.UniqueConstraint("gold", "name", "task"),
    )


def _submissions_and_jobs() -> None:
    op.create_table(
        "submissions",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("team_id", sa.Integer(), sa.ForeignKey("teams.id"), nullable=False, index=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("public", sa.Boolean(), nullable=False, index=True),
        sa.Column("status", sa.String(16), nullable=False, index=True),
        sa.Column("upload", sa.String(64), sa.ForeignKey("uploads.sha256"), nullable=False),
        sa.Column("gold", sa.String(64), nullable=False),
        sa.Column("created", sa.Float(), nullable=False, index=True),
        sa.Column("finished", sa.Float(), nullable=True),
        sa.Column("total", sa.Float(), nullable=True),
        sa.Column("partial", sa.Boolean(), nullable=False),
        sa.Column("results", sa.Text(), nullable=True),
        sa.Column("summary", sa.Text(), nullable=True),
        sa.Column("ignored", sa.Text(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
    )
    op.create_table(
        "jobs",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("submission_id", sa.Integer(), sa.ForeignKey("submissions.id"), nullable=False, unique=True),
        sa.Column("lease_until", sa.Float(), nullable=True, index=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("worker", sa.String(200), nullable=True),
    )


def downgrade() -> None:
    for table in ("baselines", "jobs", "submissions", "uploads", "sign_ins", "tokens", "teams"):
        op.drop_table(table)
