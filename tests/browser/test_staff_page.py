"""The staff pages made for answering, in a real browser at phone (390 px) and laptop (1280 px)
sizes: the chat a person answers reads as a chat (newest message right above the reply box,
counters that follow the conversation live), the buttons look like the admin's, no page scrolls
sideways, no column is cut, and the agent's graph fits its box with the current step in view.
Screenshots of each page at both sizes go to a temporary folder."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from django.test import override_settings

from tests.browser.test_chat_page import (
    ARGS,
    CHROMIUM,
    SETTINGS,
    LiveServerTestCase,
    needs_chromium,
    say,
    server_side,
    visitors_page,
)
from tests.browser.test_handover_pages import make_staff, staff_page

SIZES = {"phone": (390, 844), "laptop": (1280, 900)}
#: Chromium's own look for a <button> nobody styled.
DEFAULT_BUTTON = "rgb(239, 239, 239)"


def sideways(page: Any) -> int:
    return int(
        page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    )


@needs_chromium
@override_settings(WARLOCK_SESSIONS=SETTINGS)
class StaffPageTest(LiveServerTestCase):
    def test_the_staff_pages_are_made_for_answering_at_both_sizes(self) -> None:
        from playwright.sync_api import expect, sync_playwright

        shots = Path(tempfile.mkdtemp(prefix="warlock-staff-"))
        server_side(make_staff)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            customer = visitors_page(browser, self.live_server_url + "/")
            bot = customer.locator(".messages li.bot")
            for said, answer in [
                ("book", "What's your name?"),
                ("Ana", "e-mail address?"),
                ("ana@example.com", "Which day would suit you?"),
                ("tomorrow", "What time suits you?"),
                ("at 3", "Shall I book it?"),
                ("can I talk to a person?", "I'll get a colleague for you"),
            ]:
                say(customer, said)
                expect(bot.last).to_contain_text(answer, timeout=15000)
            chat_id = customer.evaluate("document.querySelector('.chat').dataset.chatId")
            customer.screenshot(path=str(shots / "chat-phone.png"))
            session_page = f"/admin/warlock_sessions/session/{chat_id}/change/"

            for size, (width, height) in SIZES.items():
                staff = staff_page(browser, self.live_server_url, "/admin/", width, height)
                for name, path in [
                    ("inbox", "/admin/warlock_sessions/waitingsession/"),
                    ("sessions", "/admin/warlock_sessions/session/"),
                    ("session", session_page),
                ]:
                    staff.goto(self.live_server_url + path)
                    staff.wait_for_load_state("networkidle")
                    staff.screenshot(path=str(shots / f"{name}-{size}.png"), full_page=True)
                    assert sideways(staff) <= 0, f"{name} at {size} scrolls sideways"
                    cut = staff.evaluate(
                        "[...document.querySelectorAll('#result_list th')].filter(th => {"
                        " const box = th.closest('.results') || document.body;"
                        " return th.getBoundingClientRect().right >"
                        " box.getBoundingClientRect().left + box.clientWidth + 1; })"
                        ".map(th => th.textContent.trim())"
                    )
                    if size == "laptop":
                        assert cut == [], f"{name} at {size}: columns cut off {cut}"

                # The session page is a chat: newest message right above the reply box.
                staff.goto(self.live_server_url + session_page)
                staff.wait_for_function("window.warlockHandover.live()", timeout=15000)
                newest = staff.locator("#transcript li").last.bounding_box()
                reply = staff.locator("#handover-text").bounding_box()
                assert newest is not None and reply is not None
                gap = reply["y"] - (newest["y"] + newest["height"])
                assert 0 <= gap < 120, f"{size}: the reply box is {gap}px from the newest message"
                assert reply["y"] + reply["height"] <= height, (
                    f"{size}: the reply box is not in view"
                )
                for button in ("#handover-take", "#handover-reply button"):
                    colour = staff.locator(button).evaluate(
                        "b => getComputedStyle(b).backgroundColor"
                    )
                    assert colour != DEFAULT_BUTTON, f"{button} keeps the browser's default look"

                # The graph fits its box on first paint (on a phone, at a readable size with
                # the box scrolled to it), the current step in view either way.
                graph = staff.locator(".warlock-graph")
                expect(graph).to_have_attribute("data-fitted", "1", timeout=15000)
                inside = (
                    "(node, box) => { const r = node.getBoundingClientRect(), b ="
                    " box.getBoundingClientRect(); return r.top >= b.top - 1 && r.left >= b.left"
                    " - 1 && r.bottom <= b.top + box.clientHeight + 1 && r.right <= b.left +"
                    " box.clientWidth + 1; }"
                )
                box = "document.querySelector('.warlock-graph')"
                # Waited for, not read once: the box refits when the sidebar settles.
                staff.wait_for_function(
                    f"() => ({inside})({box}.querySelector('.current'), {box})", timeout=5000
                )
                label = staff.locator(".warlock-graph .current").first.locator(
                    "foreignObject, text"
                )
                drawn = label.first.bounding_box()
                assert drawn is not None and drawn["height"] >= 8, f"{size}: unreadable"
                if size == "laptop":
                    # Eight flows are too small to read whole: the booking, where the session
                    # is, fills the box's width; "Fit" then shows the whole, padding counted.
                    across = (
                        f"(node, box) => {{ const r = node.getBoundingClientRect(), b = {box}"
                        ".getBoundingClientRect(); return r.left >= b.left - 1 && r.right <="
                        f" b.left + {box}.clientWidth + 1; }}"
                    )
                    staff.wait_for_function(
                        f"() => ({inside})({box}.querySelector('svg'), {box})"
                        f" || ({across})({box}.querySelector('g.cluster[id*=\"f1_box\"]'))",
                        timeout=5000,
                    )
                    staff.click(".warlock-graph-controls button:text-is('+')")
                    staff.click(".warlock-graph-controls button:text-is('Fit')")
                    staff.wait_for_function(
                        f"() => ({inside})({box}.querySelector('svg'), {box})", timeout=5000
                    )
                staff.screenshot(path=str(shots / f"session-top-{size}.png"))

                if size == "laptop":
                    # Counters follow the conversation live; one's own chat offers no take.
                    count = staff.locator("#transcript-count")
                    before = int(count.inner_text())
                    version = staff.locator(".field-version .readonly")
                    was = int(version.inner_text())
                    staff.click("#handover-take")
                    expect(staff.locator("#handover-take")).to_be_hidden(timeout=15000)
                    staff.fill("#handover-text", "Hi, Rita here. Which day?")
                    staff.click("#handover-reply button")
                    say(customer, "Friday, please")
                    expect(staff.locator("#transcript li.user").last).to_contain_text(
                        "Friday, please", timeout=15000
                    )
                    expect(count).to_have_text(str(before + 2), timeout=15000)
                    assert int(version.inner_text()) >= was + 3  # take, reply, message
                    staff.screenshot(path=str(shots / "session-live-laptop.png"))
                staff.close()

            favicon = customer.request.get(self.live_server_url + "/favicon.ico")
            assert favicon.status == 200
            browser.close()
        print(f"\nscreenshots in {shots}")
