"""The demo's page of an agent written with the OpenAI Agents SDK (``/helper/``), in a real
browser: the customer at phone size asks for the menu (the SDK agent calls its tool and
answers), a staff member at laptop size takes the chat from the bot in the admin, answers,
and hands it back; the SDK agent answers again. Screenshots go to a temporary folder."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from django.test import override_settings

from tests.browser.test_chat_page import (
    ARGS,
    CHROMIUM,
    SETTINGS,
    LiveServerTestCase,
    needs_chromium,
    say,
    server_side,
)
from tests.browser.test_handover_pages import make_staff, staff_page
from warlock_sessions.models import Session

pytest.importorskip("agents")

HELPER_SETTINGS = {
    **SETTINGS,
    "AGENTS": {**SETTINGS["AGENTS"], "helper": "example_project.demo.helper.helper_agent"},
}
MENU = "Today's pizzas: margherita 9.50 €, pepperoni 11.00 €, quattro formaggi 12.50 €."


@needs_chromium
@override_settings(WARLOCK_SESSIONS=HELPER_SETTINGS)
class SdkHelperPageTest(LiveServerTestCase):
    def test_the_sdk_agent_chats_and_a_person_takes_the_chat_over(self) -> None:
        from playwright.sync_api import expect, sync_playwright

        shots = Path(tempfile.mkdtemp(prefix="warlock-sdk-helper-"))
        server_side(make_staff)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            customer = browser.new_context(viewport={"width": 390, "height": 844}).new_page()
            customer.goto(self.live_server_url + "/helper/")
            expect(customer.locator("h1")).to_have_text("Shop helper (OpenAI Agents SDK)")
            expect(customer.locator("#status")).to_have_text("online", timeout=15000)
            bot = customer.locator(".messages li.bot")
            say(customer, "hello")
            expect(bot.last).to_contain_text("written with the OpenAI Agents SDK", timeout=15000)
            say(customer, "what's on the menu?")
            expect(bot.last).to_have_text(MENU, timeout=15000)
            customer.screenshot(path=str(shots / "helper-phone.png"))
            chat_id = customer.evaluate("document.querySelector('.chat').dataset.chatId")
            assert server_side(lambda: Session.objects.get(id=chat_id).agent) == "helper"

            staff = staff_page(
                browser,
                self.live_server_url,
                f"/admin/warlock_sessions/session/{chat_id}/change/",
            )
            expect(staff.locator(".warlock-chat li.bot").last).to_contain_text(MENU)
            staff.wait_for_function("window.warlockHandover.live()", timeout=15000)
            staff.click("#handover-take")
            expect(customer.locator(".messages li.notice").last).to_have_text(
                "Rita joined the chat.", timeout=15000
            )
            staff.fill("#handover-text", "Hi, Rita here: two margheritas?")
            staff.click("#handover-reply button")
            expect(customer.locator(".messages li.staff").last).to_contain_text(
                "Hi, Rita here: two margheritas?", timeout=15000
            )
            staff.screenshot(path=str(shots / "helper-admin-laptop.png"), full_page=True)
            staff.click("#handover-release")
            expect(customer.locator(".messages li.notice").last).to_have_text(
                "Rita handed you back to the assistant.", timeout=15000
            )
            say(customer, "the menu again, please")
            expect(bot).to_have_count(3, timeout=15000)  # the SDK agent answers again
            expect(bot.last).to_have_text(MENU)
            expect(customer.locator("#typing")).to_be_hidden()
            customer.screenshot(path=str(shots / "helper-phone-back.png"))

            # The customer asks for a person: the SDK agent's chat goes to the inbox too.
            say(customer, "can I talk to a person?")
            expect(customer.locator(".messages li.notice").last).to_have_text(
                "A person will answer you here.", timeout=15000
            )
            assert customer.locator(".messages li").all_inner_texts()[-2:] == [
                "I'll get a colleague for you: someone will answer here shortly.",
                "A person will answer you here.",
            ]
            expect(bot).to_have_count(4)  # the SDK agent was not asked
            staff.goto(f"{self.live_server_url}/admin/warlock_sessions/waitingsession/")
            expect(staff.locator("#result_list")).to_contain_text(chat_id)
            browser.close()
        print(f"screenshots in {shots}")
