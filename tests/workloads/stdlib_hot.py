"""Two named threads spending their time in the standard library's pure-Python
JSON encoder (json/encoder.py, as indent= makes it), called from one function
of this file: the frames the naming flags (--full-filenames, --nolineno,
-t) change."""
import json
import threading
import time

from common import parse

args = parse()
DATA = {"k%d" % i: [i, str(i), {"x": [i] * 5}] for i in range(200)}


def encode_loop(end):
    while time.monotonic() < end:
        json.dumps(DATA, indent=1)


end = time.monotonic() + args.seconds
threads = [threading.Thread(target=encode_loop, args=(end,), name=f"encoder-{i}") for i in (1, 2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
