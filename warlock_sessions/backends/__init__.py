"""The plumbing every backend family shares, beneath them all (internal): backend packages
imported on first use (``lazy``), the template of the keyed stores (``keyed``), private files
(``files``), checked SQL names and a private SQLite file (``sql``), one way to be given a
PostgreSQL database (``postgres``) or a Redis server (``redis``), Django's pooled and
event-loop database connections (``connections``, ``loop_connections``, the ``postgresql``
engine) and the classification of outages (``outages``). Stores, snapshots, checkpoints, locks
and conversations build on it; nothing here knows any of them."""
