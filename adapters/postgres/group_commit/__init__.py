"""The group-commit engine: concurrent units of work of one process share a transaction.

Its rooms:
- `engine.py`: the queue, the committer tasks and the port's two entries;
- `units.py`: the two kinds of unit, how each runs on its stream and is answered;
- `unit_of_work.py`: a group's streams, and how a unit's staging is accepted or undone;
- `optimistic.py`: a group decided on the states this process holds, written
  by one statement that fails unless they are still current;
- `locked.py`: a group run in one transaction under the row locks;
- `outcomes.py`: how a finished group is answered, counted (`stats`) and woken;
- `failures.py`: what an error that stops a group is;
- `writes.py`: the one statement that writes a group;
- `load_coalescing.py` and `stream_cache.py`: concurrent loads in one query, and the
  committed states this process already decoded.
"""
