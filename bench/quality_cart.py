"""Planted-fact session 1 of bench/compaction_quality.py: a rounding bug in a shop's
cart totals (Decimal, ROUND_HALF_UP), with the user's constraints given along the way."""

from bench.quality_scoring import LEAVE, NO_NEW_DEPS, Fact
from bench.quality_sessions import Planted, Script, diff_text, numbered, shell

TOTAL_PY = '''\
"""Cart totals: line items, the bulk discount and VAT."""

from dataclasses import dataclass, field

from cart.config import pricing
from cart.items import LineItem


@dataclass
class Total:
    """The totals of one cart. Public API: Total(items).compute() -> Totals."""

    items: list[LineItem] = field(default_factory=list)

    def compute(self):
        cfg = pricing()
        subtotal = 0.0
        for item in self.items:
            subtotal += float(item.unit_price) * item.quantity
        quantity = sum(item.quantity for item in self.items)
        vat = subtotal * float(cfg["vat_rate"])
        if quantity >= cfg["bulk_min_qty"]:
            subtotal = subtotal * (1 - float(cfg["bulk_discount"]))
        gross = round(subtotal + vat, 2)
        return Totals(net=round(subtotal, 2), vat=round(vat, 2), gross=gross)


@dataclass(frozen=True)
class Totals:
    net: float
    vat: float
    gross: float
'''

TEST_TOTAL_PY = """\
from decimal import Decimal

import pytest

from cart.items import LineItem
from cart.total import Total


def item(price, quantity):
    return LineItem(sku="SKU-" + str(price), unit_price=Decimal(price), quantity=quantity)


def test_empty_cart_is_zero():
    totals = Total([]).compute()
    assert totals.gross == 0


def test_single_item_gets_vat():
    totals = Total([item("10.00", 1)]).compute()
    assert totals.vat == Decimal("2.10")
    assert totals.gross == Decimal("12.10")


def test_total_rounds_half_up_on_bulk_discount():
    # 48 x 1.85 = 88.80; less 7.5 % = 82.14; VAT 21 % = 17.2494 -> 17.25 (half up)
    # the old code gave 104.36 after rounding the float sums twice
    totals = Total([item("1.85", 48), item("3.05", 1)]).compute()
    assert totals.gross == Decimal("104.37")


@pytest.mark.parametrize("quantity", [1, 47, 48, 200])
def test_net_is_never_negative(quantity):
    assert Total([item("0.01", quantity)]).compute().net >= 0
"""

PRICING = """\
# Pricing for the EU shop. Owned by finance: change only with a ticket.
[pricing]
vat_rate = "0.21"
bulk_discount = "0.075"   # 7.5 %, on the net before VAT
bulk_min_qty = 48
currency = "EUR"
"""

MONEY_PY = '''\
"""Money arithmetic for the cart: Decimal throughout, rounded once to cents."""

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def quantize_money(value: Decimal) -> Decimal:
    """`value` rounded to cents, half up, as the invoices round."""
    return value.quantize(CENT, rounding=ROUND_HALF_UP)
'''

ITEMS_PY = '''\
"""Line items as the cart holds them."""

from dataclasses import dataclass
from decimal import Decimal
from typing import Union

Price = Union[Decimal, float, str]


@dataclass(frozen=True)
class LineItem:
    sku: str
    unit_price: Price
    quantity: int

    def __post_init__(self) -> None:
        if self.quantity < 0:
            raise ValueError(f"{self.sku}: quantity must not be negative")
        if not self.sku:
            raise ValueError("a line item needs a SKU")


def merge(items: "list[LineItem]") -> "list[LineItem]":
    """Items with the same SKU and price merged into one line, in first-seen order."""
    merged: "dict[tuple[str, str], LineItem]" = {}
    for item in items:
        key = (item.sku, str(item.unit_price))
        if key in merged:
            old = merged[key]
            merged[key] = LineItem(old.sku, old.unit_price, old.quantity + item.quantity)
        else:
            merged[key] = item
    return list(merged.values())
'''

LEGACY_PY = '''\
"""The pre-2.0 totals, still used by the B2B export. Frozen: see docs/legacy.md."""

import warnings


def legacy_line(price, qty):
    warnings.warn("legacy_line is deprecated", DeprecationWarning, stacklevel=2)
    return float(price) * qty


def legacy_gross(lines, vat=True):
    net = 0
    for price, qty in lines:
        net += legacy_line(price, qty)
    if not vat:
        return round(net, 2)
    return round(float(net) * 1.21, 2)


def legacy_export_row(order):
    lines = [(line["price"], line["qty"]) for line in order["lines"]]
    return {
        "order": order["id"],
        "gross": legacy_gross(lines, vat=order.get("vat", True)),
        "lines": len(lines),
    }
'''

