"""The seed's incident job through the client: one JSON object in, one validated out.

    python examples/python/incident.py [examples/incident/action.json]
"""
import json
import pathlib
import sys

import agentjail

here = pathlib.Path(__file__).resolve().parents[1]
action = json.loads(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else here / "incident" / "action.json").read_text())

with agentjail.Client() as client:
    record = client.run(action["code"], input=action["input_payload"], output_mode="json", timeout=2)
    try:
        record.raise_for_status()
    except agentjail.PolicyBlocked as e:
        sys.exit(f"the check refused it: {e.record.stop.detail}")
    except agentjail.StoppedError as e:
        sys.exit(f"stopped: {e}")
    print(json.dumps(record.output, indent=2))
    print(f"severity {record.output['incident_severity']}, {record.wall_ms:.1f} ms in the jail", file=sys.stderr)
