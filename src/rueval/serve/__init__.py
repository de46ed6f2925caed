"""The leaderboard service (`rueval serve`): teams upload the zip `rueval submit` writes, a worker
scores it against private gold with rueval's own metrics, and the board ranks it among the papers'
rows and the baselines computed on the same gold, with the columns an honest board needs: whether a
score can be told apart from the majority class and from the rule-based heuristics, and how often
a submission gives the heuristics' answer where a rule fires.

Layers inside: ``db`` (schema, connection, migrations) < ``gold``, ``upload`` (the gold and the zips
checked against it) < ``scoring`` (a submission's scores and honest columns) < ``queue`` < ``worker``,
``auth``, ``board`` < ``app`` and ``pages`` (the web application). ``client`` is what `rueval submit
--to` speaks, with httpx only. Needs the ``serve`` extra.
"""
