"""Test vectors of CPython's line tables, from the interpreter itself.

Run by scripts/gen-pyline-vectors.sh under each interpreter. Compiles a
fixed source (below) and, for each of its code objects, prints the table's
bytes (co_lnotab up to 3.9, co_linetable from 3.10), co_firstlineno, and
the line of every 2-byte offset as the interpreter's own PyCode_Addr2Line
answers it (through ctypes). That answer is checked here against the
Python-level views of the same table (dis.findlinestarts up to 3.9,
co_lines() from 3.10, co_positions() from 3.11): a disagreement stops the
script rather than writing a vector.
"""
import ctypes
import dis
import sys

GAP = "\n" * 300
LONG_SUM = " + ".join("a%d" % i for i in range(150))
SOURCE = '''\
import os

def simple(a, b):
    c = a + b
    return c * 2

def loop(n):
    total = 0
    for i in range(n):
        if i % 3:
            total += i
        else:
            total -= 1
    while total > 100:
        total //= 2
    return total

def gap():
    x = 1
''' + GAP + '''\
    return x

def long_line(''' + ", ".join("a%d" % i for i in range(150)) + '''):
    x = ''' + LONG_SUM + '''
    return x

def wide():
    x = 1;''' + " " * 200 + '''y = x + 1;''' + " " * 100 + '''z = y
    return (x,
            y,
        z)

def backwards(f):
    return f(
        1,
        2,
    )(
        3)

def handler(x):
    try:
        return 1 / x
    except ZeroDivisionError as e:
        return str(e)
    finally:
        x = None

def with_stmt(path):
    with open(path) as f:
        return f.read()

def gen(n):
    for i in range(n):
        yield i * 2

async def coro(x):
    return await x

square = lambda v: v * v

class Klass:
    attr = [i for i in range(3)]

    def method(self, x):
        return [y * x for y in range(x)]

    @staticmethod
    def nested():
        def inner(q):
            return q + 1
        return inner
''' + GAP + GAP + GAP + GAP + '''\
def far_away():
    return os.getpid()

result = simple(1, 2)
'''

Addr2Line = ctypes.pythonapi.PyCode_Addr2Line
Addr2Line.argtypes = [ctypes.py_object, ctypes.c_int]
Addr2Line.restype = ctypes.c_int
V = sys.version_info[:2]


def codes(co):
    yield co
    for c in co.co_consts:
        if hasattr(c, "co_code"):
            for x in codes(c):
                yield x


def table(co):
    return co.co_linetable if V >= (3, 10) else co.co_lnotab


def check(co, lines):
    name = getattr(co, "co_qualname", co.co_name)
    n = len(co.co_code)
    if V >= (3, 10):
        seen = [None] * (n // 2)
        for start, end, line in co.co_lines():
            for off in range(start, end, 2):
                seen[off // 2] = -1 if line is None else line
        if seen != lines:
            sys.exit("%s: co_lines() and PyCode_Addr2Line disagree" % name)
    else:
        starts = dict(dis.findlinestarts(co))
        cur = co.co_firstlineno
        for i, line in enumerate(lines):
            cur = starts.get(2 * i, cur)
            if line != cur:
                sys.exit("%s: findlinestarts and PyCode_Addr2Line disagree at %d" % (name, 2 * i))
    if V >= (3, 11):
        pos = [-1 if p[0] is None else p[0] for p in co.co_positions()]
        if pos != lines:
            sys.exit("%s: co_positions() and PyCode_Addr2Line disagree" % name)


top = compile(SOURCE, "pyline_src.py", "exec")
for co in codes(top):
    n = len(co.co_code)
    lines = [Addr2Line(co, off) for off in range(0, n, 2)]
    check(co, lines)
    name = getattr(co, "co_qualname", co.co_name).replace(" ", "_")
    print("code %d.%d %s %d %d %s" % (V[0], V[1], name, co.co_firstlineno, n,
                                      table(co).hex() or "-"))
    print("lines " + " ".join(map(str, lines)))
