"""Websockets (Channels): ``warlock_sessions.realtime.routing.websocket_urlpatterns``."""
