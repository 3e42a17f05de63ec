import sys

PAIR = {")": "(", "]": "[", "}": "{"}


def balanced(s):
    stack = []
    for ch in s:
        if ch in "([{":
            stack.append(ch)
        elif not stack or stack.pop() != PAIR[ch]:
            return False
    return not stack


data = sys.stdin.read().split()
t = int(data[0])
print("\n".join("YES" if balanced(s) else "NO" for s in data[1 : 1 + t]))
