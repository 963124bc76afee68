"""Support code for sandboxctl.py (the local RLark sandbox). Not part of the collection."""


def say(msg):
    """One progress line of sandboxctl."""
    print(">> sandbox: " + msg, flush=True)
