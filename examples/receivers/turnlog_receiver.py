"""A receiver for turnlog's HTTP tools, in Python's standard library.

It checks each call's signature (docs/tools.md "Checking the signature"), applies each
Idempotency-Key once and answers a repeated key with the first answer (the
`dedupe: idempotency_key` contract), and answers failures in the shapes turnlog shows
the model: a 4xx with {"error": {"message": ...}} is a refusal the model reads; a 5xx
says the outcome is unknown.

    from turnlog_receiver import Receiver, Refusal

    def add_note(args, call):          # call: the Turnlog-* headers, the key
        if not args.get("text"):
            raise Refusal(422, "text is empty")
        return {"id": save(args["text"])}

    Receiver(secrets=[b"..."], routes={"/notes": add_note}).serve("127.0.0.1", 8099)

Run as a program, it serves an example route, /notes (see main below).
"""

import hashlib
import hmac
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOLERANCE = 300  # seconds a signature's time may be off this clock


class Refusal(Exception):
    """A failure the model is told: status (4xx), and the message it reads."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status, self.message = status, message


def verify(secrets, headers, method, target, body, now=None, tolerance=TOLERANCE):
    """Whether a request is signed by one of secrets (bytes), within tolerance."""
    key = headers.get("Idempotency-Key", "")
    parts = dict(p.split("=", 1) for p in headers.get("Turnlog-Signature", "").split(",") if "=" in p)
    sigs = [p.split("=", 1)[1] for p in headers.get("Turnlog-Signature", "").split(",") if p.startswith("v1=")]
    try:
        t = int(parts.get("t", ""))
    except ValueError:
        return False
    if abs((now or time.time()) - t) > tolerance or not key or not sigs:
        return False
    payload = b".".join([str(t).encode(), key.encode(), method.encode(), target.encode(), body])
    for secret in secrets:
        want = hmac.new(secret, payload, hashlib.sha256).hexdigest()
        if any(hmac.compare_digest(want, s) for s in sigs):
            return True
    return False


class Receiver:
    """Routes signed POSTs to handlers, each key applied once."""

    def __init__(self, secrets, routes):
        self.secrets, self.routes = secrets, routes
        self.answers = {}  # Idempotency-Key -> (status, body): the first answer
        self.lock = threading.Lock()

    def handle(self, method, target, headers, body):
        """(status, JSON body) for one request."""
        if method != "POST" or target.split("?")[0] not in self.routes:
            return 404, {"error": {"message": "no such tool here"}}
        if not verify(self.secrets, headers, method, target, body):
            return 401, {"error": {"message": "the signature does not verify"}}
        key = headers["Idempotency-Key"]
        with self.lock:  # one key at a time: a repeat waits for, then gets, the first answer
            if key in self.answers:
                return self.answers[key]
            try:
                args = json.loads(body or b"{}")
                call = {k: v for k, v in headers.items() if k.lower().startswith("turnlog-")}
                call["key"] = key
                answer = (200, self.routes[target.split("?")[0]](args, call))
            except Refusal as r:
                answer = (r.status, {"error": {"message": r.message}})
            except Exception as e:  # the outcome is not known to the caller: it may retry
                return 500, {"error": {"message": "the receiver failed: %s" % e}}
            self.answers[key] = answer
            return answer

    def server(self, host, port):
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                status, out = receiver.handle("POST", self.path, self.headers, body)
                data = json.dumps(out).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        return ThreadingHTTPServer((host, port), Handler)

    def serve(self, host, port):
        self.server(host, port).serve_forever()


def main():
    """The example: /notes adds a note; the first call of each key answers 503 after it
    applied (as a crash would), so turnlog sends it again and gets the first answer.
    GET-less: it prints 'listening on PORT' and, on stdin's close, how many notes."""
    secret = os.environ[sys.argv[1] if len(sys.argv) > 1 else "NOTES_SECRET"].encode()
    notes, failed_once = [], set()

    def add_note(args, call):
        if not str(args.get("text", "")).strip():
            raise Refusal(422, "text is empty: give the note's text")
        notes.append(args["text"])
        return {"id": len(notes), "text": args["text"]}

    receiver = Receiver([secret], {"/notes": add_note})
    inner = receiver.handle

    def flaky(method, target, headers, body):
        status, out = inner(method, target, headers, body)
        key = headers.get("Idempotency-Key", "")
        if status == 200 and key not in failed_once:
            failed_once.add(key)
            return 503, {"error": {"message": "lost the answer"}}
        return status, out

    receiver.handle = flaky
    srv = receiver.server("127.0.0.1", 0)
    print("listening on %d" % srv.server_address[1], flush=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    sys.stdin.read()
    print("notes %d" % len(notes), flush=True)


if __name__ == "__main__":
    main()
