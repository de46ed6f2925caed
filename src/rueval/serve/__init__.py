"""The leaderboard service (`rueval serve`): teams upload the zip `rueval submit` writes, a worker
scores it against private gold with rueval's own metrics, and the board ranks it among the papers'
rows and the baselines computed on the same gold, with the columns an honest board needs: whether a
score can be told apart from the majority class and from the rule-based heuristics, and how often
a submission gives the heuristics' answer where a rule fires.

Inside, from the bottom: ``db`` (the schema, SQLite or PostgreSQL, the Alembic ``migrations``);
``gold`` and ``baselines`` (the private test answers and the reference models computed on them);
``secret`` (the board's secret: it seeds the bootstrap and keys the token hashes); ``upload`` (a
zip checked against the gold); ``grading`` (a submission's scores and honest-board columns) and
``disclosure`` (what of them the board publishes); ``queue`` (jobs in the database) and
``worker``; ``auth`` (teams, tokens, sessions), ``store`` (uploads and reports on disk) and
``board`` (the ranking); ``service`` (what the board does, whoever asks); ``app``, ``api`` and
``pages`` (the web application) and ``server`` (`rueval serve`). ``client`` is what `rueval
submit --to` speaks, with httpx only. Needs the ``serve`` extra.
"""
