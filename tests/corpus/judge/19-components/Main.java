import java.io.IOException;

public class Main {
    static int[] parent;

    static int find(int x) {
        int root = x;
        while (parent[root] != root) root = parent[root];
        while (parent[x] != root) {
            int next = parent[x];
            parent[x] = root;
            x = next;
        }
        return root;
    }

    public static void main(String[] args) throws IOException {
        String[] tok = new String(System.in.readAllBytes()).trim().split("\\s+");
        int n = Integer.parseInt(tok[0]);
        int m = Integer.parseInt(tok[1]);
        parent = new int[n + 1];
        for (int i = 0; i <= n; i++) parent[i] = i;
        int groups = n;
        for (int i = 0; i < m; i++) {
            int a = find(Integer.parseInt(tok[2 + 2 * i]));
            int b = find(Integer.parseInt(tok[3 + 2 * i]));
            if (a != b) {
                parent[a] = b;
                groups--;
            }
        }
        System.out.println(groups);
    }
}
