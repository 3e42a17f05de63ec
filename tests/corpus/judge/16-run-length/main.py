import sys

s = sys.stdin.readline().strip()
parts = []
i = 0
while i < len(s):
    j = i
    while j < len(s) and s[j] == s[i]:
        j += 1
    parts.append(s[i] + str(j - i))
    i = j
print("".join(parts))
