"""A real browser (Debian's chromium, headless, through Playwright) against `tfolab serve`:
the address with the token becomes one without it, a page of another site that opens
our websocket from the same browser is refused, and a link with the token on another
site still opens the class. No real run is made."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.environment import require_or_skip

CHROMIUM = "/usr/bin/chromium"
# Another site's page: it opens the classroom's websocket and reports how that went.
EVIL = """<!doctype html><title>waiting</title><script>
const socket = new WebSocket("ws://127.0.0.1:PORT/ws?width=80&height=24");
socket.onopen = () => { document.title = "opened"; };
socket.onclose = (event) => { if (document.title !== "opened") document.title = "refused"; };
</script>"""


@pytest.fixture
def browser() -> Iterator:  # type: ignore[type-arg]
    if not Path(CHROMIUM).exists():
        require_or_skip("chromium", f"no {CHROMIUM} (Debian: apt-get install chromium)")
    try:
        import playwright.sync_api as playwright
    except ImportError as err:
        require_or_skip("playwright", f"not importable ({err}): pip install -e '.[test]'")
    with playwright.sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


def _another_site(page: bytes) -> ThreadingHTTPServer:

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.2", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_the_token_leaves_the_address_and_other_sites_are_refused(serve, browser) -> None:
    served = serve()
    context = browser.new_context()
    page = context.new_page()
    page.goto(served.local_url(f"?token={served.token}"))
    page.wait_for_selector("body.-first-byte", timeout=60_000)  # the session drew
    assert page.url == served.local_url()  # the token is not in the address bar
    cookies = {c["name"]: c for c in context.cookies()}
    assert sorted(cookies) == ["tfolab_browser", "tfolab_token"]  # the token; who this is
    cookie = cookies["tfolab_token"]
    assert cookie["httpOnly"] and cookies["tfolab_browser"]["httpOnly"]
    assert cookie["sameSite"] == "Lax"  # sent when a link elsewhere leads here, never to a socket
    # Same browser, cookie in its jar: another site's page tries our websocket.
    site = _another_site(EVIL.replace("PORT", str(served.port)).encode())
    try:
        evil = context.new_page()
        evil.goto(f"http://127.0.0.2:{site.server_address[1]}/")
        evil.wait_for_function("document.title !== 'waiting'", timeout=30_000)
        assert evil.title() == "refused"
    finally:
        site.shutdown()
    log = served.stop()
    assert '"GET /" 303' in log and '"GET /ws" 101' in log and '"GET /ws" 403' in log, log


def test_a_link_with_the_token_on_another_site_opens_the_class(serve, browser) -> None:
    """The class's address posted on a course page: the click, the redirect and the page."""
    served = serve()
    link = f'<!doctype html><a id="go" href="{served.local_url(f"?token={served.token}")}">lab</a>'
    site = _another_site(link.encode())
    try:
        page = browser.new_context().new_page()
        page.goto(f"http://127.0.0.2:{site.server_address[1]}/")
        page.click("#go")
        page.wait_for_selector("body.-first-byte", timeout=60_000)
        assert page.url == served.local_url()
    finally:
        site.shutdown()
