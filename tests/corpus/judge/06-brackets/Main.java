import java.io.IOException;
import java.util.ArrayDeque;

public class Main {
    static boolean balanced(String s) {
        ArrayDeque<Character> st = new ArrayDeque<>();
        for (char c : s.toCharArray()) {
            if (c == '(' || c == '[' || c == '{') {
                st.push(c);
                continue;
            }
            char want = c == ')' ? '(' : c == ']' ? '[' : '{';
            if (st.isEmpty() || st.pop() != want) return false;
        }
        return st.isEmpty();
    }

    public static void main(String[] args) throws IOException {
        String[] t = new String(System.in.readAllBytes()).trim().split("\\s+");
        int n = Integer.parseInt(t[0]);
        StringBuilder sb = new StringBuilder();
        for (int i = 1; i <= n; i++) sb.append(balanced(t[i]) ? "YES" : "NO").append('\n');
        System.out.print(sb);
    }
}
