"""nats-py's protocol parser with a fast lane for the subscriptions `inbox.Inbox` serves itself.

nats-py's parser tries two regular expressions on every message line and awaits a coroutine per message:
a quarter of replay's time. `FastParser` takes the `HMSG` and `MSG` frames (a publish's ack has no headers) at
the head of the buffer whose sid has a handler with `bytes.find` and `split`, and calls the handler directly (an
incomplete one waits for the rest); at the first frame of any other kind (another subscription's message, PING,
INFO) it hands the rest of the buffer to nats-py's own parser, so everything else is parsed exactly as before.
"""

from __future__ import annotations

from collections.abc import Callable

from nats.aio.client import Client
from nats.protocol.parser import AWAITING_CONTROL_LINE, MAX_CONTROL_LINE_SIZE, Parser

Handler = Callable[[bytes, bytes, bytes, "bytes | None"], None]
_HMSG = b"HMSG "
_MSG = b"MSG "
_CRLF = b"\r\n"


class FastParser(Parser):
    def __init__(self, nc: Client, handlers: dict[int, Handler]) -> None:
        super().__init__(nc)
        self.handlers = handlers

    async def parse(self, data: bytes = b"") -> None:
        buf = self.buf
        buf.extend(data)
        if self.state == AWAITING_CONTROL_LINE and self._take_own(buf):
            return  # what is left is the start of one of our frames: wait for the rest of it
        if buf:
            await super().parse()

    def _take_own(self, buf: bytearray) -> bool:
        """Hand complete `HMSG subject sid [reply] header-size total-size` and `MSG subject sid [reply] size`
        frames of our sids at the head of `buf` to their handlers, and drop them from it (also those taken before a
        handler raised). True when what remains is empty or a message frame (ours or not) not complete yet."""
        pos, handlers, size = 0, self.handlers, len(buf)
        view = memoryview(buf)  # slices of it copy once; released before the buffer is cut
        try:
            while (skip := 5 if buf.startswith(_HMSG, pos) else 4 if buf.startswith(_MSG, pos) else 0):
                end = buf.find(_CRLF, pos)
                if end < 0:  # the line is still coming (unless it is too long to be one: nats-py's to refuse)
                    return size - pos <= MAX_CONTROL_LINE_SIZE
                args = bytes(view[pos + skip:end]).split()
                if len(args) - skip not in (-1, 0) or (handler := handlers.get(int(args[1]))) is None:
                    return False  # HMSG has 4 or 5 arguments, MSG 3 or 4 (a reply subject or none)
                start, total = end + 2, int(args[-1])
                if size < start + total + 2:
                    return True
                header_size = int(args[-2]) if skip == 5 else 0
                headers = bytes(view[start:start + header_size]) if header_size else None
                payload = bytes(view[start + header_size:start + total])
                pos = start + total + 2
                handler(args[0], args[2] if len(args) == skip else b"", payload, headers)
            return pos == size
        finally:
            view.release()
            if pos:
                del buf[:pos]


def install(nc: Client, handlers: dict[int, Handler]) -> None:
    """Give `nc` the fast lane for `handlers` (sid -> handler); call before it reads anything of theirs."""
    fast = FastParser(nc, handlers)
    old = nc._ps
    fast.buf, fast.state, fast.needed, fast.header_needed, fast.msg_arg = (  # a frame it is in the middle of
        old.buf, old.state, old.needed, old.header_needed, old.msg_arg)
    nc._ps = fast
