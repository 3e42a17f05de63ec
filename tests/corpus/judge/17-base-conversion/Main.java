import java.util.Scanner;

public class Main {
    public static void main(String[] args) {
        Scanner in = new Scanner(System.in);
        long n = in.nextLong();
        int b = in.nextInt();
        // Long.toString writes lowercase letters for digits above 9; the answer wants uppercase.
        System.out.println(Long.toString(n, b).toUpperCase());
    }
}
