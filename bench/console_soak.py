"""Load for bench/console-soak: what a busy, hostile network does to the console.

  python3 bench/console_soak.py PORT PASSWORD SECONDS

All traffic goes to 127.0.0.1:PORT, from 127.0.0.x source addresses, with a
bounded number of threads and connections. Every minute (and at the end) it
prints one line of JSON with the answers it got so far, by kind.
"""
import base64, json, random, socket, struct, sys, threading, time

port, password, seconds = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
deadline = time.monotonic() + seconds
lock = threading.Lock()
counts = {}


def count(kind, what):
    with lock:
        counts.setdefault(kind, {})
        counts[kind][str(what)] = counts[kind].get(str(what), 0) + 1


def connect(source="127.0.0.1", timeout=10):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    return s


def answer(s):
    """The status and body of one answer with a Content-Length."""
    data = b""
    while b"\r\n\r\n" not in data:
        piece = s.recv(65536)
        if not piece:
            return 0, b""
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        piece = s.recv(65536)
        if not piece:
            break
        body += piece
    return int(head.split(b" ")[1]), body


def request(text, source="127.0.0.1", body=b""):
    try:
        s = connect(source)
        s.sendall(text.encode() + body)
        status, reply = answer(s)
        s.close()
        return status, reply
    except OSError as error:
        return type(error).__name__, b""


basic = "Authorization: Basic " + base64.b64encode(f"admin:{password}".encode()).decode()
# The scraper logs in once, as Prometheus would be configured with a bearer token.
status, reply = request(f"POST /api/v1/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        f"Content-Length: {len(json.dumps({'password': password}))}\r\n\r\n", body=json.dumps({"password": password}).encode())
token = json.loads(reply)["token"] if status == 200 else ""
bearer = f"Authorization: Bearer {token}"


def scraper():
    while time.monotonic() < deadline:
        started = time.monotonic()
        count("metrics", request(f"GET /metrics HTTP/1.1\r\nHost: x\r\n{bearer}\r\n\r\n")[0])
        count("healthz", request("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")[0])
        time.sleep(max(0, 1 - (time.monotonic() - started)))


def viewer(slot):
    rng = random.Random(slot)
    while time.monotonic() < deadline:
        try:
            s = connect(timeout=10)
            s.sendall(f"GET /api/v1/preview.mjpeg HTTP/1.1\r\nHost: x\r\n{bearer}\r\n\r\n".encode())
            head = b""
            while b"\r\n\r\n" not in head:
                piece = s.recv(4096)
                if not piece:
                    break
                head += piece
            status = int(head.split(b" ")[1]) if head.startswith(b"HTTP/") else 0
            count("viewer", status)
            watch = time.monotonic() + rng.uniform(2, 20)
            while status == 200 and time.monotonic() < min(watch, deadline):
                if not s.recv(65536):
                    break
            if rng.random() < 0.3:   # leave with a reset instead of a close
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
        except OSError as error:
            count("viewer", type(error).__name__)
        time.sleep(rng.uniform(0, 3))


def guesser(number):
    rng = random.Random(100 + number)
    while time.monotonic() < deadline:
        source = f"127.0.0.{rng.randint(10, 250)}"
        if rng.random() < 0.5:
            body = json.dumps({"password": f"guess {rng.random()}"}).encode()
            status = request(f"POST /api/v1/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                             f"Content-Length: {len(body)}\r\n\r\n", source, body)[0]
        else:
            wrong = base64.b64encode(f"admin:guess {rng.random()}".encode()).decode()
            status = request(f"GET /api/v1/status HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {wrong}\r\n\r\n", source)[0]
        count("guess", status)
        time.sleep(rng.uniform(0.1, 0.5))


def oversized(number):
    rng = random.Random(200 + number)
    while time.monotonic() < deadline:
        source = f"127.0.0.{rng.randint(10, 250)}"
        try:   # unauthenticated: 50 MB announced, sent until the answer comes
            s = connect(source)
            s.sendall(b"PATCH /api/v1/settings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 52428800\r\n\r\n")
            s.setblocking(False)
            sent = 0
            piece = b" " * 65536
            while sent < 52428800:
                try:
                    if s.recv(1, socket.MSG_PEEK):
                        break
                except BlockingIOError:
                    pass
                try:
                    sent += s.send(piece)
                except BlockingIOError:
                    time.sleep(0.01)
            s.setblocking(True)
            s.settimeout(10)
            count("huge-unauthenticated", answer(s)[0])
            count("huge-sent-MB", min(50, sent // 1048576))
            s.close()
        except OSError as error:
            count("huge-unauthenticated", type(error).__name__)
        body = b'{"pad":"' + b"x" * 40000 + b'"}'
        count("oversized-json", request(f"PATCH /api/v1/settings HTTP/1.1\r\nHost: x\r\n{basic}\r\nIf-Match: *\r\n"
                                        f"Content-Length: {len(body)}\r\n\r\n", "127.0.0.1", body)[0])
        time.sleep(rng.uniform(0.5, 2))


def stallers():
    """A few connections that never finish their head, over and over (each is cut at the head timeout)."""
    while time.monotonic() < deadline:
        held = []
        for i in range(10):
            try:
                s = connect(f"127.0.0.{20 + i}", timeout=30)
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
                held.append(s)
            except OSError as error:
                count("staller", type(error).__name__)
        for s in held:
            try:
                count("staller", "cut" if s.recv(1) == b"" else "answered")
            except OSError as error:
                count("staller", type(error).__name__)
            s.close()


threads = [threading.Thread(target=scraper), threading.Thread(target=stallers)]
threads += [threading.Thread(target=viewer, args=(i,)) for i in range(10)]
threads += [threading.Thread(target=guesser, args=(i,)) for i in range(4)]
threads += [threading.Thread(target=oversized, args=(i,)) for i in range(2)]
for t in threads:
    t.daemon = True
    t.start()
while time.monotonic() < deadline:
    time.sleep(min(60, max(0, deadline - time.monotonic())))
    with lock:
        print(json.dumps(counts, sort_keys=True), flush=True)
for t in threads:
    t.join(timeout=40)
