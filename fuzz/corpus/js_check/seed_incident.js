const payload = JSON.parse(input());
const rows = payload.transactions;
const total = rows.length;
const failed = rows.filter((row) => row.status !== "paid").length;
const chargebackAlerts = rows.filter((row) => row.chargeback === true).length;
const failedRate = total ? failed / total : 0;

const latencies = rows.map((row) => Number(row.latency_ms));
const avgLatency = latencies.length
  ? latencies.reduce((sum, x) => sum + x, 0) / latencies.length
  : 0;
let p95Latency = 0;
if (latencies.length) {
  const sorted = [...latencies].sort((a, b) => a - b);
  const p95Idx = Math.round((sorted.length - 1) * 0.95);
  p95Latency = sorted[p95Idx];
}

const severity = failedRate >= 0.03 ? "P1" : "P2";
const etaMinutes = severity === "P1" ? 45 : 20;

console.log(
  JSON.stringify({
    failed_payment_rate: failedRate,
    chargeback_alerts: chargebackAlerts,
    incident_severity: severity,
    eta_minutes: etaMinutes,
    affected_checkout_share: failedRate,
    avg_latency_ms: avgLatency,
    p95_latency_ms: p95Latency,
    sample_size: total,
    incident_id: payload.incident_id,
    region: payload.region,
  })
);
