"""The client over `agentjail serve --http`: AGENTJAIL_URL (and AGENTJAIL_TOKEN, one of the
server's --token-file tokens) name a running server; without them this example starts one
of its own on a unix socket, with a token file, for the demonstration."""
import os
import secrets
import subprocess
import sys
import tempfile

import agentjail

url, token = os.environ.get("AGENTJAIL_URL"), os.environ.get("AGENTJAIL_TOKEN")
server = None
if url is None:
    d = tempfile.mkdtemp()
    token = secrets.token_hex(16)
    with open(os.open(os.path.join(d, "tokens"), os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write(f"example {token}\n")
    server = subprocess.Popen([agentjail.find_binary(), "serve", "--http", f"unix:{d}/http.sock",
                               "--token-file", f"{d}/tokens", "--pool", "1"], stderr=subprocess.PIPE, text=True)
    for line in server.stderr:  # it says where it listens once it does
        if line.startswith("agentjail: serving HTTP on "):
            url = line.split(" on ", 1)[1].strip()
            break
    else:
        sys.exit(f"agentjail serve --http did not start (exit {server.wait()})")
try:
    with agentjail.Client(url=url, token=token) as client:
        r = client.run("print(int(input()) ** 2)", stdin="12\n", output_mode="text")
        print(r.ok, r.stdout.strip(), r.raw["caller"]["token"])  # True 144 example
        with client.session() as s:
            s.exec("seen = [1, 2]")
            print(s.exec("sum(seen)").value)  # 3
finally:
    if server is not None:
        server.terminate()
        server.wait()
