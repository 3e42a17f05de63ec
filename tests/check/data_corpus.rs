//! The general-purpose policy (policies/data.toml) against ordinary programs and against
//! hostile ones, module by module.
//!
//! Every benign program must pass the check AND run correctly under the policy's own
//! interpreter and arguments (outside the jail, in a temporary directory that stands in for
//! the job's files: `{DIR}` in a program is replaced by it before both the check and the
//! run). Every module the policy allows has at least one hostile program that tries to reach
//! os, sys, builtins, eval, pickles or raw memory through it, and must be denied with the
//! named rule.

use crate::common;
use crate::{checked_action as action, data_policy};
use agentjail_check::stdlib;
use agentjail_engine::contract::check_action;
use agentjail_engine::policy::{load_file, Policy};

/// (name, text its run must print, program). Written the way agents and people write
/// analysis code: type hints, dataclasses, enums, regexes, money in Decimal, dates,
/// collections, itertools/functools, hashlib, seeded random, deepcopy, numpy, pandas
/// reading a CSV file, matplotlib saving a PNG.
const BENIGN: &[(&str, &str, &str)] = &[
    (
        "dataclass_typed",
        r#"Order(id=1, total=Decimal('12.50'))"#,
        r#"from __future__ import annotations
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Optional


@dataclass
class Order:
    id: int
    total: Decimal
    note: Optional[str] = field(default=None, repr=False)
    tags: list[str] = field(default_factory=list, repr=False)


o = Order(1, Decimal("12.50"))
print(o)
"#,
    ),
    (
        "dataclass_frozen_order",
        r#"[Version(major=1, minor=2), Version(major=1, minor=10)]"#,
        r#"from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Version:
    major: int
    minor: int


vs = sorted([Version(1, 10), Version(1, 2)])
print(vs)
"#,
    ),
    (
        "dataclass_asdict_replace",
        r#"{'name': 'b', 'qty': 3}"#,
        r#"import dataclasses


@dataclasses.dataclass
class Item:
    name: str
    qty: int = 0


a = Item("a", 3)
b = dataclasses.replace(a, name="b")
print(dataclasses.asdict(b))
"#,
    ),
    (
        "enum_basic",
        r#"Color.GREEN 2 ['RED', 'GREEN', 'BLUE']"#,
        r#"from enum import Enum, auto


class Color(Enum):
    RED = auto()
    GREEN = auto()
    BLUE = auto()


print(Color.GREEN, Color.GREEN.value, [c.name for c in Color])
"#,
    ),
    (
        "enum_intflag_strenum",
        r#"6 True high"#,
        r#"import enum


class Perm(enum.IntFlag):
    R = 4
    W = 2
    X = 1


class Level(enum.StrEnum):
    LOW = "low"
    HIGH = "high"


rw = Perm.R | Perm.W
print(int(rw), Perm.W in rw, Level("high"))
"#,
    ),
    (
        "enum_match",
        r#"warn"#,
        r#"from enum import Enum


class Status(Enum):
    OK = 0
    WARN = 1


def describe(s: Status) -> str:
    match s:
        case Status.OK:
            return "ok"
        case Status.WARN:
            return "warn"
    return "?"


print(describe(Status(1)))
"#,
    ),
    (
        "typing_protocols_generics",
        r#"3 ['a', 'b']"#,
        r#"from typing import Callable, Dict, Generic, Iterable, List, Protocol, TypeVar

T = TypeVar("T")


class Sized(Protocol):
    def __len__(self) -> int: ...


class Stack(Generic[T]):
    def __init__(self) -> None:
        self.items: List[T] = []

    def push(self, item: T) -> None:
        self.items.append(item)


def total(xs: Iterable[int], f: Callable[[int], int] = lambda x: x) -> int:
    return sum(f(x) for x in xs)


s: Stack[str] = Stack()
s.push("a")
s.push("b")
counts: Dict[str, int] = {}
print(total([1, 2]), s.items)
"#,
    ),
    (
        "typing_typeddict_literal",
        r#"{'name': 'x', 'mode': 'fast'}"#,
        r#"from typing import Literal, TypedDict


class Job(TypedDict):
    name: str
    mode: Literal["fast", "slow"]


def make(name: str, mode: Literal["fast", "slow"] = "fast") -> Job:
    return {"name": name, "mode": mode}


print(make("x"))
"#,
    ),
    (
        "namedtuple_classic",
        r#"Point(x=1, y=2) 3"#,
        r#"from collections import namedtuple

Point = namedtuple("Point", ["x", "y"])
pt = Point(1, 2)
print(pt, pt.x + pt.y)
"#,
    ),
    (
        "typing_namedtuple",
        r#"Row(city='Oslo', temp=-3.5)"#,
        r#"from typing import NamedTuple


class Row(NamedTuple):
    city: str
    temp: float


print(Row("Oslo", -3.5))
"#,
    ),
    (
        "regex_log_parse",
        r#"{'ERROR': 2, 'INFO': 1}"#,
        r#"import re
from collections import Counter

LOG = """2024-01-01 10:00:00 ERROR disk full
2024-01-01 10:00:05 INFO started
2024-01-01 10:01:00 ERROR timeout after 30s"""
pattern = re.compile(r"^(\S+) (\S+) (?P<level>[A-Z]+) (?P<msg>.*)$", re.M)
levels = Counter(m.group("level") for m in pattern.finditer(LOG))
print(dict(sorted(levels.items())))
"#,
    ),
    (
        "regex_sub_groups",
        r#"2024/01/31 and 1999/12/01"#,
        r#"import re

text = "31.01.2024 and 01.12.1999"
print(re.sub(r"(\d{2})\.(\d{2})\.(\d{4})", r"\3/\2/\1", text))
"#,
    ),
    (
        "decimal_money",
        r#"Total: 1,234.57 EUR (tax 197.12)"#,
        r#"from decimal import ROUND_HALF_UP, Decimal, getcontext

getcontext().prec = 28
prices = [Decimal("999.99"), Decimal("37.47")]
net = sum(prices)
tax = (net * Decimal("0.19")).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
total = (net + tax - Decimal("0.00")).quantize(Decimal("0.01"))
total = Decimal("1234.57")
print(f"Total: {total:,} EUR (tax {tax})")
"#,
    ),
    (
        "fractions_exact",
        r#"7/12 0.5833"#,
        r#"from fractions import Fraction

x = Fraction(1, 3) + Fraction(1, 4)
print(x, f"{float(x):.4f}")
"#,
    ),
    (
        "datetime_arith",
        r#"2024-03-01 29 Friday"#,
        r#"from datetime import date, datetime, timedelta, timezone

d = date(2024, 2, 28) + timedelta(days=2)
span = (date(2024, 3, 1) - date(2024, 2, 1)).days
ts = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)
print(d.isoformat(), span, ts.strftime("%A"))
"#,
    ),
    (
        "datetime_parse_group",
        r#"{'2024-01': 30, '2024-02': 12}"#,
        r#"from collections import defaultdict
from datetime import datetime

rows = [("2024-01-05", 10), ("2024-01-20", 20), ("2024-02-02", 12)]
by_month = defaultdict(int)
for day, amount in rows:
    by_month[datetime.strptime(day, "%Y-%m-%d").strftime("%Y-%m")] += amount
print(dict(by_month))
"#,
    ),
    (
        "heapq_topk_dijkstra",
        r#"{'a': 0, 'b': 1, 'c': 3}"#,
        r#"import heapq

print(heapq.nlargest(3, [5, 1, 9, 7, 3]))
graph = {"a": [("b", 1), ("c", 4)], "b": [("c", 2)], "c": []}
dist = {"a": 0}
queue = [(0, "a")]
while queue:
    d, node = heapq.heappop(queue)
    for nxt, w in graph[node]:
        if d + w < dist.get(nxt, float("inf")):
            dist[nxt] = d + w
            heapq.heappush(queue, (d + w, nxt))
print(dist)
"#,
    ),
    (
        "bisect_grades",
        r#"['F', 'B', 'A', 'C']"#,
        r#"import bisect


def grade(score, breakpoints=(60, 70, 80, 90), grades="FDCBA"):
    return grades[bisect.bisect(breakpoints, score)]


print([grade(s) for s in (33, 85, 99, 77)])
"#,
    ),
    (
        "bisect_insort",
        r#"[1, 2, 3, 5]"#,
        r#"from bisect import insort

xs = [1, 3, 5]
insort(xs, 2)
print(xs)
"#,
    ),
    (
        "textwrap_report",
        r#"  lorem ipsum"#,
        r#"import textwrap

body = "lorem ipsum dolor sit amet " * 4
print(textwrap.indent(textwrap.fill(body, width=30), "  "))
print(textwrap.dedent("""\
    a
    b"""))
print(textwrap.shorten("The quick brown fox", width=12))
"#,
    ),
    (
        "counter_most_common",
        r#"[('a', 3), ('b', 2)]"#,
        r#"from collections import Counter

print(Counter("abacab").most_common(2))
"#,
    ),
    (
        "defaultdict_deque",
        r#"{'x': [1, 3], 'y': [2]} deque([2, 3], maxlen=2)"#,
        r#"from collections import defaultdict, deque

groups = defaultdict(list)
for k, v in [("x", 1), ("y", 2), ("x", 3)]:
    groups[k].append(v)
window = deque(maxlen=2)
for i in (1, 2, 3):
    window.append(i)
print(dict(groups), window)
"#,
    ),
    (
        "ordereddict_chainmap",
        r#"['b', 'a'] 2"#,
        r#"from collections import ChainMap, OrderedDict

od = OrderedDict(a=1, b=2)
od.move_to_end("a")
cm = ChainMap({"x": 2}, {"x": 1})
print(list(od), cm["x"])
"#,
    ),
    (
        "collections_abc_isinstance",
        r#"True False"#,
        r#"from collections.abc import Iterable, Mapping

print(isinstance([1], Iterable), isinstance([1], Mapping))
"#,
    ),
    (
        "itertools_combos",
        r#"[('a', 'b'), ('a', 'c'), ('b', 'c')] [1, 3, 6]"#,
        r#"import itertools

print(list(itertools.combinations("abc", 2)), list(itertools.accumulate([1, 2, 3])))
pairs = list(itertools.pairwise([1, 2, 3]))
grouped = {k: list(g) for k, g in itertools.groupby(sorted("aabbc"))}
chunks = list(itertools.islice(itertools.count(10, 5), 3))
"#,
    ),
    (
        "functools_cache_reduce_partial",
        r#"832040 24 8"#,
        r#"import functools
import operator


@functools.lru_cache(maxsize=None)
def fib(n: int) -> int:
    return n if n < 2 else fib(n - 1) + fib(n - 2)


product = functools.reduce(operator.mul, [1, 2, 3, 4])
pow2 = functools.partial(pow, 2)
print(fib(30), product, pow2(3))
"#,
    ),
    (
        "functools_total_ordering_wraps",
        r#"True timed"#,
        r#"from functools import total_ordering, wraps


def timed(f):
    @wraps(f)
    def inner(*a, **k):
        return f(*a, **k)
    return inner


@total_ordering
class Money:
    def __init__(self, cents):
        self.cents = cents

    def __eq__(self, other):
        return self.cents == other.cents

    def __lt__(self, other):
        return self.cents < other.cents


@timed
def run():
    return Money(1) <= Money(2)


print(run(), "timed")
"#,
    ),
    (
        "operator_itemgetter_sort",
        r#"[('b', 1), ('a', 2)]"#,
        r#"from operator import itemgetter

rows = [("a", 2), ("b", 1)]
print(sorted(rows, key=itemgetter(1)))
"#,
    ),
    (
        "hashlib_digests",
        r#"2cf24dba5fb0a30e"#,
        r#"import hashlib

h = hashlib.sha256(b"hello").hexdigest()
m = hashlib.md5(b"x").hexdigest()
b = hashlib.blake2b(b"x", digest_size=8).hexdigest()
print(h[:16])
"#,
    ),
    (
        "random_seeded",
        r#"[1, 3, 5]"#,
        r#"import random

rng = random.Random(42)
xs = [1, 2, 3, 4, 5]
rng.shuffle(xs)
random.seed(7)
sample = random.sample(range(100), 3)
print(sorted(xs)[::2])
"#,
    ),
    (
        "copy_deepcopy",
        r#"[[1, 2], [3]] [[1, 2, 99], [3]]"#,
        r#"import copy

a = [[1, 2], [3]]
b = copy.deepcopy(a)
b[0].append(99)
c = copy.copy(a)
print(a, b)
"#,
    ),
    (
        "string_template_constants",
        r#"Hello, Ada! 26"#,
        r#"import string

t = string.Template("Hello, $name!")
print(t.substitute(name="Ada"), len(string.ascii_lowercase))
print(string.capwords("hello world"))
"#,
    ),
    (
        "json_stats_stdin_free",
        r#""median": 2.5"#,
        r#"import json
import statistics

data = [1, 2, 3, 4]
print(json.dumps({"mean": statistics.mean(data), "median": statistics.median(data)}))
"#,
    ),
    (
        "csv_read_file",
        r#"total=30"#,
        r#"import csv

with open("{DIR}/sales.csv", newline="") as fh:
    rows = list(csv.DictReader(fh))
print(f"total={sum(int(r['amount']) for r in rows)}")
"#,
    ),
    (
        "write_results_file",
        r#"wrote 2 lines"#,
        r#"import json

results = [{"k": 1}, {"k": 2}]
with open("{DIR}/out.jsonl", "w") as fh:
    for r in results:
        fh.write(json.dumps(r) + "\n")
with open("{DIR}/out.jsonl") as fh:
    print(f"wrote {len(fh.readlines())} lines")
"#,
    ),
    (
        "numpy_array_maths",
        r#"[ 5.  7.  9.] 3.5 [[19 22] [43 50]]"#,
        r#"import numpy as np

a = np.array([1.0, 2.0, 3.0])
b = np.arange(4, 7)
m = np.array([[1, 2], [3, 4]])
n = np.array([[5, 6], [7, 8]])
print(np.array2string(a + b, separator="  ").replace("[", "[ ", 1).replace("  ", "  "), np.mean([2, 3, 4, 5]), str(m @ n).replace("\n", ""))
"#,
    ),
    (
        "numpy_linalg_stats",
        r#"5.0 [2. 3.] 1.118"#,
        r#"import numpy as np
import numpy.linalg as la

print(la.norm([3, 4]), np.linalg.solve(np.array([[1, 0], [0, 1]]), np.array([2, 3])), round(float(np.std([1, 2, 3, 4])), 3))
"#,
    ),
    (
        "numpy_random_generator",
        r#"(3, 2) True"#,
        r#"import numpy as np

rng = np.random.default_rng(0)
x = rng.normal(size=(3, 2))
print(x.shape, bool(np.all(np.isfinite(x))))
"#,
    ),
    (
        "numpy_fft_where",
        r#"4 [0 0 3 4]"#,
        r#"import numpy as np

spectrum = np.fft.rfft(np.sin(np.linspace(0, 8 * np.pi, 64)))
peak = int(np.argmax(np.abs(spectrum)))
print(peak, np.where(np.array([1, 2, 3, 4]) > 2, [1, 2, 3, 4], 0))
"#,
    ),
    (
        "numpy_loadtxt_file",
        r#"[1. 2. 3.]"#,
        r#"import numpy as np

print(np.loadtxt("{DIR}/values.txt"))
"#,
    ),
    (
        "pandas_groupby_merge",
        r#"east 30 west 12"#,
        r#"import pandas as pd

sales = pd.DataFrame({"region": ["east", "east", "west"], "amount": [10, 20, 12]})
names = pd.DataFrame({"region": ["east", "west"], "manager": ["A", "B"]})
merged = sales.merge(names, on="region")
totals = merged.groupby("region")["amount"].sum()
print(" ".join(f"{k} {v}" for k, v in totals.items()))
"#,
    ),
    (
        "pandas_read_csv_agg",
        r#"{'amount': {'sum': 30.0, 'mean': 15.0}}"#,
        r#"import pandas as pd

df = pd.read_csv("{DIR}/sales.csv")
print(df.agg({"amount": ["sum", "mean"]}).to_dict())
"#,
    ),
    (
        "pandas_apply_functions",
        r#"[2, 3] [1.0, 2.0]"#,
        r#"import numpy as np
import pandas as pd


def double_plus(x):
    return x + 1


df = pd.DataFrame({"a": [1, 2], "b": [1.0, 2.0]})
print(list(df["a"].apply(double_plus)), list(df[["a", "b"]].apply(np.mean, axis=1)))
print(df.apply(lambda col: col.max()).to_dict())
"#,
    ),
    (
        "pandas_datetime_pivot",
        r#"2024-01 3"#,
        r#"import pandas as pd

df = pd.DataFrame({
    "day": pd.to_datetime(["2024-01-01", "2024-01-15", "2024-02-01"]),
    "kind": ["a", "b", "a"],
    "n": [1, 2, 3],
})
df["month"] = df["day"].dt.strftime("%Y-%m")
pivot = df.pivot_table(index="month", columns="kind", values="n", aggfunc="sum", fill_value=0)
print("2024-01", int(pivot.loc["2024-01"].sum()))
"#,
    ),
    (
        "pandas_errors_catch",
        r#"parse failed"#,
        r#"import pandas as pd
from pandas.errors import EmptyDataError

try:
    pd.read_csv("{DIR}/empty.csv")
except EmptyDataError:
    print("parse failed")
"#,
    ),
    (
        "pandas_to_csv_json",
        r#"a,b"#,
        r#"import pandas as pd

df = pd.DataFrame({"a": [1], "b": [2]})
df.to_csv("{DIR}/out.csv", index=False)
print(open("{DIR}/out.csv").read().splitlines()[0])
print(df.to_json(orient="records"))
"#,
    ),
    (
        "matplotlib_agg_plot",
        r#"saved True"#,
        r#"import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(4, 3))
ax.plot([1, 2, 3], [2, 4, 1], label="series")
ax.set_title("demo")
ax.legend()
fig.savefig("{DIR}/plot.png")
plt.close(fig)
with open("{DIR}/plot.png", "rb") as fh:
    print("saved", fh.read(8) == b"\x89PNG\r\n\x1a\n")
"#,
    ),
    (
        "matplotlib_bar_colormap_ticker",
        r#"bars 3"#,
        r#"import matplotlib.pyplot as plt
from matplotlib import ticker
import numpy as np

values = np.array([3, 5, 2])
colors = plt.cm.viridis(values / values.max())
fig, ax = plt.subplots()
bars = ax.bar(["a", "b", "c"], values, color=colors)
ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, pos: f"{v:.0f}%"))
plt.tight_layout()
plt.savefig("{DIR}/bars.png", dpi=50)
print("bars", len(bars))
"#,
    ),
    (
        "matplotlib_dates_hist",
        r#"hist 10"#,
        r#"import datetime as dt

import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import numpy as np

days = [dt.date(2024, 1, d) for d in range(1, 11)]
fig, (a1, a2) = plt.subplots(1, 2)
a1.plot(days, np.arange(10))
a1.xaxis.set_major_formatter(mdates.DateFormatter("%d"))
counts, edges, patches = a2.hist(np.random.default_rng(1).normal(size=100), bins=10)
fig.savefig("{DIR}/hist.png")
print("hist", len(counts))
"#,
    ),
    (
        "pandas_plot",
        r#"plotted"#,
        r#"import matplotlib.pyplot as plt
import pandas as pd

df = pd.DataFrame({"x": [1, 2, 3], "y": [3, 1, 2]})
ax = df.plot(x="x", y="y", kind="line")
ax.figure.savefig("{DIR}/pd.png")
plt.close("all")
print("plotted")
"#,
    ),
    (
        "input_payload_json",
        r#"count=0"#,
        r#"import json

print(f"count={len([])}")
"#,
    ),
    (
        "class_hierarchy",
        r#"Circle 3.14"#,
        r#"import math
from abc import ABC
from typing import ClassVar


class Shape:
    kind: ClassVar[str] = "shape"

    def area(self) -> float:
        raise NotImplementedError


class Circle(Shape):
    kind = "Circle"

    def __init__(self, r: float) -> None:
        self.r = r

    def area(self) -> float:
        return math.pi * self.r ** 2


c = Circle(1)
print(c.kind, round(c.area(), 2))
"#,
    ),
    (
        "enum_in_type_hints",
        r#"RED"#,
        r#"from enum import Enum
from typing import Optional


class Color(Enum):
    RED = 1


def name(c: Enum, fallback: Optional[Enum] = None) -> str:
    return c.name if isinstance(c, Enum) else "?"


print(name(Color.RED))
"#,
    ),
];

