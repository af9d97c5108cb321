"""The demo chat in a real browser: Debian's Chromium driven by Playwright against daphne.

Skipped with the reason when no Chromium is installed (``apt-get install chromium``), except
under WARLOCK_REQUIRE_SERVICES=1, where CI installs it and a missing browser fails the run.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import SyncToAsync
from channels.testing import ChannelsLiveServerTestCase
from django.test import override_settings

from tests.services import REQUIRE_SERVICES
from tests.test_admin import seed_searchable_sessions
from warlock_sessions.host import Host, run_due_wakes
from warlock_sessions.models import Wake

README = Path(__file__).resolve().parents[2] / "README.md"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
HAVE_CHROMIUM = os.path.exists(CHROMIUM)
if not HAVE_CHROMIUM and REQUIRE_SERVICES:
    raise RuntimeError(f"WARLOCK_REQUIRE_SERVICES=1 but there is no Chromium at {CHROMIUM}")

SETTINGS = {
    "AGENTS": {"booking": "example_project.demo.agents.booking_agent"},
    "DEFAULT_AGENT": "booking",
    "CONVERSATION_AGENT": "example_project.demo.assistant.assistant",
}
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def server_side(function: Any, *args: Any) -> Any:
    """``function`` in a thread of its own: Playwright's sync API runs an event loop in this
    one, where Django refuses database calls."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(function, *args).result()


def open_assistant(playwright: Any, base_url: str, route: Any) -> tuple[Any, Any]:
    """The assistant's page at phone size, its socket passed through ``route``, online."""
    from playwright.sync_api import expect

    browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.route_web_socket(re.compile(r"/ws/conversations/"), route)
    page.goto(base_url + "/assistant/")
    expect(page.locator("#status")).to_have_text("online", timeout=15000)
    return browser, page


