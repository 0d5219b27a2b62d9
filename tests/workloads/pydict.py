"""--heap against heaptrack on python3 (test_heap.sh's heap_vs_heaptrack_py),
run with PYTHONMALLOC=malloc so that every object is a malloc call
(pymalloc's arenas would be a few large mmaps).
  pydict.py N
A dict of N int keys to str values (its keys' table resized as it grows),
then N short-lived lists.
"""
import sys


def build(n):
    return {i * 7919: str(i) * 3 for i in range(n)}


def churn(n):
    t = 0
    for i in range(n):
        t += len([i, i + 1, i + 2] * 4)
    return t


n = int(sys.argv[1])
kept = build(n)
print("pydict:", len(kept), "entries", churn(n))
