"""Open-file limit: the soft RLIMIT_NOFILE raised to the hard one at start, as Go's runtime does."""

from __future__ import annotations

import logging
import resource

log = logging.getLogger(__name__)


def raise_open_files_limit() -> int:
    """Raise the soft limit to the hard one (systemd's default soft limit is 1,024, its hard
    one 524,288) and return the soft limit now in force. Children started through the runner
    close every inherited descriptor, so a tool that still uses select() sees low numbers."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft >= hard:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (OSError, ValueError) as error:
        log.warning("event=open_files_limit_kept soft=%d hard=%d error=%r", soft, hard, str(error))
        return soft
    log.debug("event=open_files_limit soft=%d raised_from=%d", hard, soft)
    return hard