#: Records the text of the message being streamed each time it changes.
WATCH_STREAMING = """() => {
  window.streamedTexts = [];
  new MutationObserver(() => {
    for (const item of document.querySelectorAll(".messages li.streaming")) {
      window.streamedTexts.push(item.innerText);
    }
  }).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


#: A test class that drives Chromium, skipped where there is none.
needs_chromium = pytest.mark.skipif(
    not HAVE_CHROMIUM, reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)"
)


def visitors_page(browser: Any, url: str) -> Any:
    """A new visitor's page at phone size (a context of its own: its own cookies) at ``url``,
    once its socket is online."""
    from playwright.sync_api import expect

    page = browser.new_context(viewport={"width": 390, "height": 844}).new_page()
    page.goto(url)
    expect(page.locator("#status")).to_have_text("online", timeout=15000)
    return page


def say(page: Any, text: str) -> None:
    page.fill("#text", text)
    page.press("#text", "Enter")


def fire_the_reminder(chat_id: str) -> int:
    Wake.objects.filter(session_id=chat_id, status="pending").update(due_at="2000-01-01T00:00Z")
    return run_due_wakes(10)


class LiveServerTestCase(ChannelsLiveServerTestCase):
    """The example project served by daphne, with its static files, for a browser."""

    serve_static = True

    @classmethod
    def setUpClass(cls) -> None:
        # The live server is a forked process, and asgiref's shared sync thread does not
        # survive a fork: after earlier async tests started it, the server would queue the
        # auth middleware's database calls for a thread it does not have and never answer
        # (asgiref#194). A fresh executor starts its thread in the server when first needed.
        SyncToAsync.single_thread_executor = ThreadPoolExecutor(max_workers=1)
        super().setUpClass()


@needs_chromium
@override_settings(WARLOCK_SESSIONS=SETTINGS)
class ChatPageTest(LiveServerTestCase):
    def test_a_booking_conversation_survives_a_dropped_socket(self) -> None:
        from playwright.sync_api import expect, sync_playwright

        shots = Path(tempfile.mkdtemp(prefix="warlock-browser-"))
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            page = browser.new_page()
            page.goto(self.live_server_url + "/")
            status = page.locator("#status")
            expect(status).to_have_text("online", timeout=15000)
            bot = page.locator(".messages li.bot")

            def send(text: str) -> None:
                page.fill("#text", text)
                page.press("#text", "Enter")

            send("I'd like to book an appointment")
            expect(bot.last).to_have_text(
                "Great, let's get you booked. What's your name?", timeout=15000
            )
            send("My name is Ana Souza")
            expect(bot.last).to_have_text(
                "Thanks, Ana Souza! What's your e-mail address?", timeout=15000
            )

            # Drop the socket and, while the page is away, let server code (here: this test
            # process, not the server's) fire the discount event: an end user may not.
            chat_id = page.evaluate("document.querySelector('.chat').dataset.chatId")
            page.evaluate("window.warlockChat.socket().close()")
            server_side(
                Host("booking").handle, chat_id, {"event": {"name": "discount", "key": "o1"}}
            )
            expect(bot.last).to_have_text(
                "Good news: 10% off any booking made this week!", timeout=15000
            )
            expect(status).to_have_text("online", timeout=15000)

            # The reminder falls due and a worker in another process fires it: it shows live,
            # after what came before, with no message from the user to pull it in.
            assert server_side(fire_the_reminder, chat_id) == 1
            expect(bot.last).to_contain_text("Are you still there?", timeout=5000)

            send("ana@example.com")
            expect(bot.last).to_have_text("Which day would suit you?", timeout=15000)
            send("tomorrow at 3")
            expect(bot.last).to_contain_text("at 15:00", timeout=15000)
            expect(bot.last).to_contain_text("Shall I book it?", timeout=15000)
            send("yes")
            expect(bot.last).to_contain_text("Booked! See you on", timeout=15000)

            texts = bot.all_inner_texts()
            page.screenshot(path=str(shots / "chat.png"), full_page=True)
            browser.close()

        assert texts.count("Good news: 10% off any booking made this week!") == 1
        reminder = next(i for i, text in enumerate(texts) if "Are you still there?" in text)
        assert texts[reminder - 1] == "Good news: 10% off any booking made this week!"
        assert len(texts) == len(set(texts)), texts
        assert texts[0] == "Great, let's get you booked. What's your name?"
        assert texts[-1].startswith("Booked! See you on") and "Ana Souza" in texts[-1]
        print(f"\nscreenshot: {shots / 'chat.png'}")

    def test_a_second_tab_shows_both_sides_and_an_offline_message_is_sent_later(self) -> None:
        from playwright.sync_api import expect, sync_playwright

        shots = Path(tempfile.mkdtemp(prefix="warlock-browser-"))
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            context = browser.new_context(viewport={"width": 390, "height": 700})
            first = context.new_page()
            first.goto(self.live_server_url + "/")
            expect(first.locator("#status")).to_have_text("online", timeout=15000)
            say(first, "I'd like to book an appointment")
            expect(first.locator(".messages li.bot").last).to_have_text(
                "Great, let's get you booked. What's your name?", timeout=15000
            )

            # Offline: the message stays on screen as "not sent", and goes on reconnect.
            context.set_offline(True)
            first.evaluate("window.warlockChat.socket().close()")
            expect(first.locator("#status")).to_have_text("reconnecting…", timeout=5000)
            say(first, "My name is Ana Souza")
            unsent = first.locator(".messages li.unsent")
            expect(unsent).to_have_text("My name is Ana Souza")
            first.screenshot(path=str(shots / "offline.png"))
            context.set_offline(False)
            expect(first.locator(".messages li.bot").last).to_have_text(
                "Thanks, Ana Souza! What's your e-mail address?", timeout=20000
            )
            expect(unsent).to_have_count(0)

            # A second tab of the same visitor shows both sides, in order.
            second = context.new_page()
            second.goto(self.live_server_url + "/")
            expect(second.locator(".messages li")).to_have_count(4, timeout=15000)
            assert second.locator(".messages li").evaluate_all(
                "items => items.map(item => [item.className, item.textContent])"
            ) == [
                ["me", "I'd like to book an appointment"],
                ["bot", "Great, let's get you booked. What's your name?"],
                ["me", "My name is Ana Souza"],
                ["bot", "Thanks, Ana Souza! What's your e-mail address?"],
            ]
            second.screenshot(path=str(shots / "second-tab.png"))
            browser.close()
        print(f"\nscreenshots: {shots}")

    def test_messages_lost_in_a_fault_are_kept_and_sent_again(self) -> None:
        """The faults of a deployment, as the page meets them: a server restarting closes the
        socket (1012) with a message in flight that it never handled; a database outage
        answers another with ``unavailable``. The page keeps both until the log echoes them."""
        from playwright.sync_api import expect, sync_playwright

        faults = {"restart": "I'd like to book an appointment", "outage": "My name is Ana Souza"}
        met: list[str] = []

        def route(socket: Any) -> None:
            server = socket.connect_to_server()

            def from_page(message: str | bytes) -> None:
                text = str(message)
                for fault, said in faults.items():
                    if fault not in met and said in text:
                        met.append(fault)
                        if fault == "restart":
                            socket.close(code=1012, reason="service restart")
                        else:
                            socket.send(
                                '{"type": "error", "code": "unavailable", "detail": "the'
                                ' database is restarting", "retry_after": 1}'
                            )
                        return
                server.send(message)

            socket.on_message(from_page)

        shots = Path(tempfile.mkdtemp(prefix="warlock-browser-"))
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 390, "height": 700})
            page.route_web_socket(re.compile(r"/ws/sessions/"), route)
            page.goto(self.live_server_url + "/")
            bot = page.locator(".messages li.bot")
            expect(page.locator("#status")).to_have_text("online", timeout=15000)
            say(page, faults["restart"])
            expect(bot.last).to_have_text(
                "Great, let's get you booked. What's your name?", timeout=15000
            )
            say(page, faults["outage"])
            expect(page.locator(".messages li.unsent")).to_have_text(faults["outage"])
            page.screenshot(path=str(shots / "unavailable.png"))
            expect(bot.last).to_have_text(
                "Thanks, Ana Souza! What's your e-mail address?", timeout=15000
            )
            mine = page.locator(".messages li.me").all_inner_texts()
            assert (
                page.evaluate(
                    "sessionStorage.getItem(`warlock-unsent:${document.querySelector('.chat').dataset.chatId}`)"
                )
                == "[]"
            )
            browser.close()
        assert met == ["restart", "outage"]
        assert mine == list(faults.values())  # each once, in order
        print(f"\nscreenshot: {shots / 'unavailable.png'}")

    def test_the_assistant_sends_again_what_an_outage_or_a_restart_lost(self) -> None:
        """The assistant's socket meets the same faults: an ``unavailable`` answer, and a
        server restart (1012) after the turn was stored but before its result arrived. The
        first is sent again; the second is not (the history shows it stored)."""
        from playwright.sync_api import expect, sync_playwright

        met: list[str] = []

        def route(socket: Any) -> None:
            server = socket.connect_to_server()

            def from_page(message: str | bytes) -> None:
                if "My name is Sara" in str(message) and "outage" not in met:
                    met.append("outage")
                    socket.send(
                        '{"type": "error", "code": "unavailable", "detail": "the'
                        ' database is restarting", "retry_after": 1}'
                    )
                    return
                server.send(message)

            def from_server(message: str | bytes) -> None:
                if '"type":"result"' in str(message).replace(" ", "") and "restart" not in met:
                    met.append("restart")
                    socket.close(code=1012, reason="service restart")
                    return
                socket.send(message)

            socket.on_message(from_page)
            server.on_message(from_server)

        with sync_playwright() as playwright:
            browser, page = open_assistant(playwright, self.live_server_url, route)
            say(page, "My name is Sara")
            expect(page.locator(".messages li.bot").last).to_have_text(
                "Nice to meet you, Sara. I will remember your name.", timeout=20000
            )
            expect(page.locator("#send")).to_be_enabled(timeout=15000)
            history = page.evaluate("window.warlockAssistant.history()")
            browser.close()
        assert met == ["outage", "restart"]
        said = [m["content"] for m in history if m["role"] == "user"]
        assert said == ["My name is Sara"]  # sent again once after the outage, not after

    def test_the_assistant_keeps_a_turn_its_provider_refused_on_screen(self) -> None:
        """A provider's error frame added a warning, then the history's reload wiped it with
        the user's message: the user saw nothing at all."""
        from playwright.sync_api import expect, sync_playwright

        def route(socket: Any) -> None:
            server = socket.connect_to_server()

            def from_page(message: str | bytes) -> None:
                if "What is 12*7" in str(message):
                    socket.send(
                        '{"type": "error", "code": "provider-context", "detail": "The'
                        ' assistant could not answer: the conversation is too long."}'
                    )
                    return
                server.send(message)

            socket.on_message(from_page)
            server.on_message(lambda message: socket.send(message))

        with sync_playwright() as playwright:
            browser, page = open_assistant(playwright, self.live_server_url, route)
            say(page, "What is 12*7?")
            expect(page.locator(".messages li.failed")).to_have_text("What is 12*7?", timeout=15000)
            expect(page.locator(".messages li.bot").last).to_contain_text("too long")
            page.wait_for_timeout(500)  # the history's reload has come and gone
            expect(page.locator(".messages li.failed")).to_have_text("What is 12*7?")
            expect(page.locator("#text")).to_have_value("What is 12*7?")
            shot = Path(tempfile.gettempdir()) / "assistant-refused.png"
            page.screenshot(path=str(shot))
            browser.close()
        print(f"\nscreenshot: {shot}")

    def test_the_assistant_streams_calls_tools_undoes_and_forks(self) -> None:
        from playwright.sync_api import expect, sync_playwright

        shots = Path(tempfile.mkdtemp(prefix="warlock-browser-"))
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            for size, (width, height) in {"phone": (390, 844), "laptop": (1280, 800)}.items():
                page = browser.new_page(viewport={"width": width, "height": height})
                page.goto(self.live_server_url + "/assistant/")
                assert "/assistant/talk-" in page.url
                expect(page.locator("#status")).to_have_text("online", timeout=15000)
                bot = page.locator(".messages li.bot")

                # The reply arrives word by word: the page shows it while it is still being
                # written. What it showed is recorded as it happens (a loaded machine may
                # finish the stream between two looks of a poll).
                page.evaluate(WATCH_STREAMING)
                say(page, "My name is Sara")
                expect(bot.last).to_have_text(
                    "Nice to meet you, Sara. I will remember your name.", timeout=15000
                )
                shown = page.evaluate("window.streamedTexts")
                assert shown and any(text and text != bot.last.inner_text() for text in shown), (
                    shown
                )
                expect(page.locator(".messages li.streaming")).to_have_count(0)

                say(page, "calculate 12*7")
                expect(bot.last).to_have_text("The calculate tool says: 12*7 = 84", timeout=15000)
                tool = page.locator(".messages li.tool")
                expect(tool).to_have_text("Tool: calculate(12*7) → 12*7 = 84")
                page.screenshot(path=str(shots / f"assistant-{size}.png"), full_page=True)

                page.click("#undo")  # the tool turn goes
                expect(tool).to_have_count(0, timeout=15000)
                expect(bot.last).to_have_text("Nice to meet you, Sara. I will remember your name.")

                say(page, "What is my name?")
                expect(bot.last).to_have_text("Your name is Sara.", timeout=15000)
                expect(page.locator("#another")).to_have_text("Ask another way")
                page.click("#another")  # a fork before the last turn, its question ready
                page.wait_for_url(re.compile(r"/assistant/[0-9a-f]{32}/$"), timeout=15000)
                expect(page.locator("#forked")).to_contain_text("after 2 messages")
                expect(page.locator("#status")).to_have_text("online", timeout=15000)
                expect(page.locator("#text")).to_have_value("What is my name?")
                expect(bot).to_have_count(1)
                page.press("#text", "Enter")
                expect(bot.last).to_have_text("Your name is Sara.", timeout=15000)
                for index in range(4):  # a long chat, and a word longer than the screen
                    say(page, f"note {index}: " + "Supercalifragilistic" * 4)
                    expect(bot).to_have_count(3 + index, timeout=15000)
                    expect(page.locator("#send")).to_be_enabled(timeout=15000)  # reply done
                composer = page.locator("#text").bounding_box()
                assert composer is not None and composer["y"] + composer["height"] <= height
                overflow = page.evaluate(
                    "document.documentElement.scrollWidth - document.documentElement.clientWidth"
                )
                assert overflow <= 0, f"{size}: the page scrolls sideways by {overflow}px"
                page.screenshot(path=str(shots / f"assistant-fork-{size}.png"), full_page=True)
                page.close()
            browser.close()
        print(f"\nscreenshots: {shots}")

    def test_a_question_asked_again_is_answered_from_the_cache_and_marked(self) -> None:
        from playwright.sync_api import expect, sync_playwright

        shots = Path(tempfile.mkdtemp(prefix="warlock-browser-"))
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 390, "height": 844})
            failed: list[str] = []  # a new visit asked for a history that is not there: a 404
            page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)
            page.goto(self.live_server_url + "/assistant/")
            expect(page.locator("#status")).to_have_text("online", timeout=15000)
            assert failed == [], failed
            bot = page.locator(".messages li.bot")
            # The question the README suggests.
            question = re.search(r'answers itself \("([^"]+)"\)', README.read_text())
            assert question is not None, "the README names a question to ask again"
            say(page, question[1])
            expect(bot).to_have_count(1, timeout=15000)
            expect(page.locator(".messages li.streaming")).to_have_count(0, timeout=15000)
            page.click("#undo")  # the turn goes; the same question again is the same call
            expect(bot).to_have_count(0, timeout=15000)
            say(page, question[1])
            expect(bot).to_have_count(1, timeout=15000)
            expect(bot.last).to_have_class(re.compile(r"\bcached\b"), timeout=15000)
            say(page, "Where can I park near the station?")  # another question: the model
            expect(bot).to_have_count(2, timeout=15000)
            expect(page.locator(".messages li.streaming")).to_have_count(0, timeout=15000)
            expect(bot.last).not_to_have_class(re.compile(r"\bcached\b"))
            page.screenshot(path=str(shots / "assistant-cached-phone.png"), full_page=True)
            browser.close()
        print(f"\nscreenshot: {shots}")

    def test_undo_while_offline_keeps_the_transcript(self) -> None:
        """It emptied the transcript until the page was reloaded."""
        from playwright.sync_api import expect, sync_playwright

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            context = browser.new_context(viewport={"width": 390, "height": 844})
            page = context.new_page()
            page.goto(self.live_server_url + "/assistant/")
            expect(page.locator("#status")).to_have_text("online", timeout=15000)
            say(page, "My name is Sara")
            bot = page.locator(".messages li.bot")
            expect(bot).to_have_count(1, timeout=15000)
            expect(page.locator(".messages li.streaming")).to_have_count(0, timeout=15000)
            context.set_offline(True)
            page.click("#undo")
            expect(page.locator(".messages li.bot").last).to_contain_text("⚠", timeout=15000)
            expect(page.locator(".messages li.me")).to_have_text(["My name is Sara"])
            expect(bot.first).to_contain_text("Nice to meet you, Sara")
            context.set_offline(False)
            page.click("#undo")  # online again: undone for real
            expect(page.locator(".messages li.me")).to_have_count(0, timeout=15000)
            browser.close()

    def test_the_booking_dialogue_through_every_situation_at_both_sizes(self) -> None:
        """Hesitation then yes, a second booking with a changed mind, a day in the past,
        start over, a name given up, a way out; dates read in the conversation's language,
        whatever the browser's (an English chat in a Brazilian browser reads English dates)."""
        from playwright.sync_api import expect, sync_playwright

        shots = Path(tempfile.mkdtemp(prefix="warlock-browser-"))
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            for size, viewport, locale in [
                ("phone", {"width": 390, "height": 700}, "pt-BR"),
                ("laptop", {"width": 1280, "height": 720}, "en-GB"),
            ]:
                page = browser.new_context(viewport=viewport, locale=locale).new_page()
                page.goto(self.live_server_url + "/")
                expect(page.locator("#status")).to_have_text("online", timeout=15000)
                bot = page.locator(".messages li.bot")

                def exchange(text: str, reply: str, shot: str = "") -> None:
                    say(page, text)  # noqa: B023 (each context's own page)
                    expect(bot.last).to_contain_text(reply, timeout=15000)  # noqa: B023
                    if shot:
                        page.screenshot(path=str(shots / f"{shot}-{size}.png"))  # noqa: B023

                exchange("book", "What's your name?")
                exchange("Ana", "Thanks, Ana! What's your e-mail address?")
                exchange("ana@example.com", "Which day would suit you?")
                exchange("2020-01-01", "That day has already passed")
                exchange("tomorrow", "What time suits you? We're open from 09:00 to 17:00.")
                exchange("8am", "We're open from 09:00 to 17:00: which time")
                exchange("at 3", "at 15:00 for Ana (ana@example.com). Shall I book it?")
                exchange("maybe", "Please answer yes or no.")
                exchange("hmm", "Please answer yes or no.", "hesitant")
                exchange("yes", "Booked! See you on")
                booked = bot.last.locator("time")
                expect(booked).to_have_count(1)
                readable = booked.inner_text()  # "Monday, December 7, 2026"
                assert not re.search(r"\d{4}-\d\d-\d\d", readable), readable
                assert re.fullmatch(r"[A-Z][a-z]+day, [A-Z][a-z]+ \d+, \d{4}", readable), readable
                # A second booking, with a changed mind at its confirmation.
                # A new booking asks before it replaces the one booked.
                exchange("book another one", "Shall I cancel it and make a new booking?")
                exchange("yes", "Which day would suit you for the new one?")
                exchange("friday at 11am", "at 11:00 for Ana")
                exchange("make it saturday instead", "Shall I book it?", "changed-mind")
                exchange("yes", "Booked! See you on")
                expect(bot.last).to_contain_text("at 11:00, Ana.")
                # "cancel" after a booking is about that booking, and asks first.
                exchange("cancel", "at 11:00. Shall I cancel that booking?")
                exchange("no", "OK, it stays booked")
                # Start over, a name given up out loud, then a way out.
                exchange("book", "Shall I cancel it and make a new booking?")
                exchange("yes", "Which day would suit you for the new one?")
                exchange("start over", "What's your name?")
                exchange("?", "What's your name?")
                exchange("??", "What's your name?")
                exchange("???", "Thanks! What's your e-mail address?")
                expect(bot.nth(-2)).to_have_text(
                    "Sorry, I couldn't get your name, so let's go on without it."
                )
                exchange("cancel", "I've cancelled that booking", "way-out")

                texts = bot.all_inner_texts()
                assert not any("{{" in text for text in texts), texts
                friday, saturday = (
                    bot.filter(has_text="Shall I book it?")
                    .nth(n)
                    .locator("time")
                    .get_attribute("datetime")
                    for n in (-2, -1)
                )
                assert friday is not None and saturday is not None and friday < saturday
                heights = page.evaluate(
                    "[document.documentElement.scrollHeight, window.innerHeight,"
                    " document.getElementById('text').getBoundingClientRect().bottom]"
                )
                assert heights[0] <= heights[1] and heights[2] <= heights[1], heights
                page.screenshot(path=str(shots / f"situations-{size}.png"))
            browser.close()
        print(f"\nscreenshots: {shots}")

    def test_the_admin_shows_the_transcript_and_the_agent_drawn(self) -> None:
        from django.contrib.auth.models import User
        from playwright.sync_api import expect, sync_playwright

        shots = Path(tempfile.mkdtemp(prefix="warlock-browser-"))
        server_side(lambda: User.objects.create_superuser("root", "root@example.com", "pw"))
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(self.live_server_url + "/")
            expect(page.locator("#status")).to_have_text("online", timeout=15000)
            say(page, "book")
            expect(page.locator(".messages li.bot").last).to_contain_text("name", timeout=15000)
            chat_id = page.evaluate("document.querySelector('.chat').dataset.chatId")

            page.goto(self.live_server_url + "/admin/login/?next=/admin/")
            page.fill("#id_username", "root")
            page.fill("#id_password", "pw")
            page.click("input[type=submit]")
            page.goto(f"{self.live_server_url}/admin/warlock_sessions/session/{chat_id}/change/")
            bubbles = page.locator(".warlock-chat li")
            expect(bubbles).to_have_count(2)
            assert bubbles.evaluate_all("items => items.map(item => item.className)") == [
                "user",
                "bot",
            ]
            graph = page.locator("#agent-graph svg")
            expect(graph).to_have_count(1, timeout=15000)
            current = page.locator("#agent-graph svg g.node.current")
            expect(current).to_have_count(1)
            expect(current).to_contain_text("ask_name")
            page.locator("#agent-graph").scroll_into_view_if_needed()
            page.screenshot(path=str(shots / "admin-session.png"), full_page=True)
            for width, height in ((1280, 900), (390, 844)):
                # The drawing fits the box at both sizes (it was a 1946-px drawing cut off
                # in an 885-px box); "+" makes it wider than the box, to be dragged.
                page.set_viewport_size({"width": width, "height": height})
                page.get_by_role("button", name="Fit").click()
                box = page.locator(".warlock-graph")
                fits = (
                    "b => b.querySelector('svg').getBoundingClientRect().width <= b.clientWidth + 1"
                )
                assert box.evaluate(fits), width
                page.get_by_role("button", name="+").click()
                page.get_by_role("button", name="+").click()
                assert box.evaluate("b => b.scrollWidth > b.clientWidth"), width
                before = box.evaluate("b => b.scrollLeft")
                target = box.bounding_box()
                assert target is not None
                page.mouse.move(target["x"] + target["width"] / 2, target["y"] + 40)
                page.mouse.down()
                page.mouse.move(target["x"] + target["width"] / 2 - 120, target["y"] + 40)
                page.mouse.up()
                assert box.evaluate("b => b.scrollLeft") > before, width
                page.get_by_role("button", name="Fit").click()
                page.screenshot(path=str(shots / f"admin-graph-{width}.png"), full_page=False)
            # Search as staff type it: without accents, an id's start, what a visitor said
            # after their data was cleared ("start over").
            server_side(seed_searchable_sessions)
            for query, found in (
                ("Joao", "chat-7f3a91"),
                ("chat-7f3", "chat-7f3a91"),
                ("XK-2291", "chat-cleared"),
            ):
                page.goto(f"{self.live_server_url}/admin/warlock_sessions/session/")
                page.fill("#searchbar", query)
                page.press("#searchbar", "Enter")
                rows = page.locator("#result_list tbody tr")
                expect(rows).to_have_count(1, timeout=15000)
                expect(rows.first).to_contain_text(found)
            page.screenshot(path=str(shots / "admin-search-390.png"), full_page=True)
            browser.close()
        print(f"\nscreenshot: {shots / 'admin-session.png'}")

    def test_the_demo_converses_in_portuguese(self) -> None:
        from playwright.sync_api import expect, sync_playwright

        shots = Path(tempfile.mkdtemp(prefix="warlock-browser-"))
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            context = browser.new_context(viewport={"width": 390, "height": 700}, locale="pt-BR")
            page = context.new_page()
            page.goto(self.live_server_url + "/")
            expect(page.locator("#status")).to_have_text("online", timeout=15000)
            bot = page.locator(".messages li.bot")
            for text, reply in [
                ("oi", 'Diga "marcar" para agendar.'),
                ("quero marcar um horário", "Ótimo, vamos agendar. Qual é o seu nome?"),
                ("me chamo João", "Obrigado, João! Qual é o seu e-mail?"),
                ("joao@exemplo.com.br", "Qual dia fica bom para você?"),
                ("03/10/2030", "Que horário fica bom para você? Atendemos das 09:00 às 17:00."),
                ("às 8h", "Atendemos das 09:00 às 17:00: que horário"),
                ("às 3 da tarde", "às 15:00 para João (joao@exemplo.com.br). Posso confirmar?"),
                ("talvez", "Responda sim ou não, por favor."),
                ("pode ser", "Agendado!"),
                ("cancelar", "às 15:00. Quer que eu cancele?"),
                ("sim", "Pronto: cancelei o seu agendamento"),
            ]:
                say(page, text)
                expect(bot.last).to_contain_text(reply, timeout=15000)
            # The bot wrote 2030-10-03: 3 October, read day-first, shown as Brazilians read it.
            booked = bot.filter(has_text="Agendado!").last
            expect(booked.locator("time")).to_have_attribute("datetime", "2030-10-03")
            expect(booked.locator("time")).to_have_text("quinta-feira, 3 de outubro de 2030")
            expect(booked).to_contain_text("às 15:00")
            page.screenshot(path=str(shots / "portuguese-phone.png"))
            browser.close()
        print(f"\nscreenshot: {shots / 'portuguese-phone.png'}")
