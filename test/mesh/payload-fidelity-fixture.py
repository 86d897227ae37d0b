"""
A foreign client of the Hermes wire protocol in Python (Debian's python3-msgpack), written from
docs/protocol.md alone: it dials an actor's socket, says hello with codecs ["msgpack"], sends
every value of the msgpack-test-suite in every encoding the suite lists, spliced byte for byte
into a request payload {"v": <value>}, then every extension type code in two encodings, then
values that JavaScript cannot be given, and one last ordinary request. It checks each answer
as the suite defines equality and prints one JSON summary line.

usage: payload-fidelity-fixture.py <socket> <target actor> <msgpack-test-suite.json>
"""
import json
import os
import socket
import struct
import sys
import time

import msgpack
from msgpack import ExtType, Timestamp

SOCKET, TARGET, SUITE = sys.argv[1], sys.argv[2], sys.argv[3]
NODE = "py-suite-%d" % os.getpid()
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
RUN = int.from_bytes(os.urandom(5), "big")


def base32(value, width):
    return "".join(CROCKFORD[(value >> (5 * (width - 1 - i))) & 31] for i in range(width))


def ulid(n):
    return base32(int(time.time() * 1000), 10) + base32(RUN, 8) + base32(n, 8)


def unhex(text):
    return bytes.fromhex(text.replace("-", ""))


def frame(body):
    return struct.pack(">I", len(body)) + body


class Ext:
    """An extension value of any code (python-msgpack's ExtType takes 0..127 only)."""

    def __init__(self, code, data):
        self.code, self.data = code, data

    def __eq__(self, other):
        return isinstance(other, Ext) and (self.code, self.data) == (other.code, other.data)

    def __repr__(self):
        return "Ext(%d, %s)" % (self.code, self.data.hex())


def decode(body):
    return msgpack.unpackb(body, raw=False, strict_map_key=False, ext_hook=Ext, timestamp=0)


def request(n, payload_bytes):
    """A request envelope with its payload spliced in as raw bytes: the encoding under test goes out as it is."""
    fields = {
        "message_id": ulid(n), "message_type": "request", "trace_id": "suite-%d" % n, "source_agent": NODE,
        "target_agent": TARGET, "reply_to": NODE, "timestamp": int(time.time() * 1000), "ttl": 20000, "seq": n,
    }
    body = bytes([0x80 | (len(fields) + 1)])
    for key, value in fields.items():
        body += msgpack.packb(key) + msgpack.packb(value)
    return fields["message_id"], frame(body + msgpack.packb("payload") + payload_bytes)


def spliced(raw):
    return b"\x81\xa1v" + raw


def expected_of(case):
    if "nil" in case:
        return None
    if "bool" in case:
        return case["bool"]
    if "binary" in case:
        return unhex(case["binary"])
    if "number" in case:
        return case["number"]
    if "bignum" in case:
        return int(case["bignum"])
    if "string" in case:
        return case["string"]
    if "array" in case:
        return case["array"]
    if "map" in case:
        return case["map"]
    if "timestamp" in case:
        return Timestamp(*case["timestamp"])
    if "ext" in case:
        return Ext(case["ext"][0], unhex(case["ext"][1]))
    raise ValueError("unknown case %r" % case)


def same(got, want, sent):
    """Equality as the suite defines it: a number equals a number of the same value, a bignum is an exact
    int, everything else is equal in type and value. Beyond the suite: an int that was sent as an int
    must come back an int (JavaScript cannot tell 1.0 from 1, so a float may come back an int)."""
    if isinstance(want, bool) or want is None:
        return got is want
    if isinstance(want, (int, float)):
        if isinstance(got, bool) or not isinstance(got, (int, float)) or got != want:
            return False
        return not (isinstance(sent, int) and not isinstance(got, int))
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(same(g, w, s) for g, w, s in zip(got, want, sent))
    if isinstance(want, dict):
        # Keys equal in type too: in Python 1 == 1.0 == True.
        kinds = lambda d: sorted((type(k).__name__, repr(k)) for k in d)
        return isinstance(got, dict) and kinds(got) == kinds(want) and all(same(got[k], want[k], sent[k]) for k in want)
    return type(got) is type(want) and got == want


