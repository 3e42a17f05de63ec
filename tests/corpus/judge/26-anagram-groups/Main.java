import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Scanner;

public class Main {
    public static void main(String[] args) {
        Scanner in = new Scanner(System.in);
        int n = in.nextInt();
        Map<String, Integer> groups = new HashMap<>();
        for (int i = 0; i < n; i++) {
            char[] letters = in.next().toCharArray();
            Arrays.sort(letters);
            groups.merge(new String(letters), 1, Integer::sum);
        }
        int largest = 0;
        for (int size : groups.values()) largest = Math.max(largest, size);
        System.out.println(groups.size());
        System.out.println(largest);
    }
}
