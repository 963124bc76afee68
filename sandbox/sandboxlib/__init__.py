"""Support code for sandboxctl.py (the local RLark sandbox). Not part of the collection."""
