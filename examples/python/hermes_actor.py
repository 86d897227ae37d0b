"""
A Hermes mesh actor in Python (standard library + msgpack), written from docs/protocol.md: it joins
a running mesh as an external member (§11), listens on <dir>/<name>.sock (<dir>/clients/<name>.sock,
mode 0660 with the group, in a mesh with mesh.socket_group) and answers requests
{text} with {text: TEXT} under the capability "py.upper", acknowledging cumulatively (§4).

usage: python3 hermes_actor.py --dir D [--name N]
The mesh token, if the mesh has one: $HERMES_MESH_TOKEN, else the variable <dir>/mesh.json names.
"""
import argparse, hmac, json, os, selectors, signal, socket, stat, struct, sys, time
from collections import OrderedDict

import msgpack

CAPABILITIES = ["py.upper"]
MAX_FRAME, WINDOW, DEDUPE_IDS, DEDUPE_SECONDS = 16 * 1024 * 1024, 1024, 100_000, 600
NAMES = {2: "INVALID_REQUEST", 5: "AUTH_FAILED", 6: "RESOURCE_EXHAUSTED", 7: "INTERNAL", 9: "TTL_EXPIRED"}
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
READ, WRITE = selectors.EVENT_READ, selectors.EVENT_WRITE


class Refusal(Exception):
    """A coded error (§6), carried as the payload of an error envelope."""

    def __init__(self, code, detail, **fields):
        super().__init__(detail)
        self.payload = {**fields, "error_code": code, "error_name": NAMES.get(code, "UNKNOWN"), "detail": detail}


class Stop(Exception):
    """SIGTERM or SIGINT."""


def ulid():
    n = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    return "".join(CROCKFORD[(n >> (5 * i)) & 31] for i in reversed(range(26)))


def frame(message):
    body = msgpack.packb(message)
    return struct.pack(">I", len(body)) + body


def hello(name, **extra):
    return {"message_type": "hello", "protocol": 1, "node": name, "codecs": ["msgpack"], "window": WINDOW, "max_frame_bytes": MAX_FRAME, **extra}


def problem(env):
    """The first field of an envelope that breaks §3, or None."""
    kind, text = env.get("message_type"), lambda key: isinstance(env.get(key), str)
    checks = [(all(text(k) and env[k] for k in ("message_id", "trace_id", "source_agent")), "message_id, trace_id, source_agent: non-empty strings"),
              (kind in ("request", "response", "event", "error", "progress", "cancel"), "message_type: unknown"),
              (isinstance(env.get("timestamp"), int) and isinstance(env.get("ttl"), int), "timestamp, ttl: integers"),
              (isinstance(env.get("payload"), dict), "payload: a map"),
              (any(text(k) for k in ("target_agent", "topic", "capability")), "target_agent, topic or capability: one is required"),
              (kind != "request" or text("reply_to"), "reply_to: required on a request"),
              (kind in ("request", "event") or text("correlation_id"), "correlation_id: required on a %s" % kind),
              (isinstance(env.get("seq"), int) and env["seq"] >= 1, "seq: required on a connection")]
    return next((why for ok, why in checks if not ok), None)


class Conn:
    """One connection: framing (§1), the peer's hello and window (§2), our seq, cumulative acks (§4)."""

    def __init__(self, sock):
        self.sock, self.inbuf, self.out, self.events = sock, bytearray(), bytearray(), READ
        self.peer, self.window, self.sent, self.acked, self.backlog = None, 1024, 0, 0, []
        self.handled = self.ack_sent = 0  # highest seq handled (frames are handled in order), highest acked

    def frames(self):
        while len(self.inbuf) >= 4:
            (length,) = struct.unpack_from(">I", self.inbuf)
            if length == 0:
                raise Refusal(2, "zero-length frame", reason="zero-length frame", expected="a length of 1 or more")
            if length > MAX_FRAME:
                raise Refusal(6, "frame of %d bytes is over the limit" % length, resource="frame_bytes", used=length, limit=MAX_FRAME)
            if len(self.inbuf) < 4 + length:
                return
            body = bytes(self.inbuf[4 : 4 + length])
            del self.inbuf[: 4 + length]
            yield body

    def send(self, env, settles=0):
        """Stamps the next seq, or waits for the peer's credit; `settles` is the request seq this answer completes."""
        if self.backlog or self.sent - self.acked >= self.window:
            return self.backlog.append((env, settles))
        self.sent += 1
        self.out += frame({**env, "seq": self.sent})
        self.handled = max(self.handled, settles)

    def on_ack(self, seq):
        self.acked = max(self.acked, min(seq, self.sent))
        backlog, self.backlog = self.backlog, []
        for env, settles in backlog:
            self.send(env, settles)

    def flush(self):
        # A request is handled once its answer is queued: not while the answer waits for credit.
        waiting = [s for _, s in self.backlog if s]
        point = min(waiting) - 1 if waiting else self.handled
        if point > self.ack_sent:
            self.ack_sent = point
            self.out += frame({"message_type": "ack", "seq": point})
        while self.out:
            try:
                del self.out[: self.sock.send(self.out)]
            except BlockingIOError:
                return


