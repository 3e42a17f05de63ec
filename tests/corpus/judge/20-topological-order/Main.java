import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.StringJoiner;

public class Main {
    public static void main(String[] args) throws IOException {
        String[] tok = new String(System.in.readAllBytes()).trim().split("\\s+");
        int n = Integer.parseInt(tok[0]);
        int m = Integer.parseInt(tok[1]);
        List<List<Integer>> adj = new ArrayList<>();
        for (int i = 0; i <= n; i++) adj.add(new ArrayList<>());
        int[] indeg = new int[n + 1];
        for (int i = 0; i < m; i++) {
            int u = Integer.parseInt(tok[2 + 2 * i]);
            int v = Integer.parseInt(tok[3 + 2 * i]);
            adj.get(u).add(v);
            indeg[v]++;
        }
        PriorityQueue<Integer> ready = new PriorityQueue<>();
        for (int v = 1; v <= n; v++) if (indeg[v] == 0) ready.add(v);
        StringJoiner out = new StringJoiner(" ");
        int done = 0;
        while (!ready.isEmpty()) {
            int u = ready.poll();
            out.add(String.valueOf(u));
            done++;
            for (int v : adj.get(u)) if (--indeg[v] == 0) ready.add(v);
        }
        System.out.println(done < n ? "IMPOSSIBLE" : out.toString());
    }
}