/// (allowed module, rule, hostile program) under data.toml.
const HOSTILE: &[(&str, &str, &str)] = &[
    (
        "json",
        "module_attr_not_allowed:json.codecs",
        r#"import json
json.codecs.sys.modules['os']"#,
    ),
    (
        "statistics",
        "module_attr_not_allowed:statistics.random",
        r#"import statistics
statistics.random._os.system('id')"#,
    ),
    (
        "math",
        "attr_not_allowed:__spec__",
        r#"import math
math.__spec__.loader"#,
    ),
    (
        "csv",
        "module_attr_not_allowed:enum.sys",
        r#"import csv
csv.re.enum.sys.modules"#,
    ),
    (
        "collections",
        "module_attr_not_allowed:collections._sys",
        r#"import collections
collections._sys.modules"#,
    ),
    (
        "collections.abc",
        "module_attr_not_allowed:collections.abc.sys",
        r#"import collections.abc
collections.abc.sys.modules"#,
    ),
    (
        "itertools",
        "attr_not_allowed:__self__",
        r#"import itertools
itertools.chain.__new__.__self__"#,
    ),
    (
        "functools",
        "module_attr_not_allowed:functools.singledispatch",
        r#"import functools
f = functools.singledispatch(print)"#,
    ),
    (
        "datetime",
        "module_attr_not_allowed:datetime.sys",
        r#"import datetime
datetime.sys.modules['os']"#,
    ),
    (
        "decimal",
        "attr_not_allowed:__globals__",
        r#"import decimal
decimal.Decimal.__init__.__globals__"#,
    ),
    (
        "fractions",
        "module_attr_not_allowed:fractions.sys",
        r#"from fractions import Fraction
import fractions
fractions.sys.modules"#,
    ),
    (
        "re",
        "module_attr_not_allowed:enum.bltns",
        r#"import re
re.enum.bltns.eval('1')"#,
    ),
    (
        "heapq",
        "attr_not_allowed:__builtins__",
        r#"import heapq
heapq.heappush.__self__.__builtins__"#,
    ),
    (
        "bisect",
        "import_not_allowed:bisect._bisect",
        r#"from bisect import _bisect"#,
    ),
    (
        "string",
        "module_attr_not_allowed:string._re",
        r#"import string
string._re.enum.sys"#,
    ),
    (
        "textwrap",
        "module_attr_not_allowed:enum.sys",
        r#"import textwrap
textwrap.re.enum.sys.modules"#,
    ),
    (
        "typing",
        "module_attr_not_allowed:typing.sys",
        r#"import typing
typing.sys.modules['os']"#,
    ),
    (
        "typing",
        "module_attr_not_allowed:typing.types",
        r#"import typing
typing.types.FunctionType"#,
    ),
    (
        "dataclasses",
        "module_attr_not_allowed:dataclasses.inspect",
        r#"import dataclasses
dataclasses.inspect.currentframe().f_back"#,
    ),
    (
        "dataclasses",
        "import_not_allowed:dataclasses.FunctionType",
        r#"from dataclasses import FunctionType"#,
    ),
    (
        "dataclasses",
        "module_attr_not_allowed:dataclasses.builtins",
        r#"import dataclasses
dataclasses.builtins.eval('1')"#,
    ),
    (
        "enum",
        "module_attr_not_allowed:enum.bltns",
        r#"import enum
enum.bltns.__import__('os')"#,
    ),
    (
        "enum",
        "module_attr_not_allowed:enum.EnumType",
        r#"import enum
E = enum.EnumType('E', (), {})"#,
    ),
    (
        "abc",
        "import_not_allowed:abc.ABCMeta",
        r#"from abc import ABCMeta
C = ABCMeta('C', (), {'__reduce__': print})"#,
    ),
    (
        "random",
        "module_attr_not_allowed:random._os",
        r#"import random
random._os.environ"#,
    ),
    (
        "copy",
        "module_attr_not_allowed:copy.dispatch_table",
        r#"import copy
copy.dispatch_table[int] = print"#,
    ),
    (
        "hashlib",
        "module_attr_not_allowed:hashlib._hashlib",
        r#"import hashlib
hashlib._hashlib.new"#,
    ),
    (
        "operator",
        "module_attr_not_allowed:operator.attrgetter",
        r#"import operator
operator.attrgetter('__class__')(1)"#,
    ),
    (
        "__future__",
        "import_not_allowed:__future__._Feature",
        r#"from __future__ import _Feature"#,
    ),
    (
        "numpy",
        "module_attr_not_allowed:numpy.ctypeslib",
        r#"import numpy as np
np.ctypeslib.ctypes.CDLL(None)"#,
    ),
    (
        "numpy",
        "module_attr_not_allowed:numpy.lib",
        r#"import numpy as np
np.lib.npyio.os.system('id')"#,
    ),
    (
        "numpy",
        "module_attr_not_allowed:numpy.load",
        r#"import numpy as np
np.load('/tmp/x.npy', allow_pickle=True)"#,
    ),
    (
        "numpy",
        "attr_not_allowed:ctypes",
        r#"import numpy as np
np.zeros(1).ctypes._ctypes.CDLL(None)"#,
    ),
    (
        "numpy",
        "attr_not_allowed:as_strided",
        r#"import numpy as np
from numpy import lib
v = lib.stride_tricks.as_strided(np.zeros(1), shape=(10**9,))"#,
    ),
    (
        "numpy",
        "module_attr_not_allowed:numpy.testing",
        r#"import numpy as np
np.testing.assert_equal(1, 1)"#,
    ),
    (
        "numpy",
        "attr_not_allowed:_builtins",
        r#"import numpy as np
x = np.zeros(1)
x._builtins.eval('1')"#,
    ),
    (
        "numpy.random",
        "module_attr_not_allowed:numpy.random._pickle",
        r#"import numpy as np
np.random._pickle.__bit_generator_ctor"#,
    ),
    (
        "numpy.random",
        "module_attr_not_allowed:numpy.random.mtrand",
        r#"import numpy.random as npr
npr.mtrand.RandomState"#,
    ),
    (
        "numpy.linalg",
        "module_attr_not_allowed:numpy.linalg.lapack_lite",
        r#"import numpy.linalg as la
la.lapack_lite.dgelsd"#,
    ),
    (
        "numpy.fft",
        "module_attr_not_allowed:numpy.fft.helper",
        r#"from numpy import fft
fft.helper.fftshift"#,
    ),
    (
        "pandas",
        "module_attr_not_allowed:pandas.read_pickle",
        r#"import pandas as pd
pd.read_pickle('/tmp/x.pkl')"#,
    ),
    (
        "pandas",
        "attr_not_allowed:eval",
        r#"import pandas as pd
pd.eval('1 + 1')"#,
    ),
    (
        "pandas",
        "attr_not_allowed:query",
        r#"import pandas as pd
df = pd.DataFrame({'a': [1]})
df.query('a > 0')"#,
    ),
    (
        "pandas",
        "attr_not_allowed:style",
        r#"import pandas as pd
df = pd.DataFrame({'a': [1]})
df.style.env.from_string('{{ 1 }}')"#,
    ),
    (
        "pandas",
        "module_attr_not_allowed:pandas.io",
        r#"import pandas as pd
pd.io.pickle.pickle.loads(b'')"#,
    ),
    (
        "pandas",
        "module_attr_not_allowed:pandas.core",
        r#"import pandas as pd
pd.core.computation.expressions.ne"#,
    ),
    (
        "pandas",
        "module_attr_not_allowed:pandas.read_clipboard",
        r#"import pandas as pd
pd.read_clipboard()"#,
    ),
    (
        "pandas",
        "dynamic_method_name",
        r#"import pandas as pd
df = pd.DataFrame({'a': [1]})
name = 'qu' + 'ery'
df.apply(name, expr='a > 0')"#,
    ),
    (
        "pandas.errors",
        "module_attr_not_allowed:pandas.errors.ctypes",
        r#"import pandas.errors as pe
pe.ctypes.CDLL(None)"#,
    ),
    (
        "matplotlib",
        "module_attr_not_allowed:matplotlib.os",
        r#"import matplotlib as mpl
mpl.os.system('id')"#,
    ),
    (
        "matplotlib",
        "module_attr_not_allowed:matplotlib.subprocess",
        r#"import matplotlib
matplotlib.subprocess.run(['id'])"#,
    ),
    (
        "matplotlib",
        "module_attr_not_allowed:matplotlib.cbook",
        r#"import matplotlib
matplotlib.cbook.get_sample_data"#,
    ),
    (
        "matplotlib.pyplot",
        "module_attr_not_allowed:matplotlib.pyplot.sys",
        r#"import matplotlib.pyplot as plt
plt.sys.modules['os']"#,
    ),
    (
        "matplotlib.pyplot",
        "module_attr_not_allowed:matplotlib.pyplot.importlib",
        r#"import matplotlib.pyplot as plt
plt.importlib.import_module('os')"#,
    ),
    (
        "matplotlib.pyplot",
        "module_reference_not_allowed:matplotlib",
        r#"import matplotlib.pyplot as plt
m = plt.matplotlib"#,
    ),
    (
        "matplotlib.cm",
        "module_attr_not_allowed:matplotlib.cm.ma",
        r#"import matplotlib.cm as cm
cm.ma.core"#,
    ),
    (
        "matplotlib.colors",
        "module_attr_not_allowed:matplotlib.colors.inspect",
        r#"from matplotlib import colors
colors.inspect.currentframe()"#,
    ),
    (
        "matplotlib.ticker",
        "module_attr_not_allowed:matplotlib.ticker.logging",
        r#"from matplotlib import ticker
ticker.logging.root"#,
    ),
    (
        "matplotlib.dates",
        "module_attr_not_allowed:matplotlib.dates.dateutil",
        r#"import matplotlib.dates as md
md.dateutil.parser"#,
    ),
];

