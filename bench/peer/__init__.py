"""The peer bench/ws.py measures ours against: the Channels tutorial's chat made durable, as
a Django developer writes it without this app (issue 29 §3)."""
