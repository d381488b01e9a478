"""An answer's body made from one object (the remediator's current plan), rendered once per object and kept until
the object is replaced. Rendering a big plan took the event loop for hundreds of milliseconds a request, and 24
requests at once stalled it for 10.7 s, past the Lease's renew deadline; now N requests for one plan cost one
rendering, done in a worker thread so the loop goes on meanwhile (the GIL is handed back every few milliseconds:
the JSON encoder with indentation is Python code). The object must not change once it is published: the plan does
not (the controller replaces it each cycle)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(eq=False)
class RenderedOnce(Generic[T]):
    render: Callable[[T], bytes]
    _value: object = field(default=None, init=False)  # the object rendered last, held so its identity stays its own
    _body: asyncio.Future[bytes] | None = field(default=None, init=False)

    async def body(self, value: T) -> bytes:
        if self._body is None or self._value is not value:
            self._value, self._body = value, asyncio.get_running_loop().run_in_executor(None, self.render, value)
        # Shielded: a client that goes away cancels its own wait, not the rendering the others wait for.
        return await asyncio.shield(self._body)
