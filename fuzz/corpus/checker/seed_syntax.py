import json
x = f"{json.dumps({1: [2]}):>{3}}"
match x:
    case [a, *b] | {"k": a}:
        pass
