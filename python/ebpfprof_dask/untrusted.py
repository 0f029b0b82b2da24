"""What the scheduler and the workers hand back is data to check, never
names or figures to pass on as they are: a worker (or whatever answers in its
place) chooses its host name, its pid, its GC log and its profile. Each check
here either returns a value safe for its use or says why there is none."""
import json
import math
import re

# a file name part: letters, digits, dot, dash, underscore; never a slash
_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9._-]")
NAME_PART_MAX = 64
HOST_MAX = 256
ERROR_MAX = 500
# Linux's PID_MAX_LIMIT: no pid is larger
PID_LIMIT = 4 * 1024 * 1024
# a figure of seconds beyond this (115 days) is not from a recording
SECONDS_MAX = 1e7
# a recording names at most this many states (the binary's table has 9)
STATES_MAX = 64
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# what ebpfprof's printable() (user/base/printable.c) escapes: C0, DEL, C1,
# the backslash, Unicode's bidi controls (an override reorders the rest of
# its line: a host name could show as another) and what is not a character
# (surrogates: bytes that were not UTF-8)
_ESCAPED = re.compile(r"[\x00-\x1f\x7f-\x9f\\\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
                      r"\ud800-\udfff]")


def _escape(char):
    """char as \\xHH per byte of its UTF-8, as ebpfprof writes it (a
    surrogate from undecodable input: the byte it stands for)."""
    if "\udc80" <= char <= "\udcff":
        raw = char.encode("utf-8", "surrogateescape")
    else:
        raw = char.encode("utf-8", "surrogatepass")
    return "".join(f"\\x{b:02x}" for b in raw)


def printable(value, limit):
    """value as text a terminal and a table show as it is, escaped as
    ebpfprof escapes what it prints (\\x1b, \\xe2\\x80\\xae), at most limit
    characters."""
    text = _ESCAPED.sub(lambda m: _escape(m.group()), str(value))
    return text if len(text) <= limit else text[:limit - 3] + "..."


def host(value):
    """A host name for the index: printable, bounded; None if not a string."""
    return printable(value, HOST_MAX) if isinstance(value, str) and value else None


def pid(value):
    """A pid, or None: an int (not a bool) a Linux pid can be."""
    return value if type(value) is int and 0 < value < PID_LIMIT else None


def name_part(value):
    """value as part of a file name: no slash, no NUL, no control character,
    nothing outside [A-Za-z0-9._-], at most NAME_PART_MAX characters."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value:
        return "unknown"
    return _UNSAFE_NAME_CHARS.sub("_", value)[:NAME_PART_MAX]


def seconds(value):
    """A duration or a time in seconds: a finite number in [0, SECONDS_MAX]."""
    if type(value) not in (int, float) or not math.isfinite(value) or not 0 <= value <= SECONDS_MAX:
        return None
    return float(value)


def count(value):
    return value if type(value) is int and 0 <= value < 2 ** 63 else None


def short_word(value, limit=64):
    """A short word the recording names (a stop reason, a GC timing)."""
    if isinstance(value, str) and 0 < len(value) <= limit and not _CONTROL.search(value):
        return value
    return None


def state_names(doc):
    """The states a recording says its time is split into (its "states",
    format 2 on: the binary's state table, user/model/states.c), as a
    frozenset of short words; None if it names none (format 1) or they are
    not a list of short words."""
    info = doc.get("ebpfprof") if isinstance(doc, dict) else None
    names = info.get("states") if isinstance(info, dict) else None
    if not isinstance(names, list) or not 0 < len(names) <= STATES_MAX:
        return None
    words = [short_word(n) for n in names]
    return frozenset(words) if None not in words else None


def python_version(value):
    """The version a recording says its target ran, as "3.11"."""
    return value if isinstance(value, str) and re.fullmatch(r"\d{1,2}\.\d{1,3}", value) else None


def json_object(data):
    """data (bytes) parsed as a JSON object, or None: not UTF-8, not JSON,
    nested deeper than the parser recurses, or not an object."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


def answer_error(answer):
    """Why a scheduler's or worker's answer is not a description of a
    recording, or None if it is one (a dict)."""
    if isinstance(answer, dict):
        return None
    return f"its answer is a {type(answer).__name__}, not a description of the recording"


def bytes_error(what, value, optional=False):
    if isinstance(value, bytes) or (optional and value is None):
        return None
    return f"its {what} is a {type(value).__name__}, not bytes"
