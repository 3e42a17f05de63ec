import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.PriorityQueue;
import java.util.StringJoiner;

public class Main {
    public static void main(String[] args) throws IOException {
        String[] tok = new String(System.in.readAllBytes()).trim().split("\\s+");
        int n = Integer.parseInt(tok[0]);
        int m = Integer.parseInt(tok[1]);
        int s = Integer.parseInt(tok[2]);
        List<List<long[]>> adj = new ArrayList<>();
        for (int i = 0; i <= n; i++) adj.add(new ArrayList<>());
        for (int i = 0; i < m; i++) {
            int u = Integer.parseInt(tok[3 + 3 * i]);
            long v = Long.parseLong(tok[4 + 3 * i]);
            long w = Long.parseLong(tok[5 + 3 * i]);
            adj.get(u).add(new long[] {v, w});
        }
        long[] dist = new long[n + 1];
        Arrays.fill(dist, Long.MAX_VALUE);
        dist[s] = 0;
        PriorityQueue<long[]> pq = new PriorityQueue<>((x, y) -> Long.compare(x[0], y[0]));
        pq.add(new long[] {0, s});
        while (!pq.isEmpty()) {
            long[] top = pq.poll();
            int u = (int) top[1];
            if (top[0] > dist[u]) continue;
            for (long[] e : adj.get(u)) {
                int v = (int) e[0];
                if (top[0] + e[1] < dist[v]) {
                    dist[v] = top[0] + e[1];
                    pq.add(new long[] {dist[v], v});
                }
            }
        }
        StringJoiner out = new StringJoiner(" ");
        for (int i = 1; i <= n; i++) out.add(String.valueOf(dist[i] == Long.MAX_VALUE ? -1 : dist[i]));
        System.out.println(out);
    }
}