cases = []  # (kind, label, payload bytes, expected, what was sent as Python decodes it)
suite = json.load(open(SUITE))
for group, entries in suite.items():
    for case in entries:
        for encoding in case["msgpack"]:
            raw = unhex(encoding)
            cases.append(("suite", "%s %s" % (group, encoding), spliced(raw), expected_of(case), decode(raw)))
for code in range(-128, 128):
    if code == -1:
        continue
    byte = code & 0xff
    for raw in (bytes([0xD4, byte, 0x10]), bytes([0xC7, 3, byte, 0x70, 0x71, 0x72])):
        cases.append(("ext", "type %d %s" % (code, raw.hex("-")), spliced(raw), Ext(code, raw[-1:] if raw[0] == 0xD4 else raw[-3:]), None))
# Map keys that are not strings: each type comes back as it went ("__proto__" as an ordinary key).
TYPED_KEYS = [
    {1: "int", -1: "neg", 2**40: "wide", 2**63: "uint64", 1.5: "float"},
    {True: "t", False: "f"},
    {None: "nil"},
    {b"k": "bin", "s": "str"},
    {"__proto__": {"x": 1}, "y": 2},
    {"s": 1, 2: {3: [4, {5: "deep"}]}},
]
for n, value in enumerate(TYPED_KEYS):
    cases.append(("keys", "typed keys %d %r" % (n, value), spliced(msgpack.packb(value)), value, None))
UNREADABLE = [
    ("timestamp with 10^9 nanoseconds", "d7-ff-ee-6b-28-00-00-00-00-00"),
    ("timestamp of 5 bytes", "c7-05-ff-00-00-00-00-00"),
    ("map keyed by an array", "81-91-01-02"),
    ("reserved byte 0xc1", "c1"),
]
for label, encoding in UNREADABLE:
    cases.append(("unreadable", label, spliced(unhex(encoding)), None, None))
cases.append(("after", "an ordinary request after all the others", msgpack.packb({"v": "still here"}), "still here", None))

sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(SOCKET)
sock.settimeout(10)
hello = {"message_type": "hello", "protocol": 1, "node": NODE, "codecs": ["msgpack"], "window": 4096}
out = frame(msgpack.packb(hello))
pending = {}
for n, case in enumerate(cases, start=1):
    message_id, data = request(n, case[2])
    pending[message_id] = case
    out += data
sock.sendall(out)

buffer = b""
answers = {}
peer_hello = None
highest = 0
deadline = time.time() + 20
while len(answers) < len(cases) and time.time() < deadline:
    try:
        chunk = sock.recv(1 << 16)
    except socket.timeout:
        break
    if not chunk:
        break
    buffer += chunk
    while len(buffer) >= 4:
        (length,) = struct.unpack(">I", buffer[:4])
        if len(buffer) < 4 + length:
            break
        body, buffer = buffer[4 : 4 + length], buffer[4 + length :]
        message = decode(body)
        if peer_hello is None:
            peer_hello = message
            continue
        if message.get("message_type") in ("response", "error") and message.get("correlation_id") in pending:
            answers[message["correlation_id"]] = message
            highest = max(highest, message.get("seq", 0))
    if highest:
        sock.sendall(frame(msgpack.packb({"message_type": "ack", "seq": highest})))
sock.close()

summary = {"suite": 0, "suite_equal": 0, "ext": 0, "ext_equal": 0, "keys": 0, "keys_equal": 0, "unreadable": [], "after": None, "failures": [], "unanswered": 0}
for message_id, (kind, label, _payload, want, sent) in pending.items():
    answer = answers.get(message_id)
    if answer is None:
        summary["unanswered"] += 1
        summary["failures"].append("%s: no answer" % label)
        continue
    payload = answer.get("payload", {})
    if kind == "unreadable":
        summary["unreadable"].append({"label": label, "type": answer["message_type"], "code": payload.get("error_code"), "reason": payload.get("reason")})
        continue
    got = payload.get("v") if answer["message_type"] == "response" else payload
    if kind == "after":
        summary["after"] = got
        continue
    summary[kind] += 1
    if answer["message_type"] == "response" and same(got, want, sent if kind == "suite" else want):
        summary[kind + "_equal"] += 1
    else:
        summary["failures"].append("%s: got %r, expected %r" % (label, got, want))
print(json.dumps(summary))
