import sys

text = sys.stdin.readline()
tokens = []
i = 0
while i < len(text):
    ch = text[i]
    if ch.isdigit():
        j = i
        while j < len(text) and text[j].isdigit():
            j += 1
        tokens.append(int(text[i:j]))
        i = j
    elif ch in "+-*/()":
        tokens.append(ch)
        i += 1
    else:
        i += 1
pos = 0


def div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def expr():
    global pos
    value = term()
    while pos < len(tokens) and tokens[pos] in ("+", "-"):
        op = tokens[pos]
        pos += 1
        rhs = term()
        value = value + rhs if op == "+" else value - rhs
    return value


def term():
    global pos
    value = factor()
    while pos < len(tokens) and tokens[pos] in ("*", "/"):
        op = tokens[pos]
        pos += 1
        rhs = factor()
        value = value * rhs if op == "*" else div(value, rhs)
    return value


def factor():
    global pos
    tok = tokens[pos]
    pos += 1
    if tok == "(":
        value = expr()
        pos += 1
        return value
    return tok


print(expr())
