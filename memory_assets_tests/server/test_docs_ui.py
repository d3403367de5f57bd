"""The API's pages (``/docs``, ``/redoc``) of a real ``memory-assets serve``, opened in a real
browser (Playwright driving Debian's ``chromium-headless-shell``, as the Dagster UI tests do)
with every request that would leave the server refused and recorded: each page renders the API
(its operations listed, the schemas there) from the server's own files, and the browser asks
nothing of any other host (the pages' Content-Security-Policy keeps it from trying). Screenshots go to ``ui-screenshots/api-docs/``, checked as the other UI tests check theirs."""

from collections.abc import Iterator
from typing import Any

import pytest

from memory_assets_tests.server.serving import Server, start
from memory_assets_tests.test_definitions_ui import (
    CHROMIUM,
    SCREENSHOTS,
    VIEWPORT,
    Steps,
    check_screenshots,
    require_browser,
)

pytestmark = [pytest.mark.slow, pytest.mark.ui]
FOLDER = SCREENSHOTS / "api-docs"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start(tmp_path_factory.mktemp("docs") / "root")
    yield running
    running.stop()


def test_the_api_pages_render_offline_in_a_browser(server: Server) -> None:
    require_browser()
    from playwright.sync_api import expect, sync_playwright

    elsewhere: list[str] = []
    local: list[str] = []

    def only_the_server(route: Any) -> None:
        url = route.request.url
        if url.startswith(server.url + "/"):
            local.append(url)
            route.continue_()
        else:  # a CDN, a font, a validator: nothing may leave for it
            elsewhere.append(url)
            route.abort()

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.set_default_timeout(60_000)
            expect.set_options(timeout=30_000)  # a loaded machine renders slowly
            page.route("**/*", only_the_server)
            steps = Steps(page, FOLDER)

            page.goto(server.url + "/docs", wait_until="networkidle")
            expect(page.locator(".swagger-ui .info .title")).to_contain_text("memory-assets")
            operations = page.locator(".opblock-summary-path")
            expect(operations.first).to_be_visible()
            paths = set(operations.all_inner_texts())
            assert {"/v1/users/{user_id}/turns", "/v1/users/{user_id}/search"} <= {
                p.replace("\u200b", "") for p in paths
            }, paths
            steps.shot("swagger-ui")
            page.locator(".opblock-summary-path", has_text="/search").first.click()
            expect(page.get_by_text("Request body", exact=False).first).to_be_visible()
            steps.shot("swagger-ui-search")

            page.goto(server.url + "/redoc", wait_until="networkidle")
            expect(page.get_by_role("heading", name="memory-assets")).to_be_visible()
            expect(page.get_by_role("heading", name="Record a conversation turn")).to_be_visible()
            steps.shot("redoc")
        finally:
            browser.close()
    assert elsewhere == [], elsewhere
    assert any("/static-offline-docs/swagger-ui-bundle.js" in u for u in local), local
    assert any("/static-offline-docs/redoc.standalone.js" in u for u in local), local
    check_screenshots(steps.paths, FOLDER)


def test_the_pages_scripts_are_served_by_the_server(server: Server) -> None:
    """Without a browser: the pages name the server's own scripts, which it serves."""
    import httpx

    with httpx.Client(base_url=server.url, timeout=60) as client:
        for page, script in (("/docs", "swagger-ui-bundle.js"), ("/redoc", "redoc.standalone.js")):
            html = client.get(page).text
            assert (
                f"/static-offline-docs/{script}" in html and "cdn." not in html and "googleapis" not in html
            )
            served = client.get(f"/static-offline-docs/{script}")
            assert served.status_code == 200 and len(served.content) > 100_000
