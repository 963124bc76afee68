"""Pod logs as a kubelet keeps them: per-line timestamps fixed at write time, one range per container.

The text stays in `<state>/logs/<job>/<pod>.log` (appended across containers and pod incarnations,
what the `files` log source reads). Beside it, in `<state>/logs/_kubelet/<job>/`:
- `<pod>.idx`: one 16-byte record per line, (write time in ns, byte offset just after the line);
- `<pod>.containers`: one JSON line per container start {"pod": <Pod CR uid>, "line": first line index}.
Readers stream byte ranges of the text file; nothing is loaded whole.
"""

import bisect
import json
import os
import struct
import threading
import time

RECORD = struct.Struct("<qq")
CHUNK = 64 * 1024
_registry = {}
_registry_lock = threading.Lock()


def for_path(log_path):
    """The one PodLog of a log file in this process (writers and readers share container state)."""
    with _registry_lock:
        log = _registry.get(log_path)
        if log is None:
            log = _registry[log_path] = PodLog(log_path)
        return log


def rfc3339nano(ns):
    """The kubelet's timestamp format: RFC3339 with always nine fraction digits, UTC."""
    secs, frac = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + ".%09dZ" % frac


class PodLog:
    _lock = threading.Lock()  # one writer at a time for every pod log (the files are small appends)

    def __init__(self, path):
        self.path = path
        job_dir = os.path.dirname(path)
        side = os.path.join(os.path.dirname(job_dir), "_kubelet", os.path.basename(job_dir))
        stem = os.path.basename(path)[: -len(".log")] if path.endswith(".log") else os.path.basename(path)
        self.idx_path = os.path.join(side, stem + ".idx")
        self.containers_path = os.path.join(side, stem + ".containers")
        self._containers = None

    # ------------------------------------------------------------ writing
    def start_container(self, pod_uid):
        """A new container of pod `pod_uid` starts: its log begins at the next line."""
        with self._lock:
            known = self.containers()  # loaded before the append below, so the new entry is added once
            os.makedirs(os.path.dirname(self.idx_path), exist_ok=True)
            entry = {"pod": pod_uid, "line": self.line_count(), "started": time.time_ns()}
            with open(self.containers_path, "a") as fh:
                fh.write(json.dumps(entry) + "\n")
            known.append(entry)

    def line(self, text):
        self.lines([text])

    def lines(self, texts):
        """Append lines (text first, then their index records, so a reader never indexes a partial line)."""
        parts = []
        for text in texts:
            parts.extend(text.split("\n"))
        if not parts:
            return
        with self._lock:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            os.makedirs(os.path.dirname(self.idx_path), exist_ok=True)
            with open(self.path, "ab") as out:
                offset = out.seek(0, os.SEEK_END)
                records = []
                data = []
                now = time.time_ns()
                for text in parts:
                    raw = (text + "\n").encode("utf-8", "replace")
                    offset += len(raw)
                    data.append(raw)
                    records.append(RECORD.pack(now, offset))
                out.write(b"".join(data))
            with open(self.idx_path, "ab") as idx:
                idx.write(b"".join(records))

    # ------------------------------------------------------------ reading
    def containers(self):
        if self._containers is None:
            self._containers = []
            try:
                with open(self.containers_path) as fh:
                    self._containers = [json.loads(line) for line in fh if line.strip()]
            except OSError:
                pass
        return self._containers

    def line_count(self):
        try:
            return os.path.getsize(self.idx_path) // RECORD.size
        except OSError:
            return 0

    def restart_count(self, pod_uid):
        return max(0, sum(1 for c in self.containers() if c["pod"] == pod_uid) - 1)

    def started_ns(self, pod_uid, previous=False):
        mine = [c for c in self.containers() if c["pod"] == pod_uid]
        want = len(mine) - (2 if previous else 1)
        return mine[want]["started"] if want >= 0 else None

    def container_range(self, pod_uid, previous=False):
        """(first line, end line or None while it may grow) of the current/previous container, else None."""
        all_containers = self.containers()
        positions = [i for i, c in enumerate(all_containers) if c["pod"] == pod_uid]
        want = len(positions) - (2 if previous else 1)
        if want < 0:
            return None
        pos = positions[want]
        end = all_containers[pos + 1]["line"] if pos + 1 < len(all_containers) else None
        return all_containers[pos]["line"], end

    def _record(self, idx, n):
        idx.seek(n * RECORD.size)
        return RECORD.unpack(idx.read(RECORD.size))

    def _first_since(self, idx, lo, hi, since_ns):
        """First line in [lo, hi) written at or after since_ns (times never decrease)."""

        class Times:
            def __getitem__(_, n):
                return self._record(idx, n)[0]

            def __len__(_):
                return hi

        return bisect.bisect_left(Times(), since_ns, lo, hi)

    def stream(self, first, end, tail=None, since_ns=None, timestamps=False, follow=None):
        """Bytes of lines [first, end) (end None: up to the current last line), kubelet options applied.

        `follow()` (optional) is polled when the lines run out: True keeps waiting for new lines.
        """
        with open(self.idx_path, "rb") as idx, open(self.path, "rb") as text:
            stop = self.line_count() if end is None else end
            start = first
            if tail is not None:
                start = max(first, stop - tail)
            if since_ns is not None:
                start = self._first_since(idx, start, stop, since_ns)
            while True:
                yield from self._emit(idx, text, start, stop, timestamps)
                if follow is None or end is not None:
                    return
                start = stop
                while True:
                    stop = self.line_count()
                    if stop > start:
                        break
                    if not follow():
                        return
                    time.sleep(0.2)

    def _emit(self, idx, text, start, stop, timestamps):
        if start >= stop:
            return
        begin = self._record(idx, start - 1)[1] if start > 0 else 0
        if not timestamps:
            finish = self._record(idx, stop - 1)[1]
            text.seek(begin)
            left = finish - begin
            while left > 0:
                chunk = text.read(min(CHUNK, left))
                if not chunk:
                    return
                left -= len(chunk)
                yield chunk
            return
        idx.seek(start * RECORD.size)
        text.seek(begin)
        out = []
        size = 0
        for n in range(start, stop):
            stamp, after = RECORD.unpack(idx.read(RECORD.size))
            raw = text.read(after - begin)
            begin = after
            piece = rfc3339nano(stamp).encode() + b" " + raw
            out.append(piece)
            size += len(piece)
            if size >= CHUNK or n == stop - 1:
                yield b"".join(out)
                out, size = [], 0


def limit_bytes(chunks, limit):
    """The kubelet's limitBytes: the stream cut after `limit` bytes (mid-line if need be)."""
    left = limit
    for chunk in chunks:
        if left <= 0:
            return
        yield chunk[:left]
        left -= len(chunk)
