"""All SQL lives in this package: one module per table family, functions taking a connection.

Callers (the service) open transactions through :class:`yiji.db.Database` and pass the connection in;
store functions never commit. Rows come back as plain dicts or boundary models.
"""
