"""The admin page in a real headless Chromium (Debian's `chromium`, driven by Playwright; no
downloaded browser): list, search, filter, edit, delete, pin, restore, history and provenance."""
from __future__ import annotations

import asyncio
import re
import shutil

import pytest

from tests.integration.conftest import ADMIN_KEY, make_turn, produce, unique_user, wait_processed

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("no system chromium: install the packages of deploy/apt-packages.txt "
                "(.ci/run does) to run the admin page's browser test", allow_module_level=True)

from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402

TURNS = ["I adopted a dog named Luna last year.",
         "My goal is to run a marathon in October.",
         "I live in Lisbon with my sister Marta."]


@pytest.fixture(scope="module")
def user(worker) -> str:
    user = unique_user("admin")
    turns = [make_turn(user, str(i), text) for i, text in enumerate(TURNS, 1)]
    asyncio.run(produce(worker.broker_url, turns))
    asyncio.run(wait_processed(worker.broker_url, turns))
    return user


@pytest.fixture(scope="module")
def page(worker):
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        # Guards against a hang, not measures: each step waits on the page's own state (a
        # registry write answers once its command applied), however slow the machine. An
        # `expect` otherwise gives up after 5 s.
        page.set_default_timeout(120_000)
        expect.set_options(timeout=120_000)
        yield page
        browser.close()


def row(page: Page, text: str):
    return page.locator("#memories tbody tr", has_text=text)


def test_admin_page_over_the_registry(worker, user, page):
    page.goto(worker.api_url + "/admin")
    # Without a key the API refuses.
    page.fill("#user-id", user)
    page.click("#user-form button[type=submit]")
    expect(page.locator("#message")).to_contain_text("Enter an API key")
    page.fill("#api-key", "msk_wrong")
    page.click("#key-form button[type=submit]")
    page.click("#user-form button[type=submit]")
    expect(page.locator("#message")).to_contain_text("401")

    page.fill("#api-key", ADMIN_KEY)
    page.click("#key-form button[type=submit]")
    assert page.evaluate("sessionStorage.getItem('memstream.apiKey')") == ADMIN_KEY
    assert page.evaluate("localStorage.length") == 0
    page.click("#user-form button[type=submit]")
    expect(page.locator("#memories tbody tr")).to_have_count(len(TURNS))

    # Search and filter by category.
    page.fill("#search", "luna")
    page.click("#user-form button[type=submit]")
    expect(page.locator("#memories tbody tr")).to_have_count(1)
    page.fill("#search", "")
    page.select_option("#category", "Goals")
    expect(page.locator("#memories tbody tr")).to_have_count(1)
    expect(row(page, "marathon").locator(".category")).to_have_text("Goals")
    page.select_option("#category", "")
    expect(page.locator("#memories tbody tr")).to_have_count(len(TURNS))

    # Edit, pin, delete, restore: each goes through the API and shows in the table.
    memory_id = row(page, "marathon").get_attribute("data-id")
    marathon = page.locator(f'#memories tr[data-id="{memory_id}"]')
    marathon.get_by_role("button", name="Edit").click()
    marathon.locator("input.edit-text").fill("Ana plans to run a marathon in November.")
    marathon.get_by_role("button", name="Save").click()
    expect(marathon.locator(".summary")).to_have_text("Ana plans to run a marathon in November.")
    marathon.get_by_role("button", name="Pin").click()
    expect(marathon.locator(".pinned")).to_have_text("yes")
    page.once("dialog", lambda dialog: dialog.accept())
    marathon.get_by_role("button", name="Delete").click()
    expect(marathon.locator(".state")).to_have_text("soft_deleted")
    marathon.get_by_role("button", name="Restore").click()
    expect(marathon.locator(".state")).to_have_text("active")

    # History and provenance.
    marathon.get_by_role("button", name="History").click()
    expect(page.locator("#detail")).to_be_visible()
    expect(page.locator("#provenance")).to_contain_text(re.compile(r"t1:2"))
    verbs = page.locator("#history li").evaluate_all("items => items.map(li => li.dataset.verb)")
    assert verbs[0] == "ADD" and {"UPDATE", "SOFT_DELETE", "RESTORE"} <= set(verbs), verbs
    expect(page.locator("#history")).to_contain_text("by admin:it-admin")