/// Files the benign programs read, written into the job directory first.
fn write_inputs(dir: &std::path::Path) {
    std::fs::write(dir.join("sales.csv"), "item,amount\na,10\nb,20\n").expect("sales.csv");
    std::fs::write(dir.join("values.txt"), "1\n2\n3\n").expect("values.txt");
    std::fs::write(dir.join("empty.csv"), "").expect("empty.csv");
}

/// The third-party modules a program imports (its run is skipped loudly without them).
fn needs(code: &str) -> Vec<&'static str> {
    ["numpy", "pandas", "matplotlib"]
        .into_iter()
        .filter(|m| code.contains(m))
        .collect()
}

#[test]
fn ordinary_programs_pass_and_run_under_the_data_policy() {
    let policy = data_policy();
    let args: Vec<&str> = policy
        .interpreter
        .python_args
        .iter()
        .map(String::as_str)
        .collect();
    assert!(BENIGN.len() >= 40, "corpus too small: {}", BENIGN.len());
    let mut failures = Vec::new();
    for (name, expect, template) in BENIGN {
        let dir = tempfile::tempdir().expect("tempdir");
        write_inputs(dir.path());
        let code = template.replace("{DIR}", &dir.path().display().to_string());
        let d = check_action(&action(&code), &policy);
        if !d.is_allow() {
            failures.push(format!("{name}: denied: {:?}", d.violations));
            continue;
        }
        let Some(run) = common::python::run(&args, &code, dir.path(), &needs(&code)) else {
            continue;
        };
        if !run.ok || !run.stdout.contains(expect) {
            failures.push(format!(
                "{name}: expected {expect:?} in the output of a clean run, got\n{}{}",
                run.stdout, run.stderr
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_allowed_module_has_a_hostile_program_and_each_is_denied() {
    let policy = data_policy();
    let mut failures = Vec::new();
    for (module, rule, code) in HOSTILE {
        let d = check_action(&action(code), &policy);
        if d.is_allow() || !d.violations.iter().any(|v| v.rule == *rule) {
            failures.push(format!(
                "{module}: expected {rule} for {code:?}, got {:?}",
                d.violations
            ));
        }
    }
    for module in &policy.check.allowed_imports {
        if !HOSTILE.iter().any(|(m, _, _)| m == module) {
            failures.push(format!(
                "{module}: allowed, but no hostile program tries it"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The checker can only follow module chains through modules in its table: every module
/// the policy allows must be there.
#[test]
fn every_allowed_module_is_in_the_module_table() {
    for module in &data_policy().check.allowed_imports {
        assert!(
            stdlib::Modules::for_version(data_policy().python_version())
                .expect("tables for this host's python")
                .module_known(module),
            "{module} is allowed but not in MODULE_ATTRIBUTE_GRAPH: add it to \
             scripts/gen-stdlib-graph.py and regenerate"
        );
    }
}

/// The policy lists, for its reader, every name the checker denies on objects once a
/// package is allowed (the checker enforces them whatever the policy lists).
#[test]
fn data_policy_lists_every_package_denial() {
    let policy = data_policy();
    let denied = &policy.check.denied_attributes;
    for package in ["numpy", "pandas", "matplotlib"] {
        let reach = stdlib::package_reach(package).expect("generated");
        let extra = stdlib::PACKAGE_DENIED_ATTRIBUTES
            .iter()
            .find(|(p, _)| *p == package)
            .map_or(&[][..], |(_, names)| *names);
        for name in reach.iter().chain(extra) {
            assert!(
                denied.iter().any(|d| d == name),
                "data.toml does not list {name} ({package})"
            );
        }
    }
}

/// A denial tells the agent what to do instead.
#[test]
fn denials_say_how_to_fix_the_code() {
    let policy = data_policy();
    let detail = |code: &str, rule: &str| {
        check_action(&action(code), &policy)
            .violations
            .into_iter()
            .find(|v| v.rule == rule)
            .unwrap_or_else(|| panic!("{rule} for {code:?}"))
            .detail
    };
    let d = detail("import os", "import_not_allowed:os");
    assert!(d.contains("allowed imports: json, statistics"), "{d}");
    let d = detail(
        "import numpy as np\nnp.load('x.npy')",
        "module_attr_not_allowed:numpy.load",
    );
    assert!(d.contains("np.loadtxt"), "{d}");
    let d = detail(
        "import numpy as np\nnp.lib.x",
        "module_attr_not_allowed:numpy.lib",
    );
    assert!(
        d.contains("numpy.lib") && d.contains("allowed imports:"),
        "{d}"
    );
    let d = detail(
        "import json\njson.codecs",
        "module_attr_not_allowed:json.codecs",
    );
    assert!(d.contains("json allows: dump, dumps"), "{d}");
    let d = detail("x = 1\nx.format", "attr_not_allowed:format");
    assert!(d.contains("f-string"), "{d}");
    let default = Policy::default();
    let v = check_action(&action("open('x')"), &default).violations;
    assert!(v[0].detail.contains("stdin"), "{:?}", v[0]);
    assert!(check_action(&action("print(open('/tmp/x').read())"), &policy).is_allow());
}

/// The module tables (crates/agentjail-check/src/tables.rs) hold on this host: every module edge the
/// interpreters here expose (the pyenv builds 3.10 to 3.13 and /usr/bin/python3.1x) is in
/// the table of their version, and, where this host has exactly the package versions the
/// package table was generated for, every edge and reach name of numpy, pandas and
/// matplotlib is in it (scripts/gen-stdlib-graph.py --check). Only what the tables promise
/// is compared: a host with fewer optional packages reaches fewer modules, which is no error.
#[test]
fn module_tables_hold_on_this_host() {
    if !std::path::Path::new(common::python::PYTHON).exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{} is missing",
            common::python::PYTHON
        );
        eprintln!("SKIPPED: {} is missing", common::python::PYTHON);
        return;
    }
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/gen-stdlib-graph.py");
    let out = std::process::Command::new(common::python::PYTHON)
        .arg(&script)
        .arg("--check")
        .output()
        .expect("run the generator");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    eprintln!("{stdout}");
    assert!(stdout.contains("checked the 3.11 table"), "{stdout}");
    if stdout.contains("SKIPPED packages") {
        // Not covered here: the loader must refuse the policy that allows them.
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/data.toml");
        let e = load_file(&path).expect_err("data.toml must be refused on this host");
        assert!(e.hint.contains("scripts/gen-stdlib-graph.py"), "{e}");
    } else {
        assert!(stdout.contains("checked the package table"), "{stdout}");
    }
}

/// A policy allowing a package is loaded only where the package tables hold: the version
/// of the interpreter and of each package the table was generated for (read from the
/// host's distribution metadata, never by running anything).
#[test]
fn data_policy_is_refused_where_the_tables_do_not_hold() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/data.toml");
    let text = std::fs::read_to_string(&path).expect("read data.toml");
    // The tables' interpreter named explicitly: the same verdict as detection.
    match load_file(&path) {
        Ok(loaded) => {
            let found = loaded.policy.interpreter.found.expect("detected");
            assert_eq!(found.version, stdlib::PACKAGE_TABLE.python);
        }
        Err(e) => assert!(e.hint.contains("scripts/gen-stdlib-graph.py"), "{e}"),
    }
    // Another interpreter version (a pyenv build with no numpy, when this host has one).
    let Some(py) = common::python::opt_python("3.12") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "no /opt/agentjail-py/3.12: run scripts/setup-pythons.sh"
        );
        eprintln!("SKIPPED: no /opt/agentjail-py/3.12 (scripts/setup-pythons.sh)");
        return;
    };
    let prefix = py.parent().and_then(|b| b.parent()).expect("prefix");
    let other = text
        .replace(
            "python = \"/usr/bin/python3\"",
            &format!("python = {:?}", py.display().to_string()),
        )
        .replace(
            "read_only = [",
            &format!("read_only = [{:?}, ", prefix.display().to_string()),
        );
    let e = agentjail_engine::policy::load_str(&other, "data-3.12").expect_err("refused");
    assert_eq!(e.key.as_deref(), Some("check.allowed_imports"), "{e}");
    assert!(e.message.contains("numpy"), "{e}");
    assert!(e.hint.contains("scripts/gen-stdlib-graph.py"), "{e}");
    // The error points at the package in the list.
    let (line, _) = e.position.expect("a position");
    let at = other.lines().nth(line - 1).unwrap_or("");
    assert!(at.contains("\"numpy\""), "line {line}: {at}");
}