class Actor:
    def __init__(self, dir, name, token):
        self.dir, self.name, self.token, self.handled = dir, name, token, 0
        self.sel, self.conns, self.calls, self.seen = selectors.DefaultSelector(), [], {}, OrderedDict()
        self.sup = self.listener = self.path = self.inode = None

    def envelope(self, kind, payload, trace_id=None, **route):
        mid = ulid()
        return {"message_id": mid, "message_type": kind, "trace_id": trace_id or mid, "source_agent": self.name, **route,
                "timestamp": int(time.time() * 1000), "ttl": 60000, "payload": payload}

    def answer(self, req, kind, payload):
        extra = {k: req[k] for k in ("context_id", "priority") if k in req}
        return self.envelope(kind, payload, req["trace_id"], target_agent=req.get("reply_to") or req["source_agent"], correlation_id=req["message_id"], **extra)

    def refuse(self, conn, value, refusal, close=False):
        """The error envelope of §9: with a seq after the handshake, else a bare frame and a close."""
        v = value if isinstance(value, dict) else {}
        mid = v["message_id"] if isinstance(v.get("message_id"), str) else ""
        trace = v["trace_id"] if isinstance(v.get("trace_id"), str) and v["trace_id"] else mid or "connection"
        to = v["reply_to"] if isinstance(v.get("reply_to"), str) and v["reply_to"] else (conn.peer or {}).get("node", "peer")
        env = self.envelope("error", refusal.payload, trace, target_agent=to, correlation_id=mid)
        if conn.peer is not None and not close:
            return conn.send(env)
        conn.out += frame(env)
        self.drop(conn)

    # ---- joining (§11) ----

    def join(self):
        """hello, register (external), listen, ready; returns the heartbeat interval in seconds."""
        self.sup = Conn(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
        self.sup.sock.settimeout(10)
        self.sup.sock.connect(os.path.join(self.dir, "supervisor.sock"))
        self.conns.append(self.sup)
        self.sup.out += frame(hello(self.name, **({"token": self.token} if self.token else {})))
        while self.sup.peer is None:
            self.step(self.sup)
        # A mesh shared with a group (mesh.socket_group) lets members create sockets only in clients/.
        group = mesh_info(self.dir).get("socket_group")
        path = os.path.join(self.dir, "clients", self.name + ".sock") if group is not None else os.path.join(self.dir, self.name + ".sock")
        answer = self.call({"op": "register", "address": self.name, "external": True, "socket": path,
                            "capabilities": CAPABILITIES, "subscriptions": [], "pid": os.getpid(),
                            # Nothing it handled survives a restart: senders may move what it left to a sibling.
                            "durable": False})
        entry = next((e for e in answer["entries"] if e.get("address") == self.name), {})
        if entry.get("socket", path) != path:
            raise SystemExit("hermes_actor: the mesh gives %s the endpoint %r; this example speaks Unix sockets only" % (self.name, entry["socket"]))
        self.listen(path, group)
        self.call({"op": "ready"})
        self.sup.sock.setblocking(False)
        self.sel.register(self.sup.sock, READ, self.sup)
        return max(int(answer.get("heartbeat_ms") or 1000), 10) / 1000

    def call(self, payload):
        """A control request to the supervisor, waited for (registry events keep arriving meanwhile)."""
        request = self.envelope("request", payload, target_agent="supervisor", reply_to=self.name)
        self.calls[request["message_id"]] = None
        self.sup.send(request)
        while self.calls[request["message_id"]] is None:
            self.step(self.sup)
        answer = self.calls.pop(request["message_id"])
        if answer["message_type"] == "error":
            raise SystemExit("hermes_actor: %s refused: %s" % (payload["op"], said(answer["payload"])))
        return answer["payload"]

    def listen(self, path, group=None):
        """Mode 0600 (0660 with the mesh's group); a stale socket of a dead process is replaced, a live one or a non-socket never (§9)."""
        try:
            if not stat.S_ISSOCK(os.lstat(path).st_mode):
                raise SystemExit("hermes_actor: %s exists and is not a socket" % path)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                if probe.connect_ex(path) == 0:
                    raise SystemExit("hermes_actor: %s is in use by a live process" % path)
            os.unlink(path)
        except FileNotFoundError:
            pass
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        umask = os.umask(0o177)
        try:
            self.listener.bind(path)
        finally:
            os.umask(umask)
        if group is not None:
            os.chown(path, -1, int(group))
            os.chmod(path, 0o660)
        self.path, self.inode = path, os.stat(path).st_ino
        self.listener.listen(128)
        self.listener.setblocking(False)
        self.sel.register(self.listener, READ, None)

    # ---- serving ----

    def run(self):
        interval = self.join()
        print("hermes_actor: %s ready on %s" % (self.name, self.path), file=sys.stderr, flush=True)
        beat = time.monotonic() + interval
        while True:
            for key, mask in self.sel.select(max(0.0, beat - time.monotonic())):
                self.accept() if key.data is None else self.step(key.data, mask & READ)
            if time.monotonic() >= beat:
                beat = time.monotonic() + interval
                self.sup.send(self.envelope("event", {"op": "heartbeat", "queue_depth": 0, "in_flight": 0, "handled": self.handled, "dead_letters": 0},
                                            target_agent="supervisor"))
            for conn in list(self.conns):
                self.step(conn, read=False)

    def accept(self):
        try:
            sock, _ = self.listener.accept()
        except BlockingIOError:
            return
        sock.setblocking(False)
        self.conns.append(Conn(sock))
        self.sel.register(sock, READ, self.conns[-1])

    def step(self, conn, read=True):
        """Reads what is there, handles every whole frame, then writes the answers and the ack."""
        try:
            conn.flush()
            if read:
                chunk = conn.sock.recv(1 << 16)
                if not chunk:
                    return self.drop(conn, "closed by the peer")
                conn.inbuf += chunk
                try:
                    for body in conn.frames():
                        self.on_frame(conn, body)
                        if conn not in self.conns:
                            return
                except Refusal as refusal:  # framing is lost: say why, then close
                    return self.refuse(conn, None, refusal, close=True)
            if conn in self.conns:
                conn.flush()
                if conn.sock.gettimeout() == 0.0 and conn.events != (READ | WRITE if conn.out else READ):
                    conn.events = READ | WRITE if conn.out else READ
                    self.sel.modify(conn.sock, conn.events, conn)
        except OSError as error:
            self.drop(conn, error)

    def drop(self, conn, why=None):
        if conn is self.sup:
            raise SystemExit("hermes_actor: supervisor connection lost (%s): exiting" % (why or "refused"))
        try:
            conn.sock.setblocking(True)
            conn.sock.settimeout(0.5)
            conn.sock.sendall(conn.out)
        except OSError:
            pass
        if conn in self.conns:
            self.conns.remove(conn)
            self.sel.unregister(conn.sock)
        conn.sock.close()

    def on_frame(self, conn, body):
        try:
            # Extensions other than timestamps stay (code, data): this actor reads only `op` and `text`.
            value = msgpack.unpackb(body, raw=False, strict_map_key=False, ext_hook=lambda code, data: (code, data))
        except Exception as error:
            return self.refuse(conn, None, Refusal(2, "undecodable frame (%s)" % (error or type(error).__name__), reason="not one MessagePack map"), close=conn.peer is None)
        if not isinstance(value, dict):
            return self.refuse(conn, None, Refusal(2, "frame is not a map", reason="got %s" % type(value).__name__), close=conn.peer is None)
        if conn.peer is None:
            return self.on_hello(conn, value)
        kind = value.get("message_type")
        if kind == "ack":
            ok = isinstance(value.get("seq"), int)
            return conn.on_ack(value["seq"]) if ok else self.refuse(conn, value, Refusal(2, "ack.seq must be an integer", reason="ack.seq"))
        if kind == "ping":
            conn.out += frame({"message_type": "pong", **({"nonce": value["nonce"]} if "nonce" in value else {})})
        elif kind == "hello":
            self.refuse(conn, value, Refusal(2, "hello sent twice", reason="hello sent twice", expected="one hello per direction, first"))
        elif kind != "pong":
            why = problem(value)
            if why is None:
                return self.on_envelope(conn, value)
            self.refuse(conn, value, Refusal(2, "invalid envelope: " + why, reason=why, expected="a Hermes envelope map (docs/protocol.md §3)"))
            conn.handled = max(conn.handled, value["seq"] if isinstance(value.get("seq"), int) else 0)

    def on_hello(self, conn, peer):
        """The supervisor's answer to our hello, or a peer's hello to check and answer (§2)."""
        if conn is self.sup:
            if peer.get("message_type") != "hello":
                raise SystemExit("hermes_actor: the supervisor refused our hello: %s" % said(peer.get("payload") or {}))
        elif peer.get("message_type") != "hello" or not isinstance(peer.get("node"), str) or "msgpack" not in (peer.get("codecs") or []) \
                or not isinstance(peer.get("window"), int) or not 1 <= peer["window"] <= 1_000_000:
            return self.refuse(conn, peer, Refusal(2, "bad hello", reason="bad hello", expected="{message_type:'hello', protocol:1, node, codecs:['msgpack'], window}"), close=True)
        elif peer.get("protocol") != 1:
            return self.refuse(conn, peer, Refusal(2, "unsupported protocol version", reason="protocol %r" % peer.get("protocol"), expected=[1]), close=True)
        elif self.token and not hmac.compare_digest(str(peer.get("token", "")).encode(), self.token.encode()):
            return self.refuse(conn, peer, Refusal(5, "wrong token" if "token" in peer else "token required", auth_method="token"), close=True)
        else:
            conn.out += frame(hello(self.name))
        conn.peer, conn.window = peer, peer["window"]

    def on_envelope(self, conn, env):
        kind, seq, mid = env["message_type"], env["seq"], env["message_id"]
        if kind in ("response", "error") and env["correlation_id"] in self.calls:
            self.calls[env["correlation_id"]] = env
        if kind != "request":  # events (the registry), answers, progress, cancel: handled on arrival
            conn.handled = max(conn.handled, seq)
            return
        if mid in self.seen:  # a redelivery is never handled twice: its stored answer goes again (§4)
            return conn.send(self.seen[mid][1], settles=seq)
        if env["ttl"] <= 0:
            answer = self.answer(env, "error", Refusal(9, "ttl ran out before handling", ttl=env["ttl"]).payload)
        else:
            try:
                answer = self.answer(env, "response", serve(env["payload"]))
            except Refusal as refusal:
                answer = self.answer(env, "error", refusal.payload)
            except Exception as error:  # no stack to foreign peers
                answer = self.answer(env, "error", Refusal(7, "handler failed: %s" % error).payload)
            self.handled += 1
        self.seen[mid] = (time.monotonic(), answer)
        while len(self.seen) > DEDUPE_IDS or next(iter(self.seen.values()))[0] < time.monotonic() - DEDUPE_SECONDS:
            self.seen.popitem(last=False)
        conn.send(answer, settles=seq)

    def close(self):
        """Answers and acks still queued go out (best effort); the socket file goes if it is still ours."""
        for conn in self.conns:
            try:
                conn.flush()
            except OSError:
                pass
            conn.sock.close()
        if self.listener:
            self.listener.close()
        if self.path and os.path.exists(self.path) and os.stat(self.path).st_ino == self.inode:
            os.unlink(self.path)


def serve(payload):
    """The actor itself: {text} -> {text: TEXT}; any other op is code 2."""
    op = payload.get("op", "upper")
    if op != "upper":
        raise Refusal(2, "unknown op %r" % (op,), reason="unknown op", expected=["upper"])
    if not isinstance(payload.get("text"), str):
        raise Refusal(2, "text must be a string", reason="text: not a string", expected={"text": "a string"})
    return {"text": payload["text"].upper()}


def mesh_info(dir):
    """The running mesh's <dir>/mesh.json (its token variable, its socket group), or {}."""
    try:
        with open(os.path.join(dir, "mesh.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def mesh_token(dir):
    """$HERMES_MESH_TOKEN, else the variable the running mesh's file names (`token_env` in <dir>/mesh.json)."""
    return os.environ.get("HERMES_MESH_TOKEN") or os.environ.get(mesh_info(dir).get("token_env") or "") or None


def said(p):
    return "error %s %s: %s" % (p.get("error_code"), p.get("error_name"), p.get("detail"))


def main():
    parser = argparse.ArgumentParser(description="A Hermes mesh actor in Python, joining as an external member.")
    parser.add_argument("--dir", required=True, help="the mesh's socket directory (where supervisor.sock is)")
    parser.add_argument("--name", default="py-upper", help="its address: [a-z][a-z0-9_-]*, a name the supervisor tree does not own")
    args = parser.parse_args()

    def stop(*_):
        raise Stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    actor = Actor(args.dir, args.name, mesh_token(args.dir))
    try:
        actor.run()
    except Stop:
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        actor.close()


if __name__ == "__main__":
    main()
