import sys

VALUES = [1000, 900, 500, 400, 100, 90, 50, 40, 10, 9, 5, 4, 1]
SYMBOLS = ["M", "CM", "D", "CD", "C", "XC", "L", "XL", "X", "IX", "V", "IV", "I"]
LETTER = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}

data = sys.stdin.read().split()
q = int(data[0])
out = []
for tok in data[1:1 + q]:
    if tok.isdigit():
        n = int(tok)
        parts = []
        for v, s in zip(VALUES, SYMBOLS):
            while n >= v:
                parts.append(s)
                n -= v
        out.append("".join(parts))
    else:
        total = 0
        for i, ch in enumerate(tok):
            v = LETTER[ch]
            if i + 1 < len(tok) and LETTER[tok[i + 1]] > v:
                total -= v
            else:
                total += v
        out.append(str(total))
print("\n".join(out))
