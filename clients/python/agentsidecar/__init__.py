"""agentsidecar: the Python client of the sidecar's /v1 API (standard
library only, Python 3.9+).

    from agentsidecar import Sidecar

    sc = Sidecar("http://127.0.0.1:7480", token=os.environ.get("SIDECAR_API_TOKEN"))
    sc.append_entry("alice", "chat-1", "Where is the dog?", "In the garden", qa_id="q1")
    with sc.lock("graph_writes", ttl=30, wait=10) as lk:
        write(lk.fencing_token)

Every operation of the API is one method named after its operationId in
snake_case; a non-2xx answer raises SidecarError (NotFound, Conflict,
Unavailable, LockHeld, LockLost).
"""

from . import errors
from .client import DEFAULT_USER_AGENT, Sidecar
from .errors import BadID, Conflict, LockHeld, LockLost, NotFound, SidecarError, Unavailable
from .events import Event
from .lock import Lock
from .types import Stored

__version__ = "0.1.0"

__all__ = ["Sidecar", "Lock", "Event", "Stored", "DEFAULT_USER_AGENT"]
__all__ += errors.__all__  # SidecarError and its kinds
