"""Drive a real headless Chromium through its DevTools protocol, for the browser tests.

Chromium comes from the system's packages (``apt install chromium``); the tests skip
without it. ``chromium_page`` starts it on a private profile with ``--remote-debugging-port=0``
(Chromium writes the port it chose into the profile) and hands out a ``Page`` that sends
DevTools commands over aiohttp's websocket client (aiohttp comes with textual-serve).

textual-serve draws the terminal with xterm.js on a canvas, so the page's DOM holds no
text. ``CAPTURE_TERMINALS`` runs before the page's own scripts and keeps every object
assigned to a ``terminal`` property (textual-serve's client stores its xterm ``Terminal``
there); ``SCREEN_TEXT`` then reads the rows of the terminal's buffer, which is what xterm
paints.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from tests import processes

if TYPE_CHECKING:
    import aiohttp

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

CAPTURE_TERMINALS = """
window.__terminals = [];
Object.defineProperty(Object.prototype, "terminal", {
  configurable: true,
  set(value) {
    Object.defineProperty(this, "terminal", {
      value, writable: true, configurable: true, enumerable: true,
    });
    window.__terminals.push(value);
  },
});
"""

SCREEN_TEXT = """
(() => {
  const terminal = (window.__terminals || []).find((t) => t && t.buffer && t.buffer.active);
  if (!terminal) return null;
  const buffer = terminal.buffer.active;
  const rows = [];
  for (let y = 0; y < terminal.rows; y++) {
    const line = buffer.getLine(buffer.viewportY + y);
    rows.push(line ? line.translateToString(true) : "");
  }
  return rows.join("\\n");
})()
"""


class HeadlessChromium:
    """A headless Chromium on ``profile``, stopped (and its processes killed) on exit."""

    def __init__(self, profile: Path, width: int = 1280, height: int = 800) -> None:
        assert CHROMIUM is not None, "Chromium not installed (apt install chromium)"
        self.profile = profile
        self.process = processes.popen(
            [
                CHROMIUM,
                "--headless=new",
                "--no-sandbox",  # root in a container has no user namespace sandbox
                "--no-first-run",
                "--disable-gpu",
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",  # offline: fail fast
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def __enter__(self) -> HeadlessChromium:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        stop_group(self.process)

    def devtools_port(self, deadline: float) -> int:
        """The port Chromium chose, once it is listening."""
        active = self.profile / "DevToolsActivePort"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.process.returncode}")
            lines = active.read_text().split() if active.exists() else []
            if lines:
                return int(lines[0])
            time.sleep(0.1)
        raise TimeoutError("chromium did not open its DevTools port")


class Page:
    """One page target over its DevTools websocket: ``await page.call(method, **params)``."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        self.socket = socket
        self._ids = itertools.count(1)

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        message_id = next(self._ids)
        await self.socket.send_json({"id": message_id, "method": method, "params": params})
        async for message in self.socket:  # events in between are not asked for
            reply = json.loads(message.data)
            if reply.get("id") == message_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply["result"]
                return result
        raise RuntimeError(f"{method}: the DevTools connection closed")

    async def evaluate(self, expression: str) -> Any:
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result["result"].get("value")

    async def screen_text(self, wanted: tuple[str, ...], deadline: float) -> str:
        """The terminal's text once it shows every string in ``wanted`` (or at the deadline)."""
        text = ""
        while time.monotonic() < deadline:
            text = await self.evaluate(SCREEN_TEXT) or ""
            if all(w in text for w in wanted):
                break
            await asyncio.sleep(0.25)
        return text

    async def screenshot(self, path: Path) -> bytes:
        png = base64.b64decode((await self.call("Page.captureScreenshot", format="png"))["data"])
        path.write_bytes(png)
        return png


@contextlib.asynccontextmanager
async def chromium_page(profile: Path, deadline: float) -> AsyncIterator[Page]:
    """A page of a fresh headless Chromium, its terminals captured from the next load on."""
    import aiohttp

    with HeadlessChromium(profile) as chrome:
        port = chrome.devtools_port(deadline)
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/json/list") as response:
                targets = await response.json()
            url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
            page = Page(await session.ws_connect(url, max_msg_size=0))
            try:
                await page.call("Page.enable")
                await page.call("Page.addScriptToEvaluateOnNewDocument", source=CAPTURE_TERMINALS)
                yield page
            finally:
                await page.socket.close()


def stop_group(process: subprocess.Popen[bytes]) -> None:
    """Kill ``process`` and everything it started (it leads its own process group)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
