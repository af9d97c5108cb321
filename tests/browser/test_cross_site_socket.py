"""A page on one tenant's subdomain cannot open another's sockets in a real browser.

Chromium sends ``acme.chat.test``'s cookies with a websocket that a page on
``globex.chat.test`` opens to acme (one site to the browser): the socket must be refused for its
``Origin``, while acme's own page keeps its chat.
"""

from __future__ import annotations

from typing import Any

from django.test import override_settings

from tests.browser.test_chat_page import (
    ARGS,
    CHROMIUM,
    SETTINGS,
    LiveServerTestCase,
    needs_chromium,
    say,
)

#: Opens a socket to ``url`` from the page and reports what it saw within three seconds.
PROBE_SOCKET = """url => new Promise(done => {
  const seen = {opened: false, frames: []};
  const socket = new WebSocket(url);
  socket.onopen = () => { seen.opened = true; };
  socket.onmessage = event => seen.frames.push(JSON.parse(event.data));
  socket.onclose = event => { seen.closed = event.code; };
  setTimeout(() => { socket.close(); done(seen); }, 3000);
})"""


@needs_chromium
@override_settings(WARLOCK_SESSIONS=SETTINGS, ALLOWED_HOSTS=[".chat.test", "localhost"])
class CrossSiteSocketTest(LiveServerTestCase):
    def test_a_sibling_subdomain_s_page_cannot_open_the_chat_s_socket(self) -> None:
        from playwright.sync_api import expect, sync_playwright

        args = [*ARGS, "--host-resolver-rules=MAP *.chat.test 127.0.0.1"]
        acme = f"http://acme.chat.test:{self._port}"
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)
            context = browser.new_context()
            chat = context.new_page()
            chat.goto(acme + "/")  # plain http on a host not localhost: no crypto.randomUUID
            expect(chat.locator("#status")).to_have_text("online", timeout=15000)
            say(chat, "I'd like to book an appointment")
            expect(chat.locator(".messages li.bot").last).to_have_text(
                "Great, let's get you booked. What's your name?", timeout=15000
            )
            chat_id = chat.evaluate("document.querySelector('.chat').dataset.chatId")
            socket_url = f"ws://acme.chat.test:{self._port}/ws/sessions/{chat_id}/?after_seq=0"

            elsewhere = context.new_page()
            elsewhere.goto(f"http://globex.chat.test:{self._port}/healthz")
            hijack: dict[str, Any] = elsewhere.evaluate(PROBE_SOCKET, socket_url)
            own = chat.evaluate(PROBE_SOCKET, socket_url)
            browser.close()
        assert hijack == {"opened": False, "frames": [], "closed": 1006}, hijack
        assert own["opened"], own  # the visitor's own page still follows its chat
        assert "Great, let's get you booked. What's your name?" in [
            frame.get("text") for frame in own["frames"]
        ]
