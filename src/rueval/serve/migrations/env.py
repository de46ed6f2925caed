"""Alembic's entry point for the board's migrations: run on the connection rueval.serve.db.migrate
hands over (no alembic.ini: the script location is set in code)."""

from alembic import context

from rueval.serve.db import Base

connection = context.config.attributes["connection"]
# render_as_batch: SQLite alters a table by copying it, which batch mode does for later migrations
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
