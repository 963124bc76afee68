"""What rlark-sim's two HTTP servers (kubelet log endpoints, gateway) share: loopback, threads, replies."""

import threading
from http.server import ThreadingHTTPServer


def reply(handler, code, body, content_type):
    """A whole response with Content-Length (`body` is bytes)."""
    handler.send_response(code)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


class LoopbackServer(ThreadingHTTPServer):
    """Bound to 127.0.0.1 only; one daemon thread per request, so a stuck client never blocks rlark-sim's exit."""

    daemon_threads = True
    thread_name = "http"

    def __init__(self, port, handler):
        super().__init__(("127.0.0.1", port), handler)

    def start(self):
        threading.Thread(target=self.serve_forever, name=self.thread_name, daemon=True).start()
        return self
