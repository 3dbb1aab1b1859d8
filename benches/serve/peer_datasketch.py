#!/usr/bin/env python3
"""The peer for the serve benchmark: datasketch 2.0's MinHashLSH (threshold 0.8, 128 permutations) holding the
signatures of a JSON file, behind Python's ThreadingHTTPServer on a free loopback port (printed first).
POST / with a JSON list of 128 hash values answers the list of matching keys."""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
from datasketch import LeanMinHash, MinHashLSH

signatures = json.load(open(sys.argv[1]))
lsh = MinHashLSH(threshold=0.8, num_perm=128)
with lsh.insertion_session() as session:
    for i, values in enumerate(signatures):
        session.insert(f"s{i}", LeanMinHash(seed=1, hashvalues=np.array(values, dtype=np.uint64), scheme="affine32"))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        values = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        keys = lsh.query(LeanMinHash(seed=1, hashvalues=np.array(values, dtype=np.uint64), scheme="affine32"))
        body = json.dumps({"matches": [{"id": k} for k in keys]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # wrk closes its connections mid-request when a run ends: not an error of the peer.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


server = Server(("127.0.0.1", 0), Handler)
print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
server.serve_forever()
