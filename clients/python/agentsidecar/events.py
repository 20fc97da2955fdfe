"""The event stream (text/event-stream) as an iterator that reconnects with
Last-Event-ID."""

import json
import time
from dataclasses import dataclass
from typing import Any, Iterator, Optional

from .errors import error_from

_DROPPED = (OSError, EOFError)


@dataclass(frozen=True)
class Event:
    """One event: ``id``, ``event`` (its type: ``entry_appended``,
    ``message_appended``, ``reconnected``, ``deleted``, ``x-…``) and
    ``data`` (the decoded JSON, or the raw text when it is not JSON)."""

    id: str
    event: str
    data: Any


def events(transport: Any, p: str, last_id: Optional[str], reconnect: bool, read_timeout: float) -> Iterator[Event]:
    """Yield the events of the stream at path p, resuming after last_id."""
    retry = 3.0
    while True:
        conn = transport.connection(timeout=read_timeout)
        try:
            headers = transport.headers({"Accept": "text/event-stream", "Cache-Control": "no-cache"})
            if last_id:
                headers["Last-Event-ID"] = last_id
            conn.request("GET", transport.prefix + p, headers=headers)
            resp = conn.getresponse()
            if resp.status != 200:
                err = error_from(resp.status, resp.read(), resp.getheader("Retry-After"))
                if resp.status != 503 or not reconnect:
                    raise err
                retry = err.retry_after if err.retry_after is not None else retry
                raise EOFError("503")  # Redis away: reconnect after the delay
            ev_id, ev_type, data = None, "message", []
            while True:
                line = resp.readline()
                if not line:
                    break  # the server ended the stream
                text = line.decode("utf-8").rstrip("\r\n")
                if text == "":
                    if data or ev_id is not None:
                        if ev_id is not None:
                            last_id = ev_id
                        ev = Event(ev_id or "", ev_type, _decode("\n".join(data)))
                        yield ev
                        if ev.event == "deleted":
                            return
                    ev_id, ev_type, data = None, "message", []
                    continue
                if text.startswith(":"):
                    continue  # a comment: keepalive
                field, _, value = text.partition(":")
                if value.startswith(" "):
                    value = value[1:]
                if field == "id":
                    ev_id = value
                elif field == "event":
                    ev_type = value
                elif field == "data":
                    data.append(value)
                elif field == "retry" and value.isdigit():
                    retry = int(value) / 1000.0
        except _DROPPED:
            pass
        finally:
            conn.close()
        if not reconnect:
            return
        time.sleep(retry)


def _decode(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text
