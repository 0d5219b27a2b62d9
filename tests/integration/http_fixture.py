"""A loopback HTTP receiver for the push tests (a fixture, not a peer).

    http_fixture.py PORT LOG status CODE BODY   answers every POST with CODE
                                                and BODY (text/plain)
    http_fixture.py PORT LOG proxy DELAY TO     forwards every POST to
                                                127.0.0.1:TO after DELAY s

Each request is noted in LOG as "PATH AUTHORIZATION", a line each.
"""
import http.client
import http.server
import sys
import time

port, log, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]


class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(log, "a") as f:
            f.write("%s %s\n" % (self.path, self.headers.get("Authorization")))
        if mode == "status":
            status, ctype, data = int(sys.argv[4]), "text/plain", sys.argv[5].encode()
        else:
            time.sleep(float(sys.argv[4]))
            c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[5]), timeout=60)
            c.request("POST", self.path, body, {"Content-Type": self.headers.get("Content-Type")})
            r = c.getresponse()
            status, ctype, data = r.status, r.getheader("Content-Type") or "", r.read()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