DIFF = """\
diff --git a/cart/money.py b/cart/money.py
new file mode 100644
index 0000000..5c1f0e2
--- /dev/null
+++ b/cart/money.py
@@ -0,0 +1,19 @@
+\"\"\"Money arithmetic for the cart: Decimal throughout, rounded once to cents.\"\"\"
+
+from decimal import ROUND_HALF_UP, Decimal
+
+CENT = Decimal("0.01")
+
+
+def to_money(value) -> Decimal:
+    \"\"\"A price for the cart, from any caller.\"\"\"
+    if isinstance(value, float):  # read it as written
+        return Decimal(str(value))  # not Decimal(value)
+    return Decimal(value)
+
+
+def quantize_money(value: Decimal) -> Decimal:
+    \"\"\"`value` rounded to cents, half up, as the invoices round.\"\"\"
+    return value.quantize(CENT, rounding=ROUND_HALF_UP)
diff --git a/cart/total.py b/cart/total.py
index 3b8d2a1..9e40c7d 100644
--- a/cart/total.py
+++ b/cart/total.py
@@ -1,8 +1,10 @@
 \"\"\"Cart totals: line items, the bulk discount and VAT.\"\"\"

 from dataclasses import dataclass, field
+from decimal import Decimal

 from cart.config import pricing
 from cart.items import LineItem
+from cart.money import quantize_money, to_money


@@ -14,24 +16,20 @@ class Total:
     def compute(self):
         cfg = pricing()
-        subtotal = 0.0
-        for item in self.items:
-            subtotal += float(item.unit_price) * item.quantity
-        quantity = sum(item.quantity for item in self.items)
-        vat = subtotal * float(cfg["vat_rate"])
-        if quantity >= cfg["bulk_min_qty"]:
-            subtotal = subtotal * (1 - float(cfg["bulk_discount"]))
-        gross = round(subtotal + vat, 2)
-        return Totals(net=round(subtotal, 2), vat=round(vat, 2), gross=gross)
+        net = sum((to_money(i.unit_price) * i.quantity for i in self.items), Decimal(0))
+        if sum(i.quantity for i in self.items) >= cfg["bulk_min_qty"]:
+            net *= 1 - Decimal(cfg["bulk_discount"])
+        net = quantize_money(net)
+        vat = quantize_money(net * Decimal(cfg["vat_rate"]))
+        return Totals(net=net, vat=vat, gross=net + vat)


 @dataclass(frozen=True)
 class Totals:
-    net: float
-    vat: float
-    gross: float
+    net: Decimal
+    vat: Decimal
+    gross: Decimal
"""

LONG_LINE = (
    '    """A price for the cart, whatever the caller passed: the old importer still sends '
    'its own type."""'
)
RUFF_E501 = f"""\
cart/money.py:9:89: E501 Line too long (98 > 88)
   |
 8 | def to_money(value) -> Decimal:
 9 | {LONG_LINE}
   | {" " * 88}^^^^^^^^^^ E501
   |
Found 1 error.
"""


