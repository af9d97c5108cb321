"""A chat handed to a person, in two real browser pages: the customer on the demo chat at phone
size, a staff member on the admin at laptop size. Staff find the chat in the inbox, take it,
answer (the customer sees their name), read the customer's reply live and hand the chat back;
the bot asks again where it was. Screenshots of both pages go to a temporary folder."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
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
from warlock_sessions.models import Session


def make_staff() -> None:
    User.objects.create_superuser("rita", "rita@example.com", "pw", first_name="Rita")


def staff_page(browser: Any, base_url: str, path: str, width: int = 1280, height: int = 900) -> Any:
    """A page of Rita (``make_staff``) logged in to the admin, at ``path`` (laptop size)."""
    staff = browser.new_context(viewport={"width": width, "height": height}).new_page()
    staff.goto(f"{base_url}/admin/login/?next={path}")
    staff.fill("#id_username", "rita")
    staff.fill("#id_password", "pw")
    staff.click("input[type=submit]")
    return staff


@needs_chromium
@override_settings(WARLOCK_SESSIONS=SETTINGS)
class HandoverPagesTest(LiveServerTestCase):
    def test_staff_take_a_chat_answer_it_and_hand_it_back(self) -> None:
        from playwright.sync_api import expect, sync_playwright

        shots = Path(tempfile.mkdtemp(prefix="warlock-handover-"))
        server_side(make_staff)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            customer = visitors_page(browser, self.live_server_url + "/")
            messages = customer.locator(".messages li")
            say(customer, "I'd like to book")
            expect(messages.last).to_have_text(
                "Great, let's get you booked. What's your name?", timeout=15000
            )
            say(customer, "can I talk to a person?")
            expect(customer.locator(".messages li.bot").last).to_have_text(
                "I'll get a colleague for you: someone will answer here shortly.", timeout=15000
            )
            expect(customer.locator(".messages li.notice")).to_have_text(
                ["A person will answer you here."]
            )
            chat_id = customer.evaluate("document.querySelector('.chat').dataset.chatId")

            staff = staff_page(
                browser, self.live_server_url, "/admin/warlock_sessions/waitingsession/"
            )
            expect(staff.locator("#result_list")).to_contain_text("waiting for a person")
            expect(staff.locator("#result_list")).to_contain_text("can I talk to a person?")
            staff.screenshot(path=str(shots / "inbox-laptop.png"), full_page=True)
            staff.click(f"#result_list a:text-is('{chat_id}')")
            expect(staff.locator("#handover-status")).to_contain_text("Waiting for a person")
            staff.wait_for_function("window.warlockHandover.live()", timeout=15000)

            staff.click("#handover-take")
            expect(customer.locator(".messages li.notice").last).to_have_text(
                "Rita joined the chat.", timeout=15000
            )
            expect(staff.locator("#handover-status")).to_have_text("Rita answers this chat.")
            staff.fill("#handover-text", "Hi, I'm Rita. What would you like to book?")
            staff.click("#handover-reply button")
            answer = customer.locator(".messages li.staff").last
            expect(answer).to_contain_text("Hi, I'm Rita. What would you like to book?")
            expect(answer.locator(".by")).to_have_text("Rita")

            say(customer, "A haircut on friday, please")
            transcript = staff.locator("#transcript li.user").last
            expect(transcript).to_contain_text("A haircut on friday, please", timeout=15000)
            customer.screenshot(path=str(shots / "customer-phone.png"))
            staff.screenshot(path=str(shots / "session-laptop.png"), full_page=True)

            staff.click("#handover-release")
            expect(customer.locator(".messages li.bot").last).to_have_text(
                "What's your name?", timeout=15000
            )
            expect(customer.locator(".messages li.notice").last).to_have_text(
                "Rita handed you back to the assistant."
            )
            expect(staff.locator("#handover-status")).to_have_text("The bot answers this chat.")
            customer.screenshot(path=str(shots / "customer-phone-back.png"))
            browser.close()
        assert server_side(lambda: Session.objects.get(id=chat_id).handover) == ""
        print(f"screenshots in {shots}")

    def test_a_person_is_asked_for_from_any_state_and_told_in_order(self) -> None:
        """The README's "talk to a person", as a first message and in Portuguese after a
        cancelled booking: the bot's sentence, then the notice, and the chat in the inbox."""
        from playwright.sync_api import expect, sync_playwright

        server_side(make_staff)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            chats = []
            for before, ask, said, notice in [
                (
                    [],
                    "talk to a person",
                    "I'll get a colleague for you: someone will answer here shortly.",
                    "A person will answer you here.",
                ),
                (
                    [
                        ("oi, quero marcar", "Ótimo, vamos agendar. Qual é o seu nome?"),
                        (
                            "cancelar",
                            'Certo, cancelei esse agendamento. Diga "marcar" quando quiser.',
                        ),
                    ],
                    "quero falar com atendente",
                    "Vou chamar um colega: alguém vai responder aqui em breve.",
                    "Uma pessoa vai responder aqui.",
                ),
            ]:
                page = visitors_page(browser, self.live_server_url + "/")
                bot = page.locator(".messages li.bot")
                for text, answer in before:
                    say(page, text)
                    expect(bot.last).to_have_text(answer, timeout=15000)
                say(page, ask)
                expect(page.locator(".messages li.notice")).to_have_text([notice], timeout=15000)
                shown = page.locator(".messages li").all_inner_texts()
                assert shown[-2:] == [said, notice], shown
                chats.append(page.evaluate("document.querySelector('.chat').dataset.chatId"))
            staff = staff_page(
                browser, self.live_server_url, "/admin/warlock_sessions/waitingsession/"
            )
            for chat_id in chats:
                expect(staff.locator("#result_list")).to_contain_text(chat_id)
            browser.close()

    def test_a_portuguese_chat_has_the_page_in_portuguese(self) -> None:
        from playwright.sync_api import expect, sync_playwright

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 390, "height": 844})
            page.goto(self.live_server_url + "/")
            expect(page.locator("#status")).to_have_text("online", timeout=15000)
            expect(page.locator("#composer button")).to_have_text("Send")
            say(page, "oi, quero marcar")
            expect(page.locator(".messages li.bot").last).to_have_text(
                "Ótimo, vamos agendar. Qual é o seu nome?", timeout=15000
            )
            expect(page.locator("#composer button")).to_have_text("Enviar")
            expect(page.locator("#text")).to_have_attribute(
                "placeholder", "Diga oi, ou “quero marcar”"
            )
            expect(page.locator("h1")).to_have_text("Assistente de agendamento")
            assert page.evaluate("document.documentElement.lang") == "pt"
            # The title, the footer and the dates too, whatever the browser's own language.
            assert page.title() == "Assistente de agendamento — demonstração do warlock_sessions"
            expect(page.locator("footer")).to_contain_text("Conversa")
            for said in ("Ana", "ana@example.com", "amanhã às 15h"):
                say(page, said)
                expect(page.locator(".messages li.me").last).to_have_text(said, timeout=15000)
            asked = page.locator(".messages li.bot").last
            expect(asked).to_contain_text("Posso confirmar?", timeout=15000)
            day = asked.locator("time")
            expect(day).to_have_text(
                re.compile(r"^([a-zç]+-feira|sábado|domingo), \d+ de [a-zç]+ de \d{4}$")
            )
            page.reload()  # the page remembers the conversation's language
            expect(page.locator("#composer button")).to_have_text("Enviar", timeout=15000)
            browser.close()

    def test_a_second_tab_of_the_assistant_shows_the_first_tab_s_turns_live(self) -> None:
        from playwright.sync_api import expect, sync_playwright

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            context = browser.new_context(viewport={"width": 390, "height": 844})
            first = context.new_page()
            first.goto(self.live_server_url + "/assistant/")
            expect(first.locator("#status")).to_have_text("online", timeout=15000)
            say(first, "calculate 12*7")
            answer = "The calculate tool says: 12*7 = 84"
            expect(first.locator(".messages li.bot").last).to_have_text(answer, timeout=15000)
            second = context.new_page()  # the same visitor, another tab
            second.goto(first.url)
            expect(second.locator("#status")).to_have_text("online", timeout=15000)
            say(first, "calculate 6*7")
            later = "The calculate tool says: 6*7 = 42"
            expect(first.locator(".messages li.bot").last).to_have_text(later, timeout=15000)
            expect(second.locator(".messages li.bot").last).to_have_text(later, timeout=15000)
            browser.close()
