"""ConfigSource: the scheduler config file, reloaded when it changes.

An invalid file keeps the previous config in force; the error is kept for the
caller to log and announce.
"""

from __future__ import annotations

import logging
from pathlib import Path

from scheduler.api.errors import ConfigError
from scheduler.engine import default_config, load_config
from scheduler.framework.config import SchedulerConfig

log = logging.getLogger(__name__)


class ConfigSource:
    """The config in force, and the file it came from."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.config: SchedulerConfig = default_config()
        self._stamp: tuple[float, int] | None = None
        self.error: str | None = None
        if path is not None:
            # At start an invalid file is fatal: there is no previous config to keep.
            self.config = load_config(path.read_text())
            self._stamp = self._file_stamp()
            _log_notes(self.config)

    def _file_stamp(self) -> tuple[float, int] | None:
        assert self.path is not None
        try:
            stat = self.path.stat()
        except OSError:
            return None
        return (stat.st_mtime, stat.st_size)

    def reload_if_changed(self) -> str | None:
        """Load the file again if it changed; the error when the new file was refused.

        A ConfigMap volume swaps a symlink, so the file's stamp is compared, not
        an inotify event."""
        if self.path is None:
            return None
        stamp = self._file_stamp()
        if stamp is None or stamp == self._stamp:
            return None
        self._stamp = stamp
        try:
            self.config = load_config(self.path.read_text())
        except (ConfigError, OSError) as error:
            self.error = f"scheduler config {self.path} not loaded, previous config kept: {error}"
            log.error(self.error)
            return self.error
        self.error = None
        log.info("scheduler config reloaded from %s", self.path)
        _log_notes(self.config)
        return None


def _log_notes(config: SchedulerConfig) -> None:
    """Say what the config sets that changes nothing in muster (accepted, not honoured)."""
    for note in config.notes:
        log.info("scheduler config: %s", note)