def build() -> Planted:
    s = Script("/home/dev/shop")
    s.user(
        "Customers on ticket SHOP-1423 report cart totals that are a cent off for bulk orders "
        "(we charged 104.36, the invoice says 104.37). Please fix it. Constraints up front: "
        "never change the public API of cart.Total (other teams import it: Total(items)."
        "compute() must keep working exactly as now), no new dependencies, and keep Python "
        "3.9 working, that is what production runs."
    )
    s.tool("run_shell", {"command": "git status --short && git log --oneline -3", "timeout": None},
           shell(0, "a41c9e2 cart: show savings line\n77d0b13 importer: read prices as text\n"
                    "0f3e5aa ci: cache pip"))  # fmt: skip
    s.tools([
        ("read_file", {"path": "cart/total.py", "offset": None, "limit": None},
         numbered(TOTAL_PY)),
        ("read_file", {"path": "cart/items.py", "offset": None, "limit": None},
         numbered(ITEMS_PY)),
    ])  # fmt: skip
    s.tool("read_file", {"path": "tests/test_total.py", "offset": None, "limit": None},
           numbered(TEST_TOTAL_PY))  # fmt: skip
    s.tool("run_shell", {"command": "python -m pytest tests/test_total.py -q", "timeout": None},
           shell(4, """\
ImportError while loading conftest '/home/dev/shop/tests/conftest.py'.
tests/conftest.py:3: in <module>
    import tomllib
E   ModuleNotFoundError: No module named 'tomllib'"""))  # fmt: skip
    s.say(
        "The test suite does not even start: tests/conftest.py imports `tomllib`, which only "
        "exists from Python 3.11 on. In cart/total.py I can already see the cause of the "
        "cent: every amount is a float, the VAT is computed on the net before the discount, "
        "and the sums are rounded twice. I'd fix the conftest import first so the tests run."
    )

    s.user(
        "Right, tomllib is 3.11+. tomli is already pinned in requirements.txt for exactly "
        "this, use that. Don't add anything to requirements."
    )
    s.tool("read_file", {"path": "requirements.txt", "offset": None, "limit": None},
           numbered("attrs==23.2.0\ntomli==2.0.1\nrequests==2.31.0\n"))  # fmt: skip
    s.tool("edit_file", {"path": "tests/conftest.py", "old": "import tomllib\n",
                         "new": "import tomli as tomllib\n"},
           "edited tests/conftest.py: replaced 1 line at line 3 with 1 line")  # fmt: skip
    s.tool(
        "run_shell",
        {"command": "python -m pytest tests/test_total.py::"
                    "test_total_rounds_half_up_on_bulk_discount -q", "timeout": None},
        shell(1, """\
F                                                                        [100%]
=================================== FAILURES ===================================
__________________ test_total_rounds_half_up_on_bulk_discount __________________

    def test_total_rounds_half_up_on_bulk_discount():
        totals = Total([item("1.85", 48), item("3.05", 1)]).compute()
>       assert totals.gross == Decimal("104.37")
E       AssertionError: assert 104.36 == Decimal('104.37')
E        +  where 104.36 = Totals(net=85.36, vat=19.0, gross=104.36).gross

tests/test_total.py:27: AssertionError
=========================== short test summary info ============================
FAILED tests/test_total.py::test_total_rounds_half_up_on_bulk_discount
1 failed in 0.08s"""),
    )  # fmt: skip
    s.say(
        "The conftest now imports tomli under the tomllib name, and the suite runs. The one "
        "failing test is tests/test_total.py::test_total_rounds_half_up_on_bulk_discount: "
        "the float code gives 104.36 where the invoice gives 104.37."
    )

    s.user(
        "Money must be Decimal, never float, anywhere in cart/. Rounding is ROUND_HALF_UP to "
        "cents: finance confirmed that is what the invoices do. Read the pricing config before "
        "you decide anything, the rates live there."
    )
    s.tool("read_file", {"path": "config/pricing.toml", "offset": None, "limit": None},
           numbered(PRICING))  # fmt: skip
    s.tools([
        ("search_files", {"pattern": "float\\(", "path": "cart"},
         "cart/total.py:18:            subtotal += float(item.unit_price) * item.quantity\n"
         "cart/total.py:20:        vat = subtotal * float(cfg[\"vat_rate\"])\n"
         "cart/total.py:22:            subtotal = subtotal * (1 - float(cfg[\"bulk_discount\"]))\n"
         "cart/legacy_total.py:8:    return float(price) * qty\n"
         "cart/legacy_total.py:18:    return round(float(net) * 1.21, 2)"),
        ("read_file", {"path": "cart/legacy_total.py", "offset": None, "limit": None},
         numbered(LEGACY_PY)),
    ])  # fmt: skip
    s.say(
        'The config gives vat_rate "0.21", bulk_discount "0.075" (7.5 %, on the net before '
        "VAT) and bulk_min_qty 48, all as strings where it matters, so Decimal can read them "
        "exactly. Two ways to go: round inside Total.compute() in place, or put one rounding "
        "helper in a module of its own that Total (and later the invoices) call. The helper "
        "is easier to test. There is also the question of order: today the VAT is computed "
        "before the discount, the invoices compute it after."
    )

    s.user(
        "Go with the helper: call it quantize_money() and put it in a new cart/money.py. "
        "Apply the bulk discount before tax, like the invoices do. Make a branch first."
    )
    s.tool("run_shell", {"command": "git switch -c fix/SHOP-1423-rounding", "timeout": None},
           shell(0, "Switched to a new branch 'fix/SHOP-1423-rounding'"))  # fmt: skip
    s.plan(
        ("Add quantize_money() in cart/money.py", "in_progress"),
        ("Compute cart totals in Decimal with the discount before VAT", "pending"),
        ("Regression tests in tests/test_total.py", "pending"),
        ("Run the whole suite and the linters", "pending"),
        ("Add a CHANGELOG.md entry under Unreleased", "pending"),
    )
    s.tool("write_file", {"path": "cart/money.py", "content": MONEY_PY},
           "created cart/money.py (268 bytes, 10 lines)")  # fmt: skip
    s.say("cart/money.py has quantize_money(); next, Total.compute() goes through it.")

    s.user(
        "One more thing: some callers still pass float prices from the old importer. Keep "
        "accepting them."
    )
    s.tool("edit_file", {"path": "cart/money.py", "old": "def quantize_money(value: Decimal)",
                         "new": "def to_money(value) -> Decimal:\n    \"\"\"A price for the cart, "
                                "whatever the caller passed: the old importer still sends its "
                                "own type.\"\"\"\n    if isinstance(value, float):  # read it "
                                "as written\n        return Decimal(str(value))  # not Decimal("
                                "value)\n    return "
                                "Decimal(value)\n\n\ndef quantize_money(value: Decimal)"},
           "edited cart/money.py: replaced 1 line at line 8 with 9 lines",
           say="Floats are converted with Decimal(str(x)), never Decimal(x): str() gives the "
               "digits as written, Decimal(x) would keep the binary error.")  # fmt: skip
    s.tool("edit_file", {"path": "cart/total.py", "old": TOTAL_PY[TOTAL_PY.index("    def compute"):
                                                              TOTAL_PY.index("@dataclass(frozen")],
                         "new": "    def compute(self):\n        cfg = pricing()\n        net = "
                                "sum((to_money(i.unit_price) * i.quantity for i in self.items), "
                                "Decimal(0))\n        if sum(i.quantity for i in self.items) >= "
                                "cfg[\"bulk_min_qty\"]:\n            net *= 1 - Decimal(cfg["
                                "\"bulk_discount\"])\n        net = quantize_money(net)\n        "
                                "vat = quantize_money(net * Decimal(cfg[\"vat_rate\"]))\n        "
                                "return Totals(net=net, vat=vat, gross=net + vat)\n\n\n"},
           "edited cart/total.py: replaced 12 lines at line 15 with 10 lines")  # fmt: skip
    s.tool(
        "run_shell",
        {"command": "python -m pytest tests/test_total.py::"
                    "test_total_rounds_half_up_on_bulk_discount -q", "timeout": None},
        shell(0, ".                                                                        "
                 "[100%]\n1 passed in 0.05s"),
    )  # fmt: skip
    s.say(
        "The failing test passes now: the net is discounted first, rounded once with "
        "quantize_money(), and the VAT is computed on the rounded net. Total's signature and "
        "compute() are unchanged; Totals now holds Decimals."
    )

    s.user(
        "Don't touch cart/legacy_total.py, it is frozen until the 2.0 release even though it "
        "uses floats. Add a regression test with a float price."
    )
    s.tool("edit_file", {"path": "tests/test_total.py", "old": "@pytest.mark.parametrize",
                         "new": "def test_float_prices_are_read_as_written():\n    line = "
                                "LineItem(sku=\"OLD\", unit_price=1.85, quantity=48)\n    "
                                "assert Total([line]).compute().net == Decimal(\"82.14\")\n\n\n"
                                "@pytest.mark.parametrize"},
           "edited tests/test_total.py: replaced 1 line at line 31 with 6 lines")  # fmt: skip
    s.tool("run_shell", {"command": "python -m pytest tests -q", "timeout": None},
           shell(0, "........................................................     [100%]\n"
                    "56 passed in 1.31s"))  # fmt: skip
    s.say(
        "All 56 tests pass, the new float-price test included; cart/legacy_total.py is untouched."
    )

    s.user("Run the linters too.")
    s.tool("run_shell", {"command": "ruff check cart tests", "timeout": None}, shell(1, RUFF_E501))
    s.say("ruff finds one line too long in cart/money.py (E501, line 9, a docstring).")

    s.user(
        "Fix it. And when you commit: one squashed commit, the message starting with "
        "fix(cart):, and mention the ticket in the body."
    )
    s.tool("edit_file", {"path": "cart/money.py",
                         "old": "whatever the caller passed: the old importer still sends its "
                                "own type.",
                         "new": "from any caller."},
           "edited cart/money.py: replaced 1 line at line 9 with 1 line")  # fmt: skip
    s.tools([
        ("run_shell", {"command": "ruff check cart tests && python -m pytest tests -q",
                       "timeout": None},
         shell(0, "All checks passed!\n........................................................"
                  "     [100%]\n56 passed in 1.28s")),
        ("run_shell", {"command": "git diff -- cart", "timeout": None}, shell(0, diff_text(DIFF))),
    ])  # fmt: skip
    s.plan(
        ("Add quantize_money() in cart/money.py", "completed"),
        ("Compute cart totals in Decimal with the discount before VAT", "completed"),
        ("Regression tests in tests/test_total.py", "completed"),
        ("Run the whole suite and the linters", "completed"),
        ("Add a CHANGELOG.md entry under Unreleased", "pending"),
        ("Squash into one commit: fix(cart): round totals half up", "pending"),
    )
    s.say("Lint and tests are clean. Left: the CHANGELOG entry and the squashed commit.")

    s.user("Wait a moment, I'm checking something in CI first.")
    s.say("Sure, I'll wait.")
    facts = (
        Fact("edited cart/total.py", "file", ("cart/total.py",)),
        Fact("created cart/money.py", "file", ("cart/money.py",)),
        Fact("edited tests/test_total.py", "file", ("tests/test_total.py",)),
        Fact("failing test", "test", ("test_total_rounds_half_up_on_bulk_discount",)),
        Fact("cart.Total's public API unchanged", "constraint", ("cart.Total", "API")),
        Fact("no new dependencies", "constraint", (NO_NEW_DEPS,)),
        Fact("keep Python 3.9", "constraint", ("3.9",)),
        Fact("Decimal, not float", "constraint", ("Decimal", "float")),
        Fact("ROUND_HALF_UP", "constraint", ("ROUND_HALF_UP",)),
        Fact("ticket SHOP-1423", "constraint", ("SHOP-1423",)),
        Fact(
            "one squashed commit, fix(cart):",
            "constraint",
            ("fix(cart)", ("squash", "one commit", "single commit")),
        ),
        Fact("helper quantize_money()", "decision", ("quantize_money",)),
        Fact(
            "discount before tax",
            "decision",
            ("discount", ("before tax", "before VAT", "before the VAT", "before the tax")),
        ),
        Fact("floats via Decimal(str(x))", "decision", ("Decimal(str(",)),
        Fact("vat_rate 0.21", "value", ("0.21",)),
        Fact("bulk_discount 0.075", "value", ("0.075",)),
        Fact("expected gross 104.37", "value", ("104.37",)),
        Fact("earlier failure: tomllib", "failure", ("tomllib",)),
        Fact("last failure: ruff E501", "failure", ("E501",)),
        Fact("TODO: CHANGELOG entry", "todo", ("CHANGELOG",)),
        Fact("branch fix/SHOP-1423-rounding", "value", ("fix/SHOP-1423-rounding",)),
        Fact("leave cart/legacy_total.py alone", "constraint", ("legacy_total.py", LEAVE)),
    )
    control = (
        "Ticket SHOP-1423: bulk cart totals were a cent off (104.36 instead of 104.37). "
        "User's constraints: never change the public API of cart.Total; no new dependencies "
        "(tomli is already pinned); keep Python 3.9; money is Decimal, never float; rounding "
        "ROUND_HALF_UP to cents; don't touch cart/legacy_total.py (frozen until 2.0); one "
        "squashed commit with a message starting fix(cart): and the ticket in the body.\n"
        "Earlier failure: tests/conftest.py imported tomllib (3.11+), fixed with "
        "`import tomli as tomllib`.\n"
        "Failing test was tests/test_total.py::test_total_rounds_half_up_on_bulk_discount "
        "(expected gross 104.37); it passes now.\n"
        "Decisions: a helper quantize_money() in the new cart/money.py; the bulk discount is "
        "applied before tax; float prices from the old importer are read with Decimal(str(x)).\n"
        "config/pricing.toml: vat_rate 0.21, bulk_discount 0.075, bulk_min_qty 48.\n"
        "Edited cart/total.py, cart/money.py, tests/test_total.py, tests/conftest.py on branch "
        "fix/SHOP-1423-rounding. Last failure: ruff E501 in cart/money.py, fixed; all 56 tests "
        "pass.\nTODO: a CHANGELOG.md entry under Unreleased, then the squashed commit."
    )
    return Planted("cart", s.messages, facts, control, "cart totals a cent off")
