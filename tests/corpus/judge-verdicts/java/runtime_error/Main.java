import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.Scanner;
import java.util.StringJoiner;

public class Main {
    public static void main(String[] args) {
        Scanner in = new Scanner(System.in);
        int n = in.nextInt();
        int m = in.nextInt();
        List<List<Integer>> adj = new ArrayList<>();
        for (int i = 0; i < n; i++) adj.add(new ArrayList<>()); // bug: tasks are numbered 1..n
        int[] indeg = new int[n + 1];
        for (int i = 0; i < m; i++) {
            int u = in.nextInt();
            int v = in.nextInt();
            adj.get(u).add(v); // IndexOutOfBoundsException for u == n
            indeg[v]++;
        }
        PriorityQueue<Integer> ready = new PriorityQueue<>();
        for (int v = 1; v <= n; v++) if (indeg[v] == 0) ready.add(v);
        StringJoiner out = new StringJoiner(" ");
        while (!ready.isEmpty()) {
            int u = ready.poll();
            out.add(String.valueOf(u));
            for (int v : adj.get(u)) if (--indeg[v] == 0) ready.add(v);
        }
        System.out.println(out);
    }
}
