import java.io.IOException;
import java.util.ArrayDeque;

public class Main {
    public static void main(String[] args) throws IOException {
        String[] t = new String(System.in.readAllBytes()).trim().split("\\s+");
        int r = Integer.parseInt(t[0]);
        int c = Integer.parseInt(t[1]);
        char[][] grid = new char[r][];
        int[] dist = new int[r * c];
        ArrayDeque<Integer> q = new ArrayDeque<>();
        for (int i = 0; i < r; i++) {
            grid[i] = t[2 + i].toCharArray();
            for (int j = 0; j < c; j++) {
                dist[i * c + j] = -1;
                if (grid[i][j] == 'S') {
                    dist[i * c + j] = 0;
                    q.add(i * c + j);
                }
            }
        }
        int[] di = {1, -1, 0, 0};
        int[] dj = {0, 0, 1, -1};
        while (!q.isEmpty()) {
            int cur = q.poll();
            int i = cur / c;
            int j = cur % c;
            if (grid[i][j] == 'T') {
                System.out.println(dist[cur]);
                return;
            }
            for (int k = 0; k < 4; k++) {
                int a = i + di[k];
                int b = j + dj[k];
                if (a >= 0 && a < r && b >= 0 && b < c && grid[a][b] != '#' && dist[a * c + b] < 0) {
                    dist[a * c + b] = dist[cur] + 1;
                    q.add(a * c + b);
                }
            }
        }
        System.out.println(-1);
    }
}
