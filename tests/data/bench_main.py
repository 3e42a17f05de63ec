import json
import statistics

payload = json.loads(input())
rows = payload["transactions"]
total = len(rows)
failed = sum(1 for row in rows if row["status"] != "paid")
chargeback_alerts = sum(1 for row in rows if row.get("chargeback") is True)
failed_rate = (failed / total) if total else 0.0

latencies = [float(row["latency_ms"]) for row in rows]
avg_latency = statistics.fmean(latencies) if latencies else 0.0
if latencies:
    sorted_latencies = sorted(latencies)
    p95_idx = int(round((len(sorted_latencies) - 1) * 0.95))
    p95_latency = sorted_latencies[p95_idx]
else:
    p95_latency = 0.0

severity = "P1" if failed_rate >= 0.03 else "P2"
eta_minutes = 45 if severity == "P1" else 20


buckets = {}
for row in rows:
    key = row["status"]
    buckets[key] = buckets.get(key, 0) + 1
spread = statistics.pstdev(latencies) if len(latencies) > 1 else 0.0
median_latency = statistics.median(latencies) if latencies else 0.0
slow = [r["transaction_id"] for r in rows if float(r["latency_ms"]) > avg_latency + spread]
summary = {"buckets": buckets, "spread": round(spread, 3), "median": median_latency}
label = "{}:{}".format(payload["region"], len(slow))

check_0 = sum(1 for row in rows if row.get("status") == "s0")
check_1 = sum(1 for row in rows if row.get("status") == "s1")
check_2 = sum(1 for row in rows if row.get("status") == "s2")
check_3 = sum(1 for row in rows if row.get("status") == "s3")
check_4 = sum(1 for row in rows if row.get("status") == "s4")
check_5 = sum(1 for row in rows if row.get("status") == "s5")
check_6 = sum(1 for row in rows if row.get("status") == "s6")
check_7 = sum(1 for row in rows if row.get("status") == "s7")
check_8 = sum(1 for row in rows if row.get("status") == "s8")
check_9 = sum(1 for row in rows if row.get("status") == "s9")
check_10 = sum(1 for row in rows if row.get("status") == "s10")
print(
    json.dumps(
        {
            "failed_payment_rate": failed_rate,
            "chargeback_alerts": chargeback_alerts,
            "incident_severity": severity,
            "eta_minutes": eta_minutes,
            "affected_checkout_share": failed_rate,
            "avg_latency_ms": avg_latency,
            "p95_latency_ms": p95_latency,
            "sample_size": total,
            "incident_id": payload["incident_id"],
            "region": payload["region"],
        },
        separators=(",", ":"),
    )
)
