import java.io.IOException;

public class Main {
    public static void main(String[] args) throws IOException {
        String[] t = new String(System.in.readAllBytes()).trim().split("\\s+");
        String a = t[0];
        String b = t[1];
        int[] prev = new int[b.length() + 1];
        for (int i = 0; i < a.length(); i++) {
            int[] cur = new int[b.length() + 1];
            for (int j = 0; j < b.length(); j++) {
                cur[j + 1] = a.charAt(i) == b.charAt(j) ? prev[j] + 1 : Math.max(prev[j + 1], cur[j]);
            }
            prev = cur;
        }
        System.out.println(prev[b.length()]);
    }
}
